#!/usr/bin/env bash
# `abperf compare a.txt b.txt` on plain-value files (the default analysis: Welch with Fieller's
# CI, Mann-Whitney, Hodges-Lehmann, BCa bootstrap of the mean/median/SD ratios with 10,000
# resamples (fewer above 20,000 values: bootstrap::capped_resamples), Brown-Forsythe, TOST...)
# for 50+50, 10,000+10,000 and 100,000+100,000 values: wall, CPU (user+sys) and max RSS.
# Peer, interleaved in the same rounds: the same tests in scipy (python3 with scipy: Welch,
# Mann-Whitney, Brown-Forsythe and scipy.stats.bootstrap(method='BCa') of the three ratios
# with as many resamples as abperf takes), interpreter start-up included as abperf's is.
# Hodges-Lehmann is left out of the peer: scipy has none, and the n x m differences of
# 100,000+100,000 (80 GB) are what abperf no longer builds. The peer runs only up to
# PEER_MAX values per sample (default 10,000): scipy's BCa jackknife recomputes the statistic
# on every leave-one-out sample (n^2 work: 100,000+100,000 did not finish in 2 minutes here).
# The files are generated deterministically (normal values, seeds fixed).
# Usage: benches/stats_speed.sh [ROUNDS]   (default 3; medians over the rounds)
#   ABPERF_BEFORE=/path/to/older/abperf adds its rows.
#   SIZES="50 10000" to run fewer sizes; NO_PEER=1 to skip scipy.
set -euo pipefail
ROUNDS=${1:-3}
SIZES=${SIZES:-50 10000 100000}
cd "$(dirname "$0")/.."
cargo build --release --quiet
ABPERF=$PWD/target/release/abperf
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
python3 - "$TMP" $SIZES <<'PY'
import random, sys
d = sys.argv[1]
for n in map(int, sys.argv[2:]):
    for s, name in ((1, "a"), (2, "b")):
        r = random.Random(n * 10 + s)
        with open(f"{d}/{name}{n}.txt", "w") as f:
            f.write("".join("%.6f\n" % r.gauss(100 + s * 0.5, 5) for _ in range(n)))
PY
PEER=""
if [ -z "${NO_PEER:-}" ] && python3 -c 'import scipy' 2>/dev/null; then
    PEER=$TMP/peer.py
    cat >"$PEER" <<'PY'
import sys
import numpy as np
from scipy import stats
a, b = (np.loadtxt(p) for p in sys.argv[1:3])
resamples = min(10_000, max(200_000_000 // (len(a) + len(b)), 1000))
stats.ttest_ind(b, a, equal_var=False)
stats.mannwhitneyu(b, a)
stats.levene(a, b, center="median")
batch = max(1, 20_000_000 // (len(a) + len(b)))
rng = np.random.default_rng(24301)
for f in (np.mean, np.median, lambda x, axis: np.std(x, ddof=1, axis=axis)):
    stat = lambda x, y, axis: f(y, axis=axis) / f(x, axis=axis)
    stats.bootstrap((a, b), stat, n_resamples=resamples, method="BCa", batch=batch,
                    vectorized=True, random_state=rng)
PY
fi
row() { # label n cmd... -> "label n wall cpu rss"
    local label=$1 n=$2; shift 2
    /usr/bin/time -f '%e %U %S %M' -o "$TMP/time" "$@" >/dev/null 2>"$TMP/err" || { cat "$TMP/err" >&2; return 1; }
    read -r wall user sys rss <"$TMP/time"
    echo "$label $n $wall $(echo "$user + $sys" | bc) $rss" >>"$TMP/rows"
}
for r in $(seq "$ROUNDS"); do
    for n in $SIZES; do
        row abperf "$n" "$ABPERF" compare "$TMP/a$n.txt" "$TMP/b$n.txt"
        [ -n "$PEER" ] && [ "$n" -le "${PEER_MAX:-10000}" ] && row scipy "$n" python3 "$PEER" "$TMP/a$n.txt" "$TMP/b$n.txt"
        [ -n "${ABPERF_BEFORE:-}" ] && row before "$n" "$ABPERF_BEFORE" compare "$TMP/a$n.txt" "$TMP/b$n.txt"
    done
    echo "round $r done, load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
done
[ -z "$PEER" ] && echo "peer: none (python3 with scipy not installed)"
python3 - "$TMP/rows" <<'PY'
import statistics, sys
rows = {}
for l in open(sys.argv[1]):
    label, n, wall, cpu, rss = l.split()
    rows.setdefault((label, int(n)), []).append((float(wall), float(cpu), int(rss)))
print(f"{'tool':<8} {'values':>15} {'wall s':>8} {'CPU s':>8} {'max RSS MB':>11}  (median of {len(next(iter(rows.values())))} rounds)")
for (label, n), v in sorted(rows.items(), key=lambda kv: (kv[0][1], kv[0][0])):
    med = lambda i: statistics.median(x[i] for x in v)
    print(f"{label:<8} {f'{n:,}+{n:,}':>15} {med(0):>8.3f} {med(1):>8.3f} {med(2)/1024:>11.0f}")
PY
echo "load: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs"
