"""CSV of 2 x N ordered runs (A, B alternating; B 1% slower; a linear drift; Gaussian noise,
seed 46) for abperf import: the data of benches/ordered_compare.sh and benches/pg_bulk.sh.
Usage: python3 benches/ordered_runs.py N > runs.csv"""
import random
import sys

n = int(sys.argv[1])
r = random.Random(46)
out = ["variant,seq,wall_ns [ns]"]
for i in range(2 * n):
    v, shift = ("A", 0.0) if i % 2 == 0 else ("B", 1e4)
    out.append("%s,%d,%.1f" % (v, i, 1e6 + shift + 2e4 * i / (2 * n) + r.gauss(0, 2e4)))
print("\n".join(out))
