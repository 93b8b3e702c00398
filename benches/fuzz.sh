#!/usr/bin/env bash
# Fuzz every parser abperf reads files with (importers: time, perf-stat, hyperfine JSON; ministat
# files; ftrace text; raw trace captures) for SECONDS, mutating the committed corpus in
# tests/data/fuzz/TARGET/. Fails on any panic, any input that runs over 5 s (hang) or asks for
# more than 4 GiB (it would abort the process), and any error message that does not name the
# input file. Findings are saved in target/fuzz/. A session that ends on a hang or a huge
# allocation is restarted for the rest of the budget, so one finding does not end the search.
#
# Usage: benches/fuzz.sh SECONDS [TARGET...]      (default: every target)
set -euo pipefail
SECONDS_BUDGET=${1:?usage: benches/fuzz.sh SECONDS [TARGET...]}
shift
cd "$(dirname "$0")/.."
cargo build --release --quiet --example fuzz
BIN=target/release/examples/fuzz
rm -rf target/fuzz
mkdir -p target/fuzz
start=$(date +%s)
seed=${FUZZ_SEED:-$(date +%s)}
execs=0; ok=0; errors=0; panics=0; unnamed=0; hangs=0; huge=0; sessions=0
declare -A TEXECS TFIND
log=target/fuzz/log.txt
: > "$log"
while :; do
    now=$(date +%s)
    left=$(( start + SECONDS_BUDGET - now ))
    [ "$left" -gt 0 ] || break
    sessions=$((sessions + 1))
    set +e
    "$BIN" "$left" "$((seed + sessions))" "$@" > target/fuzz/out.txt 2>> "$log"
    rc=$?
    set -e
    line=$(grep '^FUZZ-SUMMARY' target/fuzz/out.txt | tail -1 || true)
    if [ -z "$line" ]; then
        echo "fuzz: session $sessions ended (exit $rc) without a summary; see $log" >&2
        exit 1
    fi
    for kv in ${line#FUZZ-SUMMARY }; do
        k=${kv%%=*}; v=${kv#*=}
        case $k in
            execs) execs=$((execs + v)) ;; ok) ok=$((ok + v)) ;; errors) errors=$((errors + v)) ;;
            panics) panics=$((panics + v)) ;; unnamed) unnamed=$((unnamed + v)) ;;
            hangs) hangs=$((hangs + v)) ;; huge) huge=$((huge + v)) ;;
            target) echo "fuzz: session $sessions stopped on target $v (exit $rc)" >> "$log" ;;
            t) name=${v%%:*}; rest=${v#*:}
               TEXECS[$name]=$(( ${TEXECS[$name]:-0} + ${rest%%:*} ))
               TFIND[$name]=$(( ${TFIND[$name]:-0} + ${rest#*:} )) ;;
        esac
    done
    [ "$rc" -eq 3 ] || [ "$rc" -eq 4 ] || break
done
grep -E '^fuzz: (PANIC|UNNAMED|HANG|HUGE)' "$log" | sed -E 's/ \([^()]*\)$//; s/[0-9]+/N/g' | sort | uniq -c | sort -rn | head -20 >&2 || true
for name in "${!TEXECS[@]}"; do
    printf 'fuzz: target %-12s %10d executions, %d findings\n' "$name" "${TEXECS[$name]}" "${TFIND[$name]}"
done | sort
echo "fuzz: $SECONDS_BUDGET s, $sessions session(s): $execs executions ($ok ok, $errors errors), \
$panics panics, $hangs hangs, $huge huge allocations, $unnamed errors without the file name \
(findings in target/fuzz/)"
[ $((panics + hangs + huge + unnamed)) -eq 0 ]
