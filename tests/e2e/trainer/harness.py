"""Shared helpers for dmlp's end-to-end tests: run the real binaries on the CPU
platform with tiny configurations, and end every process we start by pid."""

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from e2e_support import free_port, job_env, run  # noqa: E402,F401 (free_port and run: for the tests)

BIN_DIR = Path(os.environ.get("DMLP_BIN_DIR", "build")).resolve()
LAUNCH = BIN_DIR / "dmlp-launch"
TRAIN = BIN_DIR / "dmlp-train"
VERIFY = BIN_DIR / "dmlp-verify"

# Small enough for a 2-core CI machine, large enough for every code path:
# 4 shards, 2 microbatches, 3 hidden layers.
TINY = {
    "STEPS": "4", "SEED": "42", "BATCH": "16", "MICROBATCHES": "2",
    "LEARNING_RATE": "0.001", "PLATFORM": "cpu", "FEATURES": "12", "WIDTH": "16",
    "LAYERS": "3", "CLASSES": "5", "HEARTBEAT_TIMEOUT_SECONDS": "30", "DATA_SHARDS": "4",
}
RUN_FILES = ("metrics.jsonl", "state.safetensors")


def tiny_job_env(out_dir, processes, **overrides):
    """The TINY job on `processes` ranks writing into `out_dir`, `overrides` on top."""
    return job_env({**TINY, "OUT_DIR": out_dir, "NUM_PROCESSES": processes,
                    "COORDINATOR_PORT": free_port(), **overrides},
                   drop=(*TINY, "NUM_PROCESSES", "PROCESS_ID", "OUT_DIR"))


def launch(out_dir, processes, timeout=180, **overrides):
    """Runs dmlp-launch -> dmlp-train for a whole job; returns CompletedProcess."""
    return run([LAUNCH, "--grace", "5", str(TRAIN)], tiny_job_env(out_dir, processes, **overrides),
               timeout=timeout)


def verify(run_dir, *extra):
    return run([VERIFY, *extra, str(run_dir)])


def children_of(pid):
    """Direct children of a process, from /proc (by pid, never by name)."""
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            pass
    return found


def rank_pids(launcher_pid):
    """{rank: pid} of the ranks a dmlp-launch started, read from /proc (by pid)."""
    ranks = {}
    for pid in children_of(launcher_pid):
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        except OSError:
            continue
        for entry in environ:
            if entry.startswith(b"PROCESS_ID="):
                ranks[int(entry[len(b"PROCESS_ID="):])] = pid
    return ranks


def alive(pid):
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        return state != "Z"
    except OSError:
        return False


def stopped(pid):
    """True once every thread of the process is stopped (SIGSTOP is delivered asynchronously)."""
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            if (task / "stat").read_text().rsplit(")", 1)[1].split()[0] not in ("T", "t"):
                return False
        except OSError:
            pass
    return True


def wait_for(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def line_count(path):
    try:
        return Path(path).read_bytes().count(b"\n")
    except OSError:
        return 0


class JobTestCase(unittest.TestCase):
    """Gives each test a scratch directory and kills what it started, by pid."""

    def setUp(self):
        self.scratch = Path(tempfile.mkdtemp(prefix="dmlp-e2e-"))
        self.started = []

    def tearDown(self):
        for process in self.started:
            if process.poll() is None:
                for pid in children_of(process.pid):
                    try:
                        os.killpg(pid, signal.SIGKILL)
                    except OSError:
                        pass
                process.kill()
                process.wait(timeout=30)
            for stream in (process.stdout, process.stderr):
                if stream:
                    stream.close()
        shutil.rmtree(self.scratch, ignore_errors=True)

    def start(self, args, env):
        process = subprocess.Popen([str(a) for a in args], env=env, stdin=subprocess.DEVNULL,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.started.append(process)
        return process

    def assertPass(self, run_dir, *extra):
        result = verify(run_dir, *extra)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assertEqual(result.stdout.strip().splitlines()[-1], "PASS")

    def assertRankKilled(self, result, victim):
        """The job ended because rank `victim` was SIGKILLed. dmlp-launch exits with
        the first failure it sees: usually the victim's (137), but its peers see
        its sockets close as it dies and may exit (PEER_LOST, or Gloo's read
        error: 1) before the kernel reports the victim's death; then the
        summary shows how it ended."""
        self.assertIn(result.returncode, (1, 137), result.stderr)
        if result.returncode == 137:
            self.assertIn(f"RANK_EXIT_NONZERO: rank={victim} ", result.stderr)
        else:
            # "signal=SIGKILL", or "torn down by SIGTERM (killed by signal SIGKILL)"
            # when the launcher had already begun the teardown.
            self.assertRegex(result.stderr, rf"rank {victim} \(pid \d+\): [^\n]*SIGKILL")

    def assertSameBytes(self, left, right, names=RUN_FILES):
        for name in names:
            self.assertEqual((Path(left) / name).read_bytes(), (Path(right) / name).read_bytes(),
                             f"{name} differs between {left} and {right}")
