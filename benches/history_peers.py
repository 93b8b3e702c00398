#!/usr/bin/env python3
"""abperf's change points (issue 43) beside Apache Otava and MongoDB's signal-processing-algorithms
(E-divisive) on the SAME series, each peer tuned to the same false-alarm rate.

    cargo bench -p abperf-stats --bench history -- --write target/history_series.json
    python3 -m venv /tmp/peers && /tmp/peers/bin/pip install apache-otava structlog more-itertools
    /tmp/peers/bin/pip install --no-deps signal-processing-algorithms  # its gevent pin does not build on 3.11
    /tmp/peers/bin/python benches/history_peers.py target/history_series.json [--limit N]

The series are the bench's seeded histories (60 points, heteroscedastic standard errors, one
outlier in 30% of the series or in all of them, a planted step of 1 to 3 typical SEs). The peers
see the estimates only (neither can use a standard error); abperf's changes are read from the
file (the bench ran it). Each peer's threshold (Otava's max_pvalue, E-divisive's pvalue) is the
largest whose share of change-free series with any change is at most abperf's share on the same
change-free series. Reported per set: the share of series with any change, and the share with a
change within 2 points of the planted one. Run by hand; the product never calls Python.
"""
import json
import sys
import time

import numpy as np
from otava.analysis import compute_change_points
from signal_processing_algorithms.energy_statistics.energy_statistics import e_divisive

NEAR = 2
PERMUTATIONS = 100


def otava(x, q):
    cps, _ = compute_change_points(list(x), max_pvalue=q)
    return [int(c.index) for c in cps]


def edivisive(x, q, seed):
    np.random.seed(seed)
    return [int(i) for i in e_divisive(np.asarray(x, dtype=float), pvalue=q, permutations=PERMUTATIONS)]


def false_alarms(run, series, q):
    return sum(1 for i, s in enumerate(series) if run(s["estimates"], q, i)) / len(series)


def tune(run, series, target, grid):
    """The largest threshold of the increasing grid whose false-alarm share is <= target
    (bisection: the share grows with the threshold)."""
    lo, hi = -1, len(grid) - 1
    if false_alarms(run, series, grid[hi]) <= target:
        return grid[hi]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if false_alarms(run, series, grid[mid]) <= target:
            lo = mid
        else:
            hi = mid
    return grid[lo] if lo >= 0 else None


def rates(found, series):
    any_ = sum(1 for f in found if f) / len(series)
    near = sum(
        1
        for f, s in zip(found, series)
        if s["change"] is not None and any(abs(c - s["change"]) <= NEAR for c in f)
    ) / len(series)
    return any_, near


def main():
    path = sys.argv[1]
    limit = int(sys.argv[sys.argv.index("--limit") + 1]) if "--limit" in sys.argv else 500
    doc = json.load(open(path))
    sets = {s["name"]: s["series"][:limit] for s in doc["sets"]}
    null = sets["change-free"]
    target = sum(1 for s in null if s["abperf"]) / len(null)
    peers = {
        "Otava (E-divisive + t-test, windowed)": (
            lambda x, q, i: otava(x, q),
            list(np.geomspace(1e-7, 0.5, 40)),
        ),
        f"E-divisive (signal-processing-algorithms, {PERMUTATIONS} permutations)": (
            lambda x, q, i: edivisive(x, q, 1000 + i),
            [k / (PERMUTATIONS + 1) for k in range(1, 21)],  # above 0.2 it splits into slivers, slowly
        ),
    }
    print(f"series: {path}, {doc['points']} points each, first {limit} of each set")
    print(f"target false-alarm share (abperf's on the change-free set, alpha {doc['alpha']}): {100 * target:.1f}%")
    rows = {"abperf (weighted LR, MC threshold)": {n: [s["abperf"] for s in ss] for n, ss in sets.items()}}
    for name, (run, grid) in peers.items():
        t0 = time.time()
        q = tune(run, null, target, grid)
        print(f"{name}: tuned threshold {q} ({time.time() - t0:.0f} s)")
        if q is None:
            print(f"{name}: no threshold reaches the target; left out")
            continue
        rows[name] = {
            n: [run(s["estimates"], q, i) for i, s in enumerate(ss)] for n, ss in sets.items()
        }
    print()
    print(f"{'method':<58} {'set':<30} {'any change':>10} {'within ' + str(NEAR) + ' pts':>12}")
    for name, found in rows.items():
        for set_name, ss in sets.items():
            a, n = rates(found[set_name], ss)
            near = f"{100 * n:.1f}%" if ss and ss[0]["change"] is not None else "-"
            print(f"{name:<58} {set_name:<30} {100 * a:>9.1f}% {near:>12}")


if __name__ == "__main__":
    main()
