#!/usr/bin/env bash
# The CUDA platform's checks, for a machine with a GPU (issues 5 and 13). One
# command, a table at the end:
#   1. configure + build (Release) for the local GPU's architecture, or with
#      --kit DIR (tests/gpu/make_kit.sh) no build: the kit's programs, with
#      cuBLAS and NCCL found on the machine (the image's Python packages or a
#      toolkit folder; it prints what it found and fails clearly without);
#   2. the GPU unit tests (cuda_test): data/init bits, kernels, GEMM mapping,
#      forward/backward vs the CPU platform, Adam, the ordered fold, the backend;
#   3. a 1-rank job at the spec's sizes (FEATURES=512 WIDTH=2048 LAYERS=3
#      CLASSES=10 BATCH=4096 MICROBATCHES=8) twice per precision: byte-identical
#      receipts, dmlp-verify PASS; the same job for a few steps on PLATFORM=cpu:
#      losses within the tolerance per precision (below);
#   4. 1, 2 and 4 ranks on the one GPU (COLLECTIVES=gloo DATA_SHARDS=4): every
#      run PASS, metrics.jsonl and state.safetensors byte-identical (SKIP when
#      dmlp-train does not know COLLECTIVES);
#   5. gpu_bench (update time vs the cuBLAS floor, digest throughput) and the
#      digest against its hasher count K = 1, 2, 4, 8: one pipeline and 8 at
#      once on the host's cores, the GPU step with/without it (digest_row.sh,
#      gpu_bench --digest-sweep; goal: <= 1.05x);
#   6. the reference's samples and initial parameters from this machine's jax
#      on XLA:GPU against XLA:CPU, and dmlp's own on this GPU (dmlp_draws)
#      against both: ulp histograms, dmlp must be jax's CPU bits
#      (fidelity_row.sh); and the reference JAX job on the same GPU at both
#      precisions;
#   7. freeze and restore (freeze_row.sh): a 1-rank job and a 2-rank
#      COLLECTIVES=gloo job, each CUDA-checkpointed (cuda_freeze), dumped whole
#      by CRIU (the kit's criu/), down past its heartbeat, restored: PASS,
#      byte-identical, each rank's restore named; SKIP quoting the refusal
#      where the machine cannot.
#
# Usage: tests/gpu/run_gpu_checks.sh [BUILD_DIR]     (default: <repo>/build-gpu)
#        tests/gpu/run_gpu_checks.sh --kit DIR       (about 3 minutes on one H200)
# Results: the table and the logs go to $OUT when it is set (the device
# machine's folder that comes back), else to a new temporary folder, as the
# checks run, so a run cut off still leaves what it found:
#   gpu-checks-table.txt     the table so far
#   gpu-checks.log           progress and failure details
#   gpu-checks-logs.tar.gz   every job's logs and receipts (no state files)
# Environment (all optional):
#   GPU_CHECK_STEPS=20            logged steps of each CUDA job (--kit: 10)
#   GPU_CHECK_CPU_STEPS=3         logged steps of the CPU job (compared with the first CUDA steps)
#   GPU_CHECK_REFERENCE_STEPS=10  logged steps of each reference JAX job (--kit: 6)
#   GPU_CHECK_JOB_TIMEOUT=300     seconds any one job may take (--kit: 90)
#   DIGEST_THREADS                --kit: 2 unless set (every job's hashers; the
#                                 default would pin (K+1) x 113.6 MB per rank)
#   GPU_CHECK_SKIP_REFERENCE=1    skip the reference JAX jobs
#   GPU_CHECK_PORT_BASE           coordinator ports from here up (default: free ports from python3)
#   DMLP_GPU_PYTHON=python3       the Python with jax, flax and optax
#   DMLP_GPU_LIB_DIRS             --kit: folders (a:b) searched first for cuBLAS and NCCL
#   REFERENCE_DIR                 reference/train.py's directory (default <repo>/../shared/reference;
#                                 --kit: DIR/reference); missing is a FAIL
#   CUDACXX                       nvcc (default: on PATH, else /usr/local/cuda/bin/nvcc)
#
# Loss tolerances CPU vs CUDA (relative, per step, first GPU_CHECK_CPU_STEPS steps):
#   fp32 1e-3: both platforms compute in fp32 and differ only in summation
#              order and expf/logf ulps; the trajectories drift apart slowly.
#   tf32 3e-2: TF32 rounds GEMM inputs to 10 mantissa bits (~5e-4 relative per
#              product), against the CPU's fp32.
# Exit status: 0 when every correctness check passed (speed goals are reported,
# never fail the run), 1 otherwise, 2 on usage errors.
set -uo pipefail
export LC_ALL=C

script_dir="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$script_dir/../.." && pwd)"
kit=""
build="$repo/build-gpu"
case "${1:-}" in
  --kit)
    if [ $# -ne 2 ] || [ ! -d "$2/bin" ]; then
      echo "usage: run_gpu_checks.sh --kit DIR (a folder made by tests/gpu/make_kit.sh)" >&2
      exit 2
    fi
    kit="$(cd "$2" && pwd)" ;;
  -*) echo "usage: run_gpu_checks.sh [BUILD_DIR] | --kit DIR" >&2; exit 2 ;;
  ?*) build="$1" ;;
esac
if [ -n "$kit" ]; then
  steps="${GPU_CHECK_STEPS:-10}"
  reference_steps="${GPU_CHECK_REFERENCE_STEPS:-6}"
  job_timeout="${GPU_CHECK_JOB_TIMEOUT:-90}"
  reference_dir="${REFERENCE_DIR:-$kit/reference}"
else
  steps="${GPU_CHECK_STEPS:-20}"
  reference_steps="${GPU_CHECK_REFERENCE_STEPS:-10}"
  job_timeout="${GPU_CHECK_JOB_TIMEOUT:-300}"
  reference_dir="${REFERENCE_DIR:-$repo/../shared/reference}"
fi
cpu_steps="${GPU_CHECK_CPU_STEPS:-3}"
work="$(mktemp -d -t dmlp-gpu-checks.XXXXXX)"
results="${OUT:-$work}"
mkdir -p "$results"
table="$results/gpu-checks-table.txt"
# Progress and details go to the console and to the log that comes back.
exec 2> >(tee -a "$results/gpu-checks.log" >&2)
# What the machine had at the start (the device's RAM may start small and grow).
{
  echo "nproc: $(nproc)"
  grep -E '^(MemTotal|MemFree|MemAvailable|Mlocked|CommitLimit|Committed_AS):' /proc/meminfo
} >&2
if [ -n "$kit" ]; then
  # Every job would pin (K+1) x 113.6 MB of digest buffers with the default K
  # (8 for one rank on 16 cores): an explicit, small K for the kit's jobs; the
  # digest row measures K = 1..8 on its own.
  export DIGEST_THREADS="${DIGEST_THREADS:-2}"
  echo "DIGEST_THREADS=$DIGEST_THREADS for every job" >&2
fi
declare -A tolerance=([fp32]=1e-3 [tf32]=3e-2)

rows=()
failed=0
gpu_name="$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)"
write_table() {
  {
    echo "dmlp GPU checks (${gpu_name:-no GPU}; ${kit:+kit $kit; }logs in $work)"
    printf '%-24s %-5s %s\n' CHECK RESULT DETAIL
    printf '%s\n' "${rows[@]}"
  } >"$table.tmp" && mv "$table.tmp" "$table"
  # Every job's logs and receipts, without the state files (113.6 MB each).
  # '*.safetensors*': a half-written state.safetensors.tmp of a job cut off too.
  tar -czf "$results/gpu-checks-logs.tar.gz.tmp" -C "$work" --exclude='*.safetensors*' --exclude='*.img' --exclude='gpu-checks-*' . 2>/dev/null &&
    mv "$results/gpu-checks-logs.tar.gz.tmp" "$results/gpu-checks-logs.tar.gz"
}
record() {  # record CHECK STATUS DETAIL
  rows+=("$(printf '%-24s %-5s %s' "$1" "$2" "$3")")
  [ "$2" = FAIL ] && failed=1
  echo "== $1: $2 $3" >&2
  write_table
}
finish() {
  write_table
  echo
  cat "$table"
  exit "$failed"
}
port=""
take_port() {  # sets $port: GPU_CHECK_PORT_BASE (or 29500 without python3) counting up, else a free one
  if [ -z "${GPU_CHECK_PORT_BASE:-}" ] && command -v python3 >/dev/null; then
    port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
  else
    port=$((${port:-${GPU_CHECK_PORT_BASE:-29500}} + 1))
  fi
}
stamp_lines() {  # each line prefixed with the wall-clock time it arrived
  local line
  while IFS= read -r line; do printf '%s %s\n' "$EPOCHREALTIME" "$line"; done
}
steps_per_second() {  # (METRIC lines - 1) / (last - first), as run_reference.sh measures
  awk '/METRIC step=/ { count++; if (count == 1) first = $1; last = $1 }
       END { if (count > 1 && last > first) printf "%.3f", (count - 1) / (last - first); else print "n/a" }' "$1"
}
bench_value() {  # bench_value PRECISION NAME
  sed -n "s/^$1\.$2=//p" "$work/gpu_bench.out" | head -1
}
last_error() {  # the program's error line (or the last lines) of a log
  { grep -m1 -E 'error: |error while loading' "$1" || tail -n 3 "$1"; } 2>/dev/null | tr '\n' ' ' | sed 's/ *$//'
}

# ---- 1. build, or the kit and the machine's cuBLAS/NCCL ------------------------
# Where a machine keeps cuBLAS and NCCL: DMLP_GPU_LIB_DIRS, then the nvidia-*
# Python packages (the device image: nvidia-cublas, nvidia-nccl-cu13) of
# python3 and of the usual site folders, then a CUDA toolkit or the system's.
device_lib_dirs() {
  local -a dirs=()
  IFS=: read -r -a dirs <<<"${DMLP_GPU_LIB_DIRS:-}"
  if command -v python3 >/dev/null; then
    mapfile -t -O "${#dirs[@]}" dirs < <(python3 - 2>/dev/null <<'PY'
import glob, os
import nvidia
for root in nvidia.__path__:
    for lib in sorted(glob.glob(os.path.join(root, "*", "lib"))):
        print(lib)
PY
)
  fi
  shopt -s nullglob
  dirs+=(/opt/*/.venv/lib/python3*/site-packages/nvidia/*/lib
         /usr/local/lib/python3*/dist-packages/nvidia/*/lib
         /usr/lib/python3/dist-packages/nvidia/*/lib
         /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib /usr/local/cuda/lib
         /usr/lib/x86_64-linux-gnu)
  shopt -u nullglob
  printf '%s\n' "${dirs[@]}"
}
# "2.28.9": ncclGetVersion of the libnccl.so.2 the loader finds now.
loaded_nccl_version() {
  python3 - 2>/dev/null <<'PY' || echo "unknown"
import ctypes
library = ctypes.CDLL("libnccl.so.2")
code = ctypes.c_int()
library.ncclGetVersion(ctypes.byref(code))
print(f"{code.value // 10000}.{code.value % 10000 // 100}.{code.value % 100}")
PY
}
use_kit() {
  local -a dirs=() found=()
  local soname dir detail="" missing="" path_dirs=""
  # A carry may drop the execute bits: restore those of the kit's programs and scripts.
  chmod +x "$kit"/bin/* "$kit"/tests/gpu/*.sh "$kit"/bench/reference/*.sh "$kit"/criu/criu \
    "$kit"/criu/criu-root/bin/criu "$kit"/criu/criu-root/lib/ld-linux-x86-64.so.2 2>/dev/null
  mapfile -t dirs < <(device_lib_dirs)
  while read -r soname; do
    [ -n "$soname" ] || continue
    for dir in "${dirs[@]}" ""; do
      [ -n "$dir" ] && [ -e "$dir/$soname" ] && break
    done
    if [ -z "$dir" ]; then
      missing+=" $soname"
      continue
    fi
    found+=("$soname: $dir")
    case ":$path_dirs:" in *":$dir:"*) ;; *) path_dirs="${path_dirs:+$path_dirs:}$dir" ;; esac
  done <"$kit/lib/DEVICE_LIBS"
  printf 'device library %s\n' "${found[@]}" >&2
  if [ -n "$missing" ]; then
    record "device libraries" FAIL "not found:$missing (cuBLAS, NCCL); looked in DMLP_GPU_LIB_DIRS, python3's nvidia packages, /opt/*/.venv, /usr/local/lib/python3*, /usr/local/cuda, /usr/lib/x86_64-linux-gnu"
    finish
  fi
  export LD_LIBRARY_PATH="$path_dirs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  local program unresolved=""
  for program in "$kit"/bin/*; do
    unresolved+="$(ldd "$program" 2>&1 | awk -v p="${program##*/}" '/not found/ { printf " %s:%s", p, $1 }')"
  done
  if [ -n "$unresolved" ]; then
    record "device libraries" FAIL "the loader cannot resolve:$unresolved (LD_LIBRARY_PATH=$LD_LIBRARY_PATH)"
    finish
  fi
  # The strict NCCL check runs only in jobs that form a communicator; the
  # versions side by side say at once whether those would refuse.
  local nccl_note
  nccl_note="libnccl $(loaded_nccl_version) loaded, kit built with header $(sed -n 's/^nccl header: //p' "$kit/KIT.txt")"
  echo "$nccl_note" >&2
  record "device libraries" PASS "$(printf '%s; ' "${found[@]}")$nccl_note; kit $(sed -n 's/^commit: //p' "$kit/KIT.txt" | cut -c1-12)"
  bin="$kit/bin"
}
build_here() {
  local start=$SECONDS arch nvcc_path
  arch="$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')"
  [[ "$arch" =~ ^[0-9]+$ ]] || arch=native
  nvcc_path="${CUDACXX:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}"
  if cmake -S "$repo" -B "$build" -DCMAKE_BUILD_TYPE=Release -DDMLP_CUDA=ON \
       -DCMAKE_CUDA_COMPILER="$nvcc_path" -DCMAKE_CUDA_ARCHITECTURES="$arch" \
       >"$work/configure.log" 2>&1 &&
     cmake --build "$build" -j"$(nproc)" \
       --target cuda_test dmlp-train dmlp-launch dmlp-verify gpu_bench >"$work/build.log" 2>&1; then
    record build PASS "sm_$arch, $((SECONDS - start)) s"
  else
    tail -n 30 "$work/configure.log" "$work/build.log" >&2
    record build FAIL "see $work/build.log"
    finish
  fi
  bin="$build/bin"
}
if [ -n "$kit" ]; then use_kit; else build_here; fi

# Without a GPU nothing below can pass; one small CUDA job shows what the
# programs say (a clear error, not a loader's), then the run ends.
if [ -z "$gpu_name" ]; then
  take_port
  record gpu FAIL "no GPU: nvidia-smi $(command -v nvidia-smi >/dev/null && echo 'lists none' || echo 'not found')"
  env STEPS=1 SEED=42 BATCH=8 MICROBATCHES=1 LEARNING_RATE=0.001 FEATURES=4 WIDTH=8 LAYERS=1 \
      CLASSES=2 PLATFORM=cuda OUT_DIR="$work/no-gpu" COORDINATOR_PORT="$port" \
      HEARTBEAT_TIMEOUT_SECONDS=30 timeout -k 5 60 "$bin/dmlp-launch" --nproc 1 --grace 5 \
      >"$work/no-gpu.out" 2>&1
  record "cuda job" FAIL "rc=$?: $(last_error "$work/no-gpu.out")"
  # The rows that need a GPU say why they did not run, in the programs' own words.
  record "digest threads" SKIP "no GPU (gpu_bench --digest-sweep times the GPU step)"
  if [ -x "$bin/cuda_freeze" ]; then
    "$bin/cuda_freeze" state $$ >"$work/cuda-freeze-no-gpu.out" 2>&1
    record "freeze cuda" SKIP "rc=$?: $(last_error "$work/cuda-freeze-no-gpu.out")"
  else
    record "freeze cuda" SKIP "no cuda_freeze in $bin"
  fi
  record "fidelity jax" SKIP "no GPU (XLA:GPU and dmlp_draws --platform cuda need one; the CPU half: fidelity_row.sh ... cpu)"
  finish
fi

# ---- 2. GPU unit tests ------------------------------------------------------
# The two no-GPU tests skip by design where there is a GPU; every other skip is a failure.
timeout -k 5 "$job_timeout" "$bin/cuda_test" --gtest_filter='-CudaDevice.NoGpu*' >"$work/cuda_test.log" 2>&1
rc=$?
passed="$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$work/cuda_test.log")"
skipped="$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) test.*/\1/p' "$work/cuda_test.log")"
if [ "$rc" -eq 0 ] && [ -z "$skipped" ]; then
  record "unit tests" PASS "${passed:-0} passed"
else
  grep -E '^\[  (FAILED|SKIPPED) \]|Failure|error' "$work/cuda_test.log" | head -20 >&2
  record "unit tests" FAIL "rc=$rc, ${skipped:-0} skipped; see $work/cuda_test.log"
fi

# ---- 3. 1-rank jobs ---------------------------------------------------------
run_job() {  # run_job NAME PLATFORM PRECISION STEPS [RANKS [VAR=VALUE...]] -> OUT_DIR $work/NAME, stamped log
  local name="$1" platform="$2" precision="$3" job_steps="$4" ranks="${5:-1}"
  shift $(($# < 5 ? $# : 5))
  take_port
  env STEPS="$job_steps" SEED=42 BATCH=4096 MICROBATCHES=8 LEARNING_RATE=0.001 \
      FEATURES=512 WIDTH=2048 LAYERS=3 CLASSES=10 \
      PLATFORM="$platform" MATMUL_PRECISION="$precision" OUT_DIR="$work/$name" \
      COORDINATOR_PORT="$port" HEARTBEAT_TIMEOUT_SECONDS=120 "$@" \
      timeout -k 10 "$job_timeout" "$bin/dmlp-launch" --nproc "$ranks" --grace 5 \
      2>"$work/$name.stderr" | stamp_lines >"$work/$name.stdout"
  return "${PIPESTATUS[0]}"
}
verify() {  # verify DIR [--against OTHER]
  "$bin/dmlp-verify" "$@" >>"$work/verify.log" 2>&1
}
declare -A job_steps_per_s=()
for precision in fp32 tf32; do
  ok=1
  detail=""
  for run in a b; do
    if ! run_job "cuda-$precision-$run" cuda "$precision" "$steps"; then
      ok=0
      detail="job cuda-$precision-$run failed: $(last_error "$work/cuda-$precision-$run.stderr")"
      break
    fi
    verify "$work/cuda-$precision-$run" || { ok=0; detail="dmlp-verify cuda-$precision-$run not PASS"; }
  done
  if [ "$ok" -eq 1 ]; then
    job_steps_per_s[$precision]="$(steps_per_second "$work/cuda-$precision-a.stdout")"
    if ! cmp -s "$work/cuda-$precision-a/rank-0.jsonl" "$work/cuda-$precision-b/rank-0.jsonl"; then
      ok=0
      detail="receipts differ: $(cmp "$work/cuda-$precision-a/rank-0.jsonl" "$work/cuda-$precision-b/rank-0.jsonl" | head -1)"
    elif ! verify "$work/cuda-$precision-a" --against "$work/cuda-$precision-b"; then
      ok=0
      detail="dmlp-verify --against not PASS"
    else
      detail="$steps steps x2: receipts byte-identical, dmlp-verify PASS; ${job_steps_per_s[$precision]} steps/s"
    fi
  fi
  record "receipts $precision" "$([ "$ok" -eq 1 ] && echo PASS || echo FAIL)" "$detail"
done

if run_job cpu-fp32 cpu fp32 "$cpu_steps"; then
  verify "$work/cpu-fp32" || record "cpu job" FAIL "dmlp-verify cpu-fp32 not PASS"
  for precision in fp32 tf32; do
    if [ ! -f "$work/cuda-$precision-a/rank-0.jsonl" ]; then
      record "cpu vs cuda $precision" FAIL "no CUDA receipts"
      continue
    fi
    comparison="$(python3 "$script_dir/compare_losses.py" "$work/cuda-$precision-a/rank-0.jsonl" \
                    "$work/cpu-fp32/rank-0.jsonl" "$cpu_steps" "${tolerance[$precision]}" 2>>"$work/compare.log")"
    rc=$?
    record "cpu vs cuda $precision" "$([ "$rc" -eq 0 ] && echo PASS || echo FAIL)" \
           "$comparison (tol ${tolerance[$precision]})"
  done
else
  record "cpu job" FAIL "$(last_error "$work/cpu-fp32.stderr")"
fi

# ---- 4. several ranks on the one GPU ------------------------------------------
# NCCL refuses two ranks on one device; COLLECTIVES=gloo stages the slices
# through host memory instead, and with DATA_SHARDS fixed the
# bytes must not depend on the number of ranks. Older programs lack the
# variable (it is a string in the program when it is parsed).
if ! grep -qa COLLECTIVES "$bin/dmlp-train"; then
  record "ranks 1/2/4 on 1 GPU" SKIP "dmlp-train does not know COLLECTIVES (no COLLECTIVES=gloo yet)"
else
  ok=1
  detail=""
  for ranks in 1 2 4; do
    if ! run_job "gloo-$ranks" cuda fp32 "$steps" "$ranks" COLLECTIVES=gloo DATA_SHARDS=4; then
      ok=0
      detail="job gloo-$ranks failed: $(last_error "$work/gloo-$ranks.stderr")"
      break
    fi
    verify "$work/gloo-$ranks" || { ok=0; detail="dmlp-verify gloo-$ranks not PASS"; break; }
  done
  if [ "$ok" -eq 1 ]; then
    for ranks in 2 4; do
      for file in metrics.jsonl state.safetensors; do
        if ! cmp -s "$work/gloo-1/$file" "$work/gloo-$ranks/$file"; then
          ok=0
          detail="$file differs, 1 vs $ranks ranks: $(cmp "$work/gloo-1/$file" "$work/gloo-$ranks/$file" 2>&1 | head -1)"
        fi
      done
    done
  fi
  [ "$ok" -eq 1 ] && detail="$steps steps, DATA_SHARDS=4: every run PASS, metrics.jsonl + state.safetensors byte-identical"
  record "ranks 1/2/4 on 1 GPU" "$([ "$ok" -eq 1 ] && echo PASS || echo FAIL)" "$detail"
fi

# ---- 5. benchmark and reference ---------------------------------------------
if timeout -k 5 "$job_timeout" "$bin/gpu_bench" --precision both >"$work/gpu_bench.out" 2>"$work/gpu_bench.err"; then
  for precision in fp32 tf32; do
    update="$(bench_value "$precision" update_ms)"
    floor="$(bench_value "$precision" floor_update_ms)"
    gemms="$(bench_value "$precision" update_gemms_only_ms)"
    ratio="$(awk -v u="$update" -v f="$floor" 'BEGIN { printf "%.2f", u / f }')"
    goal="$(awk -v r="$ratio" 'BEGIN { print (r <= 1.3) ? "PASS" : "MISS" }')"
    record "speed $precision" "$goal" \
      "update ${update} ms = ${ratio}x floor ${floor} ms ($(bench_value "$precision" sgemm_8192_tflops) TFLOP/s); GEMMs alone ${gemms} ms"
  done
  record digest INFO "image $(bench_value fp32 image_gb) GB: copy $(bench_value fp32 snapshot_copy_gb_per_s) GB/s, sha256 $(bench_value fp32 sha256_gb_per_s) GB/s, step +$(bench_value fp32 digest_overhead_pct)% with the pipelined digest"
else
  record "gpu_bench" FAIL "$(last_error "$work/gpu_bench.err")"
fi
# Digest throughput against its thread count K, one pipeline and 8 at once
# (the target runs 8 ranks per host), and the GPU step with/without it.
digest_row="$("$script_dir/digest_row.sh" "$bin" "$work/digest_sweep.out" "$job_timeout")"
record "digest threads" "${digest_row%% *}" "${digest_row#* }"

# ---- 6. the reference's samples and init: XLA:GPU, XLA:CPU and dmlp's --------
# dmlp's draws on this GPU (dmlp_draws --platform cuda) must be jax's CPU bits;
# jax's own GPU bits against its CPU's are reported (fidelity_row.sh).
fidelity_row="$("$script_dir/fidelity_row.sh" "$bin" "$work" "$job_timeout" gpu)"
record "fidelity jax" "${fidelity_row%% *}" "${fidelity_row#* }"

if [ "${GPU_CHECK_SKIP_REFERENCE:-0}" = 1 ]; then
  record reference SKIP "GPU_CHECK_SKIP_REFERENCE=1"
elif [ ! -f "$reference_dir/train.py" ]; then
  # The comparison with JAX is part of the check: without the job it failed.
  record reference FAIL "no reference job (train.py) in $reference_dir (set REFERENCE_DIR)"
else
  for precision in fp32 tf32; do
    # JAX's GPU default for float32 matmuls is TF32; "highest" is full fp32.
    jax_precision=()
    [ "$precision" = fp32 ] && jax_precision=(JAX_DEFAULT_MATMUL_PRECISION=highest)
    if env "${jax_precision[@]}" REFERENCE_PYTHON="$script_dir/python_jax_cuda.sh" \
         FEATURES=512 WIDTH=2048 LAYERS=3 CLASSES=10 BATCH=4096 MICROBATCHES=8 \
         STEPS="$reference_steps" NUM_PROCESSES=1 OUT_DIR="$work/reference-$precision" \
         LOG_DIR="$work/reference-$precision-logs" REFERENCE_DIR="$reference_dir" \
         timeout -k 10 "$job_timeout" bash "$repo/bench/reference/run_reference.sh" >"$work/reference-$precision.out" 2>&1; then
      jax="$(sed -n 's/^reference_steps_per_s=//p' "$work/reference-$precision.out")"
      # dmlp's figure is measured the same way (METRIC line times, step 1 excluded).
      dmlp="${job_steps_per_s[$precision]:-n/a}"
      speedup="$(awk -v d="$dmlp" -v j="$jax" 'BEGIN { if (d + 0 > 0 && j + 0 > 0) printf "%.2f", d / j; else print "n/a" }')"
      goal="$(awk -v s="$speedup" 'BEGIN { print (s + 0 > 1) ? "PASS" : "MISS" }')"
      record "vs JAX $precision" "$goal" "dmlp ${dmlp} steps/s, JAX ${jax} steps/s (${speedup}x)"
    else
      record "vs JAX $precision" FAIL "reference did not run: $(tail -n 2 "$work/reference-$precision.out" | tr '\n' ' ')"
    fi
  done
fi

# ---- 7. frozen and restored; last, so a run cut off loses only these -----------------------------------------
# A 1-rank job and a 2-rank gloo job on the one GPU: CUDA checkpoint, CRIU dump
# of the whole job, down longer than its heartbeat, CRIU restore, CUDA restore
# (tests/gpu/freeze_row.sh). CRIU comes with the kit (make_kit.sh: criu/).
# Without a kit, tools/criu.sh bundles one the same way (DMLP_CRIU_DIR to reuse one).
if [ -n "$kit" ]; then
  criu_dir="$kit/criu"
else
  criu_dir="${DMLP_CRIU_DIR:-$work/criu}"
  if [ ! -x "$criu_dir/criu" ] && [ -x "$repo/tools/criu.sh" ]; then
    "$repo/tools/criu.sh" --bundle "$criu_dir" >&2
  fi
fi
for freeze_job in "1 rank:1" "2 ranks gloo:2 COLLECTIVES=gloo DATA_SHARDS=2"; do
  read -r -a freeze_args <<<"${freeze_job#*:}"
  take_port
  freeze_row="$(FREEZE_ROW_PORT="$port" FREEZE_ROW_TIMEOUT="$job_timeout" \
    "$script_dir/freeze_row.sh" "$bin" "$criu_dir" "$work/freeze" "cuda-${freeze_args[0]}" \
    "${freeze_args[0]}" cuda "${freeze_args[@]:1}" 2>>"$work/freeze.log")"
  record "freeze ${freeze_job%%:*}" "${freeze_row%% *}" "${freeze_row#* }"
done

finish
