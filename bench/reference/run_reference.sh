#!/usr/bin/env bash
# Runs the reference JAX job (reference/train.py, unmodified) on the CPU with
# NUM_PROCESSES ranks, one process per rank as reference/run.sh starts them, and
# prints its start-up time and steady speed:
#   reference_startup_s=S      first rank started -> rank 0's first METRIC line
#   reference_steps_per_s=R    (METRIC lines - 1) / (last - first METRIC time),
#                              i.e. compilation and step 1 excluded
# Configuration comes from the environment, as train.py reads it:
#   required: FEATURES WIDTH LAYERS CLASSES BATCH MICROBATCHES STEPS NUM_PROCESSES
#   defaults: SEED=42 LEARNING_RATE=0.001 HEARTBEAT_TIMEOUT_SECONDS=120
#             COORDINATOR_PORT=<a free port>
#   OUT_DIR            must not exist yet (default: a new temporary directory)
#   LOG_DIR            per-rank stdout/stderr (default: a new temporary directory)
#   REFERENCE_PYTHON   python with jax/flax/optax (default: <repo>/.venv-ref/bin/python,
#                      made by setup_venv.sh)
#   REFERENCE_DIR      directory holding train.py and runtime.py
#                      (default: <repo>/../shared/reference)
# JAX 0.10.2 needs no extra setting for multi-process CPU: its CPU collectives
# default to gloo, and train.py's local_device_ids only narrows CUDA/ROCm devices.
# Exit status: that of the first rank to fail, else 0.
set -euo pipefail
# EPOCHREALTIME and awk must agree on "." as the decimal point.
export LC_ALL=C

script_dir="$(cd "$(dirname "$0")" && pwd)"
repo_root="$(cd "$script_dir/../.." && pwd)"
python_bin="${REFERENCE_PYTHON:-$repo_root/.venv-ref/bin/python}"
reference_dir="${REFERENCE_DIR:-$repo_root/../shared/reference}"

die() { echo "run_reference.sh: error: $*" >&2; exit 2; }

for name in FEATURES WIDTH LAYERS CLASSES BATCH MICROBATCHES STEPS NUM_PROCESSES; do
  [ -n "${!name:-}" ] || die "ENV_MISSING: $name"
done
[[ "$NUM_PROCESSES" =~ ^[1-9][0-9]*$ ]] || die "ENV_INVALID: NUM_PROCESSES"
[[ "$STEPS" =~ ^[1-9][0-9]*$ ]] || die "ENV_INVALID: STEPS"
[ "$STEPS" -ge 2 ] || die "ENV_INVALID: STEPS must be >= 2 to measure steady steps/s"
[ -x "$python_bin" ] || die "no python at $python_bin (run bench/reference/setup_venv.sh or set REFERENCE_PYTHON)"
[ -f "$reference_dir/train.py" ] || die "no train.py in $reference_dir (set REFERENCE_DIR)"
reference_dir="$(cd "$reference_dir" && pwd)"

if [ -z "${COORDINATOR_PORT:-}" ]; then
  # Port 0 lets the kernel pick a free port; closed again at once, it is free
  # for rank 0's coordinator unless someone else takes it in between.
  COORDINATOR_PORT="$("$python_bin" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
fi
if [ -n "${OUT_DIR:-}" ]; then
  [ ! -e "$OUT_DIR" ] || die "OUT_DIR already exists: $OUT_DIR (give a fresh one)"
else
  OUT_DIR="$(mktemp -d -t reference-out.XXXXXX)"
  rmdir "$OUT_DIR"  # train.py creates it; a fresh path proves nothing stale is read
fi
LOG_DIR="${LOG_DIR:-$(mktemp -d -t reference-logs.XXXXXX)}"
mkdir -p "$LOG_DIR"

# Settings train.py and runtime.py demand (runtime.py accepts exactly this XLA_FLAGS),
# plus the reference image's Python settings from reference/spec.json.
export JAX_PLATFORMS=cpu XLA_FLAGS=--xla_gpu_deterministic_ops=true
export PYTHONUNBUFFERED=1 PYTHONHASHSEED=0 PYTHONDONTWRITEBYTECODE=1
export SEED="${SEED:-42}" LEARNING_RATE="${LEARNING_RATE:-0.001}"
export HEARTBEAT_TIMEOUT_SECONDS="${HEARTBEAT_TIMEOUT_SECONDS:-120}"
export COORDINATOR_PORT OUT_DIR
export FEATURES WIDTH LAYERS CLASSES BATCH MICROBATCHES STEPS NUM_PROCESSES

rank_pids=()
stamp_pid=""
stop_all() {
  local pid
  for pid in "${rank_pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${rank_pids[@]}"; do
    for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    kill -KILL "$pid" 2>/dev/null || true
  done
  if [ -n "$stamp_pid" ]; then kill -TERM "$stamp_pid" 2>/dev/null || true; fi
}
trap stop_all EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Rank 0's stdout goes through a FIFO to a reader that stamps each line with the
# wall-clock time it arrived (train.py flushes every METRIC line).
fifo="$LOG_DIR/rank-0.stdout.fifo"
rm -f "$fifo"
mkfifo "$fifo"
stamp_lines() {
  local line
  while IFS= read -r line; do printf '%s %s\n' "$EPOCHREALTIME" "$line"; done
}
stamp_lines <"$fifo" >"$LOG_DIR/rank-0.stdout" &
stamp_pid=$!

echo "reference: $NUM_PROCESSES process(es), OUT_DIR=$OUT_DIR, logs in $LOG_DIR, port $COORDINATOR_PORT" >&2
start_time="$EPOCHREALTIME"
cd "$reference_dir"
for ((rank = 0; rank < NUM_PROCESSES; rank++)); do
  if [ "$rank" -eq 0 ]; then
    PROCESS_ID=0 "$python_bin" train.py >"$fifo" 2>"$LOG_DIR/rank-0.stderr" &
  else
    PROCESS_ID=$rank "$python_bin" train.py >"$LOG_DIR/rank-$rank.stdout" 2>"$LOG_DIR/rank-$rank.stderr" &
  fi
  rank_pids+=("$!")
done

# wait -n -p reports each rank as it ends; the first failure ends the job, as
# reference/run.sh does (the others would block in a collective).
declare -A running=()
for pid in "${rank_pids[@]}"; do running[$pid]=1; done
while [ "${#running[@]}" -gt 0 ]; do
  ended_pid=""
  rc=0
  wait -n -p ended_pid "${!running[@]}" || rc=$?
  if [ -z "${ended_pid:-}" ]; then
    # bash 5.2's wait -n can return without naming a job (it unsets the -p
    # variable; seen once in bench/train_bench.py, 2026-12-04), e.g. when
    # another child of this shell (the line stamper) ended. Find the rank
    # that ended by pid; bash keeps its status for `wait PID`.
    ended_pid=""
    for pid in "${!running[@]}"; do
      if ! kill -0 "$pid" 2>/dev/null; then
        ended_pid=$pid
        rc=0
        wait "$pid" || rc=$?
        break
      fi
    done
    if [ -z "$ended_pid" ]; then sleep 0.05; continue; fi  # every rank still runs
  fi
  unset "running[$ended_pid]"
  if [ "$rc" -ne 0 ]; then
    echo "RANK_EXIT_NONZERO: pid=$ended_pid rc=$rc (logs in $LOG_DIR)" >&2
    exit "$rc"
  fi
done
wait "$stamp_pid" || true
stamp_pid=""
rm -f "$fifo"

awk -v start="$start_time" -v steps="$STEPS" '
  $2 == "METRIC" { count++; if (count == 1) first = $1; last = $1 }
  END {
    if (count != steps) { printf "run_reference.sh: error: %d METRIC lines, expected %d\n", count, steps > "/dev/stderr"; exit 1 }
    printf "reference_startup_s=%.3f\n", first - start
    printf "reference_steps_per_s=%.4f\n", (count - 1) / (last - first)
  }' "$LOG_DIR/rank-0.stdout"
echo "reference_processes=$NUM_PROCESSES"
echo "reference_out_dir=$OUT_DIR"
