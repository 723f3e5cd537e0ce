"""dmlp's CUDA platform on the GPU simulator: `tools/gpu-sim.sh build`'s
programs run PLATFORM=cuda GEMM=ordered COLLECTIVES=gloo jobs at tiny odd sizes,
each rank on a simulated GPU of its own (`tools/gpu-sim.sh run --ranks`), and
their receipts are held to the CPU platform's (the ctest build's programs) bit
for bit.

  gpu_sim_jobs.py run_ranks         `tools/gpu-sim.sh run --ranks`: a working
                                    directory a rank, none left behind
  gpu_sim_jobs.py job_1_rank        one rank: dmlp-verify PASS, and identical
  gpu_sim_jobs.py job_2_ranks       to the CPU run of the same plan (--against),
                                    and every step replayed on the CPU (--replay=all)
  gpu_sim_jobs.py resume_cpu_to_gpu a CPU run's checkpoint resumed on the
  gpu_sim_jobs.py resume_gpu_to_cpu simulated GPU, and the other way round:
                                    the uninterrupted run's receipts and state
  gpu_sim_jobs.py planted_bias_relu dmlp-train relinked with an ordered SGEMM whose
                                    bias/ReLU epilogue skips its last tile of columns: the
                                    comparison with the CPU must fail, naming
                                    the first divergent step
  gpu_sim_jobs.py cuda_test         tests/unit's Cuda* cases on the simulator,
                                    but those listed in CUDA_TEST_EXCLUDED

Exit 77 (SKIP) where the simulator cannot be built and CI is unset; in CI a
failure. Environment: DMLP_SOURCE_DIR (the repository), DMLP_BIN_DIR (the
ctest build's bin: the CPU platform's programs), DMLP_GPU_SIM_CACHE (passed on).
"""

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from e2e_support import free_port, job_env  # noqa: E402
from gpu_sim_e2e import GPU_SIM, SOURCE, expect, fail, gpu_sim, require_build_tools  # noqa: E402

CPU_BIN = Path(os.environ.get("DMLP_BIN_DIR", SOURCE / "build" / "bin")).resolve()

# Odd sizes, so that no kernel's tile fits a dimension exactly; a few steps.
PLAN = {"FEATURES": 37, "WIDTH": 70, "CLASSES": 10, "LAYERS": 2, "BATCH": 8, "MICROBATCHES": 1,
        "STEPS": 3, "SEED": 7, "LEARNING_RATE": "0.001", "DATA_SHARDS": 2,
        # The simulator is slow; the launcher, not a heartbeat, ends a stuck job here.
        "HEARTBEAT_TIMEOUT_SECONDS": 600}
PLATFORMS = {"cpu": {"PLATFORM": "cpu"},
             "cuda": {"PLATFORM": "cuda", "GEMM": "ordered", "COLLECTIVES": "gloo"}}
# What a job must not inherit from the shell that runs the tests.
INHERITED_NOT = (*PLAN, "PLATFORM", "GEMM", "COLLECTIVES", "NUM_PROCESSES", "PROCESS_ID",
                 "LOCAL_RANK", "OUT_DIR", "RESUME", "CHECKPOINT_EVERY", "DMLP_TEST_KILL_AT",
                 "COORDINATOR_PORT", "COORDINATOR_ADDRESS", "MASTER_PORT", "MASTER_ADDR",
                 "CUDA_VISIBLE_DEVICES", "DMLP_JOB_ID")
JOB_TIMEOUT = 900


def simulator_bin():
    """The folder of `tools/gpu-sim.sh build`'s programs (built or brought up
    to date by this call; the ctest fixture has done the long part)."""
    result = gpu_sim("build", timeout=3000)
    expect(result, 0, "tools/gpu-sim.sh build")
    return Path(result.stdout.strip().splitlines()[-1])


def launch(platform, out_dir, processes, sim_bin=None, train=None, **overrides):
    """One job through dmlp-launch; on `cuda` every rank on a simulated GPU of
    its own. `train` replaces the dmlp-train beside the launcher."""
    env = job_env({**PLAN, **PLATFORMS[platform], "OUT_DIR": out_dir, "NUM_PROCESSES": processes,
                   "COORDINATOR_PORT": free_port(), **overrides},
                  drop=INHERITED_NOT, drop_prefixes=("DMLP_CPU_", "NCCL_"))
    if platform == "cpu":
        args = [CPU_BIN / "dmlp-launch", "--grace", "5", "--", train or CPU_BIN / "dmlp-train"]
    else:
        args = [GPU_SIM, "run", "--ranks", "--", sim_bin / "dmlp-launch", "--grace", "5",
                *(["--", train] if train else [])]
    return subprocess.run([str(a) for a in args], env=env, capture_output=True, text=True,
                          timeout=JOB_TIMEOUT, stdin=subprocess.DEVNULL)


def expect_job(result, what):
    if result.returncode != 0:
        fail(f"{what}: exit {result.returncode}\nstderr:\n{result.stderr[-6000:]}")


def verify(run_dir, *extra):
    return subprocess.run([str(CPU_BIN / "dmlp-verify"), *extra, str(run_dir)],
                          capture_output=True, text=True, timeout=300)


def expect_pass(run_dir):
    result = verify(run_dir)
    expect(result, 0, f"dmlp-verify {run_dir}")
    if result.stdout.strip().splitlines()[-1] != "PASS":
        fail(f"dmlp-verify {run_dir} did not end with PASS:\n{result.stdout}")


def against_line(result):
    """dmlp-verify's verdict on the comparison: "dmlp-verify: against GOLDEN: ..."."""
    return next((text for text in result.stdout.splitlines() if text.startswith("dmlp-verify: against ")),
                "")


def expect_identical(run_dir, golden, steps=PLAN["STEPS"]):
    """dmlp-verify --against: the two runs must match, and do, step for step."""
    result = verify(run_dir, "--against", str(golden), "--require-comparable")
    line = against_line(result)
    print(line)
    expect(result, 0, f"dmlp-verify --against {golden} --require-comparable {run_dir}")
    if f"must match; identical ({steps} steps)" not in line:
        fail(f"dmlp-verify does not say the runs are identical:\n{result.stdout}")


def expect_platform(run_dir, platform):
    """The run really ran where the test meant it to (result.json's plan)."""
    text = (Path(run_dir) / "result.json").read_text()
    if f'"platform": "{platform}"' not in text and f'"PLATFORM": "{platform}"' not in text:
        fail(f"{run_dir}/result.json does not record platform {platform}")


def expect_same_bytes(left, right):
    for name in ("metrics.jsonl", "state.safetensors"):
        if (Path(left) / name).read_bytes() != (Path(right) / name).read_bytes():
            fail(f"{name} differs between {left} and {right}")


def job_against_cpu(processes):
    require_build_tools()
    sim_bin = simulator_bin()
    with tempfile.TemporaryDirectory(prefix="dmlp-gpu-sim-job-") as scratch:
        cpu_run, cuda_run = Path(scratch) / "cpu", Path(scratch) / "cuda"
        expect_job(launch("cpu", cpu_run, processes), "the CPU job")
        result = launch("cuda", cuda_run, processes, sim_bin)
        expect_job(result, f"the CUDA job on {processes} simulated GPU(s)")
        expect_platform(cuda_run, "cuda")
        expect_pass(cuda_run)
        expect_identical(cuda_run, cpu_run)
        expect_same_bytes(cuda_run, cpu_run)
        expect_replayed_on_cpu(cuda_run)
    print("PASS")


def expect_replayed_on_cpu(run_dir):
    """dmlp-verify --replay=all recomputes the GPU's run on this CPU (the main
    build's dmlp-train) and finds every receipt genuine."""
    result = verify(run_dir, "--replay=all")
    expect(result, 0, f"dmlp-verify --replay=all {run_dir}")
    lines = result.stdout.strip().splitlines()
    if lines[-1] != "PASS" or "replay" not in result.stdout:
        fail(f"dmlp-verify --replay=all did not audit the GPU's run on the CPU:\n{result.stdout}")
    print(next((line for line in lines if "replay" in line), lines[-1]))


def case_job_1_rank():
    job_against_cpu(1)


def case_job_2_ranks():
    job_against_cpu(2)


# A checkpoint every 2 steps; the first job is killed (dmlp-train's
# DMLP_TEST_KILL_AT) right after its receipt of step 2, the second resumes.
RESUMABLE = {"STEPS": 4, "CHECKPOINT_EVERY": 2}
KILLED_AFTER = 2


def resume_across(first, second):
    require_build_tools()
    sim_bin = simulator_bin()
    with tempfile.TemporaryDirectory(prefix="dmlp-gpu-sim-resume-") as scratch:
        whole, resumed = Path(scratch) / "whole", Path(scratch) / "resumed"
        expect_job(launch("cpu", whole, 1, **RESUMABLE), "the uninterrupted CPU job")
        result = launch(first, resumed, 1, sim_bin, **RESUMABLE, DMLP_TEST_KILL_AT=KILLED_AFTER)
        if result.returncode == 0:
            fail(f"the {first} job was not killed after step {KILLED_AFTER}")
        expect(verify(resumed), 3, f"dmlp-verify of the killed {first} job (incomplete)")
        result = launch(second, resumed, 1, sim_bin, **RESUMABLE, RESUME=1)
        expect_job(result, f"the {second} job resuming the {first} job's checkpoint")
        if f"resuming after step {KILLED_AFTER}" not in result.stderr:
            fail(f"the {second} job did not resume after step {KILLED_AFTER}:\n{result.stderr[-4000:]}")
        expect_pass(resumed)
        expect_identical(resumed, whole, RESUMABLE["STEPS"])
        expect_same_bytes(resumed, whole)
    print(f"PASS: killed on {first} after step {KILLED_AFTER}, resumed on {second}, "
          "identical to the uninterrupted run")


def case_resume_cpu_to_gpu():
    resume_across("cpu", "cuda")


def case_resume_gpu_to_cpu():
    resume_across("cuda", "cpu")


# The planted bug: the ordered SGEMM's bias/ReLU epilogue (with GEMM=ordered
# the forward's bias and ReLU are applied there, as on the CPU) leaves the last
# column tile of every row (here columns 64-69 of the hidden layers) as the
# chain left it.
PLANTED_KERNEL = "trainer/cuda/ordered_sgemm.cu"
BIAS_RELU_EPILOGUE = ("    case GemmEpilogue::Kind::kAddBiasRelu:\n"
                      "      value = FAdd(value, g.epilogue.bias[col]);")
BIAS_RELU_EPILOGUE_PLANTED = BIAS_RELU_EPILOGUE.replace(
    "\n", "\n      if (col >= (g.n - 1) / kOrderedSgemmTileN * kOrderedSgemmTileN) break;\n", 1)


def compile_command_of(build_dir, source):
    for entry in json.loads((build_dir / "compile_commands.json").read_text()):
        if Path(entry["file"]) == source:
            return entry
    fail(f"{build_dir}/compile_commands.json has no entry for {source}")


def planted_train(sim_bin, scratch):
    """dmlp-train of the simulator build with ordered_sgemm.cu replaced by the
    planted copy: compiled with the build's own command, swapped into a copy of
    the CUDA platform's library, and linked with the build's own link line.
    Everything else is the build's, so the comparison fails for the kernel alone."""
    build_dir = sim_bin.parent
    text = (SOURCE / PLANTED_KERNEL).read_text()
    if text.count(BIAS_RELU_EPILOGUE) != 1:
        fail(f"{PLANTED_KERNEL} has not exactly one bias/ReLU epilogue to plant the bug in")
    planted_source = scratch / "ordered_sgemm.cu"
    planted_source.write_text(text.replace(BIAS_RELU_EPILOGUE, BIAS_RELU_EPILOGUE_PLANTED))
    entry = compile_command_of(build_dir, SOURCE / PLANTED_KERNEL)
    planted_object = scratch / "ordered_sgemm.cu.o"  # the library member's name
    words = shlex.split(entry["command"])
    words[words.index("-o") + 1] = str(planted_object)
    words[words.index("-c") + 1] = str(planted_source)
    # The planted copy sits outside the tree: its includes still come from it.
    words.insert(1, f"-I{SOURCE}")
    result = subprocess.run(words, cwd=entry["directory"], capture_output=True, text=True, timeout=600)
    expect(result, 0, "compiling the planted ordered_sgemm.cu")
    library = scratch / "libdmlp_trainer_cuda.a"
    shutil.copy(build_dir / "trainer" / "cuda" / "libdmlp_trainer_cuda.a", library)
    expect(subprocess.run(["ar", "r", str(library), str(planted_object)], capture_output=True, text=True),
           0, "ar r libdmlp_trainer_cuda.a ordered_sgemm.cu.o")
    train = scratch / "dmlp-train"
    link_line = (build_dir / "trainer" / "CMakeFiles" / "dmlp-train.dir" / "link.txt").read_text()
    words = shlex.split(link_line.strip().splitlines()[-1])
    words[words.index("-o") + 1] = str(train)
    words = [str(library) if word == "cuda/libdmlp_trainer_cuda.a" else word for word in words]
    if str(library) not in words:
        fail(f"dmlp-train's link line does not name cuda/libdmlp_trainer_cuda.a: {link_line}")
    result = subprocess.run(words, cwd=build_dir / "trainer", capture_output=True, text=True, timeout=600)
    expect(result, 0, "linking dmlp-train with the planted kernel")
    return train


def case_planted_bias_relu():
    require_build_tools()
    sim_bin = simulator_bin()
    with tempfile.TemporaryDirectory(prefix="dmlp-gpu-sim-planted-") as scratch:
        scratch = Path(scratch)
        train = planted_train(sim_bin, scratch)
        cpu_run, cuda_run = scratch / "cpu", scratch / "cuda"
        expect_job(launch("cpu", cpu_run, 1), "the CPU job")
        expect_job(launch("cuda", cuda_run, 1, sim_bin, train=train), "the planted CUDA job")
        expect_pass(cuda_run)  # consistent in itself: only the comparison can catch it
        result = verify(cuda_run, "--against", str(cpu_run), "--require-comparable")
        line = against_line(result)
        print(line)
        match = re.search(r"must match; diverged at step (\d+)", line)
        if result.returncode == 0 or not match:
            fail(f"the comparison with the CPU passed a bias/ReLU kernel that skips its last tile "
                 f"(exit {result.returncode}):\n{result.stdout}")
    print(f"PASS: the planted kernel diverges from the CPU at step {match.group(1)}")


# A stand-in rank: records where it runs (its working directory and TMPDIR)
# and whether the simulator's configuration is there; with KILL_PARENT_OF
# naming its PROCESS_ID it SIGKILLs the `tools/gpu-sim.sh run` that started it,
# which then cannot remove its own working directory.
RANK_RECORDER = """#!/bin/bash
[[ -f gpgpusim.config ]] && config=yes || config=no
echo "$PWD $TMPDIR $config" >"$RECORD_DIR/rank-$PROCESS_ID"
if [[ "${KILL_PARENT_OF:-}" == "$PROCESS_ID" ]]; then kill -KILL "$PPID"; fi
"""


def run_recorded_ranks(scratch, processes, **overrides):
    recorder, records, tmp = scratch / "rank.sh", scratch / "records", scratch / "tmp"
    recorder.write_text(RANK_RECORDER)
    recorder.chmod(0o755)
    records.mkdir()
    tmp.mkdir()
    env = job_env({"NUM_PROCESSES": processes, "RECORD_DIR": records, "TMPDIR": tmp, **overrides},
                  drop=INHERITED_NOT)
    result = subprocess.run([str(GPU_SIM), "run", "--ranks", "--", str(CPU_BIN / "dmlp-launch"),
                             "--grace", "5", "--", str(recorder)],
                            env=env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    lines = [(records / f"rank-{rank}").read_text().split() for rank in range(processes)
             if (records / f"rank-{rank}").exists()]
    return result, lines, tmp


def case_run_ranks():
    """`run --ranks`: every rank in a working directory of its own holding the
    simulator's configuration, all removed when the launcher ends, even that
    of a rank whose `run` was killed before it could remove it."""
    require_build_tools()
    for args in (["--ranks", "--workdir", "/tmp", "--", "dmlp-launch"], ["--ranks", "--"]):
        result = gpu_sim("run", *args)
        expect(result, 2, f"tools/gpu-sim.sh run {' '.join(args)}")
    with tempfile.TemporaryDirectory(prefix="dmlp-gpu-sim-ranks-") as scratch:
        result, lines, tmp = run_recorded_ranks(Path(scratch), 3)
        expect(result, 0, "tools/gpu-sim.sh run --ranks -- dmlp-launch -- rank.sh")
        if len(lines) != 3 or len({line[0] for line in lines}) != 3:
            fail(f"3 ranks did not run in 3 working directories of their own: {lines}")
        if any(line[2] != "yes" for line in lines):
            fail(f"a rank's working directory lacks gpgpusim.config: {lines}")
        if any(Path(line[0]).exists() for line in lines) or any(tmp.iterdir()):
            fail(f"working directories left behind under {tmp}: {list(tmp.iterdir())}")
    with tempfile.TemporaryDirectory(prefix="dmlp-gpu-sim-ranks-") as scratch:
        result, lines, tmp = run_recorded_ranks(Path(scratch), 2, KILL_PARENT_OF=1)
        expect(result, 137, "run --ranks with rank 1's `run` killed")
        if any(tmp.iterdir()):
            fail(f"the killed rank's working directory was left behind: {list(tmp.rglob('*'))[:5]}")
    print("PASS: one working directory a rank, none left behind")


CASES = {"run_ranks": case_run_ranks, "job_1_rank": case_job_1_rank, "job_2_ranks": case_job_2_ranks,
         "resume_cpu_to_gpu": case_resume_cpu_to_gpu, "resume_gpu_to_cpu": case_resume_gpu_to_cpu,
         "planted_bias_relu": case_planted_bias_relu}

if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in CASES:
        print(f"usage: gpu_sim_jobs.py {{{'|'.join(CASES)}}}", file=sys.stderr)
        sys.exit(2)
    CASES[sys.argv[1]]()
