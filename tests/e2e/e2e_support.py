"""What every end-to-end test shares: a free TCP port, a program run to its end
with its output captured, and a job's environment.

ctest runs each test from its own folder (tests/e2e/<folder>), so a test puts
this folder on sys.path through its own location before importing:

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from e2e_support import free_port, job_env, run
"""

import os
import socket
import subprocess
import sys
import unittest


def free_port():
    """A TCP port no one listens on now, for a job's COORDINATOR_PORT: parallel
    ctest runs must not share one."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def run(args, env=None, timeout=120, cwd=None):
    """Runs `args` (paths allowed) to its end, stdin from /dev/null, output captured as text."""
    return subprocess.run([str(a) for a in args], env=env, cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


def job_env(settings, drop=(), drop_prefixes=()):
    """This process's environment without the variables a job must not inherit
    from the shell that runs the tests (the names in `drop`, and those starting
    with one of `drop_prefixes`), plus `settings`, each value str()ed; a
    setting of None leaves its name unset."""
    env = {k: v for k, v in os.environ.items()
           if k not in drop and not k.startswith(tuple(drop_prefixes))}
    for name, value in settings.items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = str(value)
    return env


def case_ids(suite):
    """module.Class.test_name of every case in a unittest suite, in order."""
    if isinstance(suite, unittest.TestCase):
        return [suite.id()]
    return [name for inner in suite for name in case_ids(inner)]


if __name__ == "__main__":
    # e2e_support.py FOLDER: the ids of the cases in FOLDER's test_*.py, one a
    # line, for CMake to register each as its own ctest (tests/e2e/launch.cmake).
    folder = sys.argv[1]
    ids = case_ids(unittest.defaultTestLoader.discover(folder, pattern="test_*.py", top_level_dir=folder))
    broken = [i for i in ids if i.startswith("unittest.loader.")]  # a module that failed to import
    if broken or not ids:
        sys.exit(f"e2e_support.py: no cases, or modules that do not import, in {folder}: {broken}")
    print("\n".join(ids))
