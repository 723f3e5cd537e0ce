# The CPU GEMM (dmlp_trainer_cpu, trainer/cpu/gemm_cpu.h): accuracy against float64,
# repeatability, bit-identity across thread counts, and the kernel-pinning check
# (which dlopens the same BLIS file itself).
add_executable(gemm_cpu_test ${CMAKE_CURRENT_LIST_DIR}/gemm_cpu_test.cc)
file(REAL_PATH "${DMLP_BLIS_LIBRARY}" _dmlp_gemm_test_blis_so)
target_compile_definitions(gemm_cpu_test PRIVATE DMLP_BLIS_SO="${_dmlp_gemm_test_blis_so}")
target_link_libraries(gemm_cpu_test PRIVATE dmlp_trainer_cpu GTest::gtest_main ${CMAKE_DL_LIBS})
# LeakSanitizer's exit-time scan crashes ("Tracer caught signal 11") in a
# process whose dlopened libgomp threads are still parked; ASan and UBSan stay on.
if(DMLP_SANITIZE)
  gtest_discover_tests(gemm_cpu_test DISCOVERY_TIMEOUT 60
                       PROPERTIES ENVIRONMENT "ASAN_OPTIONS=detect_leaks=0")
else()
  gtest_discover_tests(gemm_cpu_test DISCOVERY_TIMEOUT 60)
endif()

# dmlp's SGEMM: every kernel this CPU runs against the order rule, bit for bit.
add_executable(ordered_sgemm_test ${CMAKE_CURRENT_LIST_DIR}/ordered_sgemm_test.cc)
target_link_libraries(ordered_sgemm_test PRIVATE dmlp_trainer_cpu GTest::gtest_main)
if(DMLP_SANITIZE)
  gtest_discover_tests(ordered_sgemm_test DISCOVERY_TIMEOUT 60
                       PROPERTIES ENVIRONMENT "ASAN_OPTIONS=detect_leaks=0")
else()
  gtest_discover_tests(ordered_sgemm_test DISCOVERY_TIMEOUT 60)
endif()
# The same, with OpenMP giving fewer threads than asked (a user's
# OMP_THREAD_LIMIT): the shared B block was once cut for the threads asked
# for, and the ones missing left their panels unpacked (wrong sums).
add_test(NAME OrderedSgemmTest.OmpThreadLimitOne COMMAND ordered_sgemm_test)
set_tests_properties(OrderedSgemmTest.OmpThreadLimitOne PROPERTIES ENVIRONMENT
                     "OMP_THREAD_LIMIT=1;ASAN_OPTIONS=detect_leaks=0")
