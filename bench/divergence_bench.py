#!/usr/bin/env python3
"""divergence_bench: the cost of DIVERGENCE_CHECK on the CPU platform.

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
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cpu_job import ROOT, configured, run_cpu_job, spread  # noqa: E402

# Small on purpose (see above): about a millisecond a step.
CONFIG = {"FEATURES": "64", "WIDTH": "128", "LAYERS": "3", "CLASSES": "10", "BATCH": "64",
          "MICROBATCHES": "1", "SEED": "42", "LEARNING_RATE": "0.001"}


def steps_per_second(build, processes, steps, check, out_dir):
    profile = run_cpu_job(build, "divergence_bench", CONFIG, processes, steps, out_dir, DIVERGENCE_CHECK=check)
    return steps / profile["train_loop"]


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
          + " ".join(f"{k}={v}" for k, v in configured(CONFIG).items()))
    for check in ("on", "off"):
        print(f"  DIVERGENCE_CHECK={check:3s} steps/s {spread(figures[check], '{:.1f}')}")
    print(f"  ratio on/off (per round) {spread(ratios, '{:.3f}')}")


if __name__ == "__main__":
    main()
