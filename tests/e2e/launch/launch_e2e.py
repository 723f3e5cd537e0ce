#!/usr/bin/env python3
"""End-to-end tests of the real dmlp-launch binary with stand-in ranks.

    launch_e2e.py --launcher PATH CASE     run one case (ctest runs each as its own test)
    launch_e2e.py --launcher PATH --all    run every case

Every wait is bounded; processes are checked and cleaned up by pid (with the
pid's start time, so a recycled pid is never mistaken for a rank), never by
name. No case asserts on timing: a deadline only turns a hang into a failure.
"""

import argparse
import os
import queue
import re
import resource
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
STAND_IN = os.path.join(HERE, "stand_in_rank.sh")
LAUNCHER = None  # set from --launcher
CASES = {}

# Upper bounds, not expectations: a healthy run takes a fraction of these.
RUN_LIMIT = 30.0        # one launcher run
READY_LIMIT = 15.0      # ranks writing their pid files
DEAD_LIMIT = 10.0       # processes gone after the launcher ended
SKIP_CODE = 77          # ctest's SKIP_RETURN_CODE (launch.cmake)


def case(function):
    CASES[function.__name__] = function
    return function


class Failure(Exception):
    pass


class Skip(Exception):
    """A case this machine cannot run (never raised in CI for what CI has)."""


def check(condition, message, run=None):
    if not condition:
        if run is not None:
            message += "\n--- exit code: %r\n--- stdout:\n%s--- stderr:\n%s" % (run.rc, run.out, run.err)
        raise Failure(message)


# ---------------------------------------------------------------- processes

def start_time(pid):
    """Field 22 of /proc/PID/stat, or None when the pid is gone or a zombie."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            text = f.read()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()
    if fields[0] in ("Z", "X"):
        return None
    return fields[19]


class Proc:
    """A pid together with its start time: the same process, not just the same number."""

    def __init__(self, pid, what, started=None):
        self.pid, self.what = pid, what
        self.started = started if started is not None else start_time(pid)

    def alive(self):
        return self.started is not None and start_time(self.pid) == self.started

    def __repr__(self):
        return "%s pid %d" % (self.what, self.pid)


def wait_until(predicate, limit, what):
    deadline = time.monotonic() + limit
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise Failure("gave up after %.0f s waiting for %s" % (limit, what))
        time.sleep(0.02)


def assert_all_dead(procs, limit=DEAD_LIMIT):
    try:
        wait_until(lambda: not any(p.alive() for p in procs), limit, "processes to end")
    except Failure:
        raise Failure("still alive: %s" % [p for p in procs if p.alive()])


def read_pid_files(directory, prefix):
    procs = {}
    for name in os.listdir(directory):
        if name.startswith(prefix) and name.endswith(".pid"):
            rank = int(name[len(prefix):-4])
            with open(os.path.join(directory, name)) as f:
                procs[rank] = Proc(int(f.read()), "%s%d" % (prefix, rank))
    return procs


def wait_for_ranks(directory, count, prefix="rank-"):
    procs = wait_until(lambda: len(read_pid_files(directory, prefix)) >= count and read_pid_files(directory, prefix),
                       READY_LIMIT, "%d %s pid files" % (count, prefix))
    gone = [p for p in procs.values() if p.started is None]
    if gone:
        raise Failure("ended before the test could see them alive: %s" % gone)
    return procs


def go(directory):
    """Lets the failing stand-in rank fail (it waits for this file)."""
    with open(os.path.join(directory, "go"), "w"):
        pass


class Run:
    def __init__(self, rc, out, err):
        self.rc, self.out, self.err = rc, out, err

    def err_lines(self):
        return self.err.splitlines()


def base_env(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("STAND_IN_")}
    env.pop("NUM_PROCESSES", None)
    env.update({k: str(v) for k, v in extra.items()})
    return env


def no_core_dumps():
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


class Launcher:
    """A dmlp-launch started in the background, its output collected by threads."""

    def __init__(self, args, env, launcher=None):
        self.proc = subprocess.Popen([launcher or LAUNCHER] + args, env=env, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     preexec_fn=no_core_dumps)
        self.me = Proc(self.proc.pid, "dmlp-launch")
        self.out, self.err = [], []
        self.err_queue = queue.Queue()
        self.threads = [threading.Thread(target=self._pump, args=(self.proc.stdout, self.out, None)),
                        threading.Thread(target=self._pump, args=(self.proc.stderr, self.err, self.err_queue))]
        for t in self.threads:
            t.daemon = True
            t.start()

    @staticmethod
    def _pump(pipe, lines, notify):
        for raw in iter(pipe.readline, b""):
            line = raw.decode(errors="replace")
            lines.append(line)
            if notify is not None:
                notify.put(line)
        pipe.close()

    def wait_for_stderr(self, text, limit=READY_LIMIT):
        deadline = time.monotonic() + limit
        while True:
            if any(text in line for line in self.err):
                return
            left = deadline - time.monotonic()
            if left <= 0:
                raise Failure("no stderr line with %r; stderr so far:\n%s" % (text, "".join(self.err)))
            try:
                self.err_queue.get(timeout=min(left, 0.2))
            except queue.Empty:
                pass

    def send(self, sig):
        os.kill(self.proc.pid, sig)

    def finish(self, limit=RUN_LIMIT):
        try:
            rc = self.proc.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise Failure("dmlp-launch did not exit within %.0f s; stderr:\n%s" % (limit, "".join(self.err)))
        for t in self.threads:
            t.join(timeout=DEAD_LIMIT)
        return Run(rc, "".join(self.out), "".join(self.err))


def launch(args, env, limit=RUN_LIMIT, launcher=None):
    return Launcher(args, env, launcher).finish(limit)


def started_procs(directory):
    """Every process a stand-in rank started, in any attempt (its started.pids lines)."""
    procs = []
    try:
        with open(os.path.join(directory, "started.pids")) as f:
            lines = f.read().splitlines()
    except FileNotFoundError:
        return procs
    for line in lines:
        fields = line.split()
        if len(fields) == 2:  # one field: it ended before its start time was read
            procs.append(Proc(int(fields[0]), "started", fields[1]))
    return procs


def cleanup(directory):
    """Ends whatever a failed case left behind, by recorded pid (and start time) only."""
    procs = started_procs(directory)
    for prefix in ("rank-", "bg-", "esc-"):
        procs += read_pid_files(directory, prefix).values()
    for proc in procs:
        if proc.alive():
            try:
                os.kill(proc.pid, signal.SIGKILL)
            except OSError:
                pass


def stand_in_env(directory, ranks, **extra):
    return base_env(NUM_PROCESSES=ranks, STAND_IN_DIR=directory, **extra)


def summary_line(run, start):
    return [line for line in run.err_lines() if line.startswith("dmlp-launch: " + start)]


# ---------------------------------------------------------------- cases

@case
def all_succeed(tmp):
    script = 'echo "hello rank=$PROCESS_ID local=$LOCAL_RANK world=$NUM_PROCESSES"; echo "note from $PROCESS_ID" >&2'
    run = launch(["sh", "-c", script], base_env(NUM_PROCESSES=3))
    check(run.rc == 0, "all ranks exit 0 -> exit 0", run)
    expected = ["[rank %d] hello rank=%d local=%d world=3" % (r, r, r) for r in range(3)]
    check(sorted(run.out.splitlines()) == expected, "stdout is exactly the prefixed rank lines", run)
    for r in range(3):
        check("[rank %d] note from %d" % (r, r) in run.err_lines(), "rank stderr goes to stderr", run)
    check(len(summary_line(run, "all 3 ranks exited with code 0 in ")) == 1, "success summary", run)
    check(not any("RANK_EXIT_NONZERO" in line for line in run.err_lines()), "no failure line", run)


@case
def nproc_option(tmp):
    run = launch(["--nproc", "2", "--", "sh", "-c", 'echo "$PROCESS_ID/$NUM_PROCESSES"'], base_env())
    check(run.rc == 0 and sorted(run.out.splitlines()) == ["[rank 0] 0/2", "[rank 1] 1/2"],
          "--nproc sets the world and NUM_PROCESSES of the ranks", run)


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


@case
def first_failure_exit_code(tmp):
    run, ranks = failing_job(tmp, "exit:3", 3, "rc=3")
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


@case
def rank_killed_sigkill(tmp):
    run, _ = failing_job(tmp, "signal:KILL", 137, "signal=SIGKILL")
    check(len(summary_line(run, "rank 1 failed first: killed by signal SIGKILL")) == 1, "summary", run)


@case
def rank_killed_sigsegv(tmp):
    run, _ = failing_job(tmp, "signal:SEGV", 139, "signal=SIGSEGV")
    check(len(summary_line(run, "rank 1 failed first: killed by signal SIGSEGV")) == 1, "summary", run)


@case
def rank_exit_137_is_not_a_signal(tmp):
    run, _ = failing_job(tmp, "exit:137", 137, "rc=137")
    check(len(summary_line(run, "rank 1 failed first: exited with code 137")) == 1, "summary", run)


@case
def grace_period_then_sigkill(tmp):
    env = stand_in_env(tmp, 3, STAND_IN_FAIL_RANK=1, STAND_IN_FAIL_WITH="exit:4", STAND_IN_IGNORE_TERM=1)
    launcher = Launcher(["--grace", "1", STAND_IN], env)
    ranks = wait_for_ranks(tmp, 3)
    go(tmp)
    run = launcher.finish()
    check(run.rc == 4, "exit code of the failed rank", run)
    check("dmlp-launch: SIGKILL sent to 2 rank process group(s): the 1 s grace period is over" in run.err_lines(),
          "SIGKILL after the grace period", run)
    for r in (0, 2):
        want = "dmlp-launch:   rank %d (pid %d): killed by SIGKILL after the 1 s grace period at " % (r, ranks[r].pid)
        check(any(l.startswith(want) for l in run.err_lines()), "rank %d killed after grace" % r, run)
    assert_all_dead(list(ranks.values()))


@case
def grace_zero_kills_at_once(tmp):
    env = stand_in_env(tmp, 2, STAND_IN_FAIL_RANK=1, STAND_IN_FAIL_WITH="exit:6", STAND_IN_IGNORE_TERM=1)
    launcher = Launcher(["--grace", "0", STAND_IN], env)
    ranks = wait_for_ranks(tmp, 2)
    go(tmp)
    run = launcher.finish()
    check(run.rc == 6, "exit code of the failed rank", run)
    check(any(l.startswith("dmlp-launch:   rank 0 (pid %d): killed by SIGKILL at once (--grace 0)" % ranks[0].pid)
              for l in run.err_lines()), "rank 0 killed at once", run)
    check(not any("SIGTERM sent" in l for l in run.err_lines()), "no SIGTERM with --grace 0", run)


@case
def background_child_does_not_survive(tmp):
    env = stand_in_env(tmp, 3, STAND_IN_FAIL_RANK=1, STAND_IN_FAIL_WITH="exit:2", STAND_IN_BACKGROUND=1)
    launcher = Launcher([STAND_IN], env)
    ranks = wait_for_ranks(tmp, 3)
    children = wait_for_ranks(tmp, 3, "bg-")
    go(tmp)
    run = launcher.finish()
    check(run.rc == 2, "exit code of the failed rank", run)
    # Gone by the time the launcher exits (it waits for every group to empty),
    # including the failed rank's own child.
    check(not any(c.alive() for c in children.values()),
          "background children dead when dmlp-launch exits: %s" % [c for c in children.values() if c.alive()], run)
    assert_all_dead(list(ranks.values()))


@case
def background_child_of_successful_rank_is_stopped(tmp):
    script = ('sleep 60 & echo $! > "$STAND_IN_DIR/bg-$PROCESS_ID.tmp"; '
              'mv "$STAND_IN_DIR/bg-$PROCESS_ID.tmp" "$STAND_IN_DIR/bg-$PROCESS_ID.pid"; '
              'n=0; while [ ! -e "$STAND_IN_DIR/go" ] && [ $n -lt 1000 ]; do sleep 0.01; n=$((n+1)); done; echo done')
    launcher = Launcher(["sh", "-c", script], stand_in_env(tmp, 2))
    children = wait_for_ranks(tmp, 2, "bg-")
    go(tmp)
    run = launcher.finish()
    check(run.rc == 0, "ranks exited 0 -> exit 0", run)
    check(not any(c.alive() for c in children.values()),
          "leftover children are gone when dmlp-launch exits: %s" % [c for c in children.values() if c.alive()], run)
    check(len([l for l in run.err_lines() if "exited but left processes in its group" in l]) == 2,
          "leftovers are reported", run)


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


@case
def launcher_sigterm(tmp):
    launcher_signal(tmp, signal.SIGTERM, 143)


@case
def launcher_sigint(tmp):
    launcher_signal(tmp, signal.SIGINT, 130)


@case
def launcher_sighup(tmp):
    launcher_signal(tmp, signal.SIGHUP, 129)


@case
def launcher_sigalrm(tmp):
    # SIGALRM used to kill the launcher with no teardown. It ends the job
    # as SIGTERM does; the ranks get SIGTERM, which they clean up after.
    launcher_signal(tmp, signal.SIGALRM, 142, forwarded=signal.SIGTERM)


@case
def second_signal_kills_at_once(tmp):
    # Ranks ignore SIGTERM and the grace period is long: only the second
    # signal can end this run within RUN_LIMIT.
    env = stand_in_env(tmp, 2, STAND_IN_IGNORE_TERM=1)
    launcher = Launcher(["--grace", "600", STAND_IN], env)
    ranks = wait_for_ranks(tmp, 2)
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


@case
def launcher_sigkill_leaves_no_rank(tmp):
    env = stand_in_env(tmp, 3, STAND_IN_BACKGROUND=1)
    launcher = Launcher([STAND_IN], env)
    ranks = wait_for_ranks(tmp, 3)
    children = wait_for_ranks(tmp, 3, "bg-")
    launcher.send(signal.SIGKILL)
    run = launcher.finish()
    check(run.rc == -signal.SIGKILL, "the launcher was SIGKILLed", run)
    # Ranks die by their parent-death signal; their own children by the watchdog.
    assert_all_dead(list(ranks.values()) + list(children.values()))


@case
def parent_death_stops_the_job_as_sigterm(tmp):
    # A wrapper (run.sh) that dies by SIGKILL cannot pass anything on: with
    # --stop-with-parent its death reaches the launcher as SIGTERM, and the job
    # ends as after a user's SIGTERM instead of running on unwatched.
    wrapper = ('"$0" --grace 5 --stop-with-parent $$ "$1" & echo $! > "$STAND_IN_DIR/launcher.tmp"; '
               'mv "$STAND_IN_DIR/launcher.tmp" "$STAND_IN_DIR/launcher.pid"; wait')
    env = stand_in_env(tmp, 2, STAND_IN_BACKGROUND=1)
    parent = Launcher(["-c", wrapper, LAUNCHER, STAND_IN], env, launcher="/bin/sh")
    ranks = wait_for_ranks(tmp, 2)
    children = wait_for_ranks(tmp, 2, "bg-")
    with open(os.path.join(tmp, "launcher.pid")) as f:
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


@case
def stop_with_parent_refuses_a_pid_that_is_not_the_parent(tmp):
    # The parent may die before the launcher arms the signal: then its pid no
    # longer names the launcher's parent, and no rank is started.
    grandparent = os.getppid()  # alive, and surely not the launcher's parent
    run = launch(["--stop-with-parent", str(grandparent), STAND_IN], stand_in_env(tmp, 2))
    check(run.rc == 125 and run.out == "" and run.err ==
          "dmlp-launch: error: PARENT_GONE: --stop-with-parent %d is not dmlp-launch's parent (that is pid %d); "
          "it died before the job started, or the pid is wrong\n" % (grandparent, os.getpid()), "PARENT_GONE", run)
    check(not read_pid_files(tmp, "rank-"), "no rank was started")
    run = launch(["--stop-with-parent", "x", "true"], base_env(NUM_PROCESSES=1))
    check(run.rc == 2 and run.err == "dmlp-launch: error: OPTION_INVALID: --stop-with-parent='x' is not an integer\n",
          "the pid is a strict number", run)


@case
def sigusr_is_forwarded_only(tmp):
    script = ('trap \'echo "got USR1"; exit 0\' USR1; echo $$ > "$STAND_IN_DIR/rank-$PROCESS_ID.tmp"; '
              'mv "$STAND_IN_DIR/rank-$PROCESS_ID.tmp" "$STAND_IN_DIR/rank-$PROCESS_ID.pid"; '
              'n=0; while [ $n -lt 3000 ]; do sleep 0.01; n=$((n+1)); done; exit 7')
    launcher = Launcher(["sh", "-c", script], stand_in_env(tmp, 2))
    wait_for_ranks(tmp, 2)
    launcher.send(signal.SIGUSR1)
    run = launcher.finish()
    check(run.rc == 0, "SIGUSR1 reached both ranks, which then exited 0", run)
    check(sorted(run.out.splitlines()) == ["[rank 0] got USR1", "[rank 1] got USR1"], "both got it", run)
    check("dmlp-launch: received SIGUSR1 from pid %d; passed on to 2 rank process group(s)" % os.getpid()
          in run.err_lines(), "the launcher says it passed SIGUSR1 on", run)


@case
def num_processes_missing_or_invalid(tmp):
    cases = [
        ({}, "ENV_MISSING: NUM_PROCESSES"),
        ({"NUM_PROCESSES": ""}, "ENV_EMPTY: NUM_PROCESSES"),
        ({"NUM_PROCESSES": "abc"}, "ENV_INVALID: NUM_PROCESSES='abc' is not an integer"),
        ({"NUM_PROCESSES": "0"}, "ENV_INVALID: NUM_PROCESSES='0' must be >= 1"),
        ({"NUM_PROCESSES": "2x"}, "ENV_INVALID: NUM_PROCESSES='2x' is not an integer"),
        ({"NUM_PROCESSES": "-3"}, "ENV_INVALID: NUM_PROCESSES='-3' is not an integer"),
    ]
    for env, message in cases:
        run = launch(["true"], base_env(**env))
        check(run.rc == 2, "configuration error -> exit 2 for %r" % env, run)
        check(run.err == "dmlp-launch: error: %s\n" % message and run.out == "", "exact message %r" % message, run)


@case
def bad_options(tmp):
    cases = [
        (["--bogus", "true"], "USAGE: unknown option --bogus (put -- before a COMMAND that starts with '-')"),
        (["--grace", "x", "true"], "OPTION_INVALID: --grace='x' is not a number of seconds"),
        (["--nnodes", "3", "true"], "CONFIG_INVALID: --nnodes 3 does not divide NUM_PROCESSES 4"),
        (["--nnodes", "2", "--node-rank", "2", "true"], "CONFIG_INVALID: --node-rank 2 must be below --nnodes 2"),
    ]
    for args, message in cases:
        run = launch(args, base_env(NUM_PROCESSES=4))
        check(run.rc == 2 and run.err == "dmlp-launch: error: %s\n" % message, "exit 2 with %r" % message, run)
    run = launch(["--help"], base_env())
    check(run.rc == 0 and "Usage: dmlp-launch [options] [--] [COMMAND [ARGS...]]" in run.out, "--help", run)


@case
def command_not_found_or_not_executable(tmp):
    plain = os.path.join(tmp, "plain.sh")
    with open(plain, "w") as f:
        f.write("#!/bin/sh\necho never\n")
    os.chmod(plain, 0o644)
    no_format = os.path.join(tmp, "no-format")
    with open(no_format, "wb") as f:
        f.write(b"\x00\x01\x02 not a program\n")
    os.chmod(no_format, 0o755)
    bad_interpreter = os.path.join(tmp, "bad-interpreter")
    with open(bad_interpreter, "w") as f:
        f.write("#!/nonexistent/interpreter\n")
    os.chmod(bad_interpreter, 0o755)
    cases = [
        (["--", os.path.join(tmp, "missing")], 127,
         "COMMAND_NOT_FOUND: %s/missing: No such file or directory" % tmp),
        (["dmlp-no-such-command-anywhere"], 127, "COMMAND_NOT_FOUND: dmlp-no-such-command-anywhere: not found in PATH"),
        ([plain], 126, "COMMAND_NOT_EXECUTABLE: %s: Permission denied" % plain),
        ([tmp], 126, "COMMAND_NOT_EXECUTABLE: %s: is a directory" % tmp),
        # These pass the lookup and fail in execve: reported through the child's report pipe.
        ([no_format], 126, "COMMAND_NOT_EXECUTABLE: %s: Exec format error" % no_format),
        ([bad_interpreter], 127, "COMMAND_NOT_FOUND: %s: No such file or directory "
                                 "(exec failed; a missing #! interpreter reads the same)" % bad_interpreter),
    ]
    for args, rc, message in cases:
        run = launch(args, base_env(NUM_PROCESSES=2))
        check(run.rc == rc and run.err == "dmlp-launch: error: %s\n" % message and run.out == "",
              "exit %d with %r" % (rc, message), run)


def install_launcher(tmp):
    """A copy of the launcher in TMP/bin, as an installation has it; returns (bin, copy)."""
    install = os.path.join(tmp, "bin")
    os.mkdir(install)
    copy = os.path.join(install, "dmlp-launch")
    shutil.copy2(LAUNCHER, copy)
    return install, copy


def install_stand_in_trainer(install, script):
    trainer = os.path.join(install, "dmlp-train")
    with open(trainer, "w") as f:
        f.write("#!/bin/sh\n" + script + "\n")
    os.chmod(trainer, 0o755)


@case
def default_command_beside_launcher(tmp):
    install, copy = install_launcher(tmp)
    run = launch([], base_env(NUM_PROCESSES=1), launcher=copy)
    check(run.rc == 127 and run.err == "dmlp-launch: error: COMMAND_NOT_FOUND: %s/dmlp-train: "
          "No such file or directory\n" % install, "no dmlp-train beside it -> 127", run)
    install_stand_in_trainer(install, 'echo "stand-in trainer $PROCESS_ID $*"')
    run = launch([], base_env(NUM_PROCESSES=2), launcher=copy)
    check(run.rc == 0 and sorted(run.out.splitlines()) == ["[rank 0] stand-in trainer 0 ", "[rank 1] stand-in trainer 1 "],
          "runs the dmlp-train installed beside dmlp-launch", run)


PIECES_SCRIPT = r'''
printf 'alpha-' ; printf 'ALPHA-' >&2
sleep 0.05
printf 'beta-'  ; printf 'BETA-' >&2
sleep 0.05
printf 'gamma\nsecond line, ' ; printf 'GAMMA\n' >&2
sleep 0.05
printf 'end\n'
printf 'tail without newline'; printf 'TAIL' >&2
'''


@case
def partial_lines_are_prefixed_whole(tmp):
    run = launch(["sh", "-c", PIECES_SCRIPT], base_env(NUM_PROCESSES=4))
    check(run.rc == 0, "exit 0", run)
    for r in range(4):
        p = "[rank %d] " % r
        check([l for l in run.out.splitlines() if l.startswith(p)] ==
              [p + "alpha-beta-gamma", p + "second line, end", p + "tail without newline"],
              "rank %d stdout lines whole and in order" % r, run)
        check([l for l in run.err_lines() if l.startswith(p)] == [p + "ALPHA-BETA-GAMMA", p + "TAIL"],
              "rank %d stderr lines whole and in order" % r, run)
    check(all(l.startswith("[rank ") for l in run.out.splitlines()), "no unprefixed stdout line", run)
    check(run.out.endswith("\n"), "the final partial line is given a newline", run)


@case
def log_dir_keeps_raw_files(tmp):
    logs = os.path.join(tmp, "logs", "nested")
    # Rank 1 fails, but only after rank 0 has written everything.
    ending = ('if [ $PROCESS_ID = 0 ]; then touch "$STAND_IN_DIR/done-0"; exit 0; fi; n=0; '
              'while [ ! -e "$STAND_IN_DIR/done-0" ] && [ $n -lt 1000 ]; do sleep 0.01; n=$((n+1)); done; exit 1')
    run = launch(["--log-dir", logs, "--show-ranks", "0", "--", "sh", "-c", PIECES_SCRIPT + ending],
                 stand_in_env(tmp, 2))
    check(run.rc == 1, "rank 1 exits 1", run)
    for r in range(2):
        with open(os.path.join(logs, "rank-%d.stdout" % r)) as f:
            check(f.read() == "alpha-beta-gamma\nsecond line, end\ntail without newline",
                  "raw stdout of rank %d, unprefixed, partial last line kept" % r, run)
        with open(os.path.join(logs, "rank-%d.stderr" % r)) as f:
            check(f.read() == "ALPHA-BETA-GAMMA\nTAIL", "raw stderr of rank %d" % r, run)
    check(all(l.startswith("[rank 0] ") for l in run.out.splitlines()), "--show-ranks 0 hides rank 1", run)
    check(sorted(os.listdir(logs)) == ["rank-0.stderr", "rank-0.stdout", "rank-1.stderr", "rank-1.stdout"],
          "one file per rank and stream", run)


@case
def sigstop_sigcont_whole_job(tmp):
    # Each rank works in small steps; the job is frozen twice, longer than
    # its whole work, and must still end as a success.
    script = ('echo $$ > "$STAND_IN_DIR/rank-$PROCESS_ID.tmp"; mv "$STAND_IN_DIR/rank-$PROCESS_ID.tmp" '
              '"$STAND_IN_DIR/rank-$PROCESS_ID.pid"; i=0; while [ $i -lt 10 ]; do sleep 0.05; i=$((i+1)); done; '
              'echo "finished $PROCESS_ID"')
    launcher = Launcher(["--grace", "1", "--", "sh", "-c", script], stand_in_env(tmp, 3))
    ranks = wait_for_ranks(tmp, 3)
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


def process_state(proc):
    try:
        with open("/proc/%d/stat" % proc.pid) as f:
            text = f.read()
    except OSError:
        return None
    return text[text.rindex(")") + 2]


@case
def sigtstp_suspends_the_whole_job(tmp):
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
    launcher = Launcher([sys.executable, "-c", rank], stand_in_env(tmp, 2))
    ranks = wait_for_ranks(tmp, 2)
    launcher.send(signal.SIGTSTP)
    try:
        wait_until(lambda: process_state(launcher.me) == "T" and all(process_state(p) == "T" for p in ranks.values()),
                   READY_LIMIT, "launcher and ranks stopped")
    except Failure as failure:
        raise Failure("%s: launcher %s, ranks %s" % (failure, process_state(launcher.me),
                                                     [process_state(p) for p in ranks.values()]))
    go(tmp)
    launcher.send(signal.SIGCONT)
    run = launcher.finish()
    check(run.rc == 0, "suspended and continued job succeeds", run)
    check(sorted(run.out.splitlines()) == ["[rank 0] finished 0", "[rank 1] finished 1"], "both finished", run)


def launch_under_file_size_limit(tmp, script, limit_bytes):
    """dmlp-launch with stdout and stderr in files and RLIMIT_FSIZE at `limit_bytes`."""
    out_path, err_path = os.path.join(tmp, "launch.out"), os.path.join(tmp, "launch.err")

    def limited():
        no_core_dumps()
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit_bytes, limit_bytes))

    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        proc = subprocess.Popen([LAUNCHER, "sh", "-c", script], env=base_env(NUM_PROCESSES=2),
                                stdin=subprocess.DEVNULL, stdout=out, stderr=err, preexec_fn=limited)
        try:
            rc = proc.wait(timeout=RUN_LIMIT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise Failure("dmlp-launch did not exit within %.0f s" % RUN_LIMIT)
    with open(out_path, "rb") as out, open(err_path, "rb") as err:
        return Run(rc, out.read().decode(errors="replace"), err.read().decode(errors="replace"))


# Each rank prints 20,000 lines (about 400 KB); the launcher's stdout may hold 64 KiB.
LOUD_RANKS = 'yes "a line of rank $PROCESS_ID" | head -n 20000'


@case
def output_past_file_size_limit_is_reported_not_fatal(tmp):
    run = launch_under_file_size_limit(tmp, LOUD_RANKS, 64 << 10)
    # Without SIGXFSZ ignored the launcher died of it: rc -25, summary cut.
    check(run.rc == 125, "the ranks succeeded but console lines were lost: the launcher's own error", run)
    check(len(run.out) <= 64 << 10, "stdout stopped at the limit", run)
    check(len(summary_line(run, "all 2 ranks exited with code 0 in ")) == 1, "the summary is on stderr", run)
    check(run.err_lines()[-1] == "dmlp-launch: error: OUTPUT_WRITE_FAILED: stdout: File too large; "
                                 "later console lines were lost (--log-dir keeps every rank's)",
          "the write error is the last line", run)


@case
def output_past_file_size_limit_keeps_a_failed_rank_code(tmp):
    run = launch_under_file_size_limit(tmp, LOUD_RANKS + '; [ $PROCESS_ID = 1 ] && exit 3; exit 0', 64 << 10)
    check(run.rc == 3, "a failed rank's code wins over the lost console lines", run)
    check(any(l.startswith("dmlp-launch: RANK_EXIT_NONZERO: rank=1 ") for l in run.err_lines()),
          "the failure is reported", run)
    check("dmlp-launch: error: OUTPUT_WRITE_FAILED: stdout: File too large" in run.err, "and the write error", run)


def zombie(proc):
    return process_state(proc) == "Z"


@case
def first_failure_is_the_first_to_die_when_reaped_together(tmp):
    # Rank 1 dies of SIGXFSZ (past `ulimit -f`), then rank 0 fails as its
    # peer would; the launcher is stopped meanwhile, as a loaded host may keep
    # it from running, so one wakeup reaps both. waitpid() hands out rank 0
    # first (the older child): the first to die must still be the one named.
    script = ('d=$STAND_IN_DIR; r=$PROCESS_ID; echo $$ > "$d/rank-$r.tmp"; mv "$d/rank-$r.tmp" "$d/rank-$r.pid"; '
              'n=0; while [ ! -e "$d/go-$r" ] && [ $n -lt 2000 ]; do sleep 0.01; n=$((n+1)); done; '
              'if [ "$r" = 1 ]; then ulimit -f 1; printf "%8192s" x > "$d/past-the-limit"; exit 99; fi; '
              'echo "rank 0 lost its peer" >&2; exit 3')
    launcher = Launcher(["--", "sh", "-c", script], stand_in_env(tmp, 2))
    ranks = wait_for_ranks(tmp, 2)
    launcher.send(signal.SIGSTOP)
    try:
        wait_until(lambda: process_state(launcher.me) == "T", READY_LIMIT, "the launcher to stop")
        for r in (1, 0):
            with open(os.path.join(tmp, "go-%d" % r), "w"):
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


def without_proc(command, env):
    """Runs `command` in a mount namespace where /proc is an empty tmpfs."""
    usable = subprocess.run(["unshare", "--mount", "--fork", "true"], capture_output=True, text=True)
    if usable.returncode != 0:
        why = "unshare --mount fails here: %s" % usable.stderr.strip()
        # CI runs as root: a skip there would hide the case.
        if os.environ.get("CI"):
            raise Failure(why)
        raise Skip(why)
    script = 'mount -t tmpfs none /proc && exec "$@"'
    done = subprocess.run(["unshare", "--mount", "--fork", "sh", "-c", script, "sh"] + command, env=env,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=RUN_LIMIT)
    return Run(done.returncode, done.stdout, done.stderr)


@case
def default_command_is_found_without_proc(tmp):
    # No /proc (a chroot, a container that lacks it): /proc/self/exe cannot say
    # where dmlp-launch is, argv[0] can.
    install, copy = install_launcher(tmp)
    install_stand_in_trainer(install, 'echo "stand-in trainer $PROCESS_ID"')
    expected = ["[rank 0] stand-in trainer 0", "[rank 1] stand-in trainer 1"]
    by_path = without_proc([copy], base_env(NUM_PROCESSES=2))
    check(by_path.rc == 0 and sorted(by_path.out.splitlines()) == expected, "started by its path", by_path)
    env = base_env(NUM_PROCESSES=2)
    env["PATH"] = install + os.pathsep + env.get("PATH", "/usr/bin:/bin")
    by_name = without_proc(["dmlp-launch"], env)
    check(by_name.rc == 0 and sorted(by_name.out.splitlines()) == expected, "started by its name in PATH", by_name)
    lost = without_proc(["bash", "-c", 'exec -a dmlp-launch-elsewhere "$0"', copy], base_env(NUM_PROCESSES=2))
    check(lost.rc == 127 and lost.err ==
          "dmlp-launch: error: COMMAND_NOT_FOUND: dmlp-train: dmlp-launch cannot tell its own directory "
          "(/proc/self/exe: No such file or directory; argv[0] 'dmlp-launch-elsewhere' is not found either); "
          "give the trainer as COMMAND: dmlp-launch [options] -- /path/to/dmlp-train\n", "the way out is named", lost)


@case
def two_nodes_on_one_host(tmp):
    script = 'echo "PROCESS_ID=$PROCESS_ID LOCAL_RANK=$LOCAL_RANK NUM_PROCESSES=$NUM_PROCESSES"'
    env = base_env(NUM_PROCESSES=4)
    nodes = [Launcher(["--nnodes", "2", "--node-rank", str(j), "--", "sh", "-c", script], env) for j in (0, 1)]
    runs = [n.finish() for n in nodes]
    for j, run in enumerate(runs):
        check(run.rc == 0, "node %d exits 0" % j, run)
        expected = ["[rank %d] PROCESS_ID=%d LOCAL_RANK=%d NUM_PROCESSES=4" % (2 * j + l, 2 * j + l, l) for l in (0, 1)]
        check(sorted(run.out.splitlines()) == expected, "node %d starts ranks %d..%d" % (j, 2 * j, 2 * j + 1), run)
        check(len(summary_line(run, "all 2 ranks of this node (of 4) exited with code 0")) == 1, "summary", run)


@case
def stdin_is_dev_null_and_own_process_group(tmp):
    script = ('read line; echo "read=$? pgid_is_pid=$([ "$(ps -o pgid= -p $$ | tr -d " ")" = "$$" ] && echo yes || echo no)"; '
              'ls -l /proc/$$/fd/0 | sed "s/.*-> //"')
    run = launch(["sh", "-c", script], base_env(NUM_PROCESSES=1))
    check(run.rc == 0, "exit 0", run)
    check(run.out.splitlines() == ["[rank 0] read=1 pgid_is_pid=yes", "[rank 0] /dev/null"],
          "stdin is /dev/null (read hits EOF) and the rank leads its own group", run)


# ---------------------------------------------------------------- --restarts

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


@case
def restart_after_a_failure_resumes_every_rank(tmp):
    logs = os.path.join(tmp, "logs")
    env = stand_in_env(tmp, 3, STAND_IN_FAIL_RANK=1, STAND_IN_FAIL_WITH="exit:3", STAND_IN_FAIL_ONCE=1,
                       STAND_IN_BACKGROUND=1, STAND_IN_SLEEP_RESUMED="0.2")
    launcher = Launcher(["--restarts", "2", "--grace", "5", "--log-dir", logs, STAND_IN], env)
    ranks = wait_for_ranks(tmp, 3)
    children = wait_for_ranks(tmp, 3, "bg-")
    first_attempt = list(ranks.values()) + list(children.values())
    note_old_procs(tmp, first_attempt)
    go(tmp)
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
    started = started_procs(tmp)
    check(len(started) == 12, "3 ranks and 3 children per attempt, two attempts: %d" % len(started), run)
    check(not any(p.alive() for p in started), "nothing of either attempt outlives dmlp-launch: %s"
          % [p for p in started if p.alive()], run)


@case
def rank_that_always_fails_uses_every_restart(tmp):
    logs = os.path.join(tmp, "logs")
    # Not 4 or 5: those are divergences, not restarted without --restart-on-divergence.
    env = stand_in_env(tmp, 2, STAND_IN_FAIL_RANK=1, STAND_IN_FAIL_WITH="exit:6")
    launcher = Launcher(["--restarts", "2", "--log-dir", logs, STAND_IN], env)
    wait_for_ranks(tmp, 2)
    go(tmp)
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
    started = started_procs(tmp)
    check(len(started) == 6, "two ranks per attempt, three attempts: %d" % len(started), run)
    assert_all_dead(started)


@case
def rank_killed_in_every_attempt_gives_128_plus_signal(tmp):
    env = stand_in_env(tmp, 2, STAND_IN_FAIL_RANK=0, STAND_IN_FAIL_WITH="signal:KILL")
    launcher = Launcher(["--restarts", "1", STAND_IN], env)
    wait_for_ranks(tmp, 2)
    go(tmp)
    run = launcher.finish()
    check(run.rc == 137, "128+SIGKILL from the last attempt", run)
    check(sum("RANK_EXIT_NONZERO: rank=0 " in l and l.endswith(" signal=SIGKILL") for l in run.err_lines()) == 2,
          "two attempts, both killed", run)
    check(run.err_lines()[-1].startswith("dmlp-launch: exit code 137 after 2 attempts in "), "summary", run)
    assert_all_dead(started_procs(tmp))


@case
def launcher_signal_is_never_followed_by_a_restart(tmp):
    env = stand_in_env(tmp, 2, STAND_IN_BACKGROUND=1)
    launcher = Launcher(["--restarts", "2", STAND_IN], env)
    ranks = wait_for_ranks(tmp, 2)
    children = wait_for_ranks(tmp, 2, "bg-")
    launcher.send(signal.SIGTERM)
    run = launcher.finish()
    check(run.rc == 143, "exit code 128+SIGTERM", run)
    lines = run.err_lines()
    check("dmlp-launch: received SIGTERM from pid %d; send it again to kill at once" % os.getpid() in lines,
          "signal reported", run)
    check(len(summary_line(run, "stopped by SIGTERM from pid %d; 2 ranks" % os.getpid())) == 1, "summary", run)
    check(not any("attempt" in l or "restart" in l for l in lines), "no restart and no attempt talk", run)
    check(lines[-1] == "dmlp-launch: exit code 143", "exit code line as without --restarts", run)
    check(len(started_procs(tmp)) == 4, "ranks started once", run)
    assert_all_dead(list(ranks.values()) + list(children.values()))


@case
def launcher_signal_during_a_failure_teardown_cancels_the_restart(tmp):
    # Ranks ignore SIGTERM and the grace period is long, so the teardown of
    # attempt 1 is still going on when the launcher is told to stop.
    env = stand_in_env(tmp, 2, STAND_IN_FAIL_RANK=1, STAND_IN_FAIL_WITH="exit:4", STAND_IN_IGNORE_TERM=1)
    launcher = Launcher(["--restarts", "2", "--grace", "600", STAND_IN], env)
    ranks = wait_for_ranks(tmp, 2)
    go(tmp)
    launcher.wait_for_stderr("SIGTERM sent to ")
    launcher.send(signal.SIGTERM)
    run = launcher.finish()
    check(run.rc == 4, "the failed rank's code, as without --restarts", run)
    lines = run.err_lines()
    check("dmlp-launch: not restarted: dmlp-launch received SIGTERM from pid %d" % os.getpid() in lines,
          "the summary says why there was no restart", run)
    check(lines[-1] == "dmlp-launch: exit code 4", "exit code line", run)
    check(not any("restarting" in l for l in lines), "no restart", run)
    check(len(started_procs(tmp)) == 2, "ranks started once", run)
    assert_all_dead(list(ranks.values()))


@case
def launcher_sigkill_in_a_restarted_attempt_leaves_no_rank(tmp):
    # The watchdog of attempt 2 covers attempt 2's groups: ranks die by their
    # parent-death signal, their children by that watchdog.
    env = stand_in_env(tmp, 2, STAND_IN_FAIL_RANK=1, STAND_IN_FAIL_WITH="exit:3", STAND_IN_FAIL_ONCE=1,
                       STAND_IN_BACKGROUND=1)
    launcher = Launcher(["--restarts", "1", STAND_IN], env)
    first = wait_for_ranks(tmp, 2)
    go(tmp)
    launcher.wait_for_stderr("attempt 2 of 2: restarting all 2 ranks with RESUME=1")

    def second_attempt():
        ranks = read_pid_files(tmp, "rank-")
        return len(ranks) == 2 and all(ranks[r].pid != first[r].pid for r in ranks) and ranks

    second = wait_until(second_attempt, READY_LIMIT, "the pid files of attempt 2")
    check(all(p.alive() for p in second.values()), "attempt 2 running: %s" % second)
    launcher.send(signal.SIGKILL)
    run = launcher.finish()
    check(run.rc == -signal.SIGKILL, "the launcher was SIGKILLed", run)
    started = started_procs(tmp)
    check(len(started) == 8, "2 ranks and 2 children per attempt: %d" % len(started), run)
    assert_all_dead(started)


def numbers_blurred(lines):
    return [re.sub(r"\d+(\.\d+)?", "#", l) for l in lines if l.startswith("dmlp-launch: ")]


@case
def restarts_zero_is_a_launch_without_restarts(tmp):
    runs = {}
    for name, extra in (("plain", []), ("zero", ["--restarts", "0"])):
        work = os.path.join(tmp, name)
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


@case
def restarts_option_is_strict(tmp):
    for value in ("-1", "x", "1.5", "+1", "2x", ""):
        run = launch(["--restarts", value, "true"], base_env(NUM_PROCESSES=1))
        check(run.rc == 2 and run.err.startswith("dmlp-launch: error: OPTION_INVALID: --restarts='%s' " % value),
              "--restarts %r refused" % value, run)
    run = launch(["--help"], base_env())
    check("--restarts" in run.out and "RESUME=1" in run.out, "--help explains --restarts", run)


@case
def process_that_left_its_group_is_killed_before_the_restart(tmp):
    env = stand_in_env(tmp, 2, STAND_IN_FAIL_RANK=1, STAND_IN_FAIL_WITH="exit:3", STAND_IN_FAIL_ONCE=1,
                       STAND_IN_ESCAPE=1, STAND_IN_SLEEP_RESUMED="0.2")
    launcher = Launcher(["--restarts", "1", STAND_IN], env)
    ranks = wait_for_ranks(tmp, 2)
    escaped = wait_for_ranks(tmp, 2, "esc-")
    note_old_procs(tmp, list(ranks.values()) + list(escaped.values()))
    go(tmp)
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


# ---------------------------------------------------------------- divergence (exit code 4 / 5)

L4 = "NVIDIA L4 GPU-8f3c2a1e-0011-2233-4455-66778899aaff PCI 0000:3B:00.0"


def diverged_line(step, rank, label):
    """The line dmlp-train prints (every rank the same) when rank `rank` diverged at `step`."""
    return ("dmlp-train: error: RANK_DIVERGED: step=%d rank(s)=%d digest=ab12 majority=cd34 "
            "device(s)=rank %d: %s" % (step, rank, rank, label))


@case
def divergence_is_not_restarted_without_the_flag(tmp):
    env = stand_in_env(tmp, 2, STAND_IN_FAIL_RANK=1, STAND_IN_FAIL_WITH="exit:4",
                       STAND_IN_FAIL_LINE=diverged_line(7, 1, "host h1 " + L4))
    launcher = Launcher(["--restarts", "2", STAND_IN], env)
    ranks = wait_for_ranks(tmp, 2)
    go(tmp)
    run = launcher.finish()
    check(run.rc == 4, "the diverged rank's code", run)
    lines = run.err_lines()
    check("dmlp-launch: not restarted: rank 1 diverged at step 7 (RANK_DIVERGED); a restart replays the "
          "same steps \u2014 pass --restart-on-divergence to retry" in lines, "why there was no restart", run)
    check("dmlp-launch:   rank 1 diverged at step 7 (RANK_DIVERGED), on host h1 (%s)" % L4 in lines,
          "where it diverged, under the first summary line", run)
    check(lines[-1] == "dmlp-launch: exit code 4", "one attempt: the summary of a launch without restarts", run)
    check(not any("restarting" in l or "attempt" in l for l in lines), "no restart", run)
    check(len(started_procs(tmp)) == 2, "ranks started once", run)
    assert_all_dead(list(ranks.values()))


@case
def repeated_divergence_names_the_suspect_host(tmp):
    # The label names no host: the launcher's own host name stands in.
    env = stand_in_env(tmp, 2, STAND_IN_FAIL_RANK=1, STAND_IN_FAIL_WITH="exit:4",
                       STAND_IN_FAIL_LINE=diverged_line(7, 1, L4))
    launcher = Launcher(["--restarts", "2", "--restart-on-divergence", STAND_IN], env)
    wait_for_ranks(tmp, 2)
    go(tmp)
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
    check(len(started_procs(tmp)) == 6, "two ranks per attempt, three attempts", run)
    assert_all_dead(started_procs(tmp))


@case
def divergence_at_another_step_is_no_suspect(tmp):
    env = stand_in_env(tmp, 2, STAND_IN_FAIL_RANK=1, STAND_IN_FAIL_WITH="exit:4",
                       STAND_IN_FAIL_LINE=diverged_line(7, 1, "host h1 " + L4),
                       STAND_IN_FAIL_LINE_RESUMED=diverged_line(9, 1, "host h1 " + L4))
    launcher = Launcher(["--restarts", "1", "--restart-on-divergence", STAND_IN], env)
    wait_for_ranks(tmp, 2)
    go(tmp)
    run = launcher.finish()
    check(run.rc == 4, "exit code 4", run)
    lines = run.err_lines()
    check(not any("hardware suspect:" in l for l in lines), "no suspect", run)
    check("dmlp-launch: attempt 2: rank 1 diverged at step 9 (RANK_DIVERGED), not as in attempt 1 (rank 1 "
          "diverged at step 7): not a hardware suspect" in lines, "said to be no repeat", run)
    check(lines[-1].startswith("dmlp-launch: exit code 4 after 2 attempts in "), "exit code line", run)
    assert_all_dead(started_procs(tmp))


@case
def shard_audit_of_a_hidden_rank_is_read_too(tmp):
    line = ("dmlp-train: error: SHARD_AUDIT_FAILED: step=12 update=3 shard=1 ranks=0,1 digests=aa,bb "
            "device(s)=rank 0: host h1 cpu Intel(R) Xeon(R); rank 1: host h2 cpu AMD EPYC")
    env = stand_in_env(tmp, 2, STAND_IN_FAIL_RANK=1, STAND_IN_FAIL_WITH="exit:5", STAND_IN_FAIL_LINE=line)
    launcher = Launcher(["--restarts", "1", "--show-ranks", "0", STAND_IN], env)
    wait_for_ranks(tmp, 2)
    go(tmp)
    run = launcher.finish()
    check(run.rc == 5, "the failed rank's code", run)
    lines = run.err_lines()
    check("dmlp-launch:   ranks 0,1 failed the shard audit at step 12 (SHARD_AUDIT_FAILED), on rank 0: host h1 "
          "(cpu Intel(R) Xeon(R)); rank 1: host h2 (cpu AMD EPYC)" in lines, "the audit line of a hidden rank", run)
    check(any(l.startswith("dmlp-launch: not restarted: ranks 0,1 failed the shard audit at step 12") for l in lines),
          "not restarted", run)
    check(len(started_procs(tmp)) == 2, "ranks started once", run)
    assert_all_dead(started_procs(tmp))


# ---------------------------------------------------------------- driver

def run_case(name):
    tmp = tempfile.mkdtemp(prefix="dmlp-launch-e2e-")
    try:
        CASES[name](tmp)
        print("PASS %s" % name)
        return True
    except Skip as skip:
        print("SKIP %s: %s" % (name, skip))
        return None
    except Exception:  # report every kind of failure the same way
        print("FAIL %s" % name)
        traceback.print_exc(file=sys.stdout)
        return False
    finally:
        cleanup(tmp)
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    global LAUNCHER
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--launcher", help="the dmlp-launch binary under test")
    parser.add_argument("--all", action="store_true")
    parser.add_argument("--list", action="store_true")
    parser.add_argument("cases", nargs="*")
    args = parser.parse_args()
    if args.list:
        print("\n".join(CASES))
        return 0
    if not args.launcher:
        parser.error("--launcher is required")
    LAUNCHER = os.path.abspath(args.launcher)
    names = list(CASES) if args.all else args.cases
    unknown = [n for n in names if n not in CASES]
    if unknown or not names:
        parser.error("unknown or no cases: %s" % unknown)
    results = [run_case(n) for n in names]
    if any(result is False for result in results):
        return 1
    return SKIP_CODE if all(result is None for result in results) else 0


if __name__ == "__main__":
    sys.exit(main())
