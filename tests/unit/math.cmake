# Data, init and Adam (dmlp_trainer_math; Adam's CPU loop from dmlp_trainer_cpu) and
# the CPU MLP (dmlp_trainer_cpu).
add_executable(math_test
  ${CMAKE_CURRENT_LIST_DIR}/adam_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/data_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/init_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/sample_math_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/threefry_test.cc
)
target_link_libraries(math_test PRIVATE dmlp_trainer_math dmlp_trainer_cpu GTest::gtest_main)
target_compile_definitions(math_test PRIVATE DMLP_TEST_DATA_DIR="${DMLP_TEST_DATA_DIR}")
gtest_discover_tests(math_test DISCOVERY_TIMEOUT 60)

# dmlp's side of the exhaustive comparison with jax, for tests/data/jax_vectors.py
# (--dmlp-tables): writes the 2^23-entry tables the script compares input by input.
add_executable(jax_tables_dump ${CMAKE_CURRENT_LIST_DIR}/jax_tables_dump.cc)
target_link_libraries(jax_tables_dump PRIVATE dmlp_trainer_math)

add_executable(mlp_cpu_test ${CMAKE_CURRENT_LIST_DIR}/mlp_cpu_test.cc
                            ${CMAKE_CURRENT_LIST_DIR}/cpu_parallel_test.cc)
target_link_libraries(mlp_cpu_test PRIVATE dmlp_trainer_cpu GTest::gtest_main)
find_package(OpenMP COMPONENTS CXX)
if(OpenMP_CXX_FOUND)  # the test checks the threaded path too, under #ifdef _OPENMP
  target_link_libraries(mlp_cpu_test PRIVATE OpenMP::OpenMP_CXX)
endif()
gtest_discover_tests(mlp_cpu_test DISCOVERY_TIMEOUT 60)

# ExpF and LogF against glibc's expf and logf on all 2^32 inputs each (about a
# minute on one core, split over all cores): a program of its own so math_test stays quick.
add_executable(exp_log_test ${CMAKE_CURRENT_LIST_DIR}/exp_log_test.cc)
target_link_libraries(exp_log_test PRIVATE dmlp_trainer_math GTest::gtest_main)
gtest_discover_tests(exp_log_test DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 1200)
