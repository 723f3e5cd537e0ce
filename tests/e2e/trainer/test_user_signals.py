"""SIGUSR1 and SIGUSR2 sent to dmlp-launch mid-run: passed on to the ranks,
which log them and go on; the job completes."""

import os
import signal
import unittest
from pathlib import Path

from harness import (LAUNCH, TRAIN, JobTestCase, line_count, rank_pids, stopped, tiny_job_env,
                     wait_for)


def pending_signals(pid):
    """The process-wide pending signal mask of `pid` (ShdPnd in /proc/PID/status)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("ShdPnd:"):
            return int(line.split()[1], 16)
    return 0


def is_pending(pid, number):
    return bool(pending_signals(pid) & (1 << (number - 1)))


class UserSignals(JobTestCase):
    def test_sigusr1_and_sigusr2_are_logged_and_the_job_goes_on(self):
        # The ranks are stopped while the signals reach them, so that both are
        # delivered mid-run however fast the job is; then they continue.
        out = self.scratch / "run"
        launcher = self.start([LAUNCH, "--grace", "5", TRAIN], tiny_job_env(out, 2, STEPS=400))
        wait_for(lambda: line_count(out / "rank-0.jsonl") >= 1, 60, "the first receipt")
        ranks = rank_pids(launcher.pid)
        for pid in ranks.values():
            os.kill(pid, signal.SIGSTOP)
        for pid in ranks.values():
            wait_for(lambda: stopped(pid), 30, f"rank pid {pid} to stop")
        for number in (signal.SIGUSR1, signal.SIGUSR2):
            launcher.send_signal(number)
            for pid in ranks.values():
                wait_for(lambda: is_pending(pid, number), 30, f"{number.name} to reach pid {pid}")
        for pid in ranks.values():
            os.kill(pid, signal.SIGCONT)
        launcher.wait(timeout=300)
        stderr = launcher.stderr.read()
        self.assertEqual(launcher.returncode, 0, stderr[-3000:])  # was 138: the ranks died
        me = os.getpid()
        for name in ("SIGUSR1", "SIGUSR2"):
            self.assertIn(f"dmlp-launch: received {name} from pid {me}; passed on to 2 rank process group(s)",
                          stderr)
            for rank in (0, 1):
                self.assertIn(f"[rank {rank}] dmlp-train: {name} received from pid {launcher.pid}; "
                              f"ignored, the job goes on", stderr)
        self.assertPass(out)


if __name__ == "__main__":
    unittest.main()
