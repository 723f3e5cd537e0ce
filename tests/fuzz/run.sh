#!/usr/bin/env bash
# Builds dmlp-verify's libFuzzer targets (clang, ASan + UBSan) in a build
# directory of their own and runs each for a bounded time on a seed corpus
# taken from tests/fixtures. Exits non-zero when a target crashes, hangs,
# leaks or trips a sanitizer; the input that did it is kept in
# $BUILD/fuzz-artifacts/.
#
#   tests/fuzz/run.sh            30 s per target
#   FUZZ_SECONDS=300 tests/fuzz/run.sh
#   FUZZ_BUILD_DIR=/tmp/b FUZZ_JOBS=2 tests/fuzz/run.sh
#   FUZZ_CXX=clang++-19 tests/fuzz/run.sh      one compiler, no search
#
# The compiler: the first of clang++ (what tools/install-deps.sh installs:
# 14 on Debian 12, 18 on Ubuntu 24.04, 19 on Debian 13), then clang++-N from
# the newest N, that links a libFuzzer target; its runtime ships apart from
# the compiler (libclang-rt-N-dev), so the link is what is tested.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${FUZZ_BUILD_DIR:-$root/build-fuzz}
seconds=${FUZZ_SECONDS:-30}
jobs=${FUZZ_JOBS:-2}

links_libfuzzer() {
  local probe
  probe=$(mktemp -d)
  printf '%s\n' '#include <cstddef>' '#include <cstdint>' \
    'extern "C" int LLVMFuzzerTestOneInput(const uint8_t*, size_t) { return 0; }' >"$probe/probe.cc"
  if "$1" -fsanitize=fuzzer "$probe/probe.cc" -o "$probe/probe" >/dev/null 2>&1; then
    rm -rf "$probe"
    return 0
  fi
  rm -rf "$probe"
  return 1
}

find_clang() {
  local candidate
  if [ -n "${FUZZ_CXX:-}" ]; then
    echo "$FUZZ_CXX"
    return 0
  fi
  for candidate in clang++ $(compgen -c clang++- | grep -E '^clang\+\+-[0-9]+$' | sort -t- -k2,2nr -u); do
    if command -v "$candidate" >/dev/null && links_libfuzzer "$candidate"; then
      echo "$candidate"
      return 0
    fi
  done
  return 1
}

if ! cxx=$(find_clang); then
  echo "fuzz: no clang++ links libFuzzer targets; tools/install-deps.sh installs clang and its libclang-rt-N-dev" >&2
  exit 1
fi
cc=${cxx/clang++/clang}
echo "fuzz: $("$cxx" --version | head -n 1) ($(command -v "$cxx"))"

cmake -S "$root" -B "$build" \
  -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS=-fsanitize=fuzzer-no-link \
  -DDMLP_FUZZ=ON -DDMLP_SANITIZE=ON -DDMLP_CUDA=OFF -DDMLP_BUILD_BENCH=OFF >/dev/null
cmake --build "$build" --target receipt_fuzz result_fuzz -j"$jobs"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/receipt-seeds" "$work/result-seeds" "$work/receipt" "$work/result" "$build/fuzz-artifacts"
n=0
for file in "$root"/tests/fixtures/*/*.jsonl; do
  if [ ! -f "$file" ] || [ -L "$file" ]; then continue; fi
  cp "$file" "$work/receipt-seeds/$n"
  n=$((n + 1))
done
n=0
for file in "$root"/tests/fixtures/*/result.json "$root"/tests/fixtures/*/result.json.tmp; do
  if [ ! -f "$file" ] || [ -L "$file" ]; then continue; fi
  cp "$file" "$work/result-seeds/$n"
  n=$((n + 1))
done

status=0
for target in receipt result; do
  echo "fuzz: ${target}_fuzz for ${seconds}s"
  if ! ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
      "$build/bin/${target}_fuzz" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
      -max_len=65536 -print_final_stats=1 -artifact_prefix="$build/fuzz-artifacts/${target}-" \
      "$work/$target" "$work/$target-seeds" >"$work/$target.log" 2>&1; then
    echo "fuzz: ${target}_fuzz FAILED; last lines of its log:"
    tail -n 40 "$work/$target.log"
    status=1
  else
    grep -E "stat::number_of_executed_units|cov:" "$work/$target.log" | tail -n 2 || true
  fi
done
exit "$status"
