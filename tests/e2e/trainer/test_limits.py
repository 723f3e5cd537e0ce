"""Plans and settings past what the machine has (issue 14): an oversized plan
is refused before anything is allocated or written, and DMLP_CPU_THREADS above
the CPUs is capped."""

import json
import os
import resource
import subprocess

from harness import LAUNCH, TRAIN, JobTestCase, job_env, launch

# Address space for dmlp-train in these tests: what the plan check compares
# with (beside MemAvailable), so the outcome does not depend on this machine's RAM.
ADDRESS_SPACE = 8 << 30
REFUSAL = (r"^dmlp-train: error: PLAN_TOO_LARGE: needs (\d+|more than 18446744073709551615) "
           r"bytes, (\d+) available\n$")


def limited_address_space():
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def tree(path):
    """{relative path: bytes} of every file under path (None for a directory)."""
    found = {}
    for root, dirs, files in os.walk(path):
        for name in dirs:
            found[os.path.relpath(os.path.join(root, name), path)] = None
        for name in files:
            with open(os.path.join(root, name), "rb") as f:
                found[os.path.relpath(os.path.join(root, name), path)] = f.read()
    return found


class PlanTooLarge(JobTestCase):
    def refuse(self, code=1, stderr=REFUSAL, **plan):
        """One rank of the plan under ADDRESS_SPACE: refused, OUT_DIR as it was."""
        out = self.scratch / "run"
        out.mkdir()
        (out / "notes.txt").write_text("the user's own file\n")
        before = tree(out)
        env = job_env(out, 1, PROCESS_ID=0, DATA_SHARDS=1, **plan)
        result = subprocess.run([str(TRAIN)], env=env, capture_output=True, text=True, timeout=120,
                                stdin=subprocess.DEVNULL, preexec_fn=limited_address_space)
        self.assertEqual(result.returncode, code, result.stderr)
        self.assertRegex(result.stderr, stderr)
        self.assertEqual(tree(out), before, "OUT_DIR changed")
        return result.stderr

    def test_huge_width_and_batch(self):
        # Was an uncaught std::bad_alloc: SIGABRT, exit 134, empty receipts.
        self.refuse(WIDTH=65536, BATCH=1000000000)

    def test_two_billion_layers_of_width_one(self):
        # Was 6 s and 2.9 GB of layout before failing: the estimate is arithmetic.
        self.refuse(WIDTH=1, LAYERS=2000000000)

    def test_a_model_past_the_parameter_limit_is_refused_at_once(self):
        # 8.6e18 parameters: 12 P bytes would wrap 64 bits. The plan's own
        # limit (2^36 parameters) refuses it, now without building the layout.
        self.refuse(code=2, stderr="^dmlp-train: error: ENV_INVALID: FEATURES/WIDTH/LAYERS/CLASSES: "
                                   "model too large\n$", WIDTH=65536, LAYERS=2000000000)

    def test_every_rank_of_a_launched_job_refuses_and_creates_nothing(self):
        out = self.scratch / "run"
        result = subprocess.run([str(LAUNCH), "--grace", "5", str(TRAIN)], capture_output=True,
                                text=True, timeout=120, stdin=subprocess.DEVNULL,
                                env=job_env(out, 2, WIDTH=65536, BATCH=1000000000),
                                preexec_fn=limited_address_space)
        self.assertEqual(result.returncode, 1, result.stderr)
        self.assertIn("dmlp-train: error: PLAN_TOO_LARGE: needs ", result.stderr)
        self.assertFalse(out.exists())


class CpuThreads(JobTestCase):
    def test_more_threads_than_cpus_are_capped_with_a_warning(self):
        cpus = len(os.sched_getaffinity(0))
        capped, reference = self.scratch / "capped", self.scratch / "one"
        result = launch(capped, 1, DATA_SHARDS=1, DMLP_CPU_THREADS=1024)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn(f"dmlp-train: warning: DMLP_CPU_THREADS=1024 is more than the {cpus} CPUs "
                      f"this rank may use; using {cpus}\n", result.stderr)
        fingerprint = json.loads((capped / "result.json").read_text())["fingerprint"]
        self.assertEqual(fingerprint["blas"]["threads"], cpus)
        self.assertEqual(launch(reference, 1, DATA_SHARDS=1, DMLP_CPU_THREADS=1).returncode, 0)
        self.assertSameBytes(reference, capped)
        self.assertPass(capped)


if __name__ == "__main__":
    import unittest
    unittest.main()
