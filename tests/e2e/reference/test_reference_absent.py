"""against_reference.py where the reference cannot be found (a fresh clone
has no ../shared/reference beside it): skip (77) with the reason outside CI,
fail (1) with the reason in CI (CI set), before anything runs.

Usage: python3 -m unittest -v test_reference_absent   (ctest: e2e.reference.absent)
"""

import os
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

AGAINST_REFERENCE = Path(__file__).resolve().parent / "against_reference.py"


class ReferenceAbsent(unittest.TestCase):
    def run_check(self, reference_dir, **settings):
        env = {k: v for k, v in os.environ.items() if k not in ("CI", "REFERENCE_DIR")}
        # A python that exists: only the missing reference job can stop the check.
        env.update(REFERENCE_DIR=str(reference_dir), DMLP_REFERENCE_PYTHON=sys.executable, **settings)
        with tempfile.TemporaryDirectory() as bin_dir:
            return subprocess.run([sys.executable, str(AGAINST_REFERENCE), "--bin", bin_dir], env=env,
                                  capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)

    def test_skips_with_the_reason_outside_ci_and_fails_in_ci(self):
        with tempfile.TemporaryDirectory() as empty:
            why = (f"no reference job (train.py) in {Path(empty).resolve()}: set REFERENCE_DIR "
                   "to a copy of the reference job's directory")
            skipped = self.run_check(empty)
            self.assertEqual((skipped.returncode, skipped.stderr), (77, f"against_reference: SKIP: {why}\n"))
            failed = self.run_check(empty, CI="true")
            self.assertEqual((failed.returncode, failed.stderr),
                             (1, f"against_reference: FAIL: {why}; in CI this check must run\n"))
            self.assertEqual(skipped.stdout + failed.stdout, "", "it ran something")


if __name__ == "__main__":
    unittest.main()
