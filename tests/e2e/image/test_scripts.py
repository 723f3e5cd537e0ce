"""run.sh and tools/main-job.sh, end to end on the CPU platform.

RunSh: the job and its verification through run.sh (with the HTML report
beside the run directory), the environment checks
(exact messages, exit 2), nvidia-smi for PLATFORM=cuda, the programs' lookup,
a failed job's status, and SIGTERM passed on to dmlp-launch.
InstalledLayout: the image's layout (cmake --install, run.sh without sources).
MainJob: the README's first command with DMLP_BIN_DIR (the build is the one
ctest runs from): a machine without a GPU runs the small CPU job; one where
nvidia-smi lists GPUs gets spec.json's environment (checked with stand-in
programs, since no GPU is needed to see what run.sh is given).

Environment: DMLP_BIN_DIR (the programs), DMLP_SOURCE_DIR (the repository),
DMLP_BUILD_DIR and DMLP_CMAKE (for cmake --install).
"""

import fcntl
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from e2e_support import free_port, job_env, run  # noqa: E402

SOURCE = Path(os.environ.get("DMLP_SOURCE_DIR", Path(__file__).resolve().parents[3]))
BIN = Path(os.environ.get("DMLP_BIN_DIR", SOURCE / "build" / "bin")).resolve()
RUN_SH = SOURCE / "run.sh"
MAIN_JOB = SOURCE / "tools" / "main-job.sh"
JOB_NAMES = ("STEPS", "SEED", "BATCH", "MICROBATCHES", "LEARNING_RATE", "OUT_DIR", "PLATFORM",
             "NUM_PROCESSES", "PROCESS_ID", "LOCAL_RANK", "COORDINATOR_PORT", "COORDINATOR_ADDRESS",
             "FEATURES", "WIDTH", "LAYERS", "CLASSES", "HEARTBEAT_TIMEOUT_SECONDS", "DATA_SHARDS",
             "MATMUL_PRECISION", "REDUCTION", "CHECKPOINT_EVERY", "RESUME", "CUDA_VISIBLE_DEVICES")
TINY = {"STEPS": "6", "SEED": "42", "BATCH": "32", "MICROBATCHES": "2", "LEARNING_RATE": "0.001",
        "FEATURES": "16", "WIDTH": "32", "LAYERS": "3", "CLASSES": "10", "PLATFORM": "cpu",
        "NUM_PROCESSES": "2", "DATA_SHARDS": "2", "HEARTBEAT_TIMEOUT_SECONDS": "60"}
HEX64 = re.compile(r"^[0-9a-f]{64}$")


def clean_env(path_first=(), **settings):
    """os.environ without any job variable, plus `settings` and PATH entries in front."""
    path = os.pathsep.join([*map(str, path_first), os.environ.get("PATH", "/usr/bin:/bin")])
    return job_env({"PATH": path, **settings}, drop=JOB_NAMES, drop_prefixes=("NCCL_", "DMLP_"))


def write_script(path, text):
    path.write_text("#!/bin/sh\n" + text)
    path.chmod(0o755)
    return path


def descendants(pid):
    """{pid: start time} of every process below `pid`, from /proc (by pid, never by name)."""
    parents = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(stat.parent.name)] = (int(fields[1]), fields[19])
    found, frontier = {}, [pid]
    while frontier:
        parent = frontier.pop()
        for child, (ppid, started) in parents.items():
            if ppid == parent and child not in found:
                found[child] = started
                frontier.append(child)
    return found


def still_running(procs):
    """Those of `procs` ({pid: start time}) that are the same process, alive (not a zombie)."""
    running = []
    for pid, started in procs.items():
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[19] == started and fields[0] not in ("Z", "X"):
            running.append(pid)
    return running


def kill_all(procs):
    for pid in still_running(procs):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


class ScratchCase(unittest.TestCase):
    def setUp(self):
        self.scratch = Path(tempfile.mkdtemp(prefix="dmlp-image-"))

    def tearDown(self):
        subprocess.run(["rm", "-rf", str(self.scratch)], check=False)

    def tiny_job_env(self, out="run", path_first=(BIN,), **overrides):
        """The TINY job writing into scratch/`out`; an override of None unsets the name."""
        return clean_env(path_first, **{**TINY, "OUT_DIR": self.scratch / out,
                                        "COORDINATOR_PORT": free_port(), **overrides})

    def assert_complete_run(self, out_dir, processes):
        names = sorted(p.name for p in out_dir.iterdir())
        expected = sorted(["metrics.jsonl", "result.json", "state.safetensors"] +
                          [f"rank-{r}.jsonl" for r in range(processes)] +
                          [f"rank-{r}.env.jsonl" for r in range(processes)])
        self.assertEqual(names, expected)
        result = json.loads((out_dir / "result.json").read_text())
        self.assertTrue(result["complete"])
        return result


class RunSh(ScratchCase):
    def test_cpu_job_runs_and_is_verified(self):
        done = run([RUN_SH], self.tiny_job_env())
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(done.stdout.count("METRIC step="), 6)
        self.assertEqual(done.stdout.rstrip().splitlines()[-1], "PASS")
        self.assertIn(f"run.sh: programs: {BIN}", done.stderr)
        self.assertIn("run.sh: job complete and verified", done.stderr)
        self.assertNotIn("nvidia-smi", done.stdout + done.stderr)  # PLATFORM=cpu lists no GPUs
        result = self.assert_complete_run(self.scratch / "run", 2)  # the report is not inside
        self.assertEqual(result["steps"], 6)
        report = self.scratch.resolve() / "run.report.html"
        self.assertIn(f"run.sh: report: {report}\n", done.stderr)
        self.assertIn('<h1 id="verdict">PASS</h1>', report.read_text())

    def test_environment_errors_exit_2_before_anything_runs(self):
        cases = [
            ({"NUM_PROCESSES": None}, "run.sh: error: ENV_MISSING: NUM_PROCESSES"),
            ({"OUT_DIR": None}, "run.sh: error: ENV_MISSING: OUT_DIR"),
            ({"PLATFORM": None}, "run.sh: error: ENV_MISSING: PLATFORM"),
            ({"STEPS": None}, "run.sh: error: ENV_MISSING: STEPS"),
            ({"OUT_DIR": "  "}, "run.sh: error: ENV_EMPTY: OUT_DIR"),
            ({"NUM_PROCESSES": "two"}, "run.sh: error: ENV_INVALID: NUM_PROCESSES='two' is not an integer"),
            ({"NUM_PROCESSES": "-1"}, "run.sh: error: ENV_INVALID: NUM_PROCESSES='-1' is not an integer"),
            ({"NUM_PROCESSES": "0"}, "run.sh: error: ENV_INVALID: NUM_PROCESSES='0' must be between 1 and 65536"),
            ({"NUM_PROCESSES": "65537"},
             "run.sh: error: ENV_INVALID: NUM_PROCESSES='65537' must be between 1 and 65536"),
            ({"NUM_PROCESSES": "99999999999999999999999"},
             "run.sh: error: ENV_INVALID: NUM_PROCESSES='99999999999999999999999' must be between 1 and 65536"),
            ({"PLATFORM": "gpu"}, "run.sh: error: ENV_INVALID: PLATFORM='gpu' must be cuda or cpu"),
        ]
        for overrides, message in cases:
            with self.subTest(overrides=overrides):
                done = run([RUN_SH], self.tiny_job_env(**overrides))
                self.assertEqual(done.returncode, 2, done.stderr)
                self.assertEqual(done.stderr.strip(), message)
                self.assertFalse((self.scratch / "run").exists())

    def test_leading_zeros_are_a_number_as_for_dmlp_train(self):
        done = run([RUN_SH], self.tiny_job_env(NUM_PROCESSES="02"))
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assert_complete_run(self.scratch / "run", 2)

    def test_cuda_lists_gpus_and_stops_when_nvidia_smi_fails(self):
        fakes = self.scratch / "fakes"
        fakes.mkdir()
        write_script(fakes / "nvidia-smi", 'echo "nvidia-smi $*"\nexit 9\n')
        done = run([RUN_SH], self.tiny_job_env(path_first=(fakes, BIN), PLATFORM="cuda",
                                          CUDA_VISIBLE_DEVICES="3"))
        self.assertEqual(done.returncode, 9, done.stderr)
        self.assertEqual(done.stdout.strip(),
                         "nvidia-smi --query-gpu=index,name,uuid,memory.total --format=csv")
        self.assertIn("run.sh: unsetting CUDA_VISIBLE_DEVICES='3'", done.stderr)
        self.assertIn("run.sh: error: NO_GPU: nvidia-smi failed (status 9)", done.stderr)

    def test_programs_without_cuda_are_not_used_for_a_cuda_job(self):
        # A copy of run.sh without a source tree beside it cannot build: the
        # CPU-only programs on PATH must be refused, not run into PLATFORM_UNAVAILABLE.
        fakes = self.scratch / "fakes"
        fakes.mkdir()
        write_script(fakes / "nvidia-smi", "echo 'index, name'\n")
        alone = self.scratch / "alone"
        alone.mkdir()
        (alone / "run.sh").write_bytes(RUN_SH.read_bytes())
        (alone / "run.sh").chmod(0o755)
        if "libcudart" in run(["ldd", BIN / "dmlp-train"], clean_env()).stdout:
            self.skipTest("these programs were built with CUDA: nothing to refuse")
        done = run([alone / "run.sh"], self.tiny_job_env(path_first=(fakes, BIN), PLATFORM="cuda"))
        self.assertEqual(done.returncode, 2, done.stderr)
        self.assertIn("run.sh: error: PROGRAMS_MISSING: no usable dmlp-launch dmlp-train dmlp-verify",
                      done.stderr)

    def test_programs_found_in_build_bin_beside_the_script(self):
        alone = self.scratch / "alone"
        (alone / "build").mkdir(parents=True)
        (alone / "run.sh").write_bytes(RUN_SH.read_bytes())
        (alone / "run.sh").chmod(0o755)
        (alone / "build" / "bin").symlink_to(BIN)
        if "dmlp-launch" in run(["sh", "-c", "command -v dmlp-launch"], self.tiny_job_env(path_first=())).stdout:
            self.skipTest("dmlp-launch is installed on PATH here; PATH comes first")
        done = run([alone / "run.sh"], self.tiny_job_env(path_first=()))
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn(f"run.sh: programs: {alone}/build/bin", done.stderr)

    def test_no_programs_and_no_sources(self):
        alone = self.scratch / "alone"
        alone.mkdir()
        (alone / "run.sh").write_bytes(RUN_SH.read_bytes())
        (alone / "run.sh").chmod(0o755)
        env = self.tiny_job_env(path_first=())
        if "dmlp-launch" in run(["sh", "-c", "command -v dmlp-launch"], env).stdout:
            self.skipTest("dmlp-launch is installed on PATH here")
        done = run([alone / "run.sh"], env)
        self.assertEqual(done.returncode, 2, done.stderr)
        self.assertIn("PROGRAMS_MISSING", done.stderr)

    def test_failed_job_exits_with_its_status_and_is_still_verified(self):
        first = run([RUN_SH], self.tiny_job_env())
        self.assertEqual(first.returncode, 0, first.stderr)
        again = run([RUN_SH], self.tiny_job_env())  # the run directory is complete already
        self.assertEqual(again.returncode, 1, again.stderr)
        self.assertIn("OUTPUT_ALREADY_COMPLETE", again.stdout + again.stderr)
        self.assertEqual(again.stdout.rstrip().splitlines()[-1], "PASS")
        self.assertIn("run.sh: dmlp-launch exited with status 1 (dmlp-verify: 0)", again.stderr)
        report = self.scratch.resolve() / "run.report.html"  # replaced by the second verification
        self.assertIn(f"run.sh: report: {report}\n", again.stderr)
        self.assertEqual([p.name for p in self.scratch.iterdir() if p.name.startswith("run.report.html")],
                         ["run.report.html"])

    def test_configuration_refused_by_dmlp_train(self):
        done = run([RUN_SH], self.tiny_job_env(BATCH="33"))  # not divisible by NUM_PROCESSES
        self.assertEqual(done.returncode, 2, done.stderr)
        self.assertIn("ENV_INVALID: BATCH must be divisible by NUM_PROCESSES", done.stdout + done.stderr)

    def test_sigterm_reaches_the_job_once_and_the_receipts_are_verified(self):
        env = self.tiny_job_env(STEPS="1000000")
        with subprocess.Popen([str(RUN_SH)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              stdin=subprocess.DEVNULL, text=True) as job:
            try:
                deadline = time.monotonic() + 60
                first = job.stdout.readline()  # the first METRIC line: the ranks are training
                self.assertIn("METRIC step=1", first)
                self.assertLess(time.monotonic(), deadline)
                job.send_signal(signal.SIGTERM)
                out, err = job.communicate(timeout=60)
            finally:
                if job.poll() is None:
                    job.kill()
        self.assertEqual(job.returncode, 128 + signal.SIGTERM, err)
        self.assertIn("dmlp-launch: received SIGTERM", err)
        self.assertEqual(err.count("dmlp-launch: received "), 1, err)  # one signal, not two
        self.assertNotIn("second signal", err)
        self.assertEqual(out.rstrip().splitlines()[-1], "INCOMPLETE")
        self.assertIn("run.sh: dmlp-launch exited with status 143 (dmlp-verify: 3)", err)

    def test_sigkill_of_run_sh_ends_the_job_and_leaves_it_resumable(self):
        # Only the first METRIC line is read before the kill: the pipes (this
        # test's, the launcher's) then fill and hold the job back long before
        # its 3000th step, however fast this machine is.
        settings = {"STEPS": "3000", "CHECKPOINT_EVERY": "100"}
        out_dir = self.scratch / "run"
        job_procs = {}
        with subprocess.Popen([str(RUN_SH)], env=self.tiny_job_env(**settings), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True) as job:
            try:
                self.assertIn("METRIC step=1", job.stdout.readline())
                job_procs = descendants(job.pid)  # dmlp-launch, its ranks, its watchdog
                self.assertGreaterEqual(len(job_procs), 3, job_procs)
                job.kill()  # SIGKILL, by pid
                # The launcher shares run.sh's pipes: they close when it has ended.
                _, err = job.communicate(timeout=60)
            finally:
                if job.poll() is None:
                    job.kill()
                kill_all(job_procs)
        self.assertEqual(job.returncode, -signal.SIGKILL)
        deadline = time.monotonic() + 30
        while still_running(job_procs) and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertEqual(still_running(job_procs), [], "the launcher and its ranks are gone")
        self.assertIn(f"dmlp-launch: received SIGTERM (the parent-death signal: pid {job.pid} died)", err)
        lock = out_dir / "dmlp.lock"
        if lock.exists():  # left by a stopped job, it must not be held
            with open(lock) as held:
                fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        verdict = run([BIN / "dmlp-verify", out_dir], clean_env())
        self.assertEqual((verdict.returncode, verdict.stdout.rstrip().splitlines()[-1]), (3, "INCOMPLETE"),
                         verdict.stdout + verdict.stderr)
        resumed = run([RUN_SH], self.tiny_job_env(RESUME="1", **settings))
        self.assertEqual(resumed.returncode, 0, resumed.stderr)
        self.assertEqual(resumed.stdout.rstrip().splitlines()[-1], "PASS")
        whole = run([RUN_SH], self.tiny_job_env(out="whole", **settings))
        self.assertEqual(whole.returncode, 0, whole.stderr)
        against = run([BIN / "dmlp-verify", "--against", self.scratch / "whole", out_dir], clean_env())
        self.assertEqual(against.returncode, 0, against.stdout + against.stderr)
        for name in ("rank-0.jsonl", "rank-1.jsonl", "metrics.jsonl", "state.safetensors"):
            self.assertEqual((out_dir / name).read_bytes(), (self.scratch / "whole" / name).read_bytes(), name)

    def test_a_refused_report_path_costs_the_report_not_the_verdict(self):
        scratch = self.scratch.resolve()
        (scratch / "kept.txt").write_text("someone's notes\n")
        planted = {
            "a stale file": lambda path: path.write_text("someone's notes\n"),
            "a link to a file": lambda path: path.symlink_to(scratch / "kept.txt"),
            "a link to nowhere": lambda path: path.symlink_to(scratch / "nowhere"),
            "a directory": lambda path: path.mkdir(),
        }
        for number, (what, plant) in enumerate(planted.items()):
            with self.subTest(what=what):
                report = scratch / f"run-{number}.report.html"
                plant(report)
                done = run([RUN_SH], self.tiny_job_env(out=f"run-{number}"))
                self.assertEqual(done.returncode, 0, done.stderr)
                self.assertEqual(done.stdout.rstrip().splitlines()[-1], "PASS")
                self.assertIn("run.sh: job complete and verified", done.stderr)
                self.assertRegex(done.stderr, r"dmlp-verify: warning: --html-optional: no report written: "
                                              rf"--html={re.escape(str(report))} "
                                              r"(exists and is not|is a [a-z ]+, not) a report dmlp-verify wrote; "
                                              r"it is never replaced\n")
                self.assertNotIn("USAGE_ERROR", done.stderr)
                self.assertNotIn(f"run.sh: report: {report}\n", done.stderr)
        # Nothing was written through or over what was there.
        self.assertEqual((scratch / "run-0.report.html").read_text(), "someone's notes\n")
        self.assertEqual((scratch / "kept.txt").read_text(), "someone's notes\n")
        self.assertTrue((scratch / "run-1.report.html").is_symlink())
        self.assertFalse((scratch / "nowhere").exists())
        self.assertEqual(list((scratch / "run-3.report.html").iterdir()), [])


class InstalledLayout(ScratchCase):
    """The Docker image's last stage on the CPU: `cmake --install` into a prefix,
    run.sh installed beside it (share/dmlp), no source tree, programs on PATH."""

    def test_installed_programs_run_the_job(self):
        build_dir = os.environ.get("DMLP_BUILD_DIR")
        if not build_dir:
            self.skipTest("DMLP_BUILD_DIR is not set (ctest sets it)")
        prefix = self.scratch / "usr-local"
        cmake = os.environ.get("DMLP_CMAKE", "cmake")
        done = run([cmake, "--install", build_dir, "--prefix", prefix], clean_env())
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        self.assertEqual(sorted(p.name for p in (prefix / "bin").iterdir()),
                         ["dmlp-launch", "dmlp-train", "dmlp-verify"])
        script = prefix / "share" / "dmlp" / "run.sh"  # the Dockerfile's `install -D`
        script.parent.mkdir(parents=True)
        script.write_bytes(RUN_SH.read_bytes())
        script.chmod(0o755)
        done = run([script], self.tiny_job_env(path_first=(prefix / "bin",)), cwd=self.scratch)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn(f"run.sh: programs: {prefix / 'bin'}", done.stderr)
        self.assertEqual(done.stdout.rstrip().splitlines()[-1], "PASS")
        self.assert_complete_run(self.scratch / "run", 2)


class MainJob(ScratchCase):
    def main_job(self, path_first=(), **settings):
        settings = {"DMLP_BIN_DIR": BIN, "OUT_DIR": self.scratch / "main",
                    "COORDINATOR_PORT": free_port(), **settings}
        env = clean_env(path_first, **settings)
        return run(["bash", MAIN_JOB], env, timeout=300, cwd=self.scratch)

    def test_without_a_gpu_runs_the_small_cpu_job(self):
        fakes = self.scratch / "fakes"
        fakes.mkdir()
        write_script(fakes / "nvidia-smi", "echo 'NVIDIA-SMI has failed' >&2\nexit 9\n")
        done = self.main_job(path_first=(fakes,))
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("main-job: PLATFORM=cpu NUM_PROCESSES=2 DATA_SHARDS=2 STEPS=20 BATCH=64 "
                      "MICROBATCHES=2 FEATURES=64 WIDTH=128 LAYERS=3 CLASSES=10", done.stderr)
        out_dir = self.scratch / "main"
        self.assertIn(f"main-job: run directory: {out_dir}\n", done.stdout)
        self.assertIn("main-job: verdict: PASS (run.sh exit status 0)", done.stdout)
        result = self.assert_complete_run(out_dir, 2)
        self.assertEqual((result["steps"], result["plan"]["batch"], result["model"]["width"]),
                         (20, 64, 128))

    def test_environment_wins_and_relative_out_dir_is_the_callers(self):
        done = self.main_job(PLATFORM="cpu", STEPS="3", OUT_DIR="relative")
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("main-job: PLATFORM=cpu NUM_PROCESSES=2 DATA_SHARDS=2 STEPS=3", done.stderr)
        self.assert_complete_run(self.scratch / "relative", 2)

    def test_a_failed_job_is_reported(self):
        done = self.main_job(PLATFORM="cpu", STEPS="3", BATCH="63")  # not divisible by 2
        self.assertEqual(done.returncode, 2, done.stderr)
        self.assertIn("main-job: verdict: ", done.stdout)
        self.assertIn("(run.sh exit status 2)", done.stdout)

    def test_two_started_in_the_same_second_get_two_run_directories(self):
        # A copy of the repository, so the default OUT_DIR (out/ beside the
        # script) lands in the scratch directory; `date` answers one second for both.
        repo = self.scratch / "repo"
        (repo / "tools").mkdir(parents=True)
        for name in ("run.sh", "spec.json", "tools/main-job.sh", "tools/install-deps.sh"):
            (repo / name).write_bytes((SOURCE / name).read_bytes())
            (repo / name).chmod(0o755)
        fakes = self.scratch / "fakes"
        fakes.mkdir()
        write_script(fakes / "date", "echo 20261206T074500Z\n")
        write_script(fakes / "nvidia-smi", "exit 9\n")
        jobs = [subprocess.Popen(["bash", str(repo / "tools" / "main-job.sh")], cwd=self.scratch,
                                 env=clean_env((fakes,), DMLP_BIN_DIR=BIN, STEPS="3", COORDINATOR_PORT=free_port()),
                                 stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                for _ in range(2)]
        outcomes = [(*job.communicate(timeout=300), job.returncode) for job in jobs]
        directories = set()
        for out, err, status in outcomes:
            self.assertEqual(status, 0, out + err)
            self.assertIn("main-job: verdict: PASS (run.sh exit status 0)", out)
            directory = Path(re.search(r"^main-job: run directory: (.*)$", out, re.M).group(1))
            self.assertEqual(directory.parent, repo / "out")
            self.assertTrue(directory.name.startswith("main-job-20261206T074500Z"), directory)
            self.assert_complete_run(directory, 2)
            directories.add(directory)
        self.assertEqual(len(directories), 2, "one run directory each")

    def test_a_run_refused_by_another_jobs_directory_shows_no_verdict(self):
        first = self.main_job(PLATFORM="cpu", STEPS="3")
        self.assertEqual(first.returncode, 0, first.stderr)
        self.assertIn("main-job: verdict: PASS (run.sh exit status 0)", first.stdout)
        # The same OUT_DIR again: the directory holds the first job's complete
        # run, whose PASS is not this (refused) run's verdict.
        again = self.main_job(PLATFORM="cpu", STEPS="3")
        self.assertEqual(again.returncode, 1, again.stderr)
        self.assertIn("OUTPUT_ALREADY_COMPLETE", again.stdout + again.stderr)
        self.assertIn("main-job: verdict: not shown: run.sh failed, and OUT_DIR, which you named, may hold "
                      "another job's run (run.sh exit status 1)", again.stdout)
        self.assertNotIn("main-job: verdict: PASS", again.stdout)

    def test_with_gpus_the_job_gets_the_spec_environment(self):
        # Stand-ins: nvidia-smi lists 3 GPUs, ldd says the programs have CUDA,
        # dmlp-launch prints the environment it was given.
        fakes = self.scratch / "fakes"
        fakes.mkdir()
        write_script(fakes / "nvidia-smi",
                     'case "$1" in --query-gpu=index) printf "0\\n1\\n2\\n" ;; '
                     '*) echo "index, name, uuid, memory.total [MiB]" ;; esac\n')
        write_script(fakes / "ldd", 'echo "libcudart.so.12 => /stand-in/libcudart.so.12"\n')
        write_script(fakes / "dmlp-launch", "env | sort > \"$OUT_DIR.env\"\nmkdir -p \"$OUT_DIR\"\n")
        write_script(fakes / "dmlp-train", "exit 1\n")
        write_script(fakes / "dmlp-verify", "echo PASS\n")
        env = clean_env((fakes,), DMLP_BIN_DIR=fakes, OUT_DIR=self.scratch / "main")
        done = run(["bash", MAIN_JOB], env, cwd=self.scratch)
        self.assertEqual(done.returncode, 0, done.stderr)
        given = dict(line.split("=", 1) for line in
                     (self.scratch / "main.env").read_text().splitlines() if "=" in line)
        spec_env = json.loads((SOURCE / "spec.json").read_text())["image"]["env"]
        for name, value in spec_env.items():
            expected = {"OUT_DIR": str(self.scratch / "main"), "NUM_PROCESSES": "2"}.get(name, value)
            self.assertEqual(given.get(name), expected, name)
        self.assertIn("main-job: 3 GPU(s): NUM_PROCESSES 8 -> 2", done.stderr)
        self.assertIn("index, name, uuid, memory.total", done.stdout)  # run.sh listed the GPUs


if __name__ == "__main__":
    unittest.main()
