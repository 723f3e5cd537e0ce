# dmlp-verify --html in a real browser: tests/e2e/verify/html_browser_test.py
# renders PASS, FAIL and --against reports with headless Chromium and keeps the
# screenshots in Testing/html-report/ of the build directory. Skipped (exit 77)
# where Chromium is not installed; tools/install-deps.sh installs it for CI.
find_package(Python3 COMPONENTS Interpreter QUIET)
if(NOT Python3_Interpreter_FOUND)
  message(WARNING "dmlp: python3 not found; the dmlp-verify browser test is not registered")
  return()
endif()
add_test(NAME verify_e2e.html_browser
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/verify/html_browser_test.py
                 --verify $<TARGET_FILE:dmlp-verify> --fixtures ${PROJECT_SOURCE_DIR}/tests/fixtures
                 --artefacts ${CMAKE_BINARY_DIR}/Testing/html-report)
set_tests_properties(verify_e2e.html_browser PROPERTIES
  SKIP_RETURN_CODE 77 TIMEOUT 300 LABELS "e2e;verify" ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1")
