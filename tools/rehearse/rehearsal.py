"""What every part of the rehearsal shares: its settings from the environment,
its steps' timing and verdict, and how it runs commands and prints.
"""

import glob
import os
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class StepFailed(Exception):
    """A step's own verdict, with what it prints."""


def say(text):
    print("rehearse: %s" % text, flush=True)


def section(text):
    print("\n== rehearse: %s ==" % text, flush=True)


def sh(*command, **options):
    """Runs a command, its output to ours; raises CalledProcessError when it fails."""
    sys.stdout.flush()
    return subprocess.run(command, check=True, **options)


def output(*command, **options):
    """A command's stdout, its trailing newlines removed; raises when it fails."""
    sys.stdout.flush()
    return subprocess.run(command, check=True, stdout=subprocess.PIPE, universal_newlines=True,
                          **options).stdout.rstrip("\n")


def indented(text, prefix="  "):
    return "\n".join(prefix + line for line in text.split("\n"))


class Rehearsal:
    """Where the cache keeps each part's roots, wheels and images, from the environment."""

    def __init__(self):
        environ = os.environ
        self.cache = environ.get("DMLP_REHEARSAL_DIR") or "/var/tmp/dmlp-rehearsal"
        self.minbase = self.cache + "/trixie-minbase"  # debootstrap's root, copied by every part that needs one
        self.root = self.cache + "/trixie-root"
        self.wheels = self.cache + "/wheels"
        self.jobs = environ.get("DMLP_JOBS") or str(len(os.sched_getaffinity(0)))
        self.mirror = environ.get("DMLP_REHEARSAL_MIRROR") or "http://deb.debian.org/debian"
        # Part 4. The names of its images and container; its podman storage, the
        # rehearsal's own (its disk use is the build's, and it clashes with nothing);
        # runc and cgroupfs (crun refuses hybrid cgroups).
        self.standin_root = self.cache + "/standin-root"
        self.cuda_toolkit = environ.get("DMLP_REHEARSAL_CUDA") or "/usr/local/cuda"
        self.name = environ.get("DMLP_REHEARSAL_NAME") or "dmlp-rehearsal"
        self.standin = "localhost/%s-standin:trixie-cuda" % self.name
        self.image = "localhost/%s-image:latest" % self.name
        self.podman = ("podman", "--root", self.cache + "/containers", "--runroot", "/run/%s-containers" % self.name,
                       "--storage-driver", "overlay", "--events-backend", "file", "--runtime", "runc",
                       "--cgroup-manager", "cgroupfs")
        # The Dockerfile part 4 builds. Another (DMLP_REHEARSAL_DOCKERFILE) shows a
        # mistake planted in it failing the rehearsal: planted in the repository's,
        # it would change the build context and so rebuild the build stage.
        self.dockerfile = environ.get("DMLP_REHEARSAL_DOCKERFILE") or REPO + "/Dockerfile"
        self.failed = ""

    def fail(self, step):
        self.failed = self.failed or step
        say("FAILED: " + step)

    def timed(self, name, step, *arguments):
        """Runs a step, says how long it took, records a failure."""
        start = time.monotonic()
        try:
            ok = step(*arguments) is not False
        except (subprocess.CalledProcessError, StepFailed, OSError) as error:
            print(error, file=sys.stderr, flush=True)
            ok = False
        if ok:
            say("%s: ok (%d s)" % (name, time.monotonic() - start))
        else:
            self.fail(name)
            say("%s: %d s" % (name, time.monotonic() - start))


def mounted_under(folder):
    targets = output("findmnt", "-rn", "-o", "TARGET").splitlines()
    return "\n".join(target for target in targets if folder + "/" in target)


def processes_in(folder):
    """Pids whose root directory is folder."""
    pids = []
    for link in glob.glob("/proc/[0-9]*/root"):
        try:
            if os.readlink(link) == folder:
                pids.append(link.split("/")[2])
        except OSError:
            pass
    return " ".join(pids)
