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
from kit_standins import write_standin_kit  # noqa: E402

SOURCE = Path(os.environ.get("DMLP_SOURCE_DIR", Path(__file__).resolve().parents[3]))
RUNNER = SOURCE / "tests" / "gpu" / "run_gpu_checks.sh"
BIN = Path(os.environ.get("DMLP_BIN_DIR", SOURCE / "build" / "bin"))
# A soname every Linux machine has, standing in for cuBLAS and NCCL.
PRESENT = "libc.so.6"
# What the stand-in nvidia-smi of gpu_present() lists.
H100 = "NVIDIA H100 80GB HBM3"


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

    def checks(self, device_libs, *args, env=None):
        (self.kit / "lib" / "DEVICE_LIBS").write_text("".join(name + "\n" for name in device_libs))
        out = self.scratch / "out"
        shutil.rmtree(out, ignore_errors=True)
        # The runner's own settings come from here alone, not from the shell's.
        env_overrides = env
        env = job_env({"OUT": out, "PATH": self.path, "TMPDIR": self.scratch, "DMLP_GPU_LIB_DIRS": "",
                       "GPU_CHECK_PORT_BASE": "0", "DIGEST_THREADS": None, "REFERENCE_DIR": None},
                      drop_prefixes=("GPU_CHECK_",))
        env.update({name: str(value) for name, value in (env_overrides or {}).items()})
        result = run(["bash", RUNNER, *args], env=env, timeout=240)
        return result, out

    def rows(self, out, gpu="no GPU"):
        """{CHECK: (RESULT, DETAIL)} of the table, below its two header lines."""
        lines = (out / "gpu-checks-table.txt").read_text().splitlines()
        self.assertTrue(lines[0].startswith("dmlp GPU checks (%s; kit %s; logs in " % (gpu, self.kit.resolve())),
                        lines[0])
        self.assertEqual(lines[1].split(), ["CHECK", "RESULT", "SECONDS", "DETAIL"])
        return {line[:24].rstrip(): (line[25:30].rstrip(), line[39:]) for line in lines[2:]}

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
        # The console ends with the table and its verdict; the log holds the
        # progress; the tarball the job's logs and nothing of the table's own files.
        self.assertTrue(result.stdout.endswith((out / "gpu-checks-table.txt").read_text() + "verdict: FAIL\n"))
        preflight = (out / "preflight.txt").read_text()
        for section in ("## nvidia-smi", "## kernel", "## cores", "## memory", "## python packages",
                        "## cuBLAS and NCCL found", "## criu check", "## CUDA checkpoint state of the shell"):
            self.assertIn(section, preflight)
        log = (out / "gpu-checks.log").read_text()
        self.assertIn("nproc: ", log)
        self.assertIn("DIGEST_THREADS=2 for every job", log)
        self.assertRegex(log, r"== cuda job: FAIL \(\d+ s\) rc=")
        with tarfile.open(out / "gpu-checks-logs.tar.gz") as logs:
            names = logs.getnames()
        self.assertIn("./no-gpu.out", names)
        self.assertFalse([name for name in names if "gpu-checks-" in name], names)

    def gpu_present(self):
        """A stand-in kit of a GPU machine's programs (kit_standins.py) and an nvidia-smi listing an H100."""
        for program in ("dmlp-launch", "dmlp-train", "dmlp-verify"):
            (self.kit / "bin" / program).unlink()  # links to the build's: never written through
        write_standin_kit(self.kit)
        (self.scratch / "tools" / "nvidia-smi").write_text(
            "#!/bin/sh\ncase \"$*\" in *noheader*) echo 'NVIDIA H100 80GB HBM3' ;;\n"
            "  *) echo 'name, driver_version'; echo 'NVIDIA H100 80GB HBM3, 580.65.06' ;; esac\n")

    def test_with_a_gpu_the_plan_then_the_rows_then_the_verdict(self):
        self.gpu_present()
        result, out = self.checks([PRESENT], "--kit", self.kit, env={
            "GPU_CHECK_ROWS": "unit,draws,bytes", "DMLP_GPU_PYTHON": self.kit / "jax-python"})
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        rows = self.rows(out, H100)
        self.assertEqual(list(rows), ["device libraries", "unit tests", "draws cuda = cpu", "cuda = cpu, 1 rank",
                                      "cuda = cpu, 2 ranks"])
        self.assertEqual({status for status, _ in rows.values()}, {"PASS"})
        self.assertTrue(result.stdout.endswith("verdict: PASS\n"), result.stdout[-300:])
        log = (out / "gpu-checks.log").read_text()
        self.assertRegex(log, r"plan: 3 rows, budget 280 s \(GPU_CHECK_BUDGET_S\); estimated seconds on one H100:\n"
                              r"  unit +25 s .*\n  draws +15 s .*\n  bytes +30 s .*\n  total +75 s")
        preflight = (out / "preflight.txt").read_text()
        self.assertIn("NVIDIA H100 80GB HBM3, 580.65.06", preflight)
        self.assertIn("skipped gtests (cuda_test, filter -*.NoGpu*): none", preflight)

    def test_rows_over_the_budget_are_left_for_the_next_call(self):
        self.gpu_present()
        result, out = self.checks([PRESENT], "--kit", self.kit, env={"GPU_CHECK_BUDGET_S": "30",
                                                                     "GPU_CHECK_SKIP_REFERENCE": "1"})
        rows = self.rows(out, H100)
        self.assertEqual(list(rows)[1:], ["unit tests", "draws cuda = cpu", "not started"])
        self.assertEqual(rows["not started"], ("SKIP", "over the 30 s budget: GPU_CHECK_ROWS=bytes,receipts,"
                                               "freeze1,freeze2,cublas,ranks,bench,gemm,digest,fidelity,reference"
                                               " for the next call"))
        result, out = self.checks([PRESENT], "--kit", self.kit, env={"GPU_CHECK_ROWS": "unit,bogus"})
        self.assertEqual(result.returncode, 1)
        self.assertEqual(self.rows(out, H100)["plan"][0], "FAIL")

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
