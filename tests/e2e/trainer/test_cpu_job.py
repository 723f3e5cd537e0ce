"""dmlp-launch -> dmlp-train (PLATFORM=cpu) -> dmlp-verify, end to end."""

import json
import math
import mmap
import os
import signal
import socket
import struct
import subprocess
import time
import unittest
from pathlib import Path

from harness import (LAUNCH, TRAIN, JobTestCase, alive, free_port, tiny_job_env, launch, line_count,
                     rank_pids, run, verify, wait_for)


def os_release(key):
    """A value of this machine's /etc/os-release (os-release(5): KEY="value")."""
    for line in Path("/etc/os-release").read_text().splitlines():
        name, _, value = line.partition("=")
        if name == key:
            return value.strip('"')
    return ""


def cpu_flags():
    """This machine's CPU flags (/proc/cpuinfo), as GCC's __builtin_cpu_supports sees them."""
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("flags"):
            return set(line.partition(":")[2].split())
    return set()


CPU_FLAGS = cpu_flags()
# The shared segment's layout (trainer/cpu/collectives_shm.h) for TINY at 2
# ranks: a header page, each rank's 2 partials of 838 floats, the reduced vector.
PARTIALS = 4096
REDUCED_VECTOR = PARTIALS + 2 * 2 * 838 * 4


class CompleteRuns(JobTestCase):
    def test_two_and_three_ranks_pass(self):
        for processes, shards in ((2, 4), (3, 3)):
            out = self.scratch / f"run{processes}"
            result = launch(out, processes, DATA_SHARDS=shards, BATCH=12 if shards == 3 else 16)
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertPass(out)
            names = sorted(p.name for p in out.iterdir())
            self.assertEqual(names, sorted(["metrics.jsonl", "result.json", "state.safetensors"] +
                                           [f"rank-{r}.jsonl" for r in range(processes)] +
                                           [f"rank-{r}.env.jsonl" for r in range(processes)]))
            metric_lines = [l for l in result.stdout.splitlines() if "METRIC step=" in l]
            self.assertEqual(len(metric_lines), 4)

    def test_first_loss_is_close_to_ln_classes(self):
        out = self.scratch / "run"
        self.assertEqual(launch(out, 1, DATA_SHARDS=1).returncode, 0)
        first = json.loads((out / "metrics.jsonl").read_text().splitlines()[0])
        self.assertLess(abs(float(first["loss"]) - math.log(5)), 0.25, first)

    def test_result_json_is_python_formatted_and_consistent(self):
        out = self.scratch / "run"
        self.assertEqual(launch(out, 2).returncode, 0)
        text = (out / "result.json").read_text()
        document = json.loads(text)
        self.assertEqual(text, json.dumps(document, sort_keys=True, indent=2) + "\n")
        last = json.loads((out / "rank-1.jsonl").read_text().splitlines()[-1])
        self.assertEqual(document["params_sha256"], last["params_sha256"])
        self.assertEqual(document["final_loss"], last["loss"])
        self.assertEqual(document["fingerprint"]["platform"], "cpu")
        self.assertEqual(document["fingerprint"]["data_shards"], 4)
        # The build it ran from, as `dmlp-train --version` names it.
        build = document["build"]
        self.assertRegex(build["git_commit"], r"^([0-9a-f]{40}|unknown)$")
        self.assertIn(build["git_dirty"], ("true", "false", "unknown"))
        version = subprocess.run([str(TRAIN), "--version"], capture_output=True, text=True)
        self.assertEqual(version.returncode, 0)
        self.assertIn("commit: " + build["git_commit"], version.stdout)
        self.assertIn("compiler: " + build["compiler"], version.stdout)
        # The system built on: this machine's os-release (the test runs where it was built).
        self.assertTrue(build["system"].startswith(os_release("PRETTY_NAME")), build["system"])
        self.assertIn("built on: " + build["system"], version.stdout)
        # dmlp's own GEMM by default: its order decides bits, the kernel that ran does not.
        gemm = document["fingerprint"]["blas"]
        self.assertEqual((gemm["library"], gemm["kernel"], gemm["file"]),
                         ("dmlp ordered sgemm", "fma-chain-k-ascending", ""))
        self.assertIn(gemm["isa"], ("avx512", "avx2", "scalar"))
        for line in (out / "rank-0.jsonl").read_text().splitlines():
            record = json.loads(line)
            self.assertEqual(line, json.dumps(record, sort_keys=True))

    def test_allreduce_reduction_passes(self):
        out = self.scratch / "run"
        result = launch(out, 2, REDUCTION="allreduce")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertPass(out)

    def test_config_file_under_the_environment(self):
        config = self.scratch / "job.yaml"
        config.write_text("steps: 2\nwidth: 8\n")
        env = tiny_job_env(self.scratch / "run", 1, DATA_SHARDS=1)
        del env["STEPS"], env["WIDTH"]
        env["STEPS"] = "3"
        result = run([LAUNCH, str(TRAIN), "--config", str(config)], env)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(line_count(self.scratch / "run" / "metrics.jsonl"), 3)
        document = json.loads((self.scratch / "run" / "result.json").read_text())
        self.assertEqual(document["model"]["width"], 8)


class Determinism(JobTestCase):
    def test_same_run_twice_gives_identical_bytes(self):
        first, second = self.scratch / "a", self.scratch / "b"
        self.assertEqual(launch(first, 2).returncode, 0)
        self.assertEqual(launch(second, 2).returncode, 0)
        self.assertSameBytes(first, second, ("metrics.jsonl", "state.safetensors",
                                             "rank-0.jsonl", "rank-1.jsonl"))
        self.assertPass(first, "--against", str(second))

    def test_number_of_processes_does_not_change_a_bit(self):
        runs = {}
        for processes in (1, 2, 4):
            out = self.scratch / f"p{processes}"
            result = launch(out, processes, DATA_SHARDS=4)
            self.assertEqual(result.returncode, 0, result.stderr)
            runs[processes] = out
        self.assertSameBytes(runs[1], runs[2])
        self.assertSameBytes(runs[1], runs[4])

    def test_threads_per_rank_do_not_change_a_bit(self):
        # Big enough that the GEMMs, data generation, fold and Adam really split
        # across threads (trainer/cpu/cpu_parallel.h: 25,477 parameters, 8 samples a shard).
        larger = {"FEATURES": "64", "WIDTH": "128", "LAYERS": "2", "BATCH": "32", "STEPS": "2"}
        runs = {}
        for processes, threads in ((1, 1), (1, 2), (1, 3), (2, 2)):
            out = self.scratch / f"p{processes}-t{threads}"
            result = launch(out, processes, DMLP_CPU_THREADS=str(threads), **larger)
            self.assertEqual(result.returncode, 0, result.stderr)
            runs[processes, threads] = out
        for key in ((1, 2), (1, 3), (2, 2)):
            self.assertSameBytes(runs[1, 1], runs[key])

    def test_digest_threads_do_not_change_a_byte(self):
        # K hashers overtake each other; receipts, checkpoints and the summary
        # must still be written as with one (trainer/output/digest_pipeline.h).
        runs, port = {}, free_port()  # one port: result.json records it
        for threads in (1, 2, 4):
            out = self.scratch / f"k{threads}"
            result = launch(out, 2, DIGEST_THREADS=threads, STEPS=9, CHECKPOINT_EVERY=2,
                            COORDINATOR_PORT=port)
            self.assertEqual(result.returncode, 0, result.stderr)
            runs[threads] = out
        names = ("metrics.jsonl", "rank-0.jsonl", "rank-1.jsonl", "state.safetensors",
                 "checkpoint-00000006.safetensors", "checkpoint-00000008.safetensors")
        for threads in (2, 4):
            self.assertSameBytes(runs[1], runs[threads], names)
            self.assertEqual(
                (runs[1] / "result.json").read_text().replace(str(runs[1]), "OUT"),
                (runs[threads] / "result.json").read_text().replace(str(runs[threads]), "OUT"))
        self.assertPass(runs[4], "--against", str(runs[1]))

    def test_every_gemm_kernel_gives_identical_receipts(self):
        # dmlp's SGEMM follows one order rule (trainer/cpu/ordered_sgemm.h) with
        # every kernel: a whole 2-rank job is byte for byte the same with each
        # forced, and dmlp-verify --against holds them comparable. Shapes off the
        # kernels' tiles; WIDTH=600 puts K past two k-blocks (256), and past
        # BLIS's, so that another order shows in the receipts (BLIS below).
        larger = {"FEATURES": "40", "WIDTH": "600", "LAYERS": "2", "BATCH": "32", "STEPS": "2"}
        kernels = [k for k in ("avx512", "avx2", "scalar") if k != "avx512" or "avx512f" in CPU_FLAGS]
        kernels = [k for k in kernels if k != "avx2" or {"avx2", "fma"} <= CPU_FLAGS]
        runs, port = {}, free_port()  # one port: result.json records it
        for kernel in kernels:
            out = self.scratch / kernel
            result = launch(out, 2, DMLP_CPU_GEMM=kernel, COORDINATOR_PORT=port, **larger)
            self.assertEqual(result.returncode, 0, result.stderr)
            isa = json.loads((out / "result.json").read_text())["fingerprint"]["blas"]["isa"]
            self.assertEqual(isa, kernel)
            runs[kernel] = out
        for kernel in kernels[1:]:
            self.assertSameBytes(runs[kernels[0]], runs[kernel])
            self.assertPass(runs[kernel], "--against", str(runs[kernels[0]]))
        # BLIS adds in another order ("zero, sum the block, add to C" past its
        # k-block): other receipts, and not comparable by the plan's GEMM order.
        out = self.scratch / "blis"
        self.assertEqual(launch(out, 2, DMLP_CPU_GEMM="blis", COORDINATOR_PORT=port, **larger).returncode, 0)
        self.assertNotEqual((out / "state.safetensors").read_bytes(),
                            (runs[kernels[0]] / "state.safetensors").read_bytes())
        against = verify(out, "--against", str(runs[kernels[0]]))
        self.assertIn('plan.gemm_order: "fma-chain-k-ascending" vs ', against.stdout)

    def test_every_transport_gives_identical_receipts(self):
        # DMLP_CPU_TRANSPORT only moves bytes (trainer/cpu/collectives_shm.h):
        # 3 ranks with two shards each (the all-to-all's packed path), through
        # Gloo's TCP and through shared memory, the default (auto) choosing
        # shared memory on one host: the same bytes, comparable runs. With
        # REDUCTION=allreduce the sum is Gloo's under both.
        shape = {"BATCH": "48", "DATA_SHARDS": "6", "STEPS": "3"}
        port = free_port()  # one port: result.json records it
        for reduction in ("ordered", "allreduce"):
            runs = {}
            for transport in ("tcp", "shm", None):
                out = self.scratch / f"{reduction}-{transport or 'auto'}"
                env = dict(shape, REDUCTION=reduction, COORDINATOR_PORT=port)
                if transport:
                    env["DMLP_CPU_TRANSPORT"] = transport
                result = launch(out, 3, **env)
                self.assertEqual(result.returncode, 0, result.stderr)
                fingerprint = json.loads((out / "result.json").read_text())["fingerprint"]
                self.assertEqual(fingerprint["transport"], "tcp" if transport == "tcp" else "shared memory")
                self.assertTrue(fingerprint["collectives"].startswith("gloo "), fingerprint)
                runs[transport] = out
            for transport in ("shm", None):
                self.assertSameBytes(runs["tcp"], runs[transport])
                self.assertPass(runs[transport], "--against", str(runs["tcp"]))

    def test_ranks_agree_with_allreduce_too(self):
        out = self.scratch / "run"
        self.assertEqual(launch(out, 2, REDUCTION="allreduce").returncode, 0)
        self.assertEqual((out / "rank-0.jsonl").read_text().replace('"rank": 0', '"rank": 1'),
                         (out / "rank-1.jsonl").read_text())


class Failures(JobTestCase):
    def test_rank_killed_mid_run_stops_the_job_and_never_passes(self):
        out = self.scratch / "run"
        env = tiny_job_env(out, 2, STEPS=400)
        launcher = self.start([LAUNCH, "--grace", "5", TRAIN], env)
        wait_for(lambda: line_count(out / "rank-1.jsonl") >= 2, 60, "two receipts of rank 1")
        ranks = rank_pids(launcher.pid)
        self.assertEqual(sorted(ranks), [0, 1])
        os.kill(ranks[1], signal.SIGKILL)
        launcher.wait(timeout=60)
        self.assertNotEqual(launcher.returncode, 0)
        for pid in ranks.values():
            wait_for(lambda: not alive(pid), 30, f"rank pid {pid} to end")
        self.assertFalse((out / "result.json").exists())
        result = verify(out)
        self.assertEqual(result.returncode, 3, result.stdout + result.stderr)
        self.assertEqual(result.stdout.strip().splitlines()[-1], "INCOMPLETE")

    def test_frozen_job_longer_than_heartbeat_finishes(self):
        out = self.scratch / "run"
        env = tiny_job_env(out, 2, STEPS=12, HEARTBEAT_TIMEOUT_SECONDS=1)
        launcher = self.start([LAUNCH, TRAIN], env)
        wait_for(lambda: line_count(out / "rank-0.jsonl") >= 1, 60, "the first receipt")
        everyone = [launcher.pid] + list(rank_pids(launcher.pid).values())
        for pid in everyone:
            os.kill(pid, signal.SIGSTOP)
        time.sleep(3)  # three heartbeat timeouts
        for pid in everyone:
            os.kill(pid, signal.SIGCONT)
        launcher.wait(timeout=120)
        self.assertEqual(launcher.returncode, 0, launcher.stderr.read())
        self.assertPass(out)

    def test_rerun_into_a_finished_directory_changes_nothing(self):
        out = self.scratch / "run"
        self.assertEqual(launch(out, 2).returncode, 0)
        before = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in out.iterdir()}
        result = launch(out, 2)
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("dmlp-train: error: OUTPUT_ALREADY_COMPLETE", result.stderr)
        after = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in out.iterdir()}
        self.assertEqual(before, after)

    def test_existing_receipts_are_output_exists(self):
        out = self.scratch / "run"
        out.mkdir()
        (out / "rank-0.jsonl").write_text("keep me\n")
        result = run([TRAIN], tiny_job_env(out, 1, PROCESS_ID=0, DATA_SHARDS=1))
        self.assertEqual(result.returncode, 1)
        self.assertEqual(result.stderr.strip(),
                         f"dmlp-train: error: OUTPUT_EXISTS: {out}/rank-0.jsonl")
        self.assertEqual(sorted(p.name for p in out.iterdir()), ["rank-0.jsonl"])
        self.assertEqual((out / "rank-0.jsonl").read_text(), "keep me\n")

    def test_plan_mismatch_fails_every_rank(self):
        out = self.scratch / "run"
        port = free_port()
        ranks = []
        for rank, rate in ((0, "0.001"), (1, "0.002")):
            env = tiny_job_env(out, 2, PROCESS_ID=rank, LEARNING_RATE=rate, COORDINATOR_PORT=port,
                          HEARTBEAT_TIMEOUT_SECONDS=20)
            ranks.append(self.start([TRAIN], env))
        for process in ranks:
            process.wait(timeout=60)
            stderr = process.stderr.read()
            self.assertNotEqual(process.returncode, 0)
            self.assertIn("error: PLAN_MISMATCH", stderr)
            self.assertIn("learning_rate", stderr)

    def test_port_in_use(self):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as holder:
            holder.bind(("127.0.0.1", 0))
            holder.listen(1)
            port = holder.getsockname()[1]
            env = tiny_job_env(self.scratch / "run", 1, PROCESS_ID=0, DATA_SHARDS=1,
                          COORDINATOR_PORT=port)
            result = run([TRAIN], env)
        self.assertEqual(result.returncode, 1)
        self.assertEqual(result.stderr.strip(),
                         f"dmlp-train: error: COORDINATOR_PORT_IN_USE: 127.0.0.1:{port}")

    def test_configuration_errors_are_exit_2_with_the_code(self):
        env = tiny_job_env(self.scratch / "run", 1, PROCESS_ID=0)
        del env["STEPS"]
        result = run([TRAIN], env)
        self.assertEqual((result.returncode, result.stderr), (2, "dmlp-train: error: ENV_MISSING: STEPS\n"))
        env = tiny_job_env(self.scratch / "run", 2, PROCESS_ID=0, BATCH=15)
        result = run([TRAIN], env)
        self.assertEqual(result.stderr,
                         "dmlp-train: error: ENV_INVALID: BATCH must be divisible by NUM_PROCESSES\n")
        self.assertFalse((self.scratch / "run").exists())
        # Numbers follow one grammar: strtod would take a hex float.
        result = run([TRAIN], tiny_job_env(self.scratch / "run", 1, PROCESS_ID=0, LEARNING_RATE="0x1p-10"))
        self.assertEqual((result.returncode, result.stderr),
                         (2, "dmlp-train: error: ENV_INVALID: LEARNING_RATE='0x1p-10' is not a number\n"))

    def test_collectives_are_refused_on_the_cpu_platform(self):
        result = run([TRAIN], tiny_job_env(self.scratch / "run", 1, PROCESS_ID=0, COLLECTIVES="gloo"))
        self.assertEqual((result.returncode, result.stderr),
                         (2, "dmlp-train: error: ENV_INVALID: COLLECTIVES applies to PLATFORM=cuda "
                             "only (PLATFORM=cpu always uses gloo)\n"))
        self.assertFalse((self.scratch / "run").exists())

    def test_a_bad_or_unrunnable_gemm_choice_is_env_invalid(self):
        result = run([TRAIN], tiny_job_env(self.scratch / "run", 1, PROCESS_ID=0, DMLP_CPU_GEMM="openblas"))
        self.assertEqual((result.returncode, result.stderr),
                         (2, "dmlp-train: error: ENV_INVALID: DMLP_CPU_GEMM='openblas' must be "
                             "auto or avx512 or avx2 or scalar or blis\n"))
        if "avx512f" not in CPU_FLAGS:
            result = run([TRAIN], tiny_job_env(self.scratch / "run", 1, PROCESS_ID=0, DMLP_CPU_GEMM="avx512"))
            self.assertEqual(result.returncode, 2)
            self.assertIn("ENV_INVALID: DMLP_CPU_GEMM=avx512: this CPU cannot run", result.stderr)
        self.assertFalse((self.scratch / "run").exists())

    def test_a_rank_that_cannot_share_memory_is_the_failure_the_launcher_reports(self):
        # Rank 0 alone runs under a file size limit (ulimit -f, which memfds
        # obey) below the shared segment's size, so it cannot make it. Its own
        # COLLECTIVE_ERROR must be the job's first failure; rank 1 waits for it
        # to leave and exit, so that no PEER_LOST ("the coordinator closed the
        # connection") or copy of rank 0's error from rank 1 comes first.
        stand_in = self.scratch / "rank0-small-files.sh"
        stand_in.write_text('#!/bin/sh\n[ "$PROCESS_ID" = 0 ] && ulimit -f 8\nexec "$DMLP_TRAIN"\n')
        stand_in.chmod(0o755)
        env = tiny_job_env(self.scratch / "run", 2, DMLP_CPU_TRANSPORT="shm")
        env["DMLP_TRAIN"] = str(TRAIN)
        result = run([LAUNCH, "--grace", "5", stand_in], env)
        self.assertEqual(result.returncode, 1, result.stderr)
        self.assertIn("dmlp-launch: rank 0 failed first: exited with code 1", result.stderr)
        self.assertRegex(result.stderr, r"\[rank 0\] dmlp-train: error: COLLECTIVE_ERROR: connect: "
                                        r"DMLP_CPU_TRANSPORT=shm: rank 0 cannot share memory: the shared "
                                        r"segment's \d+ bytes exceed RLIMIT_FSIZE \(ulimit -f\) of \d+ bytes "
                                        r"\(rank 0\)\n")
        self.assertNotIn("[rank 1] dmlp-train: error: COLLECTIVE_ERROR", result.stderr)

    def test_a_write_into_the_shared_segment_stops_the_job_instead_of_reaching_a_receipt(self):
        # What a process of the same user can do to a job on the shared
        # memory transport (docs/reliability.md): open rank 0's memfd through
        # /proc, map it and change a float of the reduced vector the
        # optimizers read. The optimizer takes the vector's checksums from
        # the bytes it reads (trainer/cpu/checksummed_passes.h).
        self._write_into_the_segment(REDUCED_VECTOR + 4, r"reduced vector, slice 0")

    def test_a_write_into_a_published_partial_stops_the_job_instead_of_reaching_a_receipt(self):
        # The same into rank 0's first partial, in slice 0, which rank 0's
        # fold reads and takes the checksum of as it reads. A write before
        # the partial's seal is not caught (docs/reliability.md); the first
        # that lands between the seal and the fold is.
        self._write_into_the_segment(PARTIALS + 4, r"rank 0's partials, slice 0")

    # Writes into rank 0's segment at `offset` again and again while a 2-rank
    # job runs; each write lands somewhere in an update, and the first between
    # a slice's checksum and its readers' check stops the job there, naming `slice`.
    def _write_into_the_segment(self, offset, slice):
        out = self.scratch / "run"
        launcher = self.start([LAUNCH, "--grace", "5", TRAIN],
                              tiny_job_env(out, 2, STEPS=100000, DMLP_CPU_TRANSPORT="shm"))
        wait_for(lambda: line_count(out / "rank-1.jsonl") >= 2 or launcher.poll() is not None, 60,
                 "two receipts of rank 1")
        rank0 = rank_pids(launcher.pid)[0]
        memfd = next(fd for fd in Path(f"/proc/{rank0}/fd").iterdir()
                     if "memfd:dmlp-collectives" in os.readlink(fd))
        deadline = time.monotonic() + 120  # without the checks the job would train on, wrongly
        with open(memfd, "r+b") as segment, mmap.mmap(segment.fileno(), 0) as shared:
            while launcher.poll() is None and time.monotonic() < deadline:
                value = struct.unpack_from("<f", shared, offset)[0]
                struct.pack_into("<f", shared, offset, value + 1.0)
        self.assertIsNotNone(launcher.poll(), "the job trained on with a changed shared segment")
        stderr = launcher.stderr.read()
        self.assertEqual(launcher.returncode, 1, stderr)
        self.assertRegex(stderr, r"dmlp-train: error: COLLECTIVE_ERROR: step \d+ microbatch \d: reduce: the "
                                 r"shared segment's " + slice + r" changed after its writer published "
                                 r"it \(checksum [0-9a-f]{16} published, [0-9a-f]{16} read\) \(rank [01]\)")
        self.assertFalse((out / "result.json").exists())

    def test_a_bad_transport_is_env_invalid(self):
        result = run([TRAIN], tiny_job_env(self.scratch / "run", 1, PROCESS_ID=0, DMLP_CPU_TRANSPORT="rdma"))
        self.assertEqual((result.returncode, result.stderr),
                         (2, "dmlp-train: error: ENV_INVALID: DMLP_CPU_TRANSPORT='rdma' must be "
                             "auto or tcp or shm\n"))
        self.assertFalse((self.scratch / "run").exists())

    def test_unavailable_platform_is_a_clear_error_and_leaves_no_receipts(self):
        out = self.scratch / "run"
        result = run([TRAIN], tiny_job_env(out, 1, PROCESS_ID=0, DATA_SHARDS=1, PLATFORM="cuda"))
        self.assertEqual(result.returncode, 1)
        self.assertRegex(result.stderr,
                         r"^dmlp-train: error: (CUDA_UNAVAILABLE|PLATFORM_UNAVAILABLE|DEVICE_LAYOUT_INVALID): ")
        # The plan's memory check asks the device first, before OUT_DIR is even created.
        self.assertFalse(out.exists() and list(out.iterdir()), "OUT_DIR holds files")

    def test_nonfinite_loss_stops_the_job(self):
        out = self.scratch / "run"
        result = launch(out, 1, DATA_SHARDS=1, LEARNING_RATE="1e38", STEPS=6)
        self.assertNotEqual(result.returncode, 0)
        self.assertRegex(result.stderr, r"dmlp-train: error: LOSS_NONFINITE: step=\d+ loss=(nan|inf)")
        self.assertFalse((out / "result.json").exists())


if __name__ == "__main__":
    unittest.main(verbosity=2)
