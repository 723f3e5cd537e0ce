"""Every row of the GPU kit (tests/gpu/gpu_check_plan.py: ROW_PLAN) can pass
and can fail: each row runs here, without a GPU, against stand-ins for the
kit's programs on a machine with one (kit_standins.py), once with a planted
fault that must make it FAIL and once without, where it must PASS (or SKIP,
for a row whose tool refuses here). A row added to the plan without both cases
fails test_every_row_has_both_cases.

Also: the unit-test row's one name pattern for the tests that skip where a GPU
is (GPU_ABSENT_TESTS), held against cuda_test's sources.

Usage: python3 -m unittest -v kit_rows_test   (ctest: e2e.gpu.KitRows)
Environment: DMLP_SOURCE_DIR (default: three levels up).
"""

import fnmatch
import os
import re
import shutil
import sys
import tempfile
import unittest
from pathlib import Path

# In the kit rehearsal's root the test lies at /kit-rows/, with no repository above it.
SOURCE = Path(os.environ["DMLP_SOURCE_DIR"] if "DMLP_SOURCE_DIR" in os.environ else Path(__file__).resolve().parents[3])
sys.path.insert(0, str(SOURCE / "tests" / "gpu"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import gpu_check_plan  # noqa: E402
import gpu_check_rows  # noqa: E402
from gpu_check_run import Checks  # noqa: E402
from kit_standins import write_standin_kit  # noqa: E402

# row key: (KIT_PLANT that must make it FAIL, what it must be without: PASS or SKIP,
#           settings for both runs)
ROW_CASES = {
    "unit": ("skip-on-gpu", "PASS", {}),
    "draws": ("draws-differ", "PASS", {}),
    "bytes": ("cuda-bytes", "PASS", {}),
    "receipts": ("nondeterministic", "PASS", {}),
    "freeze1": ("fail-job", "SKIP", {}),
    "freeze2": ("fail-job", "SKIP", {}),
    "cublas": ("cuda-loss", "PASS", {}),
    "ranks": ("ranks-bytes", "PASS", {}),
    "bench": ("bench-fails", "PASS", {}),
    "gemm": ("bench-fails", "PASS", {}),
    "digest": ("bench-fails", "PASS", {"DIGEST_THREADS": "2"}),
    "fidelity": ("fidelity-differs", "PASS", {}),
    "reference": ("", "SKIP", {"GPU_CHECK_SKIP_REFERENCE": "1"}),
}
# The reference row's planted fault is not a program's: no reference job at all.
REFERENCE_FAULT = {"GPU_CHECK_SKIP_REFERENCE": "0", "REFERENCE_DIR": "/nonexistent"}


class KitRows(unittest.TestCase):
    def setUp(self):
        self.scratch = Path(tempfile.mkdtemp(prefix="dmlp-kit-rows-test-"))
        self.addCleanup(shutil.rmtree, self.scratch, ignore_errors=True)
        self.kit = write_standin_kit(self.scratch / "kit")
        saved = dict(os.environ)
        self.addCleanup(lambda: (os.environ.clear(), os.environ.update(saved)))
        for name in [name for name in os.environ if name.startswith("GPU_CHECK_")]:
            del os.environ[name]
        os.environ.update({"TMPDIR": str(self.scratch), "DMLP_GPU_PYTHON": str(self.kit / "jax-python"),
                           "KIT_PLANT": "", "DIGEST_THREADS": "2"})

    def run_row(self, key, plant, settings):
        """The row's records [(CHECK, RESULT, DETAIL)], run in a fresh Checks."""
        os.environ.update(settings, KIT_PLANT=plant, OUT=str(self.scratch / ("out-" + key + "-" + plant)))
        checks = Checks(str(self.kit), None)
        self.addCleanup(shutil.rmtree, checks.work, ignore_errors=True)
        checks.bin = str(self.kit / "bin")
        checks.job_steps_per_s["fp32"] = "2.0"  # as the receipts row measured it: freeze jobs of 30 steps
        row = {k: function for k, function, _ in gpu_check_plan.ROW_PLAN}[key]
        row(checks)
        return [(line[:24].rstrip(), line[25:30].rstrip(), line[39:]) for line in checks.rows]

    def test_every_row_has_both_cases(self):
        self.assertEqual(sorted(ROW_CASES), sorted(key for key, _, _ in gpu_check_plan.ROW_PLAN))

    def test_each_row_passes_and_fails(self):
        for key, (plant, clean, settings) in ROW_CASES.items():
            with self.subTest(row=key, case="clean"):
                if key.startswith("freeze"):  # no CRIU in the kit: the row's SKIP
                    shutil.move(str(self.kit / "criu"), str(self.scratch / "criu-aside"))
                records = self.run_row(key, "", settings)
                if key.startswith("freeze"):
                    shutil.move(str(self.scratch / "criu-aside"), str(self.kit / "criu"))
                self.assertTrue(records, key)
                results = {result for _, result, _ in records}
                self.assertNotIn("FAIL", results, records)
                self.assertIn(clean, results, records)
            with self.subTest(row=key, case="planted " + (plant or "no reference job")):
                records = self.run_row(key, plant, REFERENCE_FAULT if key == "reference" else settings)
                self.assertIn("FAIL", [result for _, result, _ in records], records)

    def test_the_unit_row_names_each_skip_and_leaves_out_the_pattern(self):
        records = self.run_row("unit", "skip-on-gpu", {})
        self.assertEqual(records[0][:2], ("unit tests", "FAIL"))
        self.assertIn("skipped: CudaFreeze.WithoutADriverIsARefusal", records[0][2])
        self.assertEqual((self.kit / "standin-log" / "cuda_test.args").read_text().split(),
                         ["--gtest_filter=-" + gpu_check_rows.GPU_ABSENT_TESTS])
        preflight = Path(os.environ["OUT"]) / "preflight.txt"
        self.assertIn("skipped gtests (cuda_test, filter -*.NoGpu*): CudaFreeze.WithoutADriverIsARefusal",
                      preflight.read_text())
        clean = self.run_row("unit", "", {})
        self.assertEqual(clean[0][:2], ("unit tests", "PASS"))
        self.assertIn("; header 2.28.9, library 2.27.3", clean[0][2])  # the NCCL test's report

    def test_the_freeze_row_tells_a_refusal_from_a_fault(self):
        # CRIU's check passes, the jobs run, cuda_freeze refuses (no driver API): SKIP, not FAIL.
        records = self.run_row("freeze1", "", {"KIT_STANDIN_RANK_SECONDS": "3"})
        self.assertEqual(records[0][1], "SKIP", records)
        self.assertIn("STEPS=30", records[0][2])  # 2 steps/s x 15 s: by time, not a fixed count
        records = self.run_row("freeze1", "lock-times-out", {"KIT_STANDIN_RANK_SECONDS": "3"})
        self.assertEqual(records[0][1], "SKIP", records)
        self.assertIn("cuda_freeze freeze refused: cuda_freeze: error: FREEZE_FAILED", records[0][2])
        # A job that logged all its steps before the dump was not frozen mid-run: the row's own fault shown.
        records = self.run_row("freeze1", "freeze-works", {"KIT_STANDIN_RANK_SECONDS": "3"})
        self.assertEqual(records[0][1], "FAIL", records)
        self.assertIn("the job finished before it was frozen (step 30 of 30)", records[0][2])

    def test_a_skipped_reference_costs_no_budget(self):
        rows, unknown = gpu_check_plan.chosen_rows({"GPU_CHECK_SKIP_REFERENCE": "1"})
        self.assertEqual((rows[-1][0], rows[-1][2], unknown), ("reference", 0, []))
        rows, _ = gpu_check_plan.chosen_rows({})
        self.assertEqual((rows[-1][0], rows[-1][2]), ("reference", 60))

    def test_a_row_can_cite_its_seconds(self):
        self.run_row("draws", "", {})
        table = (Path(os.environ["OUT"]) / "gpu-checks-table.txt").read_text().splitlines()
        self.assertEqual(table[1].split(), ["CHECK", "RESULT", "SECONDS", "DETAIL"])
        self.assertRegex(table[2], r"^draws cuda = cpu +PASS +\d+ ")


class SkipsWhereAGpuIs(unittest.TestCase):
    """Every cuda_test test that skips by itself (GTEST_SKIP in its own body, not
    DMLP_REQUIRE_GPU's skip without a GPU) skips where a GPU is: on the kit's
    GPU it must be one that the unit-test row leaves out, or the row FAILs."""

    def test_they_follow_the_one_pattern(self):
        skipping = []
        for source in sorted((SOURCE / "tests" / "unit").glob("cuda*_test.cc")):
            text = source.read_text()
            tests = list(re.finditer(r"^TEST(?:_F)?\((\w+), (\w+)\)", text, re.M))
            for index, test in enumerate(tests):
                end = tests[index + 1].start() if index + 1 < len(tests) else len(text)
                if "GTEST_SKIP" in text[test.end():end]:
                    skipping.append("%s.%s" % test.groups())
        outside = [name for name in skipping if not fnmatch.fnmatch(name, gpu_check_rows.GPU_ABSENT_TESTS)]
        self.assertEqual(outside, [], "tests that skip where a GPU is, named outside %s"
                         % gpu_check_rows.GPU_ABSENT_TESTS)
        # The skips a GPU machine may see, all of them left out by the row's filter.
        self.assertEqual(sorted(skipping), ["CudaDevice.NoGpuBackendIsCudaUnavailable",
                                            "CudaDevice.NoGpuIsCudaUnavailable", "CudaFreeze.NoGpuIsARefusal"])


if __name__ == "__main__":
    unittest.main()
