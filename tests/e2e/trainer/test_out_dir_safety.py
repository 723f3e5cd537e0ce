"""Hostile and unlucky users, OUT_DIR: nothing is written through
a link planted in OUT_DIR, a refused or interrupted resume never makes a run
unresumable, and a refused start (or a second job in the same OUT_DIR) leaves
OUT_DIR exactly as it found it."""

import hashlib
import json
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import time
import unittest
from pathlib import Path

from harness import (LAUNCH, TRAIN, JobTestCase, alive, children_of, tiny_job_env, launch,
                     line_count, rank_pids, run, stopped, wait_for)

STEPS = 10
CHECKPOINTED = {"STEPS": STEPS, "CHECKPOINT_EVERY": 2, "DATA_SHARDS": 4}
INJECT_FAULT = Path(__file__).with_name("inject_fault.sh")
RANK_FILES = ("metrics.jsonl", "state.safetensors", "rank-0.jsonl", "rank-1.jsonl")
# The named points of a resume (trainer/output/replay.h), in order.
RESUME_STAGES = ("validated", "aside-made", "moved-one", "moved", "decided", "created",
                 "rewriting", "rewritten")
LONG_STEPS = 1000
OUTSIDE_BYTES = b"outside OUT_DIR: must never change\n"


def tree(root):
    """{relative path: what it is} for everything under root, links not followed:
    hashes of files, targets of links, and directories, so any change shows."""
    root = Path(root)
    if not root.exists() and not root.is_symlink():
        return None
    found = {}
    for path in sorted(root.rglob("*")):
        name = str(path.relative_to(root))
        if path.is_symlink():
            found[name] = "link -> " + os.readlink(path)
        elif path.is_dir():
            found[name] = "dir"
        else:
            data = path.read_bytes()
            found[name] = f"{len(data)} bytes {hashlib.sha256(data).hexdigest()}"
    return found


def listening(port):
    """True when some socket listens on 127.0.0.1/0.0.0.0:port (read from /proc, no connection)."""
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                return True
    return False


def forge_checkpoint(path):
    """Changes one value of a checkpoint and records the new digest in it, so the
    file is self-consistent but no longer matches the receipts."""
    data = bytearray(path.read_bytes())
    header_length = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + header_length])
    old_digest = header["__metadata__"]["params_sha256"]
    data[-5] ^= 0x10
    new_digest = hashlib.sha256(bytes(data[8 + header_length:])).hexdigest()
    path.write_bytes(bytes(data).replace(old_digest.encode(), new_digest.encode()))


class SafetyTestCase(JobTestCase):
    baseline = None

    @classmethod
    def setUpClass(cls):
        cls.baseline_dir = Path(tempfile.mkdtemp(prefix="dmlp-baseline-"))
        result = launch(cls.baseline_dir / "run", 2, **CHECKPOINTED)
        assert result.returncode == 0, result.stderr
        cls.baseline = cls.baseline_dir / "run"

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.baseline_dir, ignore_errors=True)

    def kill_rank_at(self, out, victim, step):
        """A 2-rank job whose rank `victim` is SIGKILLed right after its receipt of `step`."""
        env = tiny_job_env(out, 2, **CHECKPOINTED)
        env.update({"DMLP_TRAIN": str(TRAIN), "FAULT_RANK": str(victim), "FAULT_STEP": str(step)})
        result = run([LAUNCH, "--grace", "5", INJECT_FAULT], env)
        self.assertRankKilled(result, victim)

    def assertIdenticalToBaseline(self, out):
        self.assertPass(out)
        self.assertSameBytes(out, self.baseline, RANK_FILES)
        self.assertFalse((out / "dmlp.lock").exists())

    def outside_file(self):
        target = self.scratch / "outside" / "victim.bin"
        target.parent.mkdir(exist_ok=True)
        target.write_bytes(OUTSIDE_BYTES)
        return target


class SymlinkedNames(SafetyTestCase):
    def plant(self, out, name, target):
        out.mkdir(parents=True, exist_ok=True)
        (out / name).symlink_to(target)

    def test_links_under_temporary_names_are_refused_and_never_followed(self):
        for name, overrides in (("result.json.tmp", {}), ("state.safetensors.tmp", {}),
                                ("checkpoint-00000002.safetensors.tmp", {"CHECKPOINT_EVERY": 2})):
            with self.subTest(name=name):
                out = self.scratch / name
                target = self.outside_file()
                self.plant(out, name, target)
                result = launch(out, 2, STEPS=4, **overrides)
                self.assertNotEqual(result.returncode, 0, result.stderr)
                self.assertRegex(result.stderr, "error: OUTPUT_NOT_REGULAR: (checkpoint step 2: )?" +
                                 re.escape(f"{out}/{name} is a symbolic link, not a regular file "
                                           "(a stale temporary) (dmlp never writes through links)"))
                self.assertEqual(target.read_bytes(), OUTSIDE_BYTES)
                self.assertTrue((out / name).is_symlink())
                self.assertFalse((out / "result.json").exists())

    def test_a_stale_regular_temporary_is_replaced(self):
        out = self.scratch / "run"
        out.mkdir()
        (out / "result.json.tmp").write_text("left by a killed writer\n")
        result = launch(out, 2, **CHECKPOINTED)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIdenticalToBaseline(out)
        self.assertFalse((out / "result.json.tmp").exists())

    def test_links_under_receipt_and_lock_names_are_refused_before_anything_is_written(self):
        for name in ("rank-1.jsonl", "metrics.jsonl", "dmlp.lock"):
            with self.subTest(name=name):
                out = self.scratch / name
                target = self.outside_file()
                self.plant(out, name, target)
                before = tree(out)
                result = launch(out, 2, STEPS=2)
                self.assertNotEqual(result.returncode, 0, result.stderr)
                self.assertRegex(result.stderr, f"error: OUTPUT_NOT_REGULAR: {out}/{name} is "
                                                "(a symbolic link|not a regular file)")
                self.assertEqual(target.read_bytes(), OUTSIDE_BYTES)
                self.assertEqual(tree(out), before)

    def test_a_superseded_link_is_refused_by_resume(self):
        out = self.scratch / "run"
        self.kill_rank_at(out, 1, 5)
        elsewhere = self.scratch / "elsewhere"
        elsewhere.mkdir()
        (out / "superseded").symlink_to(elsewhere)
        before = tree(out)
        result = launch(out, 2, RESUME=1, **CHECKPOINTED)
        self.assertNotEqual(result.returncode, 0, result.stderr)
        self.assertIn(f"error: OUTPUT_NOT_REGULAR: {out}/superseded is a symbolic link, not a "
                      "directory (dmlp never writes through links)", result.stderr)
        self.assertEqual(list(elsewhere.iterdir()), [])
        self.assertEqual(tree(out), before)
        # Once the link is gone the same directory resumes to the same bits.
        (out / "superseded").unlink()
        result = launch(out, 2, RESUME=1, **CHECKPOINTED)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIdenticalToBaseline(out)


class TransactionalResume(SafetyTestCase):
    def interrupted_run(self):
        """A 2-rank run killed after step 7 (checkpoints 4 and 6 kept), shared by the cases."""
        out = self.scratch / "interrupted"
        if not out.exists():
            self.kill_rank_at(out, 1, 7)
        return out

    def copy_of_interrupted(self, name):
        copy = self.scratch / name
        shutil.copytree(self.interrupted_run(), copy, symlinks=True)
        return copy

    def assertResumesToBaseline(self, out):
        result = launch(out, 2, RESUME=1, **CHECKPOINTED)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("resuming after step", result.stderr)
        self.assertIdenticalToBaseline(out)

    def test_a_refused_resume_changes_nothing_and_the_next_one_succeeds(self):
        # Rank 1 dies after its receipt of step 7, but its step loop runs ahead
        # of its hasher, so rank 0 may already have checkpointed step 8: the
        # newest checkpoint is 6 or 8, and the expectations follow it.
        checkpoints = sorted(self.interrupted_run().glob("checkpoint-*.safetensors"))
        step = int(checkpoints[-1].name.split("-")[1].split(".")[0])

        def forge(out):
            # Every checkpoint: one the receipts contradict is skipped for the
            # previous one (the next test), so only when none is left is it refused.
            saved = {out / c.name: (out / c.name).read_bytes() for c in checkpoints}
            for checkpoint in saved:
                forge_checkpoint(checkpoint)
            return lambda: [checkpoint.write_bytes(data) for checkpoint, data in saved.items()]

        cases = (
            (f"RESUME_INVALID: the newest checkpoint is after step {step}, past STEPS=5",
             {"STEPS": 5}, None),
            ("CHECKPOINT_PLAN_MISMATCH", {"LEARNING_RATE": "0.002"}, None),
            ("CHECKPOINT_NOT_AGREED: no checkpoint agrees with every rank's receipts in ", {}, forge),
        )
        for expected, overrides, damage in cases:
            with self.subTest(expected=expected):
                out = self.copy_of_interrupted(expected.split(":")[0])
                undo = damage(out) if damage else (lambda: None)
                before = tree(out)
                result = launch(out, 2, RESUME=1, **{**CHECKPOINTED, **overrides})
                self.assertNotEqual(result.returncode, 0, result.stderr)
                self.assertIn(f"error: {expected}", result.stderr)
                self.assertEqual(tree(out), before, "a refused resume changed OUT_DIR")
                undo()
                self.assertResumesToBaseline(out)

    def test_a_checkpoint_the_receipts_contradict_is_skipped_for_the_previous_one(self):
        # What a rank 0 that had silently diverged leaves with DIVERGENCE_CHECK=off:
        # a whole checkpoint whose digest no other rank recorded.
        out = self.copy_of_interrupted("disagreeing")
        checkpoints = sorted(out.glob("checkpoint-*.safetensors"))
        self.assertEqual(len(checkpoints), 2)
        forge_checkpoint(checkpoints[-1])
        result = launch(out, 2, RESUME=1, **CHECKPOINTED)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn(f"warning: skipping checkpoint: CHECKPOINT_DISAGREES: {checkpoints[-1]}: its "
                      "digest ", result.stderr)
        previous = int(checkpoints[0].name.split("-")[1].split(".")[0])
        self.assertIn(f"resuming after step {previous} ", result.stderr)
        self.assertIdenticalToBaseline(out)

    def test_a_receipt_that_contradicts_the_checkpoint_is_refused_before_anything_moves(self):
        out = self.copy_of_interrupted("tampered")
        path = out / "rank-1.jsonl"
        lines = path.read_text().splitlines(keepends=True)
        at = lines[5].index('"params_sha256": "') + len('"params_sha256": "')
        lines[5] = lines[5][:at] + ("0" if lines[5][at] != "0" else "1") + lines[5][at + 1:]
        path.write_text("".join(lines))
        before = tree(out)
        result = launch(out, 2, RESUME=1, **CHECKPOINTED)
        self.assertNotEqual(result.returncode, 0, result.stderr)
        self.assertIn(f"error: RESUME_RECEIPTS_INVALID: {out}/metrics.jsonl: step 6 differs "
                      f"from {out}/rank-1.jsonl", result.stderr)
        self.assertEqual(tree(out), before)

    def test_a_resume_killed_at_any_stage_is_completed_by_the_next(self):
        for stage in RESUME_STAGES:
            with self.subTest(stage=stage):
                out = self.copy_of_interrupted("stage-" + stage)
                result = launch(out, 2, RESUME=1, DMLP_TEST_KILL_AT_RESUME_STAGE=stage,
                                **CHECKPOINTED)
                # Rank 0 died at the stage; the launcher reports whichever rank it saw fail first.
                self.assertIn(result.returncode, (1, 137), result.stderr)
                self.assertIn("killed by signal SIGKILL", result.stderr)
                self.assertFalse((out / "result.json").exists())
                self.assertResumesToBaseline(out)

    def test_resumes_killed_one_after_another_still_complete(self):
        out = self.copy_of_interrupted("chain")
        for stage in ("rewriting", "moved-one", "created", "aside-made", "rewritten"):
            result = launch(out, 2, RESUME=1, DMLP_TEST_KILL_AT_RESUME_STAGE=stage, **CHECKPOINTED)
            self.assertIn(result.returncode, (1, 137), f"{stage}: {result.stderr}")
            self.assertIn("killed by signal SIGKILL", result.stderr)
        self.assertResumesToBaseline(out)

    def test_the_launcher_killed_at_several_delays_into_a_resume(self):
        cut = 0
        for delay in (0.0, 0.02, 0.05, 0.1, 0.15, 0.2, 0.3, 0.5):
            with self.subTest(delay=delay):
                out = self.copy_of_interrupted(f"delay-{delay}")
                launcher = self.start([LAUNCH, "--grace", "5", TRAIN],
                                      tiny_job_env(out, 2, RESUME=1, **CHECKPOINTED))
                time.sleep(delay)  # a kill point, not an expectation about speed
                if launcher.poll() is None:
                    # Stopped first, so that no rank is forked after we list them.
                    os.kill(launcher.pid, signal.SIGSTOP)
                    ranks = children_of(launcher.pid)
                    os.kill(launcher.pid, signal.SIGKILL)
                    launcher.wait(timeout=30)
                    # The ranks die with the launcher (parent-death signal): wait for that.
                    wait_for(lambda: not any(alive(pid) for pid in ranks), 60, "the ranks to die")
                if (out / "result.json").exists():  # it finished before the kill point
                    self.assertPass(out)
                    self.assertSameBytes(out, self.baseline, RANK_FILES)
                    continue
                cut += 1
                self.assertResumesToBaseline(out)
        print(f"\nRESUMES cut by a launcher kill: {cut}")


class RefusedStarts(SafetyTestCase):
    def test_port_in_use_leaves_out_dir_as_found_and_the_rerun_starts(self):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as squatter:
            squatter.bind(("127.0.0.1", 0))
            squatter.listen()
            port = squatter.getsockname()[1]
            for existing in (False, True):
                with self.subTest(existing=existing):
                    out = self.scratch / f"port-{existing}"
                    if existing:
                        out.mkdir()
                        (out / "notes.txt").write_text("mine\n")
                    before = tree(out)
                    result = launch(out, 2, COORDINATOR_PORT=port, **CHECKPOINTED)
                    self.assertNotEqual(result.returncode, 0, result.stderr)
                    self.assertIn("COORDINATOR_PORT_IN_USE", result.stderr)
                    self.assertEqual(tree(out), before)
        # docs/troubleshooting.md's remedy: another port, same OUT_DIR.
        result = launch(self.scratch / "port-True", 2, **CHECKPOINTED)
        self.assertEqual(result.returncode, 0, result.stderr)

    def test_a_stray_receipt_is_refused_and_nothing_else_is_created(self):
        out = self.scratch / "stray"
        out.mkdir()
        (out / "rank-1.jsonl").write_text("stray\n")
        before = tree(out)
        result = launch(out, 2, **CHECKPOINTED)
        self.assertNotEqual(result.returncode, 0, result.stderr)
        self.assertIn(f"error: OUTPUT_EXISTS: {out}/rank-1.jsonl", result.stderr)
        self.assertEqual(tree(out), before)

    def test_sigterm_while_waiting_for_peers_leaves_nothing(self):
        # Rank 1 never starts training, so rank 0 waits at the rendezvous; the
        # launcher is stopped once rank 0 listens (an event, not a delay).
        stand_in = self.scratch / "rank1-sleeps.sh"
        stand_in.write_text('#!/bin/sh\n[ "$PROCESS_ID" = 1 ] && exec sleep 600\nexec "$DMLP_TRAIN"\n')
        stand_in.chmod(0o755)
        out = self.scratch / "run"
        env = tiny_job_env(out, 2, **CHECKPOINTED)
        env["DMLP_TRAIN"] = str(TRAIN)
        launcher = self.start([LAUNCH, "--grace", "5", stand_in], env)
        port = int(env["COORDINATOR_PORT"])
        wait_for(lambda: listening(port) or launcher.poll() is not None, 60, "rank 0 to listen")
        os.kill(launcher.pid, signal.SIGTERM)
        self.assertEqual(launcher.wait(timeout=60), 128 + signal.SIGTERM)
        self.assertIsNone(tree(out), "OUT_DIR was created by a start that never began")

    def test_a_start_torn_down_before_its_first_step_leaves_no_empty_receipts(self):
        # Rank 1 fails after every rank created its receipt files (its thread
        # count is read when its backend is built); the launcher then SIGTERMs
        # rank 0, whose destructors never run: its handler removes its files.
        stand_in = self.scratch / "rank1-fails.sh"
        stand_in.write_text('#!/bin/sh\n[ "$PROCESS_ID" = 1 ] && export DMLP_CPU_THREADS=x\n'
                            'exec "$DMLP_TRAIN"\n')
        stand_in.chmod(0o755)
        out = self.scratch / "run"
        out.mkdir()
        env = tiny_job_env(out, 2, **CHECKPOINTED)
        env["DMLP_TRAIN"] = str(TRAIN)
        result = run([LAUNCH, "--grace", "5", stand_in], env)
        self.assertNotEqual(result.returncode, 0, result.stderr)
        self.assertIn("error: ENV_INVALID: DMLP_CPU_THREADS", result.stderr)
        self.assertEqual(tree(out), {})
        result = launch(out, 2, **CHECKPOINTED)  # the rerun is not OUTPUT_EXISTS
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIdenticalToBaseline(out)

    def test_a_second_job_into_a_running_jobs_out_dir_is_refused(self):
        out = self.scratch / "run"
        log = (self.scratch / "first.log").open("w+")
        self.addCleanup(log.close)
        # Long enough to be caught running; its output goes to a file, never a full pipe.
        first = subprocess.Popen([str(LAUNCH), "--grace", "5", str(TRAIN)],
                                 env=tiny_job_env(out, 2, **{**CHECKPOINTED, "STEPS": LONG_STEPS}),
                                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log)
        self.started.append(first)
        wait_for(lambda: line_count(out / "rank-1.jsonl") >= 2 or first.poll() is not None, 120,
                 "the first job to train")
        ranks = children_of(first.pid)
        for pid in ranks:  # a frozen job still holds its lock
            os.kill(pid, signal.SIGSTOP)
        wait_for(lambda: all(stopped(pid) for pid in ranks), 60, "the first job to stop")
        try:
            before = tree(out)
            holder = rank_pids(first.pid)[0]
            for overrides in ({"RESUME": 1}, {}):
                result = launch(out, 2, **{**CHECKPOINTED, "STEPS": LONG_STEPS, **overrides})
                self.assertNotEqual(result.returncode, 0, result.stderr)
                if overrides:
                    self.assertIn(f"error: OUTPUT_LOCKED: {out} is in use by another job "
                                  f"({out}/dmlp.lock held by pid {holder})", result.stderr)
                else:
                    self.assertIn(f"error: OUTPUT_EXISTS: {out}/", result.stderr)
                self.assertEqual(tree(out), before)
        finally:
            for pid in ranks:
                os.kill(pid, signal.SIGCONT)
        code = first.wait(timeout=300)
        log.seek(0)
        self.assertEqual(code, 0, log.read())
        self.assertPass(out)
        self.assertFalse((out / "dmlp.lock").exists())

    def test_two_jobs_racing_into_one_out_dir(self):
        for round_number in range(3):
            with self.subTest(round=round_number):
                out = self.scratch / f"race-{round_number}"
                jobs = [self.start([LAUNCH, "--grace", "5", TRAIN], tiny_job_env(out, 2, **CHECKPOINTED))
                        for _ in range(2)]
                codes = [job.wait(timeout=300) for job in jobs]
                errors = [job.stderr.read() for job in jobs]
                self.assertEqual(sorted(code == 0 for code in codes), [False, True], errors)
                loser = errors[codes.index(next(c for c in codes if c != 0))]
                self.assertRegex(loser, r"error: (OUTPUT_LOCKED|OUTPUT_EXISTS|"
                                        r"OUTPUT_ALREADY_COMPLETE): ")
                self.assertIdenticalToBaseline(out)


class DanglingLink(JobTestCase):
    def test_a_dangling_out_dir_link_is_named_by_every_rank(self):
        out = self.scratch / "run"
        out.symlink_to(self.scratch / "gone")
        result = launch(out, 2)
        self.assertEqual(result.returncode, 1, result.stderr)
        # Was IO_ERROR "create ...: File exists" on rank 0 and PEER_LOST on rank 1.
        # Each rank looks before the rendezvous; the first to say so ends the
        # job, so the other may be torn down before it speaks.
        said = (f"dmlp-train: error: OUTPUT_DANGLING_LINK: OUT_DIR {out} is a symbolic link to "
                f"'{self.scratch / 'gone'}', which does not exist")
        self.assertIn(said, result.stderr)
        for line in result.stderr.splitlines():
            if line.startswith("[rank ") and "dmlp-train: error:" in line:
                self.assertIn(said, line)
        self.assertNotIn("PEER_LOST", result.stderr)
        self.assertNotIn("File exists", result.stderr)
        self.assertFalse((self.scratch / "gone").exists())


if __name__ == "__main__":
    unittest.main(verbosity=2)
