"""The same bits on every x86-64 (dmlp's own GEMM), on CPUs this machine is not.

QEMU's user mode runs dmlp-train, this very binary, on an emulated CPU with
the instruction sets of another x86-64: `-cpu max` has AVX2 and FMA but no
AVX-512 (QEMU 7.2's translator has none), `-cpu qemu64` is the baseline
x86-64 (SSE2 only). There dmlp-train's `auto` runs the AVX2 or the scalar
SGEMM kernel, and every per-ISA clone (the data's threefry and erf_inv, Adam,
the epilogues) its AVX2 or baseline version, as they would on such a
machine; the receipts, metrics and state file must be this machine's
(AVX-512) bytes, and one job may mix them: one rank native, one emulated.

Usage: test_other_cpus.py [unittest args]. Exits 77 (ctest's SKIP_RETURN_CODE)
without qemu-x86_64, except in CI (CI set), which installs it
(tools/install-deps.sh: qemu-user): there it fails.
"""

import json
import os
import shutil
import sys
import unittest

from harness import LAUNCH, TRAIN, JobTestCase, tiny_job_env, run

QEMU = shutil.which("qemu-x86_64")
SKIP = 77

# Off every kernel's tile (600 = 18 x 32 + 24 = 37 x 16 + 8 columns), K past
# two k-blocks of 256, CLASSES = 5 on the transposed path of the vector kernels.
SHAPES = {"FEATURES": "40", "WIDTH": "600", "LAYERS": "2", "BATCH": "32", "STEPS": "2", "DATA_SHARDS": "2"}
# QEMU CPU model -> the SGEMM kernel dmlp-train's auto must pick there.
EMULATED = {"max": "avx2", "qemu64": "scalar"}
FILES = ("rank-0.jsonl", "metrics.jsonl", "state.safetensors")

# dmlp-launch's COMMAND: rank $EMULATED_RANK under QEMU's $QEMU_CPU, the others native.
RANK_ON_ITS_CPU = ('if [ "$PROCESS_ID" = "$EMULATED_RANK" ]; then exec "$QEMU" -cpu "$QEMU_CPU" "$@"; fi; '
                   'exec "$@"')


def fingerprint(run_dir):
    return json.loads((run_dir / "result.json").read_text())["fingerprint"]


class OtherCpus(JobTestCase):
    def job(self, name, processes, qemu_cpu=None, emulated_rank=0, **overrides):
        """Runs the job through dmlp-launch, rank `emulated_rank` under QEMU's
        `qemu_cpu` (None: every rank native); returns its run directory."""
        out = self.scratch / name
        env = tiny_job_env(out, processes, **SHAPES, **overrides)
        command = [str(TRAIN)]
        if qemu_cpu:
            env.update(QEMU=QEMU, QEMU_CPU=qemu_cpu, EMULATED_RANK=str(emulated_rank))
            command = ["sh", "-c", RANK_ON_ITS_CPU, "sh", str(TRAIN)]
        result = run([LAUNCH, "--grace", "5", "--", *command], env, timeout=300)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertPass(out)
        return out

    def test_a_cpu_without_avx512_and_one_without_avx2_give_this_machines_bytes(self):
        native = self.job("native", 1)
        for qemu_cpu, kernel in EMULATED.items():
            emulated = self.job(qemu_cpu, 1, qemu_cpu)
            self.assertEqual(fingerprint(emulated)["blas"]["isa"], kernel, qemu_cpu)
            self.assertNotEqual(fingerprint(native)["blas"]["isa"], kernel)
            self.assertSameBytes(native, emulated, FILES)
            self.assertPass(emulated, "--against", str(native))

    def test_one_job_mixes_a_native_rank_and_an_emulated_one(self):
        # Ranks compare plan fingerprints at rendezvous: the kernel's order is
        # in them, the kernel that ran is not. Every receipt must agree.
        native = self.job("native", 2)
        mixed = self.job("mixed", 2, "max", emulated_rank=1)
        self.assertSameBytes(native, mixed, FILES + ("rank-1.jsonl",))
        # Rank 1 ran the AVX2 kernel, rank 0 this machine's, and their partial
        # gradients met in the shared memory segment (both on this host).
        start = json.loads((mixed / "rank-1.env.jsonl").read_text().splitlines()[0])
        self.assertEqual(start["stack"]["blas"]["isa"], "avx2")
        self.assertEqual(fingerprint(mixed)["blas"]["isa"], fingerprint(native)["blas"]["isa"])
        self.assertEqual(fingerprint(mixed)["transport"], "shared memory")

    def test_forcing_a_kernel_the_cpu_lacks_is_env_invalid_and_writes_nothing(self):
        for qemu_cpu, forced, missing in (("max", "avx512", "AVX-512F"), ("qemu64", "avx2", "AVX2 and FMA")):
            out = self.scratch / f"refused-{qemu_cpu}"
            env = tiny_job_env(out, 1, PROCESS_ID=0, DMLP_CPU_GEMM=forced, **SHAPES)
            result = run([QEMU, "-cpu", qemu_cpu, TRAIN], env)
            self.assertEqual(
                (result.returncode, result.stderr),
                (2, f"dmlp-train: error: ENV_INVALID: DMLP_CPU_GEMM={forced}: this CPU cannot run the "
                    f"{forced} kernel ({missing} missing); auto picks the fastest it can\n"))
            self.assertFalse(out.exists())


def main():
    if QEMU is None:
        why = "qemu-x86_64 not installed (Debian's qemu-user)"
        if os.environ.get("CI"):
            print(f"FAIL: {why}; in CI it must run (tools/install-deps.sh installs it)")
            return 1
        print(f"SKIP: {why}")
        return SKIP
    suite = unittest.defaultTestLoader.loadTestsFromTestCase(OtherCpus)
    outcome = unittest.TextTestRunner(verbosity=2).run(suite)
    return 0 if outcome.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
