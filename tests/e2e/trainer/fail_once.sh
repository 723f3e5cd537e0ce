#!/usr/bin/env bash
# Test stand-in for dmlp-train that fails ONCE: rank $FAIL_RANK runs the real
# trainer until its receipt file has $FAIL_STEP lines, then kills it with
# SIGKILL (by pid) and exits 137. The marker file makes later attempts (after
# dmlp-launch --restarts) run the real trainer untouched.
set -euo pipefail
: "${DMLP_TRAIN:?}" "${FAIL_RANK:?}" "${FAIL_STEP:?}" "${FAIL_MARKER:?}"
if [[ "${PROCESS_ID}" != "${FAIL_RANK}" || -e "${FAIL_MARKER}" ]]; then
  exec "${DMLP_TRAIN}" "$@"
fi
"${DMLP_TRAIN}" "$@" &
trainer=$!
receipts="${OUT_DIR}/rank-${PROCESS_ID}.jsonl"
for _ in $(seq 1 6000); do
  if [[ -f "${receipts}" ]] && (( $(wc -l <"${receipts}") >= FAIL_STEP )); then break; fi
  if ! kill -0 "${trainer}" 2>/dev/null; then break; fi
  sleep 0.01
done
touch "${FAIL_MARKER}"
kill -KILL "${trainer}" 2>/dev/null || true
wait "${trainer}" || true
exit 137
