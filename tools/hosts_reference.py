#!/usr/bin/env python3
"""Reference values for hosts as blocks (crates/stats/src/meta_analysis.rs, host_effects.rs,
docs/statistics.md#hosts-as-blocks): per-host effects combined by a random-effects model,
computed with statsmodels' `combine_effects` (Paule-Mandel tau^2, "iterated", its root found by
scipy's brentq: see `combine`) and Welch's test
of equal effects with statsmodels' `anova_generic(use_var="unequal")`.

Run by hand, from the repository root (pip install numpy scipy statsmodels):

    python3 tools/hosts_reference.py

It writes
- tests/data/hosts/hosts.csv: seeded runs of 2 variants on 4 hosts x 4 boots x 5 runs, in the
  format of `abperf import --format csv` (docs/import.md#tables), with a planted effect that
  differs between hosts (-3% on the zen4 hosts, none on the skylake ones);
- tests/data/hosts/meta_reference.json: for that CSV and for fixed sets of effects and
  variances, statsmodels' tau^2, random-effects mean, its standard errors (scale 1 and HKSJ),
  intervals, Cochran's Q, its p and I^2, Welch's test, and from those (scipy's t) the interval,
  p and prediction interval of the truncated HKSJ that abperf uses; and the power of the paired
  t-test (statsmodels' TTestPower). crates/stats/src/meta_analysis.rs and tests/hosts.rs compare
  abperf to these to 1e-8 relative. The product never calls Python.
"""

import csv
import json
import os

import numpy as np
import statsmodels
from scipy import stats
from scipy.optimize import brentq
from statsmodels.stats.meta_analysis import combine_effects
from statsmodels.stats.oneway import anova_generic
from statsmodels.stats.power import TTestPower

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "data", "hosts")
SEED = 20261126
ALPHA = 0.05

# Host: its mean run time (ns) and the patch's true effect on it.
HOSTS = [
    ("zen4-a", 1000.0, -0.03),
    ("zen4-b", 1040.0, -0.03),
    ("skylake-a", 1300.0, 0.0),
    ("skylake-b", 1350.0, 0.0),
]
VARIANTS = ["base", "patched"]
BOOTS, RUNS = 4, 5
SD_BOOT, SD_RUN = 0.004, 0.01  # relative


def generate():
    rng = np.random.default_rng(SEED)
    rows = []
    seq = 0
    for host, mu, effect in HOSTS:
        for v, name in enumerate(VARIANTS):
            for b in range(BOOTS):
                ub = SD_BOOT * rng.standard_normal()
                for r in range(RUNS):
                    value = mu * (1 + (effect if v else 0.0)) * (1 + ub + SD_RUN * rng.standard_normal())
                    rows.append({
                        "variant": name,
                        "seq": seq,
                        "host": host,
                        "boot": f"{name}-boot{b}",
                        "wall_ns [ns]": repr(round(float(value), 6)),
                    })
                    seq += 1
    return rows


def host_effects(rows):
    """Per host: ln(mean_patched / mean_base) of the means of boot means, its delta-method
    variance and Satterthwaite df, as crates/stats/src/host_effects.rs computes them."""
    cells = {}
    for r in rows:
        key = (r["host"], r["variant"])
        cells.setdefault(key, {}).setdefault(r["boot"], []).append(float(r["wall_ns [ns]"]))
    out = []
    for host, _, _ in HOSTS:
        sides = []
        for name in VARIANTS:
            means = np.array([np.mean(v) for v in cells[(host, name)].values()])
            m = means.mean()
            sides.append((m, means.var(ddof=1) / len(means) / m**2, len(means) - 1))
        (ma, va, fa), (mb, vb, fb) = sides
        v = va + vb
        out.append({"host": host, "y": float(np.log(mb / ma)), "v": float(v),
                    "df": float(v * v / (va * va / fa + vb * vb / fb))})
    return out


def generalised_q_excess(t, y, v):
    w = 1 / (v + t)
    m = w @ y / w.sum()
    return w @ (y - m) ** 2 - (len(y) - 1)


def paule_mandel_root(y, v):
    """The tau^2 where the generalised Q equals k - 1 (0 when Q(0) <= k - 1), by brentq to
    full precision, then moved down to the nearest value where Q - (k - 1) is not negative."""
    if generalised_q_excess(0.0, y, v) <= 0:
        return 0.0
    hi = ((y - y.mean()) ** 2).sum() / (len(y) - 1)
    t = brentq(generalised_q_excess, 0.0, hi, args=(y, v), xtol=1e-300,
               rtol=4 * np.finfo(float).eps, maxiter=1000)
    while generalised_q_excess(t, y, v) < 0:
        t = np.nextafter(t, 0.0)
    return float(t)


def combine(y, v, df, alpha=ALPHA):
    y, v = np.asarray(y, float), np.asarray(v, float)
    k = len(y)
    # statsmodels' own Paule-Mandel iteration resets tau^2 to 0 when a Newton step ends a
    # rounding error below the root (Q - (k - 1) = -9e-16), which any tolerance tighter than its
    # default 1e-5 runs into (and 1e-5 leaves tau^2 2e-8 off). So tau^2 is scipy's brentq root of
    # the Paule-Mandel equation, handed to statsmodels as its starting value, which its
    # iteration accepts as converged (|Q - (k - 1)| <= 1e-9); the rest is statsmodels'.
    tau2 = paule_mandel_root(y, v)
    res = combine_effects(y, v, method_re="iterated", use_t=True, alpha=alpha,
                          tau2_start=tau2, atol=1e-9)
    assert res.tau2 == tau2, (res.tau2, tau2)
    ci = res.conf_int(alpha=alpha, use_t=True)
    se_mod = max(float(res.sd_eff_w_re_hksj), float(res.sd_eff_w_re))
    mean = float(res.mean_effect_re)
    tq = stats.t.isf(alpha / 2, k - 1)
    out = {
        "alpha": alpha, "y": y.tolist(), "v": v.tolist(), "df": list(df) if df else None,
        "tau2": float(res.tau2), "mean": mean, "fixed_mean": float(res.mean_effect_fe),
        "se_fixed_scale": float(res.sd_eff_w_re), "se_hksj": float(res.sd_eff_w_re_hksj),
        "ci_hksj": [float(x) for x in ci[3]],
        "q": float(res.q), "q_p": float(res.test_homogeneity().pvalue),
        "i2": max(0.0, float(res.i2)),
        "weights": [float(w) for w in res.weights_rel_re],
        # abperf's interval: HKSJ with the scale truncated at 1 (scipy's t, statsmodels' SEs).
        "se": se_mod, "ci": [mean - tq * se_mod, mean + tq * se_mod],
        "p": float(2 * stats.t.sf(abs(mean / se_mod), k - 1)),
        "ci_equivalence": [mean - stats.t.isf(alpha, k - 1) * se_mod,
                           mean + stats.t.isf(alpha, k - 1) * se_mod],
    }
    if k >= 3:
        h = stats.t.isf(alpha / 2, k - 2) * np.sqrt(float(res.tau2) + se_mod**2)
        out["prediction"] = [mean - h, mean + h]
    if df:
        f = np.asarray(df, float)
        w = anova_generic(y, v * (f + 1), f + 1, use_var="unequal", welch_correction=True)
        out["welch_f"], out["welch_p"] = float(w.statistic), float(w.pvalue)
        out["welch_df2"] = float(w.df[1])
    return out


# Fixed cases: heterogeneous, homogeneous (tau^2 truncated at 0), two hosts, many hosts, a
# 99% level.
CASES = {
    "heterogeneous5": ([0.031, -0.002, 0.012, 0.025, 0.004], [1e-5, 4e-6, 2e-5, 8e-6, 5e-6],
                       [4.0, 3.2, 6.0, 3.5, 7.1], ALPHA),
    "homogeneous4": ([0.010, 0.012, 0.009, 0.011], [4e-5, 2e-5, 6e-5, 3e-5], [4.0, 4.0, 4.0, 4.0],
                     ALPHA),
    "two": ([0.02, -0.01], [1e-4, 2e-4], [3.0, 2.5], ALPHA),
    "eight99": ([0.05, 0.01, -0.02, 0.03, 0.0, 0.04, -0.01, 0.02],
                [4e-4, 1e-4, 2e-4, 3e-4, 1.5e-4, 2.5e-4, 1e-4, 5e-4],
                [5.0, 8.0, 4.0, 6.0, 12.0, 3.0, 9.0, 4.5], 0.01),
}


def main():
    os.makedirs(OUT, exist_ok=True)
    rows = generate()
    with open(os.path.join(OUT, "hosts.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["variant", "seq", "host", "boot", "wall_ns [ns]"],
                           lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    eff = host_effects(rows)
    doc = {
        "statsmodels": statsmodels.__version__,
        "seed": SEED,
        "csv": {"hosts": eff,
                "combined": combine([e["y"] for e in eff], [e["v"] for e in eff],
                                    [e["df"] for e in eff])},
        "cases": {name: combine(y, v, df, a) for name, (y, v, df, a) in CASES.items()},
        "paired_power": [
            {"d": d, "k": k, "alpha": a,
             "power": float(TTestPower().power(effect_size=d, nobs=k, alpha=a,
                                               alternative="two-sided"))}
            for d, k, a in [(0.5, 10, 0.05), (1.0, 4, 0.05), (2.0, 3, 0.05), (0.3, 50, 0.01),
                            (1.5, 6, 0.01)]
        ],
    }
    with open(os.path.join(OUT, "meta_reference.json"), "w") as f:
        json.dump(doc, f, indent=1, sort_keys=True)
        f.write("\n")
    print(json.dumps(doc["csv"], indent=1))


if __name__ == "__main__":
    main()
