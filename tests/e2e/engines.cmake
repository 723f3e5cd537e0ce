# dmlp-train under real engines, with no wrapper (tests/e2e/engines/engines_e2e.py):
# a one-node Slurm cluster on localhost (srun, sbatch), Open MPI's mpirun, and
# torchrun. Each case exits 77 (SKIP) when its engine is not installed;
# tools/install-deps.sh installs Slurm and Open MPI for CI, where their cases
# fail instead of skipping (CI set). torchrun runs outside CI (torch is
# several GB): its case skips without it, in CI too, and
# tools/engines-check.sh runs all three (torchrun from a venv under /var/tmp).
find_package(Python3 REQUIRED COMPONENTS Interpreter)
foreach(engine slurm openmpi torchrun)
  add_test(NAME e2e.engines.${engine}
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/engines/engines_e2e.py ${engine}
           WORKING_DIRECTORY ${CMAKE_CURRENT_LIST_DIR}/engines)
  set_tests_properties(e2e.engines.${engine} PROPERTIES
    ENVIRONMENT "DMLP_BIN_DIR=${CMAKE_BINARY_DIR}/bin;PYTHONDONTWRITEBYTECODE=1"
    SKIP_RETURN_CODE 77
    # Slurm's ports and the coordinators' come from one range (DMLP_E2E_PORT_BASE):
    # the three cases run one at a time.
    RESOURCE_LOCK dmlp_engine_ports
    TIMEOUT 900)
endforeach()
