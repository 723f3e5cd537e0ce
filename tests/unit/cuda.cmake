# The CUDA platform (dmlp_trainer_cuda). Every GPU test skips itself
# (GTEST_SKIP) without a GPU; tests/gpu/run_gpu_checks.sh runs them on one.
# The no-GPU tests (*.NoGpu*, which skip where a GPU is; CudaCheck.*) run everywhere.
# Host-side C++ (.cc): the kernels are reached through their launchers.
if(DMLP_HAVE_CUDA)
  add_executable(cuda_test
    ${CMAKE_CURRENT_LIST_DIR}/cuda_backend_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/cuda_data_init_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/cuda_device_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/cuda_kernels_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/cuda_mlp_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/cuda_ordered_sgemm_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/cuda_phase_profile_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/cuda_vendor_libraries_test.cc
  )
  # cuBLAS and NCCL themselves, in a build that has them (DMLP_CUDA_VENDOR_LIBRARIES).
  if(DMLP_CUDA_VENDOR_LIBRARIES)
    target_sources(cuda_test PRIVATE
      ${CMAKE_CURRENT_LIST_DIR}/cuda_gemm_test.cc
      ${CMAKE_CURRENT_LIST_DIR}/cuda_nccl_version_test.cc)
    target_compile_definitions(cuda_test PRIVATE DMLP_CUDA_VENDOR_LIBRARIES=1)
  endif()
  # dmlp_trainer_core: the CPU backend and FoldShardsInOrder, the references.
  target_link_libraries(cuda_test PRIVATE dmlp_trainer_cuda dmlp_trainer_core dmlp_trainer_cpu
                        GTest::gtest_main)
  # cuda-checkpoint's API, where the toolkit has it (not the GPU simulator's CUDA 11.8).
  if(DMLP_HAVE_CUDA_CHECKPOINT)
    target_sources(cuda_test PRIVATE ${CMAKE_CURRENT_LIST_DIR}/cuda_freeze_test.cc)
    target_link_libraries(cuda_test PRIVATE dmlp_cuda_freeze)
  endif()
  gtest_discover_tests(cuda_test DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 300)
else()
  # Without CUDA the backend library is the stub: its error text is what users see.
  add_executable(cuda_stub_test ${CMAKE_CURRENT_LIST_DIR}/cuda_stub_test.cc)
  target_link_libraries(cuda_stub_test PRIVATE dmlp_trainer_cuda dmlp_trainer_rendezvous GTest::gtest_main)
  gtest_discover_tests(cuda_stub_test DISCOVERY_TIMEOUT 60)
endif()
