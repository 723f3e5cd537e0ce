"""Plans, settings and limits past what the machine has: an oversized plan is
refused before anything is allocated or written, also under a memory cgroup's
limit (docker --memory); DMLP_CPU_THREADS above the CPUs is capped; too few
descriptors (RLIMIT_NOFILE) or a thread that cannot start end the job at once,
saying so, and leave nothing behind."""

import json
import os
import re
import resource
import subprocess
import unittest
from pathlib import Path

from harness import LAUNCH, TRAIN, JobTestCase, tiny_job_env, launch

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
        env = tiny_job_env(out, 1, PROCESS_ID=0, DATA_SHARDS=1, **plan)
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
                                env=tiny_job_env(out, 2, WIDTH=65536, BATCH=1000000000),
                                preexec_fn=limited_address_space)
        self.assertEqual(result.returncode, 1, result.stderr)
        self.assertIn("dmlp-train: error: PLAN_TOO_LARGE: needs ", result.stderr)
        self.assertFalse(out.exists())


# The limit of the memory cgroup the rank runs in: room for dmlp-train itself
# (about 100 MB at its start, mostly its own and its libraries' pages),
# well below the plan of CgroupLimit (about 550 MB) and MemAvailable.
CGROUP_LIMIT = 256 << 20
CGROUP_ROOT = Path("/sys/fs/cgroup")


def own_cgroup_v1_memory():
    """This process's directory in the v1 memory hierarchy (its mount root if not visible)."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if "memory" in controllers.split(","):
            own = CGROUP_ROOT / "memory" / path.lstrip("/")
            return own if own.is_dir() else CGROUP_ROOT / "memory"
    return CGROUP_ROOT / "memory"


def make_memory_cgroup(name, limit):
    """A new memory cgroup limited to `limit` bytes: (its directory, the limit file's name),
    or raises OSError saying why none can be made here."""
    if os.geteuid() != 0:
        raise OSError("not root")
    if (CGROUP_ROOT / "cgroup.controllers").exists():  # v2 (stat -fc %T: cgroup2fs)
        parent, limit_file = CGROUP_ROOT, "memory.max"
        enabled = (parent / "cgroup.subtree_control").read_text().split()
        if "memory" not in enabled:
            (parent / "cgroup.subtree_control").write_text("+memory")
    elif (CGROUP_ROOT / "memory" / "memory.limit_in_bytes").exists():  # v1
        parent, limit_file = own_cgroup_v1_memory(), "memory.limit_in_bytes"
    else:
        raise OSError(f"no memory controller under {CGROUP_ROOT}")
    cgroup = parent / name
    cgroup.mkdir()
    try:
        (cgroup / limit_file).write_text(str(limit))
    except OSError:
        cgroup.rmdir()
        raise
    return cgroup, limit_file


class CgroupLimit(JobTestCase):
    """A memory cgroup smaller than the plan (docker --memory) but a machine
    with room: the rank was OOM-killed (exit 137 through a shell, -9 here)
    part way through allocating; now it refuses the plan."""

    def setUp(self):
        super().setUp()
        try:
            self.cgroup, self.limit_file = make_memory_cgroup(f"dmlp-e2e-{os.getpid()}", CGROUP_LIMIT)
        except OSError as error:
            if os.environ.get("CI"):
                self.fail(f"cannot make a memory cgroup ({error}); in CI (root) this test must run")
            raise unittest.SkipTest(f"cannot make a memory cgroup: {error}")
        self.addCleanup(self.cgroup.rmdir)

    def run_in_cgroup(self, out, **plan):
        procs = self.cgroup / "cgroup.procs"
        return subprocess.run([str(TRAIN)], env=tiny_job_env(out, 1, PROCESS_ID=0, DATA_SHARDS=1, **plan),
                              capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
                              preexec_fn=lambda: procs.write_text(str(os.getpid())))

    def test_a_plan_larger_than_the_cgroup_limit_is_refused(self):
        out = self.scratch / "run"
        result = self.run_in_cgroup(out, WIDTH=2048, LAYERS=4)
        self.assertEqual(result.returncode, 1, result.stderr)  # was -9: SIGKILL by the OOM killer
        match = re.fullmatch(r"dmlp-train: error: PLAN_TOO_LARGE: needs (\d+) bytes, (\d+) available "
                             r"\(memory cgroup (\S+): (\S+) (\d+) bytes, (\d+) in use\)\n", result.stderr)
        self.assertIsNotNone(match, result.stderr)
        need, available, cgroup, limit_file, limit, in_use = match.groups()
        self.assertTrue(cgroup.endswith("/" + self.cgroup.name), cgroup)
        self.assertEqual((limit_file, int(limit)), (self.limit_file, CGROUP_LIMIT))
        self.assertEqual(int(available), CGROUP_LIMIT - int(in_use))
        self.assertGreater(int(need), CGROUP_LIMIT)
        self.assertFalse(out.exists())

    def test_a_plan_within_the_limit_runs(self):
        out = self.scratch / "run"
        result = self.run_in_cgroup(out)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertPass(out)


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


class DescriptorLimit(JobTestCase):
    def test_out_of_descriptors_is_named_never_spun(self):
        # Was, at RLIMIT_NOFILE=29 here: ~15,500 failing accept4 calls/s in
        # rank 0's coordinator until RENDEZVOUS_TIMEOUT (two heartbeats: 20
        # minutes here, two days with the image's 86400 s), EMFILE never named.
        # Which descriptor runs out first depends on the limit (the
        # coordinator's accept, an env file, Gloo's mesh): each limit around
        # the rendezvous's needs must end promptly, saying so.
        for limit in range(24, 32):
            with self.subTest(limit=limit):
                out = self.scratch / f"run-{limit}"

                def few_descriptors():
                    resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))

                env = tiny_job_env(out, 2, DATA_SHARDS=2, HEARTBEAT_TIMEOUT_SECONDS=600)
                result = subprocess.run([str(LAUNCH), "--grace", "5", str(TRAIN)], env=env,
                                        capture_output=True, text=True, timeout=120,
                                        stdin=subprocess.DEVNULL, preexec_fn=few_descriptors)
                self.assertNotIn("RENDEZVOUS_TIMEOUT", result.stderr)
                if result.returncode != 0:
                    self.assertRegex(result.stderr, rf"too many open files \(RLIMIT_NOFILE={limit}\)|"
                                                    r"Too many open files")
                    self.assertFalse((out / "dmlp.lock").exists())


class ThreadLimit(JobTestCase):
    def test_a_thread_that_cannot_start_is_an_error_that_leaves_nothing(self):
        # Was an uncaught std::system_error: exit 134, empty receipts and
        # dmlp.lock left, and the rerun OUTPUT_EXISTS. glibc gives each thread
        # a stack of RLIMIT_STACK: 1 GiB stacks in 8 GiB of address space fit
        # a few threads, not 16 hashers.
        out = self.scratch / "run"
        out.mkdir()
        (out / "notes.txt").write_text("the user's own file\n")
        before = tree(out)

        def huge_stacks():
            resource.setrlimit(resource.RLIMIT_STACK, (1 << 30, resource.RLIM_INFINITY))
            resource.setrlimit(resource.RLIMIT_AS, (8 << 30, 8 << 30))
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

        env = tiny_job_env(out, 1, PROCESS_ID=0, DATA_SHARDS=1, DIGEST_THREADS=16, DMLP_CPU_THREADS=1)
        result = subprocess.run([str(TRAIN)], env=env, capture_output=True, text=True, timeout=120,
                                stdin=subprocess.DEVNULL, preexec_fn=huge_stacks)
        self.assertEqual(result.returncode, 1, result.stderr)
        self.assertRegex(result.stderr, r"(^|\n)dmlp-train: error: RESOURCE_EXHAUSTED: cannot start a thread "
                                        r"\(digest hasher \d+ of 16, DIGEST_THREADS\): [^\n]+\n$")
        self.assertEqual(tree(out), before, "OUT_DIR changed")
        rerun = launch(out, 1, DATA_SHARDS=1, DIGEST_THREADS=16)
        self.assertEqual(rerun.returncode, 0, rerun.stderr)
        self.assertPass(out)


if __name__ == "__main__":
    unittest.main()
