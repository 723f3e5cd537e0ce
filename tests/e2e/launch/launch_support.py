"""What the dmlp-launch end-to-end tests share: the real binary
(DMLP_BIN_DIR/dmlp-launch) run in the background with stand-in ranks
(stand_in_rank.sh), bounded waits, and processes told apart by pid and start
time, so a recycled pid is never mistaken for a rank.

Every wait is bounded; processes are checked and cleaned up by pid, never by
name. No case asserts on timing: a deadline only turns a hang into a failure.
"""

import os
import queue
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from e2e_support import job_env  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
STAND_IN = os.path.join(HERE, "stand_in_rank.sh")
LAUNCHER = str(Path(os.environ.get("DMLP_BIN_DIR", "build/bin")).resolve() / "dmlp-launch")

# Upper bounds, not expectations: a healthy run takes a fraction of these.
RUN_LIMIT = 30.0        # one launcher run
READY_LIMIT = 15.0      # ranks writing their pid files
DEAD_LIMIT = 10.0       # processes gone after the launcher ended


class Failure(AssertionError):
    """A case's check failed: unittest reports it as a failure, not an error."""


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
    return job_env(extra, drop=("NUM_PROCESSES",), drop_prefixes=("STAND_IN_",))


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


def process_state(proc):
    try:
        with open("/proc/%d/stat" % proc.pid) as f:
            text = f.read()
    except OSError:
        return None
    return text[text.rindex(")") + 2]


class LaunchTestCase(unittest.TestCase):
    """Gives each case a scratch directory (the stand-in ranks' STAND_IN_DIR) and
    ends whatever a failed case left running there, by recorded pid."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="dmlp-launch-e2e-")
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)
        self.addCleanup(cleanup, self.tmp)
