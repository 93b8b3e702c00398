#!/usr/bin/env bash
# A/A false-call rate of the profile differential (issue 44), end to end: REPS repetitions of
# `abperf run --profile` with two identical variants (tests/programs/hot_cold.c, the same
# arguments), each with its own seed: -r RUNS timed runs and --profile-runs RUNS profiled runs
# per variant, interleaved in the seeded ABBA order; then `compare --format json` and the
# symbols named (Welch p, Benjamini-Hochberg at 5% over the symbols). Nothing differs, so any
# named symbol is a false call. Target: no symbol named in at least 95% of repetitions.
# The last line gives the rate with its 95% Wilson interval, the date and the load average.
# Usage: benches/profile_aa.sh [REPS [RUNS [ROUNDS]]]   (default 20, 5 and 300: ROUNDS rounds of
# hot_cold's loops, ~0.2 ms each; 100 REPS of 5+5 runs at ROUNDS 100 take ~25 min here)
# Needs cc, perf and a built abperf (ABPERF, default target/debug/abperf).
set -euo pipefail
cd "$(dirname "$0")/.."
reps="${1:-20}"
runs="${2:-5}"
rounds="${3:-300}"
abperf="${ABPERF:-target/debug/abperf}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc -O1 -fno-omit-frame-pointer -o "$tmp/hc" tests/programs/hot_cold.c
cmd="$tmp/hc $rounds 100000 100000"
echo "started $(date -u +%FT%TZ), load $(cut -d" " -f1-3 /proc/loadavg)"
any=0
for i in $(seq 1 "$reps"); do
    db="$tmp/aa$i.db"
    "$abperf" run --db "$db" --seed "$((4400 + i))" --profile --profile-runs "$runs" -r "$runs" \
        --warmup 0 -n A -n B "$cmd" "$cmd" >/dev/null 2>&1
    n=$("$abperf" compare 1 --db "$db" --format json | python3 -c '
import json, sys
d = json.load(sys.stdin)["profile"]["differentials"][0]["differential"]
named = [s["symbol"] for s in d["symbols"] if s["named"]]
print(len(named), len(d["symbols"]), " ".join(named))')
    set -- $n
    echo "repetition $i (seed $((4400 + i))): $1 of $2 symbols named ${3:-}"
    if [ "$1" != 0 ]; then any=$((any + 1)); fi
    rm -f "$db"
done
echo "repetitions naming any symbol: $any of $reps"
python3 -c '
import math, sys
k, n, z = int(sys.argv[1]), int(sys.argv[2]), 1.959964
p = k / n
c = (p + z * z / (2 * n)) / (1 + z * z / n)
h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
print("rate %.1f%% (95%% Wilson interval %.1f..%.1f%%)" % (100 * p, 100 * max(0, c - h), 100 * min(1, c + h)))
' "$any" "$reps"
echo "finished $(date -u +%FT%TZ), load $(cut -d" " -f1-3 /proc/loadavg)"
