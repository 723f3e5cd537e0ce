# gemm_select: the measurement behind the CPU GEMM choice (trainer/cpu/gemm_cpu.cc).
# It dlopens every candidate by its exact file (never the Debian alternatives
# symlinks), so it only needs the libraries present, not linked.
set(_dmlp_multiarch /usr/lib/${CMAKE_LIBRARY_ARCHITECTURE})
find_library(DMLP_BENCH_OPENBLAS NAMES openblas PATHS ${_dmlp_multiarch}/openblas-pthread NO_DEFAULT_PATH)
find_library(DMLP_BENCH_BLIS NAMES blis PATHS ${_dmlp_multiarch}/blis-openmp NO_DEFAULT_PATH)
find_library(DMLP_BENCH_DNNL NAMES dnnl)
if(DMLP_BENCH_OPENBLAS AND DMLP_BENCH_BLIS AND DMLP_BENCH_DNNL)
  file(REAL_PATH "${DMLP_BENCH_OPENBLAS}" _dmlp_openblas_so)
  file(REAL_PATH "${DMLP_BENCH_BLIS}" _dmlp_blis_so)
  file(REAL_PATH "${DMLP_BENCH_DNNL}" _dmlp_dnnl_so)
  add_executable(gemm_select
    ${CMAKE_CURRENT_LIST_DIR}/gemm_select.cc
    ${CMAKE_CURRENT_LIST_DIR}/gemm_select_worker.cc
  )
  target_include_directories(gemm_select PRIVATE ${PROJECT_SOURCE_DIR})
  target_compile_definitions(gemm_select PRIVATE
    DMLP_OPENBLAS_SO="${_dmlp_openblas_so}" DMLP_BLIS_SO="${_dmlp_blis_so}"
    DMLP_DNNL_SO="${_dmlp_dnnl_so}")
  target_link_libraries(gemm_select PRIVATE ${CMAKE_DL_LIBS})
else()
  message(STATUS "dmlp: gemm_select skipped (needs libopenblas-pthread-dev, libblis-openmp-dev, libdnnl-dev)")
endif()
