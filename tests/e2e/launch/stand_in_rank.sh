#!/bin/sh
# Stand-in rank for the dmlp-launch e2e tests (see launch_e2e.py). What it
# does comes from the environment:
#   STAND_IN_DIR          where it writes rank-$PROCESS_ID.pid (its own pid) and
#                         bg-$PROCESS_ID.pid (its background child); required
#   STAND_IN_FAIL_RANK    the rank that fails, once every rank has written its pid
#                         file and the test has created $STAND_IN_DIR/go
#   STAND_IN_FAIL_WITH    exit:N or signal:NAME (default exit:1)
#   STAND_IN_IGNORE_TERM  1: ignore SIGTERM (inherited by its children too)
#   STAND_IN_BACKGROUND   1: start a background child first
#   STAND_IN_SLEEP        how long the other ranks sleep (default 60 s)
set -u
dir=${STAND_IN_DIR:?STAND_IN_DIR is required}
rank=${PROCESS_ID:?}

if [ "${STAND_IN_IGNORE_TERM:-0}" = 1 ]; then trap '' TERM; fi
if [ "${STAND_IN_BACKGROUND:-0}" = 1 ]; then
  sleep 60 &
  echo $! > "$dir/bg-$rank.tmp" && mv "$dir/bg-$rank.tmp" "$dir/bg-$rank.pid"
fi
# Written last, so a pid file means "set up": traps and children are in place.
echo $$ > "$dir/rank-$rank.tmp" && mv "$dir/rank-$rank.tmp" "$dir/rank-$rank.pid"
echo "rank $rank ready local=$LOCAL_RANK world=$NUM_PROCESSES"

if [ "$rank" = "${STAND_IN_FAIL_RANK:-none}" ]; then
  waited=0
  while { [ ! -e "$dir/go" ] || [ "$(ls "$dir" | grep -c '^rank-.*\.pid$')" -lt "$NUM_PROCESSES" ]; } &&
        [ $waited -lt 2000 ]; do
    sleep 0.01
    waited=$((waited + 1))
  done
  how=${STAND_IN_FAIL_WITH:-exit:1}
  echo "rank $rank failing with $how" >&2
  case $how in
    exit:*) exit "${how#exit:}" ;;
    signal:*) kill -s "${how#signal:}" $$; sleep 5; exit 99 ;;
  esac
fi
sleep "${STAND_IN_SLEEP:-60}"
