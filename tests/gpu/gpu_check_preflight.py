"""preflight.txt under the run's results: what the machine is, written before
the first row, so that a row's figure can be read against it and a call cut
off still tells what it ran on. Only the table and its verdict go to the
console (a device call keeps only its output's last 12,000 characters); this
file and the logs hold the details.

Standard library only, Python 3.8 or newer, as all of the runner.
"""

import os
import shutil
import subprocess

from gpu_check_run import cpu_count, read_text

NVIDIA_SMI_QUERY = ("name,driver_version,compute_cap,compute_mode,persistence_mode,mig.mode.current,"
                    "memory.total")
PYTHON_VERSIONS = """
import importlib
for name in ("jax", "jaxlib", "flax", "optax"):
    try:
        print("%s %s" % (name, importlib.import_module(name).__version__))
    except Exception as error:
        print("%s not importable: %s" % (name, type(error).__name__))
"""
MEMORY_FIELDS = ("MemTotal", "MemAvailable", "Mlocked", "CommitLimit")


def answer(command, seconds=30):
    """What a command printed (stdout and stderr), and its exit status; never raises."""
    if not shutil.which(command[0]) and not os.access(command[0], os.X_OK):
        return "(%s not found)" % command[0]
    try:
        result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                universal_newlines=True, errors="replace", timeout=seconds)
    except (OSError, subprocess.TimeoutExpired) as error:
        return "(%s)" % error
    return "%s[exit %d]" % (result.stdout, result.returncode)


def sections(checks):
    """(title, text) of each part of the file."""
    python = os.environ.get("DMLP_GPU_PYTHON", "python3")
    criu = os.path.join(checks.kit, "criu", "criu") if checks.kit else (shutil.which("criu") or "criu")
    cuda_freeze = os.path.join(checks.bin or "", "cuda_freeze")
    meminfo = [line for line in read_text("/proc/meminfo").splitlines() if line.split(":")[0] in MEMORY_FIELDS]
    return (
        ("nvidia-smi", answer(["nvidia-smi", "--query-gpu=" + NVIDIA_SMI_QUERY, "--format=csv"])),
        ("kernel", answer(["uname", "-srvm"])),
        ("cores", "%d usable (os.sched_getaffinity)" % cpu_count()),
        ("memory", "\n".join(meminfo)),
        ("python packages (%s)" % python, answer([python, "-c", PYTHON_VERSIONS], seconds=60)),
        ("cuBLAS and NCCL found", "\n".join(checks.device_libraries) or "(none: not a kit run)"),
        ("criu check (%s)" % criu, answer([criu, "check"])),
        # The shell that started the runner: a CUDA checkpoint state other than
        # "running" or a refusal means the driver's checkpoint API is there.
        ("CUDA checkpoint state of the shell (pid %d)" % os.getppid(),
         answer([cuda_freeze, "state", str(os.getppid())])),
    )


def write_preflight(checks):
    with open(checks.preflight, "w") as stream:
        for title, text in sections(checks):
            stream.write("## %s\n%s\n\n" % (title, text.rstrip("\n")))
