#!/usr/bin/env bash
# Interleaved micro variants (issue 17): `abperf micro --quick -k PATH=V1,V2` measures both
# variants in one command, round by round in ABBA order, and compares them configuration by
# configuration (round medians as the unit, Holm over all configurations).
#   A/A: the harmless knob /proc/sys/kernel/msgmax (no benchmark sends a System V message)
#        written to two values; every configuration called FASTER/SLOWER is a false positive.
#        Target: at most alpha x families (0.05 x 10) families called different.
#   A/B: THP (/sys/kernel/mm/transparent_hugepage/enabled always vs never) for tlb-miss,
#        tlb-refill and page-fault, and the x86 flush ceiling (debugfs
#        x86/tlb_single_page_flush_ceiling 33 vs 1) for tlb-flush, and the raw_syscalls:sys_enter
#        tracepoint (tracefs, 0 vs 1) for syscall and signal: real differences.
# Usage: benches/micro_ab.sh [AA_REPEATS] [BENCH...]   (default 2, all benchmarks; needs root
#        and python3). Prints per comparison: configurations called different, families with
#        any, time taken; and the store size.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}"
cargo build --release --quiet
bin="$CARGO_TARGET_DIR/release/abperf"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
reps="${1:-2}"
shift || true
benches=("$@")
summary() { # JSON file, title, seconds
    python3 benches/micro_summary.py "$1" "$2" "$3"
}
msgmax=$(cat /proc/sys/kernel/msgmax)
other=$((msgmax + 1))
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq 1 "$reps"); do
    t0=$(date +%s.%N)
    "$bin" micro --quick "${benches[@]}" --db "$tmp/ab.db" -k "/proc/sys/kernel/msgmax=$msgmax,$other" \
        --format json > "$tmp/aa$r.json" 2> "$tmp/aa$r.err" || { grep error "$tmp/aa$r.err" || true; }
    [ -s "$tmp/aa$r.json" ] || { cat "$tmp/aa$r.err"; exit 1; }
    t1=$(date +%s.%N)
    summary "$tmp/aa$r.json" "A/A $r" "$(echo "$t1 - $t0" | bc)"
done
ab() { # title, knob=values, benchmarks...
    local title=$1 knob=$2 file=${2%%=*}
    shift 2
    if [ ! -w "$file" ]; then
        echo "A/B $title: $file not writable here (absent, debugfs not mounted, or not root)"
        return
    fi
    t0=$(date +%s.%N)
    "$bin" micro --quick "$@" --db "$tmp/ab.db" -k "$knob" --format json > "$tmp/ab.json" \
        2> "$tmp/ab.err" || { grep error "$tmp/ab.err" || true; }
    [ -s "$tmp/ab.json" ] || { cat "$tmp/ab.err"; exit 1; }
    t1=$(date +%s.%N)
    summary "$tmp/ab.json" "A/B $title" "$(echo "$t1 - $t0" | bc)"
    python3 - "$tmp/ab.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))["micro_compare"]
print(f"  only in {m['labels'][0]}: {len(m['only_a'])}, only in {m['labels'][1]}: {len(m['only_b'])}")
PY
}
# THP: the benchmarks choose their page size with madvise, so THP=never shows as the 2 MiB
# configurations missing (only_a), not as a change of the 4 KiB ones.
ab THP /sys/kernel/mm/transparent_hugepage/enabled=always,never tlb-miss tlb-refill page-fault
# The raw_syscalls:sys_enter tracepoint (tracefs): enabled, every syscall takes the traced entry
# path and writes an event; the empty loop stays as it is.
ab sys_enter /sys/kernel/tracing/events/raw_syscalls/sys_enter/enable=0,1 syscall signal
# The x86 flush ceiling (debugfs, absent under lockdown): at 1, a flush of 2..33 pages is a full
# flush.
ab ceiling /sys/kernel/debug/x86/tlb_single_page_flush_ceiling=33,1 tlb-flush
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "store: $(du -h "$tmp/ab.db" | cut -f1) for $reps A/A pairs and the A/B pairs"
