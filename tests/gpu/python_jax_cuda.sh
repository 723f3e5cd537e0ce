#!/usr/bin/env bash
# The Python that bench/reference/run_reference.sh starts (REFERENCE_PYTHON),
# with JAX on the GPU: run_reference.sh exports JAX_PLATFORMS=cpu for its CPU
# measurements; this wrapper overrides it for the GPU check. DMLP_GPU_PYTHON
# names the interpreter that has jax, flax and optax (default: python3).
export JAX_PLATFORMS=cuda
exec "${DMLP_GPU_PYTHON:-python3}" "$@"
