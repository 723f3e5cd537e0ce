#!/usr/bin/env bash
# Test stand-in for dmlp-train under dmlp-launch: the ranks listed in
# $FLIP_RANKS (comma-separated) get DMLP_TEST_FLIP_BIT=$FLIP_AT, so one bit of
# their state flips after that update (trainer/test_faults.h); every other rank
# is the real trainer untouched.
set -euo pipefail
: "${DMLP_TRAIN:?}" "${FLIP_RANKS:?}" "${FLIP_AT:?}"
if [[ ",${FLIP_RANKS}," == *",${PROCESS_ID},"* ]]; then
  export DMLP_TEST_FLIP_BIT="${FLIP_AT}"
fi
exec "${DMLP_TRAIN}" "$@"
