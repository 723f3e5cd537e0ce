"""dmlp-launch --log-dir with what a user may have left in it: a link at a log
file's name is refused, never followed, and an existing log (maybe hard-linked
elsewhere) is replaced, not truncated."""

import os
import unittest

from harness import LAUNCH, TRAIN, JobTestCase, run, tiny_job_env


class LogDir(JobTestCase):
    def test_log_files_never_follow_a_link(self):
        # Was: a link at DIR/rank-0.stdout received the rank's METRIC lines, and
        # a planted rank-1.stderr link cut a file outside to 0 bytes.
        logs = self.scratch / "logs"
        logs.mkdir()
        outside = self.scratch / "outside.txt"
        outside.write_text("precious\n")
        (logs / "rank-0.stdout").symlink_to(outside)
        out = self.scratch / "run"
        env = tiny_job_env(out, 1, DATA_SHARDS=1)
        result = run([LAUNCH, "--grace", "5", "--log-dir", logs, TRAIN], env)
        self.assertEqual(result.returncode, 2, result.stderr)
        self.assertIn(f"LOG_DIR_FAILED: {logs}/rank-0.stdout", result.stderr)
        self.assertIn("not a regular file", result.stderr)
        self.assertEqual(outside.read_text(), "precious\n")
        self.assertFalse(out.exists())

    def test_an_existing_log_is_replaced_not_truncated(self):
        logs = self.scratch / "logs"
        logs.mkdir()
        kept = self.scratch / "kept.txt"
        kept.write_text("an earlier log, hard-linked elsewhere\n")
        os.link(kept, logs / "rank-0.stderr")
        out = self.scratch / "run"
        result = run([LAUNCH, "--grace", "5", "--log-dir", logs, TRAIN], tiny_job_env(out, 1, DATA_SHARDS=1))
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(kept.read_text(), "an earlier log, hard-linked elsewhere\n")
        self.assertIn("METRIC step=4 ", (logs / "rank-0.stdout").read_text())
        self.assertNotIn("hard-linked", (logs / "rank-0.stderr").read_text())
        self.assertPass(out)


if __name__ == "__main__":
    unittest.main()
