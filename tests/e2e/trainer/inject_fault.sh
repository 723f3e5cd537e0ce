#!/usr/bin/env bash
# Test stand-in for dmlp-train: rank $FAULT_RANK is killed (SIGKILL, by
# dmlp-train's DMLP_TEST_KILL_AT hook) right after its receipt of step
# $FAULT_STEP; every other rank is the real trainer untouched. With
# $FAULT_MARKER set, the fault happens once: later attempts (dmlp-launch
# --restarts) find the marker and run clean.
set -euo pipefail
: "${DMLP_TRAIN:?}" "${FAULT_RANK:?}" "${FAULT_STEP:?}"
if [[ "${PROCESS_ID}" == "${FAULT_RANK}" ]]; then
  if [[ -z "${FAULT_MARKER:-}" ]]; then
    export DMLP_TEST_KILL_AT="${FAULT_STEP}"
  elif [[ ! -e "${FAULT_MARKER}" ]]; then
    touch "${FAULT_MARKER}"
    export DMLP_TEST_KILL_AT="${FAULT_STEP}"
  fi
fi
exec "${DMLP_TRAIN}" "$@"
