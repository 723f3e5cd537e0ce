"""The GPU simulator for real (tools/gpu-sim.sh): built once, then CUDA
programs compiled by CUDA 11.8's nvcc and run on the simulated GPU.

  gpu_sim_e2e.py build         tools/gpu-sim.sh build (the ctest fixture: the
                               simulator once per machine, minutes; dmlp's
                               programs for it, minutes from empty, then
                               incremental)
  gpu_sim_e2e.py fma_bits      fma_check.cu: fma.rn chains and IEEE add, mul,
                               div, sqrt .rn, in float and double, bit for bit
                               against the host
  gpu_sim_e2e.py stream_order  stream_order.cu: memset and synchronize on a
                               non-default stream keep the program's order
  gpu_sim_e2e.py device_api    device_api.cu: the calls that describe a device
                               (PCI bus id, versions, events) answer
  gpu_sim_e2e.py kernels       kernels_check.cu: dmlp's own kernels (trainer/cuda/*.cu)
                               against its CPU code, bit for bit (softmax and its
                               ExpF/LogF included), after the softmax's PTX shows
                               no approximate or contracted instruction
  gpu_sim_e2e.py ordered_sgemm ordered_sgemm_check.cu: trainer/cuda/ordered_sgemm.cu
                               against the CPU's OrderedSgemm, bit for bit, after
                               its PTX shows fma.rn, mul.rn, add.rn alone
  gpu_sim_e2e.py ordered_sgemm_planted
                               the same check on a copy of the kernel whose chains
                               run k descending within a k tile: it must fail
  gpu_sim_e2e.py cli           usage errors and the cache's ownership checks
                               (no build needed)

Exit 77 (SKIP) with the reason where the simulator cannot be built here (no
g++-11, bison, ...: tools/install-deps.sh installs them) and CI is unset; in
CI (CI set) the same is a failure: there it must run.
Environment: DMLP_SOURCE_DIR (the repository), DMLP_GPU_SIM_CACHE (passed on).
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCE = Path(os.environ.get("DMLP_SOURCE_DIR", HERE.parents[2]))
GPU_SIM = SOURCE / "tools" / "gpu-sim.sh"
# What building the simulator needs from the machine (tools/install-deps.sh).
NEEDED_COMMANDS = ["g++-11", "gcc-11", "bison", "flex", "makedepend", "make", "patch", "xz",
                   "apt-get", "dpkg-deb"]
NEEDED_FILES = ["/usr/include/zlib.h"]


def fail(message):
    print(f"FAIL: {message}")
    sys.exit(1)


def skip_or_fail(reason):
    if os.environ.get("CI"):
        fail(f"{reason} (CI is set: the simulator must be built and run here)")
    print(f"SKIP: {reason} (CI unset)")
    sys.exit(77)


def require_build_tools():
    missing = [name for name in NEEDED_COMMANDS if shutil.which(name) is None]
    missing += [path for path in NEEDED_FILES if not Path(path).exists()]
    if missing:
        skip_or_fail(f"cannot build the simulator: missing {', '.join(missing)} "
                     "(tools/install-deps.sh installs them)")
    cache = Path(os.environ.get("DMLP_GPU_SIM_CACHE", "/var/cache/dmlp/gpu-sim"))
    existing = next(parent for parent in [cache, *cache.parents] if parent.exists())
    if not os.access(existing, os.W_OK):
        skip_or_fail(f"cannot write the simulator's cache under {existing} "
                     "(root, or set DMLP_GPU_SIM_CACHE)")


def gpu_sim(*args, **kwargs):
    return subprocess.run([str(GPU_SIM), *args], capture_output=True, text=True, **kwargs)


def expect(result, status, what):
    if result.returncode != status:
        fail(f"{what}: exit {result.returncode}, expected {status}\n"
             f"stdout:\n{result.stdout[-4000:]}\nstderr:\n{result.stderr[-4000:]}")


def case_build():
    require_build_tools()
    result = gpu_sim("build", timeout=3000)
    expect(result, 0, "tools/gpu-sim.sh build")
    print(result.stderr, end="")
    folder = Path(result.stdout.strip().splitlines()[-1])
    programs = ("dmlp-launch", "dmlp-train", "dmlp-verify", "cuda_test")
    missing = [name for name in programs if not os.access(folder / name, os.X_OK)]
    if missing:
        fail(f"the last line, {folder}, is no simulator build of dmlp (no {', '.join(missing)})")
    print(f"PASS: dmlp for the simulator in {folder}")


def compile_and_run(program, scratch, workdir=None, extra_args=(), status=0):
    binary = scratch / program
    result = gpu_sim("nvcc", "-cudart", "shared", "-arch=sm_70", "-O3", "-o", str(binary),
                     str(HERE / f"{program}.cu"), *extra_args, timeout=600)
    expect(result, 0, f"tools/gpu-sim.sh nvcc {program}.cu")
    run_args = ["run", *(["--workdir", str(workdir)] if workdir else []), "--", str(binary)]
    result = gpu_sim(*run_args, timeout=600)
    # The program's own lines; the simulator's (its option table, a few lines a launch) are noise here.
    print("\n".join(line for line in result.stdout.splitlines() if line.startswith(f"{program}: ")))
    expect(result, status, f"{program} on the simulator")
    if status != 0:
        return result
    if f"{program}: RESULT PASS" not in result.stdout:
        fail(f"{program} exited 0 without RESULT PASS")
    return result


# kernels_check.cu with the kernel sources and the CPU references it compares
# against, all compiled by `tools/gpu-sim.sh nvcc` (C++17, g++-11 for the host
# code: the main build's C++20 libraries cannot be linked) with the main
# build's bit-relevant flags (trainer/cuda/CMakeLists.txt, CMakeLists.txt): no
# contraction on the device or the host.
KERNEL_SOURCES = [f"trainer/cuda/{name}.cu" for name in
                  ("bias_relu", "softmax_xent", "bias_grad", "fold", "adam_update", "data_gen",
                   "init_gen")]
CPU_SOURCES = ["trainer/cuda/cuda_check.cc", "common/status.cc", "common/state_layout.cc",
               "trainer/cpu/adam_cpu.cc"] + [f"trainer/math/{name}.cc" for name in
                                             ("adam", "data", "init", "ordered_reduce",
                                              "sample_loops")]


# The softmax's PTX: ExpF/LogF's fma.rn.f64 (the fusions glibc's FMA build
# makes, written out), every other operation IEEE-rounded on its own.
SOFTMAX_KERNEL = "trainer/cuda/softmax_xent.cu"
SOFTMAX_PTX_ALLOWED = {"mul.rn.f64", "add.rn.f64", "sub.rn.f64", "add.rn.f32", "sub.rn.f32",
                       "mul.rn.f32", "div.rn.f32"}

# The other kernels of a GEMM=ordered step: each float operation IEEE-rounded
# on its own (fma.rn where the CPU code calls std::fma), nothing approximate.
IEEE_ROUNDED = {f"{op}.rn.{kind}" for op in ("fma", "mul", "add", "sub", "div") for kind in ("f32", "f64")}
ORDERED_STEP_KERNELS = [f"trainer/cuda/{name}.cu" for name in
                        ("bias_grad", "fold", "adam_update", "data_gen", "init_gen")]


def case_kernels():
    require_build_tools()
    with tempfile.TemporaryDirectory() as scratch:
        check_kernel_ptx(SOFTMAX_KERNEL, Path(scratch), {"fma.rn.f64"}, SOFTMAX_PTX_ALLOWED)
        for kernel in ORDERED_STEP_KERNELS:
            check_kernel_ptx(kernel, Path(scratch), set(), IEEE_ROUNDED)
        sources = [str(SOURCE / path) for path in KERNEL_SOURCES + CPU_SOURCES]
        result = compile_and_run("kernels_check", Path(scratch),
                                 extra_args=["-std=c++17", "--fmad=false",
                                             "-Xcompiler=-ffp-contract=off,-Wall,-Wextra",
                                             f"-I{SOURCE}", f"-I{HERE}", *sources, "-lcrypto"])
        for kernel in ("exp_log", "softmax_xent"):
            if not re.search(rf"^kernels_check: {kernel}: [1-9]\d* elements, 0 mismatches$", result.stdout,
                             re.MULTILINE):
                fail(f"no line saying {kernel}'s elements were compared with 0 mismatches")
    print("PASS")


# ordered_sgemm_check.cu with the kernel (or a copy of it) and the CPU's SGEMM
# it is held to, built with the main build's bit-relevant flags as above
# (OpenMP as dmlp_trainer_cpu has it; the check calls one thread).
SGEMM_CPU_SOURCES = ["trainer/cpu/ordered_sgemm.cc", "trainer/cpu/gemm_epilogue.cc",
                     "trainer/cuda/cuda_check.cc", "common/status.cc"]
SGEMM_KERNEL = "trainer/cuda/ordered_sgemm.cu"
# The kernel's chain loop, marked in the source; the planted copy runs it backwards.
SGEMM_CHAIN_LOOP = ("for (int kk = 0; kk < steps; ++kk) {  "
                    "// CHAIN ORDER: k ascending, one accumulator per element")
SGEMM_CHAIN_LOOP_REVERSED = "for (int kk = steps - 1; kk >= 0; --kk) {"


def run_ordered_sgemm_check(kernel_source, scratch, status):
    sources = [str(kernel_source)] + [str(SOURCE / path) for path in SGEMM_CPU_SOURCES]
    return compile_and_run("ordered_sgemm_check", scratch, status=status,
                           extra_args=["-std=c++17", "--fmad=false",
                                       "-Xcompiler=-ffp-contract=off,-fopenmp,-Wall,-Wextra",
                                       f"-I{SOURCE}", f"-I{HERE}", *sources, "-lgomp"])


# A kernel source's float arithmetic in PTX (fma, mad, mul, add, sub, div on
# f32 and f64) must be the `required` kinds and the `allowed` ones alone, with
# no approximate (ex2.approx, rcp.approx, ...) or flush-to-zero instruction: the
# device rounds each operation as the source names it, as the host does.
def check_kernel_ptx(kernel, scratch, required, allowed):
    ptx = scratch / (Path(kernel).stem + ".ptx")
    result = gpu_sim("nvcc", "-std=c++17", "--fmad=false", "-arch=sm_70", "-O3", "-ptx", f"-I{SOURCE}",
                     "-o", str(ptx), str(SOURCE / kernel), timeout=600)
    expect(result, 0, f"tools/gpu-sim.sh nvcc -ptx {kernel}")
    text = ptx.read_text()
    found = sorted(set(re.findall(r"\b(?:fma|mad|mul|add|sub|div)\.[a-z0-9.]*f(?:32|64)\b", text)))
    if set(required) - set(found) or set(found) - set(required) - set(allowed):
        fail(f"{kernel}'s float arithmetic in PTX is {found}, expected {sorted(required)} "
             f"and at most {sorted(allowed)}")
    if ".approx" in text or ".ftz" in text:
        fail(f"{kernel}'s PTX has an approximate or flush-to-zero instruction")
    print(f"PTX of {kernel}: {', '.join(found)}; no .approx, no .ftz")


# The SGEMM's chains: fma.rn.f32, and IEEE-rounded mul/add in its epilogue.
def check_ordered_sgemm_ptx(scratch):
    check_kernel_ptx(SGEMM_KERNEL, scratch, {"fma.rn.f32"}, {"mul.rn.f32", "add.rn.f32"})


def case_ordered_sgemm():
    require_build_tools()
    with tempfile.TemporaryDirectory() as scratch:
        check_ordered_sgemm_ptx(Path(scratch))
        result = run_ordered_sgemm_check(SOURCE / SGEMM_KERNEL, Path(scratch), 0)
        if not re.search(r"^ordered_sgemm_check: ordered_sgemm: [1-9]\d* elements of C .*, 0 mismatches",
                         result.stdout, re.MULTILINE):
            fail("no line saying the kernel's elements of C were compared with 0 mismatches")
    print("PASS")


def case_ordered_sgemm_planted():
    require_build_tools()
    kernel = (SOURCE / SGEMM_KERNEL).read_text()
    if kernel.count(SGEMM_CHAIN_LOOP) != 1:
        fail(f"{SGEMM_KERNEL} has not exactly one line marked {SGEMM_CHAIN_LOOP!r} to plant the bug in")
    with tempfile.TemporaryDirectory() as scratch:
        planted = Path(scratch) / "ordered_sgemm.cu"
        planted.write_text(kernel.replace(SGEMM_CHAIN_LOOP, SGEMM_CHAIN_LOOP_REVERSED))
        result = run_ordered_sgemm_check(planted, Path(scratch), 1)
        match = re.search(r"^ordered_sgemm_check: ordered_sgemm: .*, (\d+) mismatches", result.stdout,
                          re.MULTILINE)
        if not match or int(match.group(1)) == 0 or "RESULT FAIL" not in result.stdout:
            fail("the check passed a kernel whose chains run k descending")
    print(f"PASS: the planted chain order gives {match.group(1)} mismatches")


def case_fma_bits():
    require_build_tools()
    with tempfile.TemporaryDirectory() as scratch:
        workdir = Path(scratch) / "work"
        result = compile_and_run("fma_check", Path(scratch), workdir)
        if not re.search(r"^fma_check: __fmaf_rn chain:\s+0/4096 mismatches", result.stdout, re.MULTILINE):
            fail("no line saying 0/4096 __fmaf_rn chains differ")
        if not re.search(r"^fma_check: fma.rn.f64 +random triples +0/4096 mismatches", result.stdout, re.MULTILINE):
            fail("no line saying 0/4096 random fma.rn.f64 triples differ")
        # --workdir is kept, with the configuration and the simulator's files in it.
        if not (workdir / "gpgpusim.config").exists():
            fail(f"{workdir} lacks gpgpusim.config after `run --workdir`")
    print("PASS")


def case_stream_order():
    require_build_tools()
    with tempfile.TemporaryDirectory() as scratch:
        compile_and_run("stream_order", Path(scratch))
    print("PASS")


def case_device_api():
    require_build_tools()
    with tempfile.TemporaryDirectory() as scratch:
        compile_and_run("device_api", Path(scratch))
    print("PASS")


def case_cli():
    expect(gpu_sim("--help"), 0, "--help")
    if "tools/gpu-sim.sh build" not in gpu_sim("--help").stdout:
        fail("--help does not describe build")
    for args in ([], ["bogus"], ["build", "extra"]):
        expect(gpu_sim(*args), 2, f"tools/gpu-sim.sh {' '.join(args)}")
    with tempfile.TemporaryDirectory() as scratch:
        cache = Path(scratch) / "cache"
        cache.mkdir()
        cache.chmod(0o777)
        result = gpu_sim("build", env=dict(os.environ, DMLP_GPU_SIM_CACHE=str(cache)))
        expect(result, 2, "build into a world-writable cache")
        if "GPU_SIM_CACHE_UNSAFE" not in result.stderr:
            fail(f"no GPU_SIM_CACHE_UNSAFE for a world-writable cache: {result.stderr}")
        if os.geteuid() == 0:
            cache.chmod(0o755)
            os.chown(cache, 65534, 65534)  # nobody
            result = gpu_sim("build", env=dict(os.environ, DMLP_GPU_SIM_CACHE=str(cache)))
            expect(result, 2, "build into a cache owned by another user")
            if "GPU_SIM_CACHE_UNSAFE" not in result.stderr:
                fail(f"no GPU_SIM_CACHE_UNSAFE for another user's cache: {result.stderr}")
    print("PASS")


CASES = {"build": case_build, "fma_bits": case_fma_bits, "stream_order": case_stream_order,
         "device_api": case_device_api, "kernels": case_kernels, "ordered_sgemm": case_ordered_sgemm,
         "ordered_sgemm_planted": case_ordered_sgemm_planted, "cli": case_cli}

if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in CASES:
        print(f"usage: gpu_sim_e2e.py {{{'|'.join(CASES)}}}", file=sys.stderr)
        sys.exit(2)
    CASES[sys.argv[1]]()
