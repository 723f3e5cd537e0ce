"""The reference's random samples and initial parameters: XLA:GPU, XLA:CPU and dmlp.

The production reference runs on XLA:GPU, whose log1p/erf_inv (jax.random.normal,
flax's truncated-normal init) may round differently from XLA:CPU, whose bits
dmlp promises (trainer/math/sample_math.h; kDataDefinitionId
"jax-0.10.2-threefry/flax-0.12.5-lecun"). This computes, with the jax of the
machine it runs on, exactly what reference/train.py computes
(tests/data/reference_draws.py, which tests/data/jax_vectors.py uses too): the
samples of (step, microbatch), indices 0..BATCH-1, and MLP.init's parameters,
once on the chosen device and once on the CPU, and prints a histogram of the
ulp distances between the two, per quantity:

  fidelity jax 0.10.2 on NVIDIA H200 (gpu) vs cpu, seed 42, step 1, microbatch 0
  fidelity samples gpu vs cpu: 2097152 values: ulp 0: 2097150, 1: 2, 2: 0, 3-15: 0, >=16: 0; max 1
  fidelity labels gpu vs cpu: 4096 of 4096 equal
  fidelity init gpu vs cpu: 9463818 values: ulp 0: ...

With --dmlp-draws DIR (written by the kit's dmlp_draws, tests/gpu/dmlp_draws:
samples.f32, labels.i32, init.f32, little-endian, the same plan) it holds
dmlp's own draws against both, and ends with one line:
  fidelity dmlp (cuda) vs jax cpu: bit-identical (samples, labels, init)
dmlp promises the bits of the jax and flax its definition names
(definition.txt: "jax-0.10.2-threefry/flax-0.12.5-lecun"); a machine whose
jax or flax is another version may compute other bits, which is no fault of
dmlp's: that case is told apart (exit 5).
With --device cpu only the CPU's jax runs (no GPU needed: the row's CPU half).
Exit status: 0 when it measured (jax's GPU bits may differ from its CPU's:
that is the finding) and dmlp's draws, if given, are jax's CPU bits; 4 when
dmlp's draws differ from jax on the CPU at the definition's versions (dmlp's
promise broken: the row FAILs); 5 when they differ and this jax or flax is
not the definition's version (the row reports it); 3 when this machine has
no such backend for jax (the reason on stderr); 1 on other errors.
"""

import argparse
import os
import re
import sys
from pathlib import Path

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
os.environ.pop("JAX_PLATFORMS", None)  # both backends: the GPU's and the CPU's

import jax  # noqa: E402
import numpy as np  # noqa: E402

# tests/data/ in the repository and in the kit alike (make_kit.sh carries it).
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "data"))
import reference_draws  # noqa: E402

jax.config.update("jax_threefry_partitionable", True)
PLAN = (("seed", 42), ("batch", 4096), ("features", 512), ("width", 2048), ("layers", 3),
        ("classes", 10), ("step", 1), ("microbatch", 0))


def compute(device, args):
    """(samples [batch, features] f32, labels [batch] i32, init f32 canonical) on `device`."""
    with jax.default_device(device):
        images, labels = reference_draws.samples(args.seed, args.features, args.classes,
                                                 args.step, args.microbatch, range(args.batch))
        params = reference_draws.init_params(args.seed, args.features, args.width, args.layers,
                                             args.classes)
        return images, labels, reference_draws.flat_params(params)


def ulps(a, b):
    """|a - b| in units in the last place of float32 (the integer distance on the number line)."""
    def ordered(x):
        bits = np.ascontiguousarray(x, dtype=np.float32).view(np.int32).astype(np.int64)
        return np.where(bits < 0, -(bits & 0x7FFFFFFF), bits)
    return np.abs(ordered(a) - ordered(b))


def labels_line(name, a, b):
    return f"fidelity {name}: {int((a == b).sum())} of {b.size} equal"


def histogram(name, a, b):
    distance = ulps(a.ravel(), b.ravel())
    buckets = [("0", distance == 0), ("1", distance == 1), ("2", distance == 2),
               ("3-15", (distance >= 3) & (distance < 16)), (">=16", distance >= 16)]
    counts = ", ".join(f"{label}: {int(mask.sum())}" for label, mask in buckets)
    return f"fidelity {name}: {distance.size} values: ulp {counts}; max {int(distance.max())}"


def read_dmlp_draws(directory, like):
    """dmlp_draws' files as arrays shaped like jax's; an error naming the file otherwise."""
    arrays = []
    for name, dtype, reference in zip(("samples.f32", "labels.i32", "init.f32"),
                                      ("<f4", "<i4", "<f4"), like):
        values = np.fromfile(Path(directory) / name, dtype=dtype)
        if values.size != reference.size:
            raise ValueError(f"{directory}/{name} holds {values.size} values, expected "
                             f"{reference.size} (dmlp_draws run with another plan?)")
        arrays.append(values.reshape(reference.shape))
    return arrays


def definition_versions(directory):
    """{"jax": ..., "flax": ...} named by dmlp_draws' definition.txt."""
    text = (Path(directory) / "definition.txt").read_text().strip()
    match = re.fullmatch(r"jax-([0-9.]+)-threefry/flax-([0-9.]+)-lecun", text)
    if not match:
        raise ValueError(f"{directory}/definition.txt: not a definition this script knows: {text!r}")
    return {"jax": match.group(1), "flax": match.group(2)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name, default in PLAN:
        parser.add_argument(f"--{name}", type=int, default=default)
    parser.add_argument("--dmlp-draws", metavar="DIR",
                        help="dmlp_draws' output for the same plan: samples.f32, labels.i32, init.f32")
    parser.add_argument("--dmlp-platform", default="dmlp",
                        help="the platform dmlp_draws ran on, for the output's wording")
    parser.add_argument("--device", default="gpu", help="the backend compared with the CPU")
    args = parser.parse_args()
    try:
        reference_draws.check_config()
        device = jax.devices(args.device)[0]
    except RuntimeError as error:
        print(f"fidelity_jax: no {args.device} backend: {error}", file=sys.stderr)
        return 3
    cpu = jax.devices("cpu")[0]
    on_cpu_only = device.platform == "cpu"
    print(f"fidelity jax {jax.__version__} on {device.device_kind} ({device.platform})"
          f"{'' if on_cpu_only else ' vs cpu'}, seed {args.seed}, step {args.step}, "
          f"microbatch {args.microbatch}", flush=True)
    jax_cpu = compute(cpu, args)
    jax_device = None if on_cpu_only else compute(device, args)
    if jax_device is not None:
        print(histogram(f"samples {device.platform} vs cpu", jax_device[0], jax_cpu[0]))
        print(labels_line(f"labels {device.platform} vs cpu", jax_device[1], jax_cpu[1]))
        print(histogram(f"init {device.platform} vs cpu", jax_device[2], jax_cpu[2]))
    if not args.dmlp_draws:
        return 0
    try:
        dmlp = read_dmlp_draws(args.dmlp_draws, jax_cpu)
        promised = definition_versions(args.dmlp_draws)
    except (OSError, ValueError) as error:
        print(f"fidelity_jax: {error}", file=sys.stderr)
        return 1
    import flax
    here = {"jax": jax.__version__, "flax": flax.__version__}
    who = f"dmlp ({args.dmlp_platform})"
    against = [("cpu", jax_cpu)] + ([] if jax_device is None else [(device.platform, jax_device)])
    for platform, jax_draws in against:
        print(histogram(f"samples {who} vs {platform}", dmlp[0], jax_draws[0]))
        print(labels_line(f"labels {who} vs {platform}", dmlp[1], jax_draws[1]))
        print(histogram(f"init {who} vs {platform}", dmlp[2], jax_draws[2]))
    differing = [name for name, mine, theirs in zip(("samples", "labels", "init"), dmlp, jax_cpu)
                 if mine.tobytes() != np.ascontiguousarray(theirs, mine.dtype).tobytes()]
    if differing and here != promised:
        print(f"fidelity {who} vs jax cpu: differs in {', '.join(differing)}, but dmlp promises "
              f"jax {promised['jax']} / flax {promised['flax']}'s bits and this machine has "
              f"jax {here['jax']} / flax {here['flax']}")
        return 5
    if differing:
        print(f"fidelity {who} vs jax cpu: DIFFERS in {', '.join(differing)} "
              f"(dmlp promises jax {promised['jax']} / flax {promised['flax']}'s CPU bits)")
        return 4
    print(f"fidelity {who} vs jax cpu: bit-identical (samples, labels, init)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
