"""The reference's random samples and initial parameters on XLA:GPU against XLA:CPU.

The production reference runs on XLA:GPU, whose log1p/erf_inv (jax.random.normal,
flax's truncated-normal init) may round differently from XLA:CPU, against which
dmlp's own samples are tested. This computes, with the jax of the machine it runs on,
exactly what reference/train.py computes -- `init_key, data_key = split(key(SEED))`,
the samples of (step, microbatch) with fold_in/split/normal/randint, and
`MLP.init(init_key, zeros)` -- once on the first GPU and once on the CPU, and
prints a histogram of the ulp distances between the two, per quantity:

  fidelity jax 0.10.2 on NVIDIA H200 (gpu) vs cpu, seed 42
  fidelity samples: 2097152 values: ulp 0: 2097150, 1: 2, 2: 0, 3-15: 0, >=16: 0; max 1
  fidelity labels: 4096 of 4096 equal
  fidelity init: 4225034 values: ulp 0: ...

With --dmlp-samples FILE (float32, little-endian, the same values in the same
order: dmlp's own samples, issue 24) it compares those against both.
Exit status: 0 when it measured (the bits may differ: that is the finding),
3 when this machine has no GPU backend for jax (the reason on stderr), 1 on errors.
"""

import argparse
import os
import sys

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
os.environ.pop("JAX_PLATFORMS", None)  # both backends: the GPU's and the CPU's

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from flax import linen as nn  # noqa: E402

jax.config.update("jax_threefry_partitionable", True)


class MLP(nn.Module):
    """reference/train.py's model."""
    width: int
    layers: int
    classes: int

    @nn.compact
    def __call__(self, inputs):
        for _ in range(self.layers):
            inputs = nn.relu(nn.Dense(self.width)(inputs))
        return nn.Dense(self.classes)(inputs)


def compute(device, args):
    """(samples [batch, features] f32, labels [batch] i32, init leaves f32) on `device`."""
    with jax.default_device(device):
        init_key, data_key = jax.random.split(jax.random.key(args.seed))
        model = MLP(args.width, args.layers, args.classes)
        params = model.init(init_key, jnp.zeros((1, args.features)))["params"]

        @jax.jit
        def local_batch(step, microbatch):
            key = jax.random.fold_in(jax.random.fold_in(data_key, step), microbatch)

            def sample(index):
                image_key, label_key = jax.random.split(jax.random.fold_in(key, index))
                return (jax.random.normal(image_key, (args.features,)),
                        jax.random.randint(label_key, (), 0, args.classes))

            return jax.vmap(sample)(jnp.arange(args.batch))

        images, labels = local_batch(args.step, args.microbatch)
        leaves = [np.asarray(leaf) for leaf in jax.tree.leaves(params)]
        return np.asarray(images), np.asarray(labels), np.concatenate([x.ravel() for x in leaves])


def ulps(a, b):
    """|a - b| in units in the last place of float32 (the integer distance on the number line)."""
    def ordered(x):
        bits = np.ascontiguousarray(x, dtype=np.float32).view(np.int32).astype(np.int64)
        return np.where(bits < 0, -(bits & 0x7FFFFFFF), bits)
    return np.abs(ordered(a) - ordered(b))


def histogram(name, a, b):
    distance = ulps(a.ravel(), b.ravel())
    buckets = [("0", distance == 0), ("1", distance == 1), ("2", distance == 2),
               ("3-15", (distance >= 3) & (distance < 16)), (">=16", distance >= 16)]
    counts = ", ".join(f"{label}: {int(mask.sum())}" for label, mask in buckets)
    return f"fidelity {name}: {distance.size} values: ulp {counts}; max {int(distance.max())}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name, default in (("seed", 42), ("batch", 4096), ("features", 512), ("width", 2048),
                          ("layers", 3), ("classes", 10), ("step", 1), ("microbatch", 0)):
        parser.add_argument(f"--{name}", type=int, default=default)
    parser.add_argument("--dmlp-samples", help="dmlp's samples: float32 LE, [batch][features]")
    parser.add_argument("--device", default="gpu", help="the backend compared with the CPU")
    args = parser.parse_args()
    try:
        device = jax.devices(args.device)[0]
    except RuntimeError as error:
        print(f"fidelity_jax: no {args.device} backend: {error}", file=sys.stderr)
        return 3
    cpu = jax.devices("cpu")[0]
    print(f"fidelity jax {jax.__version__} on {device.device_kind} ({device.platform}) vs cpu, "
          f"seed {args.seed}, step {args.step}, microbatch {args.microbatch}", flush=True)
    device_images, device_labels, device_init = compute(device, args)
    cpu_images, cpu_labels, cpu_init = compute(cpu, args)
    print(histogram("samples", device_images, cpu_images))
    print(f"fidelity labels: {int((device_labels == cpu_labels).sum())} of {cpu_labels.size} equal")
    print(histogram("init", device_init, cpu_init))
    if args.dmlp_samples:
        dmlp = np.fromfile(args.dmlp_samples, dtype="<f4")
        if dmlp.size != cpu_images.size:
            print(f"fidelity_jax: {args.dmlp_samples} holds {dmlp.size} values, expected "
                  f"{cpu_images.size}", file=sys.stderr)
            return 1
        print(histogram("dmlp vs cpu samples", dmlp, cpu_images))
        print(histogram(f"dmlp vs {device.platform} samples", dmlp, device_images))
    return 0


if __name__ == "__main__":
    sys.exit(main())
