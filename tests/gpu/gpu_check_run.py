"""What the rows of tests/gpu/run_gpu_checks.py share: the run's settings from
the environment, its table, and how a row starts a job, verifies it and reads
logs.

Standard library only, Python 3.8 or newer, as all of the runner.
"""

import os
import re
import socket
import subprocess
import sys
import tempfile
import time

SCRIPT_DIR = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(SCRIPT_DIR))  # the kit's root in a kit
# Loss tolerances CPU vs CUDA (GEMM=cublas), relative, per step (run_gpu_checks.sh
# says why and how the fp32 figure was measured).
# (every step, step 1), relative, per precision.
TOLERANCE = {"fp32": ("5e-4", "5e-5"), "tf32": ("3e-2", "3e-2")}
PRECISIONS = ("fp32", "tf32")
# The spec's sizes: every CUDA and CPU job of rows 3 to 5.
SPEC_JOB = {"SEED": "42", "BATCH": "4096", "MICROBATCHES": "8", "LEARNING_RATE": "0.001",
            "FEATURES": "512", "WIDTH": "2048", "LAYERS": "3", "CLASSES": "10"}


# CHECK, RESULT, SECONDS (the row's own wall time), DETAIL.
TABLE_ROW = "%-24s %-5s %7s %s"
# The console's last line: "verdict: PASS" when no row FAILed.
VERDICT_PREFIX = "verdict: "


class Finished(Exception):
    """Raised by finish(): the table is written and the run ends with this status."""

    def __init__(self, status):
        super().__init__(status)
        self.status = status


def progress(text):
    """A line of progress on stderr, which tees it into gpu-checks.log."""
    print(text, file=sys.stderr, flush=True)


def read_text(path):
    try:
        with open(path, errors="replace") as stream:
            return stream.read()
    except OSError:
        return ""


def first_field(text, prefix):
    """The rest of the first line that starts with prefix ("" when none), as sed -n 's/^prefix//p' | head -1."""
    for line in text.splitlines():
        if line.startswith(prefix):
            return line[len(prefix):]
    return ""


def output_of(command, **options):
    """(exit status, stdout without its trailing newlines), as the shell's $(...) gives it."""
    result = subprocess.run(command, stdout=subprocess.PIPE, universal_newlines=True, **options)
    return result.returncode, result.stdout.rstrip("\n")


def split_row(line):
    """A row script's `STATUS DETAIL` line as (STATUS, DETAIL); the whole line is both without a space."""
    if " " not in line:
        return line, line
    status, detail = line.split(" ", 1)
    return status, detail


def last_error(path):
    """The program's error line of a log, else its last three lines, on one line."""
    lines = read_text(path).splitlines()
    for line in lines:
        if "error: " in line or "error while loading" in line:
            return line.rstrip(" ")
    return " ".join(lines[-3:]).rstrip(" ")


def steps_per_second(stamped_stdout):
    """(METRIC lines - 1) / (last - first) over a stamped log, as run_reference.sh measures."""
    times = [float(line.split(" ", 1)[0]) for line in read_text(stamped_stdout).splitlines()
             if "METRIC step=" in line]
    if len(times) > 1 and times[-1] > times[0]:
        return "%.3f" % ((len(times) - 1) / (times[-1] - times[0]))
    return "n/a"


def leading_number(text):
    """awk's reading of a string as a number: its numeric prefix, else 0."""
    match = re.match(r"\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?", text)
    return float(match.group(0)) if match else 0.0


class Checks:
    """The run's settings, its table so far and what the rows share."""

    def __init__(self, kit, build):
        self.kit = kit
        self.build = build
        environ = os.environ
        if kit:
            self.steps = environ.get("GPU_CHECK_STEPS", "10")
            self.reference_steps = environ.get("GPU_CHECK_REFERENCE_STEPS", "6")
            self.job_timeout = environ.get("GPU_CHECK_JOB_TIMEOUT", "90")
            self.reference_dir = environ.get("REFERENCE_DIR", os.path.join(kit, "reference"))
        else:
            self.steps = environ.get("GPU_CHECK_STEPS", "20")
            self.reference_steps = environ.get("GPU_CHECK_REFERENCE_STEPS", "10")
            self.job_timeout = environ.get("GPU_CHECK_JOB_TIMEOUT", "300")
            self.reference_dir = environ.get("REFERENCE_DIR",
                                             os.path.join(REPO, "..", "shared", "reference"))
        self.cpu_steps = environ.get("GPU_CHECK_CPU_STEPS", "10")
        self.work = tempfile.mkdtemp(prefix="dmlp-gpu-checks.")
        self.results = environ.get("OUT") or self.work
        os.makedirs(self.results, exist_ok=True)
        self.table = os.path.join(self.results, "gpu-checks-table.txt")
        self.preflight = os.path.join(self.results, "preflight.txt")
        self.device_libraries = []  # "soname: folder" of the device's cuBLAS and NCCL (kit runs)
        self.rows = []
        self.failed = 0
        self.port = None
        self.bin = None
        self.gpu_name = ""
        self.job_steps_per_s = {}
        self.started = time.monotonic()
        self.row_clock = time.monotonic()  # when the row now running (or its last record) began

    def start_row(self):
        self.row_clock = time.monotonic()

    def path(self, name):
        return os.path.join(self.work, name)

    # ---- the table ------------------------------------------------------------
    def write_table(self):
        header = "dmlp GPU checks (%s; %slogs in %s)" % (
            self.gpu_name or "no GPU", "kit %s; " % self.kit if self.kit else "", self.work)
        with open(self.table + ".tmp", "w") as stream:
            stream.write(header + "\n" + TABLE_ROW % ("CHECK", "RESULT", "SECONDS", "DETAIL") + "\n")
            stream.write("".join(row + "\n" for row in self.rows))
        os.replace(self.table + ".tmp", self.table)
        # Every job's logs and receipts, without the state files (113.6 MB each).
        # '*.safetensors*': a half-written state.safetensors.tmp of a job cut off too.
        archive = os.path.join(self.results, "gpu-checks-logs.tar.gz")
        packed = subprocess.run(
            ["tar", "-czf", archive + ".tmp", "-C", self.work, "--exclude=*.safetensors*",
             "--exclude=*.img", "--exclude=gpu-checks-*", "."], stderr=subprocess.DEVNULL)
        if packed.returncode == 0:
            os.replace(archive + ".tmp", archive)

    def record(self, check, status, detail):
        """A row of the table; its seconds are those since the row began or since its previous record."""
        now = time.monotonic()
        seconds, self.row_clock = now - self.row_clock, now
        self.rows.append(TABLE_ROW % (check, status, "%.0f" % seconds, detail))
        if status == "FAIL":
            self.failed = 1
        progress("== %s: %s (%.0f s) %s" % (check, status, seconds, detail))
        self.write_table()

    def finish(self):
        """The table and its verdict, last on stdout: a device call keeps only its output's tail."""
        self.write_table()
        print(flush=True)
        sys.stdout.write(read_text(self.table))
        sys.stdout.write(VERDICT_PREFIX + ("FAIL" if self.failed else "PASS") + "\n")
        sys.stdout.flush()
        raise Finished(self.failed)

    def note(self, line):
        """A line for preflight.txt, after what the machine is: what a row saw (its skipped tests)."""
        with open(self.preflight, "a") as stream:
            stream.write(line + "\n")

    # ---- what the rows share ----------------------------------------------------
    def take_port(self):
        """The next coordinator port: GPU_CHECK_PORT_BASE counting up, else a free one."""
        base = os.environ.get("GPU_CHECK_PORT_BASE", "")
        if base:
            self.port = (self.port if self.port is not None else int(base)) + 1
        else:
            with socket.socket() as probe:
                probe.bind(("127.0.0.1", 0))
                self.port = probe.getsockname()[1]
        return str(self.port)

    def run_job(self, name, platform, precision, job_steps, ranks="1", extra=(), base=None):
        """A job with OUT_DIR work/NAME, its stdout stamped line by line; the launcher's status.
        base: the plan's settings (default the spec's sizes), extra over them."""
        environment = dict(os.environ, STEPS=str(job_steps), PLATFORM=platform,
                           MATMUL_PRECISION=precision, OUT_DIR=self.path(name),
                           COORDINATOR_PORT=self.take_port(), HEARTBEAT_TIMEOUT_SECONDS="120",
                           **(SPEC_JOB if base is None else base))
        environment.update(setting.split("=", 1) for setting in extra)
        command = ["timeout", "-k", "10", self.job_timeout, os.path.join(self.bin, "dmlp-launch"),
                   "--nproc", str(ranks), "--grace", "5"]
        with open(self.path(name + ".stderr"), "w") as errors, \
                open(self.path(name + ".stdout"), "w") as stamped:
            with subprocess.Popen(command, env=environment, stdout=subprocess.PIPE,
                                  stderr=errors, universal_newlines=True, errors="replace") as job:
                for line in job.stdout:
                    stamped.write("%.6f %s" % (time.time(), line if line.endswith("\n") else line + "\n"))
                return job.wait()

    def verify(self, *arguments):
        with open(self.path("verify.log"), "a") as log:
            return subprocess.run([os.path.join(self.bin, "dmlp-verify"), *arguments],
                                  stdout=log, stderr=subprocess.STDOUT).returncode == 0

    def first_difference(self, left, right, with_errors=False):
        """None when the files are equal, else cmp's first line."""
        status, text = output_of(["cmp", left, right],
                                 stderr=subprocess.STDOUT if with_errors else None)
        return None if status == 0 else (text.splitlines() or [""])[0]

    def row_script(self, name, *arguments, **options):
        """Runs tests/gpu/NAME and returns its `STATUS DETAIL` line split in two."""
        _, line = output_of([os.path.join(SCRIPT_DIR, name), *arguments], **options)
        return split_row(line)


def cpu_count():
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def run_logged(command, log, env=None, status=False):
    """Runs command with stdout and stderr into log: its exit status when status, else whether it was 0."""
    with open(log, "w") as stream:
        code = subprocess.run(command, stdout=stream, stderr=subprocess.STDOUT, env=env).returncode
    return code if status else code == 0
