"""The rows that come first: the build here, or the kit with the machine's
cuBLAS and NCCL; and, where there is no GPU, the rows that say so in the
programs' own words before the run ends.

Standard library only, Python 3.8 or newer, as all of the runner.
"""

import glob
import os
import shutil
import subprocess
import sys
import time

from gpu_check_run import REPO, cpu_count, first_field, last_error, output_of, progress, read_text, run_logged

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
    checks.device_libraries = found
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
                              stderr=subprocess.DEVNULL) if shutil.which("nvidia-smi") else (1, "")
    arch = (capability.splitlines() or [""])[0].replace(" ", "").replace(".", "")
    arch = arch if arch.isdigit() else "native"
    nvcc = os.environ.get("CUDACXX") or shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
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
    nvidia_smi = "lists none" if shutil.which("nvidia-smi") else "not found"
    checks.record("gpu", "FAIL", "no GPU: nvidia-smi " + nvidia_smi)
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
