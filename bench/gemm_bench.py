#!/usr/bin/env python3
"""gemm_bench: the CPU GEMM floor of one update (bench/cpu_floor) for every kernel
DMLP_CPU_GEMM offers on this CPU, against the machine's FMA peak (bench/cpu_peak),
at 1 and 2 threads, all measured in the same rounds.

Each round runs, per thread count, cpu_peak and then cpu_floor once per kernel,
so that outside load and the machine's drift hit them alike; the figures are the
median round and the range. cpu_floor reports the median of its passes, so it is
set against cpu_peak's median run (fma_median_gflops), and also against its best
(fma_peak_gflops, what the cores can do at all): the widest ISA's peak for every
kernel, and for the AVX2 kernel also AVX2's own (half of AVX-512's). The scalar kernel (libm's fmaf
per element) runs at 64 samples per rank, one pass: it is the portable fallback,
far too slow for the MLP's size.

  bench/gemm_bench.py [--build build] [--rounds 3] [--threads 1,2] [--kernels avx512,avx2,blis,scalar]

Configuration defaults to train_bench.py's shapes (FEATURES=512 WIDTH=1024 LAYERS=3
CLASSES=10) with BATCH=512 samples for one rank; a rank of a 2-rank job has
half of them, so 2 threads (one rank on 2 CPUs) run at 512 samples, and
`--samples` overrides it. Not a test: it asserts nothing.
"""

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cpu_job import TRAIN_BENCH_CONFIG, ROOT, configured, median  # noqa: E402


def figures(text):
    return {k: float(v) for k, v in re.findall(r"(\w+)=([0-9.]+)", text)}


def peak(build, threads, isa=None):
    out = subprocess.run([str(build / "bin/cpu_peak"), str(threads), "0.3"] + ([isa] if isa else []),
                         capture_output=True, text=True, check=True).stdout
    return figures(out)


def floor(build, kernel, threads, samples, repeats):
    cfg = configured(TRAIN_BENCH_CONFIG)
    result = subprocess.run([str(build / "bin/cpu_floor"), cfg["FEATURES"], cfg["WIDTH"], cfg["LAYERS"],
                             cfg["CLASSES"], str(samples), str(threads), str(repeats)],
                            env=dict(os.environ, DMLP_CPU_GEMM=kernel), capture_output=True, text=True)
    if result.returncode != 0:  # a kernel this CPU lacks: ENV_INVALID, exit 2
        return None
    return figures(result.stdout)["gemm_gflops"]


def supported(build, kernel):
    result = subprocess.run([str(build / "bin/cpu_floor"), "4", "4", "1", "2", "4", "1", "1"],
                            env=dict(os.environ, DMLP_CPU_GEMM=kernel), capture_output=True, text=True)
    return result.returncode == 0


def span(values, fmt="{:.1f}"):
    return f"{fmt.format(median(values))} ({fmt.format(min(values))}-{fmt.format(max(values))})"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default=str(ROOT / "build"))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--kernels", default="avx512,avx2,blis,scalar")
    parser.add_argument("--samples", type=int, default=int(configured(TRAIN_BENCH_CONFIG)["BATCH"]))
    args = parser.parse_args()
    build = Path(args.build).resolve()
    kernels = [k for k in args.kernels.split(",") if supported(build, k)]
    skipped = sorted(set(args.kernels.split(",")) - set(kernels))
    print(f"gemm_bench: {args.samples} samples per rank, kernels {','.join(kernels)}"
          + (f" (this CPU lacks {','.join(skipped)})" if skipped else "")
          + f"; load average before: {os.getloadavg()[0]:.2f}")
    for threads in [int(t) for t in args.threads.split(",")]:
        peaks, medians, avx2_medians, rates = [], [], [], {k: [] for k in kernels}
        for _ in range(args.rounds):
            p = peak(build, threads)
            peaks.append(p["fma_peak_gflops"])
            medians.append(p["fma_median_gflops"])
            if "avx2" in kernels:
                avx2_medians.append(peak(build, threads, "avx2")["fma_median_gflops"])
            for kernel in kernels:
                scalar = kernel == "scalar"
                rates[kernel].append(floor(build, kernel, threads, 64 if scalar else args.samples,
                                           1 if scalar else 7))
        print(f"\nthreads={threads}  ({args.rounds} rounds; median, range; GFLOP/s)")
        print(f"  FMA peak      best of 5 {span(peaks)}   median of 5 {span(medians)}")
        for kernel in kernels:
            of_median = [r / m for r, m in zip(rates[kernel], medians)]
            of_best = [r / b for r, b in zip(rates[kernel], peaks)]
            print(f"  {kernel:12s}  {span(rates[kernel])}   {span(of_median, '{:.0%}')} of the median peak, "
                  f"{span(of_best, '{:.0%}')} of the best")
            if kernel == "avx2" and avx2_medians and avx2_medians != medians:
                of_own = [r / m for r, m in zip(rates[kernel], avx2_medians)]
                print(f"  {'':12s}  {span(of_own, '{:.0%}')} of AVX2's own median peak, {span(avx2_medians)}")


if __name__ == "__main__":
    main()
