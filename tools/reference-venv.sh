#!/usr/bin/env bash
# Makes, once per machine, the minimal virtualenv that runs the reference JAX
# job (bench/reference/setup_venv.sh --minimal: jax, jaxlib, flax, optax, numpy
# at the reference's versions; no orbax, no tensorstore) and prints the path
# of its python. tools/test-all.sh runs it before ctest, so that
# e2e.reference.* (tests/e2e/reference) runs in CI; it needs PyPI the first time.
#   tools/reference-venv.sh           make it if needed (about a minute), print its python
#   tools/reference-venv.sh --path    print its python if it is there, else exit 1
# The venv lives in $DMLP_CACHE_DIR (default ${XDG_CACHE_HOME:-$HOME/.cache}/dmlp)
# under a name made from setup_venv.sh's text and the python version, so a
# change of pins makes a new one. A venv left half-made (no .complete marker)
# is made again; a lock keeps two callers from making it at once.
set -euo pipefail
cd "$(dirname "$0")/.."

python_bin="${PYTHON:-python3}"
setup=bench/reference/setup_venv.sh
cache_dir="${DMLP_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/dmlp}"
key="$({ cat "$setup"; "$python_bin" -c 'import sys; print(sys.version)'; } | sha256sum | cut -c1-12)"
venv="$cache_dir/reference-venv-$key"

if [[ "${1:-}" == --path ]]; then
  [[ -f "$venv/.complete" ]] || exit 1
  echo "$venv/bin/python"
  exit 0
fi
[[ $# -eq 0 ]] || { echo "reference-venv: unknown argument $1 (use --path)" >&2; exit 2; }

mkdir -p "$cache_dir"
exec 9>"$cache_dir/reference-venv.lock"
flock 9
if [[ ! -f "$venv/.complete" ]]; then
  rm -rf "$venv"
  echo "reference-venv: making $venv (pip, from PyPI)" >&2
  started=$SECONDS
  PYTHON="$python_bin" "$setup" --minimal "$venv" >&2
  touch "$venv/.complete"
  echo "reference-venv: made in $((SECONDS - started)) s" >&2
fi
echo "$venv/bin/python"
