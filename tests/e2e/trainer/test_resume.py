"""Crashes and resumes: a resumed job must reproduce the bits of an
uninterrupted one, whatever rank died, whenever, and on how many ranks it resumes;
of the settings, only those that decide no bit may change on resume."""

import random
import resource
import shutil
import subprocess
import unittest
from pathlib import Path

from harness import LAUNCH, TRAIN, JobTestCase, tiny_job_env, launch, run, verify
from test_limits import tree

STEPS = 10
CHECKPOINTED = {"STEPS": STEPS, "CHECKPOINT_EVERY": 2, "DATA_SHARDS": 4}
INJECT_FAULT = Path(__file__).with_name("inject_fault.sh")


class ResumeTestCase(JobTestCase):
    baseline = None

    @classmethod
    def setUpClass(cls):
        cls.baseline_dir = Path(__import__("tempfile").mkdtemp(prefix="dmlp-baseline-"))
        result = launch(cls.baseline_dir / "run", 2, **CHECKPOINTED)
        assert result.returncode == 0, result.stderr
        cls.baseline = cls.baseline_dir / "run"

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.baseline_dir, ignore_errors=True)

    def kill_rank_at(self, out, processes, victim, step, **overrides):
        """Runs a job whose rank `victim` is SIGKILLed right after its receipt of `step`."""
        env = tiny_job_env(out, processes, **{**CHECKPOINTED, **overrides})
        env.update({"DMLP_TRAIN": str(TRAIN), "FAULT_RANK": str(victim), "FAULT_STEP": str(step)})
        result = run([LAUNCH, "--grace", "5", INJECT_FAULT], env)
        self.assertRankKilled(result, victim)
        self.assertFalse((out / "result.json").exists())

    def assertIdenticalToBaseline(self, out):
        self.assertPass(out)
        self.assertPass(out, "--against", str(self.baseline))
        self.assertSameBytes(out, self.baseline)


class KillAndResume(ResumeTestCase):
    def test_random_rank_random_step_resumes_to_the_same_bits(self):
        faults = identical = 0
        for seed in (11, 12, 13, 14):
            chooser = random.Random(seed)
            processes = chooser.choice((2, 4))
            victim = chooser.randrange(processes)
            step = chooser.randrange(3, STEPS - 1)
            resume_on = processes if seed % 2 else chooser.choice([n for n in (1, 2, 4) if n != processes])
            with self.subTest(seed=seed, processes=processes, victim=victim, step=step,
                              resume_on=resume_on):
                out = self.scratch / f"seed{seed}"
                self.kill_rank_at(out, processes, victim, step)
                faults += 1
                self.assertEqual(verify(out).returncode, 3)  # incomplete, never PASS
                result = launch(out, resume_on, RESUME=1, **CHECKPOINTED)
                self.assertEqual(result.returncode, 0, result.stderr)
                self.assertIn("resuming after step", result.stderr)
                self.assertIdenticalToBaseline(out)
                self.assertTrue(any((out / "superseded").iterdir()))
                identical += 1
        print(f"\nFAULTS injected={faults} identical={identical}")

    def test_resume_without_a_checkpoint_replays_from_the_start(self):
        out = self.scratch / "run"
        self.kill_rank_at(out, 2, 1, 1, CHECKPOINT_EVERY=0)
        result = launch(out, 2, RESUME=1, **{**CHECKPOINTED, "CHECKPOINT_EVERY": 0})
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIdenticalToBaseline(out)

    def test_replay_detects_receipts_that_do_not_reproduce(self):
        out = self.scratch / "run"
        self.kill_rank_at(out, 2, 0, 7)
        # Tamper with an old receipt past the checkpoint (step 6): the resumed job
        # recomputes step 7. Rank 0's receipt 7 was written before it was killed.
        # Every record of step 7 is changed alike (receipt files that disagree
        # with each other are refused before the resume: test_out_dir_safety).
        for name in ("rank-0.jsonl", "rank-1.jsonl", "metrics.jsonl"):
            aside_target = out / name
            lines = aside_target.read_text().splitlines(keepends=True)
            if len(lines) < 7:
                continue
            digest_at = lines[6].index('"params_sha256": "') + len('"params_sha256": "')
            flipped = "0" if lines[6][digest_at] != "0" else "1"
            lines[6] = lines[6][:digest_at] + flipped + lines[6][digest_at + 1:]
            aside_target.write_text("".join(lines))
        result = launch(out, 2, RESUME=1, **CHECKPOINTED)
        self.assertNotEqual(result.returncode, 0)
        self.assertRegex(result.stderr, "REPLAY_DIVERGED: step=7 rank=[01] ")

    def test_corrupt_newest_checkpoint_falls_back_to_the_previous(self):
        out = self.scratch / "run"
        self.kill_rank_at(out, 2, 1, 8)
        newest = sorted(out.glob("checkpoint-*.safetensors"))[-1]
        data = bytearray(newest.read_bytes())
        data[-5] ^= 0x10
        newest.write_bytes(bytes(data))
        result = launch(out, 2, RESUME=1, **CHECKPOINTED)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("warning: skipping checkpoint: CHECKPOINT_INVALID", result.stderr)
        self.assertIdenticalToBaseline(out)

    def test_another_plans_checkpoint_is_refused(self):
        out = self.scratch / "run"
        self.kill_rank_at(out, 2, 1, 5)
        result = launch(out, 2, RESUME=1, **{**CHECKPOINTED, "LEARNING_RATE": "0.002"})
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("error: CHECKPOINT_PLAN_MISMATCH", result.stderr)
        self.assertTrue((out / "rank-0.jsonl").exists())  # nothing moved on refusal


class RestartsAndDisks(ResumeTestCase):
    def test_launcher_restarts_a_job_whose_rank_failed_once(self):
        out = self.scratch / "run"
        env = tiny_job_env(out, 2, **CHECKPOINTED)
        env.update({"DMLP_TRAIN": str(TRAIN), "FAULT_RANK": "1", "FAULT_STEP": "5",
                    "FAULT_MARKER": str(self.scratch / "failed-once")})
        result = run([LAUNCH, "--restarts", "2", "--grace", "5", INJECT_FAULT], env, timeout=300)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertTrue((self.scratch / "failed-once").exists())
        self.assertIn("attempt 2", result.stderr)
        self.assertIdenticalToBaseline(out)

    def test_file_size_limit_fails_cleanly_and_leaves_no_corrupt_checkpoint(self):
        out = self.scratch / "run"
        limit = 6000  # receipts fit; a checkpoint (~11 KB) does not

        def limit_files():
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

        env = tiny_job_env(out, 2, **CHECKPOINTED)
        result = subprocess.run([str(LAUNCH), str(TRAIN)], env=env, capture_output=True, text=True,
                                timeout=120, preexec_fn=limit_files, stdin=subprocess.DEVNULL)
        self.assertNotEqual(result.returncode, 0)
        self.assertRegex(result.stderr, r"error: IO_ERROR: checkpoint step 2: write .*File too large")
        self.assertFalse((out / "result.json").exists())
        self.assertEqual(list(out.glob("*.tmp")), [])
        self.assertEqual(list(out.glob("checkpoint-*")), [])
        self.assertEqual(verify(out).returncode, 3)

    def test_full_filesystem_keeps_the_last_good_checkpoint_newest(self):
        mount = self.scratch / "small"
        mount.mkdir()
        if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=40k", "tmpfs", str(mount)],
                          capture_output=True).returncode != 0:
            self.skipTest("cannot mount a small tmpfs here (needs root and mount rights)")
        try:
            out = mount / "run"
            result = launch(out, 2, **CHECKPOINTED)
            self.assertNotEqual(result.returncode, 0)
            self.assertRegex(result.stderr, r"error: IO_ERROR: .*No space left on device")
            self.assertFalse((out / "result.json").exists())
            self.assertEqual(list(out.glob("*.tmp")), [])
            checkpoints = sorted(out.glob("checkpoint-*.safetensors"))
            self.assertTrue(checkpoints, "the first checkpoint should have fit")
            copy = self.scratch / "copy"
            shutil.copytree(out, copy)
        finally:
            subprocess.run(["umount", str(mount)], check=False)
        result = launch(copy, 2, RESUME=1, **CHECKPOINTED)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIdenticalToBaseline(copy)


ALLREDUCE = {"REDUCTION": "allreduce", "CHECKPOINT_EVERY": "2"}



class ResumeSettings(JobTestCase):
    def interrupted(self, processes, **plan):
        """A job killed after step 2's checkpoint, to be resumed."""
        out = self.scratch / "run"
        first = launch(out, processes, STEPS=4, DMLP_TEST_KILL_AT=2, **plan)
        self.assertNotEqual(first.returncode, 0)
        return out

    def test_the_heartbeat_may_change_on_resume(self):
        # Was CHECKPOINT_PLAN_MISMATCH, although the heartbeat decides no bit.
        out = self.interrupted(2, CHECKPOINT_EVERY=2, HEARTBEAT_TIMEOUT_SECONDS=30)
        resumed = launch(out, 2, STEPS=4, CHECKPOINT_EVERY=2, RESUME=1, HEARTBEAT_TIMEOUT_SECONDS=600,
                         DIGEST_THREADS=2)
        self.assertEqual(resumed.returncode, 0, resumed.stderr)
        clean = self.scratch / "clean"
        self.assertEqual(launch(clean, 2, STEPS=4).returncode, 0)
        self.assertPass(out)
        self.assertSameBytes(out, clean, ("rank-0.jsonl", "rank-1.jsonl", "metrics.jsonl", "state.safetensors"))

    def test_allreduce_refuses_another_world_size(self):
        # Was accepted, and the receipts differed from a clean run of the plan
        # result.json records: with allreduce the rank count decides the bits.
        out = self.interrupted(2, DATA_SHARDS=4, **ALLREDUCE)
        before = tree(out)
        refused = launch(out, 4, STEPS=4, DATA_SHARDS=4, RESUME=1, **ALLREDUCE)
        self.assertEqual(refused.returncode, 1, refused.stderr)
        self.assertRegex(refused.stderr, r"CHECKPOINT_PLAN_MISMATCH: [^\n]*num_processes=4 "
                                         r"\(the checkpoint has num_processes=2\); with REDUCTION=allreduce "
                                         r"NUM_PROCESSES decides the bits")
        self.assertEqual(tree(out), before, "the refused resume changed OUT_DIR")
        resumed = launch(out, 2, STEPS=4, DATA_SHARDS=4, RESUME=1, **ALLREDUCE)
        self.assertEqual(resumed.returncode, 0, resumed.stderr)
        self.assertPass(out)


if __name__ == "__main__":
    unittest.main(verbosity=2)
