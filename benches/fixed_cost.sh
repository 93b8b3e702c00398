#!/usr/bin/env bash
# Fixed cost of one invocation: wall time of `abperf run -r 1 true` (warm-up included, as a
# user types it), with the store on disk, in tmpfs, a new store on disk and with --no-store, against
# `hyperfine -N -r 1 true` (else a plain fork/exec of `true`), interleaved in ROUNDS rounds;
# median and lowest of each; with perf, the CPU time of each invocation too (task-clock,
# children included: abperf's spawn server and the workload), median and ratio to the peer.
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
# The stores exist before the first timed invocation (a new store's schema is a one-off).
"$ABPERF" run --db "$TMP/a.db" -r 1 true >/dev/null 2>&1
"$ABPERF" run --db "$SHM/a.db" -r 1 true >/dev/null 2>&1
[ -n "${ABPERF_BEFORE:-}" ] && "$ABPERF_BEFORE" run --db "$TMP/b.db" -r 1 true >/dev/null 2>&1

have() { command -v "$1" >/dev/null; }
declare -A T
labels=()
case_() { labels+=("$1"); }
case_ "abperf run -r 1 true (store on disk)"
case_ "abperf run -r 1 true (store in tmpfs)"
case_ "abperf run -r 1 true (new store on disk)"
case_ "abperf run --no-store -r 1 true"
case_ "abperf run --no-store -N -r 1 true"
[ -n "${ABPERF_BEFORE:-}" ] && case_ "abperf before: run -r 1 true (store on disk)"
if have hyperfine; then case_ "hyperfine -N -r 1 true (peer)"; else case_ "fork/exec of true (floor)"; fi
one() {
    case "$1" in
        "abperf run -r 1 true (store on disk)") "$ABPERF" run --db "$TMP/a.db" -r 1 true ;;
        "abperf run -r 1 true (store in tmpfs)") "$ABPERF" run --db "$SHM/a.db" -r 1 true ;;
        "abperf run -r 1 true (new store on disk)")
            rm -f "$TMP"/new.db*
            "$ABPERF" run --db "$TMP/new.db" -r 1 true ;;
        "abperf run --no-store -r 1 true") "$ABPERF" run --no-store -r 1 true ;;
        "abperf run --no-store -N -r 1 true") "$ABPERF" run --no-store -N -r 1 true ;;
        "abperf before: run -r 1 true (store on disk)") "$ABPERF_BEFORE" run --db "$TMP/b.db" -r 1 true ;;
        "hyperfine -N -r 1 true (peer)") hyperfine -N -r 1 --style none true ;;
        "fork/exec of true (floor)") true ;;
    esac
}
declare -A C
for _ in $(seq "$ROUNDS"); do
    for l in "${labels[@]}"; do
        t0=$(date +%s%N); one "$l" >/dev/null 2>&1; t1=$(date +%s%N)
        T[$l]="${T[$l]:-} $(( (t1 - t0) / 1000 ))"
        if have perf; then
            export -f one; export ABPERF TMP SHM ABPERF_BEFORE
            perf stat -x, -e task-clock -o "$TMP/cpu" bash -c 'one "$0"' "$l" >/dev/null 2>&1
            C[$l]="${C[$l]:-} $(awk -F, '/task-clock/ {printf "%d", $1 * 1000}' "$TMP/cpu")"
        fi
    done
done
printf '%-48s %10s %10s\n' "one invocation, $ROUNDS interleaved rounds" "median ms" "lowest ms"
for l in "${labels[@]}"; do
    tr ' ' '\n' <<<"${T[$l]}" | grep . | sort -n | awk -v l="$l" '{a[NR]=$1} END{m=(NR%2?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2); printf "%-48s %10.1f %10.1f\n", l, m/1000, a[1]/1000}'
done
if have perf; then
    # The bash -c around each case is counted too (the same for every case: printed below);
    # the ratio is to the last row, the peer (or the floor).
    base=$(tr ' ' '\n' <<<"${C["${labels[-1]}"]}" | grep . | sort -n | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}')
    printf '\n%-48s %10s %12s\n' "CPU time (task-clock with children)" "median ms" "x last row"
    for l in "${labels[@]}"; do
        tr ' ' '\n' <<<"${C[$l]}" | grep . | sort -n | awk -v l="$l" -v b="$base" '{a[NR]=$1} END{m=a[int((NR+1)/2)]; printf "%-48s %10.2f %12.2f\n", l, m/1000, m/b}'
    done
    c0=$(perf stat -x, -e task-clock bash -c 'true' 2>&1 >/dev/null | awk -F, '/task-clock/ {printf "%.2f", $1}')
    echo "(bash -c 'true' alone: $c0 ms of that)"
fi
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
