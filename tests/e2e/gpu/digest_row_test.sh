#!/usr/bin/env bash
# tests/gpu/digest_row.sh (the kit's "digest threads" row) against two
# stand-ins for gpu_bench, without a GPU:
#   1. a gpu_bench from before --digest-sweep: --help lists --digest-threads, which
#      takes a value; called without one it stops at CLI11's error. The row
#      must SKIP (the old row grepped --help for --digest-threads and FAILed).
#   2. a gpu_bench with --digest-sweep whose host figures come from the real
#      digest_bench (small image) and whose GPU ratios are fixed: the row
#      must report every K = 1, 2, 4, 8 for 1 and 8 pipelines, PASS at a ratio
#      <= 1.05 for the K the kit's jobs use (DIGEST_THREADS; else the default K
#      the sweep prints) and MISS above it; a K missing is a FAIL.
# Usage: digest_row_test.sh DIGEST_ROW_SH DIGEST_BENCH
set -uo pipefail
unset DIGEST_THREADS  # the cases set it themselves
row="$1" digest_bench="$2"
work="$(mktemp -d -t dmlp26-digest-row.XXXXXX)"
trap 'rm -rf "$work"' EXIT
failures=0
expect() {  # expect NAME WANTED_REGEX ACTUAL
  if [[ "$3" =~ $2 ]]; then echo "ok: $1"; else echo "FAILED: $1: wanted /$2/, got: $3"; failures=1; fi
}

mkdir -p "$work/old" "$work/new"
cat >"$work/old/gpu_bench" <<'SH'
#!/usr/bin/env bash
case "$*" in
  --help) echo "  --digest-threads INT:INT in [1 - 64]  DIGEST_THREADS"; exit 0 ;;
  --digest-threads) echo "--digest-threads: 1 required INT:INT in [1 - 64] missing"; exit 109 ;;
esac
exit 1
SH
# The sweep's lines as gpu_bench prints them: host figures measured by
# digest_bench, GPU figures from DIGEST_ROW_RATIO (ratio per K).
cat >"$work/new/gpu_bench" <<SH
#!/usr/bin/env bash
case "\$*" in
  --help) echo "  --digest-sweep   only the digest"; exit 0 ;;
  --digest-sweep) ;;
  *) exit 1 ;;
esac
echo "digest_sweep_default_threads=\${DIGEST_ROW_DEFAULT_K:-2}"
"$digest_bench" --image-bytes 2000000 --steps 2 --pipelines 1,8 --threads \${DIGEST_ROW_THREADS:-1,2,4,8} |
  awk -v ratio="\${DIGEST_ROW_RATIO:-1.010}" -v ratios="\${DIGEST_ROW_RATIOS:-}" '
    BEGIN { n = split(ratios, pairs, " "); for (i = 1; i <= n; i++) { split(pairs[i], kv, "="); per_k[kv[1]] = kv[2] } }
    { if (\$0 ~ / pipelines=1 /) { k = \$2; sub(/threads=/, "", k); r = (k in per_k) ? per_k[k] : ratio
                                  \$0 = \$0 " gpu_step_ms=40.00 gpu_step_with_digest_ms=40.40 ratio=" r }
      print }'
SH
chmod +x "$work/old/gpu_bench" "$work/new/gpu_bench"

expect "a gpu_bench without the sweep is a SKIP" '^SKIP gpu_bench has no --digest-sweep' \
  "$("$row" "$work/old" "$work/old.out" 60)"

result="$("$row" "$work/new" "$work/new.out" 120)"
expect "the sweep's figures for every K" \
  '^PASS 2\.0 MB image; K=1: [0-9.]+ GB/s, 8x[0-9.]+ GB/s, step x1\.010; K=2: .*K=8: [0-9.]+ GB/s, 8x[0-9.]+ GB/s, step x1\.010; judged at K=2' \
  "$result"
# The goal is judged at the K the kit's jobs run with (DIGEST_THREADS), not at
# the trainer's default for the host, which the kit does not use.
expect "judged at the jobs' DIGEST_THREADS" '^PASS .*judged at K=2 \(DIGEST_THREADS of the jobs' \
  "$(DIGEST_THREADS=2 DIGEST_ROW_DEFAULT_K=8 DIGEST_ROW_RATIOS='1=1.30 2=1.01 4=1.20 8=1.30' "$row" "$work/new" "$work/new.out" 120)"
expect "without DIGEST_THREADS, judged at the default K" '^MISS .*judged at K=8 \(the default of the trainer' \
  "$(DIGEST_THREADS='' DIGEST_ROW_DEFAULT_K=8 DIGEST_ROW_RATIOS='1=1.30 2=1.01 4=1.20 8=1.30' "$row" "$work/new" "$work/new.out" 120)"
expect "a ratio over 1.05 is a MISS" '^MISS ' \
  "$(DIGEST_ROW_RATIO=1.200 "$row" "$work/new" "$work/new.out" 120)"
expect "a K without figures is a FAIL" '^FAIL no figures for K=8' \
  "$(DIGEST_ROW_THREADS=1,2,4 "$row" "$work/new" "$work/new.out" 120)"
exit "$failures"
