#!/usr/bin/env bash
# `abperf compare a.txt b.txt` of 1,000,000 + 1,000,000 plain values (issue 31's target: under 12
# s of CPU) beside its peer, benches/compare_scipy.py (Welch + Mann-Whitney + a 200-resample
# bootstrap of the mean ratio in scipy/numpy), and the floor `wc -l` of the same two files,
# interleaved per round: wall, CPU (user+sys), max RSS, median over ROUNDS rounds, with the load.
# abperf runs its whole default analysis (also Hodges-Lehmann, BCa of three ratios, Brown-Forsythe,
# TOST, the footer), so it does more than the peer.
# Usage: benches/compare_million.sh [ROUNDS]   (default 3)
#   N=100000 for smaller files; ABPERF=/path/to/abperf (default: target/release/abperf, built).
set -euo pipefail
ROUNDS=${1:-3}
N=${N:-1000000}
cd "$(dirname "$0")/.."
if [ -z "${ABPERF:-}" ]; then
    cargo build --release --quiet --locked
    ABPERF=$PWD/target/release/abperf
fi
python3 -c 'import scipy' 2>/dev/null || { echo "no scipy for python3 (pip install scipy)" >&2; exit 1; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
python3 - "$TMP" "$N" <<'PY'
import random, sys
d, n = sys.argv[1], int(sys.argv[2])
for s, name in ((1, "a"), (2, "b")):
    r = random.Random(n * 10 + s)
    with open(f"{d}/{name}.txt", "w") as f:
        f.write("".join("%.6f\n" % r.gauss(100 + s * 0.5, 5) for _ in range(n)))
PY
timed() { # label command... -> "label wall cpu rss" into $TMP/rows
    local label=$1
    shift
    /usr/bin/time -f '%e %U %S %M' -o "$TMP/time" "$@" >"$TMP/out.$label" 2>"$TMP/err" ||
        { echo "$label failed:" >&2; cat "$TMP/err" >&2; exit 1; }
    read -r wall user sys rss <"$TMP/time"
    echo "$label $wall $(echo "$user + $sys" | bc) $rss" >>"$TMP/rows"
}
for r in $(seq "$ROUNDS"); do
    timed wc wc -l "$TMP/a.txt" "$TMP/b.txt"
    timed abperf env ABPERF_DB="$TMP/db" "$ABPERF" compare "$TMP/a.txt" "$TMP/b.txt"
    timed scipy python3 benches/compare_scipy.py "$TMP/a.txt" "$TMP/b.txt"
    echo "round $r done, load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
done
python3 - "$TMP/rows" "$N" <<'PY'
import statistics, sys
rows = {}
for l in open(sys.argv[1]):
    label, wall, cpu, rss = l.split()
    rows.setdefault(label, []).append((float(wall), float(cpu), int(rss)))
n = int(sys.argv[2])
print(f"{n:,} + {n:,} values, median of {len(rows['abperf'])} rounds")
print(f"{'':8} {'wall s':>8} {'CPU s':>8} {'max RSS MB':>11}")
for label in ["wc", "abperf", "scipy"]:
    med = lambda i: statistics.median(x[i] for x in rows[label])
    print(f"{label:8} {med(0):>8.2f} {med(1):>8.2f} {med(2) / 1024:>11.0f}")
PY
grep -i "bootstrap\|resample" "$TMP/out.abperf" | head -2 || true
echo "load: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs"
