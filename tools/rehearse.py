"""The rehearsals CI does not run: one function per step of each part (trixie,
cuda12, kit, image), run in order by main(). tools/rehearse.sh is the entry
point and documents the parts, the cache, the environment and the verdict.

Each step prints what it did; a step fails at its first failing command. The
last line is `rehearse: PASS` or `rehearse: FAIL (<the first failed step>)`.
"""

import fcntl
import glob
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
USAGE = "usage: tools/rehearse.sh [--fresh] [trixie] [cuda12] [kit] [image]"
CUDA_HOST_USAGE = ("usage: tools/rehearse.sh --cuda-host CXX UNPACKED (UNPACKED: a folder holding the "
                   "CUDA 12 wheels' nvidia/, as part 2 unpacks them)")
PARTS = ("trixie", "cuda12", "kit", "image")
# PyPI's CUDA 12.8 and NCCL 2.25.1: what nvidia/cuda:12.8.1-devel-ubuntu24.04 holds.
# cuda-nvcc: the crt/ headers that cuda_runtime_api.h includes ship with the
# compiler (the wheel holds them and ptxas, but no nvcc); without it a machine
# with CUDA in /usr/include silently lends its own crt/ headers.
CUDA12_WHEELS = ("nvidia-cublas-cu12==12.8.4.1", "nvidia-cuda-runtime-cu12==12.8.90",
                 "nvidia-cuda-cccl-cu12==12.8.90", "nvidia-curand-cu12==10.3.9.90",
                 "nvidia-cuda-nvcc-cu12==12.8.93", "nvidia-nccl-cu12==2.25.1")
# What the root needs beyond tools/install-deps.sh --build: the image's compiler and ccache.
ROOT_EXTRAS = ("g++-13", "ccache")
# A folder holding only libstdc++.so, pointing at the system's runtime
# libstdc++.so.6: first in g++-13's link search path (LDFLAGS), it replaces
# g++-13's own libstdc++ at link time and nothing else (libgcc stays g++-13's).
SYSTEM_LIBSTDCXX = "/opt/system-libstdc++"
STANDIN_LABEL = "stand-in for nvidia/cuda:12.8.1-devel-ubuntu24.04, made by tools/rehearse.sh"
# The toolkit's libraries the stand-in copies (the devel image's, no cuDNN).
STANDIN_TOOLKIT_PARTS = ("libcudart.so", "libcudart_static.a", "libcudadevrt.a", "libculibos.a", "libcublas.so",
                         "libcublasLt.so", "libcurand.so", "libnvvm.so", "stubs", "cmake")
# run.sh as super runs it, with the CPU job's size of tools/main-job.sh (the
# image's NUM_PROCESSES and DATA_SHARDS stay): there is no GPU here.
IMAGE_CPU_JOB = ("-e", "PLATFORM=cpu", "-e", "STEPS=20", "-e", "BATCH=64", "-e", "MICROBATCHES=2",
                 "-e", "FEATURES=64", "-e", "WIDTH=128")
# Ulimits a sandbox allows.
ULIMITS = ("--ulimit", "nofile=4096:4096", "--ulimit", "nproc=4096:4096")


class StepFailed(Exception):
    """A step's own verdict, with what it prints."""


def say(text):
    print("rehearse: %s" % text, flush=True)


def section(text):
    print("\n== rehearse: %s ==" % text, flush=True)


def sh(*command, **options):
    """Runs a command, its output to ours; raises CalledProcessError when it fails."""
    sys.stdout.flush()
    return subprocess.run(command, check=True, **options)


def output(*command, **options):
    """A command's stdout, its trailing newlines removed; raises when it fails."""
    sys.stdout.flush()
    return subprocess.run(command, check=True, stdout=subprocess.PIPE, universal_newlines=True,
                          **options).stdout.rstrip("\n")


def indented(text, prefix="  "):
    return "\n".join(prefix + line for line in text.split("\n"))


# ---- part 2's compile, also run inside the root: --cuda-host CXX UNPACKED ------
CUDA_INCLUDE = re.compile(r"#include <(cublas|cuda|cudart|curand|nccl)[^>]*>")


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
    # define that trainer/cuda.cmake adds for this library only; -fPIC.
    flags = project_cxx_flags(cxx, os.path.join(scratch, "configure")) + [
        "-fPIC", '-DDMLP_SOURCE_DIR="%s/"' % REPO]
    sources = cuda_host_sources()
    print("cuda12: %s: %d host sources" % (output(cxx, "--version").split("\n")[0], len(sources)))
    objects = []
    for source in sources:
        target = os.path.join(scratch, source.replace("/", "_") + ".o")
        print("  " + source)
        sh(cxx, *flags, *includes, "-c", source, "-o", target)
        # Programs (a main) are compiled, not put into the shared object.
        with open(source) as stream:
            if not re.search(r"^int main\(", stream.read(), re.M):
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


# ---- the rehearsal's settings and its roots ---------------------------------------
class Rehearsal:
    """Where the cache keeps each part's roots, wheels and images, from the environment."""

    def __init__(self):
        environ = os.environ
        self.cache = environ.get("DMLP_REHEARSAL_DIR") or "/var/tmp/dmlp-rehearsal"
        self.minbase = self.cache + "/trixie-minbase"  # debootstrap's root, copied by every part that needs one
        self.root = self.cache + "/trixie-root"
        self.wheels = self.cache + "/wheels"
        self.jobs = environ.get("DMLP_JOBS") or str(len(os.sched_getaffinity(0)))
        self.mirror = environ.get("DMLP_REHEARSAL_MIRROR") or "http://deb.debian.org/debian"
        # Part 4. The names of its images and container; its podman storage, the
        # rehearsal's own (its disk use is the build's, and it clashes with nothing);
        # runc and cgroupfs (crun refuses hybrid cgroups).
        self.standin_root = self.cache + "/standin-root"
        self.cuda_toolkit = environ.get("DMLP_REHEARSAL_CUDA") or "/usr/local/cuda"
        self.name = environ.get("DMLP_REHEARSAL_NAME") or "dmlp-rehearsal"
        self.standin = "localhost/%s-standin:trixie-cuda" % self.name
        self.image = "localhost/%s-image:latest" % self.name
        self.podman = ("podman", "--root", self.cache + "/containers", "--runroot", "/run/%s-containers" % self.name,
                       "--storage-driver", "overlay", "--events-backend", "file", "--runtime", "runc",
                       "--cgroup-manager", "cgroupfs")
        # The Dockerfile part 4 builds. Another (DMLP_REHEARSAL_DOCKERFILE) shows a
        # mistake planted in it failing the rehearsal: planted in the repository's,
        # it would change the build context and so rebuild the build stage.
        self.dockerfile = environ.get("DMLP_REHEARSAL_DOCKERFILE") or REPO + "/Dockerfile"
        self.failed = ""

    def fail(self, step):
        self.failed = self.failed or step
        say("FAILED: " + step)

    def timed(self, name, step, *arguments):
        """Runs a step, says how long it took, records a failure."""
        start = time.monotonic()
        try:
            ok = step(*arguments) is not False
        except (subprocess.CalledProcessError, StepFailed, OSError) as error:
            print(error, file=sys.stderr, flush=True)
            ok = False
        if ok:
            say("%s: ok (%d s)" % (name, time.monotonic() - start))
        else:
            self.fail(name)
            say("%s: %d s" % (name, time.monotonic() - start))


def mounted_under(folder):
    targets = output("findmnt", "-rn", "-o", "TARGET").splitlines()
    return "\n".join(target for target in targets if folder + "/" in target)


def processes_in(folder):
    """Pids whose root directory is folder."""
    pids = []
    for link in glob.glob("/proc/[0-9]*/root"):
        try:
            if os.readlink(link) == folder:
                pids.append(link.split("/")[2])
        except OSError:
            pass
    return " ".join(pids)


def make_root(rehearsal, folder=None):
    """folder (default: the trixie part's root) a Debian 13 root, a copy of
    debootstrap's minimal one, which is made once and kept untouched."""
    folder = folder or rehearsal.root
    if mounted_under(folder):
        raise StepFailed("rehearse: %s has mounts; not touching it" % folder)
    minbase = rehearsal.minbase
    if not os.access(minbase + "/usr/bin/apt-get", os.X_OK):
        if not shutil.which("debootstrap"):
            sh("apt-get", "install", "-y", "-qq", "debootstrap", stdout=subprocess.DEVNULL)
        shutil.rmtree(minbase + ".partial", ignore_errors=True)
        with open(rehearsal.cache + "/debootstrap.log", "w") as log:
            sh("debootstrap", "--variant=minbase", "trixie", minbase + ".partial", rehearsal.mirror,
               stdout=log, stderr=subprocess.STDOUT)
        os.rename(minbase + ".partial", minbase)
    if not os.access(folder + "/usr/bin/apt-get", os.X_OK):
        shutil.rmtree(folder + ".partial", ignore_errors=True)
        sh("cp", "-a", minbase, folder + ".partial")
        os.rename(folder + ".partial", folder)
    shutil.copyfile("/etc/resolv.conf", folder + "/etc/resolv.conf")


# Runs $SCRIPT in $ROOT with /proc, /dev and a /dev/shm (and the wheels, read
# only) mounted, and unmounted again by a trap; in_root() starts it in a mount
# and PID namespace of its own, so nothing it mounts or starts outlives it.
IN_ROOT = r'''
set -euo pipefail
unmount() {
  for target in "$ROOT/wheels" "$ROOT/dev/shm" "$ROOT/dev" "$ROOT/proc"; do
    if mountpoint -q "$target"; then umount "$target"; fi
  done
}
trap unmount EXIT
mount -t proc proc "$ROOT/proc"
mount --bind /dev "$ROOT/dev"
mount -t tmpfs -o size=1g tmpfs "$ROOT/dev/shm"
if [[ "$BIND_WHEELS" == 1 ]]; then
  mkdir -p "$ROOT/wheels"
  mount --bind -o ro "$WHEELS" "$ROOT/wheels"
fi
status=0
chroot "$ROOT" /usr/bin/env -i HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 \
  bash -euo pipefail -c "$SCRIPT" || status=$?
exit "$status"
'''


def in_root(rehearsal, script, folder=None, wheels=False):
    """Runs script with bash in the root (default: the trixie part's)."""
    environment = dict(os.environ, ROOT=folder or rehearsal.root, WHEELS=rehearsal.wheels + "/unpacked",
                       BIND_WHEELS="1" if wheels else "0", SCRIPT=script)
    sh("unshare", "--mount", "--pid", "--fork", "--propagation", "private", "bash", "-c", IN_ROOT,
       env=environment)


def copy_sources(rehearsal, folder):
    """The tree as a docker build context gets it (no .git, no builds: git's
    tracked and unignored files) into folder of the root."""
    target = os.path.join(rehearsal.root, folder)
    shutil.rmtree(target, ignore_errors=True)
    os.makedirs(target)
    listed = subprocess.run(["git", "ls-files", "-z", "-co", "--exclude-standard"], cwd=REPO,
                            stdout=subprocess.PIPE, check=True).stdout
    packer = subprocess.Popen(["tar", "--null", "-T", "-", "--ignore-failed-read", "-cf", "-"], cwd=REPO,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    unpacker = subprocess.Popen(["tar", "-C", target, "-xf", "-"], stdin=packer.stdout)
    packer.stdout.close()
    packer.stdin.write(listed)
    packer.stdin.close()
    packer.wait()
    unpacker.wait()


# ---- part 1: a Debian 13 root, the Dockerfile's build stage with g++-13 ----------
def root_setup(rehearsal):
    in_root(rehearsal, """
    cd /src/dmlp
    tools/install-deps.sh --build
    missing=$(for p in %s; do dpkg-query -W -f='${Status}' $p 2>/dev/null | grep -q 'ok installed' || echo $p; done)
    if [ -n "$missing" ]; then DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null; fi
    mkdir -p %s
    ln -sfn /usr/lib/$(gcc-13 -print-multiarch)/libstdc++.so.6 %s/libstdc++.so"""
            % (" ".join(ROOT_EXTRAS), SYSTEM_LIBSTDCXX, SYSTEM_LIBSTDCXX))


def print_root_versions(rehearsal):
    in_root(rehearsal, """
    echo "compiler: $(g++-13 --version | head -n 1)"
    echo "cmake: $(cmake --version | head -n 1)"
    dpkg-query -W -f='${Package} ${Version}\\n' libgloo-dev libyaml-cpp-dev libcli11-dev \\
      libgtest-dev libblis-openmp-dev nlohmann-json3-dev libssl-dev libstdc++6 python3 | sed 's/^/package: /'
    echo "links against: $(readlink -f %s/libstdc++.so) (the system's runtime libstdc++)\"""" % SYSTEM_LIBSTDCXX)


def image_build_in_root(rehearsal):
    """The Dockerfile's build stage, RUN by RUN, as it is written there."""
    sys.path.insert(0, os.path.join(REPO, "tests", "e2e", "image"))
    from image_agreement import stage_runs
    with open(os.path.join(REPO, "Dockerfile")) as dockerfile:
        runs = stage_runs(dockerfile.read(), "build")
    if not runs:
        raise StepFailed('no RUN lines in the Dockerfile stage "build"')
    lines = "\n".join("echo %s; /bin/sh -c %s" % (shlex.quote("+ RUN " + run), shlex.quote(run)) for run in runs)
    in_root(rehearsal, """
    export CC=gcc-13 CXX=g++-13 DMLP_JOBS=%s
    export DMLP_IMAGE_CMAKE_ARGS='-DDMLP_CUDA=OFF -DDMLP_WERROR=ON'
    export LDFLAGS=-L%s  # CMake's initial linker flags: executables and shared objects
    export CMAKE_CXX_COMPILER_LAUNCHER=ccache CMAKE_C_COMPILER_LAUNCHER=ccache CCACHE_DIR=/var/cache/dmlp-ccache
    cd /src/dmlp  # the Dockerfile's WORKDIR
    %s""" % (rehearsal.jobs, SYSTEM_LIBSTDCXX, lines))


def part_trixie(rehearsal):
    section("Debian 13 root, the Dockerfile's build stage with g++-13")
    rehearsal.timed("root (debootstrap, cached in %s)" % rehearsal.root, make_root, rehearsal)
    if not rehearsal.failed:
        copy_sources(rehearsal, "src/dmlp")
        rehearsal.timed("packages (tools/install-deps.sh --build) and g++-13", root_setup, rehearsal)
        try:
            print_root_versions(rehearsal)
        except subprocess.CalledProcessError:
            pass
    if not rehearsal.failed:
        rehearsal.timed("image build stage (Dockerfile RUN lines)", image_build_in_root, rehearsal)


# ---- part 2: CUDA 12.8 and NCCL 2.25.1 from PyPI's wheels ------------------------
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


# ---- part 3: the GPU kit in a bare Debian 12 root ------------------------------------
def part_kit(rehearsal):
    section("the GPU kit in a bare Debian 12 root")
    kit = rehearsal.cache + "/gpu-kit"
    rehearsal.timed("kit (tests/gpu/make_kit.sh %s)" % kit, sh, REPO + "/tests/gpu/make_kit.sh", kit)
    if not rehearsal.failed:
        rehearsal.timed("kit in a bare root (tests/gpu/rehearse_kit.sh)", sh, REPO + "/tests/gpu/rehearse_kit.sh", kit)


# ---- part 4: the image, built by podman on a stand-in base, run in a container ----
def cuda_toolkit_version(rehearsal):
    """"13.0.88": the release nvcc names."""
    text = output(rehearsal.cuda_toolkit + "/bin/nvcc", "--version")
    match = re.search(r"release [0-9.]*, V([0-9.]*)", text)
    return match.group(1) if match else ""


def standin_setup(rehearsal):
    in_root(rehearsal, """
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends g++-13 ca-certificates >/dev/null
    # gcc and g++ are GCC 13 even after the Dockerfile installs Debian's g++
    # (GCC 14): its /usr/bin/gcc and /usr/bin/g++ go to *.debian; cc and c++
    # follow gcc and g++.
    for tool in gcc g++; do
      dpkg-divert --local --rename --divert /usr/bin/$tool.debian --add /usr/bin/$tool >/dev/null
      ln -sfn $tool-13 /usr/bin/$tool
    done
    # g++-13 links against the system's libstdc++ (GCC 14's), as the trixie
    # part does: Debian 13's Gloo and GoogleTest need it.
    multiarch=$(gcc-13 -print-multiarch)
    dpkg-divert --local --rename --divert /usr/lib/gcc/$multiarch/13/libstdc++.so.debian \\
      --add /usr/lib/gcc/$multiarch/13/libstdc++.so >/dev/null
    ln -sfn /usr/lib/$multiarch/libstdc++.so.6 /usr/lib/gcc/$multiarch/13/libstdc++.so
    rm -rf /var/lib/apt/lists/*
    # The label: os-release(5)'s VARIANT, which the build identity records.
    cp --remove-destination /usr/lib/os-release /etc/os-release
    printf '%%s\\n' 'VARIANT="%s"' VARIANT_ID=dmlp-stand-in >>/etc/os-release""" % STANDIN_LABEL,
            folder=rehearsal.standin_root)


def standin_cuda(rehearsal):
    """The stand-in's CUDA toolkit: this machine's, laid out as NVIDIA's images lay it out."""
    source = os.path.realpath(rehearsal.cuda_toolkit)
    version = cuda_toolkit_version(rehearsal)
    release = version.rsplit(".", 1)[0]
    root = rehearsal.standin_root
    folder = "%s/usr/local/cuda-%s" % (root, release)
    targets = folder + "/targets/x86_64-linux"
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(targets + "/include")
    os.makedirs(targets + "/lib")
    sh("cp", "-a", source + "/bin", source + "/nvvm", folder + "/")
    # cuDNN is no part of the devel image; NCCL's headers are libnccl-dev's.
    sh("bash", "-c", 'cd "$1/include" && tar --exclude="./cudnn*" --exclude="./nccl*" -cf - . | tar -C "$2" -xf -',
       "-", source, targets + "/include")
    libraries = sorted(name for name in os.listdir(source + "/lib")
                       if name.startswith(STANDIN_TOOLKIT_PARTS))
    packer = subprocess.Popen(["tar", "-cf", "-", *libraries], cwd=source + "/lib", stdout=subprocess.PIPE)
    sh("tar", "-C", targets + "/lib", "-xf", "-", stdin=packer.stdout)
    packer.stdout.close()
    if packer.wait() != 0:
        raise StepFailed("could not copy the toolkit's libraries from %s/lib" % source)
    os.symlink("targets/x86_64-linux/include", folder + "/include")
    os.symlink("targets/x86_64-linux/lib", folder + "/lib64")
    sh("ln", "-sfn", "cuda-" + release, root + "/usr/local/cuda")
    sh("cp", "-a", *glob.glob(source + "/include/nccl*"), root + "/usr/include/")
    nccl = sorted(glob.glob(source + "/lib/libnccl.so*"))
    sh("cp", "-a", *nccl, root + "/usr/lib/x86_64-linux-gnu/")
    with open("%s/etc/ld.so.conf.d/988_cuda-%s.conf" % (root, release), "w") as conf:
        conf.write("/usr/local/cuda/targets/x86_64-linux/lib\n")
    in_root(rehearsal, "ldconfig", folder=root)
    size = output("du", "-sh", folder).split("\t")[0]
    print("stand-in: CUDA %s from %s (%s), NCCL %s" % (
        version, source, size, " ".join(name for name in nccl if re.search(r"libnccl\.so\.", name))))


def standin_image(rehearsal):
    """The stand-in image, made once and kept in the rehearsal's podman storage."""
    podman = rehearsal.podman
    if subprocess.run([*podman, "image", "exists", rehearsal.standin]).returncode == 0:
        print("stand-in: %s (cached; --fresh makes it again)" % rehearsal.standin)
    else:
        make_root(rehearsal, rehearsal.standin_root)
        standin_setup(rehearsal)
        standin_cuda(rehearsal)
        version = cuda_toolkit_version(rehearsal)
        # The ENV of NVIDIA's devel images, with this toolkit's version.
        changes = ["ENV PATH=/usr/local/nvidia/bin:/usr/local/cuda/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:"
                   "/usr/bin:/sbin:/bin", "ENV LD_LIBRARY_PATH=/usr/local/nvidia/lib:/usr/local/nvidia/lib64",
                   "ENV LIBRARY_PATH=/usr/local/cuda/lib64/stubs", "ENV CUDA_VERSION=" + version,
                   "ENV NVIDIA_VISIBLE_DEVICES=all", "ENV NVIDIA_DRIVER_CAPABILITIES=compute,utility",
                   'LABEL dmlp.stand-in="%s"' % STANDIN_LABEL]
        packer = subprocess.Popen(["tar", "-C", rehearsal.standin_root, "--numeric-owner", "--exclude=./proc/*",
                                   "--exclude=./sys/*", "--exclude=./dev/*", "-cf", "-", "."], stdout=subprocess.PIPE)
        sh(*podman, "import", *[word for change in changes for word in ("--change", change)],
           "--message", STANDIN_LABEL, "-", rehearsal.standin, stdin=packer.stdout, stdout=subprocess.DEVNULL)
        packer.stdout.close()
        if packer.wait() != 0:
            raise StepFailed("could not pack " + rehearsal.standin_root)
        shutil.rmtree(rehearsal.standin_root)  # the image holds it
    sh(*podman, "run", "--rm", *ULIMITS, "--network", "none", rehearsal.standin, "bash", "-c", """
    . /etc/os-release; echo "stand-in: $PRETTY_NAME ($VARIANT)"
    echo "stand-in: $(g++ --version | head -n 1); nvcc $(nvcc --version | grep -o "release .*")"
    echo "stand-in: NCCL $(sed -n "s/^#define NCCL_\\(MAJOR\\|MINOR\\|PATCH\\) *\\([0-9]*\\)/\\2/p" /usr/include/nccl.h | paste -sd.)\"""")
    print("stand-in: %s image" % image_size(rehearsal, rehearsal.standin))


def image_size(rehearsal, image):
    size = output(*rehearsal.podman, "image", "inspect", "--format", "{{.Size}}", image)
    return output("numfmt", "--to=iec", size)


def git_commit():
    return output("git", "-C", REPO, "rev-parse", "HEAD")


def image_build(rehearsal):
    """The unchanged Dockerfile, every stage, on the stand-in; `podman build` is
    `docker build` here (docs/developing.md "Docker"); the build stage runs the test suite."""
    dirty = "true" if output("git", "-C", REPO, "status", "--porcelain") else "false"
    common = [*rehearsal.podman, "build", "--isolation", "chroot", *ULIMITS, "--build-arg",
              "BASE_IMAGE=" + rehearsal.standin]
    log_path = rehearsal.cache + "/image-build.log"
    start = time.monotonic()
    sys.stdout.flush()
    builder = subprocess.Popen(common + ["--build-arg", "DMLP_GIT_COMMIT=" + git_commit(), "--build-arg",
                                         "DMLP_GIT_DIRTY=" + dirty, "-t", rehearsal.image, "-f",
                                         rehearsal.dockerfile, REPO],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                               errors="replace")
    # Each line with the seconds since the step began.
    with open(log_path, "w") as log:
        for line in builder.stdout:
            stamped = "%5d| %s" % (time.monotonic() - start, line.rstrip("\n"))
            print(stamped)
            log.write(stamped + "\n")
    status = builder.wait()
    print("podman build: the seconds each step began at (a cached step takes none):")
    with open(log_path) as log:
        for line in log:
            if re.match(r"^ *[0-9]+\| (\[[0-9]+/[0-9]+\] )?STEP ", line):
                print("  " + line.rstrip("\n")[:120])
    if status != 0:
        raise StepFailed("podman build exited with %d" % status)
    # The base stage alone (its layers are cached): what the final stage adds to it.
    sh(*common, "--target", "base", "-t", rehearsal.image + "-base", "-f", rehearsal.dockerfile, REPO,
       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


STRAY = re.compile(r"^\./(usr(/local(/(bin|share)(/dmlp)?)?)?|workspace)$|^\./usr/local/bin/dmlp-(launch|train|verify)$"
                   r"|^\./usr/local/share/dmlp/run\.sh$")
WANTED = ("./usr/local/bin/dmlp-launch", "./usr/local/bin/dmlp-train", "./usr/local/bin/dmlp-verify",
          "./usr/local/share/dmlp/run.sh")


def image_contents(rehearsal):
    """Size, the final stage's layers, and what it adds to the base stage: the
    installed programs and run.sh only, nothing of the build tree."""
    podman, image, base = rehearsal.podman, rehearsal.image, rehearsal.image + "-base"
    print("image: %s, stand-in %s" % (image_size(rehearsal, image), image_size(rehearsal, rehearsal.standin)))
    layers = output(*podman, "history", "--format", "{{.Size}}|{{.CreatedBy}}", image).split("\n")
    base_layers = len(output(*podman, "history", "--format", "x", base).split("\n"))
    print("final stage (above the base stage's %d):" % base_layers)
    for layer in layers[:len(layers) - base_layers]:
        print("  layer " + layer[:150])
    base_dir = output(*podman, "image", "mount", base)
    try:
        image_dir = output(*podman, "image", "mount", image)
    except subprocess.CalledProcessError:
        subprocess.run([*podman, "image", "unmount", base], stdout=subprocess.DEVNULL)
        raise
    try:
        return final_stage_adds_only_the_programs(base_dir, image_dir)
    finally:
        subprocess.run([*podman, "image", "unmount", image, base], stdout=subprocess.DEVNULL)


def final_stage_adds_only_the_programs(base_dir, image_dir):
    base_paths = set(output("find", ".", cwd=base_dir).split("\n"))
    added = sorted(set(output("find", ".", cwd=image_dir).split("\n")) - base_paths)
    print("final stage adds %d paths:" % len(added))
    print(indented("\n".join(added)))
    ok = True
    stray = [path for path in added if not STRAY.match(path)]
    if stray:
        print("image: the final stage adds more than the programs: " + "\n".join(stray))
        ok = False
    for wanted in WANTED:
        if wanted not in added:
            print("image: the final stage lacks " + wanted)
            ok = False
    # Objects anywhere but the toolchain's (/usr/lib/gcc's crt*.o).
    found = subprocess.run(["find", ".", "-xdev", "(", "-path", "./src", "-o", "-path", "./opt/dmlp", "-o", "-name",
                            "CMakeCache.txt", "-o", "-name", "CMakeFiles", "-o", "-name", "build.ninja", "-o",
                            "-name", "CTestTestfile.cmake", "-o", "(", "-name", "*.o", "-not", "-path",
                            "./usr/lib/*", ")", ")", "-print"], cwd=image_dir, stdout=subprocess.PIPE,
                           universal_newlines=True).stdout.splitlines()[:10]
    if found:
        print("image: build tree in the final image: " + "\n".join(found))
        ok = False
    if ok:
        print("image: nothing of the build tree (/src, /opt/dmlp, CMake files, objects)")
    return ok


def image_version(rehearsal):
    """`dmlp-train --version` in the image names the commit passed in and the stand-in."""
    commit = git_commit()
    text = output(*rehearsal.podman, "run", "--rm", *ULIMITS, "--network", "none", rehearsal.image,
                  "dmlp-train", "--version")
    print(indented(text))
    if not re.search(r"^commit: %s.*$" % commit, text, re.M):
        raise StepFailed("image: --version does not name commit " + commit)
    if not re.search(r"^built on: .*stand-in", text, re.M):
        raise StepFailed("image: --version does not say the stand-in")


def image_run(rehearsal):
    """run.sh as super runs the image: CMD, OUT_DIR on a volume, the image id."""
    out = rehearsal.cache + "/image-out"
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    image_id = output(*rehearsal.podman, "image", "inspect", "--format", "{{.Id}}", rehearsal.image)
    sh("timeout", "1200", *rehearsal.podman, "run", "--rm", "--name", rehearsal.name + "-run", "--network", "none",
       *ULIMITS, "-v", out + ":/workspace/out", "-e", "OUT_DIR=/workspace/out/run-1", "-e",
       "DMLP_IMAGE_ID=sha256:" + image_id, *IMAGE_CPU_JOB, rehearsal.image)


def image_verify_outside(rehearsal):
    """dmlp-verify of this machine, outside the container (DMLP_REHEARSAL_VERIFY,
    or built here with ccache where it is installed)."""
    verify = os.environ.get("DMLP_REHEARSAL_VERIFY", "")
    if not verify:
        launcher = []
        if shutil.which("ccache"):
            launcher = ["-DCMAKE_CXX_COMPILER_LAUNCHER=ccache", "-DCMAKE_C_COMPILER_LAUNCHER=ccache"]
        build = rehearsal.cache + "/host-build"
        with open(rehearsal.cache + "/host-build.log", "w") as log:
            built = subprocess.run(["cmake", "-S", REPO, "-B", build, "-DDMLP_CUDA=OFF", "-DDMLP_BUILD_TESTS=OFF",
                                    "-DDMLP_BUILD_BENCH=OFF", *launcher], stdout=log, stderr=subprocess.STDOUT
                                   ).returncode == 0 and subprocess.run(
                ["cmake", "--build", build, "-j" + rehearsal.jobs, "--target", "dmlp-verify"], stdout=log,
                stderr=subprocess.STDOUT).returncode == 0
        if not built:
            sh("tail", "-n", "20", rehearsal.cache + "/host-build.log")
            return False
        verify = build + "/bin/dmlp-verify"
    run = rehearsal.cache + "/image-out/run-1"
    verdict = subprocess.run([verify, run], stdout=subprocess.PIPE, universal_newlines=True)
    print("\n".join(verdict.stdout.rstrip("\n").split("\n")[-3:]))
    with open(run + "/result.json") as stream:
        build = json.load(stream)["build"]
    print("result.json build: system %r, image_id %r" % (build.get("system"), build.get("image_id")))
    if STANDIN_LABEL not in build.get("system", "") or not build.get("image_id"):
        raise StepFailed("no stand-in label or image id")
    if verdict.returncode != 0:
        raise StepFailed("dmlp-verify exited with %d" % verdict.returncode)


def image_disk(rehearsal):
    containers = rehearsal.cache + "/containers"
    used = output("du", "-shx", containers).split("\t")[0]
    free = output("df", "-h", "--output=avail", rehearsal.cache).split("\n")[-1].strip()
    print("disk: podman storage %s (%s), free %s" % (used, containers, free))


def part_image(rehearsal):
    section("the Dockerfile built by podman on a stand-in base, run in a container")
    for tool in ("podman", "runc"):
        if not shutil.which(tool):
            subprocess.run(["apt-get", "install", "-y", "-qq", tool], stdout=subprocess.DEVNULL)
    rehearsal.timed("stand-in base (%s)" % rehearsal.standin, standin_image, rehearsal)
    if not rehearsal.failed:
        rehearsal.timed("podman build (every stage, the test suite included)", image_build, rehearsal)
    if not rehearsal.failed:
        rehearsal.timed("image contents", image_contents, rehearsal)
        rehearsal.timed("--version in the image", image_version, rehearsal)
        rehearsal.timed("podman run: run.sh, the CPU job", image_run, rehearsal)
        rehearsal.timed("dmlp-verify outside the container", image_verify_outside, rehearsal)
    image_disk(rehearsal)


PART_STEPS = {"trixie": part_trixie, "cuda12": part_cuda12, "kit": part_kit, "image": part_image}


# ---- clean-up and the verdict ---------------------------------------------------------
def clean_up(rehearsal, parts):
    """Nothing mounted and no process left in the roots; no container or mounted image left."""
    section("clean-up")
    for folder in (rehearsal.root, rehearsal.standin_root):
        left = mounted_under(folder)
        if left:
            rehearsal.fail("mounts left: " + left)
        else:
            say("nothing mounted under " + folder)
        left = processes_in(folder)
        if left:
            rehearsal.fail("processes left in %s: %s" % (folder, left))
        else:
            say("no process left in " + folder)
    if "image" in parts:
        left = output(*rehearsal.podman, "ps", "-a", "--format", "{{.Names}}", "--filter",
                      "name=^%s-" % rehearsal.name)
        if left:
            rehearsal.fail("containers left: " + left)
        else:
            say("no container left")
        left = "\n".join(line[:100] for line in output(*rehearsal.podman, "image", "mount").split("\n") if line)
        if left:
            rehearsal.fail("images left mounted: " + left)
        else:
            say("no image left mounted")


def local_nvcc():
    try:
        return output("nvcc", "--version", stderr=subprocess.DEVNULL).split("\n")[-1] or "none"
    except (OSError, subprocess.CalledProcessError):
        return "none"


def start_afresh(rehearsal):
    """--fresh: the Debian 13 roots and the stand-in base made again."""
    for folder in (rehearsal.minbase, rehearsal.root, rehearsal.standin_root):
        if mounted_under(folder):
            print("rehearse: %s has mounts; not touching it" % folder, file=sys.stderr)
            return False
        shutil.rmtree(folder, ignore_errors=True)
    if shutil.which("podman") and subprocess.run(
            [*rehearsal.podman, "image", "exists", rehearsal.standin]).returncode == 0:
        sh(*rehearsal.podman, "rmi", "-f", rehearsal.standin, stdout=subprocess.DEVNULL)
    return True


def refuse(message):
    print(message, file=sys.stderr)
    return 2


def rehearse(arguments):
    fresh, parts = False, []
    for argument in arguments:
        if argument == "--fresh":
            fresh = True
        elif argument in PARTS:
            parts.append(argument)
        else:
            return refuse(USAGE)
    parts = parts or list(PARTS)
    if os.geteuid() != 0:
        return refuse("rehearse: needs root (debootstrap, chroot, mounts)")
    rehearsal = Rehearsal()
    os.makedirs(rehearsal.cache, exist_ok=True)
    # One rehearsal at a time: both use the root, and the clean-up checks it.
    lock = open(rehearsal.cache + "/lock", "w")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return refuse("rehearse: another rehearsal is running (%s/lock)" % rehearsal.cache)
    if fresh and not start_afresh(rehearsal):
        return 2
    start = time.monotonic()
    for part in parts:
        PART_STEPS[part](rehearsal)
    clean_up(rehearsal, parts)
    say("local nvcc (compiles the .cu files; not rehearsed here): " + local_nvcc())
    say("total %d s" % (time.monotonic() - start))
    if rehearsal.failed:
        say("FAIL (%s)" % rehearsal.failed)
        return 1
    say("PASS")
    return 0


def main(arguments):
    # A signal ends the run through the finally clauses (temporary folders go).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        if arguments[:1] == ["--cuda-host"]:
            # Internal entry point for the root: tools/rehearse.sh --cuda-host CXX UNPACKED.
            if len(arguments) != 3 or not arguments[1] or not os.path.isdir(os.path.join(arguments[2], "nvidia")):
                return refuse(CUDA_HOST_USAGE)
            try:
                return 0 if cuda_host(arguments[1], arguments[2]) else 1
            except (subprocess.CalledProcessError, StepFailed, OSError) as error:
                print(error, file=sys.stderr)
                return 1
        return rehearse(arguments)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
