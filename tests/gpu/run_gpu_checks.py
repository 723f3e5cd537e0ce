"""The CUDA platform's checks on a machine with a GPU: one function per row of
the table, run in order by main(). tests/gpu/run_gpu_checks.sh is the entry
point and documents the rows, the usage, the environment and the verdict rules.

Standard library only, Python 3.8 or newer: the kit runs it with whatever
python3 the device has, where nothing can be installed.
"""

import glob
import os
import re
import socket
import subprocess
import sys
import tempfile
import time

SCRIPT_DIR = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(SCRIPT_DIR))  # the kit's root in a kit
# Loss tolerances CPU vs CUDA, relative, per step (run_gpu_checks.sh says why).
TOLERANCE = {"fp32": "1e-3", "tf32": "3e-2"}
PRECISIONS = ("fp32", "tf32")
# The spec's sizes: every CUDA and CPU job of rows 3 to 5.
SPEC_JOB = {"SEED": "42", "BATCH": "4096", "MICROBATCHES": "8", "LEARNING_RATE": "0.001",
            "FEATURES": "512", "WIDTH": "2048", "LAYERS": "3", "CLASSES": "10"}
USAGE = "usage: run_gpu_checks.sh [BUILD_DIR] | --kit DIR"
KIT_USAGE = "usage: run_gpu_checks.sh --kit DIR (a folder made by tests/gpu/make_kit.sh)"


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
        self.cpu_steps = environ.get("GPU_CHECK_CPU_STEPS", "3")
        self.work = tempfile.mkdtemp(prefix="dmlp-gpu-checks.")
        self.results = environ.get("OUT") or self.work
        os.makedirs(self.results, exist_ok=True)
        self.table = os.path.join(self.results, "gpu-checks-table.txt")
        self.rows = []
        self.failed = 0
        self.port = None
        self.bin = None
        self.gpu_name = ""
        self.job_steps_per_s = {}

    def path(self, name):
        return os.path.join(self.work, name)

    # ---- the table ------------------------------------------------------------
    def write_table(self):
        header = "dmlp GPU checks (%s; %slogs in %s)" % (
            self.gpu_name or "no GPU", "kit %s; " % self.kit if self.kit else "", self.work)
        with open(self.table + ".tmp", "w") as stream:
            stream.write(header + "\n" + "%-24s %-5s %s\n" % ("CHECK", "RESULT", "DETAIL"))
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
        self.rows.append("%-24s %-5s %s" % (check, status, detail))
        if status == "FAIL":
            self.failed = 1
        progress("== %s: %s %s" % (check, status, detail))
        self.write_table()

    def finish(self):
        self.write_table()
        print(flush=True)
        sys.stdout.write(read_text(self.table))
        sys.stdout.flush()
        raise Finished(self.failed)

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

    def run_job(self, name, platform, precision, job_steps, ranks="1", extra=()):
        """A job with OUT_DIR work/NAME, its stdout stamped line by line; the launcher's status."""
        environment = dict(os.environ, STEPS=str(job_steps), PLATFORM=platform,
                           MATMUL_PRECISION=precision, OUT_DIR=self.path(name),
                           COORDINATOR_PORT=self.take_port(), HEARTBEAT_TIMEOUT_SECONDS="120",
                           **SPEC_JOB)
        environment.update(setting.split("=", 1) for setting in extra)
        command = ["timeout", "-k", "10", self.job_timeout, os.path.join(self.bin, "dmlp-launch"),
                   "--nproc", str(ranks), "--grace", "5"]
        with open(self.path(name + ".stderr"), "w") as errors, \
                open(self.path(name + ".stdout"), "w") as stamped:
            job = subprocess.Popen(command, env=environment, stdout=subprocess.PIPE,
                                   stderr=errors, universal_newlines=True, errors="replace")
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


# ---- 1. build, or the kit and the machine's cuBLAS/NCCL ------------------------
NVIDIA_PACKAGE_LIBS = """
import glob, os
import nvidia
for root in nvidia.__path__:
    for lib in sorted(glob.glob(os.path.join(root, "*", "lib"))):
        print(lib)
"""
LOADED_NCCL_VERSION = """
import ctypes
library = ctypes.CDLL("libnccl.so.2")
code = ctypes.c_int()
library.ncclGetVersion(ctypes.byref(code))
print(f"{code.value // 10000}.{code.value % 10000 // 100}.{code.value % 100}")
"""
DEVICE_LIB_GLOBS = ("/opt/*/.venv/lib/python3*/site-packages/nvidia/*/lib",
                    "/usr/local/lib/python3*/dist-packages/nvidia/*/lib",
                    "/usr/lib/python3/dist-packages/nvidia/*/lib")
DEVICE_LIB_FOLDERS = ("/usr/local/cuda/lib64", "/usr/local/cuda/targets/x86_64-linux/lib",
                      "/usr/local/cuda/lib", "/usr/lib/x86_64-linux-gnu")


def device_lib_dirs():
    """Where a machine keeps cuBLAS and NCCL: DMLP_GPU_LIB_DIRS, then the nvidia-*
    Python packages (the device image: nvidia-cublas, nvidia-nccl-cu13) of python3
    and of the usual site folders, then a CUDA toolkit or the system's."""
    dirs = [d for d in os.environ.get("DMLP_GPU_LIB_DIRS", "").split(":") if d]
    status, listed = output_of([sys.executable, "-c", NVIDIA_PACKAGE_LIBS], stderr=subprocess.DEVNULL)
    if status == 0:
        dirs += listed.splitlines()
    for pattern in DEVICE_LIB_GLOBS:
        dirs += sorted(glob.glob(pattern))
    return dirs + [d for d in DEVICE_LIB_FOLDERS if os.path.exists(d)]


def loaded_nccl_version():
    """"2.28.9": ncclGetVersion of the libnccl.so.2 the loader finds now."""
    status, version = output_of([sys.executable, "-c", LOADED_NCCL_VERSION], stderr=subprocess.DEVNULL)
    return version if status == 0 else "unknown"


def make_kit_executable(kit):
    """A carry may drop the execute bits: restore those of the kit's programs and scripts."""
    paths = (glob.glob(os.path.join(kit, "bin", "*")) + glob.glob(os.path.join(kit, "tests/gpu/*.sh"))
             + glob.glob(os.path.join(kit, "bench/reference/*.sh"))
             + [os.path.join(kit, name) for name in ("criu/criu", "criu/criu-root/bin/criu",
                                                     "criu/criu-root/lib/ld-linux-x86-64.so.2")])
    for path in paths:
        try:
            os.chmod(path, os.stat(path).st_mode | 0o111)
        except OSError:
            pass


def row_device_libraries(checks):
    """The kit's programs with the machine's cuBLAS and NCCL: found, and nothing left unresolved."""
    kit = checks.kit
    make_kit_executable(kit)
    dirs = device_lib_dirs()
    found, missing, path_dirs = [], [], []
    for soname in read_text(os.path.join(kit, "lib", "DEVICE_LIBS")).splitlines():
        if not soname:
            continue
        where = next((d for d in dirs if os.path.exists(os.path.join(d, soname))), None)
        if where is None:
            missing.append(soname)
            continue
        found.append("%s: %s" % (soname, where))
        if where not in path_dirs:
            path_dirs.append(where)
    progress("\n".join("device library " + item for item in found or [""]))
    if missing:
        checks.record("device libraries", "FAIL",
                      "not found: %s (cuBLAS, NCCL); looked in DMLP_GPU_LIB_DIRS, python3's nvidia packages, "
                      "/opt/*/.venv, /usr/local/lib/python3*, /usr/local/cuda, /usr/lib/x86_64-linux-gnu"
                      % " ".join(missing))
        checks.finish()
    inherited = os.environ.get("LD_LIBRARY_PATH", "")
    os.environ["LD_LIBRARY_PATH"] = ":".join(path_dirs) + (":" + inherited if inherited else "")
    unresolved = ""
    for program in sorted(glob.glob(os.path.join(kit, "bin", "*"))):
        _, listing = output_of(["ldd", program], stderr=subprocess.STDOUT)
        for line in listing.splitlines():
            if "not found" in line:
                unresolved += " %s:%s" % (os.path.basename(program), line.split()[0])
    if unresolved:
        checks.record("device libraries", "FAIL", "the loader cannot resolve:%s (LD_LIBRARY_PATH=%s)"
                      % (unresolved, os.environ["LD_LIBRARY_PATH"]))
        checks.finish()
    # The strict NCCL check runs only in jobs that form a communicator; the
    # versions side by side say at once whether those would refuse.
    kit_text = read_text(os.path.join(kit, "KIT.txt"))
    nccl_note = "libnccl %s loaded, kit built with header %s" % (
        loaded_nccl_version(), first_field(kit_text, "nccl header: "))
    progress(nccl_note)
    checks.record("device libraries", "PASS", "%s%s; kit %s" % (
        "".join(item + "; " for item in found), nccl_note, first_field(kit_text, "commit: ")[:12]))
    checks.bin = os.path.join(kit, "bin")


def row_build(checks):
    """Configure and build (Release) for the local GPU's architecture."""
    start = time.monotonic()
    _, capability = output_of(["nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader"],
                              stderr=subprocess.DEVNULL) if which("nvidia-smi") else (1, "")
    arch = (capability.splitlines() or [""])[0].replace(" ", "").replace(".", "")
    arch = arch if arch.isdigit() else "native"
    nvcc = os.environ.get("CUDACXX") or which("nvcc") or "/usr/local/cuda/bin/nvcc"
    configure = ["cmake", "-S", REPO, "-B", checks.build, "-DCMAKE_BUILD_TYPE=Release", "-DDMLP_CUDA=ON",
                 "-DCMAKE_CUDA_COMPILER=" + nvcc, "-DCMAKE_CUDA_ARCHITECTURES=" + arch]
    build = ["cmake", "--build", checks.build, "-j%d" % cpu_count(), "--target", "cuda_test",
             "dmlp-train", "dmlp-launch", "dmlp-verify", "gpu_bench"]
    if run_logged(configure, checks.path("configure.log")) and run_logged(build, checks.path("build.log")):
        checks.record("build", "PASS", "sm_%s, %d s" % (arch, time.monotonic() - start))
    else:
        sys.stderr.flush()
        subprocess.run(["tail", "-n", "30", checks.path("configure.log"), checks.path("build.log")],
                       stdout=sys.stderr)
        checks.record("build", "FAIL", "see %s" % checks.path("build.log"))
        checks.finish()
    checks.bin = os.path.join(checks.build, "bin")


def rows_without_gpu(checks):
    """Without a GPU nothing below can pass; one small CUDA job shows what the
    programs say (a clear error, not a loader's), then the run ends."""
    port = checks.take_port()
    checks.record("gpu", "FAIL", "no GPU: nvidia-smi %s" % ("lists none" if which("nvidia-smi") else "not found"))
    tiny_job = dict(os.environ, STEPS="1", SEED="42", BATCH="8", MICROBATCHES="1", LEARNING_RATE="0.001",
                    FEATURES="4", WIDTH="8", LAYERS="1", CLASSES="2", PLATFORM="cuda",
                    OUT_DIR=checks.path("no-gpu"), COORDINATOR_PORT=port, HEARTBEAT_TIMEOUT_SECONDS="30")
    status = run_logged(["timeout", "-k", "5", "60", os.path.join(checks.bin, "dmlp-launch"), "--nproc", "1",
                         "--grace", "5"], checks.path("no-gpu.out"), env=tiny_job, status=True)
    checks.record("cuda job", "FAIL", "rc=%d: %s" % (status, last_error(checks.path("no-gpu.out"))))
    # The rows that need a GPU say why they did not run, in the programs' own words.
    checks.record("digest threads", "SKIP", "no GPU (gpu_bench --digest-sweep times the GPU step)")
    cuda_freeze = os.path.join(checks.bin, "cuda_freeze")
    if os.access(cuda_freeze, os.X_OK):
        log = checks.path("cuda-freeze-no-gpu.out")
        status = run_logged([cuda_freeze, "state", str(os.getpid())], log, status=True)
        checks.record("freeze cuda", "SKIP", "rc=%d: %s" % (status, last_error(log)))
    else:
        checks.record("freeze cuda", "SKIP", "no cuda_freeze in %s" % checks.bin)
    checks.record("fidelity jax", "SKIP", "no GPU (XLA:GPU and dmlp_draws --platform cuda need one; "
                  "the CPU half: fidelity_row.sh ... cpu)")
    checks.finish()


# ---- 2. GPU unit tests ------------------------------------------------------
def row_unit_tests(checks):
    """cuda_test; the two no-GPU tests skip by design where there is a GPU, every other skip fails."""
    log = checks.path("cuda_test.log")
    status = run_logged(["timeout", "-k", "5", checks.job_timeout, os.path.join(checks.bin, "cuda_test"),
                         "--gtest_filter=-CudaDevice.NoGpu*"], log, status=True)
    text = read_text(log)
    passed = re.search(r"^\[  PASSED  \] (\d*) test", text, re.M)
    skipped = re.search(r"^\[  SKIPPED \] (\d*) test", text, re.M)
    if status == 0 and not (skipped and skipped.group(1)):
        checks.record("unit tests", "PASS", "%s passed" % ((passed and passed.group(1)) or "0"))
    else:
        interesting = [line for line in text.splitlines()
                       if re.search(r"^\[  (FAILED|SKIPPED) \]|Failure|error", line)]
        progress("\n".join(interesting[:20]))
        checks.record("unit tests", "FAIL", "rc=%d, %s skipped; see %s"
                      % (status, (skipped and skipped.group(1)) or "0", log))


# ---- 3. 1-rank jobs ---------------------------------------------------------
def rows_receipts(checks):
    """Each precision's job twice: byte-identical receipts, dmlp-verify PASS."""
    for precision in PRECISIONS:
        ok, detail = True, ""
        names = ["cuda-%s-%s" % (precision, run) for run in "ab"]
        for name in names:
            if checks.run_job(name, "cuda", precision, checks.steps) != 0:
                ok, detail = False, "job %s failed: %s" % (name, last_error(checks.path(name + ".stderr")))
                break
            if not checks.verify(checks.path(name)):
                ok, detail = False, "dmlp-verify %s not PASS" % name
        if ok:
            first, second = (checks.path(name) for name in names)
            rate = checks.job_steps_per_s[precision] = steps_per_second(checks.path(names[0] + ".stdout"))
            difference = checks.first_difference(os.path.join(first, "rank-0.jsonl"),
                                                 os.path.join(second, "rank-0.jsonl"))
            if difference is not None:
                ok, detail = False, "receipts differ: " + difference
            elif not checks.verify(first, "--against", second):
                ok, detail = False, "dmlp-verify --against not PASS"
            else:
                detail = "%s steps x2: receipts byte-identical, dmlp-verify PASS; %s steps/s" % (checks.steps, rate)
        checks.record("receipts " + precision, "PASS" if ok else "FAIL", detail)


def rows_cpu_vs_cuda(checks):
    """The same job for a few steps on PLATFORM=cpu: losses within the tolerance per precision."""
    if checks.run_job("cpu-fp32", "cpu", "fp32", checks.cpu_steps) != 0:
        checks.record("cpu job", "FAIL", last_error(checks.path("cpu-fp32.stderr")))
        return
    if not checks.verify(checks.path("cpu-fp32")):
        checks.record("cpu job", "FAIL", "dmlp-verify cpu-fp32 not PASS")
    for precision in PRECISIONS:
        cuda_receipts = checks.path("cuda-%s-a/rank-0.jsonl" % precision)
        if not os.path.isfile(cuda_receipts):
            checks.record("cpu vs cuda " + precision, "FAIL", "no CUDA receipts")
            continue
        with open(checks.path("compare.log"), "a") as log:
            status, comparison = output_of(
                [sys.executable, os.path.join(SCRIPT_DIR, "compare_losses.py"), cuda_receipts,
                 checks.path("cpu-fp32/rank-0.jsonl"), checks.cpu_steps, TOLERANCE[precision]], stderr=log)
        checks.record("cpu vs cuda " + precision, "PASS" if status == 0 else "FAIL",
                      "%s (tol %s)" % (comparison, TOLERANCE[precision]))


# ---- 4. several ranks on the one GPU ------------------------------------------
def row_ranks_on_one_gpu(checks):
    """NCCL refuses two ranks on one device; COLLECTIVES=gloo stages the slices
    through host memory instead, and with DATA_SHARDS fixed the bytes must not
    depend on the number of ranks. Older programs lack the variable (it is a
    string in the program when it is parsed)."""
    check = "ranks 1/2/4 on 1 GPU"
    with open(os.path.join(checks.bin, "dmlp-train"), "rb") as program:
        if b"COLLECTIVES" not in program.read():
            checks.record(check, "SKIP", "dmlp-train does not know COLLECTIVES (no COLLECTIVES=gloo yet)")
            return
    ok, detail = True, ""
    for ranks in ("1", "2", "4"):
        name = "gloo-" + ranks
        if checks.run_job(name, "cuda", "fp32", checks.steps, ranks, ("COLLECTIVES=gloo", "DATA_SHARDS=4")) != 0:
            ok, detail = False, "job %s failed: %s" % (name, last_error(checks.path(name + ".stderr")))
            break
        if not checks.verify(checks.path(name)):
            ok, detail = False, "dmlp-verify %s not PASS" % name
            break
    if ok:
        for ranks in ("2", "4"):
            for file in ("metrics.jsonl", "state.safetensors"):
                difference = checks.first_difference(checks.path("gloo-1/" + file),
                                                     checks.path("gloo-%s/%s" % (ranks, file)), with_errors=True)
                if difference is not None:
                    ok, detail = False, "%s differs, 1 vs %s ranks: %s" % (file, ranks, difference)
    if ok:
        detail = "%s steps, DATA_SHARDS=4: every run PASS, metrics.jsonl + state.safetensors byte-identical" % checks.steps
    checks.record(check, "PASS" if ok else "FAIL", detail)


# ---- 5. benchmark and the digest's threads -------------------------------------
def rows_speed(checks):
    """gpu_bench: the update against the cuBLAS floor (goal <= 1.3x, never a failure) and the digest's figures."""
    output, errors = checks.path("gpu_bench.out"), checks.path("gpu_bench.err")
    with open(output, "w") as out, open(errors, "w") as err:
        status = subprocess.run(["timeout", "-k", "5", checks.job_timeout, os.path.join(checks.bin, "gpu_bench"),
                                 "--precision", "both"], stdout=out, stderr=err).returncode
    if status != 0:
        checks.record("gpu_bench", "FAIL", last_error(errors))
        return
    text = read_text(output)

    def value(precision, name):
        return first_field(text, "%s.%s=" % (precision, name))

    for precision in PRECISIONS:
        update, floor = value(precision, "update_ms"), value(precision, "floor_update_ms")
        ratio = "%.2f" % (leading_number(update) / leading_number(floor)) if leading_number(floor) else "n/a"
        goal = "PASS" if ratio != "n/a" and float(ratio) <= 1.3 else "MISS"
        checks.record("speed " + precision, goal, "update %s ms = %sx floor %s ms (%s TFLOP/s); GEMMs alone %s ms" % (
            update, ratio, floor, value(precision, "sgemm_8192_tflops"), value(precision, "update_gemms_only_ms")))
    checks.record("digest", "INFO", "image %s GB: copy %s GB/s, sha256 %s GB/s, step +%s%% with the pipelined digest"
                  % (value("fp32", "image_gb"), value("fp32", "snapshot_copy_gb_per_s"),
                     value("fp32", "sha256_gb_per_s"), value("fp32", "digest_overhead_pct")))


def row_digest_threads(checks):
    """Digest throughput against its thread count K, one pipeline and 8 at once
    (the target runs 8 ranks per host), and the GPU step with/without it."""
    status, detail = checks.row_script("digest_row.sh", checks.bin, checks.path("digest_sweep.out"),
                                       checks.job_timeout)
    checks.record("digest threads", status, detail)


# ---- 6. the reference's samples and init, and the reference JAX job -------------
def row_fidelity(checks):
    """dmlp's draws on this GPU must be jax's CPU bits; jax's own GPU bits
    against its CPU's are reported (fidelity_row.sh)."""
    status, detail = checks.row_script("fidelity_row.sh", checks.bin, checks.work, checks.job_timeout, "gpu")
    checks.record("fidelity jax", status, detail)


def rows_versus_jax(checks):
    """The reference JAX job on the same GPU at both precisions; faster than it is the goal."""
    if os.environ.get("GPU_CHECK_SKIP_REFERENCE", "0") == "1":
        checks.record("reference", "SKIP", "GPU_CHECK_SKIP_REFERENCE=1")
        return
    if not os.path.isfile(os.path.join(checks.reference_dir, "train.py")):
        # The comparison with JAX is part of the check: without the job it failed.
        checks.record("reference", "FAIL", "no reference job (train.py) in %s (set REFERENCE_DIR)"
                      % checks.reference_dir)
        return
    for precision in PRECISIONS:
        name = "reference-" + precision
        environment = dict(os.environ, REFERENCE_PYTHON=os.path.join(SCRIPT_DIR, "python_jax_cuda.sh"),
                           FEATURES="512", WIDTH="2048", LAYERS="3", CLASSES="10", BATCH="4096",
                           MICROBATCHES="8", STEPS=checks.reference_steps, NUM_PROCESSES="1",
                           OUT_DIR=checks.path(name), LOG_DIR=checks.path(name + "-logs"),
                           REFERENCE_DIR=checks.reference_dir)
        if precision == "fp32":
            # JAX's GPU default for float32 matmuls is TF32; "highest" is full fp32.
            environment["JAX_DEFAULT_MATMUL_PRECISION"] = "highest"
        log = checks.path(name + ".out")
        command = ["timeout", "-k", "10", checks.job_timeout, "bash",
                   os.path.join(REPO, "bench/reference/run_reference.sh")]
        if not run_logged(command, log, env=environment):
            tail = read_text(log).splitlines()[-2:]
            checks.record("vs JAX " + precision, "FAIL",
                          "reference did not run: " + "".join(line + " " for line in tail))
            continue
        jax = first_field(read_text(log), "reference_steps_per_s=")
        # dmlp's figure is measured the same way (METRIC line times, step 1 excluded).
        dmlp = checks.job_steps_per_s.get(precision) or "n/a"
        if leading_number(dmlp) > 0 and leading_number(jax) > 0:
            speedup = "%.2f" % (leading_number(dmlp) / leading_number(jax))
        else:
            speedup = "n/a"
        checks.record("vs JAX " + precision, "PASS" if leading_number(speedup) > 1 else "MISS",
                      "dmlp %s steps/s, JAX %s steps/s (%sx)" % (dmlp, jax, speedup))


# ---- 7. frozen and restored; last, so a run cut off loses only these --------------
FREEZE_JOBS = (("1 rank", ("1",)), ("2 ranks gloo", ("2", "COLLECTIVES=gloo", "DATA_SHARDS=2")))


def rows_freeze(checks):
    """A 1-rank job and a 2-rank gloo job on the one GPU: CUDA checkpoint, CRIU
    dump of the whole job, down longer than its heartbeat, CRIU restore, CUDA
    restore (tests/gpu/freeze_row.sh). CRIU comes with the kit (make_kit.sh:
    criu/); without a kit, tools/criu.sh bundles one the same way
    (DMLP_CRIU_DIR to reuse one)."""
    if checks.kit:
        criu_dir = os.path.join(checks.kit, "criu")
    else:
        criu_dir = os.environ.get("DMLP_CRIU_DIR") or checks.path("criu")
        helper = os.path.join(REPO, "tools", "criu.sh")
        if not os.access(os.path.join(criu_dir, "criu"), os.X_OK) and os.access(helper, os.X_OK):
            sys.stderr.flush()
            subprocess.run([helper, "--bundle", criu_dir], stdout=sys.stderr)
    for check, (ranks, *settings) in FREEZE_JOBS:
        environment = dict(os.environ, FREEZE_ROW_PORT=checks.take_port(), FREEZE_ROW_TIMEOUT=checks.job_timeout)
        with open(checks.path("freeze.log"), "a") as log:
            status, detail = checks.row_script("freeze_row.sh", checks.bin, criu_dir, checks.path("freeze"),
                                               "cuda-" + ranks, ranks, "cuda", *settings,
                                               env=environment, stderr=log)
        checks.record("freeze " + check, status, detail)


# ---- the run -------------------------------------------------------------------
def which(program):
    for folder in os.environ.get("PATH", "").split(":"):
        candidate = os.path.join(folder or ".", program)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


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


def tee_stderr_into(log):
    """Progress and details go to the console and to the log that comes back:
    this process's stderr and every child's that is not redirected."""
    sys.stderr.flush()
    tee = subprocess.Popen(["tee", "-a", log], stdin=subprocess.PIPE, stdout=os.dup(2))
    os.dup2(tee.stdin.fileno(), 2)
    tee.stdin.close()
    return tee


def usage_error(usage):
    print(usage, file=sys.stderr)
    sys.exit(2)


def parse(arguments):
    """(kit, build) from the command line; an exit status 2 with the usage on a usage error."""
    first = arguments[0] if arguments else ""
    if first == "--kit":
        if len(arguments) != 2 or not os.path.isdir(os.path.join(arguments[1], "bin")):
            usage_error(KIT_USAGE)
        return os.path.realpath(arguments[1]), None
    if first.startswith("-"):
        usage_error(USAGE)
    return "", first or os.path.join(REPO, "build-gpu")


def describe_machine():
    """What the machine had at the start (the device's RAM may start small and grow)."""
    wanted = ("MemTotal", "MemFree", "MemAvailable", "Mlocked", "CommitLimit", "Committed_AS")
    lines = ["nproc: %d" % cpu_count()]
    lines += [line for line in read_text("/proc/meminfo").splitlines() if line.split(":")[0] in wanted]
    progress("\n".join(lines))


def gpu_name():
    if not which("nvidia-smi"):
        return ""
    _, names = output_of(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], stderr=subprocess.DEVNULL)
    return (names.splitlines() or [""])[0]


ROWS_WITH_A_GPU = (row_unit_tests, rows_receipts, rows_cpu_vs_cuda, row_ranks_on_one_gpu, rows_speed,
                   row_digest_threads, row_fidelity, rows_versus_jax, rows_freeze)


def run(checks):
    describe_machine()
    if checks.kit:
        # Every job would pin (K+1) x 113.6 MB of digest buffers with the default K
        # (8 for one rank on 16 cores): an explicit, small K for the kit's jobs; the
        # digest row measures K = 1..8 on its own.
        os.environ["DIGEST_THREADS"] = os.environ.get("DIGEST_THREADS") or "2"
        progress("DIGEST_THREADS=%s for every job" % os.environ["DIGEST_THREADS"])
    checks.gpu_name = gpu_name()
    if checks.kit:
        row_device_libraries(checks)
    else:
        row_build(checks)
    if not checks.gpu_name:
        rows_without_gpu(checks)
    for row in ROWS_WITH_A_GPU:
        row(checks)
    checks.finish()


def main(arguments):
    os.environ["LC_ALL"] = "C"
    kit, build = parse(arguments)
    checks = Checks(kit, build)
    tee = tee_stderr_into(os.path.join(checks.results, "gpu-checks.log"))
    try:
        run(checks)
        status = 0
    except Finished as finished:
        status = finished.status
    sys.stdout.flush()
    sys.stderr.flush()
    os.close(2)
    tee.wait()
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
