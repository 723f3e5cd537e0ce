"""dmlp-train --config FILE against files a user got wrong: a raw control
byte is refused with its place before the YAML parser sees it, and a bad value
from the file names the file and its key, not an environment variable; a file
that cannot be read, an empty name and an escaped NUL in a value are refused."""

import unittest
from pathlib import Path

from harness import TRAIN, JobTestCase, tiny_job_env, run

RAW_BYTE = "(YAML allows only tab, LF and CR raw)"


class ConfigFile(JobTestCase):
    def train(self, config_bytes, *unset, **overrides):
        """dmlp-train of a one-rank job under the file `config_bytes`, without the variables `unset`."""
        config = self.scratch / "job.yaml"
        config.write_bytes(config_bytes)
        env = tiny_job_env(self.scratch / "run", 1, PROCESS_ID=0, **overrides)
        for name in unset:
            del env[name]
        return config, run([TRAIN, "--config", config], env)

    def test_a_raw_nul_is_refused_not_read_as_an_escape(self):
        # "seed: 4<NUL>x32" ran SEED=42.
        config, result = self.train(b"steps: 2\nseed: 4\x00x32\n", "SEED", "STEPS")
        self.assertEqual(result.returncode, 2, result.stderr)
        self.assertEqual(result.stderr, f"dmlp-train: error: CONFIG_INVALID: {config}: line 2, byte offset 16: "
                                        f"the control byte 0x00 {RAW_BYTE}\n")
        self.assertFalse((self.scratch / "run").exists())

    def test_a_raw_nul_cannot_smuggle_a_line_separator_into_out_dir(self):
        # The NUL acted as a backslash: OUT_DIR was "evil", U+2028, "x", which
        # the control-character rule (bytes below 0x20) let through.
        evil = self.scratch / "evil"
        config, result = self.train(f"out_dir: {evil}\x00u2028x\n".encode(), "OUT_DIR")
        self.assertEqual(result.returncode, 2, result.stderr)
        offset = len(f"out_dir: {evil}")
        self.assertEqual(result.stderr, f"dmlp-train: error: CONFIG_INVALID: {config}: line 1, byte offset "
                                        f"{offset}: the control byte 0x00 {RAW_BYTE}\n")
        self.assertEqual(sorted(p.name for p in self.scratch.iterdir()), ["job.yaml"])

    def test_tab_and_crlf_are_yaml(self):
        _, result = self.train(b"steps:\t2\r\nseed: 7\r\n", "SEED", "STEPS")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertPass(self.scratch / "run")

    def test_a_bad_value_from_the_file_names_the_file_and_key(self):
        config, result = self.train(b"seed: 4294967296\n", "SEED")
        self.assertEqual(result.returncode, 2, result.stderr)  # was ENV_INVALID: SEED=...
        self.assertEqual(result.stderr, f"dmlp-train: error: CONFIG_INVALID: {config}: seed=4294967296 must be "
                                        "< 2^32 (4294967296): jax.random.key keeps its low 32 bits, so it would "
                                        "repeat the experiment of SEED=0\n")
        config, result = self.train(b"batch: sixteen\n", "BATCH")
        self.assertEqual(result.stderr, f"dmlp-train: error: CONFIG_INVALID: {config}: batch='sixteen' "
                                        "is not an integer\n")
        # The environment wins over the file, and so its value's error is its own.
        _, result = self.train(b"batch: 16\n", BATCH="sixteen")
        self.assertEqual(result.stderr, "dmlp-train: error: ENV_INVALID: BATCH='sixteen' is not an integer\n")

    def test_a_config_that_cannot_be_read_is_config_invalid(self):
        # Was std::__ios_failure: SIGABRT, exit 134.
        directory = self.scratch / "d.yaml"
        directory.mkdir()
        for path in (directory, Path("/proc/self/mem")):
            with self.subTest(path=str(path)):
                result = run([TRAIN, "--config", path], tiny_job_env(self.scratch / "run", 1, PROCESS_ID=0))
                self.assertEqual(result.returncode, 2, result.stderr)
                self.assertRegex(result.stderr, rf"^dmlp-train: error: CONFIG_INVALID: {path}: cannot be read"
                                                r"[^\n]*\n$")

    def test_an_empty_config_name_is_refused(self):
        result = run([TRAIN, "--config", ""], tiny_job_env(self.scratch / "run", 1, PROCESS_ID=0))
        self.assertEqual(result.returncode, 2, result.stderr)  # ran with no config before
        self.assertEqual(result.stderr, "dmlp-train: error: CONFIG_INVALID: --config names no file\n")
        self.assertFalse((self.scratch / "run").exists())

    def test_nul_in_a_config_value_is_refused(self):
        config = self.scratch / "job.yaml"
        evil = self.scratch / "nulA"
        config.write_text(f'out_dir: "{evil}\\0/evil"\n')
        env = tiny_job_env(self.scratch / "unused", 1, PROCESS_ID=0)  # a whole job of one rank
        del env["OUT_DIR"]
        result = run([TRAIN, "--config", config], env)
        self.assertEqual(result.returncode, 2, result.stderr)  # wrote into nulA before
        self.assertEqual(result.stderr, f"dmlp-train: error: CONFIG_INVALID: {config}: value of 'out_dir' "
                                        f"'{evil}\\u0000/evil' holds a control character\n")
        self.assertFalse(evil.exists())


if __name__ == "__main__":
    unittest.main()
