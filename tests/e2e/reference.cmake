# dmlp against the reference JAX job: tests/e2e/reference/against_reference.py
# runs the reference's train.py and dmlp with the same plans (two sizes,
# 1 and 2 ranks, 50 steps) and compares their losses step by step (step 1 to
# 1e-6 relative; every step through dmlp-verify --against --tolerance). It
# needs the reference job, which this repository does not hold: REFERENCE_DIR,
# else ../shared/reference beside the checkout. And the reference's python:
# tools/test-all.sh makes it with tools/reference-venv.sh and passes it as
# DMLP_REFERENCE_PYTHON. Without either it skips (exit 77) with the reason,
# except in CI (CI set), where it fails.
find_package(Python3 REQUIRED COMPONENTS Interpreter)
add_test(NAME e2e.reference.against_reference
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/reference/against_reference.py
                 --bin ${CMAKE_BINARY_DIR}/bin)
set_tests_properties(e2e.reference.against_reference PROPERTIES
  ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1"
  SKIP_RETURN_CODE 77
  # The reference's XLA runs want both cores: run alone.
  RUN_SERIAL TRUE
  TIMEOUT 600
  LABELS "e2e;reference")
# That skip and that failure, with a reference directory that has no train.py.
add_test(NAME e2e.reference.absent
         COMMAND ${Python3_EXECUTABLE} -m unittest -v test_reference_absent
         WORKING_DIRECTORY ${CMAKE_CURRENT_LIST_DIR}/reference)
set_tests_properties(e2e.reference.absent PROPERTIES
  ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1"
  TIMEOUT 120
  LABELS "e2e;reference")
