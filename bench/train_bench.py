#!/usr/bin/env python3
"""train_bench: dmlp-train (PLATFORM=cpu) and the reference JAX job side by side
on this machine, in one run, on the same configuration.

Prints, for each NUM_PROCESSES: steps/s of both and their ratio (start-up
excluded and shown apart), dmlp's split of a step (data, compute = forward and
backward with GEMMs, collectives, optimizer, digest thread) and its floor: the
update's GEMM FLOPs over the GEMM rate measured in this same run (bench/cpu_floor).
Then the roof: the machine's float32 FMA peak (bench/cpu_peak) against the GEMM
rate that 2x the reference's steps/s would need.

Outside load on a shared machine moves every figure by 10-30 %, so each
NUM_PROCESSES runs --rounds rounds, dmlp and the reference back to back in
alternating order; the ratio is taken per round (both under the same load) and
the median round is reported with the range. The GEMM floor and the FMA peak
are measured in every round as well, and their medians reported.

  bench/train_bench.py [--build build] [--processes 1,2] [--steps 20] [--rounds 3] [--no-reference]

Configuration defaults to TRAIN_BENCH_CONFIG: FEATURES=512 WIDTH=1024 LAYERS=3 CLASSES=10
BATCH=512 MICROBATCHES=8; override any of them through the environment.
The reference needs JAX (bench/reference/setup_venv.sh); without it, or with
--no-reference, only dmlp's figures are printed. Not a test: it asserts nothing.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cpu_job import TRAIN_BENCH_CONFIG, ROOT, configured, median, run_cpu_job, spread  # noqa: E402


def config():
    return configured(TRAIN_BENCH_CONFIG)


def run_dmlp(build, processes, steps, scratch):
    return run_cpu_job(build, "train_bench", TRAIN_BENCH_CONFIG, processes, steps, scratch / f"dmlp-{processes}")


def run_reference(processes, steps, scratch):
    env = dict(os.environ, **config(), STEPS=str(steps), NUM_PROCESSES=str(processes),
               OUT_DIR=str(scratch / f"ref-{processes}"), LOG_DIR=str(scratch / f"ref-log-{processes}"))
    result = subprocess.run([str(ROOT / "bench/reference/run_reference.sh")], env=env,
                            capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if result.returncode != 0:
        print(f"train_bench: reference not run ({result.stderr.strip().splitlines()[-1:]})")
        return None
    figures = dict(re.findall(r"reference_(\w+)=([0-9.eE+-]+)", result.stdout))
    return {k: float(v) for k, v in figures.items()}


def floor(build, processes):
    cfg = config()
    samples = int(cfg["BATCH"]) // processes
    threads = int(os.environ.get("DMLP_CPU_THREADS", max(1, (os.cpu_count() or 1) // processes)))
    out = subprocess.run([str(build / "bin/cpu_floor"), cfg["FEATURES"], cfg["WIDTH"], cfg["LAYERS"],
                          cfg["CLASSES"], str(samples), str(threads)],
                         capture_output=True, text=True, check=True).stdout
    return {k: float(v) for k, v in re.findall(r"(\w+)=([0-9.]+)", out)}


def peak(build):
    out = subprocess.run([str(build / "bin/cpu_peak"), str(os.cpu_count() or 1)],
                         capture_output=True, text=True, check=True).stdout
    return float(re.search(r"fma_peak_gflops=([0-9.]+)", out).group(1))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default=str(ROOT / "build"))
    parser.add_argument("--processes", default="1,2")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-reference", action="store_true")
    args = parser.parse_args()
    build = Path(args.build).resolve()
    scratch = Path(tempfile.mkdtemp(prefix="dmlp-train-bench-"))
    cfg = config()
    print("train_bench: " + " ".join(f"{k}={v}" for k, v in cfg.items()) + f" STEPS={args.steps}")
    print(f"train_bench: load average before: {os.getloadavg()[0]:.2f} (other work skews every figure)")
    try:
        for processes in [int(p) for p in args.processes.split(",")]:
            dmlp_rates, ref_rates, ratios, profiles, startups = [], [], [], [], []
            floors, roofs = [], []  # measured every round too: the machine's speed drifts
            for round_index in range(args.rounds):
                order = ["dmlp", "ref"] if round_index % 2 == 0 else ["ref", "dmlp"]
                ref = None
                for which in order:
                    run_dir = scratch / f"round-{round_index}"
                    run_dir.mkdir(exist_ok=True)
                    if which == "dmlp":
                        dmlp = run_dmlp(build, processes, args.steps, run_dir)
                    elif not args.no_reference:
                        ref = run_reference(processes, args.steps, run_dir)
                shutil.rmtree(scratch / f"round-{round_index}", ignore_errors=True)
                profiles.append(dmlp)
                floors.append(floor(build, processes))
                if not args.no_reference:  # the roof is only compared with the reference
                    roofs.append(peak(build))
                dmlp_rates.append(args.steps / dmlp["train_loop"])
                if ref:
                    ref_rates.append(ref["steps_per_s"])
                    startups.append(ref["startup_s"])
                    ratios.append(dmlp_rates[-1] / ref["steps_per_s"])
            # The split and floor of the median dmlp round.
            dmlp = sorted(profiles, key=lambda p: p["train_loop"])[len(profiles) // 2]
            updates = dmlp["updates"]
            gemm = {key: median([f[key] for f in floors]) for key in floors[0]}
            per_update = dmlp["train_loop"] / updates
            print(f"\nNUM_PROCESSES={processes}  ({args.rounds} rounds; median, range)")
            print(f"  dmlp      {spread(dmlp_rates)} steps/s   start-up {dmlp['startup']:.2f} s")
            if ratios:
                print(f"  reference {spread(ref_rates)} steps/s   start-up {median(startups):.2f} s")
                print(f"  ratio     {spread(ratios, '{:.2f}')}x  (dmlp / reference, per round)")
            print(f"  per update {per_update * 1e3:8.1f} ms; rank 0's split (ms per update, median round):")
            phases = ("data", "compute", "collectives", "optimizer")
            for phase in phases:
                print(f"    {phase:12s}{dmlp.get(phase, 0) / updates * 1e3:8.1f}")
            other = per_update - sum(dmlp.get(phase, 0) for phase in phases) / updates
            print(f"    {'other':12s}{other * 1e3:8.1f}  (snapshot copy for the digest, receipts, waits)")
            hashed_mb = dmlp.get("image_bytes", 0) / 1e6
            cpu = dmlp.get("digest_thread_cpu", 0) / args.steps
            print(f"    {'digest*':12s}{dmlp['digest_thread'] / args.steps * 1e3:8.1f}  per step, "
                  "on its own thread (overlaps the next step); of it "
                  f"{cpu * 1e3:.1f} ms on a CPU" + (f" ({hashed_mb / 1e3 / cpu:.2f} GB/s)" if cpu and hashed_mb else "")
                  + ", the rest waiting for one")
            print(f"  floor      {gemm['floor_update_s'] * 1e3:8.1f} ms per update = "
                  f"{gemm['gemm_flops_per_update'] / 1e9:.2f} GFLOP at {gemm['gemm_gflops']:.1f} GFLOP/s "
                  f"(medians of the rounds); dmlp is {per_update / gemm['floor_update_s']:.2f}x the floor")
            print(f"  alone      {gemm['mlp_update_s'] * 1e3:8.1f} ms per update: the same rank's forward/backward "
                  "with nothing else running (GEMMs + element-wise passes)")
            if ratios:
                # Every rank's GEMMs together, per step, at twice the reference's median speed.
                step_flops = gemm["gemm_flops_per_update"] * processes * int(cfg["MICROBATCHES"])
                needed = 2 * median(ref_rates) * step_flops / 1e9
                roof = median(roofs)
                print(f"  roof       2x the reference needs {needed:.0f} GFLOP/s of GEMM alone; "
                      f"this machine's FMA peak ({os.cpu_count()} CPUs) is {roof:.0f} GFLOP/s "
                      f"({needed / roof:.0%} of it)")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
