"""Which rows a GPU run starts, in which order, and what each is expected to
cost: a lent GPU is one call of limited time, so the rows run by value per
second (the cheapest that would change the next plan first: a wrong bit is
found in seconds, a speed figure takes a minute), each only when its estimate
still fits the call's budget. A row left out says so in the table, and
GPU_CHECK_ROWS names the rows a second call runs.

The estimates are for one H100 (slower than an H200), from the rows' work
(jobs, steps, images) rather than a measurement: no GPU has run the kit yet.
After the first call, replace them with the table's SECONDS column.

Standard library only, Python 3.8 or newer, as all of the runner.
"""

import os
import time

from gpu_check_bytes import row_draws_bytes, rows_cuda_equals_cpu
from gpu_check_rows import (row_digest_threads, row_fidelity, row_freeze_one_rank, row_freeze_two_ranks,
                            row_ordered_gemm, row_ranks_on_one_gpu, row_unit_tests, rows_cpu_vs_cublas, rows_receipts,
                            rows_speed, rows_versus_jax)
from gpu_check_run import progress

# (key for GPU_CHECK_ROWS, the row, estimated seconds on one H100), in the order they run.
ROW_PLAN = (
    ("unit", row_unit_tests, 25),               # cuda_test: every kernel against the CPU
    ("draws", row_draws_bytes, 15),             # dmlp_draws cuda = cpu, 2 x 46 MB
    ("bytes", rows_cuda_equals_cpu, 30),        # GEMM=ordered = PLATFORM=cpu, 1 and 2 ranks, small plan
    ("receipts", rows_receipts, 30),            # 4 jobs at the spec's sizes, 10 steps
    ("freeze1", row_freeze_one_rank, 60),       # 2 jobs of ~15 s, dump, 7 s down, restore
    ("freeze2", row_freeze_two_ranks, 70),      # the same with 2 ranks
    ("cublas", rows_cpu_vs_cublas, 30),         # 1 CPU + 2 CUDA jobs, 10 steps
    ("ranks", row_ranks_on_one_gpu, 35),        # 1, 2, 4 ranks, gloo, 10 steps
    ("bench", rows_speed, 40),                  # gpu_bench: 8192^3, the update, 2 x 20 steps, the digest
    ("gemm", row_ordered_gemm, 20),             # gpu_bench --ordered-gemm: 8 shapes x 3 GEMMs x 6 calls
    ("digest", row_digest_threads, 35),         # K = 1..8, 20 steady steps each with and without
    ("fidelity", row_fidelity, 35),             # jax on XLA:GPU and XLA:CPU at the spec's sizes
    ("reference", rows_versus_jax, 60),         # the reference JAX job at both precisions
)
# What the runner spends before the first row (the kit's libraries, preflight.txt).
SETUP_SECONDS = 5
# The call's limit is 300 s; the rest is the margin for the table and the tarball.
DEFAULT_BUDGET_SECONDS = 280


def chosen_rows(environ):
    """The plan's rows that GPU_CHECK_ROWS names (all when unset), and the keys it names that no row has."""
    named = [key for key in environ.get("GPU_CHECK_ROWS", "").replace(",", " ").split() if key]
    keys = [key for key, _, _ in ROW_PLAN]
    unknown = [key for key in named if key not in keys]
    rows = [row for row in ROW_PLAN if not named or row[0] in named]
    if environ.get("GPU_CHECK_SKIP_REFERENCE", "0") == "1":
        # The row only records its SKIP: it costs nothing of the budget.
        rows = [(key, row, 0 if key == "reference" else estimate) for key, row, estimate in rows]
    return rows, unknown


def plan_text(rows, budget):
    """The plan printed before any row starts: rows, estimates, and which fit the budget."""
    lines = ["plan: %d rows, budget %d s (GPU_CHECK_BUDGET_S); estimated seconds on one H100:" % (len(rows), budget)]
    total = SETUP_SECONDS
    for key, row, estimate in rows:
        total += estimate
        lines.append("  %-10s %4d s  (%4d s so far)%s" % (key, estimate, total,
                                                        "" if total <= budget else "  over the budget"))
    lines.append("  total      %4d s" % total)
    return "\n".join(lines)


def run_rows(checks, environ=None):
    """Each chosen row in turn while its estimate fits what is left of the budget;
    a row left out is a SKIP that names GPU_CHECK_ROWS for the next call."""
    environ = os.environ if environ is None else environ
    budget = int(environ.get("GPU_CHECK_BUDGET_S", DEFAULT_BUDGET_SECONDS))
    rows, unknown = chosen_rows(environ)
    if unknown:
        checks.record("plan", "FAIL", "GPU_CHECK_ROWS names no row %s (rows: %s)"
                      % (" ".join(unknown), " ".join(key for key, _, _ in ROW_PLAN)))
        return
    progress(plan_text(rows, budget))
    left_out = []
    for key, row, estimate in rows:
        elapsed = time.monotonic() - checks.started
        if left_out or elapsed + estimate > budget:
            left_out.append(key)
            continue
        checks.start_row()
        row(checks)
    if left_out:
        checks.start_row()
        checks.record("not started", "SKIP", "over the %d s budget: GPU_CHECK_ROWS=%s for the next call"
                      % (budget, ",".join(left_out)))
