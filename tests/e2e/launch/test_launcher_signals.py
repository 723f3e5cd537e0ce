"""Signals sent to dmlp-launch: SIGTERM, SIGINT, SIGHUP and SIGALRM end the
job (a second signal at once), SIGKILL and its parent's death leave no rank,
SIGUSR1 is passed on, SIGSTOP/SIGTSTP and SIGCONT freeze and thaw the whole job."""

import os
import signal
import sys
import time
import unittest

from launch_support import (Failure, LAUNCHER, LaunchTestCase, Launcher, Proc, READY_LIMIT,
                            STAND_IN, assert_all_dead, base_env, check, go, launch, process_state,
                            read_pid_files, stand_in_env, summary_line, wait_for_ranks, wait_until)


def launcher_signal(tmp, sig, expected_rc, forwarded=None):
    # A shell's background child ignores SIGINT (POSIX), so with SIGINT the
    # groups only empty at the SIGKILL after --grace.
    env = stand_in_env(tmp, 2, STAND_IN_BACKGROUND=1)
    launcher = Launcher(["--grace", "1", STAND_IN], env)
    ranks = wait_for_ranks(tmp, 2)
    children = wait_for_ranks(tmp, 2, "bg-")
    launcher.send(sig)
    run = launcher.finish()
    name = signal.Signals(sig).name
    sent = signal.Signals(forwarded or sig).name
    check(run.rc == expected_rc, "exit code 128+%s" % name, run)
    check("dmlp-launch: received %s from pid %d; send it again to kill at once" % (name, os.getpid())
          in run.err_lines(), "the signal and its sender are reported", run)
    check(any(l.startswith("dmlp-launch: stopped by %s" % name) for l in run.err_lines()), "summary", run)
    check(not any("RANK_EXIT_NONZERO" in l for l in run.err_lines()), "no rank is blamed", run)
    for r, proc in ranks.items():
        want = "dmlp-launch:   rank %d (pid %d): torn down by %s (killed by signal %s)" % (r, proc.pid, sent, sent)
        check(any(l.startswith(want) for l in run.err_lines()), "rank %d got the forwarded %s" % (r, sent), run)
    assert_all_dead(list(ranks.values()) + list(children.values()))


class LauncherSignals(LaunchTestCase):
    def test_launcher_sigterm(self):
        launcher_signal(self.tmp, signal.SIGTERM, 143)

    def test_launcher_sigint(self):
        launcher_signal(self.tmp, signal.SIGINT, 130)

    def test_launcher_sighup(self):
        launcher_signal(self.tmp, signal.SIGHUP, 129)

    def test_launcher_sigalrm(self):
        # SIGALRM used to kill the launcher with no teardown. It ends the job
        # as SIGTERM does; the ranks get SIGTERM, which they clean up after.
        launcher_signal(self.tmp, signal.SIGALRM, 142, forwarded=signal.SIGTERM)

    def test_second_signal_kills_at_once(self):
        # Ranks ignore SIGTERM and the grace period is long: only the second
        # signal can end this run within RUN_LIMIT.
        env = stand_in_env(self.tmp, 2, STAND_IN_IGNORE_TERM=1)
        launcher = Launcher(["--grace", "600", STAND_IN], env)
        ranks = wait_for_ranks(self.tmp, 2)
        launcher.send(signal.SIGTERM)
        launcher.wait_for_stderr("SIGTERM sent to 2 rank process group(s)")
        check(all(p.alive() for p in ranks.values()), "ranks ignore the first SIGTERM")
        launcher.send(signal.SIGTERM)
        run = launcher.finish()
        check(run.rc == 143, "exit code 128+SIGTERM", run)
        check("dmlp-launch: SIGKILL sent to 2 rank process group(s): second signal" in run.err_lines(), "SIGKILL", run)
        for r, proc in ranks.items():
            want = "dmlp-launch:   rank %d (pid %d): killed by SIGKILL at once (second signal)" % (r, proc.pid)
            check(any(l.startswith(want) for l in run.err_lines()), "rank %d killed at once" % r, run)
        assert_all_dead(list(ranks.values()))

    def test_launcher_sigkill_leaves_no_rank(self):
        env = stand_in_env(self.tmp, 3, STAND_IN_BACKGROUND=1)
        launcher = Launcher([STAND_IN], env)
        ranks = wait_for_ranks(self.tmp, 3)
        children = wait_for_ranks(self.tmp, 3, "bg-")
        launcher.send(signal.SIGKILL)
        run = launcher.finish()
        check(run.rc == -signal.SIGKILL, "the launcher was SIGKILLed", run)
        # Ranks die by their parent-death signal; their own children by the watchdog.
        assert_all_dead(list(ranks.values()) + list(children.values()))

    def test_parent_death_stops_the_job_as_sigterm(self):
        # A wrapper (run.sh) that dies by SIGKILL cannot pass anything on: with
        # --stop-with-parent its death reaches the launcher as SIGTERM, and the job
        # ends as after a user's SIGTERM instead of running on unwatched.
        wrapper = ('"$0" --grace 5 --stop-with-parent $$ "$1" & echo $! > "$STAND_IN_DIR/launcher.tmp"; '
                   'mv "$STAND_IN_DIR/launcher.tmp" "$STAND_IN_DIR/launcher.pid"; wait')
        env = stand_in_env(self.tmp, 2, STAND_IN_BACKGROUND=1)
        parent = Launcher(["-c", wrapper, LAUNCHER, STAND_IN], env, launcher="/bin/sh")
        ranks = wait_for_ranks(self.tmp, 2)
        children = wait_for_ranks(self.tmp, 2, "bg-")
        with open(os.path.join(self.tmp, "launcher.pid")) as f:
            launcher = Proc(int(f.read()), "dmlp-launch")
        check(launcher.alive(), "the launcher runs under the wrapper")
        parent.send(signal.SIGKILL)
        assert_all_dead([launcher])  # without the parent-death signal it would wait for its ranks' 60 s
        run = parent.finish()
        check(run.rc == -signal.SIGKILL, "the wrapper was SIGKILLed", run)
        check("dmlp-launch: received SIGTERM (the parent-death signal: pid %d died); send it again to kill at once"
              % parent.proc.pid in run.err_lines(), "the launcher says why it stops", run)
        for r, proc in ranks.items():
            want = "dmlp-launch:   rank %d (pid %d): torn down by SIGTERM (killed by signal SIGTERM)" % (r, proc.pid)
            check(any(l.startswith(want) for l in run.err_lines()), "rank %d got SIGTERM" % r, run)
        check(any(l.startswith("dmlp-launch: stopped by SIGTERM") for l in run.err_lines()), "summary", run)
        assert_all_dead([launcher] + list(ranks.values()) + list(children.values()))

    def test_stop_with_parent_refuses_a_pid_that_is_not_the_parent(self):
        # The parent may die before the launcher arms the signal: then its pid no
        # longer names the launcher's parent, and no rank is started.
        grandparent = os.getppid()  # alive, and surely not the launcher's parent
        run = launch(["--stop-with-parent", str(grandparent), STAND_IN], stand_in_env(self.tmp, 2))
        check(run.rc == 125 and run.out == "" and run.err ==
              "dmlp-launch: error: PARENT_GONE: --stop-with-parent %d is not dmlp-launch's parent (that is pid %d); "
              "it died before the job started, or the pid is wrong\n" % (grandparent, os.getpid()), "PARENT_GONE", run)
        check(not read_pid_files(self.tmp, "rank-"), "no rank was started")
        run = launch(["--stop-with-parent", "x", "true"], base_env(NUM_PROCESSES=1))
        check(run.rc == 2 and run.err == "dmlp-launch: error: OPTION_INVALID: --stop-with-parent='x' is not an integer\n",
              "the pid is a strict number", run)

    def test_sigusr_is_forwarded_only(self):
        script = ('trap \'echo "got USR1"; exit 0\' USR1; echo $$ > "$STAND_IN_DIR/rank-$PROCESS_ID.tmp"; '
                  'mv "$STAND_IN_DIR/rank-$PROCESS_ID.tmp" "$STAND_IN_DIR/rank-$PROCESS_ID.pid"; '
                  'n=0; while [ $n -lt 3000 ]; do sleep 0.01; n=$((n+1)); done; exit 7')
        launcher = Launcher(["sh", "-c", script], stand_in_env(self.tmp, 2))
        wait_for_ranks(self.tmp, 2)
        launcher.send(signal.SIGUSR1)
        run = launcher.finish()
        check(run.rc == 0, "SIGUSR1 reached both ranks, which then exited 0", run)
        check(sorted(run.out.splitlines()) == ["[rank 0] got USR1", "[rank 1] got USR1"], "both got it", run)
        check("dmlp-launch: received SIGUSR1 from pid %d; passed on to 2 rank process group(s)" % os.getpid()
              in run.err_lines(), "the launcher says it passed SIGUSR1 on", run)

    def test_sigstop_sigcont_whole_job(self):
        # Each rank works in small steps; the job is frozen twice, longer than
        # its whole work, and must still end as a success.
        script = ('echo $$ > "$STAND_IN_DIR/rank-$PROCESS_ID.tmp"; mv "$STAND_IN_DIR/rank-$PROCESS_ID.tmp" '
                  '"$STAND_IN_DIR/rank-$PROCESS_ID.pid"; i=0; while [ $i -lt 10 ]; do sleep 0.05; i=$((i+1)); done; '
                  'echo "finished $PROCESS_ID"')
        launcher = Launcher(["--grace", "1", "--", "sh", "-c", script], stand_in_env(self.tmp, 3))
        ranks = wait_for_ranks(self.tmp, 3)
        groups = [p.pid for p in ranks.values()]

        def freeze():
            launcher.send(signal.SIGSTOP)
            for g in groups:
                try:
                    os.killpg(g, signal.SIGSTOP)
                except ProcessLookupError:
                    pass

        def thaw():
            for g in groups:
                try:
                    os.killpg(g, signal.SIGCONT)
                except ProcessLookupError:
                    pass
            launcher.send(signal.SIGCONT)

        freeze()
        time.sleep(1.5)  # frozen longer than --grace and than the ranks' own work
        thaw()
        # Second freeze: the launcher alone, while the ranks finish underneath it.
        launcher.send(signal.SIGSTOP)
        wait_until(lambda: not any(p.alive() for p in ranks.values()), READY_LIMIT, "ranks to finish")
        time.sleep(0.2)
        launcher.send(signal.SIGCONT)
        run = launcher.finish()
        check(run.rc == 0, "a frozen and restored job still succeeds", run)
        check(sorted(run.out.splitlines()) == ["[rank %d] finished %d" % (r, r) for r in range(3)], "all finished", run)
        check(len(summary_line(run, "all 3 ranks exited with code 0")) == 1, "success summary", run)

    def test_sigtstp_suspends_the_whole_job(self):
        # Ranks have their own process groups, so a terminal's Ctrl-Z reaches only
        # the launcher; it must stop the ranks with itself and continue them after.
        # The ranks are single processes (a shell forking `sleep` could be caught
        # stopped mid-vfork and show state D instead of T).
        rank = ("import os, time\n"
                "d, r = os.environ['STAND_IN_DIR'], os.environ['PROCESS_ID']\n"
                "open(f'{d}/rank-{r}.tmp', 'w').write(str(os.getpid()))\n"
                "os.rename(f'{d}/rank-{r}.tmp', f'{d}/rank-{r}.pid')\n"
                "for _ in range(1000):\n"
                "    if os.path.exists(f'{d}/go'): break\n"
                "    time.sleep(0.01)\n"
                "print('finished', r)\n")
        launcher = Launcher([sys.executable, "-c", rank], stand_in_env(self.tmp, 2))
        ranks = wait_for_ranks(self.tmp, 2)
        launcher.send(signal.SIGTSTP)
        try:
            wait_until(lambda: process_state(launcher.me) == "T" and all(process_state(p) == "T" for p in ranks.values()),
                       READY_LIMIT, "launcher and ranks stopped")
        except Failure as failure:
            raise Failure("%s: launcher %s, ranks %s" % (failure, process_state(launcher.me),
                                                         [process_state(p) for p in ranks.values()]))
        go(self.tmp)
        launcher.send(signal.SIGCONT)
        run = launcher.finish()
        check(run.rc == 0, "suspended and continued job succeeds", run)
        check(sorted(run.out.splitlines()) == ["[rank 0] finished 0", "[rank 1] finished 1"], "both finished", run)


if __name__ == "__main__":
    unittest.main()
