#!/usr/bin/env bash
# The CUDA platform's checks, for a machine with a GPU (issue 5). One command,
# about 5-8 minutes on one H200, a table at the end:
#   1. configure + build (Release) for the local GPU's architecture;
#   2. the GPU unit tests (cuda_test): data/init bits, kernels, GEMM mapping,
#      forward/backward vs the CPU platform, Adam, the ordered fold, the backend;
#   3. a 1-rank job at the spec's sizes (FEATURES=512 WIDTH=2048 LAYERS=3
#      CLASSES=10 BATCH=4096 MICROBATCHES=8) twice per precision: byte-identical
#      receipts, dmlp-verify PASS; the same job for a few steps on PLATFORM=cpu:
#      losses within the tolerance per precision (below);
#   4. gpu_bench (update time vs the cuBLAS floor, digest throughput) and the
#      reference JAX job on the same GPU at both precisions.
#
# Usage: tests/gpu/run_gpu_checks.sh [BUILD_DIR]        (default: <repo>/build-gpu)
# Environment (all optional):
#   GPU_CHECK_STEPS=20            logged steps of each CUDA job
#   GPU_CHECK_CPU_STEPS=3         logged steps of the CPU job (compared with the first CUDA steps)
#   GPU_CHECK_REFERENCE_STEPS=10  logged steps of each reference JAX job
#   GPU_CHECK_SKIP_REFERENCE=1    skip the reference JAX jobs
#   DMLP_GPU_PYTHON=python3       the Python with jax, flax and optax
#   REFERENCE_DIR                 reference/train.py's directory (default <repo>/../shared/reference)
#   CUDACXX                       nvcc (default: on PATH, else /usr/local/cuda/bin/nvcc)
#
# Loss tolerances CPU vs CUDA (relative, per step, first GPU_CHECK_CPU_STEPS steps):
#   fp32 1e-3: both platforms compute in fp32 and differ only in summation
#              order and expf/logf ulps; the trajectories drift apart slowly.
#   tf32 3e-2: TF32 rounds GEMM inputs to 10 mantissa bits (~5e-4 relative per
#              product), against the CPU's fp32.
# Exit status: 0 when every correctness check passed (speed goals are reported,
# never fail the run), 1 otherwise.
set -uo pipefail
export LC_ALL=C

script_dir="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$script_dir/../.." && pwd)"
build="${1:-$repo/build-gpu}"
steps="${GPU_CHECK_STEPS:-20}"
cpu_steps="${GPU_CHECK_CPU_STEPS:-3}"
reference_steps="${GPU_CHECK_REFERENCE_STEPS:-10}"
work="$(mktemp -d -t dmlp-gpu-checks.XXXXXX)"
declare -A tolerance=([fp32]=1e-3 [tf32]=3e-2)

rows=()
failed=0
record() {  # record CHECK STATUS DETAIL
  rows+=("$(printf '%-24s %-5s %s' "$1" "$2" "$3")")
  [ "$2" = FAIL ] && failed=1
  echo "== $1: $2 $3" >&2
}
print_table() {
  echo
  echo "dmlp GPU checks ($(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1); logs in $work)"
  printf '%-24s %-5s %s\n' CHECK RESULT DETAIL
  printf '%s\n' "${rows[@]}"
}
finish() {
  print_table
  exit "$failed"
}
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
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

# ---- 1. build ---------------------------------------------------------------
start=$SECONDS
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

# ---- 2. GPU unit tests ------------------------------------------------------
# The two no-GPU tests skip by design where there is a GPU; every other skip is a failure.
"$bin/cuda_test" --gtest_filter='-CudaDevice.NoGpu*' >"$work/cuda_test.log" 2>&1
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
run_job() {  # run_job NAME PLATFORM PRECISION STEPS -> OUT_DIR $work/NAME, stamped log
  local name="$1"
  env STEPS="$4" SEED=42 BATCH=4096 MICROBATCHES=8 LEARNING_RATE=0.001 \
      FEATURES=512 WIDTH=2048 LAYERS=3 CLASSES=10 \
      PLATFORM="$2" MATMUL_PRECISION="$3" OUT_DIR="$work/$name" \
      COORDINATOR_PORT="$(free_port)" HEARTBEAT_TIMEOUT_SECONDS=120 \
      "$bin/dmlp-launch" --nproc 1 --grace 5 2>"$work/$name.stderr" | stamp_lines >"$work/$name.stdout"
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
      detail="job cuda-$precision-$run failed: $(tail -n 3 "$work/cuda-$precision-$run.stderr" | tr '\n' ' ')"
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
  record "cpu job" FAIL "$(tail -n 3 "$work/cpu-fp32.stderr" | tr '\n' ' ')"
fi

# ---- 4. benchmark and reference ---------------------------------------------
if "$bin/gpu_bench" --precision both >"$work/gpu_bench.out" 2>"$work/gpu_bench.err"; then
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
  record "gpu_bench" FAIL "$(tail -n 3 "$work/gpu_bench.err" | tr '\n' ' ')"
fi

if [ "${GPU_CHECK_SKIP_REFERENCE:-0}" = 1 ]; then
  record reference SKIP "GPU_CHECK_SKIP_REFERENCE=1"
else
  for precision in fp32 tf32; do
    # JAX's GPU default for float32 matmuls is TF32; "highest" is full fp32.
    jax_precision=()
    [ "$precision" = fp32 ] && jax_precision=(JAX_DEFAULT_MATMUL_PRECISION=highest)
    if env "${jax_precision[@]}" REFERENCE_PYTHON="$script_dir/python_jax_cuda.sh" \
         FEATURES=512 WIDTH=2048 LAYERS=3 CLASSES=10 BATCH=4096 MICROBATCHES=8 \
         STEPS="$reference_steps" NUM_PROCESSES=1 OUT_DIR="$work/reference-$precision" \
         LOG_DIR="$work/reference-$precision-logs" \
         bash "$repo/bench/reference/run_reference.sh" >"$work/reference-$precision.out" 2>&1; then
      jax="$(sed -n 's/^reference_steps_per_s=//p' "$work/reference-$precision.out")"
      # dmlp's figure is measured the same way (METRIC line times, step 1 excluded).
      dmlp="${job_steps_per_s[$precision]:-n/a}"
      speedup="$(awk -v d="$dmlp" -v j="$jax" 'BEGIN { if (d + 0 > 0 && j + 0 > 0) printf "%.2f", d / j; else print "n/a" }')"
      goal="$(awk -v s="$speedup" 'BEGIN { print (s + 0 > 1) ? "PASS" : "MISS" }')"
      record "vs JAX $precision" "$goal" "dmlp ${dmlp} steps/s, JAX ${jax} steps/s (${speedup}x)"
    else
      record "vs JAX $precision" SKIP "reference did not run: $(tail -n 2 "$work/reference-$precision.out" | tr '\n' ' ')"
    fi
  done
fi

finish
