# The GPU kit's own pieces (tests/gpu/): cuda_freeze, the program the freeze
# row runs (built with CUDA's headers; libcuda is opened at run time), and the
# CPU-side tests of the kit's rows.
if(DMLP_HAVE_CUDA)
  add_library(dmlp_cuda_freeze STATIC ${PROJECT_SOURCE_DIR}/tests/gpu/cuda_freeze/cuda_freeze.cc)
  target_include_directories(dmlp_cuda_freeze PUBLIC ${PROJECT_SOURCE_DIR})
  target_include_directories(dmlp_cuda_freeze SYSTEM PUBLIC ${CUDAToolkit_INCLUDE_DIRS})
  target_link_libraries(dmlp_cuda_freeze PUBLIC dmlp_common ${CMAKE_DL_LIBS})
  add_executable(cuda_freeze ${PROJECT_SOURCE_DIR}/tests/gpu/cuda_freeze/main.cc)
  target_link_libraries(cuda_freeze PRIVATE dmlp_cuda_freeze CLI11::CLI11)
endif()

# The "digest threads" row (tests/gpu/digest_row.sh) against gpu_bench
# stand-ins: one from before --digest-sweep (SKIP, not the FAIL it was), one
# printing digest_bench's real host figures (the row reads every K).
if(DMLP_BUILD_BENCH)
  add_test(NAME e2e.gpu.DigestRow
           COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/gpu/digest_row_test.sh
                   ${PROJECT_SOURCE_DIR}/tests/gpu/digest_row.sh $<TARGET_FILE:digest_bench>)
  set_tests_properties(e2e.gpu.DigestRow PROPERTIES TIMEOUT 300)
endif()
