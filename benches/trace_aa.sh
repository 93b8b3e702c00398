#!/bin/sh
# `trace compare` with the capture as the unit (issue 45). Needs root and tracefs.
#  1. A/A: REPS times, 2 x N captures of one madvise workload (tests/progs/flushes.c), the odd
#     ones as A and the even ones as B (interleaved); counts the tables with any starred
#     (called) row, and the starred tests among all tests made (a row's median and count are
#     one test each, Holm over the rows of a table). Expected: at most alpha = 0.05 + noise.
#     The same captures compared one against one (the first two) as the events-as-samples
#     table did: its p-values below 0.05 are counted too (it no longer stars them).
#  2. A real difference: N captures each of the workload alone and with a sibling thread
#     spinning in the same mm (-s: every flush becomes a remote shootdown), interleaved; the
#     madvise rows must be starred.
# Usage: benches/trace_aa.sh [REPS] [N]   (default 20 repetitions of 4 + 4 captures)
set -eu
cd "$(dirname "$0")/.."
REPS=${1:-20}
N=${2:-4}
OUT=$(mktemp -d /tmp/abperf-trace-aa.XXXXXX)
trap 'st=$?; [ $st -eq 0 ] || tail -5 "$OUT/log" >&2; rm -rf "$OUT"' EXIT
: "${CARGO_TARGET_DIR:=target}"
AB=${AB:-$CARGO_TARGET_DIR/debug/abperf}
[ -x "$AB" ] || cargo build --quiet
cc -O2 -pthread -o "$OUT/flushes" tests/progs/flushes.c
W="$OUT/flushes 50 1 8 33"
FILTER="syscalls:sys_enter_madvise:behavior == 4"

# Tables with a starred row, starred tests, tests (a test: a p cell that is not "-").
count() {
    awk '
        / \(cycles; per capture\)$/ { t++; intable = 1; next }
        /^$/ { intable = 0 }
        intable && /[0-9]/ {
            n = split($0, f, /  +/)
            for (i = 1; i <= n; i++) if (f[i] ~ /^(<0\.001|[01]\.[0-9][0-9][0-9])\*?$/ && f[i-1] ~ /\.\.|unbounded/) {
                tests++
                if (f[i] ~ /\*$/) { stars++; hit[t] = 1 }
            }
        }
        END { h = 0; for (k in hit) h++; printf "%d %d %d %d\n", t, h, stars + 0, tests + 0 }
    ' "$1"
}

echo "== A/A: $REPS x ($N + $N) captures of: $W"
tables=0; hit=0; stars=0; tests=0; one_low=0; one_tests=0
for r in $(seq 1 "$REPS"); do
    DB="$OUT/aa$r.db"
    "$AB" trace record --db "$DB" -q --filter "$FILTER" --captures $((2 * N)) -- $W 2>>"$OUT/log" >/dev/null
    A=$(seq -s, 1 2 $((2 * N)))
    B=$(seq -s, 2 2 $((2 * N)))
    "$AB" trace compare --db "$DB" "$A" "$B" >"$OUT/aa$r.txt"
    set -- $(count "$OUT/aa$r.txt")
    tables=$((tables + $1)); hit=$((hit + $2)); stars=$((stars + $3)); tests=$((tests + $4))
    # one capture against one: the p columns of the events-as-samples table
    "$AB" trace compare --db "$DB" 1 2 >"$OUT/one$r.txt"
    set -- $(awk '/p Holm/ { on = 1; next } /^$/ { on = 0 } on { for (i = 1; i <= NF; i++) if ($i ~ /^(<0\.001|[01]\.[0-9][0-9][0-9])$/ && $(i-1) ~ /^[0-9.]+$/ && $(i-2) == "..") { n++; if ($i == "<0.001" || $i + 0 < 0.05) low++ } } END { printf "%d %d\n", low + 0, n + 0 }' "$OUT/one$r.txt")
    one_low=$((one_low + $1)); one_tests=$((one_tests + $2))
    rm -f "$DB"
done
echo "$tables $hit $stars $tests $one_low $one_tests" | awk '{
    printf "over captures: %d of %d tables with a called row (%.1f%%); %d of %d tests called (%.1f%%)\n", $2, $1, 100 * $2 / ($1 ? $1 : 1), $3, $4, 100 * $3 / ($4 ? $4 : 1)
    printf "one capture per side, events as samples: %d of %d Holm p-values below 0.05 (%.1f%%; no longer starred)\n", $5, $6, 100 * $5 / ($6 ? $6 : 1)
}'

echo "== A/B: $N captures of the workload alone and $N with a spinning sibling (-s), interleaved"
DB="$OUT/ab.db"
for i in $(seq 1 "$N"); do
    "$AB" trace record --db "$DB" -q --filter "$FILTER" -- $W 2>>"$OUT/log" >/dev/null
    "$AB" trace record --db "$DB" -q --filter "$FILTER" -- "$OUT/flushes" -s 50 1 8 33 2>>"$OUT/log" >/dev/null
done
"$AB" trace compare --db "$DB" "$(seq -s, 1 2 $((2 * N)))" "$(seq -s, 2 2 $((2 * N)))" >"$OUT/ab.txt"
sed -n '/^madvise by/,/^$/p' "$OUT/ab.txt"
set -- $(count "$OUT/ab.txt")
echo "A/B: $3 of $4 tests called, in $2 of $1 tables"
