#!/usr/bin/env python3
"""divergence_bench: the cost of DIVERGENCE_CHECK (issue 16) on the CPU platform.

Runs the same dmlp-launch -> dmlp-train job with DIVERGENCE_CHECK=on and =off,
alternating which goes first in each of --rounds rounds (both under the same
outside load), and prints each setting's steps/s of the training loop (rank 0's
DMLP_PROFILE train_loop, which includes draining the digest pipeline, so a
check that held the loop back would show) as the median with its range, and
the per-round ratio on/off as the median with its range.

  bench/divergence_bench.py [--build build] [--processes 2] [--steps 200] [--rounds 5]

The default job is deliberately small (FEATURES=64 WIDTH=128 LAYERS=3 CLASSES=10
BATCH=64 MICROBATCHES=1: about a millisecond a step) so that the check's fixed
cost per step (one gather over the rendezvous) weighs as much as it ever can;
override any of them through the environment. Not a test: it asserts nothing.
"""

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONFIG = {"FEATURES": "64", "WIDTH": "128", "LAYERS": "3", "CLASSES": "10", "BATCH": "64",
          "MICROBATCHES": "1", "SEED": "42", "LEARNING_RATE": "0.001"}


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def steps_per_second(build, processes, steps, check, out_dir):
    env = dict(os.environ, **{k: os.environ.get(k, v) for k, v in CONFIG.items()},
               STEPS=str(steps), NUM_PROCESSES=str(processes), DATA_SHARDS=str(processes),
               PLATFORM="cpu", HEARTBEAT_TIMEOUT_SECONDS="120", COORDINATOR_PORT=str(free_port()),
               OUT_DIR=str(out_dir), DMLP_PROFILE="1", DIVERGENCE_CHECK=check)
    result = subprocess.run([str(build / "bin/dmlp-launch"), str(build / "bin/dmlp-train")], env=env,
                            capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if result.returncode != 0:
        sys.exit(f"divergence_bench: the job failed:\n{result.stderr}")
    line = next(l for l in result.stderr.splitlines() if "PROFILE " in l)
    return steps / json.loads(line.split("PROFILE ", 1)[1])["train_loop"]


def median(values):
    ordered = sorted(values)
    return ordered[len(ordered) // 2]


def spread(values, fmt):
    return f"{fmt.format(median(values))} (range {fmt.format(min(values))}-{fmt.format(max(values))})"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default=str(ROOT / "build"))
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    build = Path(args.build).resolve()
    figures = {"on": [], "off": []}
    ratios = []
    with tempfile.TemporaryDirectory(prefix="dmlp-divergence-bench-") as scratch:
        for round_index in range(args.rounds):
            order = ("on", "off") if round_index % 2 == 0 else ("off", "on")
            this_round = {}
            for check in order:
                out_dir = Path(scratch) / f"{round_index}-{check}"
                this_round[check] = steps_per_second(build, args.processes, args.steps, check, out_dir)
                figures[check].append(this_round[check])
            ratios.append(this_round["on"] / this_round["off"])
    print(f"divergence_bench: NUM_PROCESSES={args.processes} STEPS={args.steps} rounds={args.rounds} "
          + " ".join(f"{k}={os.environ.get(k, v)}" for k, v in CONFIG.items()))
    for check in ("on", "off"):
        print(f"  DIVERGENCE_CHECK={check:3s} steps/s {spread(figures[check], '{:.1f}')}")
    print(f"  ratio on/off (per round) {spread(ratios, '{:.3f}')}")


if __name__ == "__main__":
    main()
