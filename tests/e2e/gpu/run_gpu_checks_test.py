"""tests/gpu/run_gpu_checks.sh --kit on a machine without a GPU, with a stand-in
kit holding this build's programs: the table's rows, the verdict and the files
it leaves in $OUT, as the device would show them; and its usage errors.

The device itself (its GPU rows) is checked by the device call of
tests/gpu/README.md and rehearsed in a bare root by tests/gpu/rehearse_kit.sh.
Usage: python3 -m unittest -v run_gpu_checks_test   (ctest: e2e.gpu.ChecksWithoutGpu)
Environment: DMLP_BIN_DIR (the build's bin/), DMLP_SOURCE_DIR (default: three levels up).
"""

import os
import shutil
import sys
import tarfile
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from e2e_support import job_env, run  # noqa: E402

SOURCE = Path(os.environ.get("DMLP_SOURCE_DIR", Path(__file__).resolve().parents[3]))
RUNNER = SOURCE / "tests" / "gpu" / "run_gpu_checks.sh"
BIN = Path(os.environ.get("DMLP_BIN_DIR", SOURCE / "build" / "bin"))
# A soname every Linux machine has, standing in for cuBLAS and NCCL.
PRESENT = "libc.so.6"


class ChecksWithoutGpu(unittest.TestCase):
    def setUp(self):
        self.scratch = Path(tempfile.mkdtemp(prefix="dmlp-gpu-checks-test-"))
        self.addCleanup(shutil.rmtree, self.scratch, ignore_errors=True)
        self.kit = self.scratch / "kit"
        (self.kit / "bin").mkdir(parents=True)
        (self.kit / "lib").mkdir()
        for program in ("dmlp-launch", "dmlp-train", "dmlp-verify"):
            (self.kit / "bin" / program).symlink_to(BIN / program)
        (self.kit / "KIT.txt").write_text("commit: 0123456789abcdef0123\nnccl header: 2.28.9\n")
        # nvidia-smi that lists no GPU, so the machine this runs on cannot matter.
        tools = self.scratch / "tools"
        tools.mkdir()
        (tools / "nvidia-smi").write_text("#!/bin/sh\nexit 0\n")
        (tools / "nvidia-smi").chmod(0o755)
        self.path = "%s:%s" % (tools, os.environ["PATH"])

    def checks(self, device_libs, *args):
        (self.kit / "lib" / "DEVICE_LIBS").write_text("".join(name + "\n" for name in device_libs))
        out = self.scratch / "out"
        shutil.rmtree(out, ignore_errors=True)
        # The runner's own settings come from here alone, not from the shell's.
        env = job_env({"OUT": out, "PATH": self.path, "TMPDIR": self.scratch, "DMLP_GPU_LIB_DIRS": "",
                       "GPU_CHECK_PORT_BASE": "0", "DIGEST_THREADS": None, "REFERENCE_DIR": None},
                      drop_prefixes=("GPU_CHECK_",))
        result = run(["bash", RUNNER, *args], env=env, timeout=240)
        return result, out

    def rows(self, out):
        """{CHECK: (RESULT, DETAIL)} of the table, below its two header lines."""
        lines = (out / "gpu-checks-table.txt").read_text().splitlines()
        self.assertTrue(lines[0].startswith("dmlp GPU checks (no GPU; kit %s; logs in " % self.kit.resolve()),
                        lines[0])
        self.assertEqual(lines[1].split(), ["CHECK", "RESULT", "DETAIL"])
        return {line[:24].rstrip(): (line[25:30].rstrip(), line[31:]) for line in lines[2:]}

    def test_no_gpu_fails_with_the_programs_own_words(self):
        result, out = self.checks([PRESENT], "--kit", self.kit)
        self.assertEqual(result.returncode, 1, result.stdout + result.stderr)
        rows = self.rows(out)
        self.assertEqual(list(rows), ["device libraries", "gpu", "cuda job", "digest threads",
                                      "freeze cuda", "fidelity jax"])
        status, detail = rows["device libraries"]
        self.assertEqual(status, "PASS")
        self.assertRegex(detail, r"^libc\.so\.6: /\S+; libnccl \S+ loaded, kit built with header 2\.28\.9; "
                                 r"kit 0123456789ab$")
        self.assertEqual(rows["gpu"], ("FAIL", "no GPU: nvidia-smi lists none"))
        status, detail = rows["cuda job"]
        self.assertEqual(status, "FAIL")
        self.assertRegex(detail, r"^rc=[1-9][0-9]*: .*dmlp-(train|launch): error: ")
        self.assertEqual(rows["digest threads"],
                         ("SKIP", "no GPU (gpu_bench --digest-sweep times the GPU step)"))
        self.assertEqual(rows["freeze cuda"], ("SKIP", "no cuda_freeze in %s/bin" % self.kit.resolve()))
        self.assertEqual(rows["fidelity jax"][0], "SKIP")
        # The console ends with the table; the log holds the progress; the
        # tarball the job's logs and nothing of the table's own files.
        self.assertTrue(result.stdout.endswith((out / "gpu-checks-table.txt").read_text()))
        log = (out / "gpu-checks.log").read_text()
        self.assertIn("nproc: ", log)
        self.assertIn("DIGEST_THREADS=2 for every job", log)
        self.assertIn("== cuda job: FAIL rc=", log)
        with tarfile.open(out / "gpu-checks-logs.tar.gz") as logs:
            names = logs.getnames()
        self.assertIn("./no-gpu.out", names)
        self.assertFalse([name for name in names if "gpu-checks-" in name], names)

    def test_missing_device_libraries_end_the_run(self):
        result, out = self.checks([PRESENT, "libcublas.so.404", "libnccl.so.404"], "--kit", self.kit)
        self.assertEqual(result.returncode, 1, result.stdout + result.stderr)
        rows = self.rows(out)
        self.assertEqual(list(rows), ["device libraries"])
        status, detail = rows["device libraries"]
        self.assertEqual(status, "FAIL")
        self.assertTrue(detail.startswith("not found: libcublas.so.404 libnccl.so.404 (cuBLAS, NCCL); "
                                          "looked in DMLP_GPU_LIB_DIRS"), detail)

    def test_usage_errors(self):
        kit_usage = "usage: run_gpu_checks.sh --kit DIR (a folder made by tests/gpu/make_kit.sh)\n"
        for args, usage in [(("--kit",), kit_usage), (("--kit", self.scratch / "missing"), kit_usage),
                            (("--kit", self.scratch), kit_usage), (("--kit", self.kit, "extra"), kit_usage),
                            (("--bogus",), "usage: run_gpu_checks.sh [BUILD_DIR] | --kit DIR\n")]:
            with self.subTest(args=args):
                result, out = self.checks([PRESENT], *args)
                self.assertEqual((result.returncode, result.stderr, result.stdout), (2, usage, ""))
                self.assertFalse(out.exists())


if __name__ == "__main__":
    unittest.main()
