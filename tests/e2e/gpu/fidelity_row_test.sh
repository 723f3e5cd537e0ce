#!/usr/bin/env bash
# tests/gpu/fidelity_row.sh (the kit's "fidelity jax" row) without a GPU: its
# CPU half, with the real dmlp_draws and the real jax of the reference's venv
# (tools/reference-venv.sh; DMLP_REFERENCE_PYTHON names it):
#   1. dmlp's CPU draws at the spec's sizes (4096 samples x 512 features, the
#      labels, 9463818 initial parameters) against jax on the CPU: PASS, every
#      value 0 ulp, every label equal, "bit-identical";
#   2. a dmlp_draws whose init.f32 has one bit flipped (a small plan): FAIL,
#      naming init, with a histogram that shows the one value; the same from
#      a dmlp whose definition names other jax/flax versions: INFO, not FAIL;
#   3. a dmlp_draws that cannot reach a GPU (its CUDA_UNAVAILABLE, exit 3): SKIP
#      quoting it; no dmlp_draws at all: FAIL.
# Without the reference's python: exit 77 (SKIP), or a failure when CI is set.
# Usage: fidelity_row_test.sh FIDELITY_ROW_SH DMLP_DRAWS
set -uo pipefail
row="$1" dmlp_draws="$2"
repo="$(cd "$(dirname "$0")/../../.." && pwd)"
python="${DMLP_REFERENCE_PYTHON:-$("$repo/tools/reference-venv.sh" --path 2>/dev/null)}"
if [ -z "$python" ] || [ ! -x "$python" ]; then
  why="no reference python (DMLP_REFERENCE_PYTHON, or tools/reference-venv.sh; tools/test-all.sh makes it)"
  if [ -n "${CI:-}" ]; then echo "FAILED: $why; in CI this check must run"; exit 1; fi
  echo "SKIP: $why"
  exit 77
fi
export DMLP_GPU_PYTHON="$python"
work="$(mktemp -d -t dmlp26-fidelity-row.XXXXXX)"
trap 'rm -rf "$work"' EXIT
failures=0
expect() {  # expect NAME WANTED_REGEX ACTUAL
  if [[ "$3" =~ $2 ]]; then echo "ok: $1"; else echo "FAILED: $1: wanted /$2/, got: $3"; failures=1; fi
}

mkdir -p "$work/real" "$work/flipped" "$work/no-gpu" "$work/none"
ln -s "$dmlp_draws" "$work/real/dmlp_draws"
started=$SECONDS
result="$("$row" "$work/real" "$work/out-real" 300 cpu)"
echo "spec sizes, $((SECONDS - started)) s: $result"
expect "spec sizes: PASS, bit-identical" \
  '^PASS .*dmlp \(cpu\) vs jax cpu: bit-identical \(samples, labels, init\)$' "$result"
expect "spec sizes: every sample 0 ulp" \
  'samples dmlp \(cpu\) vs cpu: 2097152 values: ulp 0: 2097152, 1: 0, 2: 0, 3-15: 0, >=16: 0; max 0' "$result"
expect "spec sizes: every label equal" 'labels dmlp \(cpu\) vs cpu: 4096 of 4096 equal' "$result"
expect "spec sizes: every parameter 0 ulp" \
  'init dmlp \(cpu\) vs cpu: 9463818 values: ulp 0: 9463818, .* max 0' "$result"
expect "the draws are removed afterwards" '^$' "$(find "$work/out-real" -name 'dmlp-draws-*')"

# One bit of one kernel value flipped (the lowest mantissa bit: 1 ulp).
cat >"$work/flipped/dmlp_draws" <<SH
#!/usr/bin/env bash
"$dmlp_draws" "\$@" || exit
dir="\${!#}"
python3 - "\$dir/init.f32" <<'PY'
import sys
path = sys.argv[1]
data = bytearray(open(path, "rb").read())
data[4 * 100] ^= 1
open(path, "wb").write(data)
PY
SH
chmod +x "$work/flipped/dmlp_draws"
result="$(FIDELITY_PLAN="--batch 8 --features 16 --width 32 --layers 2 --classes 5" \
          "$row" "$work/flipped" "$work/out-flipped" 300 cpu)"
echo "one bit flipped: $result"
expect "one bit flipped: FAIL naming init" '^FAIL .*vs jax cpu: DIFFERS in init \(dmlp promises jax 0\.10\.2 / flax 0\.12\.5.s CPU bits\)$' "$result"
expect "one bit flipped: the histogram shows it" 'init dmlp \(cpu\) vs cpu: [0-9]+ values: ulp 0: [0-9]+, 1: 1, 2: 0, 3-15: 0, >=16: 0; max 1' "$result"

# The same flipped bit, from a dmlp whose definition names other versions
# than this jax's: a difference of versions, reported (INFO), not a FAIL.
mkdir -p "$work/other-versions"
cat >"$work/other-versions/dmlp_draws" <<SH
#!/usr/bin/env bash
"$work/flipped/dmlp_draws" "\$@" || exit
echo "jax-0.4.1-threefry/flax-0.8.0-lecun" >"\${!#}/definition.txt"
SH
chmod +x "$work/other-versions/dmlp_draws"
result="$(FIDELITY_PLAN="--batch 8 --features 16 --width 32 --layers 2 --classes 5" \
          "$row" "$work/other-versions" "$work/out-other-versions" 300 cpu)"
echo "other versions: $result"
expect "other versions: INFO naming both" \
  '^INFO .*differs in init, but dmlp promises jax 0\.4\.1 / flax 0\.8\.0.s bits and this machine has jax 0\.10\.2 / flax 0\.12\.5$' "$result"

cat >"$work/no-gpu/dmlp_draws" <<'SH'
#!/usr/bin/env bash
echo "dmlp_draws: error: CUDA_UNAVAILABLE: cudaGetDeviceCount: no CUDA-capable device is detected (cudaErrorNoDevice)" >&2
exit 3
SH
chmod +x "$work/no-gpu/dmlp_draws"
result="$("$row" "$work/no-gpu" "$work/out-no-gpu" 60 gpu)"
expect "no GPU for dmlp: SKIP in its words" '^SKIP dmlp_draws rc=3: dmlp_draws: error: CUDA_UNAVAILABLE' "$result"
result="$("$row" "$work/none" "$work/out-none" 60 gpu)"
expect "no dmlp_draws: FAIL" '^FAIL no dmlp_draws in ' "$result"
exit "$failures"
