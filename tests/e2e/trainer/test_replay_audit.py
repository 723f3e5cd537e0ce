"""dmlp-verify --replay: receipts proven genuine by recomputing them, not only
consistent; and CHECKPOINT_KEEP, which keeps the states an audit starts from.

Each forgery below passes the ordinary checks (asserted first), so only the
replay can catch it: that is what the audit adds."""

import json
import shutil
import tempfile
import unittest
from pathlib import Path

from harness import JobTestCase, launch, verify

STEPS = 7
# Checkpoints at 2, 4 and 6, all kept: segments 0-2, 2-4, 4-6, 6-7.
AUDITABLE = {"STEPS": STEPS, "CHECKPOINT_EVERY": 2, "CHECKPOINT_KEEP": "all"}


def receipt_files(run):
    ranks = [path for path in run.glob("rank-*.jsonl") if not path.name.endswith(".env.jsonl")]
    return [run / "metrics.jsonl", *sorted(ranks)]


def rewrite_hash(run, step, new_hash):
    """Every record of `step` gets `new_hash`, as a consistent forger would write it."""
    for path in receipt_files(run):
        lines = path.read_text().splitlines(keepends=True)
        record = json.loads(lines[step - 1])
        record["params_sha256"] = new_hash
        lines[step - 1] = json.dumps(record, sort_keys=True) + "\n"
        path.write_text("".join(lines))


def rewrite_result(run, **fields):
    result = json.loads((run / "result.json").read_text())
    result.update(fields)
    (run / "result.json").write_text(json.dumps(result, sort_keys=True, indent=2) + "\n")


class ReplayAudit(JobTestCase):
    genuine = None

    @classmethod
    def setUpClass(cls):
        cls.runs = Path(tempfile.mkdtemp(prefix="dmlp-replay-"))
        result = launch(cls.runs / "genuine", 2, **AUDITABLE)
        assert result.returncode == 0, result.stderr
        cls.genuine = cls.runs / "genuine"

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.runs, ignore_errors=True)

    def copy_of_genuine(self):
        run = self.scratch / "run"
        shutil.copytree(self.genuine, run)
        return run

    def audit(self, run, *options):
        result = verify(run, *options)
        return result, result.stdout + result.stderr

    def test_a_genuine_run_passes_a_full_and_a_sampled_audit(self):
        result, output = self.audit(self.genuine, "--replay=all")
        self.assertEqual(result.returncode, 0, output)
        self.assertIn("replayed 7 of 7 steps (100 %) in 4 of 4 segments", output)
        result, output = self.audit(self.genuine, "--replay=2", "--replay-seed", "11")
        self.assertEqual(result.returncode, 0, output)
        self.assertRegex(output, r"replayed \d of 7 steps .* in 2 of 4 segments, seed 11 ")
        self.assertIn("would miss all of them with probability", output)
        again, output_again = self.audit(self.genuine, "--replay=2", "--replay-seed", "11")
        self.assertEqual(output_again, output)  # a seed repeats the audit

    def test_receipts_and_summary_rewritten_consistently_are_caught_at_their_step(self):
        run = self.copy_of_genuine()
        rewrite_hash(run, 5, "0" * 64)
        self.assertPass(run)  # consistent: every rank and metrics.jsonl agree
        result, output = self.audit(run, "--replay=all")
        self.assertEqual(result.returncode, 1, output)
        self.assertIn("REPLAY_MISMATCH: step 5: params_sha256 ", output)
        self.assertIn(" recomputed, " + "0" * 64 + " recorded", output)
        self.assertEqual(output.strip().splitlines()[-1], "FAIL")

    def test_a_checkpoint_altered_by_one_bit_is_caught(self):
        run = self.copy_of_genuine()
        checkpoint = run / "checkpoint-00000004.safetensors"
        data = bytearray(checkpoint.read_bytes())
        data[-3] ^= 0x01
        checkpoint.write_bytes(bytes(data))
        self.assertPass(run)  # the ordinary checks never read checkpoints
        result, output = self.audit(run, "--replay=all")
        self.assertEqual(result.returncode, 1, output)
        self.assertIn("error replay.checkpoint_invalid", output)
        self.assertIn("checkpoint-00000004.safetensors", output)

    def test_a_state_file_swapped_for_another_runs_is_caught(self):
        other = self.scratch / "other"
        self.assertEqual(launch(other, 1, **AUDITABLE, SEED=43).returncode, 0)
        run = self.copy_of_genuine()
        shutil.copyfile(other / "state.safetensors", run / "state.safetensors")
        theirs = json.loads((other / "result.json").read_text())
        rewrite_hash(run, STEPS, theirs["params_sha256"])
        rewrite_result(run, **{key: theirs[key] for key in
                               ("params_sha256", "final_params_sha256", "final_opt_state_sha256")})
        self.assertPass(run)  # state file, summary and last receipts agree
        result, output = self.audit(run, "--replay=all")
        self.assertEqual(result.returncode, 1, output)
        self.assertIn(f"REPLAY_MISMATCH: step {STEPS}: params_sha256 ", output)

    def test_a_run_without_kept_checkpoints_is_replayed_from_step_0(self):
        run = self.scratch / "plain"
        self.assertEqual(launch(run, 2, STEPS=4).returncode, 0)
        result, output = self.audit(run, "--replay")
        self.assertEqual(result.returncode, 0, output)
        self.assertIn("info replay.from_start", output)
        self.assertIn("replayed 4 of 4 steps (100 %) in 1 of 1 segments", output)

    def test_a_run_with_another_plans_bits_is_incomplete_with_the_reason(self):
        run = self.scratch / "blis"
        self.assertEqual(launch(run, 1, STEPS=3, DMLP_CPU_GEMM="blis").returncode, 0)
        self.assertPass(run)
        result, output = self.audit(run, "--replay=all")
        self.assertEqual(result.returncode, 3, output)
        self.assertIn("incomplete replay.not_reproducible", output)
        self.assertIn('plan.gemm_order: "', output)
        self.assertNotIn("PASS", output)

    def test_json_and_html_reports_show_the_audit(self):
        run = self.copy_of_genuine()
        rewrite_hash(run, 3, "f" * 64)
        page = self.scratch / "report.html"
        result = verify(run, "--replay=all", "--json", f"--html={page}")
        self.assertEqual(result.returncode, 1, result.stderr)
        audit = json.loads(result.stdout)["replay"]
        self.assertEqual((audit["steps_replayed"], audit["run_steps"]), (7, 7))
        self.assertEqual(audit["first_mismatch"]["step"], 3)
        self.assertEqual([s["outcome"] for s in audit["segments"]],
                         ["reproduced", "mismatch", "reproduced", "reproduced"])
        html = page.read_text()
        self.assertIn("<h2>Replay audit</h2>", html)
        self.assertIn("7 of 7 steps recomputed in 4 of 4 segments", html)
        self.assertIn("first mismatch: <span class=\"mono\">step 3: params_sha256 ", html)

    def test_a_replay_count_or_seed_that_is_not_a_number_is_a_usage_error(self):
        for options in (["--replay=0"], ["--replay=some"], ["--replay", "--replay-seed", "-1"],
                        ["--replay-seed", "5"]):
            with self.subTest(options=options):
                result = verify(self.genuine, *options)
                self.assertEqual(result.returncode, 2, result.stdout + result.stderr)


class CheckpointKeep(JobTestCase):
    def kept(self, keep):
        run = self.scratch / f"keep-{keep.replace(':', '-')}"
        result = launch(run, 1, STEPS=9, CHECKPOINT_EVERY=2, CHECKPOINT_KEEP=keep)
        self.assertEqual(result.returncode, 0, result.stderr)
        return sorted(int(p.name[11:19]) for p in run.glob("checkpoint-*.safetensors"))

    def test_each_choice_keeps_its_checkpoints(self):
        self.assertEqual(self.kept("2"), [6, 8])
        self.assertEqual(self.kept("all"), [2, 4, 6, 8])
        self.assertEqual(self.kept("every:2"), [4, 6, 8])

    def test_a_bad_value_is_refused(self):
        result = launch(self.scratch / "bad", 1, CHECKPOINT_KEEP="every:0")
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("ENV_INVALID: CHECKPOINT_KEEP='every:0' must be all, every:M or a count N (M, N >= 1)",
                      result.stderr)


if __name__ == "__main__":
    unittest.main()
