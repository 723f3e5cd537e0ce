# Unit tests of dmlp_launch_lib: the pure pieces (line prefixing, exit status
# naming, option checks, summary wording, divergence lines and hardware
# suspects, /proc parsing, command lookup) and
# the supervisor run in-process on /bin/sh stand-in ranks, with and without --restarts.
add_executable(launch_test
  ${CMAKE_CURRENT_LIST_DIR}/command_path_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/divergence_line_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/exit_status_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/hardware_suspect_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/launch_options_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/launch_restarts_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/line_prefixer_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/proc_stat_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/run_summary_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/supervisor_test.cc
)
target_link_libraries(launch_test PRIVATE dmlp_launch_lib GTest::gtest_main)
gtest_discover_tests(launch_test DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 60 LABELS launch)
