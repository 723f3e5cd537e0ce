#!/bin/sh
# Test-only: runs COMMAND, and in the engine-placed rank DMLP_E2E_KILL_RANK
# only, sets the trainer's fault hook DMLP_TEST_KILL_AT=DMLP_E2E_KILL_STEP
# (the hook kills every rank that has it; engines give all ranks one
# environment). The rank is read as dmlp-train reads it under each engine.
rank=${SLURM_PROCID:-${OMPI_COMM_WORLD_RANK:-${RANK:-}}}
if [ "$rank" = "$DMLP_E2E_KILL_RANK" ]; then
  DMLP_TEST_KILL_AT=$DMLP_E2E_KILL_STEP
  export DMLP_TEST_KILL_AT
fi
exec "$@"
