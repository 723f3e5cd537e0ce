#!/usr/bin/env bash
# Creates the virtualenv that runs the reference JAX job on the CPU (used by
# run_reference.sh and to regenerate tests/fixtures/reference-*). The versions are
# those of reference/spec.json, CPU wheels instead of jax[cuda12]; they are the
# versions the checked-in fixtures were produced with.
# Usage: setup_venv.sh [VENV_DIR]   (default: <repo>/.venv-ref, git-ignored)
# PYTHON selects the interpreter (default python3; 3.11 was used).
set -euo pipefail

script_dir="$(cd "$(dirname "$0")" && pwd)"
repo_root="$(cd "$script_dir/../.." && pwd)"
venv_dir="${1:-$repo_root/.venv-ref}"
python_bin="${PYTHON:-python3}"

packages=(
  "jax==0.10.2"
  "jaxlib==0.10.2"
  "flax==0.12.5"
  "optax==0.2.6"
  "numpy==2.2.6"
  "orbax-checkpoint==0.12.6"
)

"$python_bin" -m venv "$venv_dir"
"$venv_dir/bin/pip" install --quiet --disable-pip-version-check "${packages[@]}"
"$venv_dir/bin/python" - <<'EOF'
import flax, jax, jaxlib, numpy, optax
print(f"reference venv: jax {jax.__version__} jaxlib {jaxlib.__version__} "
      f"flax {flax.__version__} optax {optax.__version__} numpy {numpy.__version__} "
      f"cpu_collectives {jax.config.jax_cpu_collectives_implementation}")
EOF
