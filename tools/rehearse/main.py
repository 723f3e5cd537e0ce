"""The rehearsals CI does not run: each part (trixie.py, cuda12.py, kit.py,
image.py) one function per step, run in order by main(), then the clean-up's
checks and the verdict. tools/rehearse.sh is the entry point and documents the
parts, the cache, the environment and the verdict.

Each step prints what it did; a step fails at its first failing command. The
last line is `rehearse: PASS` or `rehearse: FAIL (<the first failed step>)`.
"""

import fcntl
import os
import shutil
import signal
import subprocess
import sys
import time

import cuda12
import image
import kit
import trixie
from rehearsal import Rehearsal, StepFailed, mounted_under, output, processes_in, say, section, sh

USAGE = "usage: tools/rehearse.sh [--fresh] [trixie] [cuda12] [kit] [image]"
CUDA_HOST_USAGE = ("usage: tools/rehearse.sh --cuda-host CXX UNPACKED (UNPACKED: a folder holding the "
                   "CUDA 12 wheels' nvidia/, as part 2 unpacks them)")
PARTS = ("trixie", "cuda12", "kit", "image")


PART_STEPS = {"trixie": trixie.part_trixie, "cuda12": cuda12.part_cuda12, "kit": kit.part_kit,
              "image": image.part_image}


# ---- clean-up and the verdict ---------------------------------------------------------
def clean_up(rehearsal, parts):
    """Nothing mounted and no process left in the roots; no container or mounted image left."""
    section("clean-up")
    for folder in (rehearsal.root, rehearsal.standin_root):
        left = mounted_under(folder)
        if left:
            rehearsal.fail("mounts left: " + left)
        else:
            say("nothing mounted under " + folder)
        left = processes_in(folder)
        if left:
            rehearsal.fail("processes left in %s: %s" % (folder, left))
        else:
            say("no process left in " + folder)
    if "image" in parts:
        left = output(*rehearsal.podman, "ps", "-a", "--format", "{{.Names}}", "--filter",
                      "name=^%s-" % rehearsal.name)
        if left:
            rehearsal.fail("containers left: " + left)
        else:
            say("no container left")
        left = "\n".join(line[:100] for line in output(*rehearsal.podman, "image", "mount").split("\n") if line)
        if left:
            rehearsal.fail("images left mounted: " + left)
        else:
            say("no image left mounted")


def local_nvcc():
    try:
        return output("nvcc", "--version", stderr=subprocess.DEVNULL).split("\n")[-1] or "none"
    except (OSError, subprocess.CalledProcessError):
        return "none"


def start_afresh(rehearsal):
    """--fresh: the Debian 13 roots and the stand-in base made again."""
    for folder in (rehearsal.minbase, rehearsal.root, rehearsal.standin_root):
        if mounted_under(folder):
            print("rehearse: %s has mounts; not touching it" % folder, file=sys.stderr)
            return False
        shutil.rmtree(folder, ignore_errors=True)
    if shutil.which("podman") and subprocess.run(
            [*rehearsal.podman, "image", "exists", rehearsal.standin]).returncode == 0:
        sh(*rehearsal.podman, "rmi", "-f", rehearsal.standin, stdout=subprocess.DEVNULL)
    return True


def refuse(message):
    print(message, file=sys.stderr)
    return 2


def rehearse(arguments):
    fresh, parts = False, []
    for argument in arguments:
        if argument == "--fresh":
            fresh = True
        elif argument in PARTS:
            parts.append(argument)
        else:
            return refuse(USAGE)
    parts = parts or list(PARTS)
    if os.geteuid() != 0:
        return refuse("rehearse: needs root (debootstrap, chroot, mounts)")
    rehearsal = Rehearsal()
    os.makedirs(rehearsal.cache, exist_ok=True)
    # One rehearsal at a time: both use the root, and the clean-up checks it.
    lock = open(rehearsal.cache + "/lock", "w")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return refuse("rehearse: another rehearsal is running (%s/lock)" % rehearsal.cache)
    if fresh and not start_afresh(rehearsal):
        return 2
    start = time.monotonic()
    for part in parts:
        PART_STEPS[part](rehearsal)
    clean_up(rehearsal, parts)
    say("local nvcc (compiles the .cu files; not rehearsed here): " + local_nvcc())
    say("total %d s" % (time.monotonic() - start))
    if rehearsal.failed:
        say("FAIL (%s)" % rehearsal.failed)
        return 1
    say("PASS")
    return 0


def main(arguments):
    # A signal ends the run through the finally clauses (temporary folders go).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        if arguments[:1] == ["--cuda-host"]:
            # Internal entry point for the root: tools/rehearse.sh --cuda-host CXX UNPACKED.
            if len(arguments) != 3 or not arguments[1] or not os.path.isdir(os.path.join(arguments[2], "nvidia")):
                return refuse(CUDA_HOST_USAGE)
            try:
                return 0 if cuda12.cuda_host(arguments[1], arguments[2]) else 1
            except (subprocess.CalledProcessError, StepFailed, OSError) as error:
                print(error, file=sys.stderr)
                return 1
        return rehearse(arguments)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
