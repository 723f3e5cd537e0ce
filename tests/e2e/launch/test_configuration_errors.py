"""dmlp-launch refuses a wrong NUM_PROCESSES or option before starting any
rank: exit 2 and one exact line."""

import unittest

from launch_support import (LaunchTestCase, base_env, check, launch)


class ConfigurationErrors(LaunchTestCase):
    def test_num_processes_missing_or_invalid(self):
        cases = [
            ({}, "ENV_MISSING: NUM_PROCESSES"),
            ({"NUM_PROCESSES": ""}, "ENV_EMPTY: NUM_PROCESSES"),
            ({"NUM_PROCESSES": "abc"}, "ENV_INVALID: NUM_PROCESSES='abc' is not an integer"),
            ({"NUM_PROCESSES": "0"}, "ENV_INVALID: NUM_PROCESSES='0' must be >= 1"),
            ({"NUM_PROCESSES": "2x"}, "ENV_INVALID: NUM_PROCESSES='2x' is not an integer"),
            ({"NUM_PROCESSES": "-3"}, "ENV_INVALID: NUM_PROCESSES='-3' is not an integer"),
        ]
        for env, message in cases:
            run = launch(["true"], base_env(**env))
            check(run.rc == 2, "configuration error -> exit 2 for %r" % env, run)
            check(run.err == "dmlp-launch: error: %s\n" % message and run.out == "", "exact message %r" % message, run)

    def test_bad_options(self):
        cases = [
            (["--bogus", "true"], "USAGE: unknown option --bogus (put -- before a COMMAND that starts with '-')"),
            (["--grace", "x", "true"], "OPTION_INVALID: --grace='x' is not a number of seconds"),
            (["--grace", "0x1p3", "true"], "OPTION_INVALID: --grace='0x1p3' is not a number of seconds"),
            (["--nnodes", "3", "true"], "CONFIG_INVALID: --nnodes 3 does not divide NUM_PROCESSES 4"),
            (["--nnodes", "2", "--node-rank", "2", "true"], "CONFIG_INVALID: --node-rank 2 must be below --nnodes 2"),
        ]
        for args, message in cases:
            run = launch(args, base_env(NUM_PROCESSES=4))
            check(run.rc == 2 and run.err == "dmlp-launch: error: %s\n" % message, "exit 2 with %r" % message, run)
        run = launch(["--help"], base_env())
        check(run.rc == 0 and "Usage: dmlp-launch [options] [--] [COMMAND [ARGS...]]" in run.out, "--help", run)


if __name__ == "__main__":
    unittest.main()
