#!/usr/bin/env bash
# A/A false-positive rate of `abperf compare A B` on micro experiments (issue 17): PAIRS pairs of
# `abperf micro --quick` run back to back on this machine, each pair compared configuration by
# configuration (rounds as the unit, Holm over all configurations). Nothing changed between the
# two runs of a pair, so every configuration called FASTER/SLOWER is a false positive of the
# comparison or a change of the host between the runs. Printed per pair: configurations called
# different, families with any, the cautions (whole-family shifts), and the SMT pressure of both.
# Target (issue 17): at most alpha x families (0.05 x 10) families called different.
# Usage: benches/micro_aa.sh [PAIRS]     (default 2; needs python3)
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}"
cargo build --release --quiet
bin="$CARGO_TARGET_DIR/release/abperf"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pairs="${1:-2}"
id=0
for p in $(seq 1 "$pairs"); do
    "$bin" micro --quick --db "$tmp/aa.db" > /dev/null 2>&1
    "$bin" micro --quick --db "$tmp/aa.db" > /dev/null 2>&1
    a=$((id + 1)); b=$((id + 2)); id=$b
    "$bin" compare "$a" "$b" --db "$tmp/aa.db" --format json > "$tmp/c$p.json"
    python3 - "$tmp/c$p.json" "$p" "$a" "$b" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
m = d["micro_compare"]
rows = m["rows"]
diff = [r for r in rows if r["verdict"] in ("faster", "slower")]
fams = [f for f in m["families"] if f["faster"] + f["slower"] > 0]
nd = sum(r["verdict"] == "no difference" for r in rows)
print(f"pair {sys.argv[2]} (#{sys.argv[3]} vs #{sys.argv[4]}): {len(diff)} of {len(rows)} "
      f"configurations called different ({100 * len(diff) / len(rows):.1f}%), "
      f"{len(fams)} of {len(m['families'])} families: "
      + (", ".join(f"{f['bench']} {f['faster'] + f['slower']}/{f['configurations']}" for f in fams) or "none")
      + f"; {nd} no difference within the margin")
for c in m["cautions"]:
    print(f"  caution: {c}")
pr = [e["design"].get("adds_per_cycle", {}).get("median") for e in d["experiments"]]
print(f"  SMT pressure (median adds/cycle): {pr[0]:.2f} and {pr[1]:.2f}" if None not in pr else "")
for r in sorted(diff, key=lambda r: -abs(r["ratio"] - 1))[:5]:
    print(f"  {r['config']}: {100 * (r['ratio'] - 1):+.1f}% (CI {100 * (r['ratio_ci'][0] - 1):+.1f}%.."
          f"{100 * (r['ratio_ci'][1] - 1):+.1f}%)")
PY
done
du -h "$tmp/aa.db" | awk -v n=$((pairs * 2)) '{print "store: " $1 " for " n " quick experiments"}'
