#!/usr/bin/env bash
# A/A false-call rate of `abperf compare A B` on two separate micro experiments (issues 17, 26):
# PAIRS pairs of `abperf micro --quick [ARGS]` run back to back on this machine, each pair
# compared configuration by configuration (Holm over all configurations). Nothing changed
# between the two runs of a pair, so every configuration called FASTER/SLOWER is a false call
# of the comparison or a change of the host between the runs. Printed per pair: the unit
# (invocation, or round with the verdicts withheld), configurations called different (and,
# withheld, what the rounds within one process would have called), families with any, the
# cautions, the SMT pressure of both and the load; at the end the number of pairs with any call.
# Target (issue 26): no configuration called different in at least 19 of 20 pairs.
# Usage: benches/micro_aa.sh [PAIRS [MICRO ARGS...]]
#   PAIRS default 2; MICRO ARGS default: none (the whole suite, default settings: 4
#   invocations), e.g. `benches/micro_aa.sh 20` or `benches/micro_aa.sh 20 --invocations 1 syscall`.
#   ABPERF_BIN=target/debug/abperf uses that binary instead of building a release one.
# Needs python3.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}"
if [ -n "${ABPERF_BIN:-}" ]; then
    bin="$ABPERF_BIN"
else
    cargo build --release --quiet
    bin="$CARGO_TARGET_DIR/release/abperf"
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pairs="${1:-2}"
shift || true
id=0
called=0
for p in $(seq 1 "$pairs"); do
    load=$(cut -d' ' -f1-3 /proc/loadavg)
    start=$(date +%s)
    "$bin" micro --quick "$@" --db "$tmp/aa.db" > /dev/null 2>&1
    "$bin" micro --quick "$@" --db "$tmp/aa.db" > /dev/null 2>&1
    took=$(($(date +%s) - start))
    a=$((id + 1)); b=$((id + 2)); id=$b
    "$bin" compare "$a" "$b" --db "$tmp/aa.db" --format json > "$tmp/c$p.json"
    line=$(python3 benches/micro_summary.py "$tmp/c$p.json" "pair $p" "$took")
    echo "$line" | sed "1s|\$| [load $load]|"
    case "$line" in
        *" 0 of "*" configurations called different"*) ;;
        *) called=$((called + 1)) ;;
    esac
done
echo "pairs with any configuration called different: $called of $pairs (micro --quick $*)"
du -h "$tmp/aa.db" | awk -v n=$((pairs * 2)) '{print "store: " $1 " for " n " quick experiments"}'
