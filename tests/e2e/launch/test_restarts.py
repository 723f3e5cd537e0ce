"""dmlp-launch --restarts: after a failure every rank is restarted with
RESUME=1 once everything of the attempt before is gone; a launcher signal is
never followed by a restart; --restarts 0 is a launch without restarts."""

import os
import re
import signal
import unittest

from launch_support import (LaunchTestCase, Launcher, READY_LIMIT, STAND_IN, assert_all_dead,
                            base_env, check, cleanup, go, launch, read_pid_files, stand_in_env,
                            started_procs, summary_line, wait_for_ranks, wait_until)


def note_old_procs(directory, procs):
    """Tells restarted stand-in ranks which processes of the first attempt must be gone."""
    path = os.path.join(directory, "old.procs")
    with open(path + ".tmp", "w") as f:
        f.write("".join("%d %s\n" % (p.pid, p.started) for p in procs))
    os.rename(path + ".tmp", path)


def read_file(path):
    with open(path) as f:
        return f.read()


def stdout_of(run, rank):
    prefix = "[rank %d] " % rank
    return [l[len(prefix):] for l in run.out.splitlines() if l.startswith(prefix)]


def numbers_blurred(lines):
    return [re.sub(r"\d+(\.\d+)?", "#", l) for l in lines if l.startswith("dmlp-launch: ")]


class Restarts(LaunchTestCase):
    def test_restart_after_a_failure_resumes_every_rank(self):
        logs = os.path.join(self.tmp, "logs")
        env = stand_in_env(self.tmp, 3, STAND_IN_FAIL_RANK=1, STAND_IN_FAIL_WITH="exit:3", STAND_IN_FAIL_ONCE=1,
                           STAND_IN_BACKGROUND=1, STAND_IN_SLEEP_RESUMED="0.2")
        launcher = Launcher(["--restarts", "2", "--grace", "5", "--log-dir", logs, STAND_IN], env)
        ranks = wait_for_ranks(self.tmp, 3)
        children = wait_for_ranks(self.tmp, 3, "bg-")
        first_attempt = list(ranks.values()) + list(children.values())
        note_old_procs(self.tmp, first_attempt)
        go(self.tmp)
        run = launcher.finish()
        check(run.rc == 0, "the restarted attempt succeeded -> exit 0", run)
        lines = run.err_lines()
        check(lines.count("dmlp-launch: RANK_EXIT_NONZERO: rank=1 pid=%d rc=3" % ranks[1].pid) == 1, "failure", run)
        check(sum("RANK_EXIT_NONZERO" in l for l in lines) == 1, "only one failure", run)
        check("dmlp-launch: attempt 2 of 3: restarting all 3 ranks with RESUME=1 after rank 1 failed "
              "(exited with code 3)" in lines, "restart notice", run)
        first = [l for l in lines if l.startswith("dmlp-launch: attempt 1 of 3 (")]
        first_re = r"dmlp-launch: attempt 1 of 3 \([\d.]+ s\): rank 1 failed first: exited with code 3 at [\d.]+ s \(pid %d\)"
        check(len(first) == 2 and all(re.fullmatch(first_re % ranks[1].pid, l) for l in first),
              "attempt 1 shown at the restart and in the summary", run)
        check(len(summary_line(run, "attempt 2 of 3 (")) == 1 and
              "all 3 ranks exited with code 0 in " in summary_line(run, "attempt 2 of 3 (")[0], "attempt 2 summary", run)
        check(lines[-1].startswith("dmlp-launch: exit code 0 after 2 attempts in "), "last summary line", run)
        check(not any("attempt 3" in l for l in lines), "no third attempt", run)
        for r in range(3):
            out = stdout_of(run, r)
            ready = "rank %d ready local=%d world=3 " % (r, r)
            check(out.count(ready + "resume=unset") == 1 and out.count(ready + "resume=1") == 1,
                  "rank %d: RESUME unset in attempt 1, RESUME=1 in attempt 2" % r, run)
            check(out.index(ready + "resume=unset") < out.index(ready + "resume=1"), "in that order", run)
            check("old processes alive: none" in out,
                  "rank %d of attempt 2 started after every process of attempt 1 was gone" % r, run)
            check(out.count("rank %d done" % r) == 1, "rank %d finished once (attempt 2)" % r, run)
        # One file per rank, stream and attempt; attempt 1's files are not overwritten.
        expected = sorted("rank-%d%s.%s" % (r, a, s) for r in range(3) for a in ("", ".attempt-2")
                          for s in ("stdout", "stderr"))
        check(sorted(os.listdir(logs)) == expected, "log files per attempt: %s" % sorted(os.listdir(logs)), run)
        for r in range(3):
            first_out = read_file(os.path.join(logs, "rank-%d.stdout" % r))
            second_out = read_file(os.path.join(logs, "rank-%d.attempt-2.stdout" % r))
            check("resume=unset" in first_out and "resume=1" not in first_out, "attempt 1 log of rank %d" % r, run)
            check("resume=1" in second_out and "resume=unset" not in second_out, "attempt 2 log of rank %d" % r, run)
        check(read_file(os.path.join(logs, "rank-1.stderr")) == "rank 1 failing with exit:3\n", "rank 1 stderr", run)
        check(read_file(os.path.join(logs, "rank-1.attempt-2.stderr")) == "", "attempt 2 of rank 1 did not fail", run)
        started = started_procs(self.tmp)
        check(len(started) == 12, "3 ranks and 3 children per attempt, two attempts: %d" % len(started), run)
        check(not any(p.alive() for p in started), "nothing of either attempt outlives dmlp-launch: %s"
              % [p for p in started if p.alive()], run)

    def test_rank_that_always_fails_uses_every_restart(self):
        logs = os.path.join(self.tmp, "logs")
        # Not 4 or 5: those are divergences, not restarted without --restart-on-divergence.
        env = stand_in_env(self.tmp, 2, STAND_IN_FAIL_RANK=1, STAND_IN_FAIL_WITH="exit:6")
        launcher = Launcher(["--restarts", "2", "--log-dir", logs, STAND_IN], env)
        wait_for_ranks(self.tmp, 2)
        go(self.tmp)
        run = launcher.finish()
        check(run.rc == 6, "exit code of the last attempt's failed rank", run)
        lines = run.err_lines()
        check(sum(l.startswith("dmlp-launch: RANK_EXIT_NONZERO: rank=1 ") and l.endswith(" rc=6") for l in lines) == 3,
              "three attempts, three failures", run)
        for attempt in (2, 3):
            check("dmlp-launch: attempt %d of 3: restarting all 2 ranks with RESUME=1 after rank 1 failed "
                  "(exited with code 6)" % attempt in lines, "restart notice for attempt %d" % attempt, run)
        summary = lines[-6:]
        for attempt in (1, 2, 3):
            check(summary[attempt - 1].startswith("dmlp-launch: attempt %d of 3 (" % attempt) and
                  "): rank 1 failed first: exited with code 6 at " in summary[attempt - 1],
                  "summary line of attempt %d" % attempt, run)
        check(summary[3].startswith("dmlp-launch:   rank 0 (pid "), "how rank 0 of the last attempt ended", run)
        check(summary[4] == "dmlp-launch: not restarted: no restarts left (--restarts 2)", "why it stopped", run)
        check(summary[5].startswith("dmlp-launch: exit code 6 after 3 attempts in "), "exit code line", run)
        check(not any("attempt 4" in l for l in lines), "no fourth attempt", run)
        check(len(os.listdir(logs)) == 12 and os.path.exists(os.path.join(logs, "rank-1.attempt-3.stderr")),
              "log files of three attempts: %s" % sorted(os.listdir(logs)), run)
        started = started_procs(self.tmp)
        check(len(started) == 6, "two ranks per attempt, three attempts: %d" % len(started), run)
        assert_all_dead(started)

    def test_rank_killed_in_every_attempt_gives_128_plus_signal(self):
        env = stand_in_env(self.tmp, 2, STAND_IN_FAIL_RANK=0, STAND_IN_FAIL_WITH="signal:KILL")
        launcher = Launcher(["--restarts", "1", STAND_IN], env)
        wait_for_ranks(self.tmp, 2)
        go(self.tmp)
        run = launcher.finish()
        check(run.rc == 137, "128+SIGKILL from the last attempt", run)
        check(sum("RANK_EXIT_NONZERO: rank=0 " in l and l.endswith(" signal=SIGKILL") for l in run.err_lines()) == 2,
              "two attempts, both killed", run)
        check(run.err_lines()[-1].startswith("dmlp-launch: exit code 137 after 2 attempts in "), "summary", run)
        assert_all_dead(started_procs(self.tmp))

    def test_launcher_signal_is_never_followed_by_a_restart(self):
        env = stand_in_env(self.tmp, 2, STAND_IN_BACKGROUND=1)
        launcher = Launcher(["--restarts", "2", STAND_IN], env)
        ranks = wait_for_ranks(self.tmp, 2)
        children = wait_for_ranks(self.tmp, 2, "bg-")
        launcher.send(signal.SIGTERM)
        run = launcher.finish()
        check(run.rc == 143, "exit code 128+SIGTERM", run)
        lines = run.err_lines()
        check("dmlp-launch: received SIGTERM from pid %d; send it again to kill at once" % os.getpid() in lines,
              "signal reported", run)
        check(len(summary_line(run, "stopped by SIGTERM from pid %d; 2 ranks" % os.getpid())) == 1, "summary", run)
        check(not any("attempt" in l or "restart" in l for l in lines), "no restart and no attempt talk", run)
        check(lines[-1] == "dmlp-launch: exit code 143", "exit code line as without --restarts", run)
        check(len(started_procs(self.tmp)) == 4, "ranks started once", run)
        assert_all_dead(list(ranks.values()) + list(children.values()))

    def test_launcher_signal_during_a_failure_teardown_cancels_the_restart(self):
        # Ranks ignore SIGTERM and the grace period is long, so the teardown of
        # attempt 1 is still going on when the launcher is told to stop.
        env = stand_in_env(self.tmp, 2, STAND_IN_FAIL_RANK=1, STAND_IN_FAIL_WITH="exit:4", STAND_IN_IGNORE_TERM=1)
        launcher = Launcher(["--restarts", "2", "--grace", "600", STAND_IN], env)
        ranks = wait_for_ranks(self.tmp, 2)
        go(self.tmp)
        launcher.wait_for_stderr("SIGTERM sent to ")
        launcher.send(signal.SIGTERM)
        run = launcher.finish()
        check(run.rc == 4, "the failed rank's code, as without --restarts", run)
        lines = run.err_lines()
        check("dmlp-launch: not restarted: dmlp-launch received SIGTERM from pid %d" % os.getpid() in lines,
              "the summary says why there was no restart", run)
        check(lines[-1] == "dmlp-launch: exit code 4", "exit code line", run)
        check(not any("restarting" in l for l in lines), "no restart", run)
        check(len(started_procs(self.tmp)) == 2, "ranks started once", run)
        assert_all_dead(list(ranks.values()))

    def test_launcher_sigkill_in_a_restarted_attempt_leaves_no_rank(self):
        # The watchdog of attempt 2 covers attempt 2's groups: ranks die by their
        # parent-death signal, their children by that watchdog.
        env = stand_in_env(self.tmp, 2, STAND_IN_FAIL_RANK=1, STAND_IN_FAIL_WITH="exit:3", STAND_IN_FAIL_ONCE=1,
                           STAND_IN_BACKGROUND=1)
        launcher = Launcher(["--restarts", "1", STAND_IN], env)
        first = wait_for_ranks(self.tmp, 2)
        go(self.tmp)
        launcher.wait_for_stderr("attempt 2 of 2: restarting all 2 ranks with RESUME=1")

        def second_attempt():
            ranks = read_pid_files(self.tmp, "rank-")
            return len(ranks) == 2 and all(ranks[r].pid != first[r].pid for r in ranks) and ranks

        second = wait_until(second_attempt, READY_LIMIT, "the pid files of attempt 2")
        check(all(p.alive() for p in second.values()), "attempt 2 running: %s" % second)
        launcher.send(signal.SIGKILL)
        run = launcher.finish()
        check(run.rc == -signal.SIGKILL, "the launcher was SIGKILLed", run)
        started = started_procs(self.tmp)
        check(len(started) == 8, "2 ranks and 2 children per attempt: %d" % len(started), run)
        assert_all_dead(started)

    def test_restarts_zero_is_a_launch_without_restarts(self):
        runs = {}
        for name, extra in (("plain", []), ("zero", ["--restarts", "0"])):
            work = os.path.join(self.tmp, name)
            os.mkdir(work)
            env = stand_in_env(work, 3, STAND_IN_FAIL_RANK=2, STAND_IN_FAIL_WITH="exit:3")
            launcher = Launcher(extra + ["--log-dir", os.path.join(work, "logs"), STAND_IN], env)
            wait_for_ranks(work, 3)
            go(work)
            runs[name] = launcher.finish()
            try:
                check(runs[name].rc == 3, "exit code of the failed rank", runs[name])
                check(len(started_procs(work)) == 3, "no second attempt", runs[name])
                check(all(l.endswith("resume=unset") for l in runs[name].out.splitlines() if " ready " in l),
                      "RESUME never set", runs[name])
                check(sorted(os.listdir(os.path.join(work, "logs"))) ==
                      sorted("rank-%d.%s" % (r, s) for r in range(3) for s in ("stdout", "stderr")),
                      "log file names", runs[name])
                assert_all_dead(started_procs(work))
            finally:
                cleanup(work)
        check(numbers_blurred(runs["plain"].err_lines()) == numbers_blurred(runs["zero"].err_lines()),
              "the same launcher lines with and without --restarts 0:\n%s\n%s"
              % (runs["plain"].err, runs["zero"].err))
        check(not any("attempt" in l for l in runs["zero"].err_lines()), "no attempt talk", runs["zero"])

    def test_restarts_option_is_strict(self):
        for value in ("-1", "x", "1.5", "+1", "2x", ""):
            run = launch(["--restarts", value, "true"], base_env(NUM_PROCESSES=1))
            check(run.rc == 2 and run.err.startswith("dmlp-launch: error: OPTION_INVALID: --restarts='%s' " % value),
                  "--restarts %r refused" % value, run)
        run = launch(["--help"], base_env())
        check("--restarts" in run.out and "RESUME=1" in run.out, "--help explains --restarts", run)

    def test_process_that_left_its_group_is_killed_before_the_restart(self):
        env = stand_in_env(self.tmp, 2, STAND_IN_FAIL_RANK=1, STAND_IN_FAIL_WITH="exit:3", STAND_IN_FAIL_ONCE=1,
                           STAND_IN_ESCAPE=1, STAND_IN_SLEEP_RESUMED="0.2")
        launcher = Launcher(["--restarts", "1", STAND_IN], env)
        ranks = wait_for_ranks(self.tmp, 2)
        escaped = wait_for_ranks(self.tmp, 2, "esc-")
        note_old_procs(self.tmp, list(ranks.values()) + list(escaped.values()))
        go(self.tmp)
        run = launcher.finish()
        check(run.rc == 0, "attempt 2 succeeded", run)
        notice = [l for l in run.err_lines() if l.startswith("dmlp-launch: attempt 1 left 2 process(es) outside its "
                                                             "ranks' process groups (")]
        check(len(notice) == 1 and notice[0].endswith("); SIGKILL before the restart") and
              all(re.search(r"[(,] %d \S+[,)]" % p.pid, notice[0].replace("(", "( ")) for p in escaped.values()),
              "the escaped processes are named before they are killed", run)
        for r in range(2):
            check("old processes alive: none" in stdout_of(run, r),
                  "rank %d of attempt 2 started after the escaped processes were gone" % r, run)
        check(not any(p.alive() for p in escaped.values()), "escaped processes dead", run)


if __name__ == "__main__":
    unittest.main()
