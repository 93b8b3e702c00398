#!/usr/bin/env bash
# A/A false-positive rate of `abperf compare A B` on micro experiments (issue 17): PAIRS pairs of
# `abperf micro --quick` run back to back on this machine, each pair compared configuration by
# configuration (rounds as the unit, Holm over all configurations). Nothing changed between the
# two runs of a pair, so every configuration called FASTER/SLOWER is a false positive of the
# comparison or a change of the host between the runs. Printed per pair: configurations called
# different, families with any, the cautions (whole-family shifts), and the SMT pressure of both
# (benches/micro_summary.py, shared with micro_ab.sh).
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
    python3 benches/micro_summary.py "$tmp/c$p.json" "pair $p"
done
du -h "$tmp/aa.db" | awk -v n=$((pairs * 2)) '{print "store: " $1 " for " n " quick experiments"}'
