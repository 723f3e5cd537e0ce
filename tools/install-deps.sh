#!/usr/bin/env bash
# Installs the Debian/Ubuntu packages dmlp builds and tests with (idempotent).
# Used by tools/main-job.sh, tools/test-all.sh and .ci/run.
#   tools/install-deps.sh               build + ctest packages, and test-all's tools
#   tools/install-deps.sh --build       only what building and ctest need
#   tools/install-deps.sh --list [--build]   print the package names, install nothing
# The --build list is exactly spec.json's image.apt and the Dockerfile's
# apt-get install list (tests/e2e/image/image_agreement.py keeps the three
# equal), so CI builds and tests with the packages the image has. The same
# names exist on Debian 12 (CI) and Ubuntu 24.04 (the image).
set -euo pipefail

# Building: compilers and CMake, the libraries (common/, launch/, verify/,
# trainer/: CLI11, yaml-cpp, nlohmann-json, OpenSSL's SHA-256, Gloo, BLIS's
# OpenMP build, see trainer/cpu/CMakeLists.txt), GoogleTest; python3 because the
# e2e tests are Python (CMake looks for it when it registers them); procps
# because a launch e2e case reads process groups with ps.
# NCCL and cuBLAS are not here: the CUDA image (nvidia/cuda:*-devel) ships
# them, pinned with apt-mark hold, and naming them would ask apt to change
# held packages.
build_packages=(
  g++ make cmake pkg-config
  libcli11-dev libyaml-cpp-dev nlohmann-json3-dev libssl-dev
  libgtest-dev libgmock-dev
  libgloo-dev libblis-openmp-dev
  python3 procps
)
# tools/test-all.sh on top: shellcheck, clang for the fuzz targets, git for
# the list of scripts to check; chromium for the browser test of
# `dmlp-verify --html` (verify_e2e.html_browser; skipped where it is absent;
# Debian's package, about 45 s to install on CI; on Ubuntu the name is a snap
# stub, so the image does not carry it); Slurm (with munge) and Open MPI for
# the engine tests (tests/e2e/engines: about a minute of apt each, a minute of
# tests). torchrun is not here: PyPI's torch brings GBs of CUDA libraries, so
# tools/engines-check.sh installs it and runs that case outside CI. iproute2
# for the CRIU case that restores a job into a new network namespace
# (e2e.criu.b_another_machine; CRIU itself comes from tools/criu.sh), and, with
# nftables, for the three-host cluster in network namespaces (tests/e2e/cluster:
# `ip netns`, a bridge, and a silent partition by nft).
# python3-venv: tools/reference-venv.sh makes the reference JAX job's
# virtualenv with it (pip from PyPI; Debian's python3 has no venv/ensurepip
# without it), for e2e.reference.against_reference. qemu-user: its
# qemu-x86_64 runs dmlp-train as on an x86-64 without AVX-512 and one without
# AVX2, for e2e.trainer.other_cpus (the same bits on every x86-64).
# g++-11, bison, flex, xutils-dev (makedepend) and zlib1g-dev build the GPU
# simulator (tools/gpu-sim.sh, for tests/e2e/gpu_sim): GPGPU-Sim's Makefiles
# generate its PTX parsers with bison and flex, and CUDA 11.8's nvcc, which the
# simulator needs, accepts no g++ newer than 11 (Debian 12's g++ is 12).
test_packages=(shellcheck clang git chromium slurm-wlm munge openmpi-bin iproute2 nftables python3-venv
               qemu-user g++-11 bison flex xutils-dev zlib1g-dev)

mode=all
list_only=0
for argument in "$@"; do
  case "$argument" in
    --build) mode=build ;;
    --list) list_only=1 ;;
    *) echo "install-deps: unknown argument $argument (use --build, --list)" >&2; exit 2 ;;
  esac
done

packages=("${build_packages[@]}")
if [[ "$mode" == all ]]; then
  packages+=("${test_packages[@]}")
  # libFuzzer's runtime ships with clang's compiler-rt package, versioned by name.
  clang_major=$(apt-cache show clang 2>/dev/null | sed -n 's/^Depends:.*clang-\([0-9][0-9]*\).*/\1/p' | head -n 1 || true)
  if [[ -n "${clang_major}" ]]; then packages+=("libclang-rt-${clang_major}-dev"); fi
fi
if [[ "$list_only" -eq 1 ]]; then
  printf '%s\n' "${packages[@]}"
  exit 0
fi

missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if [[ ${#missing[@]} -eq 0 ]]; then exit 0; fi

if [[ $(id -u) -ne 0 ]]; then
  echo "install-deps: missing packages: ${missing[*]}" >&2
  echo "install-deps: run as root, or: sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
