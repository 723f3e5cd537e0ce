#!/usr/bin/env bash
# The CUDA platform's checks, for a machine with a GPU. One command, a table
# at the end (tests/gpu/run_gpu_checks.py runs them, one function per row):
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
