#!/usr/bin/env bash
# Creates the virtualenv that runs the reference JAX job on the CPU (used by
# run_reference.sh and to regenerate tests/fixtures/reference-*). The versions are
# those of reference/spec.json, CPU wheels instead of jax[cuda12]; they are the
# versions the checked-in fixtures were produced with.
# Usage: setup_venv.sh [--minimal] [VENV_DIR]   (default: <repo>/.venv-ref, git-ignored)
#   --minimal  jax, jaxlib, flax, optax, numpy and only what they import to run
#              train.py: not orbax-checkpoint nor tensorstore, which flax lists
#              as dependencies but train.py never imports (it writes no
#              checkpoint). flax is installed without its dependencies, then
#              the four it imports (msgpack, rich, PyYAML, typing_extensions).
#              tools/reference-venv.sh makes this one for the tests.
# PYTHON selects the interpreter (default python3; 3.11 was used).
set -euo pipefail

script_dir="$(cd "$(dirname "$0")" && pwd)"
repo_root="$(cd "$script_dir/../.." && pwd)"
minimal=0
if [[ "${1:-}" == --minimal ]]; then
  minimal=1
  shift
fi
venv_dir="${1:-$repo_root/.venv-ref}"
python_bin="${PYTHON:-python3}"

# The reference's pins (reference/spec.json).
numeric=(
  "jax==0.10.2"
  "jaxlib==0.10.2"
  "optax==0.2.6"
  "numpy==2.2.6"
)
flax_pin="flax==0.12.5"
# What `import flax.linen` loads besides jax and numpy (flax 0.12.5), at the
# versions the full venv resolved to.
flax_imports=(
  "msgpack==1.2.4"
  "rich==15.0.0"
  "PyYAML==6.0.4"
  "typing_extensions==4.16.0"
)

"$python_bin" -m venv "$venv_dir"
pip=("$venv_dir/bin/pip" install --quiet --disable-pip-version-check)
if [[ "$minimal" -eq 1 ]]; then
  "${pip[@]}" "${numeric[@]}" "${flax_imports[@]}"
  "${pip[@]}" --no-deps "$flax_pin"
else
  "${pip[@]}" "${numeric[@]}" "$flax_pin" "orbax-checkpoint==0.12.6"
fi
"$venv_dir/bin/python" - "$minimal" <<'PY'
import importlib.util, sys
import flax, jax, jaxlib, numpy, optax
from flax import linen  # noqa: F401  (what train.py imports)
if sys.argv[1] == "1":
    extra = [name for name in ("orbax", "tensorstore") if importlib.util.find_spec(name)]
    if extra:
        sys.exit(f"setup_venv.sh: --minimal venv has {extra}")
print(f"reference venv: jax {jax.__version__} jaxlib {jaxlib.__version__} "
      f"flax {flax.__version__} optax {optax.__version__} numpy {numpy.__version__} "
      f"cpu_collectives {jax.config.jax_cpu_collectives_implementation}"
      f"{' (minimal: no orbax, no tensorstore)' if sys.argv[1] == '1' else ''}")
PY
