#!/usr/bin/env bash
# run.sh: the dmlp job, as `super run . --script run.sh` (and the Docker
# image's default command) runs it. Replaces the reference's run.sh.
#   1. checks the job's environment (ENV_MISSING / ENV_EMPTY / ENV_INVALID, exit 2);
#   2. PLATFORM=cuda: lists the GPUs with nvidia-smi;
#   3. finds dmlp-launch, dmlp-train and dmlp-verify on PATH or in ./build/bin
#      (beside this script), and builds them there when they are not found;
#   4. dmlp-launch (NUM_PROCESSES ranks of dmlp-train, OUT_DIR);
#   5. dmlp-verify "$OUT_DIR", with its HTML report written beside the run
#      directory as "$OUT_DIR.report.html" (path printed as `run.sh: report: PATH`;
#      a path dmlp-verify refuses, or a page it cannot write, is its warning
#      `--html-optional: no report written: ...`, and the verdict and exit
#      status are the run's all the same).
# Exit status: 0 when the job ran and dmlp-verify says PASS; 2 for a bad
# environment; otherwise the status of the first step that failed (nvidia-smi,
# the build, dmlp-launch, dmlp-verify). dmlp-verify runs even after a failed
# job: its report says how far the receipts go. SIGINT, SIGTERM and SIGHUP
# are passed on to dmlp-launch once each (a second one makes it kill at once);
# when this script dies of SIGKILL, dmlp-launch stops the job as on SIGTERM.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
programs=(dmlp-launch dmlp-train dmlp-verify)
# What dmlp-train requires (trainer/plan.cc); the optional ones have defaults.
required=(STEPS SEED BATCH MICROBATCHES LEARNING_RATE OUT_DIR PLATFORM NUM_PROCESSES
          COORDINATOR_PORT FEATURES WIDTH LAYERS CLASSES HEARTBEAT_TIMEOUT_SECONDS)

say() { echo "run.sh: $*" >&2; }
fail() {  # fail STATUS CODE DETAIL
  echo "run.sh: error: $2: $3" >&2
  exit "$1"
}

# ---- 1. environment -----------------------------------------------------------
for name in "${required[@]}"; do
  [[ -v "$name" ]] || fail 2 ENV_MISSING "$name"
  [[ "${!name}" =~ [^[:space:]] ]] || fail 2 ENV_EMPTY "$name"
done
# The same rule as dmlp-train: decimal digits, 1 .. 65536 (leading zeros allowed).
if [[ ! "$NUM_PROCESSES" =~ ^[0-9]+$ ]]; then
  fail 2 ENV_INVALID "NUM_PROCESSES='$NUM_PROCESSES' is not an integer"
fi
digits="${NUM_PROCESSES#"${NUM_PROCESSES%%[!0]*}"}"  # without leading zeros
if [[ ${#digits} -gt 5 || -z "$digits" ]] || ((10#$digits < 1 || 10#$digits > 65536)); then
  fail 2 ENV_INVALID "NUM_PROCESSES='$NUM_PROCESSES' must be between 1 and 65536"
fi
case "$PLATFORM" in
  cuda | cpu) ;;
  *) fail 2 ENV_INVALID "PLATFORM='$PLATFORM' must be cuda or cpu" ;;
esac

# ---- 2. GPUs --------------------------------------------------------------------
if [[ "$PLATFORM" == cuda ]]; then
  # As the reference: rank r uses GPU r of all the machine's GPUs (LOCAL_RANK).
  if [[ -v CUDA_VISIBLE_DEVICES ]]; then
    say "unsetting CUDA_VISIBLE_DEVICES='$CUDA_VISIBLE_DEVICES' (rank r uses GPU r)"
    unset CUDA_VISIBLE_DEVICES
  fi
  nvidia-smi --query-gpu=index,name,uuid,memory.total --format=csv
  status=$?
  if [[ $status -ne 0 ]]; then
    fail "$status" NO_GPU "nvidia-smi failed (status $status); PLATFORM=cuda needs NVIDIA GPUs and their driver (PLATFORM=cpu runs without)"
  fi
fi

# ---- 3. programs ----------------------------------------------------------------
# A dmlp-train built without CUDA (DMLP_CUDA=OFF, or no nvcc at build time)
# links no CUDA runtime and answers PLATFORM=cuda with PLATFORM_UNAVAILABLE.
has_cuda() { ldd "$1/dmlp-train" 2>/dev/null | grep -q 'libcudart'; }
usable() {  # usable DIR: all three programs there, and CUDA when the job needs it
  local program
  for program in "${programs[@]}"; do [[ -x "$1/$program" ]] || return 1; done
  [[ "$PLATFORM" != cuda ]] || has_cuda "$1"
}

bin=""
if launch_path="$(command -v dmlp-launch)" && usable "$(dirname "$launch_path")"; then
  bin="$(dirname "$launch_path")"
elif usable "$here/build/bin"; then
  bin="$here/build/bin"
else
  [[ -f "$here/CMakeLists.txt" ]] ||
    fail 2 PROGRAMS_MISSING "no usable ${programs[*]} on PATH or in $here/build/bin, and no source tree to build them from"
  cuda_option=()
  [[ "$PLATFORM" == cuda ]] && cuda_option=(-DDMLP_CUDA=ON)
  say "building ${programs[*]} in $here/build (PLATFORM=$PLATFORM)"
  cmake -S "$here" -B "$here/build" -DCMAKE_BUILD_TYPE=Release "${cuda_option[@]}" >&2
  status=$?
  if [[ $status -eq 0 ]]; then
    cmake --build "$here/build" -j"$(nproc)" --target "${programs[@]}" >&2
    status=$?
  fi
  [[ $status -eq 0 ]] || fail "$status" BUILD_FAILED "cmake exited with status $status"
  usable "$here/build/bin" || fail 2 BUILD_FAILED "$here/build/bin lacks a usable ${programs[*]}"
  bin="$here/build/bin"
fi
say "programs: $bin"

# ---- 4. the job -------------------------------------------------------------------
# dmlp-launch runs in a session of its own, so a terminal's Ctrl-C or a signal
# to this script's process group reaches it exactly once: through forward().
# This script may die by SIGKILL, which it cannot pass on: --stop-with-parent
# makes the launcher end the job then as on SIGTERM (receipts valid, dmlp.lock
# released, RESUME=1 continues), rather than run on unwatched. setsid(1) execs
# in place here (a background child of a script is no group leader), so the
# launcher's parent is this shell, $$.
setsid "$bin/dmlp-launch" --stop-with-parent "$$" </dev/null &
launch_pid=$!
forward() { kill -s "$1" "$launch_pid" 2>/dev/null || true; }
trap 'forward INT' INT
trap 'forward TERM' TERM
trap 'forward HUP' HUP
while :; do
  wait "$launch_pid"
  launch_status=$?
  # A trapped signal interrupts wait; the launcher is still tearing down.
  kill -0 "$launch_pid" 2>/dev/null || break
done
trap - INT TERM HUP

# ---- 5. verification --------------------------------------------------------------
# The report is an extra (dmlp-verify --html-optional): a path dmlp-verify
# refuses (a stale file that is not its report, a link, a directory) or a page
# it cannot write costs the page only. dmlp-verify says so, writes nothing
# there, and the verdict and exit status stay the run's. A page written is a
# new file renamed into place (report_file.h), so a new inode tells it apart
# from whatever was there before.
verify_status=0
if [[ -d "$OUT_DIR" || $launch_status -eq 0 ]]; then
  # The page for people goes beside the run, never into it: OUT_DIR stays
  # exactly what the trainer wrote (/work/out/run-1 -> /work/out/run-1.report.html).
  if out_abs="$(cd "$OUT_DIR" 2>/dev/null && pwd -P)" && [[ "$out_abs" != / ]]; then
    report="$out_abs.report.html"
    before="$(stat -c %i -- "$report" 2>/dev/null)"
    "$bin/dmlp-verify" "--html=$report" --html-optional "$OUT_DIR"
    verify_status=$?
    if [[ -f "$report" && ! -L "$report" && "$(stat -c %i -- "$report")" != "$before" ]]; then
      say "report: $report"
    fi
  else
    "$bin/dmlp-verify" "$OUT_DIR"
    verify_status=$?
  fi
else
  say "no $OUT_DIR to verify: the job stopped before creating it"
fi

if [[ $launch_status -ne 0 ]]; then
  say "dmlp-launch exited with status $launch_status (dmlp-verify: $verify_status)"
  exit "$launch_status"
fi
if [[ $verify_status -ne 0 ]]; then
  say "dmlp-verify exited with status $verify_status"
  exit "$verify_status"
fi
say "job complete and verified: $OUT_DIR"
