#!/usr/bin/env bash
# The CUDA platform's checks, for a machine with a GPU. One command, a table
# at the end (tests/gpu/run_gpu_checks.py runs them, one function per row):
#   1. configure + build (Release) for the local GPU's architecture, or with
#      --kit DIR (tests/gpu/make_kit.sh) no build: the kit's programs, with
#      cuBLAS and NCCL found on the machine (the image's Python packages or a
#      toolkit folder; it prints what it found and fails clearly without);
#   2. preflight.txt (the GPU, driver, kernel, cores, memory, jax/flax/optax,
#      cuBLAS and NCCL found, criu check, the shell's CUDA checkpoint state),
#      then a plan: the rows below in this order (value per second: the
#      cheapest that would change the next plan first) with their estimated
#      seconds (tests/gpu/gpu_check_plan.py), each started only while its
#      estimate fits GPU_CHECK_BUDGET_S; the rows left out are one SKIP row
#      naming them for GPU_CHECK_ROWS of the next call:
#      unit      cuda_test without the *.NoGpu* tests (which skip where a GPU
#                is); any other skip FAILs, each skip named in preflight.txt;
#      draws     dmlp_draws --platform cuda = --platform cpu, byte for byte;
#      bytes     a small plan on PLATFORM=cpu and PLATFORM=cuda GEMM=ordered
#                (COLLECTIVES=gloo), 1 and 2 ranks: receipts, metrics, state
#                file, summary digests byte-identical, dmlp-verify --against;
#      receipts  the spec's job twice per precision: byte-identical, dmlp-verify PASS;
#      freeze1/2 a 1-rank and a 2-rank gloo job frozen (cuda_freeze + CRIU),
#                down past their heartbeat, restored: PASS byte-identical, SKIP
#                quoting a tool's or the kernel's refusal (freeze_row.sh);
#      cublas    GEMM=cublas against PLATFORM=cpu: per-step losses within the
#                tolerance per precision (below);
#      ranks     1, 2 and 4 ranks on the one GPU (COLLECTIVES=gloo DATA_SHARDS=4):
#                metrics.jsonl and state.safetensors byte-identical;
#      bench     gpu_bench: the update against the cuBLAS floor, the digest;
#      gemm      gpu_bench --ordered-gemm: the ordered SGEMM beside cuBLAS fp32/tf32;
#      digest    the digest against its hasher count K (digest_row.sh), judged
#                at the jobs' DIGEST_THREADS;
#      fidelity  dmlp's draws against jax on XLA:GPU and XLA:CPU (fidelity_row.sh);
#      reference the reference JAX job at both precisions.
#
# Usage: tests/gpu/run_gpu_checks.sh [BUILD_DIR]     (default: <repo>/build-gpu)
#        tests/gpu/run_gpu_checks.sh --kit DIR       (about 3 minutes on one H200)
# Results: the table and the logs go to $OUT when it is set (the device
# machine's folder that comes back), else to a new temporary folder, as the
# checks run, so a run cut off still leaves what it found:
#   gpu-checks-table.txt     the table so far
#   gpu-checks.log           progress, the plan and failure details
#   preflight.txt            what the machine is, and every skipped gtest
#   gpu-checks-logs.tar.gz   every job's logs and receipts (no state files)
# Environment (all optional):
#   GPU_CHECK_STEPS=20            logged steps of each CUDA job (--kit: 10)
#   GPU_CHECK_CPU_STEPS=10        logged steps of the cublas row's jobs (CPU and CUDA)
#   GPU_CHECK_REFERENCE_STEPS=10  logged steps of each reference JAX job (--kit: 6)
#   GPU_CHECK_JOB_TIMEOUT=300     seconds any one job may take (--kit: 90)
#   DIGEST_THREADS                --kit: 2 unless set (every job's hashers; the
#                                 default would pin (K+1) x 113.6 MB per rank)
#   GPU_CHECK_SKIP_REFERENCE=1    skip the reference JAX jobs
#   GPU_CHECK_ROWS=unit,draws     only these rows (keys above; default all)
#   GPU_CHECK_BUDGET_S=280        start a row only while its estimate fits
#   GPU_CHECK_PORT_BASE           coordinator ports from here up (default: free ports from python3)
#   DMLP_GPU_PYTHON=python3       the Python with jax, flax and optax
#   DMLP_GPU_LIB_DIRS             --kit: folders (a:b) searched first for cuBLAS and NCCL
#   REFERENCE_DIR                 reference/train.py's directory (default <repo>/../shared/reference;
#                                 --kit: DIR/reference); missing is a FAIL
#   CUDACXX                       nvcc (default: on PATH, else /usr/local/cuda/bin/nvcc)
#
# Loss tolerances of the cublas row, GEMM=cublas against PLATFORM=cpu
# (relative, per step, GPU_CHECK_CPU_STEPS steps; step 1 apart):
#   fp32 5e-4, step 1 5e-5: the platforms differ only in summation order (and
#        expf/logf ulps). Measured on the CPU platform at the spec's sizes, where
#        DMLP_CPU_GEMM=blis against auto is exactly such an order change: step 1
#        (the forward pass of the initial parameters alone) 4.9e-6, steps 1-10
#        at most 1.7e-4 (Adam's m/sqrt(v) turns the gradients' order
#        differences into whole update differences from step 2 on). The bounds
#        are about 3x and 10x that. With random labels the loss stays near
#        ln 10 and moves about 1e-4 per step, so the old 1e-3 over 3 steps let
#        a step's worth of error pass.
#   tf32 3e-2: TF32 rounds GEMM inputs to 10 mantissa bits (~5e-4 relative per
#        product), against the CPU's fp32; not measured (no GPU here).
# Exit status: 0 when every correctness check passed (speed goals are reported,
# never fail the run), 1 otherwise, 2 on usage errors.
#
# The rows are Python (standard library, 3.8 or newer): the device's python3
# on PATH, else a /opt/*/.venv one (where the device image keeps its Python).
script_dir="$(cd "$(dirname "$0")" && pwd)"
python="$(command -v python3 || true)"
if [ -z "$python" ]; then
  for candidate in /opt/*/.venv/bin/python3; do
    if [ -x "$candidate" ]; then python="$candidate"; break; fi
  done
fi
if [ -z "$python" ]; then
  echo "run_gpu_checks.sh: error: no python3 (on PATH or /opt/*/.venv/bin)" >&2
  exit 2
fi
exec "$python" -B "$script_dir/run_gpu_checks.py" "$@"  # -B: the kit may be read-only
