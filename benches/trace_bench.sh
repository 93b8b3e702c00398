#!/bin/sh
# Benchmarks of `abperf trace` (needs root and tracefs):
#  1. parser throughput on >= 10 million events (binary) and 5 million lines (text), from a real
#     capture of a flush-heavy workload replicated in memory (benches/trace_parse.rs);
#  2. floors for the text path on the same text: `cat | wc -l`, and `trace-cmd report` on a
#     trace-cmd capture of the same workload when trace-cmd is installed (apt-get install
#     trace-cmd; it cannot read abperf's raw files);
#  3. slowdown of the flush-heavy workload with capture on against off (median of 5 each).
# Usage: benches/trace_bench.sh [OUTDIR]
set -eu
cd "$(dirname "$0")/.."
OUT=${1:-$(mktemp -d /tmp/abperf-trace-bench.XXXXXX)}
mkdir -p "$OUT"
: "${CARGO_TARGET_DIR:=target}"
export CARGO_TARGET_DIR
cargo build --release --quiet
AB="$CARGO_TARGET_DIR/release/abperf"
cc -O2 -pthread -o "$OUT/flushes" tests/progs/flushes.c
W="$OUT/flushes -s 400 1 2 4 8 16 33 64"
DB="$OUT/bench.db"

echo "== capture of the workload ($W)"
"$AB" trace record --db "$DB" -q --buffer-kib 131072 --keep-raw "$OUT/cap.raw" --save-text "$OUT/cap.txt" -- $W >/dev/null
"$AB" trace report latest --db "$DB" --table count | head -8

echo "== parser throughput (one thread)"
ABPERF_BENCH_TEXT_OUT="$OUT/big.txt" cargo bench --quiet --bench trace_parse -- "$OUT/cap.raw" "$OUT/cap.txt" 10000000 5000000

echo "== floor: cat | wc -l on the same text"
LINES=$(wc -l < "$OUT/big.txt")
S=$(date +%s.%N); cat "$OUT/big.txt" | wc -l >/dev/null; E=$(date +%s.%N)
echo "$LINES $S $E" | awk '{ printf "cat | wc -l: %.1f M lines/s (%.3f s)\n", $1/($3-$2)/1e6, $3-$2 }'

if command -v trace-cmd >/dev/null 2>&1; then
    # `trace-cmd record` needs to write /proc/sys/kernel/ftrace_enabled (refused in this VM), so
    # the events go into an instance of our own and `trace-cmd extract -B` reads it out.
    echo "== trace-cmd report on a trace-cmd capture of the same workload, x8 (own instance)"
    I=/sys/kernel/tracing/instances/abperf-bench-tc
    mkdir "$I"
    trap 'rmdir "$I" 2>/dev/null || true' EXIT
    echo x86-tsc > "$I/trace_clock"; echo 131072 > "$I/buffer_size_kb"
    for e in tlb/tlb_flush irq_vectors/call_function_single_entry irq_vectors/call_function_single_exit \
             syscalls/sys_enter_madvise syscalls/sys_exit_madvise; do echo 1 > "$I/events/$e/enable"; done
    for i in 1 2 3 4 5 6 7 8; do $W >/dev/null; done
    echo 0 > "$I/tracing_on"
    (cd "$OUT" && trace-cmd extract -B abperf-bench-tc -o "$OUT/tc.dat" >/dev/null 2>&1) || echo "trace-cmd extract failed"
    rmdir "$I" 2>/dev/null || true
    if [ -s "$OUT/tc.dat" ]; then
        S=$(date +%s.%N); N=$(trace-cmd report -i "$OUT/tc.dat" 2>/dev/null | wc -l); E=$(date +%s.%N)
        echo "$N $S $E" | awk '{ printf "trace-cmd report: %d lines, %.2f M lines/s (%.3f s)\n", $1, $1/($3-$2)/1e6, $3-$2 }'
        trace-cmd report -i "$OUT/tc.dat" 2>/dev/null > "$OUT/tc.txt"
        S=$(date +%s.%N); "$AB" trace import --db "$OUT/tc.db" -q "$OUT/tc.txt" 2>/dev/null; E=$(date +%s.%N)
        echo "$N $S $E" | awk '{ printf "abperf trace import of that report (whole command, incl. store): %.2f M lines/s (%.3f s)\n", $1/($3-$2)/1e6, $3-$2 }'
    fi
else
    echo "== trace-cmd not installed: no trace-cmd comparison (apt-get install trace-cmd)"
fi

echo "== slowdown of the workload with capture on (15 runs each, alternating)"
# the workload reports its main thread's CPU time (user + system: the tracepoints' cost is
# system time in that thread; preemption by other load does not count) and its wall time
: > "$OUT/off.txt"; : > "$OUT/on.txt"
for i in $(seq 15); do
    "$OUT/flushes" -t -s 400 1 2 4 8 16 33 64 >> "$OUT/off.txt"
    "$AB" trace record --db "$DB" -q --buffer-kib 16384 -- "$OUT/flushes" -t -s 400 1 2 4 8 16 33 64 2>/dev/null >> "$OUT/on.txt"
done
col() { cut -d' ' -f"$1" "$2" | sort -n; }
med() { sed -n 8p; }
mn() { sed -n 1p; }
for c in 1 2; do
    [ $c = 1 ] && what="thread CPU time" || what="wall time"
    echo "$(col $c "$OUT/off.txt" | med) $(col $c "$OUT/on.txt" | med) $(col $c "$OUT/off.txt" | mn) $(col $c "$OUT/on.txt" | mn)" |
        awk -v w="$what" '{ printf "%s: median off %.1f ms, on %.1f ms (%+.1f%%); minimum off %.1f ms, on %.1f ms (%+.1f%%)\n", w, $1/1e6, $2/1e6, ($2/$1-1)*100, $3/1e6, $4/1e6, ($4/$3-1)*100 }'
done
"$AB" trace report latest --db "$DB" --table count | sed -n 1,8p
echo "results in $OUT"
