"""dmlp-train started by real engines, with no wrapper: Slurm (srun and
sbatch on a one-node cluster on localhost), Open MPI's mpirun and torchrun.
Each run's receipts must be byte-identical to the same plan under
dmlp-launch, and a rank killed mid-run must end the job and leave a
directory that verifies INCOMPLETE.

Usage: engines_e2e.py {slurm|openmpi|torchrun} [unittest args]
Exits 77 (ctest's SKIP_RETURN_CODE) when the engine is not installed, except
in CI (CI set) for Slurm and Open MPI, which CI installs: there it fails.
torchrun is looked up as $DMLP_TORCHRUN, then on PATH; it runs outside CI
(torch is several GB; tools/engines-check.sh installs it), so without it the
case skips, in CI too.
Every process a test starts runs in its own session and is ended by pid;
anything left carrying this run's marker is killed by pid at the end."""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "trainer"))
from e2e_support import job_env, run  # noqa: E402
from harness import LAUNCH, TRAIN, VERIFY  # noqa: E402
from slurm_cluster import SlurmCluster, missing_programs  # noqa: E402

HERE = Path(__file__).resolve().parent
KILL_ONE_RANK = HERE / "kill_one_rank.sh"
SKIP = 77
RANKS = 2
KILL_STEP = 5
# The plan every engine runs (and dmlp-launch, for the reference receipts).
PLAN = {
    "PLATFORM": "cpu", "STEPS": "20", "SEED": "42", "LEARNING_RATE": "0.001", "BATCH": "64",
    "MICROBATCHES": "2", "FEATURES": "64", "WIDTH": "128", "LAYERS": "3", "CLASSES": "10",
    "DATA_SHARDS": "2", "HEARTBEAT_TIMEOUT_SECONDS": "60",
}
RECEIPTS = ("metrics.jsonl", "rank-0.jsonl", "rank-1.jsonl", "state.safetensors")
# Every variable a launcher could place a rank with: none may leak in from the caller.
PLACE_VARIABLES = (
    "NUM_PROCESSES", "PROCESS_ID", "LOCAL_RANK", "RANK", "WORLD_SIZE", "MASTER_ADDR",
    "MASTER_PORT", "COORDINATOR_ADDRESS", "COORDINATOR_PORT", "PMIX_RANK", "TORCHELASTIC_RUN_ID",
)
# ...and the prefixes of those that Slurm and Open MPI set.
PLACE_PREFIXES = ("SLURM_", "OMPI_", "PMIX_")
JOB_TIMEOUT = 180
# Ports: DMLP_E2E_PORT_BASE (default 18100) .. +49 for coordinators, +50/+51 for Slurm.
PORT_BASE = int(os.environ.get("DMLP_E2E_PORT_BASE", "18100"))
MARK = "DMLP_E2E_ENGINE_MARK"


def coordinator_port():
    """The first port of our range that is free now."""
    for port in range(PORT_BASE, PORT_BASE + 50):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind(("127.0.0.1", port))
                return port
            except OSError:
                continue
    raise RuntimeError(f"no free port in {PORT_BASE}..{PORT_BASE + 49}")


def base_env(out_dir, mark, **extra):
    return job_env({**PLAN, "OUT_DIR": out_dir, MARK: mark, **extra},
                   drop=PLACE_VARIABLES, drop_prefixes=PLACE_PREFIXES)


def kill_marked(mark):
    """Ends, by pid, every process still carrying this run's marker."""
    needle = f"{MARK}={mark}".encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if needle in (entry / "environ").read_bytes().split(b"\0"):
                os.kill(int(entry.name), signal.SIGKILL)
        except OSError:
            pass


def check_same_run(test, out, reference, names, context=""):
    """The files `names` of run `out` equal `reference`'s byte for byte, and
    dmlp-verify says PASS and, --against the reference, identical."""
    for name in names:
        test.assertEqual((out / name).read_bytes(), (reference / name).read_bytes(),
                         f"{name} differs from the reference run's{context}")
    verified = run([VERIFY, out])
    test.assertEqual((verified.returncode, verified.stdout.splitlines()[-1]), (0, "PASS"),
                     verified.stdout + verified.stderr)
    against = run([VERIFY, "--against", reference, out])
    test.assertEqual(against.returncode, 0, against.stdout + against.stderr)


def torchrun_path():
    explicit = os.environ.get("DMLP_TORCHRUN")
    return explicit if explicit else shutil.which("torchrun")


class EngineTest(unittest.TestCase):
    """One engine's checks; subclasses say how to start RANKS ranks."""

    ENGINE = None  # place_source in result.json

    def setUp(self):
        self.scratch = Path(tempfile.mkdtemp(prefix="dmlp-engine-"))
        self.mark = str(self.scratch)

    def tearDown(self):
        kill_marked(self.mark)
        shutil.rmtree(self.scratch, ignore_errors=True)

    def engine_command(self, argv):
        raise NotImplementedError

    def engine_env(self, env):
        return env

    def start_engine(self, out_dir, argv, **extra):
        """Runs argv (dmlp-train, maybe behind the kill hook) under the engine; bounded."""
        env = self.engine_env(base_env(out_dir, self.mark, **extra))
        process = subprocess.Popen([str(a) for a in self.engine_command(argv)], env=env,
                                   stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            stdout, stderr = process.communicate(timeout=JOB_TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            stdout, stderr = process.communicate(timeout=30)
            self.fail(f"{self.ENGINE} job ran past {JOB_TIMEOUT}s:\n{stdout}\n{stderr}")
        return process.returncode, stdout, stderr

    def reference(self):
        """The same plan under dmlp-launch, once per test class."""
        cls = type(self)
        if getattr(cls, "_reference", None) is None:
            cls._reference_dir = Path(tempfile.mkdtemp(prefix="dmlp-engine-ref-"))
            out = cls._reference_dir / "run"
            env = base_env(out, self.mark, NUM_PROCESSES=RANKS, COORDINATOR_PORT=coordinator_port())
            result = run([LAUNCH, "--grace", "5", TRAIN], env, timeout=JOB_TIMEOUT)
            self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
            cls._reference = out
        return cls._reference

    @classmethod
    def tearDownClass(cls):
        if getattr(cls, "_reference_dir", None) is not None:
            shutil.rmtree(cls._reference_dir, ignore_errors=True)

    def assertSameReceipts(self, out):
        check_same_run(self, out, self.reference(), RECEIPTS)
        result = json.loads((out / "result.json").read_text())
        self.assertEqual(result["launch"]["place_source"], self.ENGINE)
        self.assertNotIn("place_source", json.dumps(result["plan"]))

    def check_run(self, returncode, stdout, stderr, out):
        self.assertEqual(returncode, 0, stdout + stderr)
        self.assertIn(f"dmlp-train: {RANKS} ranks placed by {self.ENGINE}", stderr)
        self.assertSameReceipts(out)

    def test_same_receipts_as_dmlp_launch(self):
        out = self.scratch / "run"
        self.check_run(*self.start_engine(out, [TRAIN], COORDINATOR_PORT=coordinator_port()), out)

    def test_a_killed_rank_ends_the_job_incomplete(self):
        out = self.scratch / "run"
        returncode, stdout, stderr = self.start_engine(
            out, [KILL_ONE_RANK, TRAIN], COORDINATOR_PORT=coordinator_port(),
            DMLP_E2E_KILL_RANK=1, DMLP_E2E_KILL_STEP=KILL_STEP)
        self.assertNotEqual(returncode, 0, stdout + stderr)
        self.assertFalse((out / "result.json").exists())
        rank1 = (out / "rank-1.jsonl").read_text().splitlines()
        self.assertEqual(len(rank1), KILL_STEP)
        verified = run([VERIFY, out])
        self.assertEqual((verified.returncode, verified.stdout.splitlines()[-1]), (3, "INCOMPLETE"),
                         verified.stdout + verified.stderr)


class Slurm(EngineTest):
    ENGINE = "slurm"

    @classmethod
    def setUpClass(cls):
        cls.cluster = SlurmCluster(PORT_BASE + 50).__enter__()

    @classmethod
    def tearDownClass(cls):
        cls.cluster.__exit__(None, None, None)
        super().tearDownClass()

    def engine_env(self, env):
        # COORDINATOR_ADDRESS stays unset: the address is the step's first host.
        return dict(env, **self.cluster.env)

    def engine_command(self, argv):
        return ["srun", "-n", RANKS, "--kill-on-bad-exit=1", "--time=5", *argv]

    def test_same_receipts_as_dmlp_launch(self):
        super().test_same_receipts_as_dmlp_launch()
        result = json.loads((self.scratch / "run" / "result.json").read_text())
        self.assertEqual(result["launch"]["coordinator_from"], "SLURM_STEP_NODELIST")

    def test_sbatch_script(self):
        out = self.scratch / "run"
        log = self.scratch / "job.log"
        script = self.scratch / "job.sbatch"
        script.write_text(f"#!/bin/bash\n#SBATCH --ntasks={RANKS}\n#SBATCH --time=5\n"
                          f"#SBATCH --output={log}\nsrun {TRAIN}\n")
        env = dict(base_env(out, self.mark, COORDINATOR_PORT=coordinator_port()), **self.cluster.env)
        result = run(["sbatch", "--wait", script], env, timeout=JOB_TIMEOUT)
        job_log = log.read_text() if log.exists() else ""
        self.check_run(result.returncode, result.stdout, result.stderr + job_log, out)


class OpenMpi(EngineTest):
    ENGINE = "openmpi"

    def engine_env(self, env):
        return dict(env, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                    OMPI_MCA_btl_tcp_if_include="lo", OMPI_MCA_oob_tcp_if_include="lo")

    def engine_command(self, argv):
        # Open MPI hands local ranks the caller's environment as it is: no -x needed.
        return ["mpirun", "-n", RANKS, "--oversubscribe", "--allow-run-as-root", *argv]


class Torchrun(EngineTest):
    ENGINE = "torchrun"

    def engine_command(self, argv):
        return [torchrun_path(), "--no-python", "--nproc-per-node", RANKS, "--max-restarts", "0",
                "--master-port", coordinator_port() + 1, *argv]


ENGINES = {
    "slurm": (Slurm, lambda: missing_programs()),
    "openmpi": (OpenMpi, lambda: [] if shutil.which("mpirun") else ["mpirun"]),
    "torchrun": (Torchrun, lambda: [] if torchrun_path() else ["torchrun"]),
}


def main():
    if len(sys.argv) < 2 or sys.argv[1] not in ENGINES:
        print(f"usage: {sys.argv[0]} {{{'|'.join(ENGINES)}}} [unittest args]", file=sys.stderr)
        return 2
    case, missing = ENGINES[sys.argv[1]]
    if missing():
        why = f"{sys.argv[1]} not installed (missing: {' '.join(missing())})"
        if sys.argv[1] == "torchrun":
            # Outside CI by design: torch with its CUDA libraries is several GB.
            print(f"SKIP: {why}; torchrun runs outside CI: tools/engines-check.sh installs torch")
            return SKIP
        if os.environ.get("CI"):
            # CI installs Slurm and Open MPI (tools/install-deps.sh): a skip there would hide them.
            print(f"FAIL: {why}; in CI this engine must run (tools/install-deps.sh installs it)")
            return 1
        print(f"SKIP: {why}")
        return SKIP
    suite = unittest.defaultTestLoader.loadTestsFromTestCase(case)
    outcome = unittest.TextTestRunner(verbosity=2).run(suite)
    return 0 if outcome.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
