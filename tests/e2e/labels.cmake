# The ctest label `unit` (tests/unit/CMakeLists.txt): tools/test-all.sh runs
# the unit tests under the sanitizers as `ctest -L unit`, so every test of
# every unit-test program must carry it, and nothing else may.
find_package(Python3 REQUIRED COMPONENTS Interpreter)
add_test(NAME e2e.labels.unit
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/labels/unit_label_test.py
                 ${CMAKE_CTEST_COMMAND} ${CMAKE_BINARY_DIR} ${DMLP_UNIT_TEST_PROGRAMS})
set_tests_properties(e2e.labels.unit PROPERTIES ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1" TIMEOUT 120)
