"""Freeze and restore for real (CRIU): a 2-rank CPU job (dmlp-launch and
both ranks, their TCP connections, rank 0's flock on dmlp.lock) dumped whole
by CRIU (tools/criu.sh, Debian sid's 4.2) and restored, each case compared
byte for byte with an uninterrupted run of the same job:

  a) dumped mid-run, kept down longer than HEARTBEAT_TIMEOUT_SECONDS, restored
     in place: PASS, identical, each rank's env file names its restore;
  b) restored into a new network namespace with another host name: PASS,
     identical, the host change named;
  c) dumped with --leave-running (checkpoints on), then killed with kill -9
     after its receipts grew past the dump: CRIU refuses ("has bad size"),
     OUT_DIR is left as it was, and RESUME=1 completes it identical;
  d) dumped and restored twice in one run: PASS, identical;
  e) the job started by run.sh (as the image starts it), run.sh dumped with it;
  f) a CRIU slow to start, which begins only once the job has ended or is
     held: the dump still finds the job (held) and the run is identical.

Each dump is of the job held still (SIGSTOP, freeze.hold), which CRIU
restores stopped and the case then lets go on (SIGCONT): a job that ended
while CRIU started would leave it a zombie to seize.

Usage: criu_e2e.py CASE (a..f) [--in-pid-namespace]. With --in-pid-namespace
the case runs in a new pid namespace, where the caller's session leader is
outside (as in a container or a CI runner; CRIU refused such a job until the
tests started it in a session of its own). Exit 77 (SKIP) with CRIU's own words when
`criu check` fails (no root, an old kernel); any other failure of the helper
is a failure. Every wait has a deadline; processes are ended by pid; the
network namespace and host name carry the prefix dmlp25.
Environment: DMLP_BIN_DIR (the programs), DMLP_SOURCE_DIR (the repository).
"""

import json
import os
import signal
import socket
import subprocess
import sys
import time
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCE = Path(os.environ.get("DMLP_SOURCE_DIR", HERE.parents[2]))
sys.path.insert(0, str(SOURCE / "tests" / "e2e" / "trainer"))
from harness import (LAUNCH, TRAIN, BIN_DIR, JobTestCase, tiny_job_env, launch,  # noqa: E402
                     line_count, rank_pids, verify, wait_for)
from freeze import (CRIU, alive, become_subreaper, children_of, dump, end_tree,  # noqa: E402
                    exit_status, hold, log_tail, release, restore, restore_command, spawn)

RUN_SH = SOURCE / "run.sh"
FREEZING = SOURCE / "docs" / "freezing-and-restoring.md"
# Many short steps: the job is still running when the dump comes, however
# loaded the machine; a heartbeat the freeze overruns (case a's point). The
# tiny job runs about 1,200 steps/s through shared memory on the development
# machine (a dump takes 0.1-0.3 s to stop it): 3,000 leave case d's second
# dump seconds to spare.
PLAN = {"STEPS": 3000, "HEARTBEAT_TIMEOUT_SECONDS": 4}
FROZEN_SECONDS = 6
RECEIPTS = ("metrics.jsonl", "rank-0.jsonl", "rank-1.jsonl", "state.safetensors")
DEADLINE = 240  # seconds, for any one wait of a case
NETNS = f"dmlp25-moved-{os.getpid()}"
MOVED_HOST = "dmlp25-moved"


def skip_without_criu():
    """Exit 77 with CRIU's words when `criu check` fails; the first call fetches criu
    (a failure of the helper itself is a failure, not a skip)."""
    check = subprocess.run([str(CRIU), "check"], capture_output=True, text=True, timeout=600,
                           stdin=subprocess.DEVNULL)
    if "criu.sh: error:" in check.stderr:
        if os.geteuid() != 0:  # CRIU needs root (and the helper's cache is root's)
            print(f"SKIP: not root; CRIU needs root. The helper says:\n{check.stderr}")
            sys.exit(77)
        # An image builder has no Debian sid to fetch from and no privileges
        # for CRIU: there, a skip with the helper's words. In CI (CI set) the
        # helper must work: its failure is the test's.
        if not os.environ.get("CI"):
            print(f"SKIP: the CRIU helper could not provide criu (CI unset). It says:\n{check.stderr}")
            sys.exit(77)
        sys.exit(f"criu_e2e: the CRIU helper failed:\n{check.stderr}")
    if check.returncode != 0:
        print(f"SKIP: criu check failed (exit {check.returncode}); CRIU says:\n"
              f"{check.stdout}{check.stderr}")
        sys.exit(77)


def tree_bytes(directory):
    return {str(p.relative_to(directory)): p.read_bytes()
            for p in sorted(Path(directory).rglob("*")) if p.is_file()}


class Freeze(JobTestCase):
    def setUp(self):
        super().setUp()
        self.root = None  # the job's root pid: ended by pid in tearDown if still there
        self.criu = CRIU  # what dumps run: tools/criu.sh, or case f's slow start
        self.netns = None
        self.log = self.scratch / "job.log"

    def tearDown(self):
        if self.root is not None:
            end_tree(self.root)
        if self.netns:
            subprocess.run(["ip", "netns", "delete", self.netns], check=False)
        super().tearDown()

    # ---- the job --------------------------------------------------------------
    def baseline(self, **overrides):
        """The uninterrupted run of the same job."""
        out = self.scratch / "baseline"
        result = launch(out, 2, timeout=DEADLINE, **PLAN, **overrides)
        self.assertEqual(result.returncode, 0, result.stderr)
        return out

    def start_job(self, args, env):
        self.root = spawn(args, env, self.log)
        return self.root

    def start_launcher(self, out, **overrides):
        return self.start_job([LAUNCH, "--grace", "5", TRAIN], tiny_job_env(out, 2, **PLAN, **overrides))

    def wait_steps(self, out, steps):
        def reached():
            if not alive(self.root):
                raise AssertionError(f"the job ended early:\n{log_tail(self.log)}")
            return line_count(out / "rank-1.jsonl") >= steps
        wait_for(reached, DEADLINE, f"step {steps} in {out}")

    def finish(self):
        """The job's root ends by itself with status 0."""
        status = exit_status(self.root, DEADLINE)
        self.assertIsNotNone(status, f"the job still runs after {DEADLINE} s:\n{log_tail(self.log)}")
        self.root = None
        self.assertEqual(status, 0, log_tail(self.log))

    # ---- CRIU ---------------------------------------------------------------------
    def dump(self, images, *extra):
        """criu dump of the job, held still first (freeze.hold: the job must not
        end while CRIU starts). Returns the pids held, which CRIU restores
        stopped, and the exit statuses of the dumped tree."""
        held = hold(self.root, DEADLINE)
        result, statuses = dump(self.root, images, *extra, timeout=DEADLINE, criu=self.criu)
        self.assertEqual(result.returncode, 0, f"criu dump failed:\n{log_tail(images / 'dump.log')}")
        return held, statuses

    def freeze(self, out, name, wrap=()):
        """Dump (criu kills the job), stay down FROZEN_SECONDS, restore in place or
        under `wrap`. Returns the last step each rank had recorded at the dump."""
        images = self.scratch / name
        held, statuses = self.dump(images)
        self.assertEqual(statuses.get(self.root), -signal.SIGKILL, "criu dump left the job running")
        dumped = {rank: line_count(out / f"rank-{rank}.jsonl") for rank in range(2)}
        self.assertLess(max(dumped.values()), PLAN["STEPS"], "the job ran too far to test")
        time.sleep(FROZEN_SECONDS)  # the freeze outlasts HEARTBEAT_TIMEOUT_SECONDS
        result = restore(images, wrap, timeout=DEADLINE)
        self.assertEqual(result.returncode, 0,
                         f"criu restore failed:\n{result.stderr}{log_tail(images / 'restore.log')}")
        self.assertTrue(alive(self.root), f"restored pid {self.root} is not running")
        release(held)  # restored stopped, as it was dumped
        return dumped

    # ---- what the user sees ---------------------------------------------------------
    def env_lines(self, out, rank):
        return [json.loads(line) for line in (out / f"rank-{rank}.env.jsonl").read_text().splitlines()]

    def assertRestoresNamed(self, out, dumps, why=r"clock jumped by -?\d+\.\d s"):
        """Each rank's env file has one "restored" line per freeze, after the step
        it was dumped at, saying why; the verifier shows them and says PASS."""
        for rank in range(2):
            lines = self.env_lines(out, rank)
            self.assertEqual([l["event"] for l in lines], ["start"] + ["restored"] * len(dumps), lines)
            for line, dumped in zip(lines[1:], dumps):
                self.assertEqual(line["after_step"], dumped[rank], line)
                self.assertRegex(line["why"], why, line)
        result = verify(out)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assertEqual(result.stdout.strip().splitlines()[-1], "PASS")
        for rank in range(2):  # "rank 1: host h, cpu ...; 2 (re)starts: start, restored after step 5 (why)"
            self.assertRegex(result.stdout, rf"(?m)rank {rank}: host .*; {len(dumps) + 1} \(re\)starts: start"
                             + "".join(rf", restored after step {d[rank]} \(.*?" for d in dumps) + r"\)$")

    def assertIdentical(self, out, baseline):
        self.assertSameBytes(out, baseline, RECEIPTS)
        # The two ranks exchanged their bytes through shared memory (a memfd
        # CRIU dumped and restored with them), the default on one host.
        fingerprint = json.loads((Path(out) / "result.json").read_text())["fingerprint"]
        self.assertEqual(fingerprint["transport"], "shared memory")
        result = verify(out, "--against", baseline)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)

    # ---- the cases ---------------------------------------------------------------------
    def test_a_in_place(self):
        self.check_in_place()

    def check_in_place(self):
        baseline = self.baseline()
        out = self.scratch / "run"
        self.start_launcher(out)
        self.wait_steps(out, 5)
        dumped = self.freeze(out, "images")
        self.finish()
        self.assertRestoresNamed(out, [dumped])
        self.assertIdentical(out, baseline)

    def test_b_another_machine(self):
        baseline = self.baseline()
        out = self.scratch / "run"
        self.start_launcher(out)
        self.wait_steps(out, 5)
        subprocess.run(["ip", "netns", "add", NETNS], check=True)
        self.netns = NETNS
        # A new network namespace (only its loopback, brought up) and a new UTS
        # namespace with another host name: the job wakes up "on another machine".
        wrap = ["ip", "netns", "exec", NETNS, "unshare", "--uts", "sh", "-c",
                f'ip link set lo up && hostname {MOVED_HOST} && exec "$0" "$@"']
        dumped = self.freeze(out, "images", wrap)
        self.finish()
        host = socket.gethostname()
        self.assertRestoresNamed(out, [dumped], rf"host name changed \({host} -> {MOVED_HOST}\)")
        self.assertEqual(self.env_lines(out, 1)[1]["host"], MOVED_HOST)
        self.assertIdentical(out, baseline)

    def test_c_refused_restore_then_resume(self):
        settings = {"CHECKPOINT_EVERY": 20}
        baseline = self.baseline(**settings)
        out = self.scratch / "run"
        self.start_launcher(out, **settings)
        self.wait_steps(out, 5)
        images = self.scratch / "images"
        held, _ = self.dump(images, "--leave-running")
        dumped = line_count(out / "rank-1.jsonl")
        release(held)
        # The job goes on past the dump and past a checkpoint, then dies by kill -9.
        self.wait_steps(out, dumped + 45)
        end_tree(self.root)
        self.root = None
        self.assertLess(line_count(out / "rank-1.jsonl"), PLAN["STEPS"], "the job ran too far to test")
        before = tree_bytes(out)
        refused = subprocess.run(restore_command(images), capture_output=True, text=True,
                                 timeout=DEADLINE)
        log = (images / "restore.log").read_text(errors="replace")
        self.assertNotEqual(refused.returncode, 0, log)
        # criu names the file relative to / ("File tmp/.../rank-1.jsonl has bad size 11506 (expect 2629)").
        self.assertRegex(log, rf"File {str(out).lstrip('/')}/(rank-[01]|metrics)\.jsonl has bad size \d+ "
                              r"\(expect \d+\)")
        self.assertEqual(tree_bytes(out), before, "the refused restore changed OUT_DIR")
        # What docs/freezing-and-restoring.md tells the user to do then: RESUME=1 from the last checkpoint.
        resumed = launch(out, 2, timeout=DEADLINE, RESUME=1, **PLAN, **settings)
        self.assertEqual(resumed.returncode, 0, resumed.stderr)
        self.assertIdentical(out, baseline)
        docs = FREEZING.read_text()
        section = docs[docs.index("## Freezing and restoring a job"):]
        self.assertIn("has bad size", section)
        self.assertIn("RESUME=1", section)

    def test_d_two_evictions(self):
        baseline = self.baseline()
        out = self.scratch / "run"
        self.start_launcher(out)
        self.wait_steps(out, 5)
        first = self.freeze(out, "images-1")
        self.wait_steps(out, first[1] + 20)
        second = self.freeze(out, "images-2")
        self.finish()
        self.assertRestoresNamed(out, [first, second])
        self.assertIdentical(out, baseline)

    def test_e_run_sh(self):
        baseline = self.baseline()
        out = self.scratch / "run"
        env = tiny_job_env(out, 2, **PLAN)
        env["PATH"] = f"{BIN_DIR}{os.pathsep}{env.get('PATH', '/usr/bin:/bin')}"
        self.start_job([RUN_SH], env)
        self.wait_steps(out, 5)
        self.assertTrue(children_of(self.root), "run.sh has no dmlp-launch below it")
        dumped = self.freeze(out, "images")
        self.finish()
        log = self.log.read_text()
        self.assertIn(f"run.sh: job complete and verified: {out}", log)
        self.assertEqual(log.splitlines().count("PASS"), 1, log)
        self.assertRestoresNamed(out, [dumped])
        self.assertIdentical(out, baseline)

    def test_f_criu_slow_to_start(self):
        self.criu = self.slow_criu()
        self.check_in_place()

    def slow_criu(self):
        """tools/criu.sh as slow to start as a loaded machine can make it (its
        loader, its probes of the kernel): `dump -t PID ...` begins only once
        PID has ended (a zombie) or is held (stopped). A job left running ends first."""
        path = self.scratch / "slow-criu"
        path.write_text(f"""#!/bin/sh
[ "$1 $2" = "dump -t" ] || exec {CRIU} "$@"
root=$3
state() {{ sed 's/.*) //' "/proc/$root/stat" | cut -d' ' -f1; }}
until [ "$(state)" = Z ] || [ "$(state)" = T ]; do sleep 0.05; done
exec {CRIU} "$@"
""")
        path.chmod(0o755)
        return path


CASES = {"a": "test_a_in_place", "b": "test_b_another_machine",
         "c": "test_c_refused_restore_then_resume", "d": "test_d_two_evictions",
         "e": "test_e_run_sh", "f": "test_f_criu_slow_to_start"}

def enter_pid_namespace():
    """Re-runs this case as pid 1's child in a new pid namespace (with its own
    /proc), where the session leader of the shell or ctest that started it is
    outside: the situation of a container or a CI runner under its own pid
    namespace. Where namespaces cannot be made (an image builder), a skip
    outside CI and a failure in CI, as for CRIU itself."""
    unshare = ["unshare", "--pid", "--fork", "--mount-proc"]
    probe = subprocess.run([*unshare, "true"], capture_output=True, text=True,
                           stdin=subprocess.DEVNULL, timeout=60)
    if probe.returncode != 0:
        words = f"`{' '.join(unshare)} true` failed (exit {probe.returncode}): {probe.stderr.strip()}"
        if not os.environ.get("CI"):
            print(f"SKIP: no pid namespace here (CI unset); {words}")
            sys.exit(77)
        sys.exit(f"criu_e2e: {words}")
    env = dict(os.environ, DMLP_CRIU_E2E_IN_PID_NAMESPACE="1")
    os.execvpe(unshare[0], [*unshare, sys.executable, __file__, sys.argv[1]], env)


if __name__ == "__main__":
    pid_namespace = sys.argv[2:] == ["--in-pid-namespace"]
    if len(sys.argv) not in (2, 3) or sys.argv[1] not in CASES or (len(sys.argv) == 3 and not pid_namespace):
        sys.exit(f"usage: criu_e2e.py {{{','.join(CASES)}}} [--in-pid-namespace]")
    skip_without_criu()
    if pid_namespace and not os.environ.get("DMLP_CRIU_E2E_IN_PID_NAMESPACE"):
        enter_pid_namespace()
    become_subreaper()
    suite = unittest.TestSuite([Freeze(CASES[sys.argv[1]])])
    sys.exit(0 if unittest.TextTestRunner(verbosity=2).run(suite).wasSuccessful() else 1)
