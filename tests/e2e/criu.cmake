# Freeze and restore for real (tests/e2e/criu/criu_e2e.py): a 2-rank CPU job
# dumped whole by CRIU (tools/criu.sh: Debian sid's criu 4.2, fetched and cached
# on first use) and restored, compared byte for byte with an uninterrupted run.
#   e2e.criu.a_in_place         dumped, down longer than the heartbeat, restored in place
#   e2e.criu.b_another_machine  restored in a new network namespace with another host name
#   e2e.criu.c_refused_restore  --leave-running, kill -9: CRIU refuses, RESUME=1 completes
#   e2e.criu.d_two_evictions    dumped and restored twice in one run
#   e2e.criu.e_run_sh           the job as run.sh starts it
#   e2e.criu.f_criu_slow_to_start  CRIU starting only once the job has ended or is held
#   e2e.criu.a_in_pid_namespace case a from a new pid namespace (a container, a CI runner)
# Exit 77 (SKIP) only when `criu check` fails, with CRIU's words; as root on
# Debian 12 (CI) they run. One at a time (RESOURCE_LOCK): a restore needs the
# dumped pids free and each case freezes a job for seconds. Each job is held
# (SIGSTOP) before its dump, whatever runs beside: a job that ended while CRIU
# started (slowly, on a loaded machine) left CRIU a zombie to seize.
find_package(Python3 REQUIRED COMPONENTS Interpreter)
foreach(pair a:a_in_place b:b_another_machine c:c_refused_restore d:d_two_evictions e:e_run_sh
             f:f_criu_slow_to_start)
  string(REPLACE ":" ";" parts ${pair})
  list(GET parts 0 criu_case)
  list(GET parts 1 criu_name)
  add_test(NAME e2e.criu.${criu_name}
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/criu/criu_e2e.py ${criu_case}
           WORKING_DIRECTORY ${CMAKE_CURRENT_LIST_DIR}/criu)
  set_tests_properties(e2e.criu.${criu_name} PROPERTIES
    ENVIRONMENT "DMLP_BIN_DIR=${CMAKE_BINARY_DIR}/bin;DMLP_SOURCE_DIR=${PROJECT_SOURCE_DIR};PYTHONDONTWRITEBYTECODE=1"
    SKIP_RETURN_CODE 77
    RESOURCE_LOCK dmlp_criu
    TIMEOUT 300)
endforeach()
# Case a again from a new pid namespace, where the session leader of whoever
# started the test is outside it (a container, a CI runner): CRIU refuses a
# tree whose session leader it cannot see, so the job must have its own session.
add_test(NAME e2e.criu.a_in_pid_namespace
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/criu/criu_e2e.py a --in-pid-namespace
         WORKING_DIRECTORY ${CMAKE_CURRENT_LIST_DIR}/criu)
set_tests_properties(e2e.criu.a_in_pid_namespace PROPERTIES
  ENVIRONMENT "DMLP_BIN_DIR=${CMAKE_BINARY_DIR}/bin;DMLP_SOURCE_DIR=${PROJECT_SOURCE_DIR};PYTHONDONTWRITEBYTECODE=1"
  SKIP_RETURN_CODE 77
  RESOURCE_LOCK dmlp_criu
  TIMEOUT 300)
# tools/criu.sh itself (tests/e2e/criu/test_criu_helper.py), with a stand-in
# cache and apt-get: it runs only a cache no one else could have changed, and
# a fetch that fails or is interrupted leaves nothing behind. No CRIU runs.
add_test(NAME e2e.criu.helper
         COMMAND ${Python3_EXECUTABLE} -m unittest -v test_criu_helper
         WORKING_DIRECTORY ${CMAKE_CURRENT_LIST_DIR}/criu)
set_tests_properties(e2e.criu.helper PROPERTIES
  ENVIRONMENT "DMLP_SOURCE_DIR=${PROJECT_SOURCE_DIR};PYTHONDONTWRITEBYTECODE=1"
  TIMEOUT 120)
