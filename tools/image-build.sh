#!/usr/bin/env bash
# The Dockerfile's build stage, one step per RUN line. The Dockerfile calls it,
# and tools/rehearse.sh runs the same RUN lines (read from the Dockerfile) in a
# Debian 13 root with GCC 13, so the image's build cannot drift from what is
# rehearsed here.
#
#   tools/image-build.sh build            configure and build build/
#   tools/image-build.sh test             the CPU test suite, all of it
#   tools/image-build.sh install PREFIX   the three programs, and run.sh, under PREFIX
#
# Environment:
#   DMLP_GIT_COMMIT, DMLP_GIT_DIRTY  the sources' commit and whether they had
#                          uncommitted changes (the Dockerfile's build arguments:
#                          its context has no .git); passed to CMake when set
#   DMLP_IMAGE_CMAKE_ARGS  more configure arguments, after the image's own (a
#                          later -D wins); the rehearsal passes
#                          -DDMLP_CUDA=OFF -DDMLP_WERROR=ON and its GoogleTest
#   CC, CXX                the compilers, as CMake reads them
#   DMLP_JOBS              parallel jobs (default: nproc)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
jobs=${DMLP_JOBS:-$(nproc)}
read -r -a extra_args <<<"${DMLP_IMAGE_CMAKE_ARGS:-}"
identity_args=()
if [[ -n "${DMLP_GIT_COMMIT:-}" ]]; then
  identity_args=(-DDMLP_GIT_COMMIT="${DMLP_GIT_COMMIT}" -DDMLP_GIT_DIRTY="${DMLP_GIT_DIRTY:-unknown}")
fi

case "${1:-}" in
  build)
    # Release for both GPU targets. DMLP_CUDA=ON fails the configure step when
    # nvcc is missing instead of building the CPU-only stub. No -Werror here:
    # warnings are for CI and tools/rehearse.sh; a new GCC or nvcc warning
    # must not stop an image build. Benchmarks are not part of the image.
    cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DDMLP_CUDA=ON \
      -DCMAKE_CUDA_ARCHITECTURES="89;90" -DDMLP_BUILD_BENCH=OFF ${identity_args[@]+"${identity_args[@]}"} \
      "${extra_args[@]}"
    cmake --build build -j"${jobs}"
    ;;
  test)
    # A build container has no GPU, so the CUDA unit tests skip themselves
    # (GTEST_SKIP); everything else must pass.
    ctest --test-dir build --output-on-failure -j"${jobs}"
    ;;
  install)
    prefix=${2:?"usage: tools/image-build.sh install PREFIX"}
    cmake --install build --prefix "${prefix}"
    install -D -m 0755 run.sh "${prefix}/share/dmlp/run.sh"
    ;;
  *)
    echo "usage: tools/image-build.sh build | test | install PREFIX" >&2
    exit 2
    ;;
esac
