#!/usr/bin/env bash
# Rehearses the GPU kit without a GPU: proves that the kit
# (tests/gpu/make_kit.sh) carries everything its programs load except what
# the device supplies, by running it in a bare Debian 12 root (debootstrap
# --variant=minbase: no Gloo, BLIS, yaml-cpp, OpenSSL, libgomp, Python, CUDA)
# with only the kit copied in:
#   1. the root holds none of the kit's packages;
#   2. without cuBLAS/NCCL: ldd misses exactly the device's sonames
#      (lib/DEVICE_LIBS), and run_gpu_checks.sh --kit fails with "device
#      libraries FAIL not found: ..." (no loader error);
#   3. with this machine's cuBLAS/NCCL mounted where the device image keeps its
#      Python packages (/opt/torch/.venv/.../site-packages/nvidia/cu13/lib):
#      ldd resolves everything; dmlp-launch runs 2 ranks of dmlp-train
#      (PLATFORM=cpu, BLIS from the kit: the fingerprint names /kit/lib/...),
#      dmlp-verify says PASS; cuda_test passes with its GPU cases skipped;
#      run_gpu_checks.sh --kit finds the libraries, then fails with "no GPU"
#      and dmlp-train's own error, never a loader error; the rows that need a
#      GPU (digest threads, freeze cuda, fidelity jax) SKIP with a reason;
#   3b. dmlp_draws (the fidelity row's dmlp half) refuses --platform cuda in
#      its own words (CUDA_UNAVAILABLE, exit 3) and writes --platform cpu; the
#      kit's fidelity_jax.py, run here with the reference's venv (the root has
#      no Python), finds those draws bit-identical to jax on the CPU;
#   3c. every row of the runner, in the root, against stand-ins for the kit's
#      programs on a GPU machine (kit_rows_test.py): a planted fault makes each
#      FAIL, none makes it PASS or SKIP; lib/DEVICE_LIBS is what ldd's closure
#      of the programs names with cuBLAS and NCCL present;
#   4. the freeze row's CPU half (tests/gpu/freeze_row.sh, PLATFORM=cpu, 2
#      ranks): the kit's own CRIU (criu/) dumps the job from the launcher down,
#      keeps it down past its heartbeat, restores it, and the job finishes
#      PASS, byte-identical, each rank's restore named. It must PASS (a kit
#      made without tools/criu.sh has no criu/ and fails here).
# Usage (as root): tests/gpu/rehearse_kit.sh KIT_DIR
# Environment (optional):
#   KIT_REHEARSAL_ROOT   the root (default /var/tmp/dmlp-rehearsal/bookworm-kit-root,
#                        made with debootstrap on first use, about 200 MB, then reused)
#   DEBIAN_MIRROR        for debootstrap (default http://deb.debian.org/debian)
#   DEVICE_LIB_SOURCE    where cuBLAS/NCCL are here (default /usr/local/cuda/lib64)
#   KIT_REHEARSAL_PORT   first coordinator port (default 13150; 20 are used)
#   KIT_REHEARSAL_PYTHON a self-contained Python prefix (default this machine's
#                        python3's, not /usr) that the runner gets on PATH, as the
#                        device has one: the root itself has no Python
# Leaves nothing mounted and nothing running, on every exit path.
# Exit status: 0 when every check passed, 1 when one failed, 2 when it could not run.
set -euo pipefail
export LC_ALL=C

die() { echo "rehearse_kit.sh: error: $*" >&2; exit 2; }
[ $# -eq 1 ] || die "usage: tests/gpu/rehearse_kit.sh KIT_DIR"
[ -f "$1/lib/DEVICE_LIBS" ] || die "$1 is not a kit (no lib/DEVICE_LIBS; make one with tests/gpu/make_kit.sh)"
kit="$(cd "$1" && pwd)"
root="${KIT_REHEARSAL_ROOT:-/var/tmp/dmlp-rehearsal/bookworm-kit-root}"
device_lib_source="${DEVICE_LIB_SOURCE:-/usr/local/cuda/lib64}"
port="${KIT_REHEARSAL_PORT:-13150}"
device_site=opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib
kit_python="${KIT_REHEARSAL_PYTHON:-$(python3 -c 'import sys; print(sys.base_prefix)' 2>/dev/null || true)}"
[ "$(id -u)" -eq 0 ] || die "needs root (chroot, mount)"
for tool in debootstrap chroot mount umount mountpoint; do
  command -v "$tool" >/dev/null || die "$tool not found"
done
# Mounted at its own path (a pyenv-style build finds libpython by an absolute
# RUNPATH); a system one (/usr) would hide the root's own /usr.
case "$kit_python" in
  "" | /usr | /usr/*) die "no self-contained Python prefix for the runner (set KIT_REHEARSAL_PYTHON)" ;;
esac
[ -x "$kit_python/bin/python3" ] || die "no $kit_python/bin/python3 (set KIT_REHEARSAL_PYTHON)"
started=$SECONDS

if [ ! -d "$root" ]; then
  echo "rehearse_kit.sh: making $root (debootstrap --variant=minbase bookworm)" >&2
  rm -rf "$root.partial"
  mkdir -p "$(dirname "$root")"
  debootstrap --variant=minbase bookworm "$root.partial" "${DEBIAN_MIRROR:-http://deb.debian.org/debian}" >&2
  mv "$root.partial" "$root"
fi

mounts=()
cleanup() {
  local index
  for ((index = ${#mounts[@]} - 1; index >= 0; index--)); do
    umount "${mounts[index]}" 2>/dev/null || umount -l "${mounts[index]}" || true
  done
  mounts=()
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
mount_at() {  # mount_at TARGET MOUNT-ARGS...
  local target="$1"
  shift
  mkdir -p "$target"
  mountpoint -q "$target" && die "$target is already a mount point (an earlier rehearsal still running?)"
  mount "$@" "$target"
  mounts+=("$target")
}
in_root() {  # a clean environment: nothing of this machine's leaks in
  chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LC_ALL=C "$@"
}

failures=0
check() {  # check NAME CONDITION-STATUS DETAIL
  if [ "$2" -eq 0 ]; then echo "PASS  $1: $3"; else echo "FAIL  $1: $3"; failures=$((failures + 1)); fi
}

rm -rf "$root/kit" "$root/out" "$root/tmp/"*
cp -a "$kit" "$root/kit"
# CRIU (the freeze row) needs the root to be a mount point of its own, to
# place the mounts under it, and /dev/pts for /dev/ptmx (criu check).
mount_at "$root" --bind "$root"
mount_at "$root/proc" -t proc proc
mount_at "$root/dev" --bind /dev
mount_at "$root/dev/pts" --bind /dev/pts
mount_at "$root$kit_python" --bind -o ro "$kit_python"
mapfile -t device_libs <"$root/kit/lib/DEVICE_LIBS"

# ---- 1. a bare root -----------------------------------------------------------
# shellcheck disable=SC2016  # dpkg-query's format, not the shell's
present="$(in_root dpkg-query -W -f='${Package} ${Status}\n' 2>/dev/null |
           awk '/ installed$/ && $1 ~ /^(python3|libgloo|libblis|libyaml-cpp|libssl|libgomp|libhiredis|libibverbs|libnl-|libcublas|libnccl|libcudart|nvidia)/ { printf "%s ", $1 }')"
# shellcheck disable=SC2016  # expanded by the root's sh
check "bare root" "$([ -z "$present" ] && echo 0 || echo 1)" \
  "$(in_root sh -c '. /etc/os-release; echo "$PRETTY_NAME"'), $(in_root dpkg-query -W -f='.\n' | wc -l) packages${present:+; holds $present}"

unresolved() {  # the sonames ldd cannot resolve for every kit program, sorted
  local program
  for program in "$root"/kit/bin/*; do
    in_root env ${1:+LD_LIBRARY_PATH=$1} ldd "/kit/bin/${program##*/}" 2>&1 | awk '/not found/ { print $1 }'  || true
  done | sort -u | tr '\n' ' '
}
runner() {  # runner OUT_NAME [VAR=VALUE...]: run_gpu_checks.sh --kit in the root, python3 on PATH; its status
  local out="$1"
  shift
  in_root env OUT="/out/$out" GPU_CHECK_PORT_BASE="$port" PATH="$kit_python/bin:/usr/sbin:/usr/bin:/sbin:/bin" "$@" \
    timeout -k 5 300 bash /kit/tests/gpu/run_gpu_checks.sh --kit /kit >"$root/out-$out.console" 2>&1
}
loader_errors() {  # the loader's complaints in the runner's output and logs, if any
  # (cuda_freeze's FREEZE_UNSUPPORTED quotes dlopen's words for a missing
  # libcuda: the program's own refusal, not a loader error)
  { cat "$root/out-$1.console"; tar -xzOf "$root/out/$1/gpu-checks-logs.tar.gz" 2>/dev/null; } |
    grep -v FREEZE_UNSUPPORTED | grep -m3 -E 'error while loading shared libraries|cannot open shared object|symbol lookup error' || true
}

# ---- 2. without the device's libraries ----------------------------------------
# ldd names only the first missing level (libcublasLt hides behind libcublas):
# every unresolved soname must be a device one, and cuBLAS and NCCL must be among them.
missing="$(unresolved "")"
foreign=""
for soname in $missing; do
  printf '%s\n' "${device_libs[@]}" | grep -qxF "$soname" || foreign+=" $soname"
done
check "ldd, no cuBLAS/NCCL" \
  "$([ -z "$foreign" ] && [[ " $missing" == *" libcublas.so."* && " $missing" == *" libnccl.so."* ]] && echo 0 || echo 1)" \
  "unresolved: ${missing:-none}${foreign:+; not from the device:$foreign} (the device supplies: ${device_libs[*]})"
rc=0
runner no-device-libs || rc=$?
table="$(cat "$root/out/no-device-libs/gpu-checks-table.txt" 2>/dev/null || true)"
errors="$(loader_errors no-device-libs)"
check "runner, no cuBLAS/NCCL" \
  "$([ "$rc" -eq 1 ] && grep -q 'device libraries .*FAIL  *[0-9]*  *not found: libcublas' <<<"$table" && [ -z "$errors" ] && echo 0 || echo 1)" \
  "rc=$rc, $(grep -m1 'device libraries' <<<"$table" | cut -c1-160)${errors:+; loader: $errors}"

# ---- 3. with them, where the device image keeps them --------------------------
for soname in "${device_libs[@]}"; do
  [ -e "$device_lib_source/$soname" ] || die "no $soname in $device_lib_source (set DEVICE_LIB_SOURCE)"
done
mount_at "$root/$device_site" --bind -o ro "$device_lib_source"
missing="$(unresolved "/$device_site")"
check "ldd, with cuBLAS/NCCL" "$([ -z "$missing" ] && echo 0 || echo 1)" "unresolved: ${missing:-none}"
# lib/DEVICE_LIBS must be what the programs load from the device, as ldd's
# closure names it with cuBLAS and NCCL present (libcublasLt behind libcublas,
# with this build's major version), not a list written by hand.
loaded="$(for program in "$root"/kit/bin/*; do
            in_root env LD_LIBRARY_PATH="/$device_site" ldd "/kit/bin/${program##*/}" 2>/dev/null |
              awk '$1 ~ /^(libcublas|libcublasLt|libnccl)\.so/ { print $1 }' || true
          done | sort -u | tr '\n' ' ')"
listed="$(sort -u "$root/kit/lib/DEVICE_LIBS" | tr '\n' ' ')"
check "DEVICE_LIBS = what the programs load" "$([ -n "$loaded" ] && [ "$loaded" = "$listed" ] && echo 0 || echo 1)" \
  "DEVICE_LIBS: ${listed:-none}; ldd: ${loaded:-none}"

rc=0
# DMLP_CPU_GEMM=blis: the job checks that the kit's BLIS, beside the program, loads
# (dmlp's own SGEMM is the default and needs no file).
in_root env PLATFORM=cpu NUM_PROCESSES=2 STEPS=3 SEED=42 BATCH=16 MICROBATCHES=2 LEARNING_RATE=0.001 \
  FEATURES=8 WIDTH=16 LAYERS=2 CLASSES=4 DATA_SHARDS=2 OUT_DIR=/out/cpu-job DMLP_CPU_GEMM=blis \
  COORDINATOR_PORT="$((port + 19))" HEARTBEAT_TIMEOUT_SECONDS=60 LD_LIBRARY_PATH="/$device_site" \
  timeout -k 5 120 /kit/bin/dmlp-launch --grace 5 >"$root/out-cpu-job.console" 2>&1 || rc=$?
verdict="$(in_root /kit/bin/dmlp-verify /out/cpu-job 2>&1 | tail -n 1 || true)"
blis="$(sed -n 's/.*"file": "\([^"]*blis[^"]*\)".*/\1/p' "$root/out/cpu-job/result.json" 2>/dev/null || true)"
check "cpu job, 2 ranks" "$([ "$rc" -eq 0 ] && [ "$verdict" = PASS ] && [ "$blis" = /kit/lib/libblis.so.4 ] && echo 0 || echo 1)" \
  "dmlp-launch rc=$rc, dmlp-verify $verdict, BLIS ${blis:-not in the fingerprint}$([ "$rc" -eq 0 ] || echo "; $(tail -n 2 "$root/out-cpu-job.console" | tr '\n' ' ')")"

rc=0
in_root env LD_LIBRARY_PATH="/$device_site" timeout -k 5 300 /kit/bin/cuda_test >"$root/out-cuda-test.console" 2>&1 || rc=$?
summary="$(grep -E '^\[  (PASSED|SKIPPED|FAILED)  ?\] [0-9]+ test' "$root/out-cuda-test.console" | tr '\n' ' ' || true)"
check "cuda_test, no GPU" "$([ "$rc" -eq 0 ] && grep -q SKIPPED <<<"$summary" && echo 0 || echo 1)" "rc=$rc, $summary"

rc=0
runner no-gpu || rc=$?
table="$(cat "$root/out/no-gpu/gpu-checks-table.txt" 2>/dev/null || true)"
errors="$(loader_errors no-gpu)"
check "runner, no GPU" \
  "$([ "$rc" -eq 1 ] && grep -q 'device libraries .*PASS' <<<"$table" && grep -q '^gpu  *FAIL  *[0-9]*  *no GPU' <<<"$table" &&
     grep -q 'cuda job .*dmlp-train: error: ' <<<"$table" && grep -q '^digest threads  *SKIP  *[0-9]*  *no GPU' <<<"$table" &&
     grep -q '^freeze cuda  *SKIP  *[0-9]*  *rc=3: cuda_freeze: error: FREEZE_UNSUPPORTED' <<<"$table" &&
     grep -q '^fidelity jax  *SKIP' <<<"$table" && [ -z "$errors" ] &&
     grep -q '^## criu check' "$root/out/no-gpu/preflight.txt" && tail -n 1 "$root/out-no-gpu.console" | grep -qx 'verdict: FAIL' &&
     echo 0 || echo 1)" \
  "rc=$rc; $(grep -E '^(gpu|cuda job|digest threads|freeze cuda|fidelity jax) ' <<<"$table" | tr -s ' ' | tr '\n' ';' | cut -c1-600)${errors:+; loader: $errors}"

# ---- 3b. the fidelity row's dmlp half, and its CPU half --------------------------
# In the root: dmlp_draws --platform cuda refuses in its own words (exit 3,
# CUDA_UNAVAILABLE: the row's SKIP, never a loader error), --platform cpu
# writes dmlp's draws at the spec's sizes. The root has no python3: the kit's
# own fidelity_jax.py (which imports ../data/reference_draws.py, as the kit
# lays it out) then runs here, with the reference's venv (tools/reference-venv.sh),
# and must find those draws bit-identical to jax on the CPU.
rc=0
in_root env LD_LIBRARY_PATH="/$device_site" timeout -k 5 60 /kit/bin/dmlp_draws --platform cuda /out/draws-cuda \
  >"$root/out-draws-cuda.console" 2>&1 || rc=$?
check "dmlp_draws cuda, no GPU" \
  "$([ "$rc" -eq 3 ] && grep -q 'dmlp_draws: error: CUDA_UNAVAILABLE' "$root/out-draws-cuda.console" && echo 0 || echo 1)" \
  "rc=$rc: $(tail -n 1 "$root/out-draws-cuda.console")"
rc=0
in_root env LD_LIBRARY_PATH="/$device_site" timeout -k 5 120 /kit/bin/dmlp_draws --platform cpu /out/draws-cpu \
  >"$root/out-draws-cpu.console" 2>&1 || rc=$?
reference_python="$("$(cd "$(dirname "$0")/../.." && pwd)/tools/reference-venv.sh" --path 2>/dev/null || true)"
if [ "$rc" -ne 0 ]; then
  check "fidelity, cpu half" 1 "dmlp_draws --platform cpu rc=$rc: $(tail -n 1 "$root/out-draws-cpu.console")"
elif [ -z "$reference_python" ]; then
  check "fidelity, cpu half" 1 "no reference python here for jax (run tools/reference-venv.sh once)"
else
  rc=0
  timeout -k 5 300 "$reference_python" "$root/kit/tests/gpu/fidelity_jax.py" --device cpu \
    --dmlp-draws "$root/out/draws-cpu" --dmlp-platform cpu >"$root/out-fidelity.console" 2>&1 || rc=$?
  check "fidelity, cpu half" \
    "$([ "$rc" -eq 0 ] && grep -q 'vs jax cpu: bit-identical' "$root/out-fidelity.console" && echo 0 || echo 1)" \
    "rc=$rc: $(sed 's/^fidelity //' "$root/out-fidelity.console" | tail -n 4 | tr '\n' ';' | cut -c1-400)"
fi
rm -rf "$root/out/draws-cpu"

# ---- 3c. every row can pass and can fail, with a GPU present (stand-ins) ------
# The kit's own runner modules, in the root, against stand-ins for the kit's
# programs on a GPU machine (tests/e2e/gpu/kit_rows_test.py, ctest
# e2e.gpu.KitRows): each row once with a planted fault (FAIL) and once without
# (PASS or SKIP). What the rows need of the machine (bash, coreutils, setsid,
# cmp, tar) is the bare root's.
repo="$(cd "$(dirname "$0")/../.." && pwd)"
rm -rf "$root/kit-rows" && mkdir -p "$root/kit-rows"
cp "$repo/tests/e2e/gpu/kit_rows_test.py" "$repo/tests/e2e/gpu/kit_standins.py" "$root/kit-rows/"
rc=0
in_root env DMLP_SOURCE_DIR=/kit PATH="$kit_python/bin:/usr/sbin:/usr/bin:/sbin:/bin" TMPDIR=/tmp \
  PYTHONDONTWRITEBYTECODE=1 sh -c 'cd /kit-rows && timeout -k 5 300 python3 -m unittest -v kit_rows_test.KitRows' \
  >"$root/out-kit-rows.console" 2>&1 || rc=$?
check "every row passes and fails (stand-ins)" "$([ "$rc" -eq 0 ] && echo 0 || echo 1)" \
  "rc=$rc: $(grep -E '^(Ran|OK|FAILED)|FAIL:|Error' "$root/out-kit-rows.console" | tr '\n' ' ' | cut -c1-300)"

# ---- 4. the freeze row, CPU half ----------------------------------------------
# The root has no python3 (the port comes from here) and no ps (the row reads /proc).
row="$(in_root env LD_LIBRARY_PATH="/$device_site" FREEZE_ROW_PORT="$((port + 18))" FREEZE_ROW_TIMEOUT=120 \
         timeout -k 5 400 bash /kit/tests/gpu/freeze_row.sh /kit/bin /kit/criu /out/freeze cpu-2-ranks 2 cpu \
         STEPS=200 BATCH=256 MICROBATCHES=2 FEATURES=64 WIDTH=256 LAYERS=2 DATA_SHARDS=2 \
         2>"$root/out-freeze.console" || true)"
check "freeze, cpu job (CRIU)" "$([[ "$row" == PASS* ]] && echo 0 || echo 1)" \
  "${row:-no row: $(tail -n 2 "$root/out-freeze.console" | tr '\n' ' ')}"

echo "rehearse_kit.sh: $failures failed, $((SECONDS - started)) s; root $root, outputs under $root/out"
cleanup
[ "$failures" -eq 0 ]
