//! Power of the two-sided two-sample t-test through the non-central t distribution, runs per
//! variant needed for a given effect, and the smallest effect detectable with a given n.
//!
//! The non-central t CDF is Lenth's algorithm AS 243 (Applied Statistics 38, 1989): a series in
//! regularized incomplete beta functions with Poisson weights (absolute error about 1e-12; for
//! t < 0 it is 1 minus the upper series, so tiny lower tails carry only absolute accuracy).

use super::dist::{norm_cdf, norm_ppf, t_ppf};
use statrs::function::beta::beta_reg;
use statrs::function::gamma::ln_gamma;

const ERRMAX: f64 = 1e-15;
const ITRMAX: usize = 10_000;

/// CDF of the non-central t distribution with `df` degrees of freedom and non-centrality
/// `delta`: P(T <= t).
pub fn nct_cdf(t: f64, df: f64, delta: f64) -> f64 {
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

/// Power of the two-sided two-sample t-test with `n` runs per variant for a standardized effect
/// `d` = difference / SD at level `alpha`.
pub fn power_two_sample(d: f64, n: usize, alpha: f64) -> f64 {
    if n < 2 {
        return 0.0;
    }
    let df = 2.0 * (n as f64 - 1.0);
    power_at(d, n, t_ppf(1.0 - alpha / 2.0, df))
}

/// Power with the critical value `tc` already known.
fn power_at(d: f64, n: usize, tc: f64) -> f64 {
    let df = 2.0 * (n as f64 - 1.0);
    let ncp = d.abs() * (n as f64 / 2.0).sqrt();
    (1.0 - nct_cdf(tc, df, ncp) + nct_cdf(-tc, df, ncp)).clamp(0.0, 1.0)
}

/// Largest n [`runs_needed`] will report.
pub const MAX_RUNS: usize = 10_000_000;

/// Smallest n per variant whose power reaches `power` for effect `d` (in SD units); `None` when
/// d is 0 or more than [`MAX_RUNS`] would be needed.
pub fn runs_needed(d: f64, alpha: f64, power: f64) -> Option<usize> {
    let d = d.abs();
    if !(d > 0.0 && d.is_finite()) {
        return None;
    }
    let z = norm_ppf(1.0 - alpha / 2.0) + norm_ppf(power);
    let guess = 2.0 * z * z / (d * d);
    if guess > MAX_RUNS as f64 {
        return None;
    }
    let mut n = (guess.floor() as usize).max(2);
    if power_two_sample(d, n, alpha) >= power {
        while n > 2 && power_two_sample(d, n - 1, alpha) >= power {
            n -= 1;
        }
    } else {
        while power_two_sample(d, n, alpha) < power {
            n += 1;
            if n > MAX_RUNS {
                return None;
            }
        }
    }
    Some(n)
}

/// Runs per variant for a relative effect (`effect` and `cv` in the same unit, e.g. percent).
pub fn runs_needed_cv(cv: f64, effect: f64, alpha: f64, power: f64) -> Option<usize> {
    if cv <= 0.0 {
        return Some(2);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::reference::{Reference, assert_rel};

    /// 1e-9 relative, or 1e-11 absolute: like R's pnt (also AS 243), the series for t < 0 is
    /// 1 - (a value near 1) and loses relative precision in the far lower tail; power needs only
    /// absolute accuracy.
    #[test]
    fn nct_matches_scipy() {
        let r = Reference::load();
        for c in r.cases("nct") {
            let got = nct_cdf(c.num("t"), c.num("df"), c.num("nc"));
            let want = c.num("cdf");
            let err = (got - want).abs();
            assert!(
                err <= 1e-9 * want.abs() || err <= 1e-11,
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

    #[test]
    fn rule_of_thumb_from_statistics_md() {
        // CV 0.3% and effect 0.3% -> 17 runs; CV 0.5% -> 45 (n ~ 15.7 (CV/effect)^2).
        assert_eq!(runs_needed_cv(0.3, 0.3, 0.05, 0.8), Some(17));
        assert_eq!(runs_needed_cv(0.5, 0.3, 0.05, 0.8), Some(45));
        assert_eq!(runs_needed(0.0, 0.05, 0.8), None);
        let d = detectable_effect(17, 0.05, 0.8).unwrap();
        assert!(d <= 1.0 && d > 0.9, "d = {d}");
    }
}
