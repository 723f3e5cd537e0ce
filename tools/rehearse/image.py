"""Part 4, image: the Dockerfile, unchanged, built by podman on a stand-in base
made here, then run as super runs it, checked from outside by this machine's
dmlp-verify, and its contents, --version and disk printed.
"""

import glob
import json
import os
import re
import shutil
import subprocess
import sys
import time

from rehearsal import REPO, StepFailed, indented, output, section, sh
from roots import in_root, make_root

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
