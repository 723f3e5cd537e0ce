# dmlp-launch end to end: the real binary with stand-in ranks
# (tests/e2e/launch/stand_in_rank.sh). One ctest per case of each
# tests/e2e/launch/test_<feature>.py: e2e.launch.<feature>.<case>.
find_package(Python3 COMPONENTS Interpreter QUIET)
if(NOT Python3_Interpreter_FOUND)
  message(WARNING "dmlp: python3 not found; dmlp-launch e2e tests are not registered")
  return()
endif()
set(_dmlp_launch_e2e_dir ${CMAKE_CURRENT_LIST_DIR}/launch)
file(GLOB _dmlp_launch_e2e_files CONFIGURE_DEPENDS ${_dmlp_launch_e2e_dir}/test_*.py)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${_dmlp_launch_e2e_files})
execute_process(COMMAND ${Python3_EXECUTABLE} -B ${CMAKE_CURRENT_LIST_DIR}/e2e_support.py ${_dmlp_launch_e2e_dir}
                OUTPUT_VARIABLE _dmlp_launch_e2e_cases OUTPUT_STRIP_TRAILING_WHITESPACE
                COMMAND_ERROR_IS_FATAL ANY)
string(REPLACE "\n" ";" _dmlp_launch_e2e_cases "${_dmlp_launch_e2e_cases}")
foreach(test_id IN LISTS _dmlp_launch_e2e_cases)
  # test_rank_output.RankOutput.test_log_dir_keeps_raw_files -> e2e.launch.rank_output.log_dir_keeps_raw_files
  string(REGEX REPLACE "^test_([^.]+)\\.[^.]+\\.test_(.+)$" "e2e.launch.\\1.\\2" test_name ${test_id})
  add_test(NAME ${test_name}
           COMMAND ${Python3_EXECUTABLE} -m unittest -v ${test_id}
           WORKING_DIRECTORY ${_dmlp_launch_e2e_dir})
  # Every wait inside is bounded far below this; the limit only catches a hang of the harness itself.
  set_tests_properties(${test_name} PROPERTIES TIMEOUT 120 LABELS "e2e;launch"
    ENVIRONMENT "DMLP_BIN_DIR=$<TARGET_FILE_DIR:dmlp-launch>;PYTHONDONTWRITEBYTECODE=1"
    SKIP_REGULAR_EXPRESSION "OK \\(skipped=1\\)")
endforeach()
