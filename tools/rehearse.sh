#!/usr/bin/env bash
# Rehearses the image build on this machine: every rehearsal CI does not run
# (tools/test-all.sh runs the rest). tools/rehearse/ runs it, a module per
# part and a function per step. Run it, as root, before resolving any
# change to CUDA code, the build or the image (docs/developing.md "Rehearsals").
#
#   tools/rehearse.sh                 every part
#   tools/rehearse.sh trixie          part 1 only
#   tools/rehearse.sh cuda12          part 2 only
#   tools/rehearse.sh kit             part 3 only
#   tools/rehearse.sh image           part 4 only
#   tools/rehearse.sh --fresh [...]   make the Debian 13 roots and the stand-in base again first
#
# 1. trixie: a minimal Debian 13 root (debootstrap --variant=minbase), where
#    tools/install-deps.sh --build installs the packages, then the Dockerfile's
#    build-stage RUN lines, read from the Dockerfile, run as written (they call
#    tools/image-build.sh) with the image's compiler, g++-13, and
#    DMLP_IMAGE_CMAKE_ARGS="-DDMLP_CUDA=OFF -DDMLP_WERROR=ON"; ctest runs on
#    that build. Every object of the project is g++-13's; the programs link
#    against the system's libstdc++ (GCC 14's, what the loader runs them with
#    anyway), because Debian 13's C++ libraries (Gloo, GoogleTest) are built
#    by GCC 14 and need it (__cxa_call_terminate@CXXABI_1.3.15), which
#    g++-13's own libstdc++ lacks. On the image's Ubuntu 24.04 those libraries
#    are GCC 13's, so there the question does not arise.
#    The root has no CUDA: the CUDA platform is part 2.
# 2. cuda12: the CUDA platform's host sources (the .cc files whose includes
#    reach cuBLAS, cudart, cuRAND or NCCL headers) compiled with -Werror
#    against CUDA 12.8's and NCCL 2.25.1's headers from PyPI's wheels, linked
#    into a shared object against the wheels' libraries (no unresolved cu*/nccl*
#    symbol), and the NCCL version probe run against them; with this machine's
#    g++ and with g++-13 in the Debian 13 root. The wheels hold no nvcc: the
#    .cu files are compiled only by this machine's nvcc (CUDA 13) in a
#    -DDMLP_CUDA=ON build, not here.
# 3. kit: the GPU kit (tests/gpu/make_kit.sh: Release, sm_89 + sm_90, into
#    $DMLP_REHEARSAL_DIR/gpu-kit) run in a bare Debian 12 root where none of
#    the build's packages is installed (tests/gpu/rehearse_kit.sh): the CPU
#    job, cuda_test skipping its GPU cases, the GPU runner failing with a
#    clear message rather than a loader error (its GPU-only rows SKIP), and
#    the freeze row's CPU half (the kit's CRIU) passing.
# 4. image: the Dockerfile, unchanged, built by a real OCI builder (podman
#    build --isolation chroot; every stage, the build stage's test suite
#    included) FROM a stand-in base made here (BASE_IMAGE: a Debian 13 root
#    with GCC 13 as gcc/g++ and this machine's CUDA toolkit at /usr/local/cuda,
#    imported with podman import, labelled as a stand-in in its os-release,
#    which the programs' build identity records). Then the final image runs as
#    super runs it (run.sh; OUT_DIR on a volume; the CPU job's small size, as
#    there is no GPU) with runc, cgroupfs and lowered ulimits; dmlp-verify on
#    this machine checks the run; `--version` must name the commit passed in;
#    the image's size, the final stage's layers and what it adds to the base
#    stage (nothing of the build tree) and the disk the storage takes are
#    printed. Podman keeps its own storage in the cache.
#
# Cache (DMLP_REHEARSAL_DIR, default /var/tmp/dmlp-rehearsal): the roots, the
# wheels, ccache, podman's storage (the stand-in and the built image).
# DMLP_REHEARSAL_NAME (default dmlp-rehearsal) prefixes the images and
# containers of part 4; DMLP_REHEARSAL_DOCKERFILE is the Dockerfile it builds
# (default the repository's; the context is always the repository). Mounts (/proc, /dev, /dev/shm, the wheels) live in a private
# mount and PID namespace and are unmounted by a trap; the script checks that
# none is left and no process runs in the root afterwards. Prints what it used
# and a last line `rehearse: PASS` or `rehearse: FAIL (<step>)`.
set -euo pipefail
exec python3 "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/rehearse/main.py" "$@"
