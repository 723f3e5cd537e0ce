"""dmlp across three hosts: the test cluster of cluster.py (node1..node3, one
network namespace each, joined by a bridge; names in /etc/hosts; one shared
filesystem), 2 ranks per host, 6 ranks, DATA_SHARDS=12.

Usage: cluster_e2e.py CASE [unittest args], CASE one of:
  reference   the plan on one host (node1) under dmlp-launch: the receipts every
              other case must reproduce byte for byte (kept in $DMLP_CLUSTER_REFERENCE)
  launch      one `dmlp-launch --nnodes 3 --node-rank J` per host
  slurm       three slurmd, one per host: `srun -N3 --ntasks-per-node=2`, and the
              sbatch script of docs/several-hosts.md (with the changes SBATCH_CHANGES states)
  openmpi     docs/several-hosts.md's mpirun line across the hosts, through rsh_agent.sh
  torchrun    torchrun --nnodes 3 with a c10d rendezvous, the coordinator from
              COORDINATOR_ADDRESS and from torchrun's MASTER_ADDR
              (tools/engines-check.sh only)
  fault_link, fault_partition, fault_freeze, fault_coordinator
              a host cut off mid-run (checkpoints on): the job ends everywhere,
              naming the lost host, no process is left on any host, the run
              verifies INCOMPLETE, and RESUME=1 on the 2 remaining hosts (4 ranks)
              completes byte-identical to the reference.

Ranks on different hosts can reach each other only through eth0 (loopback is
per namespace), so a job that completes has bound the interface that reaches
the other hosts; the fault cases also check every TCP connection of a host
mid-run. Every process a case starts runs on a host and is ended by pid at
the end (cluster.py), whatever happened. The bounds below are deadlines that
catch a job that never notices a lost host, not speed checks; the times are
printed (`DETECT ...`) for tools/cluster-faults-bench.sh to collect.
Exits 77 when something needed is not installed (ctest's SKIP), except in CI
(CI set), which installs all and runs as root: there a missing piece fails the
case. torchrun is not a ctest case (tools/engines-check.sh runs it)."""

import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent / "trainer"))
sys.path.insert(0, str(HERE.parent / "engines"))
from e2e_support import job_env, run  # noqa: E402
from harness import BIN_DIR, LAUNCH, TRAIN, VERIFY  # noqa: E402
from engines_e2e import PLACE_PREFIXES, PLACE_VARIABLES, check_same_run, torchrun_path  # noqa: E402
from slurm_cluster import SlurmCluster, missing_programs as slurm_missing  # noqa: E402
from cluster import Cluster, INTERFACE, missing_programs as cluster_missing  # noqa: E402

SEVERAL_HOSTS = HERE.parents[2] / "docs" / "several-hosts.md"
SKIP = 77
HEARTBEAT = 4
GRACE = 5
# The launchers end within this after a fault: detection takes up to the
# heartbeat plus one ping interval (heartbeat/5) on every side, then the
# launcher's grace at most; 20 s more for a loaded 2-core machine.
END_BOUND = 2 * HEARTBEAT + GRACE + 20
# A frozen host's processes, continued after the others ended: their next
# ping finds the coordinator gone (or silent for a heartbeat of their own
# running time), then the grace.
THAW_BOUND = 2 * HEARTBEAT + GRACE + 20
RANKS_PER_HOST = 2
CHECKPOINT_EVERY = 5
FAULT_STEP = 12  # inject once rank 0 recorded this step: two checkpoints exist
PLAN = {
    "PLATFORM": "cpu", "STEPS": "60", "SEED": "42", "LEARNING_RATE": "0.001", "BATCH": "48",
    "MICROBATCHES": "2", "FEATURES": "64", "WIDTH": "128", "LAYERS": "3", "CLASSES": "10",
    "DATA_SHARDS": "12", "HEARTBEAT_TIMEOUT_SECONDS": str(HEARTBEAT),
    "CHECKPOINT_EVERY": str(CHECKPOINT_EVERY), "DMLP_CPU_THREADS": "1",
}
# Inside the cluster's own namespaces nothing else listens: the docs' port.
PORT = 12355
SLURM_PORT = 6817
JOB_TIMEOUT = 240
REFERENCE = Path(os.environ.get("DMLP_CLUSTER_REFERENCE",
                                Path(tempfile.gettempdir()) / "dmlp-cluster-reference"))


def plan_env(out_dir, **extra):
    """This process's environment without any rank placement, plus the plan."""
    return job_env({**PLAN, "OUT_DIR": out_dir, **extra},
                   drop=(*PLACE_VARIABLES, "DMLP_JOB_ID"), drop_prefixes=PLACE_PREFIXES)


def receipt_files(ranks):
    return ["metrics.jsonl", "state.safetensors"] + [f"rank-{r}.jsonl" for r in range(ranks)]


def steps_recorded(out_dir):
    try:
        return len((Path(out_dir) / "metrics.jsonl").read_text().splitlines())
    except OSError:
        return 0


class ClusterTest(unittest.TestCase):
    """A fresh cluster per class; every process on it ended after each test."""

    cluster = None

    @classmethod
    def setUpClass(cls):
        cls.cluster = Cluster().setup()

    @classmethod
    def tearDownClass(cls):
        cls.cluster.teardown()

    def setUp(self):
        self.scratch = Path(tempfile.mkdtemp(prefix="dmlp-cluster-"))
        os.chmod(self.scratch, 0o755)
        self.logs = {}

    def tearDown(self):
        if os.environ.get("DMLP_CLUSTER_SHOW_LOGS") == "1":
            print(self.all_logs())
        for host in self.cluster.hosts:
            for pid in set(self.cluster.pids(host)) - self.daemon_pids():
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        shutil.rmtree(self.scratch, ignore_errors=True)

    def daemon_pids(self):
        """Processes on the hosts that outlive a test (an engine's daemons)."""
        return set()

    def processes_on(self, host):
        """ps of every process on host, for a failure's message."""
        pids = [str(p) for p in self.cluster.pids(host)]
        if not pids:
            return f"(no process on {host})\n"
        return subprocess.run(["ps", "-o", "pid,ppid,stat,wchan:20,etime,args", "-p", ",".join(pids)],
                              capture_output=True, text=True).stdout

    # --- running things on hosts -------------------------------------------
    def start_on(self, host, argv, env, name, stdin=None):
        """argv on host, output to a log; returns the Popen (its own session)."""
        self.logs[name] = self.scratch / f"{name}.log"
        with open(self.logs[name], "wb") as log:
            return subprocess.Popen(self.cluster.command(host, argv, cwd=self.scratch), env=env,
                                    stdin=subprocess.DEVNULL if stdin is None else stdin,
                                    stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

    def log(self, name):
        return self.logs[name].read_text(errors="replace")

    def all_logs(self):
        return "".join(f"\n--- {name}\n{self.log(name)[-4000:]}" for name in self.logs)

    def run_on(self, host, argv, env, name, timeout=JOB_TIMEOUT, stdin=None):
        process = self.start_on(host, argv, env, name, stdin=stdin)
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)
            self.fail(f"{name} ran past {timeout}s:{self.all_logs()}")
        return process.returncode

    def launch_hosts(self, out_dir, hosts, **extra):
        """One dmlp-launch --nnodes len(hosts) per host; rank 0 on hosts[0]."""
        place = {"NUM_PROCESSES": RANKS_PER_HOST * len(hosts), "COORDINATOR_ADDRESS": hosts[0],
                 "COORDINATOR_PORT": PORT, "DMLP_JOB_ID": "cluster-" + secrets.token_hex(8)}
        env = plan_env(out_dir, **dict(place, **extra))
        return {host: self.start_on(host, [LAUNCH, "--grace", GRACE, "--nnodes", len(hosts),
                                           "--node-rank", index, TRAIN], env, f"launch-{host}")
                for index, host in enumerate(hosts)}

    def wait_all(self, processes, timeout):
        """Waits for every process; {name: returncode}, None for those still running."""
        deadline = time.monotonic() + timeout
        codes = {}
        for name, process in processes.items():
            try:
                codes[name] = process.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                codes[name] = None
        return codes

    # --- what every run must show ------------------------------------------
    def assertRanksOnHosts(self, out_dir, hosts):
        """Rank r ran on hosts[r // RANKS_PER_HOST] (rank-<r>.env.jsonl)."""
        for rank in range(RANKS_PER_HOST * len(hosts)):
            lines = (out_dir / f"rank-{rank}.env.jsonl").read_text().splitlines()
            self.assertEqual(json.loads(lines[-1])["host"], hosts[rank // RANKS_PER_HOST],
                             f"rank {rank}")

    def assertSameAsReference(self, out_dir, ranks, place_source, coordinator_from):
        check_same_run(self, out_dir, REFERENCE, receipt_files(ranks), self.all_logs())
        launch = json.loads((out_dir / "result.json").read_text())["launch"]
        self.assertEqual(launch, {"place_source": place_source, "coordinator_from": coordinator_from})


def make_reference():
    """The plan on one host (node1) under dmlp-launch, into REFERENCE."""
    shutil.rmtree(REFERENCE, ignore_errors=True)
    REFERENCE.parent.mkdir(parents=True, exist_ok=True)
    env = plan_env(REFERENCE, NUM_PROCESSES=RANKS_PER_HOST * 3, COORDINATOR_PORT=PORT)
    with Cluster() as cluster:
        result = subprocess.run(cluster.command("node1", [LAUNCH, "--grace", GRACE, TRAIN]), env=env,
                                capture_output=True, text=True, timeout=JOB_TIMEOUT,
                                stdin=subprocess.DEVNULL)
    if result.returncode != 0 or not (REFERENCE / "result.json").exists():
        raise RuntimeError(f"reference run failed ({result.returncode}):\n{result.stdout}{result.stderr}")


class Reference(unittest.TestCase):
    def test_one_host(self):
        make_reference()
        verified = run([VERIFY, REFERENCE])
        self.assertEqual(verified.returncode, 0, verified.stdout + verified.stderr)


def ensure_reference():
    if not (REFERENCE / "result.json").exists():
        make_reference()


class Launch(ClusterTest):
    """One dmlp-launch per host."""

    def test_three_launchers_match_one_host(self):
        out = self.scratch / "run"
        codes = self.wait_all(self.launch_hosts(out, self.cluster.hosts), JOB_TIMEOUT)
        self.assertEqual(set(codes.values()), {0}, self.all_logs())
        self.assertIn("dmlp-train: 6 ranks placed by dmlp; coordinator node1:12355 from "
                      "COORDINATOR_ADDRESS", self.log("launch-node1"))
        self.assertRanksOnHosts(out, self.cluster.hosts)
        self.assertSameAsReference(out, 6, "dmlp", "COORDINATOR_ADDRESS")

    def test_coordinator_address_left_at_loopback(self):
        """What a user sees who forgets COORDINATOR_ADDRESS: ranks of other hosts
        look for rank 0 on their own loopback, and every rank says where it looked."""
        out = self.scratch / "run"
        processes = self.launch_hosts(out, self.cluster.hosts, COORDINATOR_ADDRESS="127.0.0.1")
        codes = self.wait_all(processes, END_BOUND + HEARTBEAT)
        self.assertNotIn(None, codes.values(), self.all_logs())
        self.assertNotIn(0, codes.values(), self.all_logs())
        for host, ranks in (("node2", "[23]"), ("node3", "[45]")):
            self.assertRegex(self.log(f"launch-{host}"),
                             rf"\[rank {ranks}\] dmlp-train: error: RENDEZVOUS_TIMEOUT: rank {ranks}: no "
                             rf"coordinator at 127\.0\.0\.1:12355 within {HEARTBEAT}s \(last error: "
                             r"Connection refused\)", self.all_logs())
        # On node1 ranks 0 and 1 wait for the others until the heartbeat; the
        # first to give up ends the other (RENDEZVOUS_TIMEOUT or PEER_LOST).
        self.assertRegex(self.log("launch-node1"), r"\[rank [01]\] dmlp-train: error: "
                         r"(RENDEZVOUS_TIMEOUT|PEER_LOST): ", self.all_logs())


# The sbatch script of docs/several-hosts.md cannot run as written here: what changes, and why.
SBATCH_CHANGES = (
    ("#SBATCH --nodes=4\n", "#SBATCH --nodes=3\n", "the test cluster has three hosts"),
    ("#SBATCH --ntasks-per-node=8\n", "#SBATCH --ntasks-per-node=2\n",
     "2 CPUs per host, and 6 ranks divide DATA_SHARDS=12"),
    ("#SBATCH --gpus-per-task=1\n", "", "no GPUs, so no GRES; PLATFORM=cpu"),
    ("export PLATFORM=cuda STEPS=1200 SEED=42 BATCH=4096 MICROBATCHES=8 LEARNING_RATE=0.001 \\\n"
     "  FEATURES=512 WIDTH=2048 LAYERS=3 CLASSES=10 DATA_SHARDS=32 HEARTBEAT_TIMEOUT_SECONDS=600\n",
     "export " + " ".join(f"{k}={v}" for k, v in PLAN.items()) + "\n",
     "the CPU platform at the reference's small plan (a GPU plan of 1200 steps does not fit CI)"),
    ("/shared/runs/", "{scratch}/runs/", "no /shared here: the test's scratch directory, seen by all hosts"),
    ("/opt/dmlp/bin/", str(BIN_DIR) + "/", "the programs are where the build put them"),
)
# And for its mpirun line.
MPIRUN_CHANGES = (
    ("mpirun -n 16 --hostfile hosts --map-by ppr:8:node",
     "mpirun -n 6 --hostfile hosts --map-by ppr:2:node --allow-run-as-root "
     "--mca plm_rsh_agent {agent} --mca plm_rsh_no_tree_spawn 1 --mca oob_tcp_if_include " + INTERFACE,
     "3 hosts x 2 ranks; the rsh agent enters a host's namespaces in place of ssh; as root"),
    ("COORDINATOR_ADDRESS=node01", "COORDINATOR_ADDRESS=node1", "the test cluster's first host"),
    ("-x OUT_DIR", "-x OUT_DIR -x CHECKPOINT_EVERY",
     "the test plan has checkpoints; other hosts get only what -x names (PLAN_MISMATCH without it)"),
    ("/opt/dmlp/bin/", str(BIN_DIR) + "/", "the programs are where the build put them"),
)


def readme_block(marker):
    """docs/several-hosts.md's sh block that contains `marker`, without its run-by line."""
    blocks = re.findall(r"```sh\n(.*?)```", SEVERAL_HOSTS.read_text(), flags=re.S)
    found = [b for b in blocks if marker in b]
    if len(found) != 1:
        raise AssertionError(f"docs/several-hosts.md: {len(found)} sh blocks hold {marker!r}, expected 1")
    return "".join(line + "\n" for line in found[0].splitlines() if not line.startswith("# run-by:"))


def apply_changes(text, changes, **values):
    for old, new, why in changes:
        if text.count(old) < 1:
            raise AssertionError(f"docs/several-hosts.md changed: {old!r} is gone (it was replaced because {why})")
        text = text.replace(old, new.format(**values))
    return text


class Slurm(ClusterTest):
    """slurmctld on node1, one slurmd per host; srun and sbatch run on node1."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        try:
            cls.slurm = SlurmCluster(SLURM_PORT, nodes=[(h, cls.cluster.address(h)) for h in cls.cluster.hosts],
                                     on_host=cls.cluster.command).__enter__()
        except BaseException:
            cls.cluster.teardown()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.slurm.__exit__(None, None, None)
        super().tearDownClass()

    def daemon_pids(self):
        return {daemon.pid for daemon in self.slurm.daemons}

    def test_srun_three_nodes(self):
        out = self.scratch / "run"
        env = dict(plan_env(out, COORDINATOR_PORT=PORT), **self.slurm.env)
        code = self.run_on("node1", ["srun", "-N3", "--ntasks-per-node=2", "--kill-on-bad-exit=1", TRAIN],
                           env, "srun")
        self.assertEqual(code, 0, self.all_logs())
        self.assertIn("dmlp-train: 6 ranks placed by slurm; coordinator node1:12355 from "
                      "SLURM_STEP_NODELIST", self.log("srun"))
        self.assertRanksOnHosts(out, self.cluster.hosts)
        self.assertSameAsReference(out, 6, "slurm", "SLURM_STEP_NODELIST")

    def test_readme_sbatch_script(self):
        body = readme_block("sbatch <<'JOB'")
        script = body.split("sbatch <<'JOB'\n", 1)[1].split("\nJOB\n", 1)[0] + "\n"
        script = apply_changes(script, SBATCH_CHANGES, scratch=self.scratch)
        (self.scratch / "runs").mkdir()
        (self.scratch / "job.sbatch").write_text(script)
        env = dict(plan_env(self.scratch / "unused"), **self.slurm.env)
        with open(self.scratch / "job.sbatch", "rb") as stdin:  # as the docs' heredoc: on stdin
            code = self.run_on("node1", ["sbatch", "--wait"], env, "sbatch", stdin=stdin)
        job_id = re.search(r"Submitted batch job (\d+)", self.log("sbatch"))
        self.assertIsNotNone(job_id, self.all_logs())
        job_log = (self.scratch / f"slurm-{job_id[1]}.out").read_text(errors="replace")
        self.assertEqual(code, 0, self.all_logs() + job_log)
        self.assertEqual(job_log.splitlines()[-1], "PASS", job_log)  # the script's own dmlp-verify
        out = self.scratch / "runs" / f"dmlp-{job_id[1]}"
        self.assertRanksOnHosts(out, self.cluster.hosts)
        self.assertSameAsReference(out, 6, "slurm", "SLURM_STEP_NODELIST")


class OpenMpi(ClusterTest):
    """docs/several-hosts.md's mpirun line on node1, reaching node2 and node3 through rsh_agent.sh."""

    def test_readme_mpirun_line(self):
        block = readme_block("mpirun -n 16")
        command = apply_changes(block, MPIRUN_CHANGES, agent=HERE / "rsh_agent.sh")
        (self.scratch / "hosts").write_text("".join(f"{h} slots=2\n" for h in self.cluster.hosts))
        out = self.scratch / "run"
        env = plan_env(out, DMLP_CLUSTER_PREFIX=self.cluster.prefix)
        code = self.run_on("node1", ["/bin/sh", "-c", command], env, "mpirun")
        self.assertEqual(code, 0, self.all_logs())
        self.assertIn("dmlp-train: 6 ranks placed by openmpi; coordinator node1:12355 from "
                      "COORDINATOR_ADDRESS", self.log("mpirun"))
        self.assertRanksOnHosts(out, self.cluster.hosts)
        self.assertSameAsReference(out, 6, "openmpi", "COORDINATOR_ADDRESS")


class Torchrun(ClusterTest):
    """torchrun --nnodes 3, one agent per host, a c10d rendezvous (not in CI)."""

    def start_agents(self, out, rdzv_host, **extra):
        env = plan_env(out, COORDINATOR_PORT=PORT, DMLP_JOB_ID="cluster-" + secrets.token_hex(8),
                      **extra)
        return {host: self.start_on(host, [torchrun_path(), "--no-python", "--nnodes", "3",
                                           "--nproc-per-node", RANKS_PER_HOST, "--max-restarts", "0",
                                           "--rdzv-backend", "c10d", "--rdzv-endpoint",
                                           f"{rdzv_host}:29400", "--rdzv-id", "dmlp-cluster", TRAIN],
                                    env, f"torchrun-{host}")
                for host in self.cluster.hosts}

    def rank_hosts(self, out):
        return [json.loads((out / f"rank-{r}.env.jsonl").read_text().splitlines()[-1])["host"]
                for r in range(RANKS_PER_HOST * 3)]

    def test_three_agents(self):
        """The rendezvous on node1 and COORDINATOR_ADDRESS=node1, as docs/several-hosts.md's
        torchrun line. (c10d numbers the agents in the order of their host names,
        dynamic_rendezvous.py: node1 gets ranks 0 and 1 here.)"""
        out = self.scratch / "run"
        codes = self.wait_all(self.start_agents(out, "node1", COORDINATOR_ADDRESS="node1"),
                              JOB_TIMEOUT)
        self.assertEqual(set(codes.values()), {0}, self.all_logs())
        self.assertEqual(set(self.rank_hosts(out)), set(self.cluster.hosts))
        self.assertSameAsReference(out, 6, "torchrun", "COORDINATOR_ADDRESS")

    def test_coordinator_from_torchrun(self):
        """No COORDINATOR_ADDRESS, and the rendezvous on node3: rank 0's host
        comes from torchrun's MASTER_ADDR (the host of its agent 0), wherever
        the c10d store ran. Only COORDINATOR_PORT is given (torchrun's
        MASTER_PORT is its own store's)."""
        out = self.scratch / "run"
        codes = self.wait_all(self.start_agents(out, "node3"), JOB_TIMEOUT)
        self.assertEqual(set(codes.values()), {0}, self.all_logs())
        rank0_host = self.rank_hosts(out)[0]
        self.assertIn(f"dmlp-train: 6 ranks placed by torchrun; coordinator {rank0_host}:{PORT} "
                      "from MASTER_ADDR", self.log(f"torchrun-{rank0_host}"))
        self.assertSameAsReference(out, 6, "torchrun", "MASTER_ADDR")


class Faults(ClusterTest):
    """A host lost mid-run under three dmlp-launch, then a resume on the two others."""

    def start_job(self):
        out = self.scratch / "run"
        launchers = self.launch_hosts(out, self.cluster.hosts)
        deadline = time.monotonic() + JOB_TIMEOUT
        while steps_recorded(out) < FAULT_STEP:
            finished = [h for h, p in launchers.items() if p.poll() is not None]
            self.assertFalse(finished, f"{finished} ended before step {FAULT_STEP}{self.all_logs()}")
            self.assertLess(time.monotonic(), deadline, self.all_logs())
            time.sleep(0.05)
        self.assertLess(steps_recorded(out), int(PLAN["STEPS"]), "the fault came too late")
        self.assertOnlyClusterConnections()
        return out, launchers

    def assertOnlyClusterConnections(self):
        """Mid-run, every established TCP connection of every host runs between
        the hosts' eth0 addresses: nothing binds lo, even between ranks of one host."""
        subnet = self.cluster.subnet + "."
        for host in self.cluster.hosts:
            pids = self.cluster.pids(host)
            self.assertTrue(pids, host)
            ends = []
            for line in Path(f"/proc/{pids[0]}/net/tcp").read_text().splitlines()[1:]:
                fields = line.split()
                if fields[3] == "01":  # ESTABLISHED
                    ends += [fields[1], fields[2]]
            self.assertTrue(ends, f"no connection on {host}")
            for end in ends:
                address = ".".join(str(int(end[i:i + 2], 16)) for i in (6, 4, 2, 0))
                self.assertTrue(address.startswith(subnet), f"{host}: a connection on {address}")

    def check_fault(self, name, lost_host, inject, heal=None):
        out, launchers = self.start_job()
        at_step = steps_recorded(out)
        fault_time = time.monotonic()
        inject()
        others = {h: p for h, p in launchers.items() if heal is None or h != lost_host}
        codes = self.wait_all(others, END_BOUND)
        detected = time.monotonic() - fault_time
        self.assertNotIn(None, codes.values(), f"still running {END_BOUND}s after the fault{self.all_logs()}")
        self.assertNotIn(0, codes.values(), self.all_logs())
        if heal is not None:
            heal()
            thawed = self.wait_all({lost_host: launchers[lost_host]}, THAW_BOUND)
            self.assertIsNotNone(thawed[lost_host], f"{lost_host} still runs {THAW_BOUND}s after SIGCONT:\n"
                                 f"{self.processes_on(lost_host)}{self.all_logs()}")
            # The thawed ranks end as any rank ends on a loss, also those whose
            # monitor ends them when a wait outlives the loss's hooks
            # (trainer/rendezvous/last_resort.h): PEER_LOST naming a rank and
            # its host, dmlp-train's exit code for it (1), passed on by the launcher.
            self.assertEqual(thawed[lost_host], 1, self.all_logs())
            errors = re.findall(r"dmlp-train: error: (.*)", self.log(f"launch-{lost_host}"))
            self.assertTrue(errors, f"no error from the ranks on {lost_host}{self.all_logs()}")
            for error in errors:
                self.assertRegex(error, r"^PEER_LOST: rank \d+ \(host node\d, ranks \d+,\d+\)",
                                 f"on {lost_host}{self.all_logs()}")
            print(f"DETECT fault={name} heartbeat={HEARTBEAT}s thaw_end={time.monotonic() - fault_time - detected:.2f}s")
        print(f"DETECT fault={name} heartbeat={HEARTBEAT}s step={at_step} end={detected:.1f}s")
        lost = self.cluster.hosts.index(lost_host) * RANKS_PER_HOST
        named = (rf"PEER_LOST: rank ({lost}|{lost + 1}) \(host {lost_host}, ranks {lost},{lost + 1}\)")
        for host in set(self.cluster.hosts) - {lost_host}:
            # Every rank that says why it stopped names the lost host, none a broken socket.
            errors = re.findall(r"dmlp-train: error: (.*)", self.log(f"launch-{host}"))
            self.assertTrue(errors, f"no error from the ranks on {host}{self.all_logs()}")
            for error in errors:
                self.assertRegex(error, named, f"on {host}{self.all_logs()}")
        # A host cut off still runs on this kernel: its processes must end by
        # themselves (rank 0's among them hold dmlp.lock). Nothing is killed
        # before the resume; a process left here fails the test.
        for host in self.cluster.hosts:
            self.assertEqual(self.cluster.pids(host), [],
                             f"processes left on {host}:\n{self.processes_on(host)}{self.all_logs()}")
        verified = run([VERIFY, out])
        self.assertEqual((verified.returncode, verified.stdout.splitlines()[-1]), (3, "INCOMPLETE"),
                         verified.stdout + verified.stderr)
        self.resume_without(out, lost_host)

    def resume_without(self, out, lost_host):
        survivors = [h for h in self.cluster.hosts if h != lost_host]
        for name in list(self.logs):
            self.logs[name].rename(self.logs[name].with_suffix(".faulted.log"))
            self.logs[name + ".faulted"] = self.logs.pop(name).with_suffix(".faulted.log")
        codes = self.wait_all(self.launch_hosts(out, survivors, RESUME=1), JOB_TIMEOUT)
        self.assertEqual(set(codes.values()), {0}, self.all_logs())
        self.assertRanksOnHosts(out, survivors)
        self.assertSameAsReference(out, 4, "dmlp", "COORDINATOR_ADDRESS")

    def test_link_cut(self):
        self.check_fault("link", "node3", lambda: self.cluster.cut_link("node3"))

    def test_silent_partition(self):
        self.check_fault("partition", "node2", lambda: self.cluster.partition("node2"))

    def test_host_frozen(self):
        self.check_fault("freeze", "node3", lambda: self.cluster.signal_host("node3", signal.SIGSTOP),
                         heal=lambda: self.cluster.signal_host("node3", signal.SIGCONT))

    def test_coordinator_host_lost(self):
        self.check_fault("coordinator", "node1", lambda: self.cluster.cut_link("node1"))


CASES = {
    "reference": (Reference, None),
    "launch": (Launch, None),
    "slurm": (Slurm, slurm_missing),
    "openmpi": (OpenMpi, lambda: [] if shutil.which("mpirun") else ["mpirun"]),
    "torchrun": (Torchrun, lambda: [] if torchrun_path() else ["torchrun"]),
    "fault_link": (Faults, "test_link_cut"),
    "fault_partition": (Faults, "test_silent_partition"),
    "fault_freeze": (Faults, "test_host_frozen"),
    "fault_coordinator": (Faults, "test_coordinator_host_lost"),
}


def main():
    if len(sys.argv) < 2 or sys.argv[1] not in CASES:
        print(f"usage: {sys.argv[0]} {{{'|'.join(CASES)}}}", file=sys.stderr)
        return 2
    case, extra = CASES[sys.argv[1]]
    missing = cluster_missing() + (["root"] if os.geteuid() != 0 else [])
    if sys.argv[1] == "fault_partition" and shutil.which("nft") is None:
        missing.append("nft")
    if callable(extra):
        missing += extra()
    if missing:
        if os.environ.get("CI") and sys.argv[1] != "torchrun":
            # CI runs these as root with tools/install-deps.sh's packages: a skip would hide them.
            print(f"FAIL: {sys.argv[1]}: missing {' '.join(missing)}; in CI this case must run")
            return 1
        print(f"SKIP: {sys.argv[1]}: missing {' '.join(missing)}")
        return SKIP
    if case is not Reference:
        ensure_reference()
    loader = unittest.defaultTestLoader
    suite = (loader.loadTestsFromName(extra, case) if isinstance(extra, str)
             else loader.loadTestsFromTestCase(case))
    outcome = unittest.TextTestRunner(verbosity=2).run(suite)
    return 0 if outcome.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
