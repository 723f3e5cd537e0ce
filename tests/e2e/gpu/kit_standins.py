"""Stand-ins for the kit's programs on a machine with a GPU, for the rows'
tests without one (kit_rows_test.py): each behaves as the real program does
where everything works, unless KIT_PLANT (a comma-separated list) plants a
fault that one row exists to catch:

  fail-job          dmlp-launch fails with dmlp-train's error line
  cuda-bytes        PLATFORM=cuda writes another state and receipts than cpu
  cuda-loss         PLATFORM=cuda losses 1 % off the CPU's
  nondeterministic  every run writes other bytes
  ranks-bytes       the bytes depend on the number of ranks
  verify-fails      dmlp-verify says FAIL
  skip-on-gpu       cuda_test skips a test that is not named NoGpu*
  draws-differ      dmlp_draws --platform cuda writes other samples
  bench-fails       gpu_bench exits 1 with an error
  fidelity-differs  the jax side finds dmlp's draws differ (fidelity_jax.py's exit 4)
  freeze-works      cuda_freeze locks and checkpoints (the stand-in's default: no driver API)
  lock-times-out    cuda_freeze's lock fails (a tool's refusal, not dmlp's fault)
"""

import os
import stat
from pathlib import Path

LAUNCH = r'''#!/usr/bin/env python3
# Stand-in dmlp-launch (COLLECTIVES in its text, as the real one parses it).
import hashlib, json, os, random, sys
plant = os.environ.get("KIT_PLANT", "").split(",")
ranks = int(sys.argv[sys.argv.index("--nproc") + 1]) if "--nproc" in sys.argv else int(os.environ.get("NUM_PROCESSES", "1"))
if "fail-job" in plant:
    print("[rank 0] dmlp-train: error: PLANTED: the job failed", file=sys.stderr)
    sys.exit(1)
out, steps, platform = os.environ["OUT_DIR"], int(os.environ["STEPS"]), os.environ["PLATFORM"]
salt = ""
if platform == "cuda" and "cuda-bytes" in plant:
    salt += "cuda"
if "nondeterministic" in plant:
    salt += str(random.random())
if "ranks-bytes" in plant:
    salt += str(ranks)
# Ranks that live a while (KIT_STANDIN_RANK_SECONDS), as dmlp-train processes
# under the launcher, started before any receipt as the real launcher does:
# what the freeze row looks for before it freezes them.
ranks_alive = []
if os.environ.get("KIT_STANDIN_RANK_SECONDS"):
    import subprocess
    rank_program = os.path.join(os.path.dirname(os.path.abspath(sys.argv[0])), "dmlp-train")
    ranks_alive = [subprocess.Popen([rank_program, os.environ["KIT_STANDIN_RANK_SECONDS"]]) for _ in range(ranks)]
os.makedirs(out)
off = 1.01 if platform == "cuda" and "cuda-loss" in plant else 1
losses = [(2.3 - 0.01 * step) * off for step in range(1, steps + 1)]
digest = lambda step: hashlib.sha256(("%s %d" % (salt, step)).encode()).hexdigest()
for rank in range(ranks):
    with open(os.path.join(out, "rank-%d.jsonl" % rank), "w") as stream:
        for step, loss in enumerate(losses, start=1):
            stream.write(json.dumps({"loss": repr(loss), "params_sha256": digest(step), "rank": rank, "step": step}) + "\n")
    with open(os.path.join(out, "rank-%d.env.jsonl" % rank), "w") as stream:
        stream.write(json.dumps({"platform": platform, "pid": os.getpid()}) + "\n")
with open(os.path.join(out, "metrics.jsonl"), "w") as stream:
    for step, loss in enumerate(losses, start=1):
        stream.write(json.dumps({"loss": repr(loss), "params_sha256": digest(step), "step": step}) + "\n")
with open(os.path.join(out, "state.safetensors"), "w") as stream:
    stream.write("state " + digest(steps))
with open(os.path.join(out, "result.json"), "w") as stream:
    json.dump({"complete": True, "final_loss": repr(losses[-1]), "final_params_sha256": digest(steps),
               "final_opt_state_sha256": digest(-steps), "params_sha256": digest(0), "platform": platform}, stream)
for step in range(1, steps + 1):
    print("METRIC step=%d" % step, flush=True)
for child in ranks_alive:
    child.wait()
'''

VERIFY = r'''#!/bin/sh
# Stand-in dmlp-verify.
case ",$KIT_PLANT," in *,verify-fails,*) echo "FAIL: planted"; exit 1 ;; esac
echo PASS
'''

CUDA_TEST = r'''#!/bin/sh
# Stand-in cuda_test: records its arguments, prints what gtest prints.
echo "$*" >"$KIT_STANDIN_LOG/cuda_test.args"
echo "[==========] 12 tests from 4 test suites ran. (5 ms total)"
case ",$KIT_PLANT," in
  *,skip-on-gpu,*)
    echo "[  PASSED  ] 11 tests."
    echo "[  SKIPPED ] 1 test, listed below:"
    echo "[  SKIPPED ] CudaFreeze.WithoutADriverIsARefusal" ;;
  *) echo "nccl: header 2.28.9, library 2.27.3 (the kit's jobs need no match)"
     echo "[  PASSED  ] 12 tests." ;;
esac
exit 0
'''

DRAWS = r'''#!/bin/sh
# Stand-in dmlp_draws --platform P DIR.
platform="$2" dir="$3"
mkdir -p "$dir"
printf 'samples' >"$dir/samples.f32"
case ",$KIT_PLANT," in *,draws-differ,*) [ "$platform" = cuda ] && printf 'other' >"$dir/samples.f32" ;; esac
printf 'labels' >"$dir/labels.i32"
printf 'init' >"$dir/init.f32"
echo "jax-0.10.2-threefry/flax-0.12.5-lecun" >"$dir/definition.txt"
'''

GPU_BENCH = r'''#!/bin/sh
# Stand-in gpu_bench: the lines the rows read.
[ "$*" = --help ] && { echo "  --digest-sweep  only the digest"; echo "  --ordered-gemm"; exit 0; }
case ",$KIT_PLANT," in *,bench-fails,*) echo "gpu_bench: error: CUDA_ERROR: planted" >&2; exit 1 ;; esac
case "$*" in
  --digest-sweep)
    echo "digest_sweep_default_threads=8"
    for k in 1 2 4 8; do
      echo "digest_sweep threads=$k image_mb=113.6 pipelines=1 gb_per_s=2.0 ms_per_step=56.8 gpu_step_ms=40.00 gpu_step_with_digest_ms=40.40 ratio=1.010"
      echo "digest_sweep threads=$k image_mb=113.6 pipelines=8 gb_per_s=1.0 ms_per_step=113.6"
    done ;;
  --ordered-gemm)
    echo "ordered_gemm_fp32_peak_tflops=66.9"
    echo "ordered_gemm_total gflop=150.3 ordered_ms=30.1 ordered_gflops=4993.4 cublas_fp32_ms=4.1 cublas_tf32_ms=1.2 ratio_to_cublas_fp32=7.34 floor_ms=2.25" ;;
  *)
    for p in fp32 tf32; do
      printf '%s.update_ms=2.0\n%s.floor_update_ms=1.8\n%s.sgemm_8192_tflops=50\n%s.update_gemms_only_ms=1.9\n' $p $p $p $p
      printf '%s.image_gb=0.1136\n%s.snapshot_copy_gb_per_s=20\n%s.sha256_gb_per_s=2\n%s.digest_overhead_pct=1\n' $p $p $p $p
    done ;;
esac
'''

CUDA_FREEZE = r'''#!/bin/sh
# Stand-in cuda_freeze: the driver's checkpoint API is missing, unless planted.
case ",$KIT_PLANT," in
  *,freeze-works,*) exit 0 ;;
  *,lock-times-out,*) [ "$1" = freeze ] && { echo "cuda_freeze: error: FREEZE_FAILED: lock timed out" >&2; exit 1; }; exit 0 ;;
esac
echo "cuda_freeze: error: FREEZE_UNSUPPORTED: planted stand-in" >&2
exit 3
'''

CRIU = r'''#!/bin/sh
# Stand-in criu: its check passes (what it does after that, no row reaches here).
[ "$1" = check ] && { echo "Looks good."; exit 0; }
exit 1
'''

# fidelity_jax.py's stand-in (DMLP_GPU_PYTHON): exit 0 agrees, 4 finds a difference.
JAX_PYTHON = r'''#!/bin/sh
case ",$KIT_PLANT," in
  *,fidelity-differs,*) echo "fidelity dmlp cuda vs jax cpu: samples differ"; exit 4 ;;
esac
echo "fidelity dmlp cuda vs jax cpu: bit-identical"
'''

PROGRAMS = {"dmlp-launch": LAUNCH, "dmlp-verify": VERIFY, "cuda_test": CUDA_TEST, "dmlp_draws": DRAWS,
            "gpu_bench": GPU_BENCH, "cuda_freeze": CUDA_FREEZE}


def executable(path, text):
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def write_standin_kit(kit):
    """kit/bin (the programs above), kit/criu (criu and dmlp's flags), kit/jax-python;
    also a dmlp-train (the rows look for COLLECTIVES in it) and KIT_STANDIN_LOG's folder."""
    kit = Path(kit)
    (kit / "bin").mkdir(parents=True, exist_ok=True)
    for name, text in PROGRAMS.items():
        executable(kit / "bin" / name, text)
    # A rank that sleeps as a process named dmlp-train (not exec: sleep would rename it);
    # the rows look for COLLECTIVES in the real one's text.
    executable(kit / "bin" / "dmlp-train", "#!/bin/sh\n# knows COLLECTIVES and GEMM\nsleep \"${1:-0}\"\n")
    (kit / "criu").mkdir(exist_ok=True)
    executable(kit / "criu" / "criu", CRIU)
    (kit / "criu" / "dmlp-dump-flags").write_text("--shell-job\n")
    (kit / "criu" / "dmlp-restore-flags").write_text("--shell-job\n")
    executable(kit / "jax-python", JAX_PYTHON)
    (kit / "standin-log").mkdir(exist_ok=True)
    os.environ["KIT_STANDIN_LOG"] = str(kit / "standin-log")
    return kit
