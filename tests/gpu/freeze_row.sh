#!/usr/bin/env bash
# The kit's freeze row: one job frozen mid-run and restored, as the
# target platform does to every job:
#   1. the job run uninterrupted (the bytes to compare with);
#   2. the same job started again; once it has logged FREEZE_AFTER_STEPS steps
#      (PLATFORM=cuda) each rank's CUDA state is checkpointed (cuda_freeze:
#      lock + checkpoint; Debian's criu has no CUDA plugin, so this tool, and
#      only it, locks the ranks), then CRIU dumps the whole job from the
#      launcher down with dmlp's flags (tools/criu.sh --dmlp-dump-flags);
#   3. the job stays down longer than its heartbeat timeout (and than the
#      restore detector's 5 s clock tolerance);
#   4. CRIU restores it, then (cuda) cuda_freeze restores and unlocks each rank;
#   5. the job must finish with dmlp-verify PASS, receipts, metrics.jsonl and
#      state.safetensors byte-identical to step 1, and the verifier naming, for
#      every rank, a restore after some step.
# Every step is bounded in time. Prints one line, `STATUS DETAIL`:
#   PASS  as in 5;
#   SKIP  a tool or the kernel refused, quoted: no CRIU in the kit, CRIU's own
#         check, a driver without the checkpoint API, cuda_freeze's lock,
#         checkpoint or restore, CRIU's dump or restore;
#   FAIL  dmlp is wrong: a job failed or ended early, dmlp-verify is not PASS,
#         a byte differs, a restore is not named; or the job finished before
#         the freeze (STEPS too few for the GPU: the runner sizes STEPS by the
#         GPU's rate so that the job outlives the freeze).
#
# Usage: freeze_row.sh BIN_DIR CRIU_DIR WORK_DIR NAME RANKS PLATFORM [VAR=VALUE...]
#   BIN_DIR   dmlp-launch, dmlp-train, dmlp-verify (and cuda_freeze for cuda)
#   CRIU_DIR  the kit's criu/ (tools/criu.sh --bundle): criu, dmlp-dump-flags, dmlp-restore-flags
#   VAR=VALUE the job's settings over the defaults below
# Environment: FREEZE_ROW_TIMEOUT (s, default 120) bounds each job and each
# CRIU call; FREEZE_ROW_PORT (default: a free port from python3, else 29700).
set -uo pipefail
export LC_ALL=C
[ $# -ge 6 ] || { echo "usage: freeze_row.sh BIN_DIR CRIU_DIR WORK_DIR NAME RANKS PLATFORM [VAR=VALUE...]" >&2; exit 2; }
bin="$1" criu_dir="$2" work="$3" name="$4" ranks="$5" platform="$6"
shift 6
limit="${FREEZE_ROW_TIMEOUT:-120}"
heartbeat=3
down=7  # > the heartbeat, and > 5 s so that the restore detector sees the clock jump
freeze_after=2
criu="$criu_dir/criu"
dir="$work/$name"
rm -rf "$dir"
mkdir -p "$dir"
launcher=""

finish() {  # finish STATUS DETAIL: the row's line; a job still running is ended by pid
  if [ -n "$launcher" ] && kill -0 "$launcher" 2>/dev/null; then
    kill -TERM "$launcher" 2>/dev/null
    sleep 2
    kill -KILL "$launcher" 2>/dev/null
  fi
  rm -rf "$dir/images"  # the process images: gigabytes with a GPU job, and of no use now
  echo "$1 $2"
  exit 0
}
quote() { tail -n "${2:-2}" "$1" 2>/dev/null | tr '\n' ' ' | sed 's/ *$//' | cut -c1-300; }

[ -x "$criu" ] || finish SKIP "no CRIU in the kit ($criu_dir/criu: make_kit.sh bundles it with tools/criu.sh --bundle)"
read -r -a dump_flags <"$criu_dir/dmlp-dump-flags" 2>/dev/null ||
  finish SKIP "no $criu_dir/dmlp-dump-flags (tools/criu.sh --bundle writes it)"
read -r -a restore_flags <"$criu_dir/dmlp-restore-flags" 2>/dev/null ||
  finish SKIP "no $criu_dir/dmlp-restore-flags (tools/criu.sh --bundle writes it)"
if ! timeout -k 5 60 "$criu" check >"$dir/criu-check.log" 2>&1; then
  finish SKIP "criu check refuses: $(quote "$dir/criu-check.log" 3)"
fi
if [ "$platform" = cuda ] && [ ! -x "$bin/cuda_freeze" ]; then
  finish SKIP "no cuda_freeze in $bin"
fi

if [ -n "${FREEZE_ROW_PORT:-}" ]; then
  port="$FREEZE_ROW_PORT"
else
  port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' 2>/dev/null || echo 29700)"
fi
steps=80
for setting in "$@"; do
  [[ "$setting" == STEPS=* ]] && steps="${setting#STEPS=}"
done
job_env=(STEPS="$steps" SEED=42 BATCH=4096 MICROBATCHES=4 LEARNING_RATE=0.001 FEATURES=512 WIDTH=2048
         LAYERS=3 CLASSES=10 PLATFORM="$platform" NUM_PROCESSES="$ranks"
         HEARTBEAT_TIMEOUT_SECONDS="$heartbeat" COORDINATOR_PORT="$port" "$@")

# ---- 1. uninterrupted ----------------------------------------------------------
env "${job_env[@]}" OUT_DIR="$dir/straight" timeout -k 5 "$limit" "$bin/dmlp-launch" --grace 5 \
  </dev/null >"$dir/straight.log" 2>&1 || finish FAIL "the uninterrupted job failed: $(quote "$dir/straight.log")"

# ---- 2. started again, frozen mid-run ------------------------------------------
# Its own session, files for its output (CRIU restores files, not a pipe to
# this script), no `timeout` above it (the dump starts at the launcher): the
# waits below are bounded instead.
# Descriptors this script inherited (a harness's /dev/null on fd 10, say) are
# closed: CRIU cannot place a file opened through a mount outside the job's root.
(
  for fd in /proc/self/fd/*; do
    fd="${fd##*/}"
    [ "$fd" -gt 2 ] && eval "exec $fd>&-" 2>/dev/null
  done
  exec env "${job_env[@]}" OUT_DIR="$dir/frozen" setsid "$bin/dmlp-launch" --grace 5 \
    </dev/null >"$dir/frozen.log" 2>&1
) &
launcher=$!
logged() { [ -f "$dir/frozen/rank-0.jsonl" ] && wc -l <"$dir/frozen/rank-0.jsonl" || echo 0; }
deadline=$((SECONDS + limit))
while [ "$(logged)" -lt "$freeze_after" ]; do
  kill -0 "$launcher" 2>/dev/null || finish FAIL "the job ended before step $freeze_after: $(quote "$dir/frozen.log")"
  [ "$SECONDS" -lt "$deadline" ] || finish FAIL "no step $freeze_after within ${limit} s"
  sleep 0.05
done
rank_pids=()  # the launcher's dmlp-train children (/proc: a bare root has no ps)
for task in /proc/"$launcher"/task/*/children; do
  children=()
  read -r -a children <"$task" 2>/dev/null  # no newline at its end: read fails, the words are read
  for child in "${children[@]}"; do
    [ "$(cat "/proc/$child/comm" 2>/dev/null)" = dmlp-train ] && rank_pids+=("$child")
  done
done
[ "${#rank_pids[@]}" -eq "$ranks" ] || finish FAIL "found ${#rank_pids[@]} dmlp-train processes under the launcher, expected $ranks"
if [ "$platform" = cuda ]; then
  timeout -k 5 "$limit" "$bin/cuda_freeze" freeze "${rank_pids[@]}" --lock-timeout-ms 20000 \
    >"$dir/cuda-freeze.log" 2>&1
  case $? in
    0) ;;
    3) finish SKIP "the CUDA checkpoint API refuses: $(quote "$dir/cuda-freeze.log" 1)" ;;
    *) timeout -k 5 60 "$bin/cuda_freeze" thaw "${rank_pids[@]}" >>"$dir/cuda-freeze.log" 2>&1
       finish SKIP "cuda_freeze freeze refused: $(quote "$dir/cuda-freeze.log")" ;;
  esac
fi
step_at_dump="$(logged)"
if [ "$step_at_dump" -ge "$steps" ] || ! kill -0 "$launcher" 2>/dev/null; then
  finish FAIL "the job finished before it was frozen (step $step_at_dump of $steps): STEPS too few for this GPU"
fi
dump_start=$SECONDS
mkdir -p "$dir/images"
if ! timeout -k 5 "$limit" "$criu" dump -t "$launcher" -D "$dir/images" -o "$dir/dump.log" \
       "${dump_flags[@]}" 2>"$dir/dump.err"; then
  [ "$platform" = cuda ] && timeout -k 5 60 "$bin/cuda_freeze" thaw "${rank_pids[@]}" >>"$dir/cuda-freeze.log" 2>&1
  finish SKIP "criu dump refused: $(grep -m1 -E 'Error|error' "$dir/dump.log" 2>/dev/null || quote "$dir/dump.err")"
fi
wait "$launcher" 2>/dev/null  # CRIU ended the dumped tree; reap its root (our child)
dump_seconds=$((SECONDS - dump_start))
images_mb="$(du -sm "$dir/images" | cut -f1)"

# ---- 3. down --------------------------------------------------------------------
sleep "$down"

# ---- 4. restored ---------------------------------------------------------------
restore_start=$SECONDS
if ! timeout -k 5 "$limit" "$criu" restore -D "$dir/images" -o "$dir/restore.log" \
       "${restore_flags[@]}" 2>"$dir/restore.err"; then
  launcher=""
  finish SKIP "criu restore refused: $(grep -m1 -E 'Error|error' "$dir/restore.log" 2>/dev/null || quote "$dir/restore.err")"
fi
if [ "$platform" = cuda ]; then
  timeout -k 5 "$limit" "$bin/cuda_freeze" thaw "${rank_pids[@]}" >>"$dir/cuda-freeze.log" 2>&1 ||
    finish SKIP "cuda_freeze thaw refused: $(quote "$dir/cuda-freeze.log")"
fi
restore_seconds=$((SECONDS - restore_start))
# The restored launcher is nobody's child here: poll until it is gone (or a zombie).
running() { [ -e "/proc/$launcher" ] && [ "$(awk '{ print $3 }' "/proc/$launcher/stat" 2>/dev/null)" != Z ]; }
deadline=$((SECONDS + limit))
while running; do
  [ "$SECONDS" -lt "$deadline" ] || finish FAIL "the restored job did not finish within ${limit} s: $(quote "$dir/frozen.log")"
  sleep 0.2
done
launcher=""

# ---- 5. the verdict --------------------------------------------------------------
"$bin/dmlp-verify" "$dir/frozen" >"$dir/verify.log" 2>&1
verdict="$(tail -n 1 "$dir/verify.log")"
[ "$verdict" = PASS ] || finish FAIL "dmlp-verify $verdict: $(grep -m2 -E 'error|FAIL' "$dir/verify.log" | tr '\n' ' ')"
compared=(metrics.jsonl state.safetensors)
for path in "$dir"/straight/rank-*.jsonl; do
  [[ "$path" == *.env.jsonl ]] || compared+=("${path##*/}")  # env files differ by design
done
for file in "${compared[@]}"; do
  cmp -s "$dir/straight/$file" "$dir/frozen/$file" ||
    finish FAIL "$file differs from the uninterrupted run: $(cmp "$dir/straight/$file" "$dir/frozen/$file" 2>&1 | head -1)"
done
"$bin/dmlp-verify" "$dir/frozen" --against "$dir/straight" >"$dir/verify-against.log" 2>&1 ||
  finish FAIL "dmlp-verify --against: $(tail -n 1 "$dir/verify-against.log")"
restores="$(grep -oE 'rank [0-9]+: .*restored after step [0-9]+' "$dir/verify.log" |
            sed -E 's/^(rank [0-9]+): .*(restored after step [0-9]+).*/\1 \2/' | sort -u)"
[ "$(grep -c . <<<"$restores")" -eq "$ranks" ] ||
  finish FAIL "dmlp-verify names a restore for $(grep -c . <<<"$restores") of $ranks ranks: $(grep -m3 'rank ' "$dir/verify.log" | tr '\n' ' ')"
finish PASS "$ranks rank(s), $platform: dump begun after step $step_at_dump, dump ${dump_seconds} s (${images_mb} MB), down ${down} s (heartbeat ${heartbeat} s), restore ${restore_seconds} s; dmlp-verify PASS, byte-identical to the uninterrupted run; $(tr '\n' ';' <<<"$restores" | sed 's/;$//; s/;/; /g')"
