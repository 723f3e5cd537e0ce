"""Hostile and unlucky users: usage errors,
SIGUSR1/SIGUSR2 during a run, a dangling OUT_DIR link, control characters in
a config file. Each case failed before its fix."""

import os
import signal
from pathlib import Path

from harness import (LAUNCH, TRAIN, JobTestCase, tiny_job_env, launch, line_count, rank_pids, run,
                     stopped, wait_for)


def pending_signals(pid):
    """The process-wide pending signal mask of `pid` (ShdPnd in /proc/PID/status)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("ShdPnd:"):
            return int(line.split()[1], 16)
    return 0


def is_pending(pid, number):
    return bool(pending_signals(pid) & (1 << (number - 1)))


class HostileUsers(JobTestCase):
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

    def test_an_empty_config_name_is_refused(self):
        result = run([TRAIN, "--config", ""], tiny_job_env(self.scratch / "run", 1, PROCESS_ID=0))
        self.assertEqual(result.returncode, 2, result.stderr)  # ran with no config before
        self.assertEqual(result.stderr, "dmlp-train: error: CONFIG_INVALID: --config names no file\n")
        self.assertFalse((self.scratch / "run").exists())

    def test_nul_in_a_config_value_is_refused(self):
        config = self.scratch / "job.yaml"
        evil = self.scratch / "nulA"
        config.write_text(f'out_dir: "{evil}\\0/evil"\n')
        env = tiny_job_env(self.scratch / "unused", 1, PROCESS_ID=0)  # a whole job of one rank
        del env["OUT_DIR"]
        result = run([TRAIN, "--config", config], env)
        self.assertEqual(result.returncode, 2, result.stderr)  # wrote into nulA before
        self.assertEqual(result.stderr, f"dmlp-train: error: CONFIG_INVALID: {config}: value of 'out_dir' "
                                        f"'{evil}\\u0000/evil' holds a control character\n")
        self.assertFalse(evil.exists())

    def test_a_dangling_out_dir_link_is_named_by_every_rank(self):
        out = self.scratch / "run"
        out.symlink_to(self.scratch / "gone")
        result = launch(out, 2)
        self.assertEqual(result.returncode, 1, result.stderr)
        # Was IO_ERROR "create ...: File exists" on rank 0 and PEER_LOST on rank 1.
        # Each rank looks before the rendezvous; the first to say so ends the
        # job, so the other may be torn down before it speaks.
        said = (f"dmlp-train: error: OUTPUT_DANGLING_LINK: OUT_DIR {out} is a symbolic link to "
                f"'{self.scratch / 'gone'}', which does not exist")
        self.assertIn(said, result.stderr)
        for line in result.stderr.splitlines():
            if line.startswith("[rank ") and "dmlp-train: error:" in line:
                self.assertIn(said, line)
        self.assertNotIn("PEER_LOST", result.stderr)
        self.assertNotIn("File exists", result.stderr)
        self.assertFalse((self.scratch / "gone").exists())

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
    import unittest
    unittest.main()
