"""The reference job's random draws, written once: its keys, its samples and its
initial parameters, as shared/reference/train.py computes them.

Two scripts ask jax for these and must ask the same question:
  tests/data/jax_vectors.py   dmlp's known answers (jax on the CPU)
  tests/gpu/fidelity_jax.py   the GPU kit's fidelity row (jax on XLA:GPU and
                              on XLA:CPU, against dmlp's own draws)
The GPU kit carries this file at the same path (tests/gpu/make_kit.sh), so
fidelity_jax.py finds it beside its own folder in both layouts.

train.py's code, which this repeats (change both or neither):
  init_key, data_key = jax.random.split(jax.random.key(seed))
  params = MLP(...).init(init_key, jnp.zeros((1, features)))["params"]
  key = fold_in(fold_in(data_key, step), microbatch)
  image_key, label_key = split(fold_in(key, index))
  sample = normal(image_key, (features,)), randint(label_key, (), 0, classes)
It imports jax: the caller sets JAX_PLATFORMS (and the like) before importing it.
"""

import jax
import jax.numpy as jnp
import numpy as np
from flax import linen as nn


def check_config():
    """The settings train.py runs with and dmlp's definition assumes; an error otherwise."""
    if not jax.config.jax_threefry_partitionable or jax.config.jax_enable_x64:
        raise RuntimeError("reference draws need jax_threefry_partitionable on and "
                           "jax_enable_x64 off (train.py's settings)")


class MLP(nn.Module):
    """train.py's MLP (the same module tree, so the same flax scope names and rngs)."""
    width: int
    layers: int
    classes: int

    @nn.compact
    def __call__(self, inputs):
        for _ in range(self.layers):
            inputs = nn.relu(nn.Dense(self.width)(inputs))
        return nn.Dense(self.classes)(inputs)


def keys(seed):
    """(init_key, data_key) of SEED."""
    init_key, data_key = jax.random.split(jax.random.key(seed))
    return init_key, data_key


def samples(seed, features, classes, step, microbatch, indices):
    """train.py's local_batch for the given global sample indices (its sample(),
    vmapped, jitted): (inputs [n, features] float32, labels [n] int32) as numpy."""
    _, data_key = keys(seed)

    @jax.jit
    def local_batch(step, microbatch, indices):
        key = jax.random.fold_in(jax.random.fold_in(data_key, step), microbatch)

        def sample(index):
            image_key, label_key = jax.random.split(jax.random.fold_in(key, index))
            return (jax.random.normal(image_key, (features,)),
                    jax.random.randint(label_key, (), 0, classes))

        return jax.vmap(sample)(indices)

    inputs, labels = local_batch(step, microbatch, jnp.asarray(indices, jnp.int32))
    return np.asarray(inputs), np.asarray(labels)


def init_params(seed, features, width, layers, classes):
    """model.init's parameter tree ({"Dense_k": {"bias", "kernel"}})."""
    init_key, _ = keys(seed)
    return MLP(width, layers, classes).init(init_key, jnp.zeros((1, features)))["params"]


def flat_params(params):
    """The leaves in jax's tree order, raveled and joined: dmlp's canonical
    params block (common/state_layout.h: Dense_k sorted as strings, bias
    before kernel, kernel [in][out] row-major)."""
    return np.concatenate([np.asarray(leaf, np.float32).ravel()
                           for leaf in jax.tree.leaves(params)])
