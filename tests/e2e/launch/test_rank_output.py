"""The ranks' output through dmlp-launch: whole lines with a [rank N] prefix,
--log-dir's raw files, and a console that can take no more (RLIMIT_FSIZE)."""

import os
import resource
import subprocess
import unittest

from launch_support import (Failure, LAUNCHER, LaunchTestCase, RUN_LIMIT, Run, base_env, check,
                            launch, no_core_dumps, stand_in_env, summary_line)


PIECES_SCRIPT = r'''
printf 'alpha-' ; printf 'ALPHA-' >&2
sleep 0.05
printf 'beta-'  ; printf 'BETA-' >&2
sleep 0.05
printf 'gamma\nsecond line, ' ; printf 'GAMMA\n' >&2
sleep 0.05
printf 'end\n'
printf 'tail without newline'; printf 'TAIL' >&2
'''


def launch_under_file_size_limit(tmp, script, limit_bytes):
    """dmlp-launch with stdout and stderr in files and RLIMIT_FSIZE at `limit_bytes`."""
    out_path, err_path = os.path.join(tmp, "launch.out"), os.path.join(tmp, "launch.err")

    def limited():
        no_core_dumps()
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit_bytes, limit_bytes))

    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        proc = subprocess.Popen([LAUNCHER, "sh", "-c", script], env=base_env(NUM_PROCESSES=2),
                                stdin=subprocess.DEVNULL, stdout=out, stderr=err, preexec_fn=limited)
        try:
            rc = proc.wait(timeout=RUN_LIMIT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise Failure("dmlp-launch did not exit within %.0f s" % RUN_LIMIT)
    with open(out_path, "rb") as out, open(err_path, "rb") as err:
        return Run(rc, out.read().decode(errors="replace"), err.read().decode(errors="replace"))


# Each rank prints 20,000 lines (about 400 KB); the launcher's stdout may hold 64 KiB.
LOUD_RANKS = 'yes "a line of rank $PROCESS_ID" | head -n 20000'


class RankOutput(LaunchTestCase):
    def test_partial_lines_are_prefixed_whole(self):
        run = launch(["sh", "-c", PIECES_SCRIPT], base_env(NUM_PROCESSES=4))
        check(run.rc == 0, "exit 0", run)
        for r in range(4):
            p = "[rank %d] " % r
            check([l for l in run.out.splitlines() if l.startswith(p)] ==
                  [p + "alpha-beta-gamma", p + "second line, end", p + "tail without newline"],
                  "rank %d stdout lines whole and in order" % r, run)
            check([l for l in run.err_lines() if l.startswith(p)] == [p + "ALPHA-BETA-GAMMA", p + "TAIL"],
                  "rank %d stderr lines whole and in order" % r, run)
        check(all(l.startswith("[rank ") for l in run.out.splitlines()), "no unprefixed stdout line", run)
        check(run.out.endswith("\n"), "the final partial line is given a newline", run)

    def test_log_dir_keeps_raw_files(self):
        logs = os.path.join(self.tmp, "logs", "nested")
        # Rank 1 fails, but only after rank 0 has written everything.
        ending = ('if [ $PROCESS_ID = 0 ]; then touch "$STAND_IN_DIR/done-0"; exit 0; fi; n=0; '
                  'while [ ! -e "$STAND_IN_DIR/done-0" ] && [ $n -lt 1000 ]; do sleep 0.01; n=$((n+1)); done; exit 1')
        run = launch(["--log-dir", logs, "--show-ranks", "0", "--", "sh", "-c", PIECES_SCRIPT + ending],
                     stand_in_env(self.tmp, 2))
        check(run.rc == 1, "rank 1 exits 1", run)
        for r in range(2):
            with open(os.path.join(logs, "rank-%d.stdout" % r)) as f:
                check(f.read() == "alpha-beta-gamma\nsecond line, end\ntail without newline",
                      "raw stdout of rank %d, unprefixed, partial last line kept" % r, run)
            with open(os.path.join(logs, "rank-%d.stderr" % r)) as f:
                check(f.read() == "ALPHA-BETA-GAMMA\nTAIL", "raw stderr of rank %d" % r, run)
        check(all(l.startswith("[rank 0] ") for l in run.out.splitlines()), "--show-ranks 0 hides rank 1", run)
        check(sorted(os.listdir(logs)) == ["rank-0.stderr", "rank-0.stdout", "rank-1.stderr", "rank-1.stdout"],
              "one file per rank and stream", run)

    def test_output_past_file_size_limit_is_reported_not_fatal(self):
        run = launch_under_file_size_limit(self.tmp, LOUD_RANKS, 64 << 10)
        # Without SIGXFSZ ignored the launcher died of it: rc -25, summary cut.
        check(run.rc == 125, "the ranks succeeded but console lines were lost: the launcher's own error", run)
        check(len(run.out) <= 64 << 10, "stdout stopped at the limit", run)
        check(len(summary_line(run, "all 2 ranks exited with code 0 in ")) == 1, "the summary is on stderr", run)
        check(run.err_lines()[-1] == "dmlp-launch: error: OUTPUT_WRITE_FAILED: stdout: File too large; "
                                     "later console lines were lost (--log-dir keeps every rank's)",
              "the write error is the last line", run)

    def test_output_past_file_size_limit_keeps_a_failed_rank_code(self):
        run = launch_under_file_size_limit(self.tmp, LOUD_RANKS + '; [ $PROCESS_ID = 1 ] && exit 3; exit 0', 64 << 10)
        check(run.rc == 3, "a failed rank's code wins over the lost console lines", run)
        check(any(l.startswith("dmlp-launch: RANK_EXIT_NONZERO: rank=1 ") for l in run.err_lines()),
              "the failure is reported", run)
        check("dmlp-launch: error: OUTPUT_WRITE_FAILED: stdout: File too large" in run.err, "and the write error", run)


if __name__ == "__main__":
    unittest.main()
