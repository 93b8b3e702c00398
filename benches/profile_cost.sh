#!/usr/bin/env bash
# Cost of one profiled run (issue 44): the wall time of a command alone, under
# `perf record --no-buildid --no-buildid-cache -e EVENT -F FREQ --call-graph=fp`, and of the `perf script` that reads the
# recording back, each the median of REPS. The command is tests/programs/hot_cold.c
# (a CPU-bound loop) and tests/programs/madvise_loop.c (kernel-heavy), built here.
# Usage: benches/profile_cost.sh [REPS [FREQ]]   (default 9 and 4000 Hz)
set -euo pipefail
cd "$(dirname "$0")/.."
reps="${1:-9}"
freq="${2:-4000}"
event=cpu-clock
[ -e /sys/bus/event_source/devices/cpu ] && event=cycles
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc -O1 -fno-omit-frame-pointer -o "$tmp/hot_cold" tests/programs/hot_cold.c
cc -O1 -fno-omit-frame-pointer -o "$tmp/madvise_loop" tests/programs/madvise_loop.c
ms() { python3 -c 'import sys,statistics; print("%.1f" % (1000*statistics.median(map(float, sys.stdin.read().split()))))'; }
t() { local s e; s=$(date +%s.%N); "$@" >/dev/null 2>&1; e=$(date +%s.%N); echo "$e - $s" | bc; }
echo "event $event, $freq Hz, median of $reps"
for cmd in "$tmp/hot_cold 300 100000 100000" "$tmp/madvise_loop 15000 1"; do
    plain=$(for _ in $(seq "$reps"); do t $cmd; done | ms)
    rec=$(for _ in $(seq "$reps"); do t perf record -q --no-buildid --no-buildid-cache -e $event -F "$freq" --call-graph=fp -o "$tmp/p.data" -- $cmd; done | ms)
    script=$(for _ in $(seq "$reps"); do t perf script -F comm,tid,time,period,event,ip,sym,dso -i "$tmp/p.data"; done | ms)
    samples=$(perf script -F event -i "$tmp/p.data" 2>/dev/null | wc -l)
    size=$(stat -c %s "$tmp/p.data")
    echo "$(basename ${cmd%% *}): alone ${plain} ms, under perf record ${rec} ms, perf script ${script} ms; $samples samples, perf.data $((size / 1024)) KiB"
done
