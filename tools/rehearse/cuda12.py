"""Part 2, cuda12: the CUDA platform's host sources compiled with -Werror
against CUDA 12.8's and NCCL 2.25.1's headers from PyPI's wheels, linked
against their libraries, and the NCCL version probe run against them; with
this machine's g++ and with g++-13 in the Debian 13 root (--cuda-host is the
step both run).
"""

import glob
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

from rehearsal import REPO, StepFailed, output, say, section, sh
from roots import copy_sources, in_root

# PyPI's CUDA 12.8 and NCCL 2.25.1: what nvidia/cuda:12.8.1-devel-ubuntu24.04 holds.
# cuda-nvcc: the crt/ headers that cuda_runtime_api.h includes ship with the
# compiler (the wheel holds them and ptxas, but no nvcc); without it a machine
# with CUDA in /usr/include silently lends its own crt/ headers.
CUDA12_WHEELS = ("nvidia-cublas-cu12==12.8.4.1", "nvidia-cuda-runtime-cu12==12.8.90",
                 "nvidia-cuda-cccl-cu12==12.8.90", "nvidia-curand-cu12==10.3.9.90",
                 "nvidia-cuda-nvcc-cu12==12.8.93", "nvidia-nccl-cu12==2.25.1")


CUDA_INCLUDE = re.compile(r"#include <(cublas|cuda|cudart|curand|nccl)[^>]*>")


# Sources the build compiles only with -DDMLP_CUDA_VENDOR_LIBRARIES=OFF, in
# place of the ones that call cuBLAS and NCCL (trainer/cuda/CMakeLists.txt).
VENDOR_FREE_ONLY = {"trainer/cuda/vendor_libraries_absent.cc"}


def cuda_host_sources():
    """The host sources of the CUDA platform: .cc files outside tests/ whose
    includes reach a CUDA library header, directly or through the project's headers."""
    files = sorted(path for folder in ("common", "launch", "trainer", "verify", "bench")
                   for path in glob.glob(folder + "/**/*", recursive=True) if path.endswith((".cc", ".h")))
    texts = {}
    for path in files:
        with open(path, errors="replace") as stream:
            texts[path] = stream.read()
    headers = [path for path in files if path.endswith(".h") and CUDA_INCLUDE.search(texts[path])]
    changed = True
    while changed:
        changed = False
        for header in list(headers):
            for path in files:
                if path.endswith(".h") and path not in headers and '#include "%s"' % header in texts[path]:
                    headers.append(path)
                    changed = True
    return [path for path in files if path.endswith(".cc") and (
        CUDA_INCLUDE.search(texts[path]) or any('#include "%s"' % header in texts[path] for header in headers))]


def project_cxx_flags(cxx, folder):
    """The flags that CMake compiles the CUDA library's host sources with
    (Release, as the image, with -Werror), taken from compile_commands.json of a
    configure-only run in folder, so that they cannot drift from CMakeLists.txt.
    The wheels hold no nvcc, so the run is -DDMLP_CUDA=OFF, where the stub stands
    in for the CUDA library and gets the same target flags and includes (CUDA's
    are added by the caller)."""
    with open(folder + ".log", "w") as log:
        configured = subprocess.run(
            ["cmake", "-S", ".", "-B", folder, "-DCMAKE_CXX_COMPILER=" + cxx, "-DCMAKE_CXX_COMPILER_LAUNCHER=",
             "-DCMAKE_BUILD_TYPE=Release", "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON", "-DDMLP_CUDA=OFF",
             "-DDMLP_WERROR=ON", "-DDMLP_BUILD_TESTS=OFF", "-DDMLP_BUILD_BENCH=OFF"],
            stdout=log, stderr=subprocess.STDOUT)
    if configured.returncode != 0:
        with open(folder + ".log") as log:
            sys.stderr.write(log.read())
        raise StepFailed("cmake could not configure " + folder)
    commands = os.path.join(folder, "compile_commands.json")
    with open(commands) as stream:
        for entry in json.load(stream):
            if entry["file"].endswith("/trainer/cuda/backend_cuda_stub.cc"):
                words, flags = shlex.split(entry["command"])[1:], []  # without the compiler
                while words:
                    word = words.pop(0)
                    if word in ("-o", "-c"):
                        words.pop(0)  # the object and the source are the caller's
                    else:
                        flags.append(word)
                return flags
    raise StepFailed("no compile command for trainer/cuda/backend_cuda_stub.cc in " + commands)


def cuda_host(cxx, unpacked):
    """The CUDA platform's host sources compiled with -Werror against the
    wheels' headers, linked into a shared object against their libraries (no
    unresolved cu*/nccl* symbol), and the NCCL version probe run against them."""
    os.chdir(REPO)
    scratch = tempfile.mkdtemp()  # removed however the compile ends
    try:
        return cuda_host_in(cxx, unpacked, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def cuda_host_in(cxx, unpacked, scratch):
    includes, libdirs = [], []
    for part in ("cuda_runtime", "cublas", "curand", "nccl", "cuda_cccl", "cuda_nvcc"):
        includes += ["-isystem", "%s/nvidia/%s/include" % (unpacked, part)]
        if os.path.isdir("%s/nvidia/%s/lib" % (unpacked, part)):
            libdirs.append("%s/nvidia/%s/lib" % (unpacked, part))
    # The wheels ship libX.so.N only: the unversioned names the linker wants.
    os.mkdir(os.path.join(scratch, "lib"))
    for library in ("cublas", "cudart", "nccl"):
        found = sorted(os.path.join(root, name) for folder in libdirs for root, _, names in os.walk(folder)
                       for name in names if name.startswith("lib%s.so." % library))
        if not found:
            raise StepFailed("no lib%s.so.* in the wheels under %s/nvidia" % (library, unpacked))
        os.symlink(found[0], os.path.join(scratch, "lib", "lib%s.so" % library))
    # The project's own flags, -Werror among them, as CMake gives them; the
    # define that trainer/cuda/CMakeLists.txt adds for this library only; -fPIC.
    flags = project_cxx_flags(cxx, os.path.join(scratch, "configure")) + [
        "-fPIC", '-DDMLP_SOURCE_DIR="%s/"' % REPO]
    sources = cuda_host_sources()
    print("cuda12: %s: %d host sources" % (output(cxx, "--version").split("\n")[0], len(sources)))
    objects = []
    for source in sources:
        target = os.path.join(scratch, source.replace("/", "_") + ".o")
        print("  " + source)
        sh(cxx, *flags, *includes, "-c", source, "-o", target)
        # Programs (a main) are compiled, not put into the shared object; nor is
        # what a build without cuBLAS and NCCL links instead of them
        # (trainer/cuda/vendor_libraries_absent.cc, DMLP_CUDA_VENDOR_LIBRARIES=OFF).
        with open(source) as stream:
            if not re.search(r"^int main\(", stream.read(), re.M) and source not in VENDOR_FREE_ONLY:
                objects.append(target)
    # dmlp's own symbols stay undefined in the shared object (its other
    # libraries and the .cu launchers); every cuda*/cublas*/nccl* one must be
    # resolved by the wheels' libraries.
    shared = os.path.join(scratch, "libdmlp_cuda_host.so")
    sh(cxx, "-shared", "-o", shared, *objects, "-L" + os.path.join(scratch, "lib"), "-Wl,--no-as-needed",
       "-lcublas", "-lcudart", "-lnccl")
    path = ":".join(libdirs)
    loader = dict(os.environ, LD_LIBRARY_PATH=path)
    resolved = subprocess.run(["ldd", "-r", shared], env=loader, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, universal_newlines=True).stdout
    unresolved = [line for line in resolved.splitlines()
                  if re.search(r"undefined symbol: (cuda|cublas|nccl|curand)", line)]
    if unresolved:
        print("\n".join(unresolved))
        return False
    for line in output("ldd", shared, env=loader).splitlines():
        if re.search(r"lib(cublas|cudart|nccl)", line):
            print("  links " + line.lstrip())
    probe = os.path.join(scratch, "probe")
    sh(cxx, "-std=c++20", "-Werror", *includes, "trainer/cuda/nccl_version_probe.cc", "-o", probe,
       "-L" + os.path.join(scratch, "lib"), "-lnccl", "-Wl,-rpath," + path)
    header, library, file = (output(probe).split() + ["", "", ""])[:3]
    print("cuda12: NCCL header %s, library %s (%s)" % (header, library, file))
    return header == library


def fetch_wheels(rehearsal):
    wheels = rehearsal.wheels
    os.makedirs(wheels, exist_ok=True)
    for wheel in CUDA12_WHEELS:
        name, version = wheel.split("==")
        pattern = "%s/%s-%s-*.whl" % (wheels, name.replace("-", "_"), version)
        if not glob.glob(pattern):
            sh(sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:", "-d", wheels, wheel)
        marker = "%s/unpacked/.%s-%s" % (wheels, name, version)
        if not os.path.isfile(marker):
            sh(sys.executable, "-m", "zipfile", "-e", *glob.glob(pattern), wheels + "/unpacked")
            open(marker, "w").close()
        print("wheel: %s %s" % (name, version))


def part_cuda12(rehearsal):
    section("CUDA 12.8 and NCCL 2.25.1 headers and libraries (PyPI wheels)")
    rehearsal.timed("wheels (cached in %s)" % rehearsal.wheels, fetch_wheels, rehearsal)
    if not rehearsal.failed:
        rehearsal.timed("host sources with %s" % (shutil.which("g++") or ""), sh,
                        REPO + "/tools/rehearse.sh", "--cuda-host", "g++", rehearsal.wheels + "/unpacked")
    if not rehearsal.failed and os.access(rehearsal.root + "/usr/bin/g++-13", os.X_OK):
        copy_sources(rehearsal, "src/dmlp-cuda12")
        rehearsal.timed("host sources with g++-13 in the Debian 13 root", in_root, rehearsal,
                        "cd /src/dmlp-cuda12 && tools/rehearse.sh --cuda-host g++-13 /wheels", None, True)
    elif not rehearsal.failed:
        say("no Debian 13 root yet: g++-13 skipped (run the trixie part first)")
