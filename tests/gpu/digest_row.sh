#!/usr/bin/env bash
# The "digest threads" row of run_gpu_checks.sh:
# runs `gpu_bench --digest-sweep` and prints one line, `STATUS DETAIL`:
#   PASS/MISS  the sweep ran; MISS when the step with the digest at the K the
#              kit's jobs use (DIGEST_THREADS, else the trainer's default the
#              sweep prints) is more than 1.05x the step without (a speed
#              goal: reported, never a failure)
#   SKIP       gpu_bench has no --digest-sweep (a kit built before it)
#   FAIL       gpu_bench failed, or printed no figure for some K
# Detail: per K, one pipeline's and each of 8 pipelines' SHA-256 rate on the
# host and the GPU step's ratio with/without the digest.
# Usage: digest_row.sh BIN_DIR OUTPUT_FILE TIMEOUT_SECONDS
set -uo pipefail
export LC_ALL=C
[ $# -eq 3 ] || { echo "usage: digest_row.sh BIN_DIR OUTPUT_FILE TIMEOUT_SECONDS" >&2; exit 2; }
bin="$1" out="$2" limit="$3"

# The mode the row runs, not an option that merely exists: --digest-threads
# takes a value and measured nothing of its own.
# grep reads the whole help (not -q): a grep that stops at its match can end
# the writer with SIGPIPE, and pipefail would read that as no sweep.
if ! "$bin/gpu_bench" --help 2>&1 | grep -- '--digest-sweep' >/dev/null; then
  echo "SKIP gpu_bench has no --digest-sweep (a kit built before the digest sweep)"
  exit 0
fi
timeout -k 5 "$limit" "$bin/gpu_bench" --digest-sweep >"$out" 2>&1
rc=$?
if [ "$rc" -ne 0 ]; then
  echo "FAIL rc=$rc: $({ grep -m1 'error' "$out" || tail -n 2 "$out"; } | tr '\n' ' ')"
  exit 0
fi
awk -v job_k="${DIGEST_THREADS:-}" '
  function field(name,   i) { for (i = 2; i <= NF; i++) if (index($i, name "=") == 1) return substr($i, length(name) + 2); return "" }
  /^digest_sweep_default_threads=/ { split($0, kv, "="); default_k = kv[2] }
  /^digest_sweep / {
    k = field("threads")
    if (field("pipelines") == 1) { one[k] = field("gb_per_s"); ratio[k] = field("ratio"); image = field("image_mb") }
    else { many[k] = field("gb_per_s"); pipes = field("pipelines") }
  }
  END {
    split("1 2 4 8", ks, " ")
    for (i = 1; i <= 4; i++) {
      k = ks[i]
      if (one[k] == "" || many[k] == "" || ratio[k] == "") missing = missing " K=" k
      detail = detail sprintf("K=%s: %s GB/s, %sx%s GB/s, step x%s; ", k, one[k], pipes, many[k], ratio[k])
    }
    if (missing != "") { print "FAIL no figures for" missing; exit }
    judged = job_k != "" ? job_k : default_k
    if (ratio[judged] == "") { print "FAIL no figures for the judged K=" judged; exit }
    goal = ratio[judged] + 0 <= 1.05 ? "PASS" : "MISS"
    printf "%s %s MB image; %sjudged at K=%s (%s; goal: step x<=1.05)\n", goal, image, detail, judged,
           job_k != "" ? "DIGEST_THREADS of the jobs" : "the default of the trainer"
  }' "$out"
