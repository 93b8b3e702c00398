#!/usr/bin/env bash
# What abperf doctor and the noise controls of `abperf run` cost (none of it is in the timed
# region; this is the wall-clock price of an experiment). Each figure is the extra time of
# `abperf run -r RUNS true` with the option over the same run without it, divided by RUNS.
# Usage: benches/noise_costs.sh [RUNS] [TREE]   (root; TREE defaults to this repository's src/)
set -euo pipefail
RUNS=${1:-10}
cd "$(dirname "$0")/.."
TREE=${2:-$PWD/src}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$PWD/target}
cargo build --release --quiet
ABPERF=$CARGO_TARGET_DIR/release/abperf
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

ms() { # command... -> wall milliseconds
    local t0 t1
    t0=$(date +%s%N)
    "$@" >/dev/null 2>&1
    t1=$(date +%s%N)
    echo $(((t1 - t0) / 1000000))
}
run() { ms "$ABPERF" run --db "$TMP/b.db" -N -r "$RUNS" --warmup 0 --seed 1 "$@" true; }

echo "abperf doctor (1 s sample):            $(ms "$ABPERF" doctor --db "$TMP/d.db") ms"
echo "abperf doctor --sample 0.1:            $(ms "$ABPERF" doctor --db "$TMP/d.db" --sample 0.1) ms"
base=$(run)
echo "run -r $RUNS true (incl. 0.2 s snapshot): $base ms"
size=$(du -sk "$TREE" | cut -f1)
for opt in "--drop-caches" "--pre-read $TREE" "--perturb-layout 256" "--tmpfs-copy $TREE"; do
    # shellcheck disable=SC2086
    t=$(run $opt)
    printf '%-40s %6d ms per run\n' "$opt" $(((t - base) / RUNS))
done
echo "(tree: $TREE, $size KiB; --tmpfs-copy is once per experiment, divided by $RUNS here;"
echo " --perturb-layout 256 allocates 128 MiB per run on average)"
