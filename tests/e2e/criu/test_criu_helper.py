"""tools/criu.sh's cache: what it will run, and what an unfinished fetch leaves.

CacheTrust: root runs the loader and libraries of the cache directory. A
cache that is not the caller's own, or that group or others may write (it,
anything in it, or a folder above it that others could swap it out of), is
refused with CRIU_CACHE_UNSAFE (exit 2) and nothing of it runs; a cache of
the caller's own runs. The cache here is a stand-in (a loader that records
that it ran), so no CRIU is needed.
InterruptedFetch: a fetch that fails or is interrupted (Ctrl-C reaches the
whole process group) leaves no staging.<pid> and no apt lists in the cache.
apt-get is a stand-in: nothing is downloaded.

Ownership by another user needs root to make (chown): without root those
cases skip, except in CI (CI set), where they fail.
Usage: python3 -m unittest -v test_criu_helper   (ctest: e2e.criu.helper)
Environment: DMLP_SOURCE_DIR, the repository (default: three levels up).
"""

import os
import shutil
import signal
import subprocess
import tempfile
import time
import unittest
from pathlib import Path

SOURCE = Path(os.environ.get("DMLP_SOURCE_DIR", Path(__file__).resolve().parents[3]))
CRIU_SH = SOURCE / "tools" / "criu.sh"
KEYRING = Path("/usr/share/keyrings/debian-archive-keyring.gpg")  # the one criu.sh names
LIBRARIES = Path("root/usr/lib/x86_64-linux-gnu")
NOBODY = 65534
DEADLINE = 60  # seconds, for any one wait


def write_executable(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n" + text)
    path.chmod(0o755)


class ScratchCase(unittest.TestCase):
    def setUp(self):
        # mkdtemp: 0700 and ours, in /tmp (root's and sticky): a trusted place.
        self.scratch = Path(tempfile.mkdtemp(prefix="dmlp-criu-helper-")).resolve()
        self.cache = self.scratch / "criu"
        self.addCleanup(shutil.rmtree, self.scratch, ignore_errors=True)

    def criu_sh(self, *args, env=None, **popen):
        env = dict(env or os.environ, DMLP_CRIU_CACHE=str(self.cache))
        return subprocess.run([str(CRIU_SH), *args], env=env, capture_output=True, text=True,
                              timeout=DEADLINE, stdin=subprocess.DEVNULL, **popen)


class CacheTrust(ScratchCase):
    def setUp(self):
        super().setUp()
        self.ran = self.scratch / "loader-ran"
        # The layout criu.sh runs: sid's loader with criu as its argument.
        write_executable(self.cache / "root/usr/sbin/criu", "exit 1\n")
        write_executable(self.cache / LIBRARIES / "ld-linux-x86-64.so.2",
                         f'echo "$@" >"{self.ran}"\necho "stand-in criu"\n')
        (self.cache / LIBRARIES / "libc.so.6").write_text("not a library\n")
        for path in [self.cache, *self.cache.rglob("*")]:
            path.chmod(0o755 if path.is_dir() or os.access(path, os.X_OK) else 0o644)

    def assertRefused(self, result, why):
        self.assertEqual(result.returncode, 2, result.stdout + result.stderr)
        self.assertEqual(result.stderr.splitlines()[-1], f"criu.sh: error: CRIU_CACHE_UNSAFE: {why}")
        self.assertFalse(self.ran.exists(), "criu.sh ran the loader of a cache it refused")

    def need_root(self):
        if os.geteuid() == 0:
            return
        if os.environ.get("CI"):
            self.fail("not root: another user's cache cannot be made (chown); CI runs as root")
        self.skipTest("not root: another user's cache cannot be made (chown)")

    def test_own_cache_runs(self):
        result = self.criu_sh("--version")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stdout, "stand-in criu\n")
        self.assertTrue(self.ran.read_text().startswith(f"--library-path {self.cache / LIBRARIES} "))

    def assertRefusedAsNotOwn(self, path, *args):
        """criu.sh ARGS refuses the cache because `path` is nobody's, not ours."""
        self.assertRefused(self.criu_sh(*args),
                           f"{path} is owned by uid {NOBODY}, not by you (uid {os.geteuid()}); "
                           f"criu.sh runs only a cache you own: remove {self.cache} or set DMLP_CRIU_CACHE")

    def test_cache_of_another_user_is_refused(self):
        self.need_root()
        for path in [self.cache, *self.cache.rglob("*")]:
            os.lchown(path, NOBODY, -1)
        self.assertRefusedAsNotOwn(self.cache, "--version")

    def test_loader_planted_by_another_user_is_refused(self):
        self.need_root()
        loader = self.cache / LIBRARIES / "ld-linux-x86-64.so.2"
        os.lchown(loader, NOBODY, -1)
        self.assertRefusedAsNotOwn(loader, "check")

    def test_link_planted_by_another_user_is_refused(self):
        self.need_root()
        link = self.cache / LIBRARIES / "libbsd.so.0"
        link.symlink_to("libc.so.6")
        os.lchown(link, NOBODY, -1)
        self.assertRefusedAsNotOwn(link, "--version")

    def test_group_writable_library_folder_is_refused(self):
        (self.cache / LIBRARIES).chmod(0o775)
        self.assertRefused(self.criu_sh("--version"),
                           f"{self.cache / LIBRARIES} may be written by group or others (mode 775); "
                           "criu.sh runs only a cache no one else can change: "
                           f"remove {self.cache} or set DMLP_CRIU_CACHE")

    def test_world_writable_library_is_refused(self):
        library = self.cache / LIBRARIES / "libc.so.6"
        library.chmod(0o646)
        self.assertRefused(self.criu_sh("--version"),
                           f"{library} may be written by group or others (mode 646); "
                           "criu.sh runs only a cache no one else can change: "
                           f"remove {self.cache} or set DMLP_CRIU_CACHE")

    def test_cache_in_a_folder_others_may_write_is_refused(self):
        # Anyone could rename the cache away and put their own in its place.
        self.scratch.chmod(0o777)
        self.assertRefused(self.criu_sh("--version"),
                           f"{self.scratch}, above the cache {self.cache}, may be written by others "
                           f"(owner uid {os.geteuid()}, mode 777): set DMLP_CRIU_CACHE elsewhere")

    def test_cache_named_through_a_link_runs_from_where_it_is(self):
        link = self.scratch / "link"
        link.symlink_to(self.cache)
        env = dict(os.environ, DMLP_CRIU_CACHE=str(link))
        result = subprocess.run([str(CRIU_SH), "--path"], env=env, capture_output=True, text=True,
                                timeout=DEADLINE, stdin=subprocess.DEVNULL)
        self.assertEqual((result.returncode, result.stdout), (0, f"{self.cache}\n"), result.stderr)


class InterruptedFetch(ScratchCase):
    def setUp(self):
        super().setUp()
        if not KEYRING.is_file():
            if os.environ.get("CI"):
                self.fail(f"no {KEYRING}: criu.sh cannot fetch here; CI's Debian has it")
            self.skipTest(f"no {KEYRING} (not a Debian machine): criu.sh stops before fetching")
        self.stubs = self.scratch / "stubs"
        self.started = self.scratch / "apt-get-started"

    def stub_apt_get(self, body):
        write_executable(self.stubs / "apt-get", f': >"{self.started}"\n{body}')
        return dict(os.environ, PATH=f"{self.stubs}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}")

    def assertNothingLeft(self):
        self.assertEqual(sorted(p.name for p in self.cache.iterdir()), [".lock"],
                         "an unfinished fetch left these in the cache")

    def test_failed_fetch_leaves_nothing(self):
        env = self.stub_apt_get("exit 100\n")
        result = self.criu_sh("--version", env=env)
        self.assertEqual(result.returncode, 2, result.stderr)
        self.assertEqual(result.stderr.splitlines()[-1],
                         "criu.sh: error: CRIU_FETCH_FAILED: apt-get update of sid failed")
        self.assertNothingLeft()

    def test_interrupted_fetch_leaves_nothing(self):
        env = self.stub_apt_get("exec sleep 300\n")
        for signo in (signal.SIGINT, signal.SIGTERM):
            with self.subTest(signal=signo.name):
                self.started.unlink(missing_ok=True)
                # Its own process group, which the signal is sent to as a
                # terminal sends Ctrl-C: the script and its apt-get.
                job = subprocess.Popen([str(CRIU_SH), "--version"], env=dict(env, DMLP_CRIU_CACHE=str(self.cache)),
                                       stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                       stderr=subprocess.PIPE, text=True, start_new_session=True)
                try:
                    deadline = time.monotonic() + DEADLINE
                    while not self.started.exists() and job.poll() is None and time.monotonic() < deadline:
                        time.sleep(0.02)
                    self.assertTrue(self.started.exists(), "criu.sh never began its fetch")
                    self.assertTrue(list(self.cache.glob("staging.*")), "no staging folder during the fetch")
                    os.killpg(job.pid, signo)
                    _, stderr = job.communicate(timeout=DEADLINE)
                finally:
                    if job.poll() is None:
                        os.killpg(job.pid, signal.SIGKILL)
                        job.wait()
                self.assertEqual(job.returncode, 128 + signo, stderr)
                self.assertNothingLeft()


if __name__ == "__main__":
    unittest.main()
