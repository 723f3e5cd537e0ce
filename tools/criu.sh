#!/usr/bin/env bash
# The project's one way to get CRIU (checkpoint/restore in userspace).
#
#   tools/criu.sh ARGS...            run criu with ARGS; exit status = criu's
#   tools/criu.sh --version          print criu's version (criu --version)
#   tools/criu.sh --bundle DIR       copy criu, its loader and libraries into DIR,
#                                    with an executable DIR/criu that runs them and
#                                    DIR/dmlp-dump-flags, DIR/dmlp-restore-flags (one line each)
#   tools/criu.sh --dmlp-dump-flags  print the flags dmlp's jobs are dumped with
#   tools/criu.sh --dmlp-restore-flags  ... and restored with
#   tools/criu.sh --path             print the cache directory (fetching first)
#
# Why not the machine's criu: Debian 12 has none that works, Debian 13's 4.1
# cannot dump a process with INET sockets on kernels >= 6.16 (they refuse
# getsockopt(SO_PASSSEC)); 4.2 fixed that. So on first use this script fetches
# Debian sid's criu 4.2.x and the libraries it needs with `apt-get download`
# through a private apt configuration (the machine's sources, preferences and
# installed packages are never touched), unpacks them into a cache directory
# (DMLP_CRIU_CACHE, default /var/cache/dmlp/criu) and runs criu through sid's
# own loader and libraries. Later runs find the cache and cost milliseconds.
# Needs: root for the first fetch into the default cache, apt-get, dpkg-deb,
# Debian's archive keyring (every Debian has it).
#
# The cache is code that root runs: criu.sh refuses (CRIU_CACHE_UNSAFE, exit 2)
# a cache directory, or anything in it, that is not owned by the user running
# it or that group or others may write, and a folder above it that others
# could swap it out of. An interrupted fetch leaves nothing behind.
set -euo pipefail
umask 022  # what the fetch unpacks must pass the cache check below

# The flags dmlp's jobs need, in this one place (tests/e2e/criu/ and
# bench/freeze_reference.py read them with --dmlp-dump-flags / --dmlp-restore-flags,
# the GPU kit from the files --bundle writes). Why each one:
#   --tcp-established   the ranks' Gloo and coordinator connections are open TCP
#                       connections; without it criu refuses to dump them
#   --file-locks        rank 0 holds flock(OUT_DIR/dmlp.lock); without it criu
#                       refuses a process holding a file lock
#   --network-lock skip criu would lock the network with iptables/nftables while
#                       it works; where they are absent (a container, CI) it
#                       cannot, and dmlp needs no lock: a peer's silence during
#                       the dump is what HEARTBEAT_TIMEOUT_SECONDS forgives
#   --shell-job         the launcher shares its session with the shell or test
#                       that started it; criu must not demand a session of its own
dmlp_dump_flags=(--tcp-established --file-locks --network-lock skip --shell-job)
#   --restore-detached  criu returns once the job runs again, the job is not its child
dmlp_restore_flags=(--tcp-established --file-locks --network-lock skip --shell-job
                    --restore-detached)

suite=sid
mirror=http://deb.debian.org/debian
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
cache="${DMLP_CRIU_CACHE:-/var/cache/dmlp/criu}"
root="$cache/root"      # the unpacked packages
multiarch=x86_64-linux-gnu

say() { echo "criu.sh: $*" >&2; }
die() { echo "criu.sh: error: $*" >&2; exit 2; }

# apt-get/apt-cache against sid only, with their own lists, archives and an
# empty "installed" list, so nothing of the machine's apt state is read or changed.
private_apt() {  # private_apt apt-get|apt-cache ARGS...
  local tool=$1; shift
  "$tool" -q -o Dir::Etc::SourceList="$cache/apt/sources.list" -o Dir::Etc::SourceParts=/dev/null \
    -o Dir::Etc::Preferences=/dev/null -o Dir::Etc::PreferencesParts=/dev/null \
    -o Dir::State="$cache/apt/state" -o Dir::State::status="$cache/apt/status" \
    -o Dir::Cache="$cache/apt/cache" -o APT::Get::List-Cleanup=0 \
    -o Acquire::Check-Valid-Until=false -o APT::Sandbox::User=root "$@"
}

# criu and what it needs to run, as sid's dependencies say (no recommends:
# python3-pycriu and iproute2 are not needed to dump and restore).
dependency_closure() {
  private_apt apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts \
    --no-breaks --no-replaces --no-enhances criu | grep -E '^[a-z0-9]' | sort -u
}

# Removes what an unfinished fetch made. Runs on every exit while a fetch is
# under way, and on SIGINT, SIGTERM and SIGHUP, which then end the script
# with that signal's status (128 + its number).
staging=""
fetch_cleanup() {
  [[ -n "$staging" ]] || return 0
  rm -rf "$staging" "$cache/apt"
  staging=""
}
fetch() {
  if ! command -v apt-get >/dev/null || ! command -v dpkg-deb >/dev/null; then
    die "CRIU_FETCH_FAILED: needs apt-get and dpkg-deb (a Debian or Ubuntu machine)"
  fi
  [[ -r "$keyring" ]] || die "CRIU_FETCH_FAILED: no Debian archive keyring at $keyring"
  staging="$cache/staging.$$"
  trap fetch_cleanup EXIT
  trap 'fetch_cleanup; exit 130' INT
  trap 'fetch_cleanup; exit 143' TERM
  trap 'fetch_cleanup; exit 129' HUP
  rm -rf "$staging" "$cache/apt"
  mkdir -p "$cache/apt/state/lists/partial" "$cache/apt/cache/archives/partial" "$staging/debs"
  echo "deb [signed-by=$keyring] $mirror $suite main" >"$cache/apt/sources.list"
  : >"$cache/apt/status"
  say "fetching criu from Debian $suite into $cache (once)"
  # sid's Release file may be past its Valid-Until on a mirror: hence the option above.
  private_apt apt-get update >/dev/null || die "CRIU_FETCH_FAILED: apt-get update of $suite failed"
  local packages
  mapfile -t packages < <(dependency_closure)
  [[ ${#packages[@]} -gt 1 ]] || die "CRIU_FETCH_FAILED: no criu in Debian $suite"
  (cd "$staging/debs" && private_apt apt-get download "${packages[@]}" >/dev/null) ||
    die "CRIU_FETCH_FAILED: apt-get download ${packages[*]}"
  local deb
  for deb in "$staging"/debs/*.deb; do dpkg-deb -x "$deb" "$staging/root"; done
  rm -rf "$root"
  mv "$staging/root" "$root"
  fetch_cleanup  # the lists are 20 MB and only needed to fetch
  trap - EXIT INT TERM HUP
}

# The unpacked tree holds usr/sbin/criu, sid's loader and libraries (usr-merged).
loader() { echo "$root/usr/lib/$multiarch/ld-linux-x86-64.so.2"; }
library_path() { echo "$root/usr/lib/$multiarch"; }
ready() { [[ -x "$root/usr/sbin/criu" && -e "$(loader)" ]]; }

# trusted PATH: PATH is owned by the user running this script or by root, and
# group and others cannot write it (a folder they may write must be sticky, as
# /tmp is, so that they cannot rename what is in it).
trusted() {
  local path=$1 owner mode
  read -r owner mode < <(stat -c '%u %a' -- "$path")
  [[ "$owner" == "$(id -u)" || "$owner" == 0 ]] || return 1
  (( (8#$mode & 8#022) == 0 )) || { [[ -d "$path" ]] && (( 8#$mode & 8#1000 )); }
}

# The cache is safe to run from: the folders above it trusted, and it and
# everything in it owned by this user and not writable by group or others
# (symbolic links are judged by their owner only: their mode means nothing).
# REQUIRES: $cache is a physical path (no symbolic link in it), so that no
# one can point it elsewhere between this check and the exec.
check_cache() {
  local folder=$cache offender owner
  while [[ "$folder" != / ]]; do
    folder=$(dirname -- "$folder")
    trusted "$folder" ||
      die "CRIU_CACHE_UNSAFE: $folder, above the cache $cache, may be written by others" \
          "(owner uid $(stat -c %u -- "$folder"), mode $(stat -c %a -- "$folder")): set DMLP_CRIU_CACHE elsewhere"
  done
  offender=$(find "$cache" \( ! -user "$(id -u)" -o ! -type l -perm /022 \) -print -quit)
  [[ -z "$offender" ]] && return 0
  owner=$(stat -c %u -- "$offender")
  if [[ "$owner" != "$(id -u)" ]]; then
    die "CRIU_CACHE_UNSAFE: $offender is owned by uid $owner, not by you (uid $(id -u));" \
        "criu.sh runs only a cache you own: remove $cache or set DMLP_CRIU_CACHE"
  fi
  die "CRIU_CACHE_UNSAFE: $offender may be written by group or others (mode $(stat -c %a -- "$offender"));" \
      "criu.sh runs only a cache no one else can change: remove $cache or set DMLP_CRIU_CACHE"
}

ensure() {
  if [[ ! -d "$cache" ]]; then
    mkdir -p "$cache" || die "CRIU_FETCH_FAILED: cannot create $cache (root, or set DMLP_CRIU_CACHE)"
  fi
  cache=$(cd -P -- "$cache" && pwd)
  root="$cache/root"
  check_cache
  ready && return 0
  # Two tests may ask at once on a fresh machine: one fetches, the other waits.
  exec 9>"$cache/.lock"
  flock 9
  ready || fetch
  flock -u 9
  exec 9>&-
  ready || die "CRIU_FETCH_FAILED: $root lacks usr/sbin/criu or the loader"
  check_cache  # what the packages unpacked must pass too
}

run_criu() { exec "$(loader)" --library-path "$(library_path)" "$root/usr/sbin/criu" "$@"; }

bundle() {  # bundle DIR: criu runnable from DIR alone (the GPU kit carries it)
  local dir=$1
  mkdir -p "$dir/criu-root/bin" "$dir/criu-root/lib"
  cp -L "$root/usr/sbin/criu" "$dir/criu-root/bin/criu"
  # Every shared object criu loads comes from sid: copy them all, their version
  # links kept as links (all relative, within the folder).
  local library
  for library in "$root/usr/lib/$multiarch"/*.so*; do
    cp -a "$library" "$dir/criu-root/lib/"
  done
  cat >"$dir/criu" <<'EOF'
#!/bin/sh
# criu (Debian sid, copied by tools/criu.sh --bundle) with its own loader and libraries.
here=$(cd "$(dirname "$0")" && pwd)
exec "$here/criu-root/lib/ld-linux-x86-64.so.2" --library-path "$here/criu-root/lib" \
  "$here/criu-root/bin/criu" "$@"
EOF
  chmod +x "$dir/criu"
  # The flags travel with the bundle: where it runs there is no tools/criu.sh.
  echo "${dmlp_dump_flags[*]}" >"$dir/dmlp-dump-flags"
  echo "${dmlp_restore_flags[*]}" >"$dir/dmlp-restore-flags"
  "$dir/criu" --version >/dev/null || die "CRIU_BUNDLE_FAILED: $dir/criu does not run"
}

case "${1:-}" in
  --dmlp-dump-flags) echo "${dmlp_dump_flags[*]}"; exit 0 ;;
  --dmlp-restore-flags) echo "${dmlp_restore_flags[*]}"; exit 0 ;;
esac
ensure
case "${1:-}" in
  --path) echo "$cache" ;;
  --bundle)
    [[ $# -eq 2 && -n "$2" ]] || die "usage: tools/criu.sh --bundle DIR"
    bundle "$2" ;;
  *) run_criu "$@" ;;
esac
