"""Where each rank ran: rank-<r>.env.jsonl beside the receipts.
Each rank writes one "start" line with this machine's boot id and host; a
simulated restore (the ranks read their boot id from DMLP_TEST_BOOT_ID_FILE,
rewritten while one rank is SIGSTOPped) adds a "restored" line and leaves the
receipts as they would have been; dmlp-verify shows the lines and flags a rank
whose recorded device or libraries changed between them. Every wait is for an
event (a line count, a stopped state), never for a time."""

import json
import os
import shutil
import signal
import socket
import tempfile
import unittest
from pathlib import Path

from harness import (LAUNCH, TRAIN, JobTestCase, tiny_job_env, launch, line_count, rank_pids,
                     stopped, verify, wait_for)

# Many short steps, so the job is still running when a rank is stopped however
# loaded the machine is; a long heartbeat, so the stopped rank's peer waits.
PLAN = {"STEPS": 1500, "HEARTBEAT_TIMEOUT_SECONDS": 300}
VICTIM = 1
IMAGE_ID = "sha256:" + "ab" * 32


def env_lines(out, rank):
    return [json.loads(line) for line in (out / f"rank-{rank}.env.jsonl").read_text().splitlines()]


class RankEnv(JobTestCase):
    @classmethod
    def setUpClass(cls):
        cls.baseline_dir = Path(tempfile.mkdtemp(prefix="dmlp-baseline-"))
        cls.baseline = cls.baseline_dir / "run"
        result = launch(cls.baseline, 2, timeout=600, DMLP_IMAGE_ID=IMAGE_ID, **PLAN)
        assert result.returncode == 0, result.stderr

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.baseline_dir, ignore_errors=True)

    def test_each_rank_writes_one_start_line_with_this_machine(self):
        boot_id = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
        result_doc = json.loads((self.baseline / "result.json").read_text())
        self.assertEqual(result_doc["build"]["image_id"], IMAGE_ID)
        for rank in range(2):
            lines = env_lines(self.baseline, rank)
            self.assertEqual(len(lines), 1, lines)
            line = lines[0]
            self.assertEqual((line["rank"], line["event"], line["after_step"]), (rank, "start", 0))
            self.assertEqual(line["boot_id"], boot_id)
            self.assertEqual(line["host"], socket.gethostname())
            self.assertNotIn("why", line)
            self.assertEqual(line["device"]["kind"], "cpu")
            self.assertEqual(line["stack"]["platform"], "cpu")
            self.assertEqual(line["build"], result_doc["build"])
            # compact, keys sorted, one line
            text = (self.baseline / f"rank-{rank}.env.jsonl").read_text()
            self.assertEqual(text, json.dumps(line, sort_keys=True, separators=(",", ":")) + "\n")
        result = verify(self.baseline)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assertIn(f"dmlp-verify:   rank 1: host {socket.gethostname()}, cpu ", result.stdout)
        self.assertIn("; 1 (re)start: start\n", result.stdout)

    def test_a_restore_adds_a_restored_line_and_leaves_the_receipts_alone(self):
        out = self.scratch / "run"
        boot_file = self.scratch / "boot_id"
        boot_file.write_text("boot-a\n")
        env = tiny_job_env(out, 2, DMLP_TEST_BOOT_ID_FILE=boot_file, DMLP_IMAGE_ID=IMAGE_ID, **PLAN)
        launcher = self.start([LAUNCH, "--grace", "5", TRAIN], env)
        wait_for(lambda: line_count(out / f"rank-{VICTIM}.jsonl") >= 4, 300, "the victim's receipts")
        pid = rank_pids(launcher.pid)[VICTIM]
        os.kill(pid, signal.SIGSTOP)
        wait_for(lambda: stopped(pid), 60, "the victim to stop")
        stopped_at = line_count(out / f"rank-{VICTIM}.jsonl")
        self.assertLess(stopped_at, PLAN["STEPS"] - 10, "the job ran too far to test")
        boot_file.write_text("boot-b\n")  # the whole job "wakes up" after a reboot
        os.kill(pid, signal.SIGCONT)
        _, stderr = launcher.communicate(timeout=600)
        self.assertEqual(launcher.returncode, 0, stderr)
        for rank in range(2):
            lines = env_lines(out, rank)
            self.assertEqual([l["event"] for l in lines], ["start", "restored"], lines)
            self.assertEqual(lines[1]["why"], "boot id changed (boot-a -> boot-b)")
            self.assertEqual(lines[1]["boot_id"], "boot-b")
            self.assertEqual(lines[1]["device"], lines[0]["device"])
        self.assertGreaterEqual(env_lines(out, VICTIM)[1]["after_step"], stopped_at)
        self.assertSameBytes(out, self.baseline,
                             ("metrics.jsonl", "rank-0.jsonl", "rank-1.jsonl", "state.safetensors"))
        result = verify(out)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assertIn("2 (re)starts: start, restored after step ", result.stdout)
        self.assertNotIn("env.stack_changed", result.stdout)

    def test_verify_flags_a_rank_whose_device_or_libraries_changed(self):
        copy = self.scratch / "copy"
        shutil.copytree(self.baseline, copy)
        first = env_lines(copy, 1)[0]
        restored = dict(first, event="restored", after_step=7, why="host name changed (a -> b)",
                        device=dict(first["device"], name="Other CPU"),
                        stack=dict(first["stack"], blas=dict(first["stack"]["blas"], kernel="other")))
        with open(copy / "rank-1.env.jsonl", "a") as file:
            file.write(json.dumps(restored, sort_keys=True, separators=(",", ":")) + "\n")
        result = verify(copy)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)  # a warning, not a failure
        self.assertIn(
            f"warning env.stack_changed {copy}/rank-1.env.jsonl:2: rank 1 line 2 (restored after step 7): "
            f"device.name: {json.dumps(first['device']['name'])} -> \"Other CPU\"; "
            f"stack.blas.kernel: {json.dumps(first['stack']['blas']['kernel'])} -> \"other\"\n",
            result.stdout)
        self.assertIn("1 warning", result.stdout)
        self.assertEqual(result.stdout.strip().splitlines()[-1], "PASS")
        # The other run's rank 1 computed on another CPU: dmlp's kernels give the
        # same bits on every one (common/bit_settings.h), so the runs are still
        # held to each other's bits.
        against = verify(copy, "--against", self.baseline)
        self.assertNotIn("not comparable", against.stdout)
        self.assertIn(f"dmlp-verify: against {self.baseline}: ", against.stdout)
        self.assertIn("identical (1500 steps)", against.stdout)

    def test_a_resumed_attempt_starts_a_new_file_and_the_old_one_moves_aside(self):
        out = self.scratch / "run"
        settings = {"STEPS": 6, "CHECKPOINT_EVERY": 2}
        killed = launch(out, 1, DATA_SHARDS=4, DMLP_TEST_KILL_AT=4, **settings)
        self.assertNotEqual(killed.returncode, 0)
        resumed = launch(out, 1, DATA_SHARDS=4, RESUME=1, **settings)
        self.assertEqual(resumed.returncode, 0, resumed.stderr)
        earlier = [json.loads(l) for l in (out / "superseded/1/rank-0.env.jsonl").read_text().splitlines()]
        self.assertEqual([l["event"] for l in earlier], ["start"])
        now = env_lines(out, 0)
        self.assertEqual([(l["event"], l["after_step"]) for l in now], [("resume", 4)])
        result = verify(out)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)


if __name__ == "__main__":
    unittest.main()
