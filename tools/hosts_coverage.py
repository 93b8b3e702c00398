#!/usr/bin/env python3
"""The simulations behind the choices of docs/statistics.md#hosts-as-blocks, run by hand (numpy,
scipy; about 10 s): seeded A/A data over hosts (hosts 5% apart in speed, boot SD 1%, run SD 1%,
4 runs per boot), each host's effect the log ratio of its boot means with its delta-method
variance, combined with Paule-Mandel tau^2. Prints the coverage of the 95% interval of the mean
effect (plain HKSJ, HKSJ with the scale truncated at 1, Wald) and how often Cochran's Q and
Welch's test of equal effects call A/A hosts different at 0.05, and the power of Welch's test
for -3% on two of four hosts. The product never calls Python.
"""

import numpy as np
from scipy import stats

REPS = 1500


def paule_mandel(y, v):
    k, t = len(y), 0.0
    for _ in range(200):
        w = 1 / (v + t)
        m = (w * y).sum() / w.sum()
        r2 = (y - m) ** 2
        ee = (w * r2).sum() - (k - 1)
        if ee < 0 and t == 0:
            return 0.0
        if abs(ee) < 1e-12:
            break
        t = max(0.0, t + ee / (w * w * r2).sum())
    return t


def host_effects(rng, effects, boots, runs=4, sd_boot=0.01, sd_run=0.01):
    y, v, f = [], [], []
    for eff in effects:
        speed = 1 + 0.05 * rng.standard_normal()
        means, terms = [], []
        for variant in range(2):
            mu = speed * (np.exp(eff) if variant else 1.0)
            bm = np.array([(mu * (1 + sd_boot * rng.standard_normal()
                                  + sd_run * rng.standard_normal(runs))).mean()
                           for _ in range(boots)])
            means.append(bm.mean())
            terms.append(bm.var(ddof=1) / boots / bm.mean() ** 2)
        y.append(np.log(means[1] / means[0]))
        v.append(terms[0] + terms[1])
        f.append(v[-1] ** 2 / (terms[0] ** 2 / (boots - 1) + terms[1] ** 2 / (boots - 1)))
    return np.array(y), np.array(v), np.array(f)


def coverage(y, v):
    k = len(y)
    w = 1 / (v + paule_mandel(y, v))
    m = (w * y).sum() / w.sum()
    q = (w * (y - m) ** 2).sum() / (k - 1)
    tc = stats.t.ppf(0.975, k - 1)
    return [abs(m) < tc * np.sqrt(q / w.sum()), abs(m) < tc * np.sqrt(max(q, 1) / w.sum()),
            abs(m) < 1.96 * np.sqrt(1 / w.sum())]


def heterogeneity(y, v, f):
    k = len(y)
    w = 1 / v
    big_w = w.sum()
    m = (w * y).sum() / big_w
    q = (w * (y - m) ** 2).sum()
    a = ((1 - w / big_w) ** 2 / f).sum()
    welch = (q / (k - 1)) / (1 + 2 * (k - 2) / (k * k - 1) * a)
    return stats.chi2.sf(q, k - 1), stats.f.sf(welch, k - 1, (k * k - 1) / (3 * a))


def main():
    rng = np.random.default_rng(1)
    for k, boots in [(3, 3), (4, 3), (6, 3), (3, 8), (4, 8), (6, 8)]:
        cov, q_calls, w_calls = [], 0, 0
        for _ in range(REPS):
            y, v, f = host_effects(rng, [0.0] * k, boots)
            cov.append(coverage(y, v))
            pq, pw = heterogeneity(y, v, f)
            q_calls += pq < 0.05
            w_calls += pw < 0.05
        c = np.mean(cov, axis=0)
        print(f"{k} hosts x {boots} boots: coverage plain HKSJ {c[0]:.3f}, truncated {c[1]:.3f}, "
              f"Wald {c[2]:.3f}; A/A heterogeneity Q {q_calls / REPS:.3f}, "
              f"Welch {w_calls / REPS:.3f}")
    found = sum(heterogeneity(*host_effects(rng, [-0.03, -0.03, 0.0, 0.0], 3, runs=5,
                                            sd_boot=0.004))[1] < 0.05 for _ in range(300))
    print(f"-3% on 2 of 4 hosts, 3 boots x 5 runs: Welch finds it in {found / 300:.3f}")


if __name__ == "__main__":
    main()
