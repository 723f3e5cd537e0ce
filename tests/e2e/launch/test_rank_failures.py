"""dmlp-launch when ranks end: the exit code is the first failure's, the
failure is named once (RANK_EXIT_NONZERO), the other ranks are torn down
(SIGTERM, then SIGKILL after --grace) and nothing a rank started outlives it."""

import os
import signal
import unittest

from launch_support import (LaunchTestCase, Launcher, READY_LIMIT, STAND_IN, assert_all_dead,
                            base_env, check, go, launch, process_state, stand_in_env, summary_line,
                            wait_for_ranks, wait_until)


def failing_job(tmp, fail_with, expected_rc, field, **extra):
    env = stand_in_env(tmp, 3, STAND_IN_FAIL_RANK=1, STAND_IN_FAIL_WITH=fail_with, **extra)
    launcher = Launcher([STAND_IN], env)
    ranks = wait_for_ranks(tmp, 3)
    go(tmp)
    run = launcher.finish()
    check(run.rc == expected_rc, "exit code of the failed rank: %d" % expected_rc, run)
    line = "dmlp-launch: RANK_EXIT_NONZERO: rank=1 pid=%d %s" % (ranks[1].pid, field)
    check(run.err_lines().count(line) == 1, "exactly one line %r" % line, run)
    check(not any(l.startswith("RANK_EXIT_NONZERO") for l in run.err_lines()), "only the prefixed form", run)
    assert_all_dead(list(ranks.values()) + [launcher.me])
    return run, ranks


def zombie(proc):
    return process_state(proc) == "Z"


class RankFailures(LaunchTestCase):
    def test_all_succeed(self):
        script = 'echo "hello rank=$PROCESS_ID local=$LOCAL_RANK world=$NUM_PROCESSES"; echo "note from $PROCESS_ID" >&2'
        run = launch(["sh", "-c", script], base_env(NUM_PROCESSES=3))
        check(run.rc == 0, "all ranks exit 0 -> exit 0", run)
        expected = ["[rank %d] hello rank=%d local=%d world=3" % (r, r, r) for r in range(3)]
        check(sorted(run.out.splitlines()) == expected, "stdout is exactly the prefixed rank lines", run)
        for r in range(3):
            check("[rank %d] note from %d" % (r, r) in run.err_lines(), "rank stderr goes to stderr", run)
        check(len(summary_line(run, "all 3 ranks exited with code 0 in ")) == 1, "success summary", run)
        check(not any("RANK_EXIT_NONZERO" in line for line in run.err_lines()), "no failure line", run)

    def test_first_failure_exit_code(self):
        run, ranks = failing_job(self.tmp, "exit:3", 3, "rc=3")
        check(len(summary_line(run, "rank 1 failed first: exited with code 3 at ")) == 1, "summary names rank 1", run)
        for r in (0, 2):
            want = "dmlp-launch:   rank %d (pid %d): torn down by SIGTERM (killed by signal SIGTERM) at " % (r, ranks[r].pid)
            check(any(l.startswith(want) for l in run.err_lines()), "rank %d reported torn down" % r, run)
        check("dmlp-launch: exit code 3" in run.err_lines(), "summary ends with the exit code", run)
        # The failing rank's own message precedes the verdict.
        order = run.err_lines()
        check(order.index("[rank 1] rank 1 failing with exit:3") <
              order.index("dmlp-launch: RANK_EXIT_NONZERO: rank=1 pid=%d rc=3" % ranks[1].pid),
              "the rank's last words come before RANK_EXIT_NONZERO", run)

    def test_rank_killed_sigkill(self):
        run, _ = failing_job(self.tmp, "signal:KILL", 137, "signal=SIGKILL")
        check(len(summary_line(run, "rank 1 failed first: killed by signal SIGKILL")) == 1, "summary", run)

    def test_rank_killed_sigsegv(self):
        run, _ = failing_job(self.tmp, "signal:SEGV", 139, "signal=SIGSEGV")
        check(len(summary_line(run, "rank 1 failed first: killed by signal SIGSEGV")) == 1, "summary", run)

    def test_rank_exit_137_is_not_a_signal(self):
        run, _ = failing_job(self.tmp, "exit:137", 137, "rc=137")
        check(len(summary_line(run, "rank 1 failed first: exited with code 137")) == 1, "summary", run)

    def test_grace_period_then_sigkill(self):
        env = stand_in_env(self.tmp, 3, STAND_IN_FAIL_RANK=1, STAND_IN_FAIL_WITH="exit:4", STAND_IN_IGNORE_TERM=1)
        launcher = Launcher(["--grace", "1", STAND_IN], env)
        ranks = wait_for_ranks(self.tmp, 3)
        go(self.tmp)
        run = launcher.finish()
        check(run.rc == 4, "exit code of the failed rank", run)
        check("dmlp-launch: SIGKILL sent to 2 rank process group(s): the 1 s grace period is over" in run.err_lines(),
              "SIGKILL after the grace period", run)
        for r in (0, 2):
            want = "dmlp-launch:   rank %d (pid %d): killed by SIGKILL after the 1 s grace period at " % (r, ranks[r].pid)
            check(any(l.startswith(want) for l in run.err_lines()), "rank %d killed after grace" % r, run)
        assert_all_dead(list(ranks.values()))

    def test_grace_zero_kills_at_once(self):
        env = stand_in_env(self.tmp, 2, STAND_IN_FAIL_RANK=1, STAND_IN_FAIL_WITH="exit:6", STAND_IN_IGNORE_TERM=1)
        launcher = Launcher(["--grace", "0", STAND_IN], env)
        ranks = wait_for_ranks(self.tmp, 2)
        go(self.tmp)
        run = launcher.finish()
        check(run.rc == 6, "exit code of the failed rank", run)
        check(any(l.startswith("dmlp-launch:   rank 0 (pid %d): killed by SIGKILL at once (--grace 0)" % ranks[0].pid)
                  for l in run.err_lines()), "rank 0 killed at once", run)
        check(not any("SIGTERM sent" in l for l in run.err_lines()), "no SIGTERM with --grace 0", run)

    def test_background_child_does_not_survive(self):
        env = stand_in_env(self.tmp, 3, STAND_IN_FAIL_RANK=1, STAND_IN_FAIL_WITH="exit:2", STAND_IN_BACKGROUND=1)
        launcher = Launcher([STAND_IN], env)
        ranks = wait_for_ranks(self.tmp, 3)
        children = wait_for_ranks(self.tmp, 3, "bg-")
        go(self.tmp)
        run = launcher.finish()
        check(run.rc == 2, "exit code of the failed rank", run)
        # Gone by the time the launcher exits (it waits for every group to empty),
        # including the failed rank's own child.
        check(not any(c.alive() for c in children.values()),
              "background children dead when dmlp-launch exits: %s" % [c for c in children.values() if c.alive()], run)
        assert_all_dead(list(ranks.values()))

    def test_background_child_of_successful_rank_is_stopped(self):
        script = ('sleep 60 & echo $! > "$STAND_IN_DIR/bg-$PROCESS_ID.tmp"; '
                  'mv "$STAND_IN_DIR/bg-$PROCESS_ID.tmp" "$STAND_IN_DIR/bg-$PROCESS_ID.pid"; '
                  'n=0; while [ ! -e "$STAND_IN_DIR/go" ] && [ $n -lt 1000 ]; do sleep 0.01; n=$((n+1)); done; echo done')
        launcher = Launcher(["sh", "-c", script], stand_in_env(self.tmp, 2))
        children = wait_for_ranks(self.tmp, 2, "bg-")
        go(self.tmp)
        run = launcher.finish()
        check(run.rc == 0, "ranks exited 0 -> exit 0", run)
        check(not any(c.alive() for c in children.values()),
              "leftover children are gone when dmlp-launch exits: %s" % [c for c in children.values() if c.alive()], run)
        check(len([l for l in run.err_lines() if "exited but left processes in its group" in l]) == 2,
              "leftovers are reported", run)

    def test_first_failure_is_the_first_to_die_when_reaped_together(self):
        # Rank 1 dies of SIGXFSZ (past `ulimit -f`), then rank 0 fails as its
        # peer would; the launcher is stopped meanwhile, as a loaded host may keep
        # it from running, so one wakeup reaps both. waitpid() hands out rank 0
        # first (the older child): the first to die must still be the one named.
        script = ('d=$STAND_IN_DIR; r=$PROCESS_ID; echo $$ > "$d/rank-$r.tmp"; mv "$d/rank-$r.tmp" "$d/rank-$r.pid"; '
                  'n=0; while [ ! -e "$d/go-$r" ] && [ $n -lt 2000 ]; do sleep 0.01; n=$((n+1)); done; '
                  'if [ "$r" = 1 ]; then ulimit -f 1; printf "%8192s" x > "$d/past-the-limit"; exit 99; fi; '
                  'echo "rank 0 lost its peer" >&2; exit 3')
        launcher = Launcher(["--", "sh", "-c", script], stand_in_env(self.tmp, 2))
        ranks = wait_for_ranks(self.tmp, 2)
        launcher.send(signal.SIGSTOP)
        try:
            wait_until(lambda: process_state(launcher.me) == "T", READY_LIMIT, "the launcher to stop")
            for r in (1, 0):
                with open(os.path.join(self.tmp, "go-%d" % r), "w"):
                    pass
                wait_until(lambda: zombie(ranks[r]), READY_LIMIT, "rank %d to end" % r)
        finally:
            launcher.send(signal.SIGCONT)
        run = launcher.finish()
        check(run.rc == 128 + signal.SIGXFSZ, "the exit code is rank 1's (128+SIGXFSZ)", run)
        check("dmlp-launch: RANK_EXIT_NONZERO: rank=1 pid=%d signal=SIGXFSZ" % ranks[1].pid in run.err_lines(),
              "rank 1 is the failure", run)
        check(not any("RANK_EXIT_NONZERO: rank=0" in l for l in run.err_lines()), "rank 0 is not", run)
        check(len(summary_line(run, "rank 1 failed first: killed by signal SIGXFSZ")) == 1, "summary", run)


if __name__ == "__main__":
    unittest.main()
