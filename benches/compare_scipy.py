#!/usr/bin/env python3
"""The peer of `abperf compare A B` on plain-value files at 1M + 1M values (issue 46): Welch's
t-test, Mann-Whitney U and a 200-resample bootstrap of the ratio of means (percentile interval;
abperf takes 200 resamples at that size), in scipy and numpy. Reads the two files (one value a
line), prints what it found. Timed by benches/compare_million.sh beside abperf.

Usage: python3 benches/compare_scipy.py A.txt B.txt
"""
import sys

import numpy as np
from scipy import stats


def main() -> None:
    a = np.loadtxt(sys.argv[1])
    b = np.loadtxt(sys.argv[2])
    welch = stats.ttest_ind(b, a, equal_var=False)
    mw = stats.mannwhitneyu(b, a, alternative="two-sided")
    rng = np.random.default_rng(46)
    ratios = np.empty(200)
    for i in range(ratios.size):
        ra = a[rng.integers(0, a.size, a.size)].mean()
        rb = b[rng.integers(0, b.size, b.size)].mean()
        ratios[i] = rb / ra
    lo, hi = np.percentile(ratios, [2.5, 97.5])
    print(f"n {a.size}+{b.size}  mean ratio {b.mean() / a.mean():.6f} [{lo:.6f}, {hi:.6f}]")
    print(f"Welch t {welch.statistic:.3f} p {welch.pvalue:.3g}")
    print(f"Mann-Whitney U {mw.statistic:.0f} p {mw.pvalue:.3g}")


if __name__ == "__main__":
    main()
