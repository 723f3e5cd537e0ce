# libFuzzer targets (DMLP_FUZZ=ON, clang only). tests/fuzz/run.sh configures a
# build of its own with a clang that links libFuzzer, ASan+UBSan and
# -fsanitize=fuzzer-no-link on every library, builds these two, and runs each
# for a bounded time.
if(DMLP_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "DMLP_FUZZ=ON needs clang (libFuzzer); e.g. CXX=clang++")
  endif()
  foreach(_fuzz_target receipt_fuzz result_fuzz)
    add_executable(${_fuzz_target} ${CMAKE_CURRENT_LIST_DIR}/${_fuzz_target}.cc)
    target_link_libraries(${_fuzz_target} PRIVATE dmlp_verify_lib)
    target_compile_options(${_fuzz_target} PRIVATE -fsanitize=fuzzer)
    target_link_options(${_fuzz_target} PRIVATE -fsanitize=fuzzer)
  endforeach()
endif()
