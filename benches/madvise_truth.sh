#!/usr/bin/env bash
# `abperf micro tlb-flush` against an independent C program (tests/progs/madvise_cost.c): the
# median cost of madvise(MADV_DONTNEED) on 1, 2, 33, 34 and 64 touched pages, gross (the call on
# touched pages) and net (minus the same call on an empty range), in TSC ticks.
#
# Runs REPS rounds; each round runs, one after the other, `abperf micro tlb-flush --quick` and the
# C program once per variant (default flags first, then each -v FLAGS given), all pinned to the
# same CPU and spread over the same span (3 s), so that the host's slow phases hit all alike.
# Prints each run, then per column the median over the rounds and the median of the per-round
# ratios to the C program's default.
#
# Usage: benches/madvise_truth.sh [-n REPS] [-b ABPERF] [-c CPU] [-v "C FLAGS"]...
#   -b  an abperf binary (default: target/release/abperf, built here); repeatable: give an
#       older build beside the new one to see the before/after of a change
#   -v  a variant of the C program (its flags, see the head of tests/progs/madvise_cost.c);
#       repeatable, e.g. -v "-e" (touched and empty calls alternating) -v "-F" (SCHED_FIFO)
# Needs cc and python3; x86-64 only.
set -euo pipefail
cd "$(dirname "$0")/.."
reps=5
bins=()
cpu=0
variants=()
while getopts "n:b:c:v:" o; do
    case $o in
    n) reps=$OPTARG ;;
    b) bins+=("$OPTARG") ;;
    c) cpu=$OPTARG ;;
    v) variants+=("$OPTARG") ;;
    *) exit 2 ;;
    esac
done
if [ ${#bins[@]} -eq 0 ]; then
    cargo build --release --quiet
    bins=("${CARGO_TARGET_DIR:-target}/release/abperf")
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc -O2 -o "$tmp/madvise_cost" tests/progs/madvise_cost.c
sizes="1 2 33 34 64"

for r in $(seq "$reps"); do
    for bin in "${bins[@]}"; do
    "$bin" micro tlb-flush --quick --no-store --cpu "$cpu" --format json > "$tmp/ab.json"
    label="abperf"
    [ ${#bins[@]} -gt 1 ] && label="abperf $bin"
    python3 - "$tmp/ab.json" "$sizes" "$label" >> "$tmp/runs" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
m = {x["name"]: x["cycles"]["median"] for x in r["measurements"]}
cols = []
for n in sys.argv[2].split():
    g, e = m[f"tlb-flush/madvise/touched/n={n}"], m[f"tlb-flush/madvise/empty/n={n}"]
    cols.append(f"{n}:{g:.0f}:{e:.0f}")
print(sys.argv[3] + "\t" + " ".join(cols))
PY
    done
    for v in "" "${variants[@]}"; do
        # shellcheck disable=SC2086 # the variant's flags are words
        "$tmp/madvise_cost" -c "$cpu" $v $sizes |
            awk -v name="C ${v:-default}" '/^pages=/ {
                split($1, n, "="); split($2, g, "="); split($3, e, "=")
                s = s (s ? " " : "") n[2] ":" g[2] ":" e[2]
            } END { print name "\t" s }' >> "$tmp/runs"
    done
done

python3 - "$tmp/runs" "$sizes" <<'PY'
import statistics as st, sys
sizes = sys.argv[2].split()
runs = {}   # name -> list of {size: (gross, empty)}
order = []
for line in open(sys.argv[1]):
    name, cols = line.rstrip("\n").split("\t")
    if name not in runs:
        runs[name] = []
        order.append(name)
    runs[name].append({c.split(":")[0]: tuple(float(x) for x in c.split(":")[1:]) for c in cols.split()})
print("each run: pages:gross/empty/net (median ticks)")
for name in order:
    for i, rr in enumerate(runs[name]):
        print(f"  {name:34s} #{i + 1} " + " ".join(f"{n}:{g:.0f}/{e:.0f}/{g - e:.0f}" for n, (g, e) in rr.items()))
ref = runs["C default"]
print()
print(f"median over {len(ref)} rounds; in brackets the median of the per-round ratios to 'C default'")
print(f"{'':34s} " + " ".join(f"{'gross ' + n:>17s} {'net ' + n:>17s}" for n in sizes))
for name in order:
    cells = []
    for n in sizes:
        for k in ("gross", "net"):
            val = lambda rr: rr[n][0] if k == "gross" else rr[n][0] - rr[n][1]
            mine = st.median(val(rr) for rr in runs[name])
            ratio = st.median(val(a) / val(b) for a, b in zip(runs[name], ref) if val(b) > 0)
            cells.append(f"{mine:>9.0f} [{ratio:4.2f}]")
    print(f"{name:34s} " + " ".join(f"{c:>17s}" for c in cells))
PY
