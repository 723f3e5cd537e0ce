#!/usr/bin/env bash
# Runs every test dmlp has on this machine (the README's test command; .ci/run
# calls it):
#   1. the build with warnings as errors, and all ctest cases (unit, e2e, fixtures);
#   2. the unit tests again under AddressSanitizer + UndefinedBehaviorSanitizer;
#   3. the fuzz targets for a bounded time (clang's libFuzzer);
#   4. shellcheck over every shell script.
# Before step 1 it makes (once per machine, cached) the minimal virtualenv of
# the reference JAX job (tools/reference-venv.sh: pip, from PyPI) that
# e2e.reference.against_reference runs dmlp against.
# Step 1 includes the image and README checks (tests/e2e/image.cmake): spec.json,
# Dockerfile and install-deps agree, run.sh and tools/main-job.sh run the CPU
# job, and every command of README.md and docs/*.md runs (their links lead
# somewhere); and the CRIU cases (tests/e2e/criu.cmake:
# a job frozen and restored for real, as root; tools/criu.sh fetches CRIU 4.2 once),
# and the GPU simulator's (tests/e2e/gpu_sim.cmake: CUDA programs on GPGPU-Sim;
# the ctest fixture e2e.gpu_sim.build runs tools/gpu-sim.sh build, minutes on a
# fresh machine, once: it is cached outside the checkout).
# GPU tests skip themselves without a GPU; on a GPU machine run tests/gpu/run_gpu_checks.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${DMLP_JOBS:-$(nproc)}

tools/install-deps.sh

step() { printf '\n== %s ==\n' "$*"; }

# report_skips CTEST_OUTPUT LAST_TEST_LOG: each ctest case that skipped (the
# "(Skipped)" lines of ctest's output), with the line of its output that says
# why: a newcomer's clone without ../shared or a GPU skips some, and should
# see why without digging through LastTest.log. gtest's GTEST_SKIP puts its
# reason on the line after "FILE:LINE: Skipped"; the Python and shell cases
# print one line with "SKIP" in it.
report_skips() {
  sed -n 's/^[[:space:]]*[0-9]* - \(.*\) (Skipped)$/\1/p' "$1" | sort -u >"$1.skipped"
  [[ -s "$1.skipped" ]] || return 0
  echo "skipped, and why:"
  awk -v list="$1.skipped" '
    BEGIN { while ((getline line < list) > 0) wanted[line] = 1 }
    /^[0-9]+\/[0-9]+ Test: / { name = $0; sub(/^[0-9]+\/[0-9]+ Test: /, "", name); said = !(name in wanted); next }
    said { next }
    next_is_reason { print "  " name ": " $0; said = 1; next_is_reason = 0; next }
    /: Skipped$/ { next_is_reason = 1; next }
    /SKIP/ { print "  " name ": " $0; said = 1 }
  ' "$2"
}

step "the reference JAX job's python (tools/reference-venv.sh)"
DMLP_REFERENCE_PYTHON="$(tools/reference-venv.sh)"
export DMLP_REFERENCE_PYTHON
echo "reference python: ${DMLP_REFERENCE_PYTHON}"

step "build (Release with debug info, -Werror)"
cmake -S . -B build -DDMLP_WERROR=ON >/dev/null
cmake --build build -j "${jobs}"

step "tests"
# e2e.labels.unit runs ctest itself, which rewrites LastTest.log, where the
# skipped cases' reasons are: it runs after the report.
ctest --test-dir build --output-on-failure -j "${jobs}" -E '^e2e[.]labels[.]' | tee build/ctest-output.txt
report_skips build/ctest-output.txt build/Testing/Temporary/LastTest.log
ctest --test-dir build --output-on-failure -R '^e2e[.]labels[.]'

step "unit tests under ASan + UBSan"
cmake -S . -B build-sanitize -DDMLP_SANITIZE=ON -DDMLP_CUDA=OFF -DDMLP_BUILD_BENCH=OFF \
  -DCMAKE_BUILD_TYPE=Debug >/dev/null
# Only the unit tests: the ctest label `unit` marks every test registered under
# tests/unit/ and the target unit_tests builds their programs (and dmlp-verify,
# which verify_test runs), tests/unit/CMakeLists.txt. The e2e, fixture and image
# cases drive whole programs and scripts; they ran above.
cmake --build build-sanitize -j "${jobs}" --target unit_tests
ctest --test-dir build-sanitize --output-on-failure -j "${jobs}" -L unit


step "fuzzing (bounded)"
tests/fuzz/run.sh

step "shellcheck"
git ls-files '*.sh' .ci/run run.sh | sort -u | xargs shellcheck
echo "test-all: every check passed"
