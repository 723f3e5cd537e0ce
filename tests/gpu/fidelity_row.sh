#!/usr/bin/env bash
# The "fidelity jax" row of run_gpu_checks.sh: dmlp's own samples
# and initial parameters (dmlp_draws, on the platform under test) against the
# reference's as this machine's jax computes them on XLA:GPU and on XLA:CPU
# (fidelity_jax.py, with tests/data/reference_draws.py: train.py's keys,
# samples and init). Prints one line, `STATUS DETAIL`:
#   PASS  dmlp's draws are jax's CPU bits (its promise: kDataDefinitionId);
#         the detail carries the ulp histograms, GPU against CPU included
#         (those may differ: a finding, not a failure)
#   FAIL  dmlp's draws differ from jax on the CPU, or either program failed
#   INFO  dmlp's draws differ from this machine's jax on the CPU, whose jax or
#         flax is not the version dmlp's definition names (definition.txt):
#         those versions may draw other bits; reported, not a failure
#   SKIP  no such device here, for jax or for dmlp (their own words)
# Usage: fidelity_row.sh BIN_DIR WORK_DIR TIMEOUT_SECONDS [DEVICE]
#   DEVICE  gpu (default: dmlp_draws --platform cuda, jax on XLA:GPU and
#           XLA:CPU) or cpu (dmlp_draws --platform cpu, jax on the CPU only:
#           the row's CPU half, which needs no GPU; tests/e2e/gpu/fidelity_row_test.sh)
# Environment: DMLP_GPU_PYTHON (default python3: the Python with jax and flax);
#   FIDELITY_PLAN (default empty: seed 42, step 1, microbatch 0, BATCH 4096 x
#   FEATURES 512, WIDTH 2048, LAYERS 3, CLASSES 10), options given to both
#   programs alike, e.g. "--batch 64 --width 32".
# The draws (46 MB at the spec's sizes) are removed afterwards: the logs
# tarball that comes back from the device must stay small.
set -uo pipefail
export LC_ALL=C
[ $# -eq 3 ] || [ $# -eq 4 ] || { echo "usage: fidelity_row.sh BIN_DIR WORK_DIR TIMEOUT_SECONDS [gpu|cpu]" >&2; exit 2; }
bin="$1" work="$2" limit="$3" device="${4:-gpu}"
script_dir="$(cd "$(dirname "$0")" && pwd)"
case "$device" in
  gpu) platform=cuda ;;
  cpu) platform=cpu ;;
  *) echo "fidelity_row.sh: DEVICE must be gpu or cpu, not $device" >&2; exit 2 ;;
esac
read -r -a plan <<<"${FIDELITY_PLAN:-}"
one_line() { sed '$!s/$/ |/' | tr '\n' ' ' | sed 's/ *$//'; }

if [ ! -x "$bin/dmlp_draws" ]; then
  echo "FAIL no dmlp_draws in $bin (the kit's programs: tests/gpu/make_kit.sh)"
  exit 0
fi
mkdir -p "$work"
draws="$work/dmlp-draws-$platform"
trap 'rm -rf "$draws"' EXIT
timeout -k 5 "$limit" "$bin/dmlp_draws" --platform "$platform" "${plan[@]}" "$draws" \
  >"$work/dmlp-draws.out" 2>&1
rc=$?
if [ "$rc" -ne 0 ]; then
  echo "$([ "$rc" -eq 3 ] && echo SKIP || echo FAIL) dmlp_draws rc=$rc: $(tail -n 2 "$work/dmlp-draws.out" | one_line)"
  exit 0
fi
timeout -k 5 "$limit" "${DMLP_GPU_PYTHON:-python3}" "$script_dir/fidelity_jax.py" --device "$device" \
  --dmlp-draws "$draws" --dmlp-platform "$platform" "${plan[@]}" \
  >"$work/fidelity.out" 2>"$work/fidelity.err"
rc=$?
case "$rc" in
  0) echo "PASS $(sed 's/^fidelity //' "$work/fidelity.out" | one_line)" ;;
  3) echo "SKIP rc=3: $(tail -n 2 "$work/fidelity.err" | one_line)" ;;
  4) echo "FAIL $(sed 's/^fidelity //' "$work/fidelity.out" | one_line)" ;;
  5) echo "INFO $(sed 's/^fidelity //' "$work/fidelity.out" | one_line)" ;;
  *) echo "FAIL fidelity_jax.py rc=$rc: $(tail -n 2 "$work/fidelity.err" | one_line)" ;;
esac
