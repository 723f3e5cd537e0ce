add_executable(common_test
  ${CMAKE_CURRENT_LIST_DIR}/env_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/errno_error_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/float_repr_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/number_grammar_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/out_dir_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/py_json_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/rank_place_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/slurm_hostlist_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/receipt_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/state_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/status_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/thread_start_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/bit_settings_test.cc
)
target_link_libraries(common_test PRIVATE dmlp_common GTest::gtest_main)
target_compile_definitions(common_test PRIVATE DMLP_TEST_DATA_DIR="${DMLP_TEST_DATA_DIR}")
gtest_discover_tests(common_test DISCOVERY_TIMEOUT 60)
