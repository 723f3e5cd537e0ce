"""Peers that do not belong and peers that go silent:
ranks of another job on the same port are refused and change nothing; strangers
on the coordinator's port cannot abort the job or learn its plan; one stopped
rank is PEER_LOST for the others after HEARTBEAT_TIMEOUT_SECONDS, while the
whole job stopped and continued goes on."""

import os
import signal
import socket
import struct
import time
import unittest

from harness import (LAUNCH, TRAIN, JobTestCase, alive, tiny_job_env, line_count, rank_pids, run,
                     verify, wait_for)


def frame(message_type, body):
    return struct.pack("<IB", len(body) + 1, message_type) + body


def text(value):
    return struct.pack("<I", len(value)) + value


def hello(rank, world_size, job_id, fingerprint):
    return frame(1, b"DMLPRDV2" + struct.pack("<II", rank, world_size) + text(job_id) + text(fingerprint))


def connect(port):
    """A connection to the coordinator once it listens (it may still be starting)."""
    deadline = time.monotonic() + 60
    while True:
        try:
            return socket.create_connection(("127.0.0.1", port), timeout=60)
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def read_to_end(sock):
    data = b""
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            return data
        data += chunk


def error_reply(data):
    """(code, detail) of an ERROR frame."""
    length, message_type = struct.unpack_from("<IB", data)
    assert message_type == 19, data
    code_length = struct.unpack_from("<I", data, 5)[0]
    code = data[9:9 + code_length].decode()
    detail_length = struct.unpack_from("<I", data, 9 + code_length)[0]
    detail = data[13 + code_length:13 + code_length + detail_length].decode()
    assert 4 + length == len(data), data
    return code, detail


class JobIdentity(JobTestCase):
    def test_rank_of_another_job_on_the_same_port_is_refused_and_changes_nothing(self):
        # Job A's rank 0 serves the port; job B's rank 1 (same plan, same port,
        # another OUT_DIR) comes before A's own rank 1. Before the fix it took
        # rank 1's place and wrote A's steps into B's directory.
        out_a, out_b = self.scratch / "a", self.scratch / "b"
        env_a0 = tiny_job_env(out_a, 2, PROCESS_ID=0, DMLP_JOB_ID="job-a", HEARTBEAT_TIMEOUT_SECONDS=60)
        port = env_a0["COORDINATOR_PORT"]
        rank_a0 = self.start([TRAIN], env_a0)
        stranger = run([TRAIN], tiny_job_env(out_b, 2, PROCESS_ID=1, DMLP_JOB_ID="job-b",
                                        COORDINATOR_PORT=port, HEARTBEAT_TIMEOUT_SECONDS=60))
        self.assertEqual(stranger.returncode, 1, stranger.stderr)
        self.assertEqual(stranger.stderr.strip().splitlines()[-1],
                         f"dmlp-train: error: JOB_MISMATCH: rank 1: the coordinator at 127.0.0.1:{port} "
                         "serves another job (two jobs need two ports)")
        self.assertEqual(line_count(out_b / "rank-1.jsonl"), 0)
        rank_a1 = run([TRAIN], tiny_job_env(out_a, 2, PROCESS_ID=1, DMLP_JOB_ID="job-a",
                                       COORDINATOR_PORT=port, HEARTBEAT_TIMEOUT_SECONDS=60))
        self.assertEqual(rank_a1.returncode, 0, rank_a1.stderr)
        rank_a0.wait(timeout=120)
        self.assertEqual(rank_a0.returncode, 0, rank_a0.stderr.read())
        self.assertPass(out_a)

    def test_launcher_gives_its_ranks_one_job_id(self):
        out = self.scratch / "run"
        env = tiny_job_env(out, 2, STEPS=400)
        launcher = self.start([LAUNCH, "--grace", "5", TRAIN], env)
        wait_for(lambda: line_count(out / "rank-0.jsonl") >= 1, 60, "the first receipt")
        ids = set()
        for pid in rank_pids(launcher.pid).values():
            with open(f"/proc/{pid}/environ", "rb") as environ:
                entries = environ.read().split(b"\0")
            for entry in entries:
                if entry.startswith(b"DMLP_JOB_ID="):
                    ids.add(entry[len(b"DMLP_JOB_ID="):].decode())
        launcher.send_signal(signal.SIGTERM)
        launcher.wait(timeout=60)
        self.assertEqual(len(ids), 1, ids)
        self.assertRegex(ids.pop(), r"^[0-9a-f]{32}$")


class Strangers(JobTestCase):
    def test_stranger_hello_during_the_join_neither_aborts_nor_learns_the_plan(self):
        out = self.scratch / "run"
        env0 = tiny_job_env(out, 2, PROCESS_ID=0, DMLP_JOB_ID="job-a", HEARTBEAT_TIMEOUT_SECONDS=60)
        port = int(env0["COORDINATOR_PORT"])
        rank0 = self.start([TRAIN], env0)
        with connect(port) as sock:
            sock.sendall(hello(1, 2, b"not-this-job", b"steps=999\nlearning_rate=9.0"))
            code, detail = error_reply(read_to_end(sock))
        self.assertEqual((code, detail), ("JOB_MISMATCH", "rank 1: the coordinator serves another job"))
        rank1 = run([TRAIN], tiny_job_env(out, 2, PROCESS_ID=1, DMLP_JOB_ID="job-a", COORDINATOR_PORT=port,
                                     HEARTBEAT_TIMEOUT_SECONDS=60))
        self.assertEqual(rank1.returncode, 0, rank1.stderr)
        rank0.wait(timeout=120)
        self.assertEqual(rank0.returncode, 0, rank0.stderr.read())
        self.assertPass(out)

    def test_flood_of_connections_and_oversized_frames_leaves_the_job_alone(self):
        # While rank 0's coordinator waits for rank 1 to join (so the flood
        # surely meets it), strangers open more connections than it keeps and
        # announce 64 MiB frames; then rank 1 joins and the job completes.
        out = self.scratch / "run"
        env0 = tiny_job_env(out, 2, PROCESS_ID=0, DMLP_JOB_ID="job-a", HEARTBEAT_TIMEOUT_SECONDS=60)
        port = int(env0["COORDINATOR_PORT"])
        rank0 = self.start([TRAIN], env0)
        idle = [connect(port) for _ in range(150)]  # beyond the cap of 64 pending
        refused = 0
        for _ in range(4):  # each announces a 64 MiB SET and sends 4 MiB of it
            with connect(port) as sock:
                try:
                    sock.sendall(struct.pack("<IB", 64 << 20, 2) + b"x" * (4 << 20))
                except OSError:
                    pass  # refused and closed before all of it was sent
                code, _ = error_reply(read_to_end(sock))
                refused += code == "PROTOCOL_ERROR"
        with open(f"/proc/{rank0.pid}/status") as status:
            rss_kib = int([line for line in status if line.startswith("VmRSS:")][0].split()[1])
        for sock in idle:
            sock.close()
        rank1 = run([TRAIN], tiny_job_env(out, 2, PROCESS_ID=1, DMLP_JOB_ID="job-a", COORDINATOR_PORT=port,
                                     HEARTBEAT_TIMEOUT_SECONDS=60))
        self.assertEqual(rank1.returncode, 0, rank1.stderr)
        rank0.wait(timeout=120)
        self.assertEqual(rank0.returncode, 0, rank0.stderr.read())
        self.assertEqual(refused, 4)
        self.assertLess(rss_kib, 256 * 1024, "rank 0 holds the strangers' bytes")
        self.assertPass(out)


class Liveness(JobTestCase):
    def test_one_stopped_rank_is_peer_lost_for_the_others(self):
        out = self.scratch / "run"
        env = tiny_job_env(out, 2, STEPS=4000, HEARTBEAT_TIMEOUT_SECONDS=2)
        launcher = self.start([LAUNCH, "--grace", "5", TRAIN], env)
        wait_for(lambda: line_count(out / "rank-1.jsonl") >= 2, 60, "two receipts of rank 1")
        ranks = rank_pids(launcher.pid)
        os.kill(ranks[1], signal.SIGSTOP)  # the launcher SIGCONTs it when it tears down
        launcher.wait(timeout=120)  # before the fix: never (Gloo waits a year)
        stderr = launcher.stderr.read()
        self.assertNotEqual(launcher.returncode, 0, stderr)
        # The lost rank's host, and the ranks there (both, on this one machine).
        self.assertIn(f"[rank 0] dmlp-train: error: PEER_LOST: rank 1 (host {socket.gethostname()}, "
                      "ranks 0,1): silent for 2s (HEARTBEAT_TIMEOUT_SECONDS) while rank 0 kept running", stderr)
        for pid in ranks.values():
            wait_for(lambda: not alive(pid), 30, f"rank pid {pid} to end")
        result = verify(out)
        self.assertEqual(result.returncode, 3, result.stdout + result.stderr)
        self.assertEqual(result.stdout.strip().splitlines()[-1], "INCOMPLETE")

    def test_stopped_rank_0_is_peer_lost_for_rank_1(self):
        out = self.scratch / "run"
        env = tiny_job_env(out, 2, STEPS=4000, HEARTBEAT_TIMEOUT_SECONDS=2)
        launcher = self.start([LAUNCH, "--grace", "5", TRAIN], env)
        wait_for(lambda: line_count(out / "rank-1.jsonl") >= 2, 60, "two receipts of rank 1")
        ranks = rank_pids(launcher.pid)
        os.kill(ranks[0], signal.SIGSTOP)
        launcher.wait(timeout=120)
        stderr = launcher.stderr.read()
        self.assertNotEqual(launcher.returncode, 0, stderr)
        self.assertIn(f"[rank 1] dmlp-train: error: PEER_LOST: rank 0 (host {socket.gethostname()}, "
                      "ranks 0,1): silent for 2s (HEARTBEAT_TIMEOUT_SECONDS) (seen by rank 1)", stderr)
        result = verify(out)
        self.assertEqual(result.returncode, 3, result.stdout + result.stderr)

    def test_whole_job_stopped_with_checkpoints_goes_on(self):
        # A 5 s stop of everything (launcher included) with a 1 s heartbeat and
        # a checkpoint every step: before, this was fatal with checkpoints.
        out = self.scratch / "run"
        env = tiny_job_env(out, 2, STEPS=12, HEARTBEAT_TIMEOUT_SECONDS=1, CHECKPOINT_EVERY=1)
        launcher = self.start([LAUNCH, TRAIN], env)
        wait_for(lambda: line_count(out / "rank-0.jsonl") >= 1, 60, "the first receipt")
        everyone = [launcher.pid] + list(rank_pids(launcher.pid).values())
        for pid in everyone:
            os.kill(pid, signal.SIGSTOP)
        time.sleep(5)
        for pid in everyone:
            os.kill(pid, signal.SIGCONT)
        launcher.wait(timeout=120)
        self.assertEqual(launcher.returncode, 0, launcher.stderr.read())
        self.assertPass(out)

    def test_clock_jump_is_a_freeze_not_a_lost_peer(self):
        # Every rank's wait clock jumps 30 s forward a second into the job (a
        # test hook in peer_wait.cc), as a suspended VM's clock does: the rule
        # counts it as a freeze, so nobody is lost with a 2 s heartbeat.
        out = self.scratch / "run"
        env = tiny_job_env(out, 2, STEPS=1500, HEARTBEAT_TIMEOUT_SECONDS=2, DMLP_TEST_CLOCK_JUMP_SECONDS=30)
        result = run([LAUNCH, "--grace", "5", TRAIN], env, timeout=300)
        self.assertEqual(result.returncode, 0, result.stderr[-3000:])
        self.assertPass(out)


if __name__ == "__main__":
    unittest.main()
