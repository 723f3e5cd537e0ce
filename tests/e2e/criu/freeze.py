"""freeze: a job's process tree through CRIU (tools/criu.sh), for the e2e cases
(criu_e2e.py) and bench/freeze_reference.py.

The caller becomes a child subreaper, so that a tree restored with
--restore-detached is reparented to it and it can read the root's exit
status; every process is started, ended and reaped by pid (never by name).

A job can be held still (hold: SIGSTOP, every thread stopped) before it is
dumped, and released (SIGCONT) once restored: CRIU dumps a stopped tree as
stopped and restores it so. Why: CRIU takes a moment to start (its loader,
its probes of the kernel, longer on a loaded machine), and a short job that
ends in that moment leaves it a zombie to seize: the dump fails with
"Unable to interrupt task: PID (Operation not permitted)". A held job
cannot end before CRIU has it.
"""

import ctypes
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

SOURCE = Path(__file__).resolve().parents[3]
CRIU = SOURCE / "tools" / "criu.sh"
sys.path.insert(0, str(SOURCE / "tests" / "e2e" / "trainer"))
from harness import alive, children_of, stopped, wait_for  # noqa: E402


def criu_flags(which):
    """The flags dmlp's jobs are dumped ("dump") or restored ("restore") with."""
    flags = subprocess.run([str(CRIU), f"--dmlp-{which}-flags"], capture_output=True, text=True,
                           check=True).stdout.split()
    assert flags, which
    return flags


def become_subreaper():
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(36, 1, 0, 0, 0) != 0:  # PR_SET_CHILD_SUBREAPER
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")


def spawn(args, env, log):
    """Starts args in a session of its own, with stdin /dev/null and stdout+stderr
    appended to `log`.
    Not subprocess.Popen: Popen reaps its pid behind our back, and after a
    restore that pid is the restored job's. CRIU skips its size check for files
    open O_WRONLY|O_APPEND, so a growing log never blocks a restore."""
    # Nothing else inherited: ctest hands its tests its open log (fd 3), which
    # grows while the job is down, and CRIU refuses to restore a process holding
    # a file whose size changed since the dump.
    for fd in [int(name) for name in os.listdir("/proc/self/fd")]:
        if fd > 2:
            try:
                os.set_inheritable(fd, False)
            except OSError:  # the listing's own descriptor, closed by now
                pass
    actions = [(os.POSIX_SPAWN_OPEN, 0, "/dev/null", os.O_RDONLY, 0),
               (os.POSIX_SPAWN_OPEN, 1, str(log), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644),
               (os.POSIX_SPAWN_DUP2, 1, 2)]
    # Its own session (setsid): CRIU refuses a tree whose session leader is
    # outside its pid namespace ("A session leader of N is outside of its pid
    # namespace"), which is where the caller's session leader is when the tests
    # run in a container or a CI runner under its own pid namespace. run.sh and
    # the GPU kit's freeze row start the job the same way.
    return os.posix_spawn(str(args[0]), [str(a) for a in args], env, file_actions=actions,
                          setsid=True)


def tree_pids(root):
    """root and every process below it, from /proc."""
    found, queue = [root], [root]
    while queue:
        children = children_of(queue.pop())
        found += children
        queue += children
    return found


def hold(root, timeout):
    """Stops (SIGSTOP, by pid) every process of the tree under `root` and waits
    until each of their threads is stopped. Returns the pids held. Fails when
    the job ended before it could be held."""
    held = set()
    while True:
        pids = tree_pids(root)
        if not all(alive(pid) for pid in pids):
            raise AssertionError(f"the job under pid {root} ended before it could be held")
        if set(pids) == held and all(stopped(pid) for pid in pids):
            return pids
        for pid in set(pids) - held:
            os.kill(pid, signal.SIGSTOP)
        held |= set(pids)
        wait_for(lambda: all(stopped(pid) or not alive(pid) for pid in held), timeout,
                 f"every thread of the job under pid {root} stopped")


def release(pids):
    """Lets held processes go on (SIGCONT, by pid)."""
    for pid in pids:
        os.kill(pid, signal.SIGCONT)


def exit_status(pid, timeout):
    """The exit status (as subprocess reports it) of our child `pid`, or None when
    it still runs after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done == pid:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() > deadline:
            return None
        time.sleep(0.05)


def reap(pids, timeout):
    """Waits until every pid in `pids` is gone, reaping those that are our children
    (or were reparented to us), so that a restore finds their pids free. Returns
    the exit statuses of those we reaped, by pid."""
    deadline = time.monotonic() + timeout
    statuses = {}
    for pid in pids:
        while True:
            try:
                done, status = os.waitpid(pid, os.WNOHANG)
                if done == pid:
                    statuses[pid] = os.waitstatus_to_exitcode(status)
                    break
            except ChildProcessError:  # not ours: its own parent reaps it
                if not Path(f"/proc/{pid}").exists():
                    break
            if time.monotonic() > deadline:
                raise TimeoutError(f"pid {pid} still there after {timeout} s")
            time.sleep(0.02)
    return statuses


def end_tree(root, timeout=60):
    """SIGKILLs root and everything below it, by pid, and reaps them."""
    pids = tree_pids(root)
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return reap(pids, timeout)


def dump(root, images, *extra, timeout=600, criu=CRIU):
    """criu dump of the tree under `root` into `images` (log: images/dump.log).
    Without --leave-running criu kills the tree after the dump: this waits for
    it to be gone. Returns (criu's CompletedProcess, the tree's exit statuses).
    `criu`: the command that runs criu (tools/criu.sh, or a test's stand-in)."""
    images.mkdir()
    pids = tree_pids(root)
    result = subprocess.run([str(criu), "dump", "-t", str(root), "-D", str(images), "-o", "dump.log",
                             *criu_flags("dump"), *extra],
                            capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    statuses = {}
    if result.returncode == 0 and "--leave-running" not in extra:
        statuses = reap(pids, timeout)
    return result, statuses


def restore_command(images):
    return [str(CRIU), "restore", "-D", str(images), "-o", "restore.log", *criu_flags("restore")]


def restore(images, wrap=(), timeout=600):
    """criu restore of `images` (detached: criu returns once the tree runs again),
    run under `wrap` (a command prefix: a namespace, a host name)."""
    return subprocess.run([*map(str, wrap), *restore_command(images)], capture_output=True,
                          text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def log_tail(path, lines=30):
    try:
        return "\n".join(Path(path).read_text(errors="replace").splitlines()[-lines:])
    except OSError as error:
        return str(error)
