#!/usr/bin/env bash
# `abperf compare` of an experiment WITH a run order (issue 46): 2 variants x N runs imported
# with a `seq` column (alternating, a slow drift, B 1% slower), so the drift check (stratified
# Mann-Kendall, Sen's slope over each variant's pairs, lag-1 autocorrelation) and everything else
# compare runs on an ordered experiment; N = 10,000, 100,000 and 1,000,000 per variant. Prints
# wall, CPU (user+sys) and max RSS of `compare` (the import is not timed), the median of ROUNDS
# rounds, and the RSS per run, which stays flat when memory is linear in runs. Before issue 46
# the drift check kept all n(n-1)/2 slopes: 10,000 per variant took 1.99 GB, 20,000 failed to
# allocate 3.2 GB, 50,000 was killed at 23.9 GB.
# Usage: benches/ordered_compare.sh [ROUNDS]   (default 3)
#   SIZES="10000 100000" to run fewer sizes; ABPERF=/path/to/abperf to time another build
#   (default: target/release/abperf, built first).
set -euo pipefail
ROUNDS=${1:-3}
SIZES=${SIZES:-10000 100000 1000000}
cd "$(dirname "$0")/.."
if [ -z "${ABPERF:-}" ]; then
    cargo build --release --quiet
    ABPERF=$PWD/target/release/abperf
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
for n in $SIZES; do
    python3 benches/ordered_runs.py "$n" >"$TMP/runs$n.csv"
    ABPERF_DB=$TMP/db$n.sqlite "$ABPERF" import --format csv "$TMP/runs$n.csv" >/dev/null
done
for r in $(seq "$ROUNDS"); do
    for n in $SIZES; do
        /usr/bin/time -f '%e %U %S %M' -o "$TMP/time" env ABPERF_DB="$TMP/db$n.sqlite" \
            "$ABPERF" compare 1 >"$TMP/out$n" 2>"$TMP/err" || { cat "$TMP/err" >&2; exit 1; }
        read -r wall user sys rss <"$TMP/time"
        echo "$n $wall $(echo "$user + $sys" | bc) $rss" >>"$TMP/rows"
    done
    echo "round $r done, load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
done
python3 - "$TMP/rows" <<'PY'
import statistics, sys
rows = {}
for l in open(sys.argv[1]):
    n, wall, cpu, rss = l.split()
    rows.setdefault(int(n), []).append((float(wall), float(cpu), int(rss)))
print(f"{'ordered runs':>17} {'wall s':>8} {'CPU s':>8} {'max RSS MB':>11} {'RSS B/run':>10}"
      f"  (median of {len(next(iter(rows.values())))} rounds)")
for n, v in sorted(rows.items()):
    med = lambda i: statistics.median(x[i] for x in v)
    print(f"{f'{n:,}+{n:,}':>17} {med(0):>8.2f} {med(1):>8.2f} {med(2)/1024:>11.0f}"
          f" {med(2)*1024/(2*n):>10.0f}")
PY
echo "drift line at the largest size: $(grep -i drift "$TMP/out${SIZES##* }" | head -1)"
echo "load: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs"
