# dmlp_gemm_cpu: the CPU platform's SGEMM (trainer/cpu/gemm_cpu.h): dmlp's own
# (trainer/cpu/ordered_sgemm.h), or, with DMLP_CPU_GEMM=blis, BLIS 0.9 OpenMP
# build for comparison. gemm_cpu.cc dlopens
# the exact file found here rather than linking it: a link would record only
# the soname libblis.so.4, which the loader resolves through Debian's
# alternatives symlink (pthread/serial builds or another version could answer).
# Package: libblis-openmp-dev (build), libblis4-openmp (run time).
find_library(DMLP_BLIS_LIBRARY NAMES blis
  PATHS /usr/lib/${CMAKE_LIBRARY_ARCHITECTURE}/blis-openmp NO_DEFAULT_PATH
  DOC "BLIS, OpenMP build, in its own multiarch folder (never the alternatives symlink)")
if(NOT DMLP_BLIS_LIBRARY)
  message(FATAL_ERROR "dmlp: BLIS OpenMP build not found under "
    "/usr/lib/${CMAKE_LIBRARY_ARCHITECTURE}/blis-openmp (apt-get install libblis-openmp-dev)")
endif()
file(REAL_PATH "${DMLP_BLIS_LIBRARY}" DMLP_BLIS_SO)
message(STATUS "dmlp: CPU GEMM loads ${DMLP_BLIS_SO}")

# A relocatable build (the GPU kit, tests/gpu/make_kit.sh) carries BLIS beside
# the programs and loads it from this path, relative to the executable's folder;
# empty (the default): the absolute path above.
set(DMLP_BLIS_BESIDE_EXECUTABLE "" CACHE STRING
  "BLIS file relative to the executable's folder (e.g. ../lib/libblis.so.4); empty: the path found here")

add_library(dmlp_gemm_cpu STATIC ${CMAKE_CURRENT_LIST_DIR}/cpu/gemm_cpu.cc
                                 ${CMAKE_CURRENT_LIST_DIR}/cpu/gemm_epilogue.cc
                                 ${CMAKE_CURRENT_LIST_DIR}/cpu/ordered_sgemm.cc)
# -O3 keeps the micro-kernels' accumulators in registers. Never -ffast-math or
# -Ofast (they set flush-to-zero and allow reassociation); -ffp-contract=off
# stays on from the top-level CMakeLists.txt: the kernels' FMAs are explicit.
if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
  set_source_files_properties(${CMAKE_CURRENT_LIST_DIR}/cpu/ordered_sgemm.cc PROPERTIES COMPILE_OPTIONS "-O3")
  # The epilogue's loops vectorize at -O3 (one add, compare or select each: no bit changes).
  set_source_files_properties(${CMAKE_CURRENT_LIST_DIR}/cpu/gemm_epilogue.cc PROPERTIES COMPILE_OPTIONS "-O3")
endif()
# Threads split C's blocks through OpenMP (libgomp: the runtime BLIS loads too).
find_package(OpenMP COMPONENTS CXX)
if(OpenMP_CXX_FOUND)
  target_link_libraries(dmlp_gemm_cpu PRIVATE OpenMP::OpenMP_CXX)
endif()
target_compile_definitions(dmlp_gemm_cpu PRIVATE DMLP_BLIS_SO="${DMLP_BLIS_SO}")
if(DMLP_BLIS_BESIDE_EXECUTABLE)
  message(STATUS "dmlp: CPU GEMM loads <executable's folder>/${DMLP_BLIS_BESIDE_EXECUTABLE} instead")
  target_compile_definitions(dmlp_gemm_cpu PRIVATE
    DMLP_BLIS_BESIDE_EXECUTABLE="${DMLP_BLIS_BESIDE_EXECUTABLE}")
endif()
target_link_libraries(dmlp_gemm_cpu PUBLIC dmlp_common PRIVATE ${CMAKE_DL_LIBS})
