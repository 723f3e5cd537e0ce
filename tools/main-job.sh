#!/usr/bin/env bash
# The README's first command: installs the packages (tools/install-deps.sh
# --build), builds dmlp-launch, dmlp-train and dmlp-verify in ./build, and runs
# the main job through run.sh, verified. Prints the run directory and the verdict.
#
# Where nvidia-smi lists a GPU: the job of spec.json (PLATFORM=cuda, its
# sizes and NCCL settings), with NUM_PROCESSES lowered to the largest divisor
# of DATA_SHARDS (8) that the GPUs allow; the receipts are the same for every
# such NUM_PROCESSES, which is dmlp's promise.
# Elsewhere: the same job on the CPU platform at a size that takes seconds.
#
# Any variable of the job already set in the environment wins (for example
# `STEPS=100 tools/main-job.sh`, or PLATFORM=cpu on a GPU machine).
# OUT_DIR defaults to out/main-job-<UTC time>-<pid> in the repository.
# DMLP_BIN_DIR=DIR uses the programs in DIR instead of building them (tests).
# Exit status: run.sh's (0: the job ran and dmlp-verify said PASS). The verdict
# line is this run's: after a failed run.sh into an OUT_DIR the caller named it
# says "not shown", since that directory may hold another job's run.
set -euo pipefail
start_dir="$PWD"
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"

say() { echo "main-job: $*" >&2; }

tools/install-deps.sh --build

gpu_count=0
if [[ "${PLATFORM:-}" != cpu ]] && gpus="$(nvidia-smi --query-gpu=index --format=csv,noheader 2>/dev/null)"; then
  gpu_count="$(grep -c . <<<"$gpus" || true)"
fi
if [[ -z "${PLATFORM:-}" ]]; then
  if [[ "$gpu_count" -gt 0 ]]; then PLATFORM=cuda; else PLATFORM=cpu; fi
fi

# ---- the job's settings (defaults only: the environment wins) -----------------
if [[ "$PLATFORM" == cuda ]]; then
  processes_given=0
  [[ -v NUM_PROCESSES ]] && processes_given=1
  while IFS='=' read -r name value; do
    # The spec's OUT_DIR (/workspace/out) belongs to the super session.
    if [[ "$name" != OUT_DIR && ! -v "$name" ]]; then export "$name=$value"; fi
  done < <(python3 -c 'import json
for name, value in json.load(open("spec.json"))["image"]["env"].items(): print(f"{name}={value}")')
  if [[ $processes_given -eq 0 && "$gpu_count" -gt 0 && "$NUM_PROCESSES" -gt "$gpu_count" ]]; then
    processes=$gpu_count
    while ((DATA_SHARDS % processes != 0)); do processes=$((processes - 1)); done
    say "$gpu_count GPU(s): NUM_PROCESSES $NUM_PROCESSES -> $processes" \
      "(DATA_SHARDS stays $DATA_SHARDS, so the receipts are the same)"
    NUM_PROCESSES=$processes
  fi
else
  : "${STEPS:=20}" "${SEED:=42}" "${LEARNING_RATE:=0.001}" "${BATCH:=64}" "${MICROBATCHES:=2}"
  : "${FEATURES:=64}" "${WIDTH:=128}" "${LAYERS:=3}" "${CLASSES:=10}"
  : "${NUM_PROCESSES:=2}" "${DATA_SHARDS:=$NUM_PROCESSES}" "${COORDINATOR_PORT:=12355}"
  : "${HEARTBEAT_TIMEOUT_SECONDS:=120}"
fi
# The default is this run's alone: two main-jobs started in the same second
# differ by pid (no two live processes share one), so neither writes into, nor
# reports, the other's run.
out_dir_is_ours=0
if [[ -z "${OUT_DIR:-}" ]]; then
  OUT_DIR="$repo/out/main-job-$(date -u +%Y%m%dT%H%M%SZ)-$$"
  out_dir_is_ours=1
fi
[[ "$OUT_DIR" == /* ]] || OUT_DIR="$start_dir/$OUT_DIR"
export PLATFORM STEPS SEED LEARNING_RATE BATCH MICROBATCHES FEATURES WIDTH LAYERS CLASSES \
  NUM_PROCESSES DATA_SHARDS COORDINATOR_PORT HEARTBEAT_TIMEOUT_SECONDS OUT_DIR

# ---- programs ---------------------------------------------------------------------
if [[ -n "${DMLP_BIN_DIR:-}" ]]; then
  bin="$(cd "$start_dir" && cd "$DMLP_BIN_DIR" && pwd)"
else
  cuda_option=()
  [[ "$PLATFORM" == cuda ]] && cuda_option=(-DDMLP_CUDA=ON)
  say "building in $repo/build"
  cmake -S . -B build "${cuda_option[@]}" >/dev/null
  cmake --build build -j"$(nproc)" --target dmlp-launch dmlp-train dmlp-verify
  bin="$repo/build/bin"
fi

# ---- the job ----------------------------------------------------------------------
say "PLATFORM=$PLATFORM NUM_PROCESSES=$NUM_PROCESSES DATA_SHARDS=$DATA_SHARDS STEPS=$STEPS" \
  "BATCH=$BATCH MICROBATCHES=$MICROBATCHES FEATURES=$FEATURES WIDTH=$WIDTH LAYERS=$LAYERS" \
  "CLASSES=$CLASSES"
status=0
PATH="$bin:$PATH" ./run.sh || status=$?

# Only this run's verdict is printed. After a failed run.sh, an OUT_DIR the
# caller named may hold another job's run (one that held dmlp.lock, or had
# completed there), and dmlp-verify's verdict would be that job's.
if [[ $status -eq 0 || $out_dir_is_ours -eq 1 ]]; then
  verdict="$("$bin/dmlp-verify" "$OUT_DIR" 2>/dev/null | tail -n 1)" || true
  verdict="${verdict:-none}"
else
  verdict="not shown: run.sh failed, and OUT_DIR, which you named, may hold another job's run"
fi
echo
echo "main-job: run directory: $OUT_DIR"
echo "main-job: verdict: $verdict (run.sh exit status $status)"
echo "main-job: check it again with: $bin/dmlp-verify $OUT_DIR"
exit "$status"
