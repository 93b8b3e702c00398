#!/usr/bin/env bash
# Quality targets of `abperf micro` on this machine:
#  - repeatability: two consecutive `--quick` runs agree within 5% on the medians of syscall,
#    xstate and tlb-flush (1 and 33 pages); each run's SMT sibling pressure (independent adds
#    per core cycle, probed at the start of every round) is printed beside them, since on a
#    shared host port-bound costs move with it;
#  - `--quick` whole suite within 60 s; full suite within 10 minutes (with --full).
# Usage: benches/micro_repeatability.sh [--full]     (needs python3 for the comparison)
# Medians are compared in counter ticks (`cycles`, TSC) and in core clock cycles
# (`core_cycles`): on a VM whose host moves the core clock (turbo) the first track the clock,
# the second do not. Exit status: 1 = ticks above 5%, 2 = core cycles above 5%, 3 = both.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}"
cargo build --release --quiet
bin="$CARGO_TARGET_DIR/release/abperf"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

run() { # $1 = output file, rest = args; prints elapsed seconds
    local t0 t1
    t0=$(date +%s.%N)
    "$bin" micro "${@:2}" --format json --db "$tmp/micro.db" > "$1"
    t1=$(date +%s.%N)
    python3 -c "print(f'{$t1 - $t0:.1f}')"
}

q1=$(run "$tmp/a.json" --quick)
q2=$(run "$tmp/b.json" --quick)
echo "quick suite: ${q1} s and ${q2} s (target: < 60 s)"
if [ "${1:-}" = "--full" ]; then
    f=$(run "$tmp/full.json")
    echo "full suite: ${f} s (target: < 600 s)"
fi

compare() {
python3 - "$tmp/a.json" "$tmp/b.json" "$@" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
unit = "core_cycles" if "--core" in sys.argv else "cycles"
med = lambda r: {m["name"]: m[unit]["median"] for m in r["measurements"]}
ma, mb = med(a), med(b)
print(f"unit: {unit}")
print(f"core clock: {a['timer']['core_ghz']:.2f} GHz and {b['timer']['core_ghz']:.2f} GHz "
      f"(dependent add chain at the start of each run)")
pa, pb = a["adds_per_cycle"]["median"], b["adds_per_cycle"]["median"]
print(f"SMT sibling pressure: {pa:.2f} and {pb:.2f} independent adds per cycle, median over "
      f"{a['adds_per_cycle']['n']} and {b['adds_per_cycle']['n']} rounds ({100 * (pb / pa - 1):+.1f}%)"
      + ("; the host's load changed between the runs" if abs(pb / pa - 1) > 0.05 else ""))
def wanted(n):
    return (n == "syscall/getppid" or n.startswith("xstate/")
            or any(n == f"tlb-flush/{op}/touched/n={k}" for op in ("madvise", "mprotect") for k in (1, 33)))
rows, worst, bad = [], 0.0, []
for n in sorted(x for x in ma if wanted(x) and x in mb):
    x, y = ma[n], mb[n]
    if abs(x) < 20:   # below the timer's step (VZEROUPPER ~1 cycle): relative error meaningless
        rows.append((n, x, y, None)); continue
    d = 100.0 * (y - x) / x
    rows.append((n, x, y, d))
    worst = max(worst, abs(d))
    if abs(d) > 5.0: bad.append(n)
print(f"{'configuration':40} {'run 1':>9} {'run 2':>9} {'diff':>8}")
for n, x, y, d in rows:
    print(f"{n:40} {x:9.1f} {y:9.1f} {'(<step)' if d is None else f'{d:+7.2f}%':>8}")
print(f"worst difference {worst:.2f}% over {sum(1 for r in rows if r[3] is not None)} medians; "
      f"{len(bad)} above 5%: {', '.join(bad) if bad else 'none'}")
sys.exit(1 if bad else 0)
PY
}
status=0
compare || status=1
echo
echo "The same in core clock cycles (ticks / ticks per core cycle, measured after each configuration):"
compare --core || status=$((status | 2))
exit $status
