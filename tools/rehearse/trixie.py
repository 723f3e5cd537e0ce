"""Part 1, trixie: a minimal Debian 13 root where tools/install-deps.sh --build
installs the packages, then the Dockerfile's build-stage RUN lines run as
written with the image's compiler, g++-13 (tools/rehearse.sh says why the
programs link against the system's libstdc++).
"""

import os
import shlex
import subprocess
import sys

from rehearsal import REPO, StepFailed, section
from roots import copy_sources, in_root, make_root

# What the root needs beyond tools/install-deps.sh --build: the image's compiler and ccache.
ROOT_EXTRAS = ("g++-13", "ccache")
# A folder holding only libstdc++.so, pointing at the system's runtime
# libstdc++.so.6: first in g++-13's link search path (LDFLAGS), it replaces
# g++-13's own libstdc++ at link time and nothing else (libgcc stays g++-13's).
SYSTEM_LIBSTDCXX = "/opt/system-libstdc++"


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
