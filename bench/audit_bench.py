#!/usr/bin/env python3
"""audit_bench: what the shard audit (AUDIT_EVERY, trainer/checks/shard_audit.h) costs.

Measured: the same PLATFORM=cpu job (bench/train_bench.py's
configuration) with AUDIT_EVERY=0 (off), the default, 10 and 1,
--rounds rounds in rotating order; each round's training-loop time (rank 0's
PROFILE line) is divided by that round's AUDIT_EVERY=0 time, so the ratio is
taken under the same outside load, and the median ratio is printed with its
range. A short job may hold no audited update at the default; the cost per
audit measured at AUDIT_EVERY=1 then gives the default's by proportion.

Analytic: per audited update the step loop waits for one more shard (forward
and backward) on the auditor and, on CUDA, the copy of one padded partial
(4 (P + 1) bytes) to the host on each of the two ranks, while the others wait
at the verdict's gather; the SHA-256 of the copies runs on a thread of its
own, and the loop waits for it only where it has not finished by the verdict,
AuditVerdictLag = min(AUDIT_EVERY, 64) updates later. An update is
shards_per_rank shards. For spec.json's job that is
  cost = (t_shard + t_copy + t_gather + max(0, t_hash - lag * t_update))
         / (AUDIT_EVERY * t_update),   t_update = shards_per_rank * t_shard,
an upper bound: t_shard is taken at the GPU's peak float32 rate (--gpu-tflops,
the L4's 30.3 by default) and the update as nothing but its shards' GEMMs (no
collectives, no Adam, no snapshot), t_hash at the SHA-256 rate measured here
with Python's hashlib (OpenSSL, the same code as common/sha256.h), the copy
at --pcie-gbs and the gather's round trip at --gather-ms.

  bench/audit_bench.py [--build build] [--processes 2] [--steps 10] [--rounds 3]
                       [--spec spec.json] [--gpu-tflops 30.3] [--pcie-gbs 25] [--gather-ms 0.5]

Not a test: it asserts nothing.
"""

import argparse
import hashlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cpu_job import TRAIN_BENCH_CONFIG, ROOT, median, run_cpu_job  # noqa: E402


def default_audit_every():
    text = (ROOT / "trainer/plan.h").read_text()
    marker = "kDefaultAuditEvery = "
    return int(text[text.index(marker) + len(marker):].split(";")[0])


def train_loop_seconds(build, processes, steps, audit_every, out_dir):
    profile = run_cpu_job(build, "audit_bench", TRAIN_BENCH_CONFIG, processes, steps, out_dir,
                          AUDIT_EVERY=audit_every)
    return profile["train_loop"]


def parameter_count(env):
    features, width, layers, classes = (int(env[k]) for k in ("FEATURES", "WIDTH", "LAYERS", "CLASSES"))
    return (features * width + width) + (layers - 1) * (width * width + width) + (width * classes + classes)


def sha256_rate():
    data = os.urandom(64 << 20)
    started = time.perf_counter()
    for _ in range(3):
        hashlib.sha256(data).digest()
    return 3 * len(data) / (time.perf_counter() - started)


def verdict_lag(every):
    """trainer/checks/shard_audit.cc AuditVerdictLag."""
    return min(every, 64)


def analytic(spec_path, default, gpu_tflops, pcie_gbs, gather_ms):
    env = json.loads(Path(spec_path).read_text())["image"]["env"]
    params = parameter_count(env)
    processes, shards = int(env["NUM_PROCESSES"]), int(env["DATA_SHARDS"])
    world = processes
    padded_bytes = 4 * ((params + 1 + world - 1) // world * world)
    shard_samples = int(env["BATCH"]) // shards
    shards_per_rank = shards // processes
    shard_flops = 6 * shard_samples * params  # forward 2 S P, backward 4 S P
    t_shard = shard_flops / (gpu_tflops * 1e12)
    rate = sha256_rate()
    t_hash = padded_bytes / rate
    t_copy = padded_bytes / (pcie_gbs * 1e9)
    t_gather = gather_ms / 1e3
    update = shards_per_rank * t_shard
    updates = int(env["STEPS"]) * int(env["MICROBATCHES"])

    def per_audit(every):
        return t_shard + t_copy + t_gather + max(0.0, t_hash - verdict_lag(every) * update)

    print(f"\nanalytic, spec.json's job: P={params}, partial {padded_bytes / 1e6:.1f} MB, "
          f"{shards_per_rank} shard(s) per rank of {shard_samples} samples "
          f"({shard_flops / 1e9:.1f} GFLOP)")
    print(f"  shard at {gpu_tflops} TFLOP/s: {t_shard * 1e3:.2f} ms; copy at {pcie_gbs} GB/s: "
          f"{t_copy * 1e3:.2f} ms; gather {gather_ms} ms; SHA-256 at {rate / 1e9:.2f} GB/s "
          f"(measured here, off the loop): {t_hash * 1e3:.1f} ms")
    print(f"  an update: at least {update * 1e3:.2f} ms (its shards' GEMMs at peak)")
    for every in sorted({1, 10, 100, default, 2 * default}):
        print(f"  AUDIT_EVERY={every}: one audit holds the loop {per_audit(every) * 1e3:.1f} ms, at most "
              f"{100 * per_audit(every) / (every * update):.2f} % "
              f"({updates // every} audits in its {updates} updates)")
    under = next(every for every in range(1, 100000) if per_audit(every) / (every * update) < 0.02)
    print(f"  under 2 % from AUDIT_EVERY={under} on "
          f"(an upper bound: the real update adds the collectives, Adam and the snapshot)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default=str(ROOT / "build"))
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--spec", default=str(ROOT / "spec.json"))
    parser.add_argument("--gpu-tflops", type=float, default=30.3)
    parser.add_argument("--pcie-gbs", type=float, default=25.0)
    parser.add_argument("--gather-ms", type=float, default=0.5)
    parser.add_argument("--every", default="",
                        help="the AUDIT_EVERY values to run, comma-separated (0 is always run); "
                             "default: 0, the default, 10, 1")
    parser.add_argument("--no-measure", action="store_true", help="only the analytic figures")
    args = parser.parse_args()
    default = default_audit_every()
    if not args.no_measure:
        build = Path(args.build).resolve()
        chosen = [int(e) for e in args.every.split(",") if e] if args.every else [default, 10, 1]
        settings = [0] + [e for e in chosen if e != 0]
        updates = args.steps * int(os.environ.get("MICROBATCHES", TRAIN_BENCH_CONFIG["MICROBATCHES"]))
        print(f"audit_bench: PLATFORM=cpu NUM_PROCESSES={args.processes} STEPS={args.steps} "
              f"({updates} updates), {args.rounds} rounds; load average {os.getloadavg()[0]:.2f}")
        times = {every: [] for every in settings}
        with tempfile.TemporaryDirectory(prefix="dmlp-audit-bench-") as scratch:
            for round_index in range(args.rounds):
                order = settings[round_index % len(settings):] + settings[:round_index % len(settings)]
                for every in order:
                    out = Path(scratch) / f"r{round_index}-{every}"
                    times[every].append(train_loop_seconds(build, args.processes, args.steps, every, out))
        ratios = {every: [t / base for t, base in zip(times[every], times[0])] for every in settings}
        for every in settings:
            audits = updates // every if every else 0
            r = ratios[every]
            print(f"  AUDIT_EVERY={every:<5} train loop median {median(times[every]):.2f} s, "
                  f"fastest {min(times[every]):.2f} s; ratio to off {median(r):.3f} "
                  f"(range {min(r):.3f}-{max(r):.3f}), {audits} audits")
        # The fastest round of each is the least disturbed by outside load.
        for name, pick in (("median", median), ("fastest", min)):
            if 1 not in times:
                break
            per_update = pick(times[0]) / updates
            per_audit = (pick(times[1]) - pick(times[0])) / updates
            print(f"  per audit ({name}s, from AUDIT_EVERY=1): {per_audit * 1e3:.1f} ms on an "
                  f"update of {per_update * 1e3:.1f} ms; so AUDIT_EVERY={default} costs about "
                  f"{100 * per_audit / (default * per_update):.3f} %, AUDIT_EVERY=10 "
                  f"{100 * per_audit / (10 * per_update):.1f} %")
    analytic(args.spec, default, args.gpu_tflops, args.pcie_gbs, args.gather_ms)


if __name__ == "__main__":
    main()
