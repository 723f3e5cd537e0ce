"""The Debian 13 roots the trixie, cuda12 and image parts run in: made from
debootstrap's minimal one, entered in a mount and PID namespace of their own.
"""

import os
import shutil
import subprocess

from rehearsal import REPO, StepFailed, mounted_under, sh


def make_root(rehearsal, folder=None):
    """folder (default: the trixie part's root) a Debian 13 root, a copy of
    debootstrap's minimal one, which is made once and kept untouched."""
    folder = folder or rehearsal.root
    if mounted_under(folder):
        raise StepFailed("rehearse: %s has mounts; not touching it" % folder)
    minbase = rehearsal.minbase
    if not os.access(minbase + "/usr/bin/apt-get", os.X_OK):
        if not shutil.which("debootstrap"):
            sh("apt-get", "install", "-y", "-qq", "debootstrap", stdout=subprocess.DEVNULL)
        shutil.rmtree(minbase + ".partial", ignore_errors=True)
        with open(rehearsal.cache + "/debootstrap.log", "w") as log:
            sh("debootstrap", "--variant=minbase", "trixie", minbase + ".partial", rehearsal.mirror,
               stdout=log, stderr=subprocess.STDOUT)
        os.rename(minbase + ".partial", minbase)
    if not os.access(folder + "/usr/bin/apt-get", os.X_OK):
        shutil.rmtree(folder + ".partial", ignore_errors=True)
        sh("cp", "-a", minbase, folder + ".partial")
        os.rename(folder + ".partial", folder)
    shutil.copyfile("/etc/resolv.conf", folder + "/etc/resolv.conf")


# Runs $SCRIPT in $ROOT with /proc, /dev and a /dev/shm (and the wheels, read
# only) mounted, and unmounted again by a trap; in_root() starts it in a mount
# and PID namespace of its own, so nothing it mounts or starts outlives it.
IN_ROOT = r'''
set -euo pipefail
unmount() {
  for target in "$ROOT/wheels" "$ROOT/dev/shm" "$ROOT/dev" "$ROOT/proc"; do
    if mountpoint -q "$target"; then umount "$target"; fi
  done
}
trap unmount EXIT
mount -t proc proc "$ROOT/proc"
mount --bind /dev "$ROOT/dev"
mount -t tmpfs -o size=1g tmpfs "$ROOT/dev/shm"
if [[ "$BIND_WHEELS" == 1 ]]; then
  mkdir -p "$ROOT/wheels"
  mount --bind -o ro "$WHEELS" "$ROOT/wheels"
fi
status=0
chroot "$ROOT" /usr/bin/env -i HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 \
  bash -euo pipefail -c "$SCRIPT" || status=$?
exit "$status"
'''


def in_root(rehearsal, script, folder=None, wheels=False):
    """Runs script with bash in the root (default: the trixie part's)."""
    environment = dict(os.environ, ROOT=folder or rehearsal.root, WHEELS=rehearsal.wheels + "/unpacked",
                       BIND_WHEELS="1" if wheels else "0", SCRIPT=script)
    sh("unshare", "--mount", "--pid", "--fork", "--propagation", "private", "bash", "-c", IN_ROOT,
       env=environment)


def copy_sources(rehearsal, folder):
    """The tree as a docker build context gets it (no .git, no builds: git's
    tracked and unignored files) into folder of the root."""
    target = os.path.join(rehearsal.root, folder)
    shutil.rmtree(target, ignore_errors=True)
    os.makedirs(target)
    listed = subprocess.run(["git", "ls-files", "-z", "-co", "--exclude-standard"], cwd=REPO,
                            stdout=subprocess.PIPE, check=True).stdout
    packer = subprocess.Popen(["tar", "--null", "-T", "-", "--ignore-failed-read", "-cf", "-"], cwd=REPO,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    unpacker = subprocess.Popen(["tar", "-C", target, "-xf", "-"], stdin=packer.stdout)
    packer.stdout.close()
    packer.stdin.write(listed)
    packer.stdin.close()
    packer.wait()
    unpacker.wait()
