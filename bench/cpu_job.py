"""cpu_job: what the Python benchmarks share — one PLATFORM=cpu job through
dmlp-launch, timed by rank 0's DMLP_PROFILE line, and the figures' summaries.

Imported by train_bench.py, divergence_bench.py, audit_bench.py, builds_bench.py and
freeze_reference.py (run them from anywhere: each puts bench/ on sys.path
through its own location).
"""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The CPU job that train_bench.py runs and compares with the reference.
TRAIN_BENCH_CONFIG = {"FEATURES": "512", "WIDTH": "1024", "LAYERS": "3", "CLASSES": "10", "BATCH": "512",
                      "MICROBATCHES": "8", "SEED": "42", "LEARNING_RATE": "0.001"}

sys.path.insert(0, str(ROOT / "tests" / "e2e"))
from e2e_support import free_port  # noqa: E402


def configured(defaults):
    """`defaults`, each overridden by the environment's value of that name."""
    return {k: os.environ.get(k, v) for k, v in defaults.items()}


def run_cpu_job(build, who, defaults, processes, steps, out_dir, **extra):
    """Runs the job (DATA_SHARDS = NUM_PROCESSES) and returns rank 0's profile
    (train_loop, startup, phases, updates; seconds) plus its wall time; exits
    with the job's stderr, naming `who`, when it fails."""
    env = dict(os.environ, **configured(defaults), STEPS=str(steps), NUM_PROCESSES=str(processes),
               DATA_SHARDS=str(processes), PLATFORM="cpu", HEARTBEAT_TIMEOUT_SECONDS="120",
               COORDINATOR_PORT=str(free_port()), OUT_DIR=str(out_dir), DMLP_PROFILE="1",
               **{k: str(v) for k, v in extra.items()})
    started = time.monotonic()
    result = subprocess.run([str(build / "bin/dmlp-launch"), str(build / "bin/dmlp-train")], env=env,
                            capture_output=True, text=True, stdin=subprocess.DEVNULL)
    wall = time.monotonic() - started
    if result.returncode != 0:
        sys.exit(f"{who}: the job failed:\n{result.stderr}")
    line = next(l for l in result.stderr.splitlines() if "PROFILE " in l)
    profile = json.loads(line.split("PROFILE ", 1)[1])
    profile["wall"] = wall
    return profile


def median(values):
    ordered = sorted(values)
    return ordered[len(ordered) // 2]


def spread(values, fmt="{:.3f}"):
    """'median (range min-max)'."""
    return f"{fmt.format(median(values))} (range {fmt.format(min(values))}-{fmt.format(max(values))})"
