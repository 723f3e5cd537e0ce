"""How dmlp-launch starts its ranks: their environment (--nproc, --nnodes and
--node-rank), stdin and process group, the command (by default the dmlp-train
beside dmlp-launch, found with or without /proc) and when it cannot be run."""

import os
import shutil
import subprocess
import unittest

from launch_support import (Failure, LAUNCHER, LaunchTestCase, Launcher, RUN_LIMIT, Run, base_env,
                            check, launch, summary_line)


def install_launcher(tmp):
    """A copy of the launcher in TMP/bin, as an installation has it; returns (bin, copy)."""
    install = os.path.join(tmp, "bin")
    os.mkdir(install)
    copy = os.path.join(install, "dmlp-launch")
    shutil.copy2(LAUNCHER, copy)
    return install, copy


def install_stand_in_trainer(install, script):
    trainer = os.path.join(install, "dmlp-train")
    with open(trainer, "w") as f:
        f.write("#!/bin/sh\n" + script + "\n")
    os.chmod(trainer, 0o755)


def without_proc(command, env):
    """Runs `command` in a mount namespace where /proc is an empty tmpfs."""
    usable = subprocess.run(["unshare", "--mount", "--fork", "true"], capture_output=True, text=True)
    if usable.returncode != 0:
        why = "unshare --mount fails here: %s" % usable.stderr.strip()
        # CI runs as root: a skip there would hide the case.
        if os.environ.get("CI"):
            raise Failure(why)
        raise unittest.SkipTest(why)
    script = 'mount -t tmpfs none /proc && exec "$@"'
    done = subprocess.run(["unshare", "--mount", "--fork", "sh", "-c", script, "sh"] + command, env=env,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=RUN_LIMIT)
    return Run(done.returncode, done.stdout, done.stderr)


class RankStart(LaunchTestCase):
    def test_nproc_option(self):
        run = launch(["--nproc", "2", "--", "sh", "-c", 'echo "$PROCESS_ID/$NUM_PROCESSES"'], base_env())
        check(run.rc == 0 and sorted(run.out.splitlines()) == ["[rank 0] 0/2", "[rank 1] 1/2"],
              "--nproc sets the world and NUM_PROCESSES of the ranks", run)

    def test_command_not_found_or_not_executable(self):
        plain = os.path.join(self.tmp, "plain.sh")
        with open(plain, "w") as f:
            f.write("#!/bin/sh\necho never\n")
        os.chmod(plain, 0o644)
        no_format = os.path.join(self.tmp, "no-format")
        with open(no_format, "wb") as f:
            f.write(b"\x00\x01\x02 not a program\n")
        os.chmod(no_format, 0o755)
        bad_interpreter = os.path.join(self.tmp, "bad-interpreter")
        with open(bad_interpreter, "w") as f:
            f.write("#!/nonexistent/interpreter\n")
        os.chmod(bad_interpreter, 0o755)
        cases = [
            (["--", os.path.join(self.tmp, "missing")], 127,
             "COMMAND_NOT_FOUND: %s/missing: No such file or directory" % self.tmp),
            (["dmlp-no-such-command-anywhere"], 127, "COMMAND_NOT_FOUND: dmlp-no-such-command-anywhere: not found in PATH"),
            ([plain], 126, "COMMAND_NOT_EXECUTABLE: %s: Permission denied" % plain),
            ([self.tmp], 126, "COMMAND_NOT_EXECUTABLE: %s: is a directory" % self.tmp),
            # These pass the lookup and fail in execve: reported through the child's report pipe.
            ([no_format], 126, "COMMAND_NOT_EXECUTABLE: %s: Exec format error" % no_format),
            ([bad_interpreter], 127, "COMMAND_NOT_FOUND: %s: No such file or directory "
                                     "(exec failed; a missing #! interpreter reads the same)" % bad_interpreter),
        ]
        for args, rc, message in cases:
            run = launch(args, base_env(NUM_PROCESSES=2))
            check(run.rc == rc and run.err == "dmlp-launch: error: %s\n" % message and run.out == "",
                  "exit %d with %r" % (rc, message), run)

    def test_default_command_beside_launcher(self):
        install, copy = install_launcher(self.tmp)
        run = launch([], base_env(NUM_PROCESSES=1), launcher=copy)
        check(run.rc == 127 and run.err == "dmlp-launch: error: COMMAND_NOT_FOUND: %s/dmlp-train: "
              "No such file or directory\n" % install, "no dmlp-train beside it -> 127", run)
        install_stand_in_trainer(install, 'echo "stand-in trainer $PROCESS_ID $*"')
        run = launch([], base_env(NUM_PROCESSES=2), launcher=copy)
        check(run.rc == 0 and sorted(run.out.splitlines()) == ["[rank 0] stand-in trainer 0 ", "[rank 1] stand-in trainer 1 "],
              "runs the dmlp-train installed beside dmlp-launch", run)

    def test_default_command_is_found_without_proc(self):
        # No /proc (a chroot, a container that lacks it): /proc/self/exe cannot say
        # where dmlp-launch is, argv[0] can.
        install, copy = install_launcher(self.tmp)
        install_stand_in_trainer(install, 'echo "stand-in trainer $PROCESS_ID"')
        expected = ["[rank 0] stand-in trainer 0", "[rank 1] stand-in trainer 1"]
        by_path = without_proc([copy], base_env(NUM_PROCESSES=2))
        check(by_path.rc == 0 and sorted(by_path.out.splitlines()) == expected, "started by its path", by_path)
        env = base_env(NUM_PROCESSES=2)
        env["PATH"] = install + os.pathsep + env.get("PATH", "/usr/bin:/bin")
        by_name = without_proc(["dmlp-launch"], env)
        check(by_name.rc == 0 and sorted(by_name.out.splitlines()) == expected, "started by its name in PATH", by_name)
        lost = without_proc(["bash", "-c", 'exec -a dmlp-launch-elsewhere "$0"', copy], base_env(NUM_PROCESSES=2))
        check(lost.rc == 127 and lost.err ==
              "dmlp-launch: error: COMMAND_NOT_FOUND: dmlp-train: dmlp-launch cannot tell its own directory "
              "(/proc/self/exe: No such file or directory; argv[0] 'dmlp-launch-elsewhere' is not found either); "
              "give the trainer as COMMAND: dmlp-launch [options] -- /path/to/dmlp-train\n", "the way out is named", lost)

    def test_two_nodes_on_one_host(self):
        script = 'echo "PROCESS_ID=$PROCESS_ID LOCAL_RANK=$LOCAL_RANK NUM_PROCESSES=$NUM_PROCESSES"'
        env = base_env(NUM_PROCESSES=4)
        nodes = [Launcher(["--nnodes", "2", "--node-rank", str(j), "--", "sh", "-c", script], env) for j in (0, 1)]
        runs = [n.finish() for n in nodes]
        for j, run in enumerate(runs):
            check(run.rc == 0, "node %d exits 0" % j, run)
            expected = ["[rank %d] PROCESS_ID=%d LOCAL_RANK=%d NUM_PROCESSES=4" % (2 * j + l, 2 * j + l, l) for l in (0, 1)]
            check(sorted(run.out.splitlines()) == expected, "node %d starts ranks %d..%d" % (j, 2 * j, 2 * j + 1), run)
            check(len(summary_line(run, "all 2 ranks of this node (of 4) exited with code 0")) == 1, "summary", run)

    def test_stdin_is_dev_null_and_own_process_group(self):
        script = ('read line; echo "read=$? pgid_is_pid=$([ "$(ps -o pgid= -p $$ | tr -d " ")" = "$$" ] && echo yes || echo no)"; '
                  'ls -l /proc/$$/fd/0 | sed "s/.*-> //"')
        run = launch(["sh", "-c", script], base_env(NUM_PROCESSES=1))
        check(run.rc == 0, "exit 0", run)
        check(run.out.splitlines() == ["[rank 0] read=1 pgid_is_pid=yes", "[rank 0] /dev/null"],
              "stdin is /dev/null (read hits EOF) and the rank leads its own group", run)


if __name__ == "__main__":
    unittest.main()
