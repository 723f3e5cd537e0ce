"""Known answers for dmlp's data and init definition, from the real jax and flax.

dmlp promises the reference job's samples (shared/reference/train.py's
local_batch) and flax's initial parameters bit for bit (trainer/math/sample_math.h).
This script asks jax 0.10.2 / flax 0.12.5 (bench/reference/setup_venv.sh makes
the venv) and writes what they answer:

  jax_vectors.tsv        keys after key/split/fold_in, raw threefry blocks,
                         bits, normals and labels of samples (train.py's code),
                         lecun_normal stddevs, flax's initial parameters
  jax_sample_tables.tsv  SHA-256 of jax's output for ALL 2^23 inputs of
                         normal's and truncated_normal's float step, and the
                         inputs where dmlp differs (with the ulp distance)

Usage (from the repository root):
  .venv-ref/bin/python tests/data/jax_vectors.py [--dmlp-tables BUILD/tests/unit/jax_tables_dump]
Without --dmlp-tables the differing list is not computed (the file says so).
Every value is written as decimal integers or 8 hex digits of float32 bits.
"""

import argparse
import hashlib
import os
import subprocess
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import jax.extend.random as jax_random_ext  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402

import reference_draws  # noqa: E402  (beside this file: train.py's keys, samples and init)

HERE = Path(__file__).resolve().parent
TABLE_SIZE = 1 << 23
EXPECTED = {"jax": "0.10.2", "flax": "0.12.5"}


def hexf(values):
    return ",".join(f"{int(v):08x}" for v in np.asarray(values, np.float32).ravel().view(np.uint32))


def key_words(key):
    return [int(w) for w in np.asarray(jax.random.key_data(key))]


def check_claims(lines):
    """Asserts the reading of jax's source that sample_math.h is written from."""
    k = jax.random.key(5)
    assert key_words(k) == [0, 5]
    assert key_words(jax.random.key(2**32 + 5)) == [0, 5], "key(2^32 + 5) should wrap to key(5)"
    for j, sub in enumerate(jax.random.split(k, 3)):
        assert key_words(sub) == key_words(jax.random.fold_in(k, j))
    lines.append("# checked: key(2^32+5) == key(5); split(k, n)[j] == fold_in(k, j)")


def write_keys(lines):
    for seed in (0, 1, 5, 42, 2**31 - 1, 2**31, 2**32 - 1):
        k = jax.random.key(seed)
        lines.append("\t".join(map(str, ["key", seed, *key_words(k)])))
        for j, sub in enumerate(jax.random.split(k, 3)):
            lines.append("\t".join(map(str, ["split", *key_words(k), j, *key_words(sub)])))
        for data in (0, 1, 7, 2**31 - 1, 2**31, 2**32 - 1):
            lines.append("\t".join(map(str, ["fold_in", *key_words(k), data,
                                              *key_words(jax.random.fold_in(k, np.uint32(data)))])))
    for k0, k1, x0, x1 in ((0, 0, 0, 0), (0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF),
                           (0x13198A2E, 0x03707344, 0x243F6A88, 0x85A308D3), (0, 42, 1, 2**31)):
        y0, y1 = jax_random_ext.threefry_2x32(
            (np.uint32(k0), np.uint32(k1)), np.array([x0, x1], np.uint32))
        lines.append("\t".join(map(str, ["threefry", k0, k1, x0, x1, int(y0), int(y1)])))
    for seed, count in ((5, 37), (2**32 - 1, 9)):
        k = jax.random.key(seed)
        for n, value in enumerate(np.asarray(jax.random.bits(k, (count,), jnp.uint32))):
            lines.append("\t".join(map(str, ["bits", *key_words(k), n, int(value)])))


def write_samples(lines):
    configs = [
        # seed, features, classes, step, microbatch, indices
        (5, 32, 5, 1, 0, range(64)),  # the sanity plan, step 1
        (5, 32, 5, 1, 1, range(64)),
        (42, 37, 10, 3, 2, range(0, 200, 7)),  # FEATURES not a multiple of 4/8/16
        (2**31 - 1, 13, 3, 2**31 - 1, 5, [0, 1, 2**31 - 2, 2**31 - 1]),
        (2**31, 1, 2**31 - 1, 17, 0, [5, 2**20, 2**31 - 7]),
        (2**32 - 1, 21, 7, 100000, 2**20, [3, 4, 123456789]),
        (0, 3, 1, 1, 0, [0, 1]),
        (7, 8, 65537, 2, 0, range(16)),  # span > 2^16: randint's multiplier wraps
    ]
    for seed, features, classes, step, microbatch, indices in configs:
        indices = list(indices)
        inputs, labels = reference_draws.samples(seed, features, classes, step, microbatch,
                                                 indices)
        for row, index in enumerate(indices):
            lines.append("\t".join(map(str, ["sample", seed, features, classes, step, microbatch,
                                              index, int(labels[row]), hexf(inputs[row])])))


def write_init(lines):
    for fan_in in [*range(1, 70), 100, 127, 128, 1000, 4096, 12345, 65536, 1 << 20]:
        variance = jnp.array(1.0 / fan_in, dtype=jnp.float32)  # jax's variance_scaling, eager
        stddev = jnp.sqrt(variance) / jnp.array(.87962566103423978, jnp.float32)
        lines.append("\t".join(map(str, ["stddev", fan_in, hexf(stddev)])))
    for seed, features, width, layers, classes in ((5, 32, 64, 2, 5), (2**31, 13, 6, 3, 10),
                                                   (2**32 - 1, 5, 8, 1, 3)):
        params = reference_draws.init_params(seed, features, width, layers, classes)
        for name in sorted(params):
            for leaf in ("bias", "kernel"):
                lines.append("\t".join(map(str, ["init", seed, features, width, layers, classes,
                                                  f"{name}/{leaf}", hexf(params[name][leaf])])))


def jax_tables():
    """jax's normal and truncated_normal(-2, 2) for every 23-bit mantissa of the uniform.

    A PRNG implementation whose bits are (iota << 9) feeds jax's own
    _normal_real / _truncated_normal code (and so XLA's compiled erf_inv) every
    input the float step can see: uniform keeps only the top 23 bits.
    """
    def bits(key, bit_width, shape):
        assert bit_width == 32 and shape == (TABLE_SIZE,)
        return lax.shift_left(lax.iota(np.uint32, TABLE_SIZE), np.uint32(9))

    impl = jax_random_ext.define_prng_impl(
        key_shape=(2,), seed=lambda seed: jnp.zeros(2, jnp.uint32),
        split=lambda key, shape: jnp.zeros((*shape, 2), jnp.uint32), random_bits=bits,
        fold_in=lambda key, data: key, name="dmlp_mantissa_iota", tag="dmi")
    key = jax.random.key(0, impl=impl)
    normal = np.asarray(jax.random.normal(key, (TABLE_SIZE,), jnp.float32))
    truncated = np.asarray(jax.random.truncated_normal(key, -2, 2, (TABLE_SIZE,), jnp.float32))
    return {"normal": normal, "truncated_normal": truncated}


def ordered(bits):
    """float32 bits -> integers whose difference is the distance in ulps."""
    bits = bits.astype(np.int64)
    return np.where(bits & 0x80000000, 0x80000000 - bits, bits)


def write_tables(path, dmlp_tool):
    tables = jax_tables()
    lines = ["# SHA-256 of jax's float32 table (little-endian, index = the uniform's 23-bit",
             "# mantissa, bits >> 9) and the inputs where dmlp's table differs from it.",
             "# table\tNAME\tSHA256  /  differs\tNAME\tINPUT\tJAX_BITS\tDMLP_BITS\tULPS"]
    for name, table in tables.items():
        lines.append(f"table\t{name}\t{hashlib.sha256(table.astype('<f4').tobytes()).hexdigest()}")
    if dmlp_tool is None:
        lines.append("# differing inputs not computed (no --dmlp-tables)")
    else:
        with tempfile.TemporaryDirectory(prefix="dmlp24-tables-") as scratch:
            subprocess.run([dmlp_tool, scratch], check=True)
            for name, table in tables.items():
                mine = np.fromfile(Path(scratch) / f"{name}.f32", dtype="<f4")
                assert mine.shape == table.shape, name
                jax_bits, dmlp_bits = table.view(np.uint32), mine.view(np.uint32)
                differing = np.nonzero(jax_bits != dmlp_bits)[0]
                for index in differing:
                    ulps = abs(int(ordered(dmlp_bits[index:index + 1])[0] -
                                   ordered(jax_bits[index:index + 1])[0]))
                    lines.append(f"differs\t{name}\t{index}\t{jax_bits[index]:08x}\t"
                                 f"{dmlp_bits[index]:08x}\t{ulps}")
                lines.append(f"# {name}: {len(differing)} of {TABLE_SIZE} inputs differ")
    path.write_text("\n".join(lines) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dmlp-tables", help="dmlp's jax_tables_dump binary (tests/unit)")
    parser.add_argument("--out-dir", default=str(HERE))
    args = parser.parse_args()
    import flax
    versions = {"jax": jax.__version__, "flax": flax.__version__}
    if versions != EXPECTED:
        sys.exit(f"jax_vectors.py: need {EXPECTED}, have {versions}")
    try:
        reference_draws.check_config()
    except RuntimeError as error:
        sys.exit(f"jax_vectors.py: {error}")
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    lines = [f"# Known answers from jax {jax.__version__} / flax {flax.__version__} on "
             f"{jax.devices()[0].platform}, written by tests/data/jax_vectors.py.",
             "# key SEED K0 K1 | split K0 K1 J R0 R1 | fold_in K0 K1 DATA R0 R1 |",
             "# threefry K0 K1 X0 X1 Y0 Y1 | bits K0 K1 N VALUE |",
             "# sample SEED FEATURES CLASSES STEP MICROBATCH INDEX LABEL FEATURE_BITS |",
             "# stddev FAN_IN BITS | init SEED FEATURES WIDTH LAYERS CLASSES LEAF BITS"]
    check_claims(lines)
    write_keys(lines)
    write_samples(lines)
    write_init(lines)
    (out_dir / "jax_vectors.tsv").write_text("\n".join(lines) + "\n")
    write_tables(out_dir / "jax_sample_tables.tsv", args.dmlp_tables)


if __name__ == "__main__":
    main()
