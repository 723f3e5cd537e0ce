"""dmlp-train's usage errors: exit 2 with one USAGE line, also when it runs
under dmlp-launch, and nothing created."""

import unittest

from harness import LAUNCH, TRAIN, JobTestCase, run, tiny_job_env


class UsageErrors(JobTestCase):
    def test_usage_errors_exit_two_also_through_the_launcher(self):
        env = tiny_job_env(self.scratch / "run", 1, PROCESS_ID=0)
        for args, what in ((["--bogus"], "--bogus"), (["extra"], "extra"), (["--config"], "--config")):
            result = run([TRAIN, *args], env)
            self.assertEqual(result.returncode, 2, (args, result.stderr))  # was 109, 114
            self.assertTrue(result.stderr.startswith("dmlp-train: error: USAGE: "), result.stderr)
            self.assertIn(what, result.stderr)
            self.assertTrue(result.stderr.endswith(" (see --help)\n"), result.stderr)
        self.assertEqual(run([TRAIN, "--help"], env).returncode, 0)
        launched = run([LAUNCH, "--grace", "5", TRAIN, "--bogus"], env)
        self.assertEqual(launched.returncode, 2, launched.stderr)
        self.assertIn("RANK_EXIT_NONZERO: rank=0 ", launched.stderr)
        self.assertFalse((self.scratch / "run").exists())


if __name__ == "__main__":
    unittest.main()
