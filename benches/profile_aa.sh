#!/usr/bin/env bash
# A/A false-call rate of the profile differential (issue 44): REPS repetitions of the ignored
# test `a_a_once` in tests/profile.rs, each RUNS=5 profiled runs of the same hot_cold command
# per "variant" under perf record (cpu-clock or cycles), compared symbol by symbol (Welch p,
# Benjamini-Hochberg at 5% over the symbols). Nothing differs, so any named symbol is a false
# call. Target: no symbol named in at least 95% of repetitions.
# Usage: benches/profile_aa.sh [REPS]   (default 20)
# Honors the cargo variables of the environment; builds the test binary once.
set -euo pipefail
cd "$(dirname "$0")/.."
reps="${1:-20}"
cargo test --locked --quiet --test profile --no-run 2>/dev/null
any=0
for i in $(seq 1 "$reps"); do
    n=$(cargo test --locked --quiet --test profile a_a_once -- --ignored --nocapture 2>/dev/null \
        | sed -n 's/^named \([0-9]*\)$/\1/p')
    echo "repetition $i: ${n:-?} symbols named"
    if [ "${n:-0}" != 0 ]; then any=$((any + 1)); fi
done
echo "repetitions naming any symbol: $any of $reps"
