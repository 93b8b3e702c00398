#!/usr/bin/env bash
# The harness's own per-run cost: total wall time of running `true` N times under abperf,
# hyperfine and perf stat, divided by N. `true` does nearly nothing, so this is what each tool
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

per_run_us() { # command... -> microseconds per run (best of REPEATS)
    local best=""
    for _ in $(seq "$REPEATS"); do
        local t0 t1
        t0=$(date +%s%N)
        "$@" >/dev/null 2>&1
        t1=$(date +%s%N)
        local us=$(( (t1 - t0) / 1000 / RUNS ))
        if [ -z "$best" ] || [ "$us" -lt "$best" ]; then best=$us; fi
    done
    echo "$best"
}

printf '%-44s %12s\n' "tool ($RUNS runs of true, best of $REPEATS)" "us per run"
have() { command -v "$1" >/dev/null; }
printf '%-44s %12s\n' "abperf run -N -r $RUNS --warmup 0 true" \
    "$(per_run_us "$ABPERF" run --db "$TMP/a.db" -N -r "$RUNS" --warmup 0 true)"
if have hyperfine; then
    printf '%-44s %12s\n' "hyperfine -N --runs $RUNS --warmup 0 true" \
        "$(per_run_us hyperfine -N --runs "$RUNS" --warmup 0 --style none true)"
else
    echo "hyperfine: not installed (apt-get install hyperfine)"
fi
if have perf; then
    printf '%-44s %12s\n' "perf stat -r $RUNS true" "$(per_run_us perf stat -r "$RUNS" true)"
else
    echo "perf: not installed (apt-get install linux-perf)"
fi
printf '%-44s %12s\n' "abperf run -r $RUNS --warmup 0 true (sh -c)" \
    "$(per_run_us "$ABPERF" run --db "$TMP/b.db" -r "$RUNS" --warmup 0 true)"
printf '%-44s %12s\n' "abperf ... -e task-clock,page-faults" \
    "$(per_run_us "$ABPERF" run --db "$TMP/c.db" -N -r "$RUNS" --warmup 0 -e task-clock,page-faults true)"
