#!/usr/bin/env bash
# Runs dmlp-train under every engine the tests know (docs/several-hosts.md):
# Slurm (srun and sbatch on a one-node cluster on localhost), Open MPI's mpirun
# and torchrun, each compared byte for byte with dmlp-launch; and
# torchrun --nnodes 3 across the three-host test cluster (tests/e2e/cluster).
# CI runs the Slurm and Open MPI cases (tools/install-deps.sh installs them);
# torchrun needs PyPI's torch with its CUDA libraries (several GB), so it runs
# here only. Installs what is missing (as root): slurm-wlm, munge and
# openmpi-bin from apt, torch into a venv at $DMLP_TORCH_VENV (default
# /var/tmp/dmlp-torch-venv). Builds the three programs in ./build if needed.
# Exit status: ctest's (0: every engine case passed, none skipped).
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${DMLP_TORCH_VENV:-/var/tmp/dmlp-torch-venv}
torch_version=${DMLP_TORCH_VERSION:-2.15.0}

say() { echo "engines-check: $*" >&2; }

missing=()
for package in slurm-wlm munge openmpi-bin; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if [[ ${#missing[@]} -gt 0 ]]; then
  say "installing ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [[ ! -x "$venv/bin/torchrun" ]]; then
  say "installing torch ${torch_version} into ${venv} (several GB, minutes)"
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install -q "torch==${torch_version}"
fi

if [[ ! -x build/bin/dmlp-train || ! -x build/bin/dmlp-launch || ! -x build/bin/dmlp-verify ]]; then
  cmake -S . -B build -DDMLP_CUDA=OFF -DDMLP_BUILD_BENCH=OFF >/dev/null
  cmake --build build -j "$(nproc)" --target dmlp-train dmlp-launch dmlp-verify
fi
cmake -S . -B build >/dev/null  # registers e2e.engines.* in a build configured before them

started=$(date +%s)
log=$(mktemp)
status=0
DMLP_TORCHRUN="$venv/bin/torchrun" ctest --test-dir build --output-on-failure -V \
  -R '^e2e\.engines\.' --no-tests=error >"$log" 2>&1 || status=$?
cat "$log"
skipped=$(grep -c '(Skipped)' "$log" || true)
rm -f "$log"
# torchrun across three hosts (tests/e2e/cluster; root: network namespaces):
# not a ctest case, so that CI, which has no torch, never skips it.
say "torchrun --nnodes 3 on the test cluster"
DMLP_TORCHRUN="$venv/bin/torchrun" DMLP_BIN_DIR="$PWD/build/bin" \
  DMLP_CLUSTER_REFERENCE="$PWD/build/cluster-reference" PYTHONDONTWRITEBYTECODE=1 \
  python3 tests/e2e/cluster/cluster_e2e.py torchrun || status=$?
say "engine tests took $(( $(date +%s) - started )) s"
if [[ "$status" -eq 0 && "$skipped" -ne 0 ]]; then
  say "${skipped} engine case(s) skipped"
  status=1
fi
exit "$status"
