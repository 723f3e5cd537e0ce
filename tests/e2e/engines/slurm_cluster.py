"""A Slurm cluster for the engine tests: munged, slurmctld and slurmd in the
foreground as our own children, every file under one temporary directory,
each daemon stopped by pid (never by name).

By default one node on localhost (tests/e2e/engines); given several nodes and
a way to run a command on each (tests/e2e/cluster: one network namespace per
host), one slurmd per node, each started on its own host, with slurmctld on
the first. One munged serves them all: its socket is a path on the shared
filesystem. The slurmds' spool, pid and log paths carry `%n` (the node's name),
so several slurmd on one kernel never share a file.

Slurm's ports: `ctld_port` and the next one; the daemons run as root with
proctrack/linuxproc and task/none, so no cgroups or systemd are needed, and
2 CPUs per node, so `srun -n 2` fits on a 2-core machine."""

import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

SLURM_PROGRAMS = ("munged", "slurmctld", "slurmd", "srun", "sbatch", "scancel", "sinfo")
PLUGIN_DIRS = ("/usr/lib/x86_64-linux-gnu/slurm-wlm", "/usr/lib/aarch64-linux-gnu/slurm-wlm",
               "/usr/lib/slurm-wlm", "/usr/lib64/slurm")


def missing_programs():
    return [p for p in SLURM_PROGRAMS if shutil.which(p) is None]


def _plugin_dir():
    for candidate in PLUGIN_DIRS:
        if Path(candidate, "proctrack_linuxproc.so").exists():
            return candidate
    return None


CONF = """\
ClusterName=dmlpe2e
SlurmctldHost={controller}
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={root}/sock/munge.socket
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool/%n
SlurmctldPidFile={root}/slurmctld.pid
SlurmdPidFile={root}/slurmd-%n.pid
SlurmctldLogFile={root}/log/slurmctld.log
SlurmdLogFile={root}/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
KillWait=5
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
SwitchType=switch/none
PluginDir={plugin_dir}
{node_lines}PartitionName=e2e Nodes={node_names} Default=YES MaxTime=UNLIMITED State=UP OverSubscribe=YES
"""


class SlurmCluster:
    """Use as a context manager; `env` holds SLURM_CONF for srun/sbatch.

    nodes: (name, address) pairs; on_host(name, argv) returns the argv that
    runs argv on that node (default: here). slurmctld, sinfo and scancel run
    on the first node, the controller."""

    def __init__(self, ctld_port, ready_timeout=60, nodes=(("localhost", "127.0.0.1"),),
                 on_host=None):
        self.ctld_port = ctld_port
        self.ready_timeout = ready_timeout
        self.nodes = list(nodes)
        self.on_host = on_host or (lambda host, argv: list(argv))
        self.root = None
        self.daemons = []  # Popen objects, stopped in reverse order by pid
        self.env = {}

    def __enter__(self):
        self.root = Path(tempfile.mkdtemp(prefix="dmlp-slurm-"))
        try:
            self._start()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _start(self):
        root = self.root
        for name, mode in (("key", 0o700), ("sock", 0o755), ("state", 0o755),
                           ("spool", 0o755), ("log", 0o755)):
            (root / name).mkdir()
            os.chmod(root / name, mode)
        os.chmod(root, 0o755)  # munged wants every directory on the socket's path searchable
        key = root / "key" / "munge.key"
        key.write_bytes(os.urandom(1024))
        os.chmod(key, 0o600)
        conf = root / "slurm.conf"
        for name, _ in self.nodes:
            (root / "spool" / name).mkdir(mode=0o755)
        controller = "{}({})".format(*self.nodes[0])
        node_lines = "".join(f"NodeName={name} NodeAddr={address} CPUs=2 State=UNKNOWN\n"
                             for name, address in self.nodes)
        conf.write_text(CONF.format(root=root, ctld_port=self.ctld_port, controller=controller,
                                    slurmd_port=self.ctld_port + 1, plugin_dir=_plugin_dir(),
                                    node_lines=node_lines,
                                    node_names=",".join(name for name, _ in self.nodes)))
        self.env = {"SLURM_CONF": str(conf)}
        env = dict(os.environ, **self.env)
        self._daemon(["munged", "-F", f"--socket={root}/sock/munge.socket", f"--key-file={key}",
                      f"--log-file={root}/log/munged.log", f"--pid-file={root}/sock/munged.pid",
                      f"--seed-file={root}/key/seed"], env)
        self._wait_for(lambda: (root / "sock" / "munge.socket").exists(), "munged's socket")
        self._daemon(self.on_controller(["slurmctld", "-D", "-i"]), env, "slurmctld")
        for name, _ in self.nodes:
            self._daemon(self.on_host(name, ["slurmd", "-D", "-N", name]), env, f"slurmd-{name}")
        self._wait_for(self._node_idle, "every node to be idle")

    def on_controller(self, argv):
        """argv run on the controller's host (srun, sbatch and sinfo talk to it there)."""
        return self.on_host(self.nodes[0][0], argv)

    def _daemon(self, argv, env, name=None):
        log = open(self.root / "log" / ((name or Path(argv[0]).name) + ".out"), "wb")
        self.daemons.append(subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=log,
                                             stderr=subprocess.STDOUT, start_new_session=True))
        log.close()

    def _node_idle(self):
        for daemon in self.daemons:
            if daemon.poll() is not None:
                raise RuntimeError(f"{daemon.args[0]} exited with {daemon.returncode}: "
                                   + self.logs())
        state = subprocess.run(self.on_controller(["sinfo", "-h", "-N", "-o", "%t"]),
                               env=dict(os.environ, **self.env), capture_output=True, text=True,
                               timeout=20)
        states = state.stdout.split()
        return state.returncode == 0 and states == ["idle"] * len(self.nodes)

    def _wait_for(self, predicate, what):
        deadline = time.monotonic() + self.ready_timeout
        while time.monotonic() < deadline:
            if predicate():
                return
            time.sleep(0.2)
        raise RuntimeError(f"slurm cluster: timed out waiting for {what}: " + self.logs())

    def logs(self):
        text = ""
        for log in sorted((self.root / "log").glob("*")):
            text += f"\n--- {log.name}\n" + log.read_text(errors="replace")[-3000:]
        return text

    def __exit__(self, *exc):
        if self.daemons and self.daemons[-1].poll() is None:
            # Our cluster's jobs only: SLURM_CONF names this cluster.
            subprocess.run(self.on_controller(["scancel", "--full", "--user=root"]),
                           env=dict(os.environ, **self.env), capture_output=True, timeout=20)
        for daemon in reversed(self.daemons):
            if daemon.poll() is None:
                daemon.send_signal(signal.SIGTERM)
                try:
                    daemon.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    daemon.kill()
                    daemon.wait(timeout=15)
        if self.root is not None:
            shutil.rmtree(self.root, ignore_errors=True)
        return False
