# End-to-end tests of the CPU job: the real dmlp-launch, dmlp-train and dmlp-verify.
find_package(Python3 REQUIRED COMPONENTS Interpreter)
foreach(test_class CompleteRuns Determinism Failures)
  add_test(NAME e2e.trainer.${test_class}
           COMMAND ${Python3_EXECUTABLE} -m unittest -v test_cpu_job.${test_class}
           WORKING_DIRECTORY ${CMAKE_CURRENT_LIST_DIR}/trainer)
  set_tests_properties(e2e.trainer.${test_class} PROPERTIES
    ENVIRONMENT "DMLP_BIN_DIR=${CMAKE_BINARY_DIR}/bin;PYTHONDONTWRITEBYTECODE=1"
    TIMEOUT 600)
endforeach()
