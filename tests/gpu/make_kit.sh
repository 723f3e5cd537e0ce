#!/usr/bin/env bash
# Builds the GPU kit: one folder holding everything the GPU check
# needs that the device machine lacks, so that the check there is one call
# with no build (the device has nvcc, CMake and Python with jax, but none of
# Gloo, BLIS, CLI11, yaml-cpp, nlohmann-json, GTest or OpenSSL's headers, and
# nothing can be installed there).
#
# Usage: tests/gpu/make_kit.sh DIR      (e.g. tests/gpu/make_kit.sh gpu-kit)
#   DIR is replaced. Layout (mirrors the repository, so the check script finds
#   its neighbours the same way in both):
#     bin/   dmlp-launch dmlp-train dmlp-verify cuda_test gpu_bench cuda_freeze
#            dmlp_draws (Release, sm_89 + sm_90, stripped; RPATH $ORIGIN/../lib)
#     lib/   the shared libraries they load that are neither glibc, libstdc++
#            nor cuBLAS/NCCL (Gloo and its dependencies, yaml-cpp, libcrypto,
#            libgomp, cudart, ...: what ldd lists) and BLIS, which the CPU GEMM
#            loads from ../lib beside the program (DMLP_BLIS_BESIDE_EXECUTABLE)
#     lib/DEVICE_LIBS   the sonames the device must supply (cuBLAS, NCCL)
#     reference/        the reference JAX job (../shared/reference)
#     tests/gpu/, tests/data/reference_draws.py, bench/reference/
#                       the check script and what it starts
#     criu/             CRIU 4.2 with its own loader and libraries (tools/criu.sh
#                       --bundle) and dmlp's flags (dmlp-dump-flags,
#                       dmlp-restore-flags), for the freeze row; absent (the
#                       row SKIPs) without tools/criu.sh
#     KIT.txt           commit, toolkit, compiler, NCCL header, sizes, file digests
# Environment (optional):
#   CUDACXX            nvcc (default: on PATH, else /usr/local/cuda/bin/nvcc)
#   KIT_BUILD_DIR      build folder (default <repo>/build-kit; git-ignored)
#   KIT_CMAKE_ARGS     extra configure arguments (e.g. -DDMLP_WERROR=ON)
#   REFERENCE_DIR      the reference job (default <repo>/../shared/reference)
#   KIT_MAX_MIB=48     fail when the kit is larger (a run call carries 64 MiB in all)
#   DMLP_CRIU_HELPER   the CRIU helper (default <repo>/tools/criu.sh)
# Not carried, on purpose: glibc and libstdc++/libgcc_s (the device's are the
# same or newer, and an older libstdc++ first in the search path would break
# the device's own libraries); cuBLAS and NCCL (hundreds of MB; the runner
# finds the device's, see run_gpu_checks.sh --kit).
set -euo pipefail
export LC_ALL=C

die() { echo "make_kit.sh: error: $*" >&2; exit 2; }
[ $# -eq 1 ] || die "usage: tests/gpu/make_kit.sh DIR"
kit="$1"
script_dir="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$script_dir/../.." && pwd)"
build="${KIT_BUILD_DIR:-$repo/build-kit}"
reference_dir="${REFERENCE_DIR:-$repo/../shared/reference}"
max_mib="${KIT_MAX_MIB:-48}"
criu_helper="${DMLP_CRIU_HELPER:-$repo/tools/criu.sh}"
nvcc_path="${CUDACXX:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}"
programs=(dmlp-launch dmlp-train dmlp-verify cuda_test gpu_bench cuda_freeze dmlp_draws)
# What the device supplies: found there by the runner, never carried.
device_lib_pattern='^(libcublas|libcublasLt|libnccl)\.so'
# What every Linux has (glibc) or has newer (libstdc++, libgcc_s): never carried.
system_lib_pattern='^(linux-vdso|ld-linux|libc|libm|libdl|libpthread|librt|libresolv|libutil|libstdc\+\+|libgcc_s)\.so'

[ -x "$nvcc_path" ] || die "no nvcc at $nvcc_path (set CUDACXX)"
[ -f "$reference_dir/train.py" ] || die "no reference job in $reference_dir (set REFERENCE_DIR)"
command -v strip >/dev/null || die "strip not found (binutils)"

# ---- build --------------------------------------------------------------------
# RPATH, not RUNPATH (--disable-new-dtags): a RUNPATH serves only the program's
# own dependencies, while Gloo's (libibverbs, hiredis, ...) must come from the
# kit too. The build tree gets the kit's RPATH directly: no install step.
echo "make_kit.sh: building in $build with $nvcc_path" >&2
read -r -a extra_args <<<"${KIT_CMAKE_ARGS:-}"
# shellcheck disable=SC2016  # $ORIGIN is the loader's, not the shell's
cmake -S "$repo" -B "$build" -DCMAKE_BUILD_TYPE=Release \
  -DDMLP_CUDA=ON -DCMAKE_CUDA_COMPILER="$nvcc_path" -DCMAKE_CUDA_ARCHITECTURES="89;90" \
  -DDMLP_BUILD_TESTS=ON -DDMLP_BUILD_BENCH=ON \
  -DDMLP_BLIS_BESIDE_EXECUTABLE=../lib/libblis.so.4 \
  -DCMAKE_BUILD_WITH_INSTALL_RPATH=ON '-DCMAKE_INSTALL_RPATH=$ORIGIN/../lib' \
  -DCMAKE_EXE_LINKER_FLAGS=-Wl,--disable-new-dtags \
  "${extra_args[@]}" >&2
cmake --build "$build" -j"${KIT_JOBS:-2}" --target "${programs[@]}" >&2

# ---- assemble -----------------------------------------------------------------
rm -rf "$kit"
mkdir -p "$kit/bin" "$kit/lib" "$kit/reference" "$kit/tests/gpu" "$kit/tests/data" "$kit/bench/reference"
for program in "${programs[@]}"; do
  install -m 755 "$build/bin/$program" "$kit/bin/$program"
  strip --strip-unneeded "$kit/bin/$program"
done

# Every shared library ldd resolves for the programs, except the system's and
# the device's. ldd lists the whole closure (Gloo's own dependencies too).
declare -A carried=() device_libs=()
for program in "${programs[@]}"; do
  while read -r soname path _; do
    [[ "$soname" =~ $system_lib_pattern ]] && continue
    if [[ "$soname" =~ $device_lib_pattern ]]; then
      # Resolved here, so that ldd also lists what it loads in turn
      # (libcublasLt behind libcublas): the names come from the programs, not from us.
      [ "$path" != "not" ] || die "$program: $soname (the device supplies it) not found here, so neither is what it loads"
      device_libs[$soname]=1
      continue
    fi
    [ "$path" != "not" ] || die "$program: $soname not found here"
    [ -f "$path" ] || continue
    carried[$soname]="$path"
  done < <(ldd "$build/bin/$program" | sed -n 's/^\t\(\S*\) => \(.*\) (0x[0-9a-f]*)$/\1 \2/p; s/^\t\(\S*\) => not found$/\1 not found/p')
done
for soname in "${!carried[@]}"; do
  cp -L "${carried[$soname]}" "$kit/lib/$soname"
done
# BLIS is dlopened (no NEEDED entry), from the exact file CMake found.
blis="$(sed -n 's/^DMLP_BLIS_LIBRARY:FILEPATH=//p' "$build/CMakeCache.txt")"
cp -L "$blis" "$kit/lib/libblis.so.4"
# ldd's closure names libcublasLt (which libcublas loads) with the major
# version this build links, so the runner checks each one the device must supply.
printf '%s\n' "${!device_libs[@]}" | sort -u >"$kit/lib/DEVICE_LIBS"
chmod 644 "$kit/lib/"*

cp "$reference_dir"/* "$kit/reference/"
install -m 755 "$script_dir/run_gpu_checks.sh" "$script_dir/python_jax_cuda.sh" \
  "$script_dir/digest_row.sh" "$script_dir/freeze_row.sh" "$script_dir/fidelity_row.sh" \
  "$kit/tests/gpu/"
install -m 644 "$script_dir/run_gpu_checks.py" "$script_dir"/gpu_check_*.py "$script_dir/compare_losses.py" \
  "$script_dir/fidelity_jax.py" "$kit/tests/gpu/"
# fidelity_jax.py imports it from ../data, as in the repository.
install -m 644 "$repo/tests/data/reference_draws.py" "$kit/tests/data/"

# CRIU for the freeze row: the project's helper (tools/criu.sh) bundles criu with its
# own loader and libraries, and names dmlp's flags in one place.
criu_note="none ($criu_helper not found: the freeze row will SKIP)"
if [ -x "$criu_helper" ]; then
  "$criu_helper" --bundle "$kit/criu" >&2 || die "$criu_helper --bundle $kit/criu failed"
  # The helper copies every library of criu's packages (26 MB, version links
  # kept); the kit keeps what criu loads (the loader's own list) and
  # libgcc_s (glibc dlopens it), as plain files: a carry may drop links.
  criu_root="$kit/criu/criu-root"
  needed="$("$criu_root/lib/ld-linux-x86-64.so.2" --library-path "$criu_root/lib" --list \
             "$criu_root/bin/criu" | sed -n 's|.*=> .*/criu-root/lib/\([^ ]*\) .*|\1|p' | tr '\n' ' ')"
  [ -n "$needed" ] || die "the bundled criu's loader lists no libraries"
  mkdir "$criu_root/lib.kept"
  for library in $needed ld-linux-x86-64.so.2 libgcc_s.so.1; do
    [ -e "$criu_root/lib/$library" ] && cp -L "$criu_root/lib/$library" "$criu_root/lib.kept/$library"
  done
  rm -rf "${criu_root:?}/lib"
  mv "$criu_root/lib.kept" "$criu_root/lib"
  "$kit/criu/criu" --version >/dev/null || die "the bundled criu does not run with the libraries kept"
  if [ ! -s "$kit/criu/dmlp-dump-flags" ] || [ ! -s "$kit/criu/dmlp-restore-flags" ]; then
    die "$criu_helper --bundle wrote no dmlp-dump-flags / dmlp-restore-flags"
  fi
  criu_note="$("$kit/criu/criu" --version | tr '\n' ' ' | sed 's/ *$//'); dump flags: $(cat "$kit/criu/dmlp-dump-flags")"
fi
install -m 755 "$repo/bench/reference/run_reference.sh" "$kit/bench/reference/"

# ---- describe and check the size ----------------------------------------------
# "2.28.9" from the nccl.h the build used (NCCL_MAJOR/MINOR/PATCH).
nccl_header_version() {
  local header
  header="$(sed -n 's/^DMLP_NCCL_INCLUDE_DIR:PATH=//p' "$build/CMakeCache.txt")/nccl.h"
  awk '/^#define NCCL_(MAJOR|MINOR|PATCH) / { v[$2] = $3 }
       END { if (length(v) == 3) printf "%s.%s.%s", v["NCCL_MAJOR"], v["NCCL_MINOR"], v["NCCL_PATCH"]; else printf "unknown" }' "$header" 2>/dev/null || echo unknown
}
size_kib="$(du -sk "$kit" | cut -f1)"
{
  echo "dmlp GPU kit (tests/gpu/make_kit.sh)"
  echo "commit: $(git -C "$repo" rev-parse HEAD 2>/dev/null || echo unknown)$(git -C "$repo" diff --quiet HEAD 2>/dev/null || echo ' (with local changes)')"
  echo "made: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "nvcc: $("$nvcc_path" --version | tail -1)"
  echo "host compiler: $(c++ --version | head -1)"
  echo "architectures: sm_89 sm_90"
  echo "nccl header: $(nccl_header_version)"
  echo "criu: $criu_note"
  echo "device must supply: $(tr '\n' ' ' <"$kit/lib/DEVICE_LIBS")"
  echo "size: $((size_kib / 1024)) MiB"
  echo
  described=(bin lib reference tests bench)
  [ -d "$kit/criu" ] && described+=(criu)
  (cd "$kit" && find "${described[@]}" -type f -print0 | sort -z | xargs -0 sha256sum)
} >"$kit/KIT.txt"
echo "make_kit.sh: $kit: $((size_kib / 1024)) MiB, carries: ${!carried[*]} libblis.so.4; criu: $criu_note" >&2
[ "$size_kib" -le $((max_mib * 1024)) ] || die "the kit is $((size_kib / 1024)) MiB, over KIT_MAX_MIB=$max_mib"
