# dmlp-launch end to end: the real binary with stand-in ranks
# (tests/e2e/launch/stand_in_rank.sh), one ctest per case of launch_e2e.py.
find_package(Python3 COMPONENTS Interpreter QUIET)
if(NOT Python3_Interpreter_FOUND)
  message(WARNING "dmlp: python3 not found; dmlp-launch e2e tests are not registered")
  return()
endif()
set(DMLP_LAUNCH_E2E ${CMAKE_CURRENT_LIST_DIR}/launch/launch_e2e.py)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${DMLP_LAUNCH_E2E})
execute_process(COMMAND ${Python3_EXECUTABLE} ${DMLP_LAUNCH_E2E} --list
                OUTPUT_VARIABLE dmlp_launch_e2e_cases OUTPUT_STRIP_TRAILING_WHITESPACE
                COMMAND_ERROR_IS_FATAL ANY)
string(REPLACE "\n" ";" dmlp_launch_e2e_cases "${dmlp_launch_e2e_cases}")
foreach(case IN LISTS dmlp_launch_e2e_cases)
  add_test(NAME launch_e2e.${case}
           COMMAND ${Python3_EXECUTABLE} ${DMLP_LAUNCH_E2E} --launcher $<TARGET_FILE:dmlp-launch> ${case})
  # Every wait inside is bounded far below this; the limit only catches a hang of the harness itself.
  set_tests_properties(launch_e2e.${case} PROPERTIES TIMEOUT 120 LABELS "e2e;launch" SKIP_RETURN_CODE 77)
endforeach()
