#!/usr/bin/env bash
# Fixed cost of one invocation: wall time of `abperf run -r 1 true` (warm-up included, as a
# user types it), with the store on disk, in tmpfs, a new store on disk and with --no-store, against
# `hyperfine -N -r 1 true` (else a plain fork/exec of `true`), interleaved in ROUNDS rounds;
# median and lowest of each; with perf, the CPU time of each invocation too (task-clock,
# children included: abperf's spawn server and the workload), median and ratio to the peer.
# Every case is run directly (no shell around it), so nothing has to be subtracted.
# The parts any `abperf run -r 1 true` must pay are timed in the same rounds: abperf's own start
# and exit (`abperf --version`), the spawn server's (abperf-spawn started with no arguments: exec,
# dynamic loading, a usage message) and one `true`; their sum with a second `true` (the default
# warm-up) is this design's floor, printed beside the peer.
# Usage: benches/fixed_cost.sh [ROUNDS]
#   ABPERF_BEFORE=/path/to/older/abperf adds its row (e.g. a build that sleeps 0.2 s first).
set -euo pipefail
ROUNDS=${1:-40}
cd "$(dirname "$0")/.."
cargo build --release --quiet
ABPERF=$PWD/target/release/abperf
TMP=$(mktemp -d)
SHM=$(mktemp -d -p /dev/shm)
trap 'rm -rf "$TMP" "$SHM"' EXIT
# Every build is timed from a copy made the same way: the same binary straight from the linker
# cost 9% more CPU here than its copy (how its pages sit in the page cache).
copy_build() { # abperf binary, directory -> the copy (with its abperf-spawn beside it)
    mkdir -p "$2"
    cp "$1" "$2/abperf"
    if [ -e "$1-spawn" ]; then cp "$1-spawn" "$2/abperf-spawn"; fi
    echo "$2/abperf"
}
ABPERF=$(copy_build "$ABPERF" "$TMP/now")
[ -n "${ABPERF_BEFORE:-}" ] && ABPERF_BEFORE=$(copy_build "$ABPERF_BEFORE" "$TMP/before")
# The stores exist before the first timed invocation (a new store's schema is a one-off).
"$ABPERF" run --db "$TMP/a.db" -r 1 true >/dev/null 2>&1
"$ABPERF" run --db "$SHM/a.db" -r 1 true >/dev/null 2>&1
[ -n "${ABPERF_BEFORE:-}" ] && "$ABPERF_BEFORE" run --db "$TMP/b.db" -r 1 true >/dev/null 2>&1

have() { command -v "$1" >/dev/null; }
declare -A T C
labels=()
case_() { labels+=("$1"); }
case_ "abperf run -r 1 true (store on disk)"
case_ "abperf run -r 1 true (store in tmpfs)"
case_ "abperf run -r 1 true (new store on disk)"
case_ "abperf run --no-store -r 1 true"
case_ "abperf run --no-store -N -r 1 true"
[ -n "${ABPERF_BEFORE:-}" ] && case_ "abperf before: run -r 1 true (store on disk)"
case_ "part: abperf --version"
case_ "part: abperf-spawn (start, usage, exit)"
case_ "part: true"
if have hyperfine; then case_ "hyperfine -N -r 1 true (peer)"; else case_ "fork/exec of true (floor)"; fi
# The command of case $1 into the array CMD (after any preparation it needs, untimed).
command_of() {
    case "$1" in
        "abperf run -r 1 true (store on disk)") CMD=("$ABPERF" run --db "$TMP/a.db" -r 1 true) ;;
        "abperf run -r 1 true (store in tmpfs)") CMD=("$ABPERF" run --db "$SHM/a.db" -r 1 true) ;;
        "abperf run -r 1 true (new store on disk)")
            rm -f "$TMP"/new.db*
            CMD=("$ABPERF" run --db "$TMP/new.db" -r 1 true) ;;
        "abperf run --no-store -r 1 true") CMD=("$ABPERF" run --no-store -r 1 true) ;;
        "abperf run --no-store -N -r 1 true") CMD=("$ABPERF" run --no-store -N -r 1 true) ;;
        "abperf before: run -r 1 true (store on disk)") CMD=("$ABPERF_BEFORE" run --db "$TMP/b.db" -r 1 true) ;;
        "part: abperf --version") CMD=("$ABPERF" --version) ;;
        "part: abperf-spawn (start, usage, exit)") CMD=("${ABPERF}-spawn") ;;
        "part: true" | "fork/exec of true (floor)") CMD=(true) ;;
        "hyperfine -N -r 1 true (peer)") CMD=(hyperfine -N -r 1 --style none true) ;;
    esac
}
for _ in $(seq "$ROUNDS"); do
    for l in "${labels[@]}"; do
        command_of "$l"
        t0=$(date +%s%N); "${CMD[@]}" >/dev/null 2>&1 || true; t1=$(date +%s%N)
        T[$l]="${T[$l]:-} $(( (t1 - t0) / 1000 ))"
        if have perf; then
            command_of "$l"
            perf stat -x, -e task-clock -o "$TMP/cpu" -- "${CMD[@]}" >/dev/null 2>&1 || true
            C[$l]="${C[$l]:-} $(awk -F, '/task-clock/ {printf "%d", $1 * 1000}' "$TMP/cpu")"
        fi
    done
done
median_of() { tr ' ' '\n' | grep . | sort -n | awk '{a[NR]=$1} END{print (NR%2?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2)}'; }
printf '%-48s %10s %10s\n' "one invocation, $ROUNDS interleaved rounds" "median ms" "lowest ms"
for l in "${labels[@]}"; do
    m=$(median_of <<<"${T[$l]}")
    low=$(tr ' ' '\n' <<<"${T[$l]}" | grep . | sort -n | head -1)
    awk -v l="$l" -v m="$m" -v low="$low" 'BEGIN {printf "%-48s %10.1f %10.1f\n", l, m/1000, low/1000}'
done
if have perf; then
    # The ratio is to the last row, the peer (or the floor).
    base=$(median_of <<<"${C["${labels[-1]}"]}")
    printf '\n%-48s %10s %12s\n' "CPU time (task-clock with children)" "median ms" "x last row"
    for l in "${labels[@]}"; do
        awk -v l="$l" -v m="$(median_of <<<"${C[$l]}")" -v b="$base" \
            'BEGIN {printf "%-48s %10.2f %12.2f\n", l, m/1000, m/b}'
    done
    # The design's floor: abperf's start and exit, the spawn server's, and two `true`s (warm-up
    # and run); against the peer.
    awk -v v="$(median_of <<<"${C["part: abperf --version"]}")" \
        -v s="$(median_of <<<"${C["part: abperf-spawn (start, usage, exit)"]}")" \
        -v t="$(median_of <<<"${C["part: true"]}")" -v p="$base" \
        -v run="$(median_of <<<"${C["${labels[0]}"]}")" 'BEGIN {
        floor = v + s + 2 * t
        printf "\nfloor of this design (abperf start + spawn server start + 2 x true): %.2f ms = %.2fx the peer\n", floor / 1000, floor / p
        printf "abperf run -r 1 true, store on disk: %.2fx the peer, %.2fx the floor\n", run / p, run / floor }'
fi
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
