# dmlp-verify's unit tests (GoogleTest): the receipt reader (common/) and the
# verifier library. Fixture cases are in tests/fixtures/fixtures.cmake, fuzz
# targets in tests/fuzz/fuzz.cmake (DMLP_FUZZ=ON with clang, tests/CMakeLists.txt).
add_executable(verify_test
  ${CMAKE_CURRENT_LIST_DIR}/receipt_reader_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/verify_cli_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/comparability_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/rank_env_check_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/verify_html_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/line_reader_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/replay_segments_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/verify_report_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/result_check_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/verifier_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/receipt_stream_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/loss_tolerance_test.cc
)
target_link_libraries(verify_test PRIVATE dmlp_verify_lib GTest::gtest_main)
target_compile_definitions(verify_test PRIVATE
  DMLP_TEST_DATA_DIR="${DMLP_TEST_DATA_DIR}" DMLP_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
  DMLP_VERIFY_BINARY="$<TARGET_FILE:dmlp-verify>")
add_dependencies(verify_test dmlp-verify)
gtest_discover_tests(verify_test DISCOVERY_TIMEOUT 60)
