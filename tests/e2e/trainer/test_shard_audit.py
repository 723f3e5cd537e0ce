"""The shard audit (trainer/checks/shard_audit.h) end to end on the CPU: a
bit flipped in one rank's shard partial (DMLP_TEST_CORRUPT_SHARD, the fault a
bad GPU would cause) stops every rank with SHARD_AUDIT_FAILED and exit code 5
when that update audits that shard, at the update its verdict is due
(AuditVerdictLag updates later: min(AUDIT_EVERY, 32)) or after the last update;
the same fault on an unaudited update goes through with every rank agreeing
(what state digests alone cannot catch); and auditing never changes a byte."""

import json
import re
import socket
import unittest
from pathlib import Path

from harness import JobTestCase, TRAIN, free_port, tiny_job_env, launch, run, verify

DIGEST = "[0-9a-f]{64}"
# (ranks, plan overrides, rank with the fault, faulty update, expected verdict fields,
#  the step whose updates the verdict stopped: receipts end before it)
# The harness's job: STEPS=4, MICROBATCHES=2 (8 updates), DATA_SHARDS=4.
# 2 ranks, AUDIT_EVERY=1: update 3 (step 2, microbatch 0) audits shard 2, rank
#   1's first local shard; rank 0 recomputes it. Verdict at update 4 (step 2).
# 3 ranks, 6 shards, AUDIT_EVERY=2: update 10 (step 5, microbatch 1) audits
#   shard (10/2 - 1) = 4, rank 2's first; the auditor wraps round to rank 0.
#   Verdict at update 12 (step 6): step 5's receipts are written.
# 2 ranks, AUDIT_EVERY=8: update 8, the last, audits shard 0 (rank 0's first);
#   its verdict (due at update 16) comes after the loop: every step's receipts.
CASES = (
    (2, {"AUDIT_EVERY": 1}, 1, 3, {"step": 2, "update": 3, "shard": 2, "ranks": (1, 0)}, 2),
    (3, {"AUDIT_EVERY": 2, "DATA_SHARDS": 6, "BATCH": 18, "STEPS": 6}, 2, 10,
     {"step": 5, "update": 10, "shard": 4, "ranks": (2, 0)}, 6),
    (2, {"AUDIT_EVERY": 8}, 0, 8, {"step": 4, "update": 8, "shard": 0, "ranks": (0, 1)}, 5),
)


def checkpoint_steps(out):
    return sorted(int(p.name.split("-")[1].split(".")[0]) for p in out.glob("checkpoint-*.safetensors"))


def cpu_label():
    model = "unknown"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            model = line.split(":", 1)[1].strip()
            break
    return f"host {socket.gethostname()} cpu {model}"


def expected_message(verdict):
    owner, auditor = verdict["ranks"]
    label = cpu_label()
    return (rf"dmlp-train: error: SHARD_AUDIT_FAILED: step={verdict['step']} "
            rf"update={verdict['update']} shard={verdict['shard']} ranks={owner},{auditor} "
            rf"digests=({DIGEST}),({DIGEST}) device\(s\)=rank {owner}: {re.escape(label)}; "
            rf"rank {auditor}: {re.escape(label)}")


class ShardAudit(JobTestCase):
    def assertStoppedBeforeStep(self, out, processes, step):
        """Receipts end at step - 1, whole, on every rank; no result files."""
        for rank in range(processes):
            lines = (out / f"rank-{rank}.jsonl").read_text().splitlines()
            self.assertEqual([json.loads(line)["step"] for line in lines], list(range(1, step)),
                             f"rank {rank}")
        self.assertFalse((out / "result.json").exists())
        self.assertFalse((out / "state.safetensors").exists())
        self.assertEqual(verify(out).returncode, 3)  # INCOMPLETE: consistent so far

    def test_fault_on_an_audited_shard_stops_every_rank_with_exit_5(self):
        for processes, plan, faulty_rank, update, verdict, stopped in CASES:
            with self.subTest(processes=processes, update=update):
                out = self.scratch / f"ranks{processes}-{update}"
                port = free_port()
                ranks = []
                for rank in range(processes):
                    extra = {"DMLP_TEST_CORRUPT_SHARD": update} if rank == faulty_rank else {}
                    env = tiny_job_env(out, processes, PROCESS_ID=rank, COORDINATOR_PORT=port,
                                  **plan, **extra)
                    ranks.append(self.start([TRAIN], env))
                messages = []
                for rank, process in enumerate(ranks):
                    process.wait(timeout=120)
                    stderr = process.stderr.read()
                    self.assertEqual(process.returncode, 5, f"rank {rank}: {stderr}")
                    errors = [l for l in stderr.splitlines() if "error:" in l]
                    self.assertEqual(len(errors), 1, stderr)
                    match = re.fullmatch(expected_message(verdict), errors[0])
                    self.assertIsNotNone(match, errors[0])
                    self.assertNotEqual(match.group(1), match.group(2))
                    messages.append(errors[0])
                self.assertEqual(len(set(messages)), 1, messages)  # every rank decided alike
                self.assertStoppedBeforeStep(out, processes, stopped)

    def test_launcher_exits_5(self):
        for processes, plan, _, update, verdict, stopped in CASES:
            with self.subTest(processes=processes, update=update):
                out = self.scratch / f"launched{processes}-{update}"
                # Under the launcher every rank has the hook and flips a bit of
                # its own first shard; the audited shard is still caught.
                result = launch(out, processes, DMLP_TEST_CORRUPT_SHARD=update, **plan)
                self.assertEqual(result.returncode, 5, result.stderr)
                self.assertRegex(result.stderr, expected_message(verdict))
                self.assertIn("dmlp-launch: exit code 5", result.stderr)
                self.assertStoppedBeforeStep(out, processes, stopped)

    def test_a_checkpoint_step_hears_the_verdict_first_and_a_resume_redoes_the_audit(self):
        # AUDIT_EVERY=3: update 3 (step 2, microbatch 0) audits shard 0, rank
        # 0's first; rank 0 has the fault there. Its verdict is due at update 6
        # (step 3), but step 2 is a checkpoint step: the verdict comes at the
        # end of step 2, before its snapshot, so checkpoint 2 (which would hold
        # the wrong update) is never written.
        plan = {"AUDIT_EVERY": 3}
        late, early = self.scratch / "no-checkpoints", self.scratch / "checkpoints"
        for out, extra, stopped in ((late, {}, 3), (early, {"CHECKPOINT_EVERY": 1}, 2)):
            port = free_port()
            ranks = [self.start([TRAIN], tiny_job_env(out, 2, PROCESS_ID=rank, COORDINATOR_PORT=port, **plan,
                                                 **extra, **({"DMLP_TEST_CORRUPT_SHARD": 3} if rank == 0 else {})))
                     for rank in range(2)]
            for process in ranks:
                process.wait(timeout=120)
                stderr = process.stderr.read()
                self.assertEqual(process.returncode, 5, stderr)
                self.assertIn("SHARD_AUDIT_FAILED: step=2 update=3 shard=0 ranks=0,1", stderr)
            self.assertStoppedBeforeStep(out, 2, stopped)
        self.assertEqual(checkpoint_steps(early), [1])
        # A resume from checkpoint 1 recomputes update 3 without the fault and
        # audits it again: the job ends as a clean run does, byte for byte.
        clean = self.scratch / "clean"
        self.assertEqual(launch(clean, 2, CHECKPOINT_EVERY=1, **plan).returncode, 0)
        resumed = launch(early, 2, RESUME=1, CHECKPOINT_EVERY=1, **plan)
        self.assertEqual(resumed.returncode, 0, resumed.stderr)
        self.assertPass(early)
        self.assertSameBytes(clean, early, ("metrics.jsonl", "state.safetensors", "rank-0.jsonl", "rank-1.jsonl"))

    def test_fault_on_an_unaudited_update_goes_through_with_ranks_agreeing(self):
        # AUDIT_EVERY=3 audits updates 3 and 6 only; the fault is at update 4.
        clean, faulty = self.scratch / "clean", self.scratch / "faulty"
        self.assertEqual(launch(clean, 2, AUDIT_EVERY=3).returncode, 0)
        port = free_port()
        ranks = [self.start([TRAIN], tiny_job_env(faulty, 2, PROCESS_ID=rank, COORDINATOR_PORT=port,
                                             AUDIT_EVERY=3,
                                             **({"DMLP_TEST_CORRUPT_SHARD": 4} if rank else {})))
                 for rank in range(2)]
        for process in ranks:
            process.wait(timeout=120)
            self.assertEqual(process.returncode, 0, process.stderr.read())
        self.assertPass(faulty)  # both ranks hold the same (wrong) state at every step
        for name in ("rank-0.jsonl", "rank-1.jsonl"):
            clean_lines = (clean / name).read_text().splitlines()
            faulty_lines = (faulty / name).read_text().splitlines()
            self.assertEqual(clean_lines[:1], faulty_lines[:1])  # step 1 is before update 4
            self.assertNotEqual(clean_lines[2:], faulty_lines[2:])  # steps 3 and 4 are not
        receipts = [[(r["step"], r["loss"], r["params_sha256"]) for r in map(
            json.loads, (faulty / f"rank-{rank}.jsonl").read_text().splitlines())]
            for rank in range(2)]
        self.assertEqual(receipts[0], receipts[1])
        self.assertNotEqual((clean / "state.safetensors").read_bytes(),
                            (faulty / "state.safetensors").read_bytes())

    def test_auditing_every_update_changes_no_byte(self):
        for processes, plan in ((2, {}), (3, {"DATA_SHARDS": 6, "BATCH": 18})):
            with self.subTest(processes=processes):
                runs = {}
                for every in (0, 1):
                    out = self.scratch / f"p{processes}-every{every}"
                    result = launch(out, processes, AUDIT_EVERY=every, **plan)
                    self.assertEqual(result.returncode, 0, result.stderr)
                    runs[every] = out
                self.assertSameBytes(runs[0], runs[1], ("metrics.jsonl", "state.safetensors") +
                                     tuple(f"rank-{r}.jsonl" for r in range(processes)))

    def test_audit_every_is_checked_like_every_variable(self):
        result = run([TRAIN], tiny_job_env(self.scratch / "bad", 1, PROCESS_ID=0, AUDIT_EVERY="x"))
        self.assertEqual((result.returncode, result.stderr),
                         (2, "dmlp-train: error: ENV_INVALID: AUDIT_EVERY='x' is not an integer\n"))


if __name__ == "__main__":
    unittest.main()
