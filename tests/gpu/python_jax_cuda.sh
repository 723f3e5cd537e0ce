#!/usr/bin/env bash
# The Python that bench/reference/run_reference.sh starts (REFERENCE_PYTHON),
# with JAX on the GPU: run_reference.sh exports JAX_PLATFORMS=cpu for its CPU
# measurements; this wrapper overrides it for the GPU check. DMLP_GPU_PYTHON
# names the interpreter that has jax, flax and optax (default: python3).
# The reference's runtime refuses to start (MEMORY_DEFAULT_OVERRIDDEN) when
# any XLA_PYTHON_CLIENT_* or XLA_CLIENT_MEM_FRACTION is set, as the device
# image may do to size JAX's GPU memory pool: unset them.
while IFS='=' read -r name _; do
  case "$name" in XLA_PYTHON_CLIENT_* | XLA_CLIENT_MEM_FRACTION) unset "$name" ;; esac
done < <(env)
export JAX_PLATFORMS=cuda
exec "${DMLP_GPU_PYTHON:-python3}" "$@"
