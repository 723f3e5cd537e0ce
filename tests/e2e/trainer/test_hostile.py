"""Hostile and unlucky users: the limits and streams a rank
may be started with (descriptors, threads, closed or broken stdout/stderr), an
unreadable --config, settings changed on resume, and dmlp-launch --log-dir
links. Each case was an abort, a spin, a hole or a write outside the run."""

import os
import resource
import subprocess
from pathlib import Path

from harness import LAUNCH, TRAIN, JobTestCase, tiny_job_env, launch, line_count, run, wait_for
from test_limits import tree

ALLREDUCE = {"REDUCTION": "allreduce", "CHECKPOINT_EVERY": "2"}


def start_ranks(env, processes):
    """dmlp-train once per rank, without dmlp-launch, so a test holds each rank's streams."""
    return [subprocess.Popen([str(TRAIN)], env={**env, "PROCESS_ID": str(rank)}, stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE if rank == 0 else subprocess.DEVNULL, stderr=subprocess.PIPE)
            for rank in range(processes)]


class DescriptorLimit(JobTestCase):
    def test_out_of_descriptors_is_named_never_spun(self):
        # Was, at RLIMIT_NOFILE=29 here: ~15,500 failing accept4 calls/s in
        # rank 0's coordinator until RENDEZVOUS_TIMEOUT (two heartbeats: 20
        # minutes here, two days with the image's 86400 s), EMFILE never named.
        # Which descriptor runs out first depends on the limit (the
        # coordinator's accept, an env file, Gloo's mesh): each limit around
        # the rendezvous's needs must end promptly, saying so.
        for limit in range(24, 32):
            with self.subTest(limit=limit):
                out = self.scratch / f"run-{limit}"

                def few_descriptors():
                    resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))

                env = tiny_job_env(out, 2, DATA_SHARDS=2, HEARTBEAT_TIMEOUT_SECONDS=600)
                result = subprocess.run([str(LAUNCH), "--grace", "5", str(TRAIN)], env=env,
                                        capture_output=True, text=True, timeout=120,
                                        stdin=subprocess.DEVNULL, preexec_fn=few_descriptors)
                self.assertNotIn("RENDEZVOUS_TIMEOUT", result.stderr)
                if result.returncode != 0:
                    self.assertRegex(result.stderr, rf"too many open files \(RLIMIT_NOFILE={limit}\)|"
                                                    r"Too many open files")
                    self.assertFalse((out / "dmlp.lock").exists())


class ThreadLimit(JobTestCase):
    def test_a_thread_that_cannot_start_is_an_error_that_leaves_nothing(self):
        # Was an uncaught std::system_error: exit 134, empty receipts and
        # dmlp.lock left, and the rerun OUTPUT_EXISTS. glibc gives each thread
        # a stack of RLIMIT_STACK: 1 GiB stacks in 8 GiB of address space fit
        # a few threads, not 16 hashers.
        out = self.scratch / "run"
        out.mkdir()
        (out / "notes.txt").write_text("the user's own file\n")
        before = tree(out)

        def huge_stacks():
            resource.setrlimit(resource.RLIMIT_STACK, (1 << 30, resource.RLIM_INFINITY))
            resource.setrlimit(resource.RLIMIT_AS, (8 << 30, 8 << 30))
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

        env = tiny_job_env(out, 1, PROCESS_ID=0, DATA_SHARDS=1, DIGEST_THREADS=16, DMLP_CPU_THREADS=1)
        result = subprocess.run([str(TRAIN)], env=env, capture_output=True, text=True, timeout=120,
                                stdin=subprocess.DEVNULL, preexec_fn=huge_stacks)
        self.assertEqual(result.returncode, 1, result.stderr)
        self.assertRegex(result.stderr, r"(^|\n)dmlp-train: error: RESOURCE_EXHAUSTED: cannot start a thread "
                                        r"\(digest hasher \d+ of 16, DIGEST_THREADS\): [^\n]+\n$")
        self.assertEqual(tree(out), before, "OUT_DIR changed")
        rerun = launch(out, 1, DATA_SHARDS=1, DIGEST_THREADS=16)
        self.assertEqual(rerun.returncode, 0, rerun.stderr)
        self.assertPass(out)


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


class UnreadableConfig(JobTestCase):
    def test_a_config_that_cannot_be_read_is_config_invalid(self):
        # Was std::__ios_failure: SIGABRT, exit 134.
        directory = self.scratch / "d.yaml"
        directory.mkdir()
        for path in (directory, Path("/proc/self/mem")):
            with self.subTest(path=str(path)):
                result = run([TRAIN, "--config", path], tiny_job_env(self.scratch / "run", 1, PROCESS_ID=0))
                self.assertEqual(result.returncode, 2, result.stderr)
                self.assertRegex(result.stderr, rf"^dmlp-train: error: CONFIG_INVALID: {path}: cannot be read"
                                                r"[^\n]*\n$")


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


class LogDir(JobTestCase):
    def test_log_files_never_follow_a_link(self):
        # Was: a link at DIR/rank-0.stdout received the rank's METRIC lines, and
        # a planted rank-1.stderr link cut a file outside to 0 bytes.
        logs = self.scratch / "logs"
        logs.mkdir()
        outside = self.scratch / "outside.txt"
        outside.write_text("precious\n")
        (logs / "rank-0.stdout").symlink_to(outside)
        out = self.scratch / "run"
        env = tiny_job_env(out, 1, DATA_SHARDS=1)
        result = run([LAUNCH, "--grace", "5", "--log-dir", logs, TRAIN], env)
        self.assertEqual(result.returncode, 2, result.stderr)
        self.assertIn(f"LOG_DIR_FAILED: {logs}/rank-0.stdout", result.stderr)
        self.assertIn("not a regular file", result.stderr)
        self.assertEqual(outside.read_text(), "precious\n")
        self.assertFalse(out.exists())

    def test_an_existing_log_is_replaced_not_truncated(self):
        logs = self.scratch / "logs"
        logs.mkdir()
        kept = self.scratch / "kept.txt"
        kept.write_text("an earlier log, hard-linked elsewhere\n")
        os.link(kept, logs / "rank-0.stderr")
        out = self.scratch / "run"
        result = run([LAUNCH, "--grace", "5", "--log-dir", logs, TRAIN], tiny_job_env(out, 1, DATA_SHARDS=1))
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(kept.read_text(), "an earlier log, hard-linked elsewhere\n")
        self.assertIn("METRIC step=4 ", (logs / "rank-0.stdout").read_text())
        self.assertNotIn("hard-linked", (logs / "rank-0.stderr").read_text())
        self.assertPass(out)
