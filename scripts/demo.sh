#!/usr/bin/env bash
# The demo: build abperf, then a real A/B experiment that reaches a verdict on any x86-64 or
# arm64 Linux machine with THP, in well under two minutes after the build.
#
# Variants: transparent huge pages `always` against `never` (a kernel knob, written, read back
# and verified, restored at the end, on errors and on Ctrl-C). Workload: scripts/zero_read.c,
# which reads every page of 1 GiB of untouched memory: 512 huge-zero-page faults against 262,144
# small ones. Measured per run: wall, user and sys time, faults (rusage and the page-faults
# counter). Needs root (the knob) and a C compiler (cargo needs one too).
#
# RUNS=N (default 20) runs per variant; ABPERF_DB=PATH to store somewhere else than the default.
set -euo pipefail
cd "$(dirname "$0")/.."
THP=/sys/kernel/mm/transparent_hugepage
if [ "$(id -u)" != 0 ]; then
    echo "demo.sh: needs root: the experiment writes $THP/enabled (abperf restores it)" >&2
    exit 1
fi
if [ ! -w "$THP/enabled" ]; then
    echo "demo.sh: this kernel has no writable $THP/enabled (THP not built in?)" >&2
    exit 1
fi
echo "demo.sh: building abperf (release; several minutes on a fresh clone)" >&2
cargo build --release --locked
ABPERF=$PWD/target/release/abperf
mkdir -p target/demo
cc -O2 -o target/demo/zero_read scripts/zero_read.c
knobs=(-k "$THP/enabled=always,never")
# The huge zero page is what `always` uses here; if it is switched off, switch it on for the
# experiment (abperf puts the old value back).
if [ -w "$THP/use_zero_page" ] && [ "$(cat "$THP/use_zero_page")" != 1 ]; then
    knobs+=(-k "$THP/use_zero_page=1")
fi
started=$SECONDS
echo "demo.sh: THP always vs never, reading 1 GiB of untouched memory, ${RUNS:-20} runs each" >&2
"$ABPERF" run -r "${RUNS:-20}" "${knobs[@]}" -n always -n never -e page-faults \
    --title "THP always vs never: read faults on 1 GiB of untouched memory" \
    "$PWD/target/demo/zero_read 1024"
echo
echo "Minor faults of the same runs (abperf compare latest --metric minflt):"
# The comparison's verdict: what compare prints before its "--" footer (data, tests, design).
minflt=$("$ABPERF" compare latest --metric minflt --resamples 0 | sed '/^--$/,$d')
if ! grep -q '^minflt: ' <<<"$minflt"; then
    echo "demo.sh: abperf compare printed no verdict line for minflt:" >&2
    printf '%s\n' "$minflt" >&2
    exit 1
fi
printf '%s\n' "$minflt"
echo "demo.sh: the experiment and the comparison took $((SECONDS - started)) s after the build" >&2
