#!/usr/bin/env python3
"""freeze_reference: the reference JAX job and dmlp through the same freeze.

Each job (2 ranks, CPU) is started, dumped whole by CRIU (tools/criu.sh, the
flags of --dmlp-dump-flags) once rank 0 has recorded a few steps, kept down
for --freeze seconds, and restored in place. What happens is one of:

  survives, verifies   the job finished (exit 0) and dmlp-verify says PASS
  aborts               the job ended with another status (its last error line is shown)
  hangs                no new receipt for --hang seconds: ended by pid
  not dumped           criu refused the dump (its last error line is shown)

Rows: for each heartbeat in --heartbeats (default: the reference's spec.json
value 86400, and JAX's own default 100), the reference job (bench/reference/
run_reference.sh, ../shared/reference/train.py unmodified) and dmlp-launch.
Prints a Markdown table (docs/freezing-and-restoring.md's, section "Freezing
and restoring a job"). Slow (a freeze of 110 s per row): not in CI. Run as root:

  bench/freeze_reference.py --build build [--freeze 110] [--heartbeats 86400,100]

The reference runs with REFERENCE_PYTHON (default <repo>/.venv-ref/bin/python,
made by bench/reference/setup_venv.sh), as run_reference.sh reads it.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests" / "e2e" / "criu"))
from cpu_job import free_port  # noqa: E402
from freeze import (CRIU, become_subreaper, dump, end_tree, exit_status, restore,  # noqa: E402
                    spawn)

REFERENCE = ROOT / "bench" / "reference" / "run_reference.sh"
# Small enough to start in seconds on 2 cores; many steps, so the job is still
# running when the dump comes (JAX's dump takes seconds: its processes are large).
JOB = {"FEATURES": "64", "WIDTH": "128", "LAYERS": "3", "CLASSES": "10", "BATCH": "64",
       "MICROBATCHES": "2", "SEED": "42", "LEARNING_RATE": "0.001", "NUM_PROCESSES": "2"}


def line_count(path):
    try:
        return Path(path).read_bytes().count(b"\n")
    except OSError:
        return 0


def last_error(text):
    lines = [l for l in text.splitlines() if "rror" in l or "ABORT" in l or "RANK_EXIT" in l]
    return (lines or text.splitlines() or ["(no output)"])[-1].strip()[:200].replace("|", "/")


def first_cause(work):
    """The first line that says why a job died: JAX's coordination service error
    (in the reference's rank logs), or a dmlp code such as PEER_LOST."""
    for path in [work / "job.log", *sorted((work / "logs").glob("*.stderr"))]:
        text = path.read_text(errors="replace") if path.exists() else ""
        for line in text.splitlines():
            match = re.search(r"(UNAVAILABLE: .*|PEER_LOST: .*|error: [A-Z_]+: .*)", line)
            if match:
                return match.group(1)[:160].replace("|", "/")
    return last_error((work / "job.log").read_text(errors="replace"))


def command_for(kind, build, out, heartbeat, steps):
    env = dict(os.environ, **JOB, STEPS=str(steps), OUT_DIR=str(out),
               HEARTBEAT_TIMEOUT_SECONDS=str(heartbeat), COORDINATOR_PORT=str(free_port()))
    if kind == "reference":
        env["LOG_DIR"] = str(out.parent / "logs")
        return [REFERENCE], env
    env.update(PLATFORM="cpu", DATA_SHARDS="2")
    return [build / "bin/dmlp-launch", build / "bin/dmlp-train"], env


def wait_or_hang(root, receipts, hang):
    """The root's exit status, or None when its receipts stopped growing for `hang` s."""
    seen, last_growth = line_count(receipts), time.monotonic()
    while time.monotonic() - last_growth < hang:
        status = exit_status(root, 1)
        if status is not None:
            return status
        if line_count(receipts) != seen:
            seen, last_growth = line_count(receipts), time.monotonic()
    return None


def one_row(kind, build, work, heartbeat, freeze, hang, steps):
    out, log = work / "out", work / "job.log"
    args, env = command_for(kind, build, out, heartbeat, steps)
    root = spawn(args, env, log)
    receipts = out / "rank-0.jsonl"
    deadline = time.monotonic() + 600
    while line_count(receipts) < 3:
        status = exit_status(root, 0.1)
        if status is not None or time.monotonic() > deadline:
            end_tree(root)
            return "did not start", last_error(log.read_text(errors="replace"))
    images = work / "images"
    dumped, _ = dump(root, images)
    if dumped.returncode != 0:
        end_tree(root)
        return "not dumped", last_error((images / "dump.log").read_text(errors="replace"))
    dumped_at = line_count(receipts)
    time.sleep(freeze)
    restored = restore(images)
    if restored.returncode != 0:
        return "not restored", last_error((images / "restore.log").read_text(errors="replace"))
    status = wait_or_hang(root, receipts, hang)
    if status is None:
        end_tree(root)
        return "hangs", f"no receipt for {hang} s after step {line_count(receipts)} (dumped after step {dumped_at})"
    if status != 0:
        return "aborts", f"exit {status} after step {line_count(receipts)}: {first_cause(work)}"
    verdict = subprocess.run([str(build / "bin/dmlp-verify"), str(out)], capture_output=True, text=True)
    last = (verdict.stdout.strip().splitlines() or ["?"])[-1]
    if verdict.returncode == 0:
        return "survives, verifies", f"dumped after step {dumped_at}; dmlp-verify: {last}"
    return "survives, does not verify", f"dmlp-verify exit {verdict.returncode}: {last}"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", type=Path, default=ROOT / "build")
    parser.add_argument("--freeze", type=int, default=110, help="seconds down (default 110 > 100)")
    parser.add_argument("--heartbeats", default="86400,100", help="HEARTBEAT_TIMEOUT_SECONDS values")
    parser.add_argument("--hang", type=int, default=120, help="seconds without a receipt = hung")
    parser.add_argument("--steps", type=int, default=1500)
    parser.add_argument("--jobs", default="reference,dmlp")
    parser.add_argument("--keep", action="store_true", help="keep each row's directory (logs, images)")
    options = parser.parse_args()
    become_subreaper()  # a restored job is reparented to us: we read its exit status
    version = subprocess.run([str(CRIU), "--version"], capture_output=True, text=True).stdout.split()
    print(f"CRIU {version[1] if len(version) > 1 else '?'}, freeze {options.freeze} s, "
          f"{JOB['NUM_PROCESSES']} ranks, CPU", file=sys.stderr)
    print("| job | HEARTBEAT_TIMEOUT_SECONDS | freeze | outcome | detail |")
    print("|---|---|---|---|---|")
    for heartbeat in [int(h) for h in options.heartbeats.split(",")]:
        for kind in options.jobs.split(","):
            work = Path(tempfile.mkdtemp(prefix="dmlp25-freeze-"))
            try:
                outcome, detail = one_row(kind, options.build, work, heartbeat, options.freeze,
                                          options.hang, options.steps)
            finally:
                if options.keep:
                    print(f"freeze_reference: kept {work}", file=sys.stderr)
                else:
                    shutil.rmtree(work, ignore_errors=True)
            print(f"| {kind} | {heartbeat} | {options.freeze} s | {outcome} | {detail} |", flush=True)


if __name__ == "__main__":
    main()
