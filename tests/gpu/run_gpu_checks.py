"""The CUDA platform's checks on a machine with a GPU: one function per row of
the table (gpu_check_setup.py, gpu_check_rows.py), run in order by main().
tests/gpu/run_gpu_checks.sh is the entry point and documents the rows, the
usage, the environment and the verdict rules.

Standard library only, Python 3.8 or newer: the kit runs it with whatever
python3 the device has, where nothing can be installed.
"""

import os
import shutil
import subprocess
import sys

from gpu_check_plan import run_rows
from gpu_check_preflight import write_preflight
from gpu_check_run import REPO, Checks, Finished, cpu_count, output_of, progress, read_text
from gpu_check_setup import row_build, row_device_libraries, rows_without_gpu

USAGE = "usage: run_gpu_checks.sh [BUILD_DIR] | --kit DIR"
KIT_USAGE = "usage: run_gpu_checks.sh --kit DIR (a folder made by tests/gpu/make_kit.sh)"


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
    if not shutil.which("nvidia-smi"):
        return ""
    _, names = output_of(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], stderr=subprocess.DEVNULL)
    return (names.splitlines() or [""])[0]


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
    write_preflight(checks)
    if not checks.gpu_name:
        rows_without_gpu(checks)
    run_rows(checks)
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
