#!/usr/bin/env bash
# What counting a tracepoint adds per run: `abperf run -N -e tlb:tlb_flush true` against the
# same without -e, in interleaved rounds; perf stat -r N with and without the event beside it.
# abperf's per run cost is the median gap between the starts of consecutive runs (from the
# store), so fixed costs (the event probe, the holder's register/unregister) fall out; perf
# stat's is (T(2N) - T(N)) / N.
# Usage: benches/tracepoint_holders.sh [RUNS] [ROUNDS] [EVENT]
#   ABPERF_BEFORE=/path/to/older/abperf adds its row (e.g. a build without holder events).
set -euo pipefail
RUNS=${1:-60}
ROUNDS=${2:-5}
EVENT=${3:-tlb:tlb_flush}
cd "$(dirname "$0")/.."
cargo build --release --quiet
ABPERF=$PWD/target/release/abperf
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# Median gap (us) between consecutive run starts of the latest experiment in db $1.
gap_us() {
    "$2" export latest --db "$1" --format csv | python3 -c '
import csv, statistics, sys
rows = sorted(csv.DictReader(sys.stdin), key=lambda r: int(r["seq"]))
s = [int(r["started_ns"]) for r in rows]
print(round(statistics.median(b - a for a, b in zip(s, s[1:])) / 1e3))'
}

wall_us() { local t0 t1; t0=$(date +%s%N); "$@" >/dev/null 2>&1; t1=$(date +%s%N); echo $(( (t1 - t0) / 1000 )); }

declare -A R
add() { R[$1]="${R[$1]:-} $2"; }
med() { tr ' ' '\n' <<<"$1" | grep . | sort -n | awk '{a[NR]=$1} END{print (NR%2 ? a[(NR+1)/2] : int((a[NR/2]+a[NR/2+1])/2))}'; }

have() { command -v "$1" >/dev/null; }
for round in $(seq "$ROUNDS"); do
    for bin in ${ABPERF_BEFORE:+before} after; do
        b=$ABPERF; [ "$bin" = before ] && b=$ABPERF_BEFORE
        db=$TMP/$bin-$round.db
        "$b" run --db "$db" -N -r "$RUNS" --warmup 0 true >/dev/null 2>&1
        plain=$(gap_us "$db" "$b")
        "$b" run --db "$db" -N -r "$RUNS" --warmup 0 -e "$EVENT" true >/dev/null 2>&1
        counted=$(gap_us "$db" "$b")
        add "$bin-plain" "$plain"; add "$bin-event" "$counted"; add "$bin-diff" $((counted - plain))
    done
    if have perf; then
        a=$(wall_us perf stat -r "$RUNS" true); b=$(wall_us perf stat -r $((2 * RUNS)) true)
        c=$(wall_us perf stat -r "$RUNS" -e "$EVENT" true); d=$(wall_us perf stat -r $((2 * RUNS)) -e "$EVENT" true)
        add perf-plain $(( (b - a) / RUNS )); add perf-event $(( (d - c) / RUNS )); add perf-diff $(( (d - c - b + a) / RUNS ))
    fi
    echo "round $round done" >&2
done
printf '%-44s %12s %12s %12s\n' "per run, median of $ROUNDS rounds ($RUNS runs)" "no -e (us)" "-e (us)" "added (us)"
for t in ${ABPERF_BEFORE:+before} after perf; do
    [ -n "${R[$t-plain]:-}" ] || continue
    case $t in
        before) label="abperf before (no holder events)";;
        after) label="abperf (holder event per tracepoint)";;
        perf) label="perf stat -r N (peer)";;
    esac
    printf '%-44s %12s %12s %12s\n' "$label" "$(med "${R[$t-plain]}")" "$(med "${R[$t-event]}")" "$(med "${R[$t-diff]}")"
done
echo "event: $EVENT; load: $(cut -d' ' -f1-3 /proc/loadavg)"
