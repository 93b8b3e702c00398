//! Power of the two-sided two-sample t-test through the non-central t distribution, runs per
//! variant needed for a given effect, and the smallest effect detectable with a given n.
//!
//! The non-central t CDF is Lenth's algorithm AS 243 (Applied Statistics 38, 1989): a series in
//! regularized incomplete beta functions with Poisson weights. The series has absolute precision
//! only, so small values of the CDF (< 0.01) are computed instead by adaptive quadrature of
//! Phi(t s - delta) over the distribution of s = sqrt(chi2/df), which keeps relative precision.

use super::dist::{norm_cdf, norm_ppf, t_ppf};
use statrs::function::beta::beta_reg;
use statrs::function::gamma::ln_gamma;

const ERRMAX: f64 = 1e-15;
const ITRMAX: usize = 10_000;

/// CDF of the non-central t distribution with `df` degrees of freedom and non-centrality
/// `delta`: P(T <= t), to about 1e-9 relative.
pub fn nct_cdf(t: f64, df: f64, delta: f64) -> f64 {
    let cdf = nct_cdf_series(t, df, delta);
    // The series has absolute precision only (for t < 0 it is 1 minus a value near 1, and its
    // incomplete-beta recursions subtract): small values are integrated directly instead.
    if cdf < 1e-2 && df >= 1.0 && t.is_finite() {
        lower_tail_integral(t, df, delta)
    } else {
        cdf
    }
}

/// AS 243: absolute error about 1e-14, which is all a power calculation needs.
fn nct_cdf_series(t: f64, df: f64, delta: f64) -> f64 {
    if !(t.is_finite() && df > 0.0 && delta.is_finite()) {
        return if t == f64::INFINITY {
            1.0
        } else if t == f64::NEG_INFINITY {
            0.0
        } else {
            f64::NAN
        };
    }
    let (tt, del, negdel) = if t < 0.0 {
        (-t, -delta, true)
    } else {
        (t, delta, false)
    };
    let lambda = del * del;
    if 0.5 * lambda > 700.0 {
        // The Poisson weights underflow; use the normal approximation (Abramowitz and Stegun
        // 26.7.10), which is very accurate this far out.
        let z = (tt * (1.0 - 1.0 / (4.0 * df)) - del) / (1.0 + tt * tt / (2.0 * df)).sqrt();
        let c = norm_cdf(z);
        return if negdel { 1.0 - c } else { c };
    }
    let x = tt * tt / (tt * tt + df);
    let mut tnc = 0.0;
    if x > 0.0 {
        let mut p = 0.5 * (-0.5 * lambda).exp();
        let mut q = (2.0 / std::f64::consts::PI).sqrt() * p * del;
        let mut s = 0.5 - p;
        let mut a = 0.5;
        let b = 0.5 * df;
        let rxb = (1.0 - x).powf(b);
        let albeta = 0.5 * std::f64::consts::PI.ln() + ln_gamma(b) - ln_gamma(0.5 + b);
        let mut xodd = beta_reg(a, b, x);
        let mut godd = 2.0 * rxb * (a * x.ln() - albeta).exp();
        let mut xeven = 1.0 - rxb;
        let mut geven = b * x * rxb;
        tnc = p * xodd + q * xeven;
        let mut en = 1.0;
        for _ in 0..ITRMAX {
            a += 1.0;
            xodd -= godd;
            xeven -= geven;
            godd *= x * (a + b - 1.0) / a;
            geven *= x * (a + b - 0.5) / (a + 0.5);
            p *= lambda / (2.0 * en);
            q *= lambda / (2.0 * en + 1.0);
            s -= p;
            en += 1.0;
            tnc += p * xodd + q * xeven;
            let errbd = 2.0 * s * (xodd - godd);
            if errbd.abs() <= ERRMAX && en > lambda / 2.0 {
                break;
            }
        }
    }
    tnc += norm_cdf(-del);
    let tnc = tnc.clamp(0.0, 1.0);
    if negdel { 1.0 - tnc } else { tnc }
}

/// P(T <= t) as the integral over S = sqrt(chi2_df / df) of Phi(t s - delta) f_S(s),
/// by adaptive Simpson quadrature to a relative 1e-13. Every term is positive, so small values
/// keep their relative precision.
fn lower_tail_integral(t: f64, df: f64, delta: f64) -> f64 {
    let half = 0.5 * df;
    let ln_c = std::f64::consts::LN_2 + half * half.ln() - ln_gamma(half);
    let f = |s: f64| -> f64 {
        if s <= 0.0 {
            return if df == 1.0 {
                (ln_c).exp() * norm_cdf(-delta)
            } else {
                0.0
            };
        }
        let ln_density = ln_c + (df - 1.0) * s.ln() - df * s * s / 2.0;
        norm_cdf(t * s - delta) * ln_density.exp()
    };
    // The density of S is negligible (< e^-400) beyond this point.
    let hi = 1.0 + 30.0 / (2.0 * df).sqrt() + 30.0 / df;
    let panels = 64;
    let width = hi / panels as f64;
    let mut total = 0.0;
    let mut parts = Vec::with_capacity(panels);
    for k in 0..panels {
        let (a, b) = (k as f64 * width, (k + 1) as f64 * width);
        let (fa, fm, fb) = (f(a), f(0.5 * (a + b)), f(b));
        let whole = (b - a) / 6.0 * (fa + 4.0 * fm + fb);
        total += whole;
        parts.push((a, b, fa, fm, fb, whole));
    }
    let eps = 1e-13 * total.abs().max(f64::MIN_POSITIVE);
    parts
        .into_iter()
        .map(|(a, b, fa, fm, fb, whole)| {
            simpson(&f, a, b, fa, fm, fb, whole, eps / panels as f64, 40)
        })
        .sum()
}

#[allow(clippy::too_many_arguments)]
fn simpson(
    f: &dyn Fn(f64) -> f64,
    a: f64,
    b: f64,
    fa: f64,
    fm: f64,
    fb: f64,
    whole: f64,
    eps: f64,
    depth: u32,
) -> f64 {
    let m = 0.5 * (a + b);
    let (lm, rm) = (0.5 * (a + m), 0.5 * (m + b));
    let (flm, frm) = (f(lm), f(rm));
    let left = (m - a) / 6.0 * (fa + 4.0 * flm + fm);
    let right = (b - m) / 6.0 * (fm + 4.0 * frm + fb);
    let delta = left + right - whole;
    if depth == 0 || delta.abs() <= 15.0 * eps {
        return left + right + delta / 15.0;
    }
    simpson(f, a, m, fa, flm, fm, left, eps / 2.0, depth - 1)
        + simpson(f, m, b, fm, frm, fb, right, eps / 2.0, depth - 1)
}

/// Power of the two-sided two-sample t-test with `n` runs per variant for a standardized effect
/// `d` = difference / SD at level `alpha`.
pub fn power_two_sample(d: f64, n: usize, alpha: f64) -> f64 {
    if n < 2 {
        return 0.0;
    }
    let df = 2.0 * (n as f64 - 1.0);
    if df > LARGE_DF {
        // The t distributions are normal to O(1/df) here (power off by < 1e-5), and the exact
        // quantile and series cost seconds at millions of degrees of freedom.
        let z = norm_ppf(1.0 - alpha / 2.0);
        let ncp = d.abs() * (n as f64 / 2.0).sqrt();
        return (norm_cdf(ncp - z) + norm_cdf(-ncp - z)).clamp(0.0, 1.0);
    }
    power_at(d, n, t_ppf(1.0 - alpha / 2.0, df))
}

/// Degrees of freedom above which power uses the normal limit.
const LARGE_DF: f64 = 1e5;

/// Power with the critical value `tc` already known.
fn power_at(d: f64, n: usize, tc: f64) -> f64 {
    let df = 2.0 * (n as f64 - 1.0);
    let ncp = d.abs() * (n as f64 / 2.0).sqrt();
    // Power is a probability near 0.8: the series' absolute precision is enough.
    (1.0 - nct_cdf_series(tc, df, ncp) + nct_cdf_series(-tc, df, ncp)).clamp(0.0, 1.0)
}

/// Fewer runs per variant than this: `compare` gives a description only (no rank test can
/// reach p < 0.05).
pub const MIN_RUNS: usize = 4;

/// Largest n [`runs_needed`] will report.
pub const MAX_RUNS: usize = 10_000_000;

/// Smallest n per variant whose power reaches `power` for effect `d` (in SD units), and never
/// fewer than the [`MIN_RUNS`] below which `compare` makes no test; `None` when d is 0 or more
/// than [`MAX_RUNS`] would be needed.
pub fn runs_needed(d: f64, alpha: f64, power: f64) -> Option<usize> {
    runs_for_power(d, alpha, power).map(|n| n.max(MIN_RUNS))
}

fn runs_for_power(d: f64, alpha: f64, power: f64) -> Option<usize> {
    let d = d.abs();
    if !(d > 0.0 && d.is_finite()) {
        return None;
    }
    let z = norm_ppf(1.0 - alpha / 2.0) + norm_ppf(power);
    let guess = 2.0 * z * z / (d * d);
    if guess > MAX_RUNS as f64 {
        return None;
    }
    // Power grows with n: bracket the answer around the normal-approximation guess, then bisect
    // (a step-by-one search from a guess of millions would take millions of t quantiles).
    let enough = |n: usize| power_two_sample(d, n, alpha) >= power;
    let guess = (guess.floor() as usize).max(2);
    let (mut lo, mut hi) = if enough(guess) {
        let mut lo = guess;
        while lo > 2 && enough(lo) {
            lo = (lo / 2).max(2);
        }
        if enough(lo) {
            return Some(lo);
        }
        (lo, guess)
    } else {
        let mut hi = guess;
        while !enough(hi) {
            if hi >= MAX_RUNS {
                return None;
            }
            hi = (hi * 2).min(MAX_RUNS);
        }
        (guess, hi)
    };
    // Invariant: not enough(lo), enough(hi).
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if enough(mid) { hi = mid } else { lo = mid }
    }
    Some(hi)
}

/// Runs per variant for a relative effect (`effect` and `cv` in the same unit, e.g. percent).
pub fn runs_needed_cv(cv: f64, effect: f64, alpha: f64, power: f64) -> Option<usize> {
    if cv <= 0.0 {
        return Some(MIN_RUNS);
    }
    runs_needed(effect / cv, alpha, power)
}

/// Smallest standardized effect d detectable with `power` at n per variant (bisection to a
/// relative 1e-9).
pub fn detectable_effect(n: usize, alpha: f64, power: f64) -> Option<f64> {
    if n < 2 {
        return None;
    }
    let tc = t_ppf(1.0 - alpha / 2.0, 2.0 * (n as f64 - 1.0));
    let power_two_sample = |d: f64, n: usize, _alpha: f64| power_at(d, n, tc);
    let (mut lo, mut hi) = (0.0, 1.0);
    while power_two_sample(hi, n, alpha) < power {
        hi *= 2.0;
        if hi > 1e6 {
            return None;
        }
    }
    for _ in 0..100 {
        let mid = 0.5 * (lo + hi);
        if power_two_sample(mid, n, alpha) < power {
            lo = mid
        } else {
            hi = mid
        }
        if hi - lo < 1e-9 * hi {
            break;
        }
    }
    Some(hi)
}

/// Power of the two-sided one-sample (paired) t-test on `k` paired differences for a
/// standardized effect `d` = mean difference / SD of a difference: df = k - 1, non-centrality
/// d sqrt(k).
pub fn power_paired(d: f64, k: usize, alpha: f64) -> f64 {
    if k < 2 {
        return 0.0;
    }
    let df = k as f64 - 1.0;
    let ncp = d.abs() * (k as f64).sqrt();
    if df > LARGE_DF {
        let z = norm_ppf(1.0 - alpha / 2.0);
        return (norm_cdf(ncp - z) + norm_cdf(-ncp - z)).clamp(0.0, 1.0);
    }
    let tc = t_ppf(1.0 - alpha / 2.0, df);
    (1.0 - nct_cdf_series(tc, df, ncp) + nct_cdf_series(-tc, df, ncp)).clamp(0.0, 1.0)
}

/// Fewest pairs a plan over paired units (hosts running every variant) proposes.
pub const MIN_PAIRS: usize = 3;

/// Pairs (hosts that run both variants) for a relative effect at `sd`, the SD of one pair's
/// difference (both in the same unit, e.g. percent); never fewer than [`MIN_PAIRS`], None above
/// [`MAX_RUNS`] or for no effect.
pub fn pairs_needed(sd: f64, effect: f64, alpha: f64, power: f64) -> Option<usize> {
    if sd <= 0.0 {
        return Some(MIN_PAIRS);
    }
    let d = (effect / sd).abs();
    if !(d > 0.0 && d.is_finite()) {
        return None;
    }
    let enough = |k: usize| power_paired(d, k, alpha) >= power;
    if enough(MIN_PAIRS) {
        return Some(MIN_PAIRS);
    }
    let (mut lo, mut hi) = (MIN_PAIRS, 2 * MIN_PAIRS);
    while !enough(hi) {
        if hi >= MAX_RUNS {
            return None;
        }
        lo = hi;
        hi = (hi * 2).min(MAX_RUNS);
    }
    // Invariant: not enough(lo), enough(hi).
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if enough(mid) { hi = mid } else { lo = mid }
    }
    Some(hi)
}

/// Smallest standardized effect detectable with `power` by the paired test on `k` pairs.
pub fn detectable_paired(k: usize, alpha: f64, power: f64) -> Option<f64> {
    if k < 2 {
        return None;
    }
    let (mut lo, mut hi) = (0.0, 1.0);
    while power_paired(hi, k, alpha) < power {
        hi *= 2.0;
        if hi > 1e6 {
            return None;
        }
    }
    while hi - lo > 1e-9 * hi {
        let mid = 0.5 * (lo + hi);
        if power_paired(mid, k, alpha) < power {
            lo = mid
        } else {
            hi = mid
        }
    }
    Some(hi)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reference::{Reference, assert_rel};

    /// 1e-9 relative (1e-14 absolute for values near 0).
    #[test]
    fn huge_run_counts_are_found_by_bisection_not_by_stepping() {
        // cv 368% against a 0.5% effect: about 8.5 million runs per variant, near MAX_RUNS. A
        // search stepping one run at a time from the guess never finished.
        let d = 0.5 / 368.0;
        let n = runs_needed(d, 0.05, 0.8).expect("below MAX_RUNS");
        let z = norm_ppf(0.975) + norm_ppf(0.8);
        let approx = 2.0 * z * z / (d * d);
        assert!((n as f64 - approx).abs() / approx < 1e-3, "{n} vs {approx}");
        assert!(power_two_sample(d, n, 0.05) >= 0.8);
        assert!(power_two_sample(d, n - 1, 0.05) < 0.8);
        assert_eq!(runs_needed(0.5 / 400.0, 0.05, 0.8), None, "above MAX_RUNS");
    }

    #[test]
    fn nct_matches_scipy() {
        let r = Reference::load();
        for c in r.cases("nct") {
            let got = nct_cdf(c.num("t"), c.num("df"), c.num("nc"));
            let want = c.num("cdf");
            let err = (got - want).abs();
            assert!(
                err <= 1e-9 * want.abs() || err <= 1e-14,
                "nct_cdf({}, {}, {}) = {got:e}, scipy {want:e}",
                c.num("t"),
                c.num("df"),
                c.num("nc")
            );
        }
    }

    #[test]
    fn power_and_runs_match_scipy() {
        let r = Reference::load();
        for c in r.cases("power") {
            let n = c.num("n") as usize;
            assert_rel(
                power_two_sample(c.num("d"), n, c.num("alpha")),
                c.num("power"),
                1e-9,
                "power",
            );
        }
        for c in r.cases("runs_needed") {
            let got = runs_needed(c.num("d"), c.num("alpha"), c.num("power")).unwrap();
            assert_eq!(got as f64, c.num("n"), "runs for d={}", c.num("d"));
        }
    }

    /// statsmodels' TTestPower (tools/hosts_reference.py).
    #[test]
    fn paired_power_matches_statsmodels() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/data/hosts/meta_reference.json"
        );
        let doc: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        for c in doc["paired_power"].as_array().unwrap() {
            let n = |k: &str| c[k].as_f64().unwrap();
            let got = power_paired(n("d"), n("k") as usize, n("alpha"));
            assert_rel(got, n("power"), 1e-9, "paired power");
        }
        // The smallest k reaching 80%: power at k and not at k - 1.
        let k = pairs_needed(1.0, 0.8, 0.05, 0.8).unwrap();
        assert!(power_paired(0.8, k, 0.05) >= 0.8 && power_paired(0.8, k - 1, 0.05) < 0.8);
        assert_eq!(pairs_needed(1.0, 10.0, 0.05, 0.8), Some(MIN_PAIRS));
        let d = detectable_paired(k, 0.05, 0.8).unwrap();
        assert!(d <= 0.8 && (power_paired(d, k, 0.05) - 0.8).abs() < 1e-6);
    }

    #[test]
    fn rule_of_thumb_from_statistics_md() {
        // CV 0.3% and effect 0.3% -> 17 runs; CV 0.5% -> 45 (n ~ 15.7 (CV/effect)^2).
        assert_eq!(runs_needed_cv(0.3, 0.3, 0.05, 0.8), Some(17));
        // A 2% effect at a CV of 0.3% needs 2 runs by power alone; compare tests from 4.
        assert_eq!(runs_needed_cv(0.3, 2.0, 0.05, 0.8), Some(MIN_RUNS));
        assert_eq!(runs_for_power(2.0 / 0.3, 0.05, 0.8), Some(2));
        assert_eq!(runs_needed_cv(0.5, 0.3, 0.05, 0.8), Some(45));
        assert_eq!(runs_needed(0.0, 0.05, 0.8), None);
        let d = detectable_effect(17, 0.05, 0.8).unwrap();
        assert!(d <= 1.0 && d > 0.9, "d = {d}");
    }
}
