#!/usr/bin/env python3
"""builds_bench: two builds of dmlp on the same job, in alternating rounds.

    builds_bench.py BEFORE_BUILD AFTER_BUILD [--rounds 4] [--steps 20] [--processes 2]

Runs train_bench.py's configuration (any of its variables, and
DMLP_CPU_TRANSPORT and the like, from the environment) with each build's
dmlp-launch and dmlp-train in turn, BEFORE first in even rounds and AFTER
first in odd ones, so a machine whose load drifts weighs on both alike; prints
each run's rank 0 profile and, per build, the train loop and each phase per
update as median (range). For a change whose cost is too small for
train_bench.py's steps/s on a contended machine (docs/performance.md).
"""

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cpu_job import TRAIN_BENCH_CONFIG, run_cpu_job, spread  # noqa: E402

PHASES = ("data", "compute", "collectives", "optimizer")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path, help="build directory (with bin/dmlp-launch, bin/dmlp-train)")
    parser.add_argument("after", type=Path, help="build directory")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--processes", type=int, default=2)
    args = parser.parse_args()
    builds = {"before": args.before, "after": args.after}
    profiles = {name: [] for name in builds}
    with tempfile.TemporaryDirectory() as scratch:
        for round_index in range(args.rounds):
            order = list(builds.items()) if round_index % 2 == 0 else list(reversed(builds.items()))
            for name, build in order:
                profile = run_cpu_job(build, f"builds_bench ({name})", TRAIN_BENCH_CONFIG, args.processes, args.steps,
                                      Path(scratch) / f"{name}-{round_index}")
                profiles[name].append(profile)
                print(f"round {round_index} {name}: {profile}", flush=True)
    for name, runs in profiles.items():
        per_update = lambda key: [run[key] / run["updates"] * 1e3 for run in runs]  # noqa: E731
        print(f"{name} ({builds[name]}): ms per update {spread(per_update('train_loop'), '{:.2f}')}")
        for phase in PHASES:
            print(f"  {phase:12} {spread(per_update(phase), '{:.2f}')}")
        both = [(run["collectives"] + run["optimizer"]) / run["updates"] * 1e3 for run in runs]
        print(f"  collectives + optimizer {spread(both, '{:.2f}')}")


if __name__ == "__main__":
    main()
