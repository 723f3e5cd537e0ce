#!/bin/sh
# Stand-in rank for the dmlp-launch e2e tests (see test_*.py). What it
# does comes from the environment:
#   STAND_IN_DIR          where it writes rank-$PROCESS_ID.pid (its own pid) and
#                         bg-$PROCESS_ID.pid (its background child); required.
#                         Every process it starts is also appended to started.pids
#                         as "PID START_TIME" (all attempts of --restarts)
#   STAND_IN_FAIL_RANK    the rank that fails, once every rank has written its pid
#                         file and the test has created $STAND_IN_DIR/go
#   STAND_IN_FAIL_WITH    exit:N or signal:NAME (default exit:1)
#   STAND_IN_FAIL_LINE    a line the failing rank prints on stderr just before it
#                         fails (a dmlp-train error line such as RANK_DIVERGED: ...)
#   STAND_IN_FAIL_LINE_RESUMED  the same when RESUME=1 (default STAND_IN_FAIL_LINE)
#   STAND_IN_FAIL_ONCE    1: fail only while $STAND_IN_DIR/failed-once is absent
#                         (created on failing), so a restarted attempt succeeds
#   STAND_IN_IGNORE_TERM  1: ignore SIGTERM (inherited by its children too)
#   STAND_IN_BACKGROUND   1: start a background child first
#   STAND_IN_ESCAPE       1: in the first attempt (RESUME unset), also start a child in
#                         a session of its own (setsid), outside the rank's process
#                         group; pid in esc-$PROCESS_ID.pid
#   STAND_IN_SLEEP        how long the other ranks sleep (default 60 s)
#   STAND_IN_SLEEP_RESUMED  the same when RESUME=1 (default STAND_IN_SLEEP)
# With RESUME=1 and $STAND_IN_DIR/old.procs present ("PID START_TIME" lines, the
# processes of an earlier attempt), it first prints "old processes alive: ..."
# naming every one still there (a zombie counts), or "old processes alive: none".
set -u
# Die of SIGINT whenever it comes, as a program would. Left to itself, dash
# drops a SIGINT that came while it waited for a foreground command that did
# not die of it (an `mv` that had just finished, a `sleep` not yet exec'd), and
# the rank lived on to the SIGKILL. See also the sleep at the end.
trap 'trap - INT; kill -INT $$' INT
dir=${STAND_IN_DIR:?STAND_IN_DIR is required}
rank=${PROCESS_ID:?}

# "PID START_TIME" of a live process: field 22 of its stat (comm has no spaces here).
started() { echo "$1 $(cut -d' ' -f22 "/proc/$1/stat" 2>/dev/null)" >> "$dir/started.pids"; }

if [ "${RESUME:-0}" = 1 ] && [ -e "$dir/old.procs" ]; then
  alive=""
  while read -r pid start; do
    if [ "$(cut -d' ' -f22 "/proc/$pid/stat" 2>/dev/null)" = "$start" ]; then alive="$alive $pid"; fi
  done < "$dir/old.procs"
  echo "old processes alive:${alive:- none}"
fi

started $$
if [ "${STAND_IN_IGNORE_TERM:-0}" = 1 ]; then trap '' TERM; fi
if [ "${STAND_IN_BACKGROUND:-0}" = 1 ]; then
  sleep 60 &
  started $!
  echo $! > "$dir/bg-$rank.tmp" && mv "$dir/bg-$rank.tmp" "$dir/bg-$rank.pid"
fi
if [ "${STAND_IN_ESCAPE:-0}" = 1 ] && [ "${RESUME:-0}" != 1 ]; then
  # Not a group leader, so setsid(1) execs sleep in this very process: $! is the sleep.
  setsid sleep 60 </dev/null >/dev/null 2>&1 &
  started $!
  echo $! > "$dir/esc-$rank.tmp" && mv "$dir/esc-$rank.tmp" "$dir/esc-$rank.pid"
fi
# Written last, so a pid file means "set up": traps and children are in place.
echo $$ > "$dir/rank-$rank.tmp" && mv "$dir/rank-$rank.tmp" "$dir/rank-$rank.pid"
echo "rank $rank ready local=$LOCAL_RANK world=$NUM_PROCESSES resume=${RESUME:-unset}"

fail=no
if [ "$rank" = "${STAND_IN_FAIL_RANK:-none}" ]; then
  fail=yes
  if [ "${STAND_IN_FAIL_ONCE:-0}" = 1 ] && [ -e "$dir/failed-once" ]; then fail=no; fi
fi
# How many ranks of this attempt have written their pid file: files left by an
# earlier attempt name processes the launcher already reaped, so only live pids
# count (counting every file let a restarted rank fail before its peers had
# even started, and a test then missed them).
pid_files() {
  live=0
  for file in "$dir"/rank-*.pid; do
    if [ -e "$file" ] && kill -0 "$(cat "$file" 2>/dev/null)" 2>/dev/null; then live=$((live + 1)); fi
  done
  echo $live
}
if [ $fail = yes ]; then
  waited=0
  while { [ ! -e "$dir/go" ] || [ "$(pid_files)" -lt "$NUM_PROCESSES" ]; } &&
        [ $waited -lt 2000 ]; do
    sleep 0.01
    waited=$((waited + 1))
  done
  how=${STAND_IN_FAIL_WITH:-exit:1}
  if [ "${STAND_IN_FAIL_ONCE:-0}" = 1 ]; then touch "$dir/failed-once"; fi
  echo "rank $rank failing with $how" >&2
  line=${STAND_IN_FAIL_LINE:-}
  if [ "${RESUME:-0}" = 1 ]; then line=${STAND_IN_FAIL_LINE_RESUMED:-$line}; fi
  if [ -n "$line" ]; then printf '%s\n' "$line" >&2; fi
  case $how in
    exit:*) exit "${how#exit:}" ;;
    signal:*) kill -s "${how#signal:}" $$; sleep 5; exit 99 ;;
  esac
fi
duration=${STAND_IN_SLEEP:-60}
if [ "${RESUME:-0}" = 1 ]; then duration=${STAND_IN_SLEEP_RESUMED:-$duration}; fi
# Waited for in the background: `wait` gives way to the SIGINT trap at once,
# while a trap pending behind a foreground sleep waits for the sleep to end.
sleep "$duration" &
wait $!
echo "rank $rank done"
