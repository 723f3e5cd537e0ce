# The platform-independent math of one rank (data, init, Adam's element formula:
# no BLAS, no platform) and the CPU platform's math: the MLP forward/backward
# (through dmlp_gemm_cpu, trainer/gemm.cmake) and the Adam loop.
add_library(dmlp_trainer_math STATIC
  ${CMAKE_CURRENT_LIST_DIR}/math/adam.cc
  ${CMAKE_CURRENT_LIST_DIR}/math/data.cc
  ${CMAKE_CURRENT_LIST_DIR}/math/init.cc
  ${CMAKE_CURRENT_LIST_DIR}/math/ordered_reduce.cc
  ${CMAKE_CURRENT_LIST_DIR}/math/sample_loops.cc
  ${CMAKE_CURRENT_LIST_DIR}/reduction/ordered_reduction.cc
)
target_link_libraries(dmlp_trainer_math PUBLIC dmlp_common)

add_library(dmlp_mlp_cpu STATIC
  ${CMAKE_CURRENT_LIST_DIR}/cpu/adam_cpu.cc
  ${CMAKE_CURRENT_LIST_DIR}/cpu/cpu_parallel.cc
  ${CMAKE_CURRENT_LIST_DIR}/cpu/mlp_cpu.cc
)
target_link_libraries(dmlp_mlp_cpu PUBLIC dmlp_common dmlp_trainer_math dmlp_gemm_cpu)
# OpenMP runs the element-wise work on the GEMM's threads (trainer/cpu/cpu_parallel.h);
# it is libgomp, the runtime BLIS already loads. Without it (e.g. clang without
# libomp, as in the fuzz build) that work runs on one thread: same bits.
find_package(OpenMP COMPONENTS CXX)
if(OpenMP_CXX_FOUND)
  target_link_libraries(dmlp_mlp_cpu PRIVATE OpenMP::OpenMP_CXX)
endif()

# Data, init, Adam and the MLP's element-wise passes are written as array loops
# so that -O3 vectorizes them (data and init 3-5x faster, the MLP's passes
# about 5x); -fno-math-errno lets sqrtf vectorize. Neither changes a bit:
# no fast-math, and -ffp-contract=off still applies (top-level CMakeLists.txt).
if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
  set_source_files_properties(${CMAKE_CURRENT_LIST_DIR}/math/data.cc ${CMAKE_CURRENT_LIST_DIR}/math/init.cc
                              ${CMAKE_CURRENT_LIST_DIR}/math/adam.cc ${CMAKE_CURRENT_LIST_DIR}/cpu/adam_cpu.cc
                              ${CMAKE_CURRENT_LIST_DIR}/cpu/mlp_cpu.cc
                              PROPERTIES COMPILE_OPTIONS "-O3;-fno-math-errno")
  # The data and init loops (threefry, then jax's erf_inv with its FMAs) only
  # vectorize if GCC may if-convert float selects, which -ftrapping-math (the
  # default) forbids. -fno-trapping-math gives up FP exception flags, never a
  # value: no reassociation, no contraction (tests/unit/sample_math_test.cc
  # runs these loops over all 2^23 inputs against jax's table).
  set_source_files_properties(${CMAKE_CURRENT_LIST_DIR}/math/sample_loops.cc
                              PROPERTIES COMPILE_OPTIONS "-O3;-fno-math-errno;-fno-trapping-math")
endif()
