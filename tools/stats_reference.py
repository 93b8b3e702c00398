#!/usr/bin/env python3
"""Reference values for abperf's statistics (src/stats/), computed with scipy.

Run by hand (pip install scipy numpy), from the repository root:

    python3 tools/stats_reference.py
    python3 tools/stats_reference.py counts    # only the `counts` cases, into the existing file

(pip install scipy numpy statsmodels.)

It writes tests/data/stats_reference.json. Inputs are deterministic (fixed numpy seeds and the
seed-000 /usr/bin/time data), so re-running gives the same file except for scipy's own changes.
The product never calls Python: only the unit tests read the JSON.
"""

import itertools
import json
import math
import os
import sys

import numpy as np
import scipy
from scipy import optimize, stats

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "data", "stats_reference.json")


def seed000():
    """User seconds of seed 000's /usr/bin/time lines (mail-quoted, variant label first)."""
    n, y = [], []
    with open(os.path.join(ROOT, "tests", "data", "seed000-time.txt")) as f:
        for line in f:
            parts = line.lstrip("> ").split()
            if not parts:
                continue
            (n if parts[0] == "n" else y).append(float(parts[1]))
    return n, y


def pairs():
    """Named (a, b) sample pairs used by several tests."""
    rng = np.random.default_rng(20260101)
    out = []
    n, y = seed000()
    out.append(("seed000_user", n, y))
    out.append(("normal_12_12", list(100 + rng.normal(0, 0.3, 12)), list(99.6 + rng.normal(0, 0.3, 12))))
    out.append(("unequal_var_8_20", list(50 + rng.normal(0, 0.2, 8)), list(50.3 + rng.normal(0, 1.5, 20))))
    out.append(("small_5_4", list(10 + rng.normal(0, 1, 5)), list(11 + rng.normal(0, 1, 4))))
    out.append(("skewed_30_31", list(20 + rng.lognormal(0, 0.5, 30)), list(20.5 + rng.lognormal(0, 0.5, 31))))
    out.append(("aa_50_50", list(1000 + rng.normal(0, 5, 50)), list(1000 + rng.normal(0, 5, 50))))
    return [(name, [float(v) for v in a], [float(v) for v in b]) for name, a, b in out]


def welch_cases():
    cases = []
    for name, a, b in pairs():
        r = stats.ttest_ind(b, a, equal_var=False)
        va, vb = np.var(a, ddof=1) / len(a), np.var(b, ddof=1) / len(b)
        df = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
        cases.append({"name": name, "a": a, "b": b, "t": float(r.statistic), "p": float(r.pvalue), "df": float(df)})
    return cases


def fieller_cases():
    """Fieller limits found by root-finding on the pivot, not by the quadratic formula."""
    cases = []
    for name, a, b in pairs():
        ma, mb = np.mean(a), np.mean(b)
        sa, sb = np.var(a, ddof=1) / len(a), np.var(b, ddof=1) / len(b)
        df = (sa + sb) ** 2 / (sa**2 / (len(a) - 1) + sb**2 / (len(b) - 1))
        for level in (0.95, 0.90):
            t = stats.t.ppf(0.5 + level / 2, df)
            pivot = lambda th: (mb - th * ma) / math.sqrt(sb + th * th * sa)
            r = mb / ma
            width = 50 * math.sqrt(sa + sb) / ma + 1e-9
            lo = optimize.brentq(lambda th: pivot(th) - t, r - width, r, xtol=1e-15, rtol=1e-15)
            hi = optimize.brentq(lambda th: pivot(th) + t, r, r + width, xtol=1e-15, rtol=1e-15)
            cases.append({"name": name, "a": a, "b": b, "level": level, "low": lo, "high": hi})
    return cases


def mwu_cases():
    rng = np.random.default_rng(7)
    cases = []
    exact_inputs = [
        ("exact_5_6", list(rng.normal(0, 1, 5)), list(rng.normal(1, 1, 6))),
        ("exact_8_8", list(rng.normal(0, 1, 8)), list(rng.normal(0.5, 1, 8))),
        ("exact_3_9", list(rng.normal(0, 1, 3)), list(rng.normal(0, 1, 9))),
        ("exact_20_25", list(rng.normal(0, 1, 20)), list(rng.normal(0.4, 1, 25))),
    ]
    n, y = seed000()
    if len(set(n + y)) == len(n + y):
        exact_inputs.append(("exact_seed000", n, y))
    for name, a, b in exact_inputs:
        r = stats.mannwhitneyu(a, b, alternative="two-sided", method="exact")
        cases.append({"name": name, "a": a, "b": b, "method": "exact", "u": float(r.statistic), "p": float(r.pvalue)})
    asym_inputs = [
        ("asym_ties_15_15", list(np.round(rng.normal(10, 1, 15), 0)), list(np.round(rng.normal(10.8, 1, 15), 0))),
        ("asym_ties_40_35", list(np.round(rng.normal(5, 2, 40), 0)), list(np.round(rng.normal(5.5, 2, 35), 0))),
        ("asym_noties_30_30", list(rng.normal(0, 1, 30)), list(rng.normal(0.3, 1, 30))),
        ("asym_seed000", n, y),
    ]
    for name, a, b in asym_inputs:
        r = stats.mannwhitneyu(a, b, alternative="two-sided", method="asymptotic", use_continuity=True)
        cases.append({"name": name, "a": [float(v) for v in a], "b": [float(v) for v in b], "method": "asymptotic",
                      "u": float(r.statistic), "p": float(r.pvalue)})
    return cases


def u_null_cdf(m, n):
    """Exact null distribution of U by the recursion f(m, n, u) = f(m-1, n, u-n) + f(m, n-1, u)."""
    from functools import lru_cache

    @lru_cache(maxsize=None)
    def f(m, n, u):
        if u < 0:
            return 0
        if m == 0 or n == 0:
            return 1 if u == 0 else 0
        return f(m - 1, n, u - n) + f(m, n - 1, u)

    total = math.comb(m + n, m)
    counts = [f(m, n, u) for u in range(m * n + 1)]
    return [c / total for c in itertools.accumulate(counts)]


def hl_cases():
    rng = np.random.default_rng(11)
    cases = []
    inputs = [
        ("hl_exact_6_7", list(rng.normal(0, 1, 6)), list(rng.normal(1, 1, 7)), True),
        ("hl_exact_10_12", list(rng.normal(0, 1, 10)), list(rng.normal(0.5, 1, 12)), True),
        ("hl_ties_20_20", list(np.round(rng.normal(10, 1, 20), 1)), list(np.round(rng.normal(10.4, 1, 20), 1)), False),
        ("hl_large_70_60", list(rng.normal(0, 1, 70)), list(rng.normal(0.2, 1, 60)), False),
    ]
    for name, a, b, exact in inputs:
        a = [float(v) for v in a]
        b = [float(v) for v in b]
        m, n = len(a), len(b)
        d = np.sort(np.subtract.outer(np.array(b), np.array(a)).ravel())
        shift = float(np.median(d))
        if exact:
            cdf = u_null_cdf(m, n)
            k = 0
            for u, c in enumerate(cdf):
                if c <= 0.025:
                    k = u + 1
                else:
                    break
        else:
            allv = np.array(a + b)
            _, t = np.unique(allv, return_counts=True)
            tie = float(np.sum(t**3 - t))
            N = m + n
            var = m * n / 12 * ((N + 1) - tie / (N * (N - 1)))
            k = int(math.floor(m * n / 2 + 0.5 - stats.norm.ppf(0.975) * math.sqrt(var)))
        cases.append({"name": name, "a": a, "b": b, "shift": shift, "low": float(d[k - 1]), "high": float(d[m * n - k])})
    return cases


def bootstrap_cases():
    cases = []
    sel = {"seed000_user", "normal_12_12", "aa_50_50"}

    def jack_accel(a, b, stat):
        num = den = 0.0
        for j in range(2):
            x = [a, b][j]
            th = []
            for i in range(len(x)):
                xi = np.delete(np.array(x), i)
                th.append(stat(xi, np.array(b)) if j == 0 else stat(np.array(a), xi))
            th = np.array(th)
            nn = len(x)
            u = (nn - 1) * (th.mean() - th)
            num += np.sum(u**3) / nn**3
            den += np.sum(u**2) / nn**2
        return float(num / 6 / den**1.5)

    def rmeans(x, y, axis=-1):
        return np.mean(y, axis=axis) / np.mean(x, axis=axis)

    def rmedians(x, y, axis=-1):
        return np.median(y, axis=axis) / np.median(x, axis=axis)

    def rsd(x, y, axis=-1):
        return np.std(y, ddof=1, axis=axis) / np.std(x, ddof=1, axis=axis)

    for name, a, b in pairs():
        if name not in sel:
            continue
        case = {"name": name, "a": a, "b": b}
        for key, fn in (("means", rmeans), ("medians", rmedians), ("sd", rsd)):
            r = stats.bootstrap((a, b), fn, vectorized=True, paired=False, n_resamples=10000, method="BCa",
                                confidence_level=0.95, random_state=np.random.default_rng(1234))
            case[f"{key}_low"] = float(r.confidence_interval.low)
            case[f"{key}_high"] = float(r.confidence_interval.high)
        case["accel_means"] = jack_accel(a, b, lambda x, y: np.mean(y) / np.mean(x))
        case["accel_sd"] = jack_accel(a, b, lambda x, y: np.std(y, ddof=1) / np.std(x, ddof=1))
        cases.append(case)
    return cases


def levene_cases():
    cases = []
    for name, a, b in pairs():
        r = stats.levene(a, b, center="median")
        cases.append({"name": name, "a": a, "b": b, "f": float(r.statistic), "p": float(r.pvalue)})
    rng = np.random.default_rng(3)
    a, b, c = (list(map(float, rng.normal(0, s, k))) for s, k in ((1, 31), (3.5, 31), (1.2, 31)))
    r = stats.levene(a, b, c, center="median")
    return cases, [{"name": "three_31", "a": a, "b": b, "c": c, "f": float(r.statistic), "p": float(r.pvalue)}]


def kendall_cases():
    rng = np.random.default_rng(5)
    cases = []
    series = [
        ("trend_24", list(np.arange(24) * 0.05 + rng.normal(0, 0.3, 24))),
        ("none_40", list(rng.normal(0, 1, 40))),
        ("ties_30", list(np.round(rng.normal(0, 1, 30) + np.arange(30) * 0.02, 0))),
        ("down_12", list(-np.arange(12) * 0.1 + rng.normal(0, 0.2, 12))),
    ]
    for name, x in series:
        x = [float(v) for v in x]
        t = list(map(float, range(len(x))))
        r = stats.kendalltau(t, x, method="asymptotic")
        sen = stats.theilslopes(x, t).slope
        xm = np.array(x) - np.mean(x)
        lag1 = float(np.sum(xm[:-1] * xm[1:]) / np.sum(xm**2))
        cases.append({"name": name, "x": x, "t": t, "tau": float(r.statistic), "p": float(r.pvalue),
                      "sen": float(sen), "lag1": lag1})
    return cases


def kendall_stratified_cases():
    """Seasonal Kendall: S and Var(S) summed over groups; S from scipy's tau-b, Var(S) direct."""
    rng = np.random.default_rng(17)
    cases = []
    for name, k1, k2, slope in (("strat_12_12", 12, 12, 0.04), ("strat_ties_15_10", 15, 10, 0.0)):
        x1 = np.arange(k1) * slope + rng.normal(0, 0.3, k1)
        x2 = 0.5 + np.arange(k2) * slope + rng.normal(0, 0.3, k2)
        if "ties" in name:
            x1, x2 = np.round(x1, 1), np.round(x2, 1)
        s = var = 0.0
        for x in (x1, x2):
            n = len(x)
            tau = stats.kendalltau(np.arange(n), x).statistic
            _, t = np.unique(x, return_counts=True)
            n0 = n * (n - 1) / 2
            n2 = float(np.sum(t * (t - 1) / 2))
            s += tau * math.sqrt(n0 * (n0 - n2))  # tau-b times its denominator
            var += (n * (n - 1) * (2 * n + 5) - float(np.sum(t * (t - 1) * (2 * t + 5)))) / 18
        z = s / math.sqrt(var)
        cases.append({"name": name, "x1": list(map(float, x1)), "x2": list(map(float, x2)), "s": round(s),
                      "var_s": var, "p": float(2 * stats.norm.sf(abs(z)))})
    return cases


def ancova_cases():
    rng = np.random.default_rng(9)
    cases = []
    for name, order in (("abba_24", "abba"), ("seq_20", "seq")):
        n = 24 if order == "abba" else 20
        if order == "abba":
            pattern = []
            for blk in range(n // 4):
                pattern += ["a", "b", "b", "a"] if blk % 2 == 0 else ["b", "a", "a", "b"]
        else:
            pattern = ["a"] * (n // 2) + ["b"] * (n // 2)
        ia, ib, a, b = [], [], [], []
        for i, g in enumerate(pattern):
            v = 100 + 0.02 * i + (0.3 if g == "b" else 0) + rng.normal(0, 0.2)
            (ia if g == "a" else ib).append(float(i))
            (a if g == "a" else b).append(float(v))
        y = np.array(a + b)
        X = np.column_stack([np.ones(len(y)), [0] * len(a) + [1] * len(b), ia + ib])
        beta, *_ = np.linalg.lstsq(X, y, rcond=None)
        res = y - X @ beta
        df = len(y) - 3
        s2 = res @ res / df
        cov = s2 * np.linalg.inv(X.T @ X)
        se = math.sqrt(cov[1, 1])
        tt = beta[1] / se
        cases.append({"name": name, "a": a, "b": b, "ia": ia, "ib": ib, "effect": float(beta[1]),
                      "slope": float(beta[2]), "se": se, "p": float(2 * stats.t.sf(abs(tt), df))})
    return cases


def tost_cases():
    cases = []
    for name, a, b in pairs():
        for margin in (0.002, 0.01):
            ma, mb = np.mean(a), np.mean(b)
            sa, sb = np.var(a, ddof=1) / len(a), np.var(b, ddof=1) / len(b)
            df = (sa + sb) ** 2 / (sa**2 / (len(a) - 1) + sb**2 / (len(b) - 1))
            lo0, hi0 = 1 - margin, 1 + margin
            t_lo = (mb - lo0 * ma) / math.sqrt(sb + lo0**2 * sa)
            t_hi = (mb - hi0 * ma) / math.sqrt(sb + hi0**2 * sa)
            cases.append({"name": name, "a": a, "b": b, "margin": margin,
                          "p_lower": float(stats.t.sf(t_lo, df)), "p_upper": float(stats.t.cdf(t_hi, df))})
    return cases


def multiple_cases():
    rng = np.random.default_rng(13)
    cases = []
    for ps in ([0.01, 0.04, 0.03, 0.005, 0.2], list(map(float, rng.uniform(0, 0.1, 36))), [0.5, 0.5, 0.001]):
        ps = np.array(ps, dtype=float)
        m = len(ps)
        order = np.argsort(ps, kind="stable")
        holm = np.empty(m)
        holm[order] = np.minimum(1, np.maximum.accumulate((m - np.arange(m)) * ps[order]))
        bh = stats.false_discovery_control(ps, method="bh")
        cases.append({"p": list(map(float, ps)), "holm": list(map(float, holm)), "bh": list(map(float, bh))})
    return cases


def yuen_cases():
    """Yuen's trimmed-means test: scipy ttest_ind(b, a, equal_var=False, trim=...)."""
    rng = np.random.default_rng(29)
    cases = []
    extra = []
    # Two samples of one bimodal distribution (90% fast, 10% slow runs): the A/A case the outlier
    # recheck used to call different.
    def bimodal(n):
        slow = rng.uniform(0, 1, n) < 0.1
        return list(map(float, np.where(slow, rng.normal(130, 1, n), rng.normal(100, 1, n))))
    extra.append(("bimodal_aa_30", bimodal(30), bimodal(30)))
    extra.append(("bimodal_aa_10", bimodal(10), bimodal(10)))
    for name, a, b in pairs() + extra:
        for trim in (0.1, 0.2):
            r = stats.ttest_ind(b, a, equal_var=False, trim=trim)
            cases.append({"name": name, "a": a, "b": b, "trim": trim, "t": float(r.statistic),
                          "p": float(r.pvalue), "df": float(r.df)})
    return cases


def seed001_cases():
    """Seed 001's design: 6 workloads x 3 implementations x 31 runs, every pair of
    implementations compared within each workload on the mean (Welch) and on the run-to-run
    variation (Brown-Forsythe), 36 tests, Holm-corrected by statsmodels' multipletests."""
    from statsmodels.stats.multitest import multipletests
    rng = np.random.default_rng(1)
    workloads = ["seq-read", "seq-write", "rand-read", "rand-write", "hot-read", "hot-write"]
    impls = ["flush", "noflush", "young"]
    values = {}
    for w, wl in enumerate(workloads):
        values[wl] = {}
        for i, im in enumerate(impls):
            mean = 10.0 * (1 + 0.1 * w) * (1 - 0.08 * (i == 1) + 0.004 * (i == 2) * (w % 2))
            sd = 0.02 * mean * (3.5 if (i == 0 and w in (1, 4)) else 1.0)
            values[wl][im] = list(map(float, rng.normal(mean, sd, 31)))
    tests = []
    for wl in workloads:
        for ia, ib in ((0, 1), (0, 2), (1, 2)):
            a, b = values[wl][impls[ia]], values[wl][impls[ib]]
            pw = float(stats.ttest_ind(b, a, equal_var=False).pvalue)
            pv = float(stats.levene(a, b, center="median").pvalue)
            tests.append({"workload": wl, "baseline": impls[ia], "variant": impls[ib], "test": "mean", "p": pw})
            tests.append({"workload": wl, "baseline": impls[ia], "variant": impls[ib], "test": "variability", "p": pv})
    adj = multipletests([t["p"] for t in tests], alpha=0.01, method="holm")[1]
    for t, a in zip(tests, adj):
        t["holm"] = float(a)
    return [{"workloads": workloads, "impls": impls, "values": values, "tests": tests}]


def nct_cases():
    cases = []
    for df in (3.0, 10.0, 22.0, 58.0, 198.0):
        for nc in (-2.0, 0.0, 0.5, 1.7, 2.8, 4.0, 8.0):
            for t in (-3.0, -1.0, 0.3, 1.0, 2.074, 3.5, 6.0):
                cdf = float(stats.nct.cdf(t, df, nc))
                if math.isfinite(cdf):  # scipy returns NaN far in the lower tail for large nc
                    cases.append({"t": t, "df": df, "nc": nc, "cdf": cdf})
    return cases


def power(d, n, alpha):
    df = 2 * n - 2
    nc = d * math.sqrt(n / 2)
    tc = stats.t.ppf(1 - alpha / 2, df)
    # P(T' < -tc | nc) = P(T' > tc | -nc); scipy's lower tail gives NaN for large nc.
    return float(stats.nct.sf(tc, df, nc) + stats.nct.sf(tc, df, -nc))


def power_cases():
    out = []
    for d in (0.3, 0.6, 1.0, 1.5, 2.5):
        for n in (4, 12, 17, 45, 100):
            for alpha in (0.05, 0.01):
                out.append({"d": d, "n": n, "alpha": alpha, "power": power(d, n, alpha)})
    runs = []
    for d in (0.25, 0.6, 1.0, 1.16, 2.0, 3.0):
        for alpha, pw in ((0.05, 0.8), (0.01, 0.9)):
            n = 2
            while power(d, n, alpha) < pw:
                n += 1
            runs.append({"d": d, "alpha": alpha, "power": pw, "n": n})
    return out, runs


def levels_cases():
    """One-way random-effects ANOVA of runs grouped by boot (stats/levels.rs): scipy's f_oneway
    for F and p, the textbook ANOVA estimators of the variance components (with n0 for unbalanced
    groups), and, for balanced groups with a positive boot component, statsmodels' REML mixed model as an independent check."""
    import warnings

    import statsmodels.formula.api as smf

    rng = np.random.default_rng(20131015)
    specs = [
        ("balanced_8x5_icc08", [5] * 8, 2.0, 1.0),
        ("balanced_5x10_icc05", [10] * 5, 1.0, 1.0),
        ("balanced_6x3_small_boot", [3] * 6, 0.05, 1.0),
        ("unbalanced_7", [2, 3, 4, 5, 6, 2, 9], 1.5, 1.0),
    ]
    cases = []
    for name, sizes, sb, sw in specs:
        groups = [list(100 + sb * rng.normal() + sw * rng.normal(0, 1, n)) for n in sizes]
        a, n = len(groups), sum(sizes)
        f, p = stats.f_oneway(*groups)
        grand = np.mean(np.concatenate(groups))
        msb = sum(len(g) * (np.mean(g) - grand) ** 2 for g in groups) / (a - 1)
        msw = sum(((np.array(g) - np.mean(g)) ** 2).sum() for g in groups) / (n - a)
        n0 = (n - sum(s * s for s in sizes) / n) / (a - 1)
        vb = (msb - msw) / n0
        icc = max(vb, 0.0) / (max(vb, 0.0) + msw)
        case = {
            "name": name,
            "sizes": sizes,
            "values": [float(v) for g in groups for v in g],
            "f": float(f),
            "p": float(p),
            "ms_between": float(msb),
            "ms_within": float(msw),
            "n0": float(n0),
            "var_boot": float(vb),
            "icc": float(icc),
            "reml_var_boot": 0.0,
            "reml_var_run": 0.0,
        }
        if len(set(sizes)) == 1 and vb > 0:
            import pandas as pd

            df = pd.DataFrame(
                {"y": case["values"], "boot": [i for i, g in enumerate(groups) for _ in g]}
            )
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                m = smf.mixedlm("y ~ 1", df, groups=df["boot"]).fit(reml=True)
            case["reml_var_boot"] = float(m.cov_re.iloc[0, 0])
            case["reml_var_run"] = float(m.scale)
        cases.append(case)
    kj = []
    for name, vr, vb, cr, cb in [
        ("boot_dominant", 1.0, 4.0, 0.5, 20.0),
        ("run_dominant", 0.25, 0.04, 0.5, 20.0),
        ("cheap_boots", 1.0, 1.0, 1.0, 0.5),
        ("kvm_like", 0.09, 0.01, 2.0, 3.0),
    ]:
        r = max(1, math.ceil(math.sqrt((cb / cr) * (vr / vb))))
        kj.append({"name": name, "var_run": vr, "var_boot": vb, "cost_run": cr, "cost_boot": cb, "r": r})
    return cases, kj


def counts_cases():
    """Two Poisson counts compared given their sum (stats/counts.rs): scipy's exact binomial
    test of B's share = 1/2 and the Clopper-Pearson interval of that share."""
    out = []
    for a, b in [(10, 2), (2, 10), (5, 5), (0, 7), (300, 250), (1000, 1100), (620895, 621500),
                 (50, 0), (1, 1), (33936, 35000)]:
        t = stats.binomtest(b, a + b, 0.5)
        ci = t.proportion_ci(confidence_level=0.95, method="exact")
        out.append({"a": a, "b": b, "p": float(t.pvalue),
                    "pi_low": float(ci.low), "pi_high": float(ci.high)})
    return out


def main():
    if sys.argv[1:] == ["counts"]:
        # only the counts cases, into the existing file (the others stay as generated)
        with open(OUT) as f:
            ref = json.load(f)
        ref["counts"] = counts_cases()
        ref["generator_counts"] = f"tools/stats_reference.py counts, scipy {scipy.__version__}"
        with open(OUT, "w") as f:
            json.dump(ref, f, indent=1, allow_nan=False)
            f.write("\n")
        print(f"wrote the counts cases into {OUT}")
        return
    levene2, levene3 = levene_cases()
    pw, runs = power_cases()
    levels, kj = levels_cases()
    ref = {
        "generator": f"tools/stats_reference.py, scipy {scipy.__version__}, numpy {np.__version__}, statsmodels {__import__('statsmodels').__version__}, python {sys.version.split()[0]}",
        "welch": welch_cases(),
        "fieller": fieller_cases(),
        "mannwhitneyu": mwu_cases(),
        "hodges_lehmann": hl_cases(),
        "bootstrap": bootstrap_cases(),
        "levene": levene2,
        "levene3": levene3,
        "kendall": kendall_cases(),
        "kendall_stratified": kendall_stratified_cases(),
        "ancova": ancova_cases(),
        "tost": tost_cases(),
        "multiple": multiple_cases(),
        "yuen": yuen_cases(),
        "seed001": seed001_cases(),
        "nct": nct_cases(),
        "power": pw,
        "runs_needed": runs,
        "levels": levels,
        "kalibera_jones": kj,
        "counts": counts_cases(),
    }
    with open(OUT, "w") as f:
        json.dump(ref, f, indent=1, allow_nan=False)
        f.write("\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
