# gpu_bench: the CUDA platform's update time against the cuBLAS floor measured
# in the same run, and the digest pipeline's throughput (tests/gpu/ runs it).
if(DMLP_HAVE_CUDA AND DMLP_CUDA_VENDOR_LIBRARIES)  # it measures against cuBLAS
  add_executable(gpu_bench ${CMAKE_CURRENT_LIST_DIR}/gpu_bench.cc)
  target_link_libraries(gpu_bench PRIVATE dmlp_trainer_cuda dmlp_trainer_core dmlp_bench_digest
                        CLI11::CLI11)
endif()
