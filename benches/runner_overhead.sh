#!/usr/bin/env bash
# The harness's own per-run cost: total wall time of running `true` N times under abperf,
# hyperfine and perf stat.
# adds per run (fork/exec/wait, bookkeeping; for abperf also one SQLite commit per run).
# Usage: benches/runner_overhead.sh [RUNS] [REPEATS]   (needs: hyperfine, perf; builds abperf)
set -euo pipefail
RUNS=${1:-200}
REPEATS=${2:-5}
cd "$(dirname "$0")/.."
cargo build --release --quiet
ABPERF=$PWD/target/release/abperf
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

total_us() { # command... -> best total wall time in microseconds over REPEATS
    local best=""
    for _ in $(seq "$REPEATS"); do
        local t0 t1
        t0=$(date +%s%N)
        "$@" >/dev/null 2>&1
        t1=$(date +%s%N)
        local us=$(( (t1 - t0) / 1000 ))
        if [ -z "$best" ] || [ "$us" -lt "$best" ]; then best=$us; fi
    done
    echo "$best"
}

# One row: the marginal cost of a run ((T(2N) - T(N)) / N, so start-up costs such as abperf's
# environment snapshot or hyperfine's shell calibration cancel), and the fixed cost T(N) - N * that.
row() { # label cmd-with-RUNS-placeholder...
    local label=$1; shift
    local a b
    a=$(total_us "${@//RUNS/$RUNS}")
    b=$(total_us "${@//RUNS/$((2 * RUNS))}")
    local per=$(( (b - a) / RUNS ))
    printf '%-48s %10s %12s\n' "$label" "$per" "$(( (a - per * RUNS) / 1000 ))"
}

have() { command -v "$1" >/dev/null; }
printf '%-48s %10s %12s\n' "tool (true; marginal cost per run, best of $REPEATS)" "us/run" "fixed ms"
row "abperf run -N --warmup 0 true" "$ABPERF" run --db "$TMP/a.db" -N -r RUNS --warmup 0 true
if have hyperfine; then
    row "hyperfine -N --warmup 0 true" hyperfine -N --runs RUNS --warmup 0 --style none true
else
    echo "hyperfine: not installed (apt-get install hyperfine)"
fi
if have perf; then
    row "perf stat -r N true" perf stat -r RUNS true
else
    echo "perf: not installed (apt-get install linux-perf)"
fi
row "abperf run --warmup 0 true (through sh -c)" "$ABPERF" run --db "$TMP/b.db" -r RUNS --warmup 0 true
row "abperf run -N -e task-clock,page-faults true" "$ABPERF" run --db "$TMP/c.db" -N -r RUNS --warmup 0 -e task-clock,page-faults true
