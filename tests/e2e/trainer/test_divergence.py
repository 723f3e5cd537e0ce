"""The divergence check: a rank whose state silently diverges stops the job at that step.

One bit of one rank's state is flipped after a chosen update (DMLP_TEST_FLIP_BIT,
trainer/test_faults.h). With DIVERGENCE_CHECK=on (the default) every rank stops
at that step with the same RANK_DIVERGED line and exit code 4, the receipts end
there, no result.json and no later checkpoint are written, and dmlp-verify names
the same step and rank(s). With DIVERGENCE_CHECK=off the job runs on (and the
verifier finds it); without a fault, on and off write the same bytes."""

import json
import re
import socket
import unittest
from pathlib import Path

from harness import (JobTestCase, LAUNCH, TRAIN, tiny_job_env, launch, run, verify)

FLIP_BIT = Path(__file__).with_name("flip_bit.sh")
STEPS = 8
# Update 9 is the first microbatch of step 5 (MICROBATCHES=2): the flip is inside step 5.
FLIP_UPDATE, FLIP_STEP = 9, 5
PLAN = {"STEPS": STEPS, "CHECKPOINT_EVERY": 2}
PLAN_3 = {**PLAN, "BATCH": 12, "DATA_SHARDS": 3}  # 3 ranks: shards and batch divisible by 3
MESSAGE = re.compile(r"dmlp-train: error: (RANK_DIVERGED: step=(\d+) rank\(s\)=(\S+) digest=(\S+) "
                     r"majority=(\S+) device\(s\)=(.*))$", re.MULTILINE)


def receipts(out, rank):
    return [json.loads(line) for line in (out / f"rank-{rank}.jsonl").read_text().splitlines()]


def checkpoint_steps(out):
    return sorted(int(p.name.split("-")[1].split(".")[0]) for p in out.glob("checkpoint-*.safetensors"))


class Divergence(JobTestCase):
    def run_ranks(self, out, processes, flip_ranks, **overrides):
        """Starts every rank itself (DMLP_TEST_FLIP_BIT only for `flip_ranks`);
        returns [(exit code, stderr)] by rank."""
        env = tiny_job_env(out, processes, **overrides)
        ranks = []
        for rank in range(processes):
            rank_env = dict(env, PROCESS_ID=str(rank))
            if rank in flip_ranks:
                rank_env["DMLP_TEST_FLIP_BIT"] = str(FLIP_UPDATE)
            ranks.append(self.start([TRAIN], rank_env))
        return [(p.wait(timeout=180), p.communicate()[1]) for p in ranks]

    def launch_flipped(self, out, processes, flip_ranks, **overrides):
        env = tiny_job_env(out, processes, **overrides)
        env.update({"DMLP_TRAIN": str(TRAIN), "FLIP_RANKS": ",".join(map(str, flip_ranks)),
                    "FLIP_AT": str(FLIP_UPDATE)})
        return run([LAUNCH, "--grace", "5", FLIP_BIT], env, timeout=180)

    def assertStoppedAt(self, out, processes, odd, majority_none=False):
        """The files a divergence at FLIP_STEP leaves, and the verifier's verdict."""
        for rank in range(processes):
            self.assertEqual([r["step"] for r in receipts(out, rank)], list(range(1, FLIP_STEP + 1)))
        self.assertEqual(len((out / "metrics.jsonl").read_text().splitlines()), FLIP_STEP)
        self.assertFalse((out / "result.json").exists())
        self.assertFalse((out / "state.safetensors").exists())
        self.assertEqual(checkpoint_steps(out), [2, 4])  # none after the step of the divergence
        result = verify(out)
        self.assertEqual(result.returncode, 1, result.stdout + result.stderr)
        self.assertEqual(result.stdout.strip().splitlines()[-1], "FAIL")
        good = ",".join(str(r) for r in range(processes) if r not in odd)
        named = f"rank(s) {','.join(map(str, odd))} differ " + (
            "(no majority)" if majority_none else f"from the majority (ranks {good})")
        self.assertIn(f"ranks disagree on params_sha256 at step {FLIP_STEP}: {named}", result.stdout)

    def assertMessage(self, stderr, out, processes, odd, majority_none=False):
        """The one RANK_DIVERGED line: step, rank(s), their digests as in the receipts,
        the majority's digest, and each named rank's device."""
        found = MESSAGE.findall(stderr)
        self.assertEqual(len(found), 1, stderr)
        _, step, ranks, digests, majority, devices = found[0]
        self.assertEqual(int(step), FLIP_STEP)
        self.assertEqual(ranks, ",".join(map(str, odd)))
        at_step = [receipts(out, r)[FLIP_STEP - 1]["params_sha256"] for r in range(processes)]
        self.assertEqual(digests, ",".join(at_step[r] for r in odd))
        good = [r for r in range(processes) if r not in odd]
        self.assertEqual(majority, "none" if majority_none else at_step[good[0]])
        labels = devices.split("; ")
        self.assertEqual(len(labels), len(odd))
        for rank, label in zip(odd, labels):
            self.assertTrue(label.startswith(f"rank {rank}: host {socket.gethostname()} cpu "), label)
        return found[0][0]

    def test_two_ranks_both_are_named_and_every_rank_exits_4(self):
        out = self.scratch / "two"
        ranks = self.run_ranks(out, 2, [1], **PLAN)
        self.assertEqual([code for code, _ in ranks], [4, 4], ranks)
        messages = {self.assertMessage(err, out, 2, [0, 1], majority_none=True) for _, err in ranks}
        self.assertEqual(len(messages), 1, "every rank prints the same message")
        self.assertStoppedAt(out, 2, [0, 1], majority_none=True)

    def test_three_ranks_the_odd_one_is_named_by_the_majority(self):
        for odd in (1, 0):  # rank 0 too: its checkpoint of the step is never written
            with self.subTest(odd=odd):
                out = self.scratch / f"three-{odd}"
                ranks = self.run_ranks(out, 3, [odd], **PLAN_3)
                self.assertEqual([code for code, _ in ranks], [4, 4, 4], ranks)
                messages = {self.assertMessage(err, out, 3, [odd]) for _, err in ranks}
                self.assertEqual(len(messages), 1, "every rank prints the same message")
                self.assertStoppedAt(out, 3, [odd])

    def test_through_dmlp_launch_the_job_exits_4(self):
        out = self.scratch / "launched"
        result = self.launch_flipped(out, 3, [2], **PLAN_3)
        self.assertEqual(result.returncode, 4, result.stderr)
        self.assertIn("RANK_EXIT_NONZERO: rank=", result.stderr)
        self.assertIn(f"RANK_DIVERGED: step={FLIP_STEP} rank(s)=2 digest=", result.stderr)
        self.assertStoppedAt(out, 3, [2])

    def test_with_the_check_off_the_job_runs_on_and_the_verifier_finds_it(self):
        out = self.scratch / "off"
        # No checkpoints: rank 1 would notice rank 0's differing checkpoint digest.
        result = self.launch_flipped(out, 3, [1], STEPS=STEPS, BATCH=12, DATA_SHARDS=3,
                                     DIVERGENCE_CHECK="off")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertNotIn("RANK_DIVERGED", result.stderr)
        self.assertTrue((out / "result.json").exists())
        result = verify(out)
        self.assertEqual(result.returncode, 1, result.stdout + result.stderr)
        self.assertIn(f"ranks disagree on params_sha256 at step {FLIP_STEP}: rank(s) 1 differ from the "
                      "majority (ranks 0,2)", result.stdout)

    def test_on_and_off_write_the_same_bytes(self):
        on, off = self.scratch / "on", self.scratch / "off"
        for out, check in ((on, "on"), (off, "off")):
            result = launch(out, 2, DIVERGENCE_CHECK=check, **PLAN)
            self.assertEqual(result.returncode, 0, result.stderr)
        names = sorted(p.name for p in on.iterdir())
        self.assertEqual(names, sorted(p.name for p in off.iterdir()))
        for name in ("metrics.jsonl", "rank-0.jsonl", "rank-1.jsonl", "state.safetensors",
                     "checkpoint-00000006.safetensors", "checkpoint-00000008.safetensors"):
            self.assertEqual((on / name).read_bytes(), (off / name).read_bytes(), name)
        self.assertPass(on)

    def test_ranks_that_disagree_on_the_check_are_a_plan_mismatch(self):
        out = self.scratch / "mixed"
        env = tiny_job_env(out, 2, **PLAN)
        rank0 = self.start([TRAIN], dict(env, PROCESS_ID="0"))
        rank1 = run([TRAIN], dict(env, PROCESS_ID="1", DIVERGENCE_CHECK="off"))
        rank0.wait(timeout=120)
        self.assertEqual(rank1.returncode, 1)
        self.assertIn("PLAN_MISMATCH: rank 1: divergence_check=off (rank 0 has no divergence_check)",
                      rank1.stderr)


class DivergedResume(JobTestCase):
    """A run whose rank 0 diverged with DIVERGENCE_CHECK=off is not resumed from
    rank 0's odd checkpoint (nor at all: its ranks' receipts contradict each other)."""

    def test_a_diverged_runs_odd_checkpoint_is_never_resumed_from(self):
        out = self.scratch / "run"
        # Rank 0 diverges in step 5 and still writes checkpoint 6; rank 1 fails
        # there (CHECKPOINT_MISMATCH), leaving rank 0's odd checkpoint behind.
        env = tiny_job_env(out, 2, DIVERGENCE_CHECK="off", **PLAN)
        env.update({"DMLP_TRAIN": str(TRAIN), "FLIP_RANKS": "0", "FLIP_AT": str(FLIP_UPDATE)})
        result = run([LAUNCH, "--grace", "5", FLIP_BIT], env, timeout=180)
        self.assertNotEqual(result.returncode, 0, result.stderr)
        self.assertIn("CHECKPOINT_MISMATCH: step 6: rank 1 holds ", result.stderr)
        # Rank 0 may run on to checkpoint 8 before rank 1's failure stops it: odd too.
        self.assertIn(6, checkpoint_steps(out))
        before = sorted((p.name, p.stat().st_size) for p in out.iterdir())
        result = launch(out, 2, RESUME=1, **PLAN)
        self.assertNotEqual(result.returncode, 0, result.stderr)
        self.assertIn(f"error: RESUME_RECEIPTS_INVALID: {out}/metrics.jsonl: step {FLIP_STEP} differs "
                      f"from {out}/rank-1.jsonl", result.stderr)
        self.assertNotIn("resuming after step", result.stderr)
        self.assertEqual(sorted((p.name, p.stat().st_size) for p in out.iterdir()), before)


if __name__ == "__main__":
    unittest.main()
