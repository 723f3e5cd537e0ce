#!/usr/bin/env bash
# The project's one way to get and use the GPU simulator: GPGPU-Sim 4.2.0,
# patched (tools/gpu-sim/patches/), running the PTX that CUDA 11.8's nvcc makes.
#
#   tools/gpu-sim.sh build                 build the simulator once (cached) and
#                                          dmlp's programs for it (incremental);
#                                          print their folder as the last line
#   tools/gpu-sim.sh nvcc ARGS...          CUDA 11.8's nvcc with -ccbin g++-11
#   tools/gpu-sim.sh run [--workdir DIR] -- COMMAND...
#                                          COMMAND on the simulated GPU; exit
#                                          status = COMMAND's
#   tools/gpu-sim.sh run --ranks -- LAUNCHER [ARGS...] [-- COMMAND...]
#                                          LAUNCHER (dmlp-launch) on the host,
#                                          each of its ranks on a simulated GPU
#                                          of its own; exit status = LAUNCHER's
#   tools/gpu-sim.sh --help                this text
#
# `build` prints the folder holding the simulator build of dmlp-launch,
# dmlp-train, dmlp-verify and cuda_test. `nvcc` and `run` build the simulator
# first when needed (not dmlp: `run` takes any program).
#
# Why a simulator: the CUDA platform has no GPU to run on here or in CI.
# GPGPU-Sim executes nvcc's own PTX, so a program's bits and its use of the
# CUDA API can be checked; its speed and races cannot (docs/gpus.md).
#
# Inputs, all pinned: GPGPU-Sim's source travels in the repository
# (third_party/gpgpu-sim/, CI cannot reach GitHub); CUDA 11.8 comes from
# Debian bookworm's non-free section (`apt-get download` through a private apt
# configuration; the machine's sources and installed packages are never
# touched) and two PyPI wheels (headers and libcudart); g++-11, bison, flex,
# xutils-dev and zlib1g-dev are installed by tools/install-deps.sh.
# The cache (DMLP_GPU_SIM_CACHE, default /var/cache/dmlp/gpu-sim) holds
#   toolkit-KEY/cuda   the CUDA 11.8 toolkit (CUDA_INSTALL_PATH), KEY from the
#                      package pins and the recipe that assembles it
#   sim-KEY/lib        the simulator's libcudart.so.11.0, KEY from the toolkit's
#                      key, the tarball, the patches, g++-11's version and the
#                      recipe that builds it
#   dmlp-KEY/          a CMake build of this checkout for the simulator, KEY
#                      from the checkout's path, the toolkit's key and the
#                      recipe that configures it: configured once, then rebuilt
#                      by CMake on each `build` (a changed source rebuilds what
#                      depends on it); bin/ holds the programs
# so a change of any input builds again and nothing else does; a call that
# finds the simulator built costs milliseconds (`build` then asks CMake whether
# dmlp is up to date: about 3 s on a busy 2-core machine).
#
# `run` and working directories: the simulator reads ./gpgpusim.config and
# writes files into the process's current directory, some named after the
# program alone (PROGRAM.1.sm_70.ptx, PROGRAM.1.sm_70.ptxas, checkpoint_files/),
# so two processes of one program in one directory write and read the same
# files at the same time. `run` therefore starts COMMAND inside a directory of its own (a fresh
# one under TMPDIR, removed afterwards, or --workdir DIR, kept), holding
# tools/gpu-sim/gpgpusim.config. COMMAND runs there: its program path is made
# absolute, its other paths must be absolute.
# A multi-process job needs one such directory per process: a child inherits
# its parent's directory, so a launcher's ranks must each be started through
# `tools/gpu-sim.sh run`, not share the launcher's. `run --ranks -- LAUNCHER
# ARGS [-- COMMAND...]` does that: it runs LAUNCHER on the host with
# `-- tools/gpu-sim.sh run -- COMMAND...` appended (COMMAND by default the
# dmlp-train beside LAUNCHER; a COMMAND of the caller's must come after `--`).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache="${DMLP_GPU_SIM_CACHE:-/var/cache/dmlp/gpu-sim}"

# GPGPU-Sim, branch dev, 2024-10-07 ("GPGPU-Sim 4.2.0"); third_party/gpgpu-sim/README.md
# says how the tarball was made.
gpgpu_sim_commit=667834cfe5214523edd7769aeab77f91b7137686
gpgpu_sim_tarball="$repo/third_party/gpgpu-sim/gpgpu-sim-$gpgpu_sim_commit.tar.xz"
gpgpu_sim_sha256=10a71eaddea239dd0bdb020f93aa5cc0863321ba560408ff1b644eb48c415c39
patch_dir="$repo/tools/gpu-sim/patches"
sim_config="$repo/tools/gpu-sim/gpgpusim.config"

# CUDA 11.8 from Debian: nvcc, cicc, ptxas, fatbinary, nvlink, cuobjdump (the
# simulator runs it) and libcudart.so.11.0 (nvcc links against it). Not
# nvidia-cuda-dev: 774 MB of libraries for its headers; the wheels carry them.
debian_suite=bookworm
debian_mirror=http://deb.debian.org/debian
debian_keyring=/usr/share/keyrings/debian-archive-keyring.gpg
debian_packages=(nvidia-cuda-toolkit=11.8.89~11.8.0-5~deb12u1 libcudart11.0=11.8.89~11.8.0-5~deb12u1)
# PyPI: the runtime headers (cuda_runtime.h, ...) and nvcc's crt/ headers.
wheels=(
  "nvidia-cuda-runtime-cu11==11.8.89 --hash=sha256:f587bd726eb2f7612cf77ce38a2c1e65cf23251ff49437f6161ce0d647f64f7c"
  "nvidia-cuda-nvcc-cu11==11.8.89 --hash=sha256:3e25894debe6ce87e6dbb99b2311fba6f56c1b647daae2c4e5de537dc5d88876"
)
host_compiler=g++-11  # nvcc 11.8 refuses a newer g++; the simulator is built with it too

say() { echo "gpu-sim.sh: $*" >&2; }
die() { echo "gpu-sim.sh: error: $*" >&2; exit 2; }

usage() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"; }
usage_error() { echo "gpu-sim.sh: $*" >&2; usage >&2; exit 2; }

# --- the cache ---------------------------------------------------------------

# A folder whose contents are run (the simulator, nvcc) must be ours alone.
check_owned() {  # check_owned DIR
  local dir=$1 owner mode
  read -r owner mode < <(stat -c '%u %a' "$dir")
  [[ "$owner" == "$(id -u)" ]] ||
    die "GPU_SIM_CACHE_UNSAFE: $dir is owned by uid $owner, not $(id -u) (set DMLP_GPU_SIM_CACHE)"
  (( (8#$mode & 8#022) == 0 )) ||
    die "GPU_SIM_CACHE_UNSAFE: $dir is group- or world-writable (mode $mode)"
}

open_cache() {
  if [[ ! -d "$cache" ]]; then
    mkdir -p "$cache" 2>/dev/null || die "GPU_SIM_CACHE_UNSAFE: cannot create $cache (root, or set DMLP_GPU_SIM_CACHE)"
    chmod 755 "$cache"
  fi
  check_owned "$cache"
}

key_of() { sha256sum | cut -c1-16; }

# The recipes are part of the keys: `declare -f` prints a function's text, so
# editing how something is built builds it again, and editing comments or the
# usage text does not. The fetching functions are not: what they bring is
# fixed by the pins (versions from a signed archive, wheels by SHA-256).
toolkit_key() {
  { printf '%s\n' "${debian_packages[@]}" "${wheels[@]}"; declare -f assemble_toolkit write_nvcc_profile; } | key_of
}

sim_key() {
  {
    echo "$(toolkit_key) $gpgpu_sim_sha256"
    "$host_compiler" --version 2>/dev/null | head -n 1
    local patch_file
    for patch_file in "$patch_dir"/*.patch; do sha256sum <"$patch_file"; done
    declare -f build_simulator
  } | key_of
}

# Set once by ensure_built (each key costs a few processes).
toolkit_dir=""
sim_dir=""
dmlp_dir=""

# --- staging: one temporary folder, removed however the script ends -----------

staging=""
cleanup() { if [[ -n "$staging" ]]; then rm -rf "$staging"; fi; }
trap cleanup EXIT
trap 'cleanup; exit 130' INT
trap 'cleanup; exit 143' TERM
trap 'cleanup; exit 129' HUP

new_staging() { staging="$(mktemp -d "$cache/staging.XXXXXX")"; }

# --- CUDA 11.8 ----------------------------------------------------------------

# apt-get against bookworm only, with its own lists, archives and an empty
# "installed" list, so nothing of the machine's apt state is read or changed.
private_apt() {  # private_apt DIR apt-get|apt-cache ARGS...
  local dir=$1 tool=$2; shift 2
  "$tool" -q -o Dir::Etc::SourceList="$dir/sources.list" -o Dir::Etc::SourceParts=/dev/null \
    -o Dir::Etc::Preferences=/dev/null -o Dir::Etc::PreferencesParts=/dev/null \
    -o Dir::State="$dir/state" -o Dir::State::status="$dir/status" \
    -o Dir::Cache="$dir/cache" -o APT::Get::List-Cleanup=0 -o APT::Sandbox::User=root "$@"
}

fetch_debian_packages() {  # fetch_debian_packages DEST: unpack the packages into DEST
  local dest=$1 apt_dir="$staging/apt"
  if ! command -v apt-get >/dev/null || ! command -v dpkg-deb >/dev/null; then
    die "GPU_SIM_FETCH_FAILED: needs apt-get and dpkg-deb (a Debian or Ubuntu machine)"
  fi
  [[ -r "$debian_keyring" ]] || die "GPU_SIM_FETCH_FAILED: no Debian archive keyring at $debian_keyring"
  mkdir -p "$apt_dir/state/lists/partial" "$apt_dir/cache/archives/partial" "$apt_dir/debs"
  echo "deb [signed-by=$debian_keyring] $debian_mirror $debian_suite main contrib non-free non-free-firmware" \
    >"$apt_dir/sources.list"
  : >"$apt_dir/status"
  private_apt "$apt_dir" apt-get update >/dev/null || die "GPU_SIM_FETCH_FAILED: apt-get update of $debian_suite failed"
  (cd "$apt_dir/debs" && private_apt "$apt_dir" apt-get download "${debian_packages[@]}" >/dev/null) ||
    die "GPU_SIM_FETCH_FAILED: apt-get download ${debian_packages[*]}"
  local deb
  for deb in "$apt_dir"/debs/*.deb; do dpkg-deb -x "$deb" "$dest"; done
}

fetch_wheels() {  # fetch_wheels DEST: unpack the wheels into DEST
  local dest=$1 pip=(python3 -m pip)
  # Debian's python3 has no pip without python3-pip; a throwaway venv has one.
  if ! python3 -m pip --version >/dev/null 2>&1; then
    python3 -m venv "$staging/venv" || die "GPU_SIM_FETCH_FAILED: python3 -m venv (python3-venv missing?)"
    pip=("$staging/venv/bin/python" -m pip)
  fi
  printf '%s\n' "${wheels[@]}" >"$staging/requirements.txt"
  "${pip[@]}" download -q --no-deps --only-binary=:all: --platform manylinux1_x86_64 \
    --require-hashes -r "$staging/requirements.txt" -d "$staging/wheels" ||
    die "GPU_SIM_FETCH_FAILED: pip download ${wheels[*]}"
  local wheel
  for wheel in "$staging"/wheels/*.whl; do
    python3 -m zipfile -e "$wheel" "$dest" || die "GPU_SIM_FETCH_FAILED: cannot unpack $wheel"
  done
}

# CUDA_INSTALL_PATH's layout, as nvcc and the simulator expect it:
# bin/ (nvcc and its parts, cuobjdump), include/, lib64/, nvvm/libdevice/.
assemble_toolkit() {  # assemble_toolkit DEST
  local dest=$1 debian="$staging/debian" pypi="$staging/pypi"
  mkdir -p "$debian" "$pypi" "$dest/bin" "$dest/include" "$dest/lib64" "$dest/nvvm"
  fetch_debian_packages "$debian"
  fetch_wheels "$pypi"
  local tool
  # usr/bin/nvcc is Debian's wrapper script; the real one sits beside cicc.
  for tool in nvcc cicc crt; do cp -a "$debian/usr/lib/nvidia-cuda-toolkit/bin/$tool" "$dest/bin/"; done
  for tool in cudafe++ fatbinary nvlink ptxas cuobjdump nvdisasm bin2c nvprune cu++filt; do
    cp -a "$debian/usr/bin/$tool" "$dest/bin/"
  done
  cp -a "$debian/usr/lib/nvidia-cuda-toolkit/libdevice" "$dest/nvvm/"
  cp -a "$debian"/usr/lib/x86_64-linux-gnu/libcudart.so.* "$dest/lib64/"
  ln -s libcudart.so.11.0 "$dest/lib64/libcudart.so"
  cp -a "$pypi/nvidia/cuda_runtime/include/." "$pypi/nvidia/cuda_nvcc/include/." "$dest/include/"
  find "$dest/include" -name '__init__.py' -delete
  chmod -R u+rwX,go+rX,go-w "$dest"
  write_nvcc_profile "$dest/bin/nvcc.profile"
  "$dest/bin/nvcc" --version | grep -q 'release 11.8' || die "GPU_SIM_BUILD_FAILED: $dest/bin/nvcc is not CUDA 11.8"
}

# nvcc reads bin/nvcc.profile beside itself; Debian's points into /usr, this
# one into the cache (_HERE_ is the bin folder).
write_nvcc_profile() {  # write_nvcc_profile FILE
  cat >"$1" <<'EOF'
TOP                = $(_HERE_)/..
NVVMIR_LIBRARY_DIR = $(TOP)/nvvm/libdevice
PATH              += $(_HERE_):
INCLUDES          +=  "-I$(TOP)/include" $(_SPACE_)
LIBRARIES          =+ $(_SPACE_) "-L$(TOP)/lib64"
EOF
}

ensure_toolkit() {
  local dir=$toolkit_dir
  [[ -f "$dir/.complete" ]] && return 0
  say "assembling CUDA 11.8 into $dir (once: Debian $debian_suite non-free and PyPI)"
  new_staging
  assemble_toolkit "$staging/cuda"
  rm -rf "$dir"
  mkdir -p "$dir"
  mv "$staging/cuda" "$dir/cuda"
  touch "$dir/.complete"
  rm -rf "$staging"; staging=""
}

# --- the simulator -------------------------------------------------------------

build_simulator() {  # build_simulator CUDA_DIR DEST: the patched simulator's runtime into DEST/lib
  local cuda=$1 dest=$2 source="$staging/gpgpu-sim"
  local actual_sha256
  actual_sha256="$(sha256sum "$gpgpu_sim_tarball" | cut -d' ' -f1)"
  [[ "$actual_sha256" == "$gpgpu_sim_sha256" ]] ||
    die "GPU_SIM_BUILD_FAILED: $gpgpu_sim_tarball has SHA-256 $actual_sha256, expected $gpgpu_sim_sha256"
  tar -xJf "$gpgpu_sim_tarball" -C "$staging"
  local patch_file
  for patch_file in "$patch_dir"/*.patch; do
    [[ -e "$patch_file" ]] || continue
    patch -d "$source" -p1 --batch --forward --quiet <"$patch_file" ||
      die "GPU_SIM_BUILD_FAILED: $patch_file does not apply"
  done
  # The simulator's Makefiles call gcc/g++ by those names and name the build
  # folder after their version: both must be g++-11.
  mkdir -p "$staging/compilers"
  ln -s "$(command -v gcc-11)" "$staging/compilers/gcc"
  ln -s "$(command -v g++-11)" "$staging/compilers/g++"
  # setup_environment (not written for `set -eu`) reads git metadata the
  # tarball lacks; its complaints are noise, kept in setup.log for a failure.
  # shellcheck disable=SC2016  # $1, $2 and $(nproc) are the inner bash's
  local recipe='cd "$1" && { source setup_environment >"$2/setup.log" 2>&1 || exit 3; } &&
    exec nice -n 19 make -j"$(nproc)"'
  local status=0
  CUDA_INSTALL_PATH="$cuda" PATH="$staging/compilers:$PATH" \
    bash -c "$recipe" build "$source" "$staging" >"$staging/make.log" 2>&1 || status=$?
  if [[ $status -ne 0 ]]; then
    cat "$staging/setup.log" >&2
    tail -n 40 "$staging/make.log" >&2
    die "GPU_SIM_BUILD_FAILED: setup_environment or make failed (status $status; their output above)"
  fi
  local runtime
  runtime="$(echo "$source"/lib/gcc-*/cuda-*/release)"
  [[ -e "$runtime/libcudart.so.11.0" ]] || die "GPU_SIM_BUILD_FAILED: no libcudart.so.11.0 under $source/lib"
  mkdir -p "$dest"
  cp -a "$runtime" "$dest/lib"
  cp "$source/COPYRIGHT" "$dest/"
}

ensure_simulator() {
  local dir=$sim_dir
  [[ -f "$dir/.complete" ]] && return 0
  command -v "$host_compiler" >/dev/null ||
    die "GPU_SIM_BUILD_FAILED: no $host_compiler (tools/install-deps.sh installs it with bison, flex, xutils-dev, zlib1g-dev)"
  say "building the simulator into $dir (once: several minutes)"
  local started=$SECONDS
  new_staging
  build_simulator "$toolkit_dir/cuda" "$staging/sim"
  rm -rf "$dir"
  mv "$staging/sim" "$dir"
  touch "$dir/.complete"
  rm -rf "$staging"; staging=""
  say "built in $((SECONDS - started)) s"
}

# --- dmlp for the simulator ---------------------------------------------------

# What the simulator runs: the programs and the CUDA platform's unit tests.
dmlp_targets=(dmlp-launch dmlp-train dmlp-verify cuda_test)

# The main build's settings (Release, -Werror, C++20 host code with the
# default compiler) plus CUDA 11.8's nvcc for the .cu sources: g++-11 as its
# host compiler (it refuses newer), C++17 (the newest it knows), sm_70 (the
# simulator models a V100: gpgpusim.config), the shared libcudart the
# simulator replaces, and the CUDA platform without cuBLAS and NCCL (the
# simulator provides libcudart alone; GEMM=ordered is dmlp's own kernel).
configure_dmlp() {  # configure_dmlp BUILD_DIR
  local dir=$1 cuda="$toolkit_dir/cuda"
  cmake -S "$repo" -B "$dir" -DCMAKE_BUILD_TYPE=Release -DDMLP_WERROR=ON \
    -DDMLP_BUILD_BENCH=OFF -DDMLP_BUILD_TESTS=ON -DDMLP_CUDA=ON -DDMLP_CUDA_VENDOR_LIBRARIES=OFF \
    -DCMAKE_CUDA_COMPILER="$cuda/bin/nvcc" -DCMAKE_CUDA_HOST_COMPILER="$(command -v "$host_compiler")" \
    -DCMAKE_CUDA_STANDARD=17 -DCMAKE_CUDA_ARCHITECTURES=70 -DDMLP_CUDA_ARCHITECTURES=70 \
    -DCMAKE_CUDA_RUNTIME_LIBRARY=Shared -DCUDAToolkit_ROOT="$cuda"
}

dmlp_key() {
  { echo "$repo $(toolkit_key)"; declare -f configure_dmlp; } | key_of
}

# Configured once; afterwards CMake itself decides what a change rebuilds (and
# reconfigures when a CMakeLists.txt changed). A lock keeps two callers of one
# checkout from building into the folder at once.
ensure_dmlp() {  # ensure_dmlp: sets dmlp_dir
  dmlp_dir="$cache/dmlp-$(dmlp_key)"
  command -v cmake >/dev/null || die "GPU_SIM_BUILD_FAILED: no cmake (tools/install-deps.sh installs it)"
  mkdir -p "$dmlp_dir"
  check_owned "$dmlp_dir"
  exec 8>"$dmlp_dir/.lock"
  flock 8
  local log="$dmlp_dir/build.log" started=$SECONDS
  if [[ ! -f "$dmlp_dir/CMakeCache.txt" ]]; then
    say "configuring dmlp for the simulator in $dmlp_dir (once)"
    if ! configure_dmlp "$dmlp_dir" >"$dmlp_dir/configure.log" 2>&1; then
      tail -n 40 "$dmlp_dir/configure.log" >&2
      rm -f "$dmlp_dir/CMakeCache.txt"  # configure again next time
      die "GPU_SIM_BUILD_FAILED: configuring dmlp failed (the end of $dmlp_dir/configure.log above)"
    fi
  fi
  if ! nice -n 19 cmake --build "$dmlp_dir" -j"$(nproc)" --target "${dmlp_targets[@]}" >"$log" 2>&1; then
    grep -E -B2 -A8 'error|Error' "$log" | tail -n 60 >&2
    die "GPU_SIM_BUILD_FAILED: building dmlp for the simulator failed (the rest in $log)"
  fi
  flock -u 8
  exec 8>&-
  if (( SECONDS - started > 5 )); then say "dmlp built in $((SECONDS - started)) s"; fi
}

ensure_built() {
  open_cache
  toolkit_dir="$cache/toolkit-$(toolkit_key)"
  sim_dir="$cache/sim-$(sim_key)"
  # Two callers on a fresh machine: one builds, the other waits for it. A
  # caller whose parts are built takes no lock: another caller may hold it for
  # minutes, building parts of other keys (a new patch, another checkout's).
  if [[ ! -f "$toolkit_dir/.complete" || ! -f "$sim_dir/.complete" ]]; then
    exec 9>"$cache/.lock"
    flock 9
    ensure_toolkit
    ensure_simulator
    flock -u 9
    exec 9>&-
  fi
  check_owned "$toolkit_dir"
  check_owned "$sim_dir"
}

# --- the commands --------------------------------------------------------------

run_nvcc() {
  exec "$toolkit_dir/cuda/bin/nvcc" -ccbin "$host_compiler" "$@"
}

# A relative program path would point into the working directory COMMAND runs
# in: made absolute (a bare name is looked up on PATH as usual).
absolute_program() {  # absolute_program PATH
  if [[ "$1" == */* && "$1" != /* ]]; then echo "$PWD/$1"; else echo "$1"; fi
}

# Waits for CHILD, passing INT, TERM and HUP on to it; returns its status.
wait_passing_signals() {  # wait_passing_signals CHILD
  local child=$1 status=0
  trap 'kill -TERM "$child" 2>/dev/null' INT TERM HUP
  wait "$child" || status=$?
  # wait returns early when a trapped signal arrives: wait for the end itself.
  while kill -0 "$child" 2>/dev/null; do status=0; wait "$child" || status=$?; done
  return "$status"
}

run_simulated() {  # run_simulated [--workdir DIR] -- COMMAND...
  local workdir="" own_workdir=0 ranks=0
  while [[ $# -gt 0 ]]; do
    case "$1" in
      --workdir) [[ $# -ge 2 ]] || usage_error "--workdir needs a folder"; workdir=$2; shift 2 ;;
      --ranks) ranks=1; shift ;;
      --) shift; break ;;
      *) usage_error "run: unknown argument $1 (COMMAND comes after --)" ;;
    esac
  done
  [[ $# -gt 0 ]] || usage_error "run: no COMMAND after --"
  if [[ "$ranks" -eq 1 ]]; then
    [[ -z "$workdir" ]] || usage_error "run: --ranks gives each rank its own folder: no --workdir"
    run_ranks "$@"
  fi
  local program
  program="$(absolute_program "$1")"
  shift
  set -- "$program" "$@"
  if [[ -z "$workdir" ]]; then
    workdir="$(mktemp -d "${TMPDIR:-/tmp}/dmlp-gpu-sim.XXXXXX")"
    own_workdir=1
  fi
  mkdir -p "$workdir"
  cp "$sim_config" "$workdir/gpgpusim.config"
  export CUDA_INSTALL_PATH="$toolkit_dir/cuda" LD_LIBRARY_PATH="$sim_dir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  # What GPGPU-Sim's setup_environment exports for CUDA >= 6, as it sets them.
  # Without CUOBJDUMP_SIM_FILE the runtime looks for a cuobjdump section list
  # that its CUDA 6+ path never fills and aborts ("No PTX sections found").
  export PTX_SIM_USE_PTX_FILE=1.ptx PTX_SIM_KERNELFILE=_1.ptx CUOBJDUMP_SIM_FILE=jj
  if [[ "$own_workdir" -eq 0 ]]; then
    cd "$workdir" && exec "$@"
  fi
  # Our own folder is removed afterwards: wait for COMMAND, pass signals on.
  local status=0
  # <&0: a background command's stdin would otherwise be /dev/null.
  (cd "$workdir" && exec "$@") <&0 &
  wait_passing_signals $! || status=$?
  rm -rf "$workdir"
  exit "$status"
}

# LAUNCHER starts the ranks; each rank's COMMAND is started through `run`, so
# every rank has a simulator, a working directory and a simulated GPU of its
# own (a simulated process sees one device: with COLLECTIVES=gloo, dmlp-train
# puts every local rank on device 0, its own). The launcher itself runs on the
# host, in the caller's directory. The ranks' folders live in one folder of
# the job's (their TMPDIR), removed when LAUNCHER ends, even if a rank was
# killed before it could remove its own.
run_ranks() {  # run_ranks LAUNCHER [ARGS...] [-- COMMAND...]
  local launcher=$1 launcher_args=() command=() seen_separator=0
  shift
  if [[ "$launcher" != */* ]]; then
    launcher="$(command -v "$launcher")" || usage_error "run --ranks: no launcher $1 on PATH"
  fi
  launcher="$(absolute_program "$launcher")"
  while [[ $# -gt 0 ]]; do
    if [[ "$seen_separator" -eq 0 && "$1" == "--" ]]; then
      seen_separator=1
    elif [[ "$seen_separator" -eq 0 ]]; then
      launcher_args+=("$1")
    else
      command+=("$1")
    fi
    shift
  done
  # dmlp-launch's own default: the dmlp-train beside it.
  if [[ ${#command[@]} -eq 0 ]]; then command=("$(dirname "$launcher")/dmlp-train"); fi
  command[0]="$(absolute_program "${command[0]}")"
  local rank_dirs status=0
  rank_dirs="$(mktemp -d "${TMPDIR:-/tmp}/dmlp-gpu-sim-ranks.XXXXXX")"
  TMPDIR="$rank_dirs" "$launcher" "${launcher_args[@]}" -- \
    "$repo/tools/gpu-sim.sh" run -- "${command[@]}" <&0 &
  wait_passing_signals $! || status=$?
  rm -rf "$rank_dirs"
  exit "$status"
}

case "${1:-}" in
  build)
    [[ $# -eq 1 ]] || usage_error "build takes no arguments"
    ensure_built
    ensure_dmlp
    echo "$dmlp_dir/bin" ;;
  nvcc) shift; ensure_built; run_nvcc "$@" ;;
  run) shift; ensure_built; run_simulated "$@" ;;
  -h|--help) usage ;;
  "") usage_error "no command" ;;
  *) usage_error "unknown command $1" ;;
esac
