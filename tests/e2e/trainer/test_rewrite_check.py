"""Receipts checked on rewrite: a rank restored onto files newer or
older than its image confirms, refuses or reports, and never writes blind.
A restore is simulated as the issue describes: SIGSTOP one rank (by pid), edit
its receipt file, SIGCONT. Every wait is for an event (a line count, a stopped
state), never for a time."""

import json
import os
import shutil
import signal
import tempfile
import unittest
from pathlib import Path

from harness import (LAUNCH, TRAIN, JobTestCase, tiny_job_env, launch, line_count, rank_pids,
                     stopped, verify, wait_for)

# Many short steps, so the job is still running when a rank is stopped however
# loaded the machine is; a long heartbeat, so the stopped rank's peer waits.
PLAN = {"STEPS": 1500, "HEARTBEAT_TIMEOUT_SECONDS": 300}
VICTIM = 1
RANK_FILE = f"rank-{VICTIM}.jsonl"


class RewriteCheck(JobTestCase):
    @classmethod
    def setUpClass(cls):
        cls.baseline_dir = Path(tempfile.mkdtemp(prefix="dmlp-baseline-"))
        cls.baseline = cls.baseline_dir / "run"
        result = launch(cls.baseline, 2, timeout=600, **PLAN)
        assert result.returncode == 0, result.stderr

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.baseline_dir, ignore_errors=True)

    def stop_victim(self, out):
        """Starts the job, SIGSTOPs rank VICTIM once it has a few receipts; returns
        (launcher, victim pid, the victim's file as it was when stopped)."""
        launcher = self.start([LAUNCH, "--grace", "5", TRAIN], tiny_job_env(out, 2, **PLAN))
        wait_for(lambda: line_count(out / RANK_FILE) >= 4, 300, "the victim's receipts")
        pid = rank_pids(launcher.pid)[VICTIM]
        os.kill(pid, signal.SIGSTOP)
        wait_for(lambda: stopped(pid), 60, "the victim to stop")
        data = (out / RANK_FILE).read_bytes()
        self.assertTrue(data.endswith(b"\n"))
        self.assertLess(data.count(b"\n"), PLAN["STEPS"] - 10, "the job ran too far to test")
        return launcher, pid, data

    def finish(self, launcher, pid):
        os.kill(pid, signal.SIGCONT)
        # communicate, not wait: rank 0's METRIC lines would fill the stdout pipe.
        _, stderr = launcher.communicate(timeout=600)
        return stderr

    def baseline_lines(self, first, count):
        lines = (self.baseline / RANK_FILE).read_bytes().splitlines(keepends=True)
        return lines[first - 1:first - 1 + count]

    def test_truncated_receipts_are_receipts_lost_and_the_run_incomplete(self):
        out = self.scratch / "run"
        launcher, pid, data = self.stop_victim(out)
        lines = data.splitlines(keepends=True)
        written = len(lines)
        with open(out / RANK_FILE, "r+b") as receipts:  # restored onto older files
            receipts.truncate(len(b"".join(lines[:written - 3])))
        stderr = self.finish(launcher, pid)
        self.assertNotEqual(launcher.returncode, 0)
        self.assertIn(f"dmlp-train: error: RECEIPTS_LOST: steps {written - 2}..{written} "
                      f"rank={VICTIM}: {out}/{RANK_FILE} is ", stderr)
        self.assertEqual((out / RANK_FILE).read_bytes(), b"".join(lines[:written - 3]))
        result = verify(out)
        self.assertEqual(result.returncode, 3, result.stdout + result.stderr)
        self.assertIn("INCOMPLETE", result.stdout)
        self.assertIn(RANK_FILE, result.stdout)

    def test_lines_already_there_are_confirmed_replays(self):
        out = self.scratch / "run"
        launcher, pid, data = self.stop_victim(out)
        written = data.count(b"\n")
        with open(out / RANK_FILE, "ab") as receipts:  # restored onto newer files
            receipts.write(b"".join(self.baseline_lines(written + 1, 5)))
        stderr = self.finish(launcher, pid)
        self.assertEqual(launcher.returncode, 0, stderr)
        self.assertPass(out)
        self.assertSameBytes(out, self.baseline,
                             ("metrics.jsonl", "rank-0.jsonl", RANK_FILE, "state.safetensors"))
        result = json.loads((out / "result.json").read_text())
        self.assertEqual(result["confirmed_replays"], [0, 5])
        self.assertEqual(json.loads((self.baseline / "result.json").read_text())
                         ["confirmed_replays"], [0, 0])

    def test_different_lines_already_there_are_replay_diverged(self):
        out = self.scratch / "run"
        launcher, pid, data = self.stop_victim(out)
        written = data.count(b"\n")
        appended = self.baseline_lines(written + 1, 5)
        digest_at = appended[1].index(b'"params_sha256": "') + len(b'"params_sha256": "')
        flipped = b"0" if appended[1][digest_at:digest_at + 1] != b"0" else b"1"
        appended[1] = appended[1][:digest_at] + flipped + appended[1][digest_at + 1:]
        with open(out / RANK_FILE, "ab") as receipts:
            receipts.write(b"".join(appended))
        stderr = self.finish(launcher, pid)
        self.assertNotEqual(launcher.returncode, 0)
        self.assertIn(f"dmlp-train: error: REPLAY_DIVERGED: step={written + 2} rank={VICTIM} "
                      f"{out}/{RANK_FILE} already holds other bytes at offset "
                      f"{len(data) + len(appended[0])} (nothing overwritten)", stderr)
        self.assertEqual((out / RANK_FILE).read_bytes(), data + b"".join(appended))


if __name__ == "__main__":
    unittest.main()
