#!/usr/bin/env bash
# Rehearses the image build on this machine: every rehearsal CI does not run
# (tools/test-all.sh runs the rest). Run it, as root, before resolving any
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
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache=${DMLP_REHEARSAL_DIR:-/var/tmp/dmlp-rehearsal}
minbase=$cache/trixie-minbase  # debootstrap's root, copied by every part that needs one
root=$cache/trixie-root
wheels=$cache/wheels
jobs=${DMLP_JOBS:-$(nproc)}
mirror=${DMLP_REHEARSAL_MIRROR:-http://deb.debian.org/debian}
# PyPI's CUDA 12.8 and NCCL 2.25.1: what nvidia/cuda:12.8.1-devel-ubuntu24.04 holds.
# cuda-nvcc: the crt/ headers that cuda_runtime_api.h includes ship with the
# compiler (the wheel holds them and ptxas, but no nvcc); without it a machine
# with CUDA in /usr/include silently lends its own crt/ headers.
cuda12_wheels=(nvidia-cublas-cu12==12.8.4.1 nvidia-cuda-runtime-cu12==12.8.90
               nvidia-cuda-cccl-cu12==12.8.90 nvidia-curand-cu12==10.3.9.90
               nvidia-cuda-nvcc-cu12==12.8.93 nvidia-nccl-cu12==2.25.1)
# What the root needs beyond tools/install-deps.sh --build: the image's
# compiler and ccache.
root_extras=(g++-13 ccache)
# A folder holding only libstdc++.so, pointing at the system's runtime
# libstdc++.so.6: first in g++-13's link search path (LDFLAGS), it replaces
# g++-13's own libstdc++ at link time and nothing else (libgcc stays g++-13's).
system_libstdcxx=/opt/system-libstdc++
# Part 4. The names of its images and container; its podman storage, the
# rehearsal's own (its disk use is the build's, and it clashes with nothing);
# runc and cgroupfs (crun refuses hybrid cgroups), ulimits a sandbox allows.
standin_root=$cache/standin-root
cuda_toolkit=${DMLP_REHEARSAL_CUDA:-/usr/local/cuda}
rehearsal_name=${DMLP_REHEARSAL_NAME:-dmlp-rehearsal}
standin=localhost/$rehearsal_name-standin:trixie-cuda
image=localhost/$rehearsal_name-image:latest
standin_label="stand-in for nvidia/cuda:12.8.1-devel-ubuntu24.04, made by tools/rehearse.sh"
podman=(podman --root "$cache/containers" --runroot "/run/$rehearsal_name-containers" --storage-driver overlay
        --events-backend file --runtime runc --cgroup-manager cgroupfs)
ulimits=(--ulimit nofile=4096:4096 --ulimit nproc=4096:4096)
# The Dockerfile part 4 builds. Another (DMLP_REHEARSAL_DOCKERFILE) shows a
# mistake planted in it failing the rehearsal: planted in the repository's,
# it would change the build context and so rebuild the build stage.
dockerfile=${DMLP_REHEARSAL_DOCKERFILE:-$repo/Dockerfile}

say() { printf 'rehearse: %s\n' "$*"; }
section() { printf '\n== rehearse: %s ==\n' "$*"; }

# ---- part 2's compile, also run inside the root: cuda-host CXX UNPACKED ------
# The host sources of the CUDA platform: .cc files outside tests/ whose
# includes reach a CUDA library header, directly or through the project's headers.
cuda_host_sources() {
  local pattern='#include <(cublas|cuda|cudart|curand|nccl)[^>]*>' changed=1 header
  local -a files headers
  mapfile -t files < <(find common launch trainer verify bench -name '*.cc' -o -name '*.h' | sort)
  mapfile -t headers < <(grep -lE "$pattern" "${files[@]}" | grep '\.h$' || true)
  while [[ $changed -eq 1 ]]; do
    changed=0
    for header in "${headers[@]}"; do
      while read -r file; do
        if [[ "$file" == *.h && " ${headers[*]} " != *" $file "* ]]; then headers+=("$file"); changed=1; fi
      done < <(grep -lF "#include \"$header\"" "${files[@]}" || true)
    done
  done
  for file in "${files[@]}"; do
    [[ "$file" == *.cc ]] || continue
    if grep -qE "$pattern" "$file"; then echo "$file"; continue; fi
    for header in "${headers[@]}"; do
      if grep -qF "#include \"$header\"" "$file"; then echo "$file"; break; fi
    done
  done
}

# project_cxx_flags CXX DIR: the flags, one a line, that CMake compiles the
# CUDA library's host sources with (Release, as the image, with -Werror),
# taken from compile_commands.json of a configure-only run in DIR, so that
# they cannot drift from CMakeLists.txt. The wheels hold no nvcc, so the run
# is -DDMLP_CUDA=OFF, where the stub stands in for the CUDA library and gets
# the same target flags and includes (CUDA's are added by the caller).
project_cxx_flags() {
  local cxx=$1 dir=$2
  if ! cmake -S . -B "$dir" -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_CXX_COMPILER_LAUNCHER= \
       -DCMAKE_BUILD_TYPE=Release -DCMAKE_EXPORT_COMPILE_COMMANDS=ON -DDMLP_CUDA=OFF \
       -DDMLP_WERROR=ON -DDMLP_BUILD_TESTS=OFF -DDMLP_BUILD_BENCH=OFF >"$dir.log" 2>&1; then
    cat "$dir.log" >&2
    return 1
  fi
  python3 - "$dir/compile_commands.json" <<'EOF'
import json, shlex, sys
for entry in json.load(open(sys.argv[1])):
    if entry["file"].endswith("/trainer/cuda/backend_cuda_stub.cc"):
        words = shlex.split(entry["command"])[1:]  # without the compiler
        while words:
            word = words.pop(0)
            if word in ("-o", "-c"):
                words.pop(0)  # the object and the source are the caller's
            else:
                print(word)
        sys.exit(0)
sys.exit("no compile command for trainer/cuda/backend_cuda_stub.cc in " + sys.argv[1])
EOF
}

cuda_host() {
  local cxx=$1 unpacked=$2 source object
  cd "$repo"
  # Global, for the trap: removed however the compile ends (a failed step
  # under set -e, a signal).
  scratch=$(mktemp -d)
  trap 'rm -rf "$scratch"' EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  local -a includes=() libdirs=() objects=() sources=()
  local part
  for part in cuda_runtime cublas curand nccl cuda_cccl cuda_nvcc; do
    includes+=(-isystem "$unpacked/nvidia/$part/include")
    [[ -d "$unpacked/nvidia/$part/lib" ]] && libdirs+=("$unpacked/nvidia/$part/lib")
  done
  # The wheels ship libX.so.N only: the unversioned names the linker wants.
  mkdir -p "$scratch/lib"
  for library in cublas cudart nccl; do
    ln -s "$(find "${libdirs[@]}" -name "lib$library.so.*" | sort | head -n 1)" "$scratch/lib/lib$library.so"
  done
  # The project's own flags, -Werror among them, as CMake gives them; the
  # define that trainer/cuda/CMakeLists.txt adds for this library only; -fPIC.
  local -a flags=()
  mapfile -t flags < <(project_cxx_flags "$cxx" "$scratch/configure")
  [[ ${#flags[@]} -gt 0 ]] || return 1
  flags+=(-fPIC "-DDMLP_SOURCE_DIR=\"$repo/\"")
  mapfile -t sources < <(cuda_host_sources)
  echo "cuda12: $("$cxx" --version | head -n 1): ${#sources[@]} host sources"
  for source in "${sources[@]}"; do
    object="$scratch/$(echo "$source" | tr / _).o"
    echo "  $source"
    "$cxx" "${flags[@]}" "${includes[@]}" -c "$source" -o "$object"
    # Programs (a main) are compiled, not put into the shared object.
    grep -qE '^int main\(' "$source" || objects+=("$object")
  done
  # dmlp's own symbols stay undefined in the shared object (its other
  # libraries and the .cu launchers); every cuda*/cublas*/nccl* one must be
  # resolved by the wheels' libraries.
  "$cxx" -shared -o "$scratch/libdmlp_cuda_host.so" "${objects[@]}" -L"$scratch/lib" \
    -Wl,--no-as-needed -lcublas -lcudart -lnccl
  local path
  path=$(IFS=:; echo "${libdirs[*]}")
  local unresolved
  unresolved=$(LD_LIBRARY_PATH=$path ldd -r "$scratch/libdmlp_cuda_host.so" 2>&1 |
               grep -E 'undefined symbol: (cuda|cublas|nccl|curand)' || true)
  if [[ -n "$unresolved" ]]; then echo "$unresolved"; return 1; fi
  LD_LIBRARY_PATH=$path ldd "$scratch/libdmlp_cuda_host.so" | grep -E 'lib(cublas|cudart|nccl)' | sed 's/^\s*/  links /'
  "$cxx" -std=c++20 -Werror "${includes[@]}" trainer/cuda/nccl_version_probe.cc -o "$scratch/probe" \
    -L"$scratch/lib" -lnccl -Wl,-rpath,"$path"
  read -r header library file < <("$scratch/probe")
  echo "cuda12: NCCL header $header, library $library ($file)"
  [[ "$header" == "$library" ]]
}

# Internal entry point for the root: tools/rehearse.sh --cuda-host CXX UNPACKED.
if [[ "${1:-}" == --cuda-host ]]; then
  if [[ $# -ne 3 || -z "$2" || ! -d "$3/nvidia" ]]; then
    echo "usage: tools/rehearse.sh --cuda-host CXX UNPACKED (UNPACKED: a folder holding the" \
         "CUDA 12 wheels' nvidia/, as part 2 unpacks them)" >&2
    exit 2
  fi
  cuda_host "$2" "$3"
  exit
fi

fresh=0
parts=()
for argument in "$@"; do
  case "$argument" in
    --fresh) fresh=1 ;;
    trixie | cuda12 | kit | image) parts+=("$argument") ;;
    *) echo "usage: tools/rehearse.sh [--fresh] [trixie] [cuda12] [kit] [image]" >&2; exit 2 ;;
  esac
done
[[ ${#parts[@]} -gt 0 ]] || parts=(trixie cuda12 kit image)
if [[ $(id -u) -ne 0 ]]; then echo "rehearse: needs root (debootstrap, chroot, mounts)" >&2; exit 2; fi
mkdir -p "$cache"
exec 9>"$cache/lock"  # one rehearsal at a time: both use the root, and the clean-up checks it
if ! flock -n 9; then echo "rehearse: another rehearsal is running ($cache/lock)" >&2; exit 2; fi
if [[ $fresh -eq 1 ]]; then
  for dir in "$minbase" "$root" "$standin_root"; do
    if [[ -n "$(mounted_under "$dir")" ]]; then echo "rehearse: $dir has mounts; not touching it" >&2; exit 2; fi
    rm -rf "$dir"
  done
  if command -v podman >/dev/null && "${podman[@]}" image exists "$standin"; then "${podman[@]}" rmi -f "$standin" >/dev/null; fi
fi

failed=""
fail() { failed=${failed:-$1}; say "FAILED: $1"; }
timed() {  # timed NAME COMMAND...: runs it, says how long it took, records a failure
  local name=$1 start=$SECONDS
  shift
  if "$@"; then say "$name: ok ($((SECONDS - start)) s)"; else fail "$name"; say "$name: $((SECONDS - start)) s"; fi
}

mounted_under() { findmnt -rn -o TARGET | grep -F "$1/" || true; }
processes_in() {  # pids whose root directory is $1
  local link
  for link in /proc/[0-9]*/root; do
    [[ "$(readlink "$link" 2>/dev/null)" == "$1" ]] && echo "${link//[^0-9]/}"
  done
  return 0
}

# make_root [DIR]: DIR (default: the trixie part's root) a Debian 13 root, a
# copy of debootstrap's minimal one, which is made once and kept untouched.
make_root() {
  local dir=${1:-$root}
  if [[ -n "$(mounted_under "$dir")" ]]; then echo "rehearse: $dir has mounts; not touching it" >&2; return 1; fi
  if [[ ! -x "$minbase/usr/bin/apt-get" ]]; then
    command -v debootstrap >/dev/null || apt-get install -y -qq debootstrap >/dev/null
    rm -rf "$minbase.partial"
    debootstrap --variant=minbase trixie "$minbase.partial" "$mirror" >"$cache/debootstrap.log" 2>&1
    mv "$minbase.partial" "$minbase"
  fi
  if [[ ! -x "$dir/usr/bin/apt-get" ]]; then
    rm -rf "$dir.partial"
    cp -a "$minbase" "$dir.partial"
    mv "$dir.partial" "$dir"
  fi
  cp /etc/resolv.conf "$dir/etc/resolv.conf"
}

# in_root [--wheels] [--root DIR] SCRIPT: runs SCRIPT with bash in the root
# (default: the trixie part's), inside a mount and PID namespace of its own
# (so nothing it mounts or starts outlives it), with /proc, /dev and a
# /dev/shm mounted and unmounted again by a trap.
in_root() {
  local bind_wheels=0 dir=$root
  while [[ "$1" == --* ]]; do
    case "$1" in
      --wheels) bind_wheels=1; shift ;;
      --root) dir=$2; shift 2 ;;
    esac
  done
  # shellcheck disable=SC2016  # the inner bash expands them
  unshare --mount --pid --fork --propagation private \
    env ROOT="$dir" WHEELS="$wheels/unpacked" BIND_WHEELS="$bind_wheels" SCRIPT="$1" bash -c '
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
      exit "$status"'
}

# copy_sources DIR: the tree as a docker build context gets it (no .git, no
# builds: git's tracked and unignored files) into DIR of the root.
copy_sources() {
  rm -rf "${root:?}/$1"
  mkdir -p "$root/$1"
  (cd "$repo" && git ls-files -z -co --exclude-standard | tar --null -T - --ignore-failed-read -cf - 2>/dev/null) |
    tar -C "$root/$1" -xf -
}

root_setup() {
  local extras="${root_extras[*]}"
  in_root "
    cd /src/dmlp
    tools/install-deps.sh --build
    missing=\$(for p in $extras; do dpkg-query -W -f='\${Status}' \$p 2>/dev/null | grep -q 'ok installed' || echo \$p; done)
    if [ -n \"\$missing\" ]; then DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \$missing >/dev/null; fi
    mkdir -p $system_libstdcxx
    ln -sfn /usr/lib/\$(gcc-13 -print-multiarch)/libstdc++.so.6 $system_libstdcxx/libstdc++.so"
}

print_root_versions() {
  in_root "
    echo \"compiler: \$(g++-13 --version | head -n 1)\"
    echo \"cmake: \$(cmake --version | head -n 1)\"
    dpkg-query -W -f='\${Package} \${Version}\n' libgloo-dev libyaml-cpp-dev libcli11-dev \
      libgtest-dev libblis-openmp-dev nlohmann-json3-dev libssl-dev libstdc++6 python3 | sed 's/^/package: /'
    echo \"links against: \$(readlink -f $system_libstdcxx/libstdc++.so) (the system's runtime libstdc++)\""
}

# The Dockerfile's build stage, RUN by RUN, as it is written there.
image_build_in_root() {
  local runs
  runs=$(cd "$repo/tests/e2e/image" && python3 -c '
import shlex, sys
from image_agreement import stage_runs
runs = stage_runs(open(sys.argv[1]).read(), "build")
if not runs:
    sys.exit("no RUN lines in the Dockerfile stage \"build\"")
for run in runs:
    print("echo", shlex.quote("+ RUN " + run) + "; /bin/sh -c", shlex.quote(run))' "$repo/Dockerfile")
  in_root "
    export CC=gcc-13 CXX=g++-13 DMLP_JOBS=$jobs
    export DMLP_IMAGE_CMAKE_ARGS='-DDMLP_CUDA=OFF -DDMLP_WERROR=ON'
    export LDFLAGS=-L$system_libstdcxx  # CMake's initial linker flags: executables and shared objects
    export CMAKE_CXX_COMPILER_LAUNCHER=ccache CMAKE_C_COMPILER_LAUNCHER=ccache CCACHE_DIR=/var/cache/dmlp-ccache
    cd /src/dmlp  # the Dockerfile's WORKDIR
    $runs"
}

fetch_wheels() {
  mkdir -p "$wheels"
  local wheel name version
  for wheel in "${cuda12_wheels[@]}"; do
    name=${wheel%%==*}
    version=${wheel##*==}
    if ! compgen -G "$wheels/${name//-/_}-$version-*.whl" >/dev/null; then
      python3 -m pip download -q --no-deps --only-binary=:all: -d "$wheels" "$wheel"
    fi
    if [[ ! -f "$wheels/unpacked/.${name}-$version" ]]; then
      python3 -m zipfile -e "$wheels/${name//-/_}-$version-"*.whl "$wheels/unpacked"
      touch "$wheels/unpacked/.${name}-$version"
    fi
    echo "wheel: $name $version"
  done
}

# ---- part 4: the image, built by podman on a stand-in base, run in a container ----
# The stand-in for nvidia/cuda:12.8.1-devel-ubuntu24.04, which cannot be
# pulled here: Debian 13 (GCC 13 as gcc/g++, as Ubuntu 24.04 has it) with a
# CUDA toolkit at /usr/local/cuda laid out as NVIDIA's images lay it out, and
# NCCL where their libnccl-dev puts it (/usr/include, /usr/lib/<arch>). The
# toolkit is this machine's (DMLP_REHEARSAL_CUDA, default /usr/local/cuda):
# PyPI has CUDA 12.8's headers and libraries but not its compiler driver (the
# nvidia-cuda-nvcc-cu12 wheel holds ptxas and cicc, no nvcc, cudafe++ or
# fatbinary), and the Dockerfile's build stage compiles the .cu files.
standin_toolkit_parts=(libcudart.so libcudart_static.a libcudadevrt.a libculibos.a libcublas.so
                       libcublasLt.so libcurand.so libnvvm.so stubs cmake)
# run.sh as super runs it, with the CPU job's size of tools/main-job.sh (the
# image's NUM_PROCESSES and DATA_SHARDS stay): there is no GPU here.
image_cpu_job=(-e PLATFORM=cpu -e STEPS=20 -e BATCH=64 -e MICROBATCHES=2 -e FEATURES=64 -e WIDTH=128)

cuda_toolkit_version() {  # "13.0.88": the release nvcc names
  "$cuda_toolkit/bin/nvcc" --version | sed -n 's/.*release [0-9.]*, V\([0-9.]*\).*/\1/p'
}

standin_setup() {
  in_root --root "$standin_root" "
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends g++-13 ca-certificates >/dev/null
    # gcc and g++ are GCC 13 even after the Dockerfile installs Debian's g++
    # (GCC 14): its /usr/bin/gcc and /usr/bin/g++ go to *.debian; cc and c++
    # follow gcc and g++.
    for tool in gcc g++; do
      dpkg-divert --local --rename --divert /usr/bin/\$tool.debian --add /usr/bin/\$tool >/dev/null
      ln -sfn \$tool-13 /usr/bin/\$tool
    done
    # g++-13 links against the system's libstdc++ (GCC 14's), as the trixie
    # part does: Debian 13's Gloo and GoogleTest need it.
    multiarch=\$(gcc-13 -print-multiarch)
    dpkg-divert --local --rename --divert /usr/lib/gcc/\$multiarch/13/libstdc++.so.debian \
      --add /usr/lib/gcc/\$multiarch/13/libstdc++.so >/dev/null
    ln -sfn /usr/lib/\$multiarch/libstdc++.so.6 /usr/lib/gcc/\$multiarch/13/libstdc++.so
    rm -rf /var/lib/apt/lists/*
    # The label: os-release(5)'s VARIANT, which the build identity records.
    cp --remove-destination /usr/lib/os-release /etc/os-release
    printf '%s\n' 'VARIANT=\"$standin_label\"' VARIANT_ID=dmlp-stand-in >>/etc/os-release"
}

standin_cuda() {
  local source version release dir
  source=$(readlink -f "$cuda_toolkit")
  version=$(cuda_toolkit_version)
  release=${version%.*}
  dir=$standin_root/usr/local/cuda-$release
  rm -rf "$dir"
  mkdir -p "$dir/targets/x86_64-linux/include" "$dir/targets/x86_64-linux/lib"
  cp -a "$source/bin" "$source/nvvm" "$dir/"
  # cuDNN is no part of the devel image; NCCL's headers are libnccl-dev's.
  (cd "$source/include" && tar --exclude='./cudnn*' --exclude='./nccl*' -cf - .) |
    tar -C "$dir/targets/x86_64-linux/include" -xf -
  local -a libraries=()
  mapfile -t libraries < <(cd "$source/lib" && for part in "${standin_toolkit_parts[@]}"; do compgen -G "$part*"; done)
  (cd "$source/lib" && tar -cf - "${libraries[@]}") | tar -C "$dir/targets/x86_64-linux/lib" -xf -
  ln -s targets/x86_64-linux/include "$dir/include"
  ln -s targets/x86_64-linux/lib "$dir/lib64"
  ln -sfn "cuda-$release" "$standin_root/usr/local/cuda"
  cp -a "$source/include"/nccl* "$standin_root/usr/include/"
  cp -a "$source/lib"/libnccl.so* "$standin_root/usr/lib/x86_64-linux-gnu/"
  echo /usr/local/cuda/targets/x86_64-linux/lib >"$standin_root/etc/ld.so.conf.d/988_cuda-$release.conf"
  in_root --root "$standin_root" ldconfig
  echo "stand-in: CUDA $version from $source ($(du -sh "$dir" | cut -f1)), NCCL $(ls "$source/lib"/libnccl.so.*)"
}

# The stand-in image, made once and kept in the rehearsal's podman storage.
standin_image() {
  if "${podman[@]}" image exists "$standin"; then
    echo "stand-in: $standin (cached; --fresh makes it again)"
  else
    if ! { make_root "$standin_root" && standin_setup && standin_cuda; }; then return 1; fi
    local version
    version=$(cuda_toolkit_version)
    # The ENV of NVIDIA's devel images, with this toolkit's version.
    tar -C "$standin_root" --numeric-owner --exclude='./proc/*' --exclude='./sys/*' --exclude='./dev/*' -cf - . |
      "${podman[@]}" import \
        --change "ENV PATH=/usr/local/nvidia/bin:/usr/local/cuda/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
        --change "ENV LD_LIBRARY_PATH=/usr/local/nvidia/lib:/usr/local/nvidia/lib64" \
        --change "ENV LIBRARY_PATH=/usr/local/cuda/lib64/stubs" \
        --change "ENV CUDA_VERSION=$version" \
        --change "ENV NVIDIA_VISIBLE_DEVICES=all" \
        --change "ENV NVIDIA_DRIVER_CAPABILITIES=compute,utility" \
        --change "LABEL dmlp.stand-in=\"$standin_label\"" \
        --message "$standin_label" - "$standin" >/dev/null || return 1
    rm -rf "$standin_root"  # the image holds it
  fi
  # shellcheck disable=SC2016  # the container's bash expands them
  "${podman[@]}" run --rm "${ulimits[@]}" --network none "$standin" bash -c '
    . /etc/os-release; echo "stand-in: $PRETTY_NAME ($VARIANT)"
    echo "stand-in: $(g++ --version | head -n 1); nvcc $(nvcc --version | grep -o "release .*")"
    echo "stand-in: NCCL $(sed -n "s/^#define NCCL_\(MAJOR\|MINOR\|PATCH\) *\([0-9]*\)/\2/p" /usr/include/nccl.h | paste -sd.)"'
  echo "stand-in: $("${podman[@]}" image inspect --format '{{.Size}}' "$standin" | numfmt --to=iec) image"
}

stamped() {  # each line with the seconds since the step began
  local start=$SECONDS line
  while IFS= read -r line; do printf '%5d| %s\n' $((SECONDS - start)) "$line"; done
}

# The unchanged Dockerfile, every stage, on the stand-in; `podman build` is
# `docker build` here (docs/developing.md "Docker"); the build stage runs the test suite.
image_build() {
  local dirty=true status=0
  [[ -n "$(git -C "$repo" status --porcelain)" ]] || dirty=false
  "${podman[@]}" build --isolation chroot "${ulimits[@]}" --build-arg BASE_IMAGE="$standin" \
    --build-arg DMLP_GIT_COMMIT="$(git -C "$repo" rev-parse HEAD)" --build-arg DMLP_GIT_DIRTY="$dirty" \
    -t "$image" -f "$dockerfile" "$repo" 2>&1 | stamped | tee "$cache/image-build.log" || status=$?
  echo "podman build: the seconds each step began at (a cached step takes none):"
  grep -E '^ *[0-9]+\| (\[[0-9]+/[0-9]+\] )?STEP ' "$cache/image-build.log" | cut -c1-120 | sed 's/^/  /'
  [[ $status -eq 0 ]] || return "$status"
  # The base stage alone (its layers are cached): what the final stage adds to it.
  "${podman[@]}" build --isolation chroot "${ulimits[@]}" --build-arg BASE_IMAGE="$standin" \
    --target base -t "$image-base" -f "$dockerfile" "$repo" >/dev/null 2>&1
}

# Size, the final stage's layers, and what it adds to the base stage: the
# installed programs and run.sh only, nothing of the build tree.
image_contents() {
  local layers base_layers
  echo "image: $("${podman[@]}" image inspect --format '{{.Size}}' "$image" | numfmt --to=iec)," \
    "stand-in $("${podman[@]}" image inspect --format '{{.Size}}' "$standin" | numfmt --to=iec)"
  layers=$("${podman[@]}" history --format '{{.Size}}|{{.CreatedBy}}' "$image")
  base_layers=$("${podman[@]}" history --format x "$image-base" | wc -l)
  echo "final stage (above the base stage's $base_layers):"
  head -n "$(($(wc -l <<<"$layers") - base_layers))" <<<"$layers" | cut -c1-150 | sed 's/^/  layer /'
  local base_dir image_dir status=0
  base_dir=$("${podman[@]}" image mount "$image-base") || return 1
  image_dir=$("${podman[@]}" image mount "$image") || { "${podman[@]}" image unmount "$image-base" >/dev/null; return 1; }
  local added stray build_tree
  added=$(comm -13 <(cd "$base_dir" && find . | sort) <(cd "$image_dir" && find . | sort))
  echo "final stage adds $(grep -c . <<<"$added") paths:"
  echo "  ${added//$'\n'/$'\n'  }"
  stray=$(grep -vE '^\./(usr(/local(/(bin|share)(/dmlp)?)?)?|workspace)$|^\./usr/local/bin/dmlp-(launch|train|verify)$|^\./usr/local/share/dmlp/run\.sh$' <<<"$added" || true)
  if [[ -n "$stray" ]]; then echo "image: the final stage adds more than the programs: $stray"; status=1; fi
  local wanted
  for wanted in ./usr/local/bin/dmlp-launch ./usr/local/bin/dmlp-train ./usr/local/bin/dmlp-verify \
                ./usr/local/share/dmlp/run.sh; do
    grep -qxF "$wanted" <<<"$added" || { echo "image: the final stage lacks $wanted"; status=1; }
  done
  # Objects anywhere but the toolchain's (/usr/lib/gcc's crt*.o).
  build_tree=$(cd "$image_dir" && find . -xdev \( -path ./src -o -path ./opt/dmlp -o -name CMakeCache.txt \
                 -o -name CMakeFiles -o -name 'build.ninja' -o -name CTestTestfile.cmake \
                 -o \( -name '*.o' -not -path './usr/lib/*' \) \) -print | head)
  if [[ -n "$build_tree" ]]; then echo "image: build tree in the final image: $build_tree"; status=1; fi
  [[ $status -ne 0 ]] || echo "image: nothing of the build tree (/src, /opt/dmlp, CMake files, objects)"
  "${podman[@]}" image unmount "$image" "$image-base" >/dev/null
  return "$status"
}

image_version() {
  local commit text
  commit=$(git -C "$repo" rev-parse HEAD)
  text=$("${podman[@]}" run --rm "${ulimits[@]}" --network none "$image" dmlp-train --version) || return 1
  echo "  ${text//$'\n'/$'\n'  }"
  grep -qx "commit: $commit.*" <<<"$text" || { echo "image: --version does not name commit $commit"; return 1; }
  grep -q "^built on: .*stand-in" <<<"$text" || { echo "image: --version does not say the stand-in"; return 1; }
}

# run.sh as super runs the image: CMD, OUT_DIR on a volume, the image id.
image_run() {
  rm -rf "$cache/image-out"
  mkdir -p "$cache/image-out"
  local id
  id=$("${podman[@]}" image inspect --format '{{.Id}}' "$image")
  timeout 1200 "${podman[@]}" run --rm --name "$rehearsal_name-run" --network none "${ulimits[@]}" \
    -v "$cache/image-out:/workspace/out" -e OUT_DIR=/workspace/out/run-1 -e DMLP_IMAGE_ID="sha256:$id" \
    "${image_cpu_job[@]}" "$image"
}

# dmlp-verify of this machine, outside the container (DMLP_REHEARSAL_VERIFY,
# or built here with ccache where it is installed).
image_verify_outside() {
  local verify=${DMLP_REHEARSAL_VERIFY:-}
  if [[ -z "$verify" ]]; then
    local -a launcher=()
    command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
    if ! { cmake -S "$repo" -B "$cache/host-build" -DDMLP_CUDA=OFF -DDMLP_BUILD_TESTS=OFF -DDMLP_BUILD_BENCH=OFF \
             ${launcher[@]+"${launcher[@]}"} && cmake --build "$cache/host-build" -j"$jobs" --target dmlp-verify
         } >"$cache/host-build.log" 2>&1; then
      tail -n 20 "$cache/host-build.log"
      return 1
    fi
    verify=$cache/host-build/bin/dmlp-verify
  fi
  "$verify" "$cache/image-out/run-1" | tail -n 3
  python3 - "$cache/image-out/run-1/result.json" "$standin_label" <<'EOF' || return 1
import json, sys
build = json.load(open(sys.argv[1]))["build"]
print(f"result.json build: system {build.get('system')!r}, image_id {build.get('image_id')!r}")
sys.exit(0 if sys.argv[2] in build.get("system", "") and build.get("image_id") else "no stand-in label or image id")
EOF
}

image_disk() {
  echo "disk: podman storage $(du -shx "$cache/containers" | cut -f1) ($cache/containers), free $(df -h --output=avail "$cache" | tail -n 1 | tr -d ' ')"
}

start=$SECONDS
for part in "${parts[@]}"; do
  case "$part" in
    trixie)
      section "Debian 13 root, the Dockerfile's build stage with g++-13"
      timed "root (debootstrap, cached in $root)" make_root
      if [[ -z "$failed" ]]; then
        copy_sources src/dmlp
        timed "packages (tools/install-deps.sh --build) and g++-13" root_setup
        print_root_versions || true
      fi
      if [[ -z "$failed" ]]; then timed "image build stage (Dockerfile RUN lines)" image_build_in_root; fi
      ;;
    cuda12)
      section "CUDA 12.8 and NCCL 2.25.1 headers and libraries (PyPI wheels)"
      timed "wheels (cached in $wheels)" fetch_wheels
      if [[ -z "$failed" ]]; then
        timed "host sources with $(command -v g++)" "$repo/tools/rehearse.sh" --cuda-host g++ "$wheels/unpacked"
      fi
      if [[ -z "$failed" && -x "$root/usr/bin/g++-13" ]]; then
        copy_sources src/dmlp-cuda12
        timed "host sources with g++-13 in the Debian 13 root" \
          in_root --wheels "cd /src/dmlp-cuda12 && tools/rehearse.sh --cuda-host g++-13 /wheels"
      elif [[ -z "$failed" ]]; then
        say "no Debian 13 root yet: g++-13 skipped (run the trixie part first)"
      fi
      ;;
    image)
      section "the Dockerfile built by podman on a stand-in base, run in a container"
      for tool in podman runc; do command -v "$tool" >/dev/null || apt-get install -y -qq "$tool" >/dev/null; done
      timed "stand-in base ($standin)" standin_image
      if [[ -z "$failed" ]]; then timed "podman build (every stage, the test suite included)" image_build; fi
      if [[ -z "$failed" ]]; then
        timed "image contents" image_contents
        timed "--version in the image" image_version
        timed "podman run: run.sh, the CPU job" image_run
        timed "dmlp-verify outside the container" image_verify_outside
      fi
      image_disk
      ;;
    kit)
      section "the GPU kit in a bare Debian 12 root"
      timed "kit (tests/gpu/make_kit.sh $cache/gpu-kit)" "$repo/tests/gpu/make_kit.sh" "$cache/gpu-kit"
      if [[ -z "$failed" ]]; then
        timed "kit in a bare root (tests/gpu/rehearse_kit.sh)" "$repo/tests/gpu/rehearse_kit.sh" "$cache/gpu-kit"
      fi
      ;;
  esac
done

section "clean-up"
for dir in "$root" "$standin_root"; do
  left=$(mounted_under "$dir")
  if [[ -n "$left" ]]; then fail "mounts left: $left"; else say "nothing mounted under $dir"; fi
  left=$(processes_in "$dir")
  if [[ -n "$left" ]]; then fail "processes left in $dir: $left"; else say "no process left in $dir"; fi
done
if [[ " ${parts[*]} " == *" image "* ]]; then
  left=$("${podman[@]}" ps -a --format '{{.Names}}' --filter "name=^$rehearsal_name-")
  if [[ -n "$left" ]]; then fail "containers left: $left"; else say "no container left"; fi
  left=$("${podman[@]}" image mount | cut -c1-100)
  if [[ -n "$left" ]]; then fail "images left mounted: $left"; else say "no image left mounted"; fi
fi
say "local nvcc (compiles the .cu files; not rehearsed here): $(nvcc --version 2>/dev/null | tail -n 1 || echo none)"
say "total $((SECONDS - start)) s"
if [[ -n "$failed" ]]; then
  say "FAIL ($failed)"
  exit 1
fi
say "PASS"
