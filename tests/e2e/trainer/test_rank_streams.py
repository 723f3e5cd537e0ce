"""A rank's standard streams as a user may leave them: closed (they become
/dev/null, never a socket that happens to take descriptor 1) or a pipe whose
reader went away (one warning, and the run completes)."""

import os
import subprocess
import unittest

from harness import TRAIN, JobTestCase, line_count, tiny_job_env, wait_for


def start_ranks(env, processes):
    """dmlp-train once per rank, without dmlp-launch, so a test holds each rank's streams."""
    return [subprocess.Popen([str(TRAIN)], env={**env, "PROCESS_ID": str(rank)}, stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE if rank == 0 else subprocess.DEVNULL, stderr=subprocess.PIPE)
            for rank in range(processes)]


class Streams(JobTestCase):
    def run_ranks(self):
        """Both ranks, rank 0's stdout a pipe whose reader went away: writes get EPIPE."""
        out = self.scratch / "run"
        ranks = start_ranks(tiny_job_env(out, 2, DATA_SHARDS=2), 2)
        ranks[0].stdout.close()
        outputs = [rank.communicate(timeout=180) for rank in ranks]
        return out, [rank.returncode for rank in ranks], outputs

    def test_closed_standard_streams_are_dev_null(self):
        # Was: with stdout closed the coordinator's socket took descriptor 1
        # and METRIC lines went into it (stderr's progress lines likewise).
        # Each rank is looked at while it trains, then stopped by its pid.
        out = self.scratch / "run"

        def close_output():
            os.close(1)
            os.close(2)

        env = tiny_job_env(out, 2, DATA_SHARDS=2, STEPS=1000000)
        ranks = [subprocess.Popen([str(TRAIN)], env={**env, "PROCESS_ID": str(rank)},
                                  stdin=subprocess.DEVNULL, preexec_fn=close_output) for rank in range(2)]
        try:
            wait_for(lambda: line_count(out / "rank-1.jsonl") >= 1 or any(r.poll() is not None for r in ranks),
                     120, "step 1")
            for rank, process in enumerate(ranks):
                self.assertIsNone(process.poll(), f"rank {rank} ended: {process.returncode}")
                for fd in (1, 2):
                    self.assertEqual(os.readlink(f"/proc/{process.pid}/fd/{fd}"), "/dev/null", f"rank {rank} fd {fd}")
        finally:
            for process in ranks:
                process.kill()
                process.wait(timeout=60)

    def test_a_broken_stdout_is_reported_and_the_run_completes(self):
        # Was exit 141 (SIGPIPE) at the first METRIC line.
        out, codes, outputs = self.run_ranks()
        self.assertEqual(codes, [0, 0], outputs)
        stderr = outputs[0][1].decode()
        self.assertEqual(stderr.count("dmlp-train: warning: stdout: "), 1, stderr)
        self.assertRegex(stderr, r"dmlp-train: warning: stdout: Broken pipe; METRIC lines from step 1 on "
                                 r"are lost \(the receipts keep every step\)\n")
        self.assertPass(out)


if __name__ == "__main__":
    unittest.main()
