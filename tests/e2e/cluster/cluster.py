"""A small cluster of hosts on this one kernel, for the multi-host tests.

Each host `node1..nodeK` is a network namespace (`<prefix>-node<i>`) with
loopback and `eth0` = 10.127.27.<i>/24 (by default), joined to the others by
a bridge that lives in a namespace of its own (`<prefix>-switch`), so no
packet ever reaches this machine's own interfaces or any other network. Each
host has its own host name (a UTS namespace); every host shares one mount
namespace in which /etc/hosts names all of them, so `node2` resolves
everywhere. The filesystem is this machine's, shared by all hosts as NFS
would be (same paths, one kernel's locks).

Processes run on a host through `command(host, argv)` (nsenter). A process
belongs to a host when it lives in that host's network namespace: that is how
`pids()` finds every one of them, whoever started it (an engine's daemon, a
rank), and how teardown ends them, by pid.

Setup and teardown are idempotent: setup first removes whatever an earlier
run with the same prefix left (a test that crashed), and teardown removes
everything setup made (processes, namespaces, the bridge, /run/<prefix>).
Needs root, `ip` (iproute2), `unshare`, `nsenter`, `mount` (util-linux).

    python3 cluster.py up|down|run HOST CMD...   (by hand; prefix DMLP_CLUSTER_PREFIX)
"""

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

DEFAULT_PREFIX = os.environ.get("DMLP_CLUSTER_PREFIX", "dmlp27")
DEFAULT_SUBNET = "10.127.27"
INTERFACE = "eth0"
PROGRAMS = ("ip", "unshare", "nsenter", "mount", "umount")


def missing_programs():
    return [p for p in PROGRAMS if shutil.which(p) is None]


def _run(*argv, check=True):
    result = subprocess.run([str(a) for a in argv], capture_output=True, text=True,
                            stdin=subprocess.DEVNULL, timeout=60)
    if check and result.returncode != 0:
        raise RuntimeError(f"cluster: {' '.join(map(str, argv))} failed ({result.returncode}): "
                           f"{result.stderr.strip()}")
    return result


def _namespace_inode(path):
    try:
        return os.stat(path).st_ino
    except OSError:
        return None


class Cluster:
    """Hosts node1..node<count>; use as a context manager or call setup()/teardown()."""

    def __init__(self, count=3, prefix=DEFAULT_PREFIX, subnet=DEFAULT_SUBNET):
        self.hosts = [f"node{i}" for i in range(1, count + 1)]
        self.prefix = prefix
        self.subnet = subnet
        self.state = Path("/run") / prefix
        self.switch = f"{prefix}-switch"

    # --- names -------------------------------------------------------------
    def netns(self, host):
        return f"{self.prefix}-{host}"

    def address(self, host):
        return f"{self.subnet}.{self.hosts.index(host) + 1}"

    def _uts_file(self, host):
        return self.state / f"{host}.uts"

    def _mount_file(self):
        return self.state / "mnt"

    def hosts_file(self):
        return self.state / "hosts"

    # --- setup -------------------------------------------------------------
    def setup(self):
        self.teardown()
        try:
            self._make_state_dir()
            _run("ip", "netns", "add", self.switch)
            _run("ip", "-n", self.switch, "link", "add", "br0", "type", "bridge")
            _run("ip", "-n", self.switch, "link", "set", "br0", "up")
            for host in self.hosts:
                self._make_host(host)
            self._make_mount_namespace()
        except BaseException:
            self.teardown()
            raise
        return self

    def _make_state_dir(self):
        # A persistent mount namespace can only be bound onto a file in a
        # private mount (else the kernel refuses the loop): the ip-netns recipe.
        self.state.mkdir(mode=0o755)
        _run("mount", "--bind", self.state, self.state)
        _run("mount", "--make-private", self.state)
        self.hosts_file().write_text(
            "127.0.0.1 localhost\n::1 localhost ip6-localhost ip6-loopback\n"
            + "".join(f"{self.address(h)} {h}\n" for h in self.hosts))

    def _make_host(self, host):
        netns, port = self.netns(host), f"p{host}"
        _run("ip", "netns", "add", netns)
        # One veth per host: `p<host>` on the bridge, `eth0` in the host.
        _run("ip", "-n", self.switch, "link", "add", port, "type", "veth",
             "peer", "name", INTERFACE, "netns", netns)
        _run("ip", "-n", self.switch, "link", "set", port, "master", "br0", "up")
        _run("ip", "-n", netns, "link", "set", "lo", "up")
        _run("ip", "-n", netns, "addr", "add", f"{self.address(host)}/24", "dev", INTERFACE)
        _run("ip", "-n", netns, "link", "set", INTERFACE, "up")
        uts = self._uts_file(host)
        uts.touch()
        _run("unshare", f"--uts={uts}", "hostname", host)

    def _mount_holder_file(self):
        return self.state / "mnt.pid"

    def _make_mount_namespace(self):
        # Not `unshare --mount=FILE`: the kernel refuses to bind a mount
        # namespace's file (EINVAL, "a loop") when the caller's own mount
        # namespace has the larger id; Linux 6.18 most likely hands the ids out
        # in per-CPU batches (not proven here), and it happened at random when the tests ran in
        # a mount namespace of their own (a CI runner's; seen in 2 of 3 CI
        # rehearsals). A holder process keeps the namespace alive instead, and
        # `mnt` links to it; teardown ends the holder by pid.
        holder = subprocess.Popen(
            ["unshare", "--mount", "--propagation", "private", "sh", "-c",
             'mount --bind "$1" /etc/hosts && echo ready && exec sleep infinity', "sh",
             str(self.hosts_file())],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            start_new_session=True)
        self._holder = holder
        self._mount_holder_file().write_text(f"{holder.pid}\n")
        if holder.stdout.readline().strip() != "ready":
            holder.kill()
            _, error = holder.communicate(timeout=60)
            raise RuntimeError(f"cluster: the mount namespace's holder failed: {error.strip()}")
        self._mount_file().symlink_to(f"/proc/{holder.pid}/ns/mnt")

    def _end_mount_holder(self):
        """Ends the holder of the hosts' mount namespace, by the pid setup wrote,
        if that pid is still a holder (`sleep infinity` in another mount namespace)."""
        try:
            pid = int(self._mount_holder_file().read_text())
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            theirs = os.stat(f"/proc/{pid}/ns/mnt").st_ino != os.stat("/proc/self/ns/mnt").st_ino
        except (OSError, ValueError):
            return
        if cmdline == b"sleep\0infinity\0" and theirs:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        holder = getattr(self, "_holder", None)
        if holder is not None and holder.pid == pid:
            holder.wait(timeout=60)
            self._holder = None

    # --- use ---------------------------------------------------------------
    def command(self, host, argv, cwd=None):
        """argv run on `host` (in the directory cwd, default this process's)."""
        return ["nsenter", f"--net=/run/netns/{self.netns(host)}", f"--uts={self._uts_file(host)}",
                f"--mount={self._mount_file()}", f"--wd={cwd or os.getcwd()}", "--",
                *[str(a) for a in argv]]

    def pids(self, host):
        """Every process on `host` (in its network namespace), this one excluded."""
        inode = _namespace_inode(f"/run/netns/{self.netns(host)}")
        if inode is None:
            return []
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) == os.getpid():
                continue
            if _namespace_inode(entry / "ns" / "net") == inode:
                found.append(int(entry.name))
        return found

    def signal_host(self, host, signum):
        """Sends signum to every process on `host`, by pid; returns the pids."""
        pids = self.pids(host)
        for pid in pids:
            try:
                os.kill(pid, signum)
            except ProcessLookupError:
                pass
        return pids

    def end_processes(self, host, timeout=10):
        """SIGKILL every process on `host` by pid until none is left."""
        deadline = time.monotonic() + timeout
        while self.pids(host):
            if time.monotonic() > deadline:
                raise RuntimeError(f"cluster: processes on {host} outlive SIGKILL: {self.pids(host)}")
            self.signal_host(host, signal.SIGCONT)  # a stopped process dies only once continued... or killed
            self.signal_host(host, signal.SIGKILL)
            time.sleep(0.1)

    # --- faults ------------------------------------------------------------
    def cut_link(self, host):
        """The host's cable pulled: eth0 down (its own end, as a dead NIC)."""
        _run("ip", "-n", self.netns(host), "link", "set", INTERFACE, "down")

    def partition(self, host):
        """A silent partition: every packet in or out of eth0 dropped, no reset sent."""
        rules = (f"table inet {self.prefix}_partition {{\n"
                 f"  chain in {{ type filter hook input priority 0; iifname \"{INTERFACE}\" drop; }}\n"
                 f"  chain out {{ type filter hook output priority 0; oifname \"{INTERFACE}\" drop; }}\n"
                 "}\n")
        subprocess.run(["ip", "netns", "exec", self.netns(host), "nft", "-f", "-"], input=rules,
                       text=True, check=True, capture_output=True, timeout=60)

    # --- teardown ----------------------------------------------------------
    def teardown(self):
        for host in self.hosts:
            self.end_processes(host)
            _run("ip", "netns", "del", self.netns(host), check=False)
        _run("ip", "netns", "del", self.switch, check=False)
        if self.state.exists():
            self._end_mount_holder()
            for bound in [self._uts_file(h) for h in self.hosts]:
                _run("umount", bound, check=False)
            _run("umount", self.state, check=False)
            shutil.rmtree(self.state, ignore_errors=True)

    def __enter__(self):
        return self.setup()

    def __exit__(self, *exc):
        self.teardown()
        return False


def main(argv):
    cluster = Cluster()
    if argv[:1] == ["up"]:
        cluster.setup()
        for host in cluster.hosts:
            print(f"{host} {cluster.address(host)} netns {cluster.netns(host)}")
        return 0
    if argv[:1] == ["down"]:
        cluster.teardown()
        return 0
    if len(argv) >= 3 and argv[0] == "run":
        return subprocess.run(cluster.command(argv[1], argv[2:])).returncode
    print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
