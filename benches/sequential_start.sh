#!/usr/bin/env bash
# What `abperf run --until-decided` adds to an invocation (issue 46): wall and CPU time of
# `abperf run --no-store -r 20 --until-decided -n a -n b true true` against the same without
# --until-decided (the same 2 x 20 runs of `true`: an A/A pair runs to its last look),
# interleaved in ROUNDS rounds; medians and their difference. Before issue 46 the Welch boundary
# constant was simulated from 400,000 experiments in every process (1.7 s CPU, 5 s wall under
# load); now the common plans' constants are a committed table, others cached in
# ~/.cache/abperf/sequential. Rows for a plan outside the table are timed with a fresh cache
# (the first invocation simulates, later ones read the cache).
# Usage: benches/sequential_start.sh [ROUNDS]   (default 20)
#   ABPERF=/path/to/abperf times another build (default: target/release/abperf, built first).
set -euo pipefail
ROUNDS=${1:-20}
cd "$(dirname "$0")/.."
if [ -z "${ABPERF:-}" ]; then
    cargo build --release --quiet
    ABPERF=$PWD/target/release/abperf
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
export XDG_CACHE_HOME=$TMP/cache
one() { # label args... -> "label wall cpu"
    local label=$1; shift
    /usr/bin/time -f '%e %U %S' -o "$TMP/time" "$ABPERF" run --no-store "$@" >/dev/null 2>"$TMP/err" \
        || { cat "$TMP/err" >&2; exit 1; }
    read -r wall user sys <"$TMP/time"
    echo "$label $wall $(echo "$user + $sys" | bc)" >>"$TMP/rows"
}
# A plan outside the table, first with an empty cache.
/usr/bin/time -f '%e %U %S' -o "$TMP/time" "$ABPERF" run --no-store -r 17 --until-decided -n a -n b true true \
    >/dev/null 2>&1
read -r wall user sys <"$TMP/time"
echo "first invocation of an untabulated plan (-r 17, simulated, then cached): wall $wall s, CPU $(echo "$user + $sys" | bc) s"
for r in $(seq "$ROUNDS"); do
    one plain -r 20 -n a -n b true true
    one until-decided -r 20 --until-decided -n a -n b true true
    one "until-decided(-r17,cached)" -r 17 --until-decided -n a -n b true true
done
python3 - "$TMP/rows" <<'PY'
import statistics, sys
rows = {}
for l in open(sys.argv[1]):
    label, wall, cpu = l.split()
    rows.setdefault(label, []).append((float(wall), float(cpu)))
med = lambda label, i: statistics.median(x[i] for x in rows[label])
print(f"{'case':<28} {'wall ms':>8} {'CPU ms':>8} {'+wall ms':>9} {'+CPU ms':>8}  (median of {len(rows['plain'])} rounds)")
for label in rows:
    w, c = med(label, 0), med(label, 1)
    print(f"{label:<28} {w*1e3:>8.0f} {c*1e3:>8.0f} {(w-med('plain',0))*1e3:>9.0f} {(c-med('plain',1))*1e3:>8.0f}")
PY
echo "load: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs"
