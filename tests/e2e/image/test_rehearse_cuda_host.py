"""tools/rehearse.sh --cuda-host CXX UNPACKED, part 2's compile step, when it
is called wrongly or fails: a usage error (exit 2) for missing or wrong
arguments, and no temporary folder left behind however it ends. And
tools/rehearse.sh's own usage errors: an unknown part, and a user not root.

Its real run needs the CUDA 12 wheels (tools/rehearse.sh cuda12, manual);
here UNPACKED is a stand-in without their libraries, so it fails early.
Usage: python3 -m unittest -v test_rehearse_cuda_host   (ctest: image.rehearse_cuda_host)
Environment: DMLP_SOURCE_DIR, the repository (default: three levels up).
"""

import os
import shutil
import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from e2e_support import run  # noqa: E402

SOURCE = Path(os.environ.get("DMLP_SOURCE_DIR", Path(__file__).resolve().parents[3]))
REHEARSE = SOURCE / "tools" / "rehearse.sh"
USAGE = ("usage: tools/rehearse.sh --cuda-host CXX UNPACKED (UNPACKED: a folder holding the "
         "CUDA 12 wheels' nvidia/, as part 2 unpacks them)")


class CudaHost(unittest.TestCase):
    def setUp(self):
        self.scratch = Path(tempfile.mkdtemp(prefix="dmlp-rehearse-cuda-host-"))
        self.addCleanup(shutil.rmtree, self.scratch, ignore_errors=True)
        self.tmp = self.scratch / "tmp"  # the script's TMPDIR: whatever it leaves shows here
        self.tmp.mkdir()

    def rehearse(self, *args):
        return run([REHEARSE, "--cuda-host", *args], env=dict(os.environ, TMPDIR=str(self.tmp)))

    def assertNothingLeft(self):
        self.assertEqual(sorted(p.name for p in self.tmp.iterdir()), [], "left in TMPDIR")

    def test_wrong_arguments_are_a_usage_error(self):
        unpacked_without_wheels = self.scratch / "empty"
        unpacked_without_wheels.mkdir()
        for args in [(), ("g++",), ("", self.scratch), ("g++", unpacked_without_wheels),
                     ("g++", self.scratch / "missing"), ("g++", self.scratch, "extra")]:
            with self.subTest(args=args):
                result = self.rehearse(*args)
                self.assertEqual((result.returncode, result.stderr), (2, USAGE + "\n"))
                self.assertNothingLeft()

    def test_a_failed_compile_leaves_no_temporary_folder(self):
        # nvidia/ without the wheels' libraries: the step stops at linking them.
        unpacked = self.scratch / "unpacked"
        (unpacked / "nvidia" / "cuda_runtime" / "include").mkdir(parents=True)
        result = self.rehearse("g++", unpacked)
        self.assertNotEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assertNothingLeft()


class Usage(unittest.TestCase):
    def rehearse(self, *args, as_nobody=False):
        # As root, setpriv drops to nobody for the check of root; a rehearsal
        # that got past it would stop at the lock in the empty cache below.
        prefix = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] if as_nobody else []
        cache = tempfile.mkdtemp(prefix="dmlp-rehearse-usage-")
        self.addCleanup(shutil.rmtree, cache, ignore_errors=True)
        return run([*prefix, REHEARSE, *args], env=dict(os.environ, DMLP_REHEARSAL_DIR=cache), timeout=60)

    def test_an_unknown_part_is_a_usage_error(self):
        for args in [("bogus",), ("--fresh", "kit", "images"), ("-h",)]:
            with self.subTest(args=args):
                result = self.rehearse(*args)
                self.assertEqual((result.returncode, result.stderr, result.stdout),
                                 (2, "usage: tools/rehearse.sh [--fresh] [trixie] [cuda12] [kit] [image]\n", ""))

    def test_it_needs_root(self):
        as_nobody = os.geteuid() == 0
        if as_nobody and shutil.which("setpriv") is None:
            self.skipTest("running as root without setpriv to drop it")
        result = self.rehearse("kit", as_nobody=as_nobody)
        self.assertEqual((result.returncode, result.stderr, result.stdout),
                         (2, "rehearse: needs root (debootstrap, chroot, mounts)\n", ""))


if __name__ == "__main__":
    unittest.main()
