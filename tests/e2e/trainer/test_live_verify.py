"""dmlp-verify polled while a job starts and runs, with rank 0 slowed at start.

A healthy job's directory goes through states that contradict nothing: OUT_DIR
without dmlp.lock, dmlp.lock not yet locked, rank-1.jsonl before rank-0.jsonl
(each rank creates its own file), receipt files without a record. Slowing rank
0's opens (a shim built here, LD_PRELOAD in rank 0 only, that holds every open
under OUT_DIR 0.1 s before and after the real call) widens each of them to
tenths of a second, so the polling loop below lands in them every time. The
rule (docs/verifier.md, "Verifying a live run"): never FAIL, INCOMPLETE until
result.json, then PASS. A job SIGKILLed in those windows stays INCOMPLETE."""

import os
import subprocess
import time
import unittest

from harness import TRAIN, VERIFY, JobTestCase, free_port, tiny_job_env, launch, run, wait_for

# Rank 0's opens of OUT_DIR's files (OutDir's openat relative to the
# directory, and the directory itself by path), each delayed on both sides of
# the real system call: a file rank 0 creates stands alone for 0.1 s, and
# everything rank 0 creates comes 0.1 s later than it would.
SLOW_OPEN_SHIM = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>

static void hold(void) {
  int saved = errno;
  struct timespec tenth = {0, 100000000};
  while (nanosleep(&tenth, &tenth) != 0 && errno == EINTR) {}
  errno = saved;
}

static int in_out_dir(int dirfd, const char* path) {
  const char* out = getenv("SLOW_OPEN_DIR");
  if (out == NULL || path == NULL) return 0;
  if (dirfd != AT_FDCWD && path[0] != '/') return 1;  /* a name inside an open directory */
  return strncmp(path, out, strlen(out)) == 0;
}

static mode_t mode_of(int flags, va_list args) {
  return (flags & (O_CREAT | O_TMPFILE)) ? va_arg(args, mode_t) : 0;
}

#define SLOW_OPENAT(name)                                                      \
  int name(int dirfd, const char* path, int flags, ...) {                     \
    static int (*real)(int, const char*, int, ...);                           \
    if (real == NULL) real = dlsym(RTLD_NEXT, #name);                         \
    va_list args;                                                              \
    va_start(args, flags);                                                     \
    mode_t mode = mode_of(flags, args);                                        \
    va_end(args);                                                              \
    int slow = in_out_dir(dirfd, path);                                        \
    if (slow) hold();                                                          \
    int fd = real(dirfd, path, flags, mode);                                   \
    if (slow) hold();                                                          \
    return fd;                                                                 \
  }

/* open(path) is openat(AT_FDCWD, path), slowed alike. */
#define SLOW_OPEN(name, openat_name)                                           \
  int name(const char* path, int flags, ...) {                                \
    va_list args;                                                              \
    va_start(args, flags);                                                     \
    mode_t mode = mode_of(flags, args);                                        \
    va_end(args);                                                              \
    return openat_name(AT_FDCWD, path, flags, mode);                           \
  }

SLOW_OPENAT(openat)
SLOW_OPENAT(openat64)
SLOW_OPEN(open, openat)
SLOW_OPEN(open64, openat64)
"""

PLAN = {"STEPS": "8"}
TOLERANCE = "1e-6"


class LiveVerify(JobTestCase):
    def build_shim(self):
        source = self.scratch / "slow_open.c"
        source.write_text(SLOW_OPEN_SHIM)
        shim = self.scratch / "slow_open.so"
        result = run([os.environ.get("CC", "cc"), "-shared", "-fPIC", "-O1", "-o", shim, source, "-ldl"])
        self.assertEqual(result.returncode, 0, result.stderr)
        return shim

    def golden(self):
        golden = self.scratch / "golden"
        result = launch(golden, 2, **PLAN)
        self.assertEqual(result.returncode, 0, result.stderr)
        return golden

    def start_slowed_job(self, out, shim, processes=2):
        """Every rank of one job, started here (by pid); rank 0 with the shim."""
        port = free_port()
        ranks = []
        for rank in range(processes):
            env = tiny_job_env(out, processes, PROCESS_ID=rank, COORDINATOR_PORT=port, **PLAN)
            if rank == 0:
                env.update(LD_PRELOAD=str(shim), SLOW_OPEN_DIR=str(out))
            ranks.append(self.start([TRAIN], env))
        return ranks

    @staticmethod
    def checks(out, golden):
        """The verifications a user runs on a live job: alone, against a
        finished run of the same plan (bit for bit and by loss), and as the
        golden of that finished run."""
        return {
            "alone": [VERIFY, out],
            "against golden": [VERIFY, "--against", golden, out],
            "against golden, tolerance": [VERIFY, "--against", golden, "--tolerance", TOLERANCE, out],
            "as golden, tolerance": [VERIFY, "--against", out, "--tolerance", TOLERANCE, golden],
            "as golden": [VERIFY, "--against", out, golden],
        }

    def verdicts(self, checks):
        """{name: (exit code, output)} of every check, run now."""
        found = {}
        for name, command in checks.items():
            result = subprocess.run([str(a) for a in command], capture_output=True, text=True, timeout=60,
                                    stdin=subprocess.DEVNULL)
            found[name] = (result.returncode, result.stdout + result.stderr)
        return found

    def test_a_slowed_start_polled_until_it_finishes_is_never_fail(self):
        golden, shim = self.golden(), self.build_shim()
        out = self.scratch / "live"
        checks = self.checks(out, golden)
        ranks = self.start_slowed_job(out, shim)
        seen, failures, polls = set(), [], 0
        while any(rank.poll() is None for rank in ranks):
            if not out.exists():
                time.sleep(0.005)
                continue
            polls += 1
            for name, (code, output) in self.verdicts(checks).items():
                seen.add((name, code))
                if code not in (0, 3):
                    failures.append(f"{name}: exit {code}\n{output}")
        for rank in ranks:
            self.assertEqual(rank.wait(timeout=60), 0, rank.stderr.read())
        self.assertEqual(failures[:3], [], f"{len(failures)} of {polls * len(checks)} verifications")
        # The loop saw the job live, in every check, and the finished job passes all of them.
        for name in checks:
            self.assertIn((name, 3), seen, f"{name}: never INCOMPLETE in {polls} polls")
        for name, (code, output) in self.verdicts(checks).items():
            self.assertEqual(code, 0, f"{name}:\n{output}")

    def kill_when(self, out, shim, reached):
        """Starts the slowed job and SIGKILLs every rank, by pid, once `reached(out)`.
        False when the job could not start because another process took its
        coordinator port between free_port() and rank 0's bind (an outgoing
        connection of a test beside this one may get it as its own port)."""
        ranks = self.start_slowed_job(out, shim)
        wait_for(lambda: reached(out) or any(rank.poll() is not None for rank in ranks), 60, str(out))
        for rank in ranks:
            rank.kill()
        outputs = [rank.communicate(timeout=30)[1] for rank in ranks]
        if not reached(out) and "COORDINATOR_PORT_IN_USE" in outputs[0]:
            return False
        self.assertTrue(reached(out), f"the job ended before {out.name}: exit codes "
                        f"{[rank.returncode for rank in ranks]}\n" + "\n".join(outputs))
        return True

    def test_a_job_killed_at_start_is_incomplete(self):
        golden, shim = self.golden(), self.build_shim()
        # Where each kill must land (reached, then still so after the kill):
        # OUT_DIR made and no receipt file yet; rank 1's receipt file created
        # while rank 0's is not. Rank 0's delays make each window tenths of a
        # second wide; a kill that misses one on a loaded machine is tried
        # again, and every kill, landed or not, must verify INCOMPLETE.
        moments = {
            "out-dir": (lambda out: out.exists(), lambda out: not any(out.glob("rank-*.jsonl"))),
            "rank-1-first": (lambda out: (out / "rank-1.jsonl").exists(),
                             lambda out: not (out / "rank-0.jsonl").exists()),
        }
        for moment, (reached, landed) in moments.items():
            with self.subTest(moment=moment):
                for attempt in range(5):
                    out = self.scratch / f"{moment}-{attempt}"
                    if not self.kill_when(out, shim, reached):
                        continue
                    for name, (code, output) in self.verdicts(self.checks(out, golden)).items():
                        self.assertEqual(code, 3, f"{name}:\n{output}")
                        self.assertEqual(output.strip().splitlines()[-1], "INCOMPLETE")
                    if landed(out):
                        break
                else:
                    self.fail(f"no kill landed in the window {moment} in 5 tries")

if __name__ == "__main__":
    unittest.main()
