"""dmlp-launch and the ranks that diverged (exit code 4) or failed the shard
audit (5): not restarted unless --restart-on-divergence, and a divergence
repeated at the same step names the suspect host and device."""

import socket
import unittest

from launch_support import (LaunchTestCase, Launcher, STAND_IN, assert_all_dead, check, go,
                            stand_in_env, started_procs, wait_for_ranks)


L4 = "NVIDIA L4 GPU-8f3c2a1e-0011-2233-4455-66778899aaff PCI 0000:3B:00.0"


def diverged_line(step, rank, label):
    """The line dmlp-train prints (every rank the same) when rank `rank` diverged at `step`."""
    return ("dmlp-train: error: RANK_DIVERGED: step=%d rank(s)=%d digest=ab12 majority=cd34 "
            "device(s)=rank %d: %s" % (step, rank, rank, label))


class DivergedRanks(LaunchTestCase):
    def test_divergence_is_not_restarted_without_the_flag(self):
        env = stand_in_env(self.tmp, 2, STAND_IN_FAIL_RANK=1, STAND_IN_FAIL_WITH="exit:4",
                           STAND_IN_FAIL_LINE=diverged_line(7, 1, "host h1 " + L4))
        launcher = Launcher(["--restarts", "2", STAND_IN], env)
        ranks = wait_for_ranks(self.tmp, 2)
        go(self.tmp)
        run = launcher.finish()
        check(run.rc == 4, "the diverged rank's code", run)
        lines = run.err_lines()
        check("dmlp-launch: not restarted: rank 1 diverged at step 7 (RANK_DIVERGED); a restart replays the "
              "same steps \u2014 pass --restart-on-divergence to retry" in lines, "why there was no restart", run)
        check("dmlp-launch:   rank 1 diverged at step 7 (RANK_DIVERGED), on host h1 (%s)" % L4 in lines,
              "where it diverged, under the first summary line", run)
        check(lines[-1] == "dmlp-launch: exit code 4", "one attempt: the summary of a launch without restarts", run)
        check(not any("restarting" in l or "attempt" in l for l in lines), "no restart", run)
        check(len(started_procs(self.tmp)) == 2, "ranks started once", run)
        assert_all_dead(list(ranks.values()))

    def test_repeated_divergence_names_the_suspect_host(self):
        # The label names no host: the launcher's own host name stands in.
        env = stand_in_env(self.tmp, 2, STAND_IN_FAIL_RANK=1, STAND_IN_FAIL_WITH="exit:4",
                           STAND_IN_FAIL_LINE=diverged_line(7, 1, L4))
        launcher = Launcher(["--restarts", "2", "--restart-on-divergence", STAND_IN], env)
        wait_for_ranks(self.tmp, 2)
        go(self.tmp)
        run = launcher.finish()
        check(run.rc == 4, "the last attempt's diverged rank's code", run)
        lines = run.err_lines()
        for attempt in (2, 3):
            check("dmlp-launch: attempt %d of 3: restarting all 2 ranks with RESUME=1 after rank 1 failed "
                  "(exited with code 4)" % attempt in lines, "restarted on request (attempt %d)" % attempt, run)
        host = socket.gethostname()
        check("dmlp-launch: hardware suspect: rank 1 diverged at step 7 in attempts 1, 2 and 3, on host %s (%s)"
              % (host, L4) in lines, "the suspect host and device are named", run)
        check(lines[-2] == "dmlp-launch: not restarted: no restarts left (--restarts 2)", "why it stopped", run)
        check(lines[-1].startswith("dmlp-launch: exit code 4 after 3 attempts in "), "exit code line", run)
        check(len(started_procs(self.tmp)) == 6, "two ranks per attempt, three attempts", run)
        assert_all_dead(started_procs(self.tmp))

    def test_divergence_at_another_step_is_no_suspect(self):
        env = stand_in_env(self.tmp, 2, STAND_IN_FAIL_RANK=1, STAND_IN_FAIL_WITH="exit:4",
                           STAND_IN_FAIL_LINE=diverged_line(7, 1, "host h1 " + L4),
                           STAND_IN_FAIL_LINE_RESUMED=diverged_line(9, 1, "host h1 " + L4))
        launcher = Launcher(["--restarts", "1", "--restart-on-divergence", STAND_IN], env)
        wait_for_ranks(self.tmp, 2)
        go(self.tmp)
        run = launcher.finish()
        check(run.rc == 4, "exit code 4", run)
        lines = run.err_lines()
        check(not any("hardware suspect:" in l for l in lines), "no suspect", run)
        check("dmlp-launch: attempt 2: rank 1 diverged at step 9 (RANK_DIVERGED), not as in attempt 1 (rank 1 "
              "diverged at step 7): not a hardware suspect" in lines, "said to be no repeat", run)
        check(lines[-1].startswith("dmlp-launch: exit code 4 after 2 attempts in "), "exit code line", run)
        assert_all_dead(started_procs(self.tmp))

    def test_shard_audit_of_a_hidden_rank_is_read_too(self):
        line = ("dmlp-train: error: SHARD_AUDIT_FAILED: step=12 update=3 shard=1 ranks=0,1 digests=aa,bb "
                "device(s)=rank 0: host h1 cpu Intel(R) Xeon(R); rank 1: host h2 cpu AMD EPYC")
        env = stand_in_env(self.tmp, 2, STAND_IN_FAIL_RANK=1, STAND_IN_FAIL_WITH="exit:5", STAND_IN_FAIL_LINE=line)
        launcher = Launcher(["--restarts", "1", "--show-ranks", "0", STAND_IN], env)
        wait_for_ranks(self.tmp, 2)
        go(self.tmp)
        run = launcher.finish()
        check(run.rc == 5, "the failed rank's code", run)
        lines = run.err_lines()
        check("dmlp-launch:   ranks 0,1 failed the shard audit at step 12 (SHARD_AUDIT_FAILED), on rank 0: host h1 "
              "(cpu Intel(R) Xeon(R)); rank 1: host h2 (cpu AMD EPYC)" in lines, "the audit line of a hidden rank", run)
        check(any(l.startswith("dmlp-launch: not restarted: ranks 0,1 failed the shard audit at step 12") for l in lines),
              "not restarted", run)
        check(len(started_procs(self.tmp)) == 2, "ranks started once", run)
        assert_all_dead(started_procs(self.tmp))


if __name__ == "__main__":
    unittest.main()
