//! Random-effects meta-analysis of k estimates of one effect (docs/statistics.md#hosts-as-blocks):
//! y_i = mu + u_i + e_i, with u_i ~ N(0, tau^2) the effect's spread between the units that gave
//! the estimates (hosts) and e_i ~ N(0, v_i) each estimate's own sampling error, v_i taken as
//! given.
//!
//! - tau^2 by **Paule-Mandel**: the tau^2 at which the generalised Q statistic
//!   sum w_i (y_i - mu_w)^2, w_i = 1 / (v_i + tau^2), equals its expectation k - 1 (0 when Q at
//!   tau^2 = 0 is already below it). Newton steps from 0 (DerSimonian and Kacker 2007, as
//!   statsmodels' `combine_effects(method_re="iterated")`), kept inside a bracket.
//! - The mean mu_w and its standard error by **Hartung-Knapp-Sidik-Jonkman** with the scale
//!   truncated at 1 (Knapp and Hartung 2003's ad hoc variant, Roever, Knapp and Friede 2015):
//!   SE^2 = max(1, q) / sum w_i with q = sum w_i (y_i - mu_w)^2 / (k - 1), and Student t with
//!   k - 1 degrees of freedom. The plain HKSJ SE (statsmodels' "random effect wls") and the
//!   fixed-scale one (its "random effect") are kept beside it.
//! - Heterogeneity: Cochran's Q = sum (y_i - mu_FE)^2 / v_i with its chi-squared p (k - 1 df),
//!   I^2 = max(0, (Q - (k - 1)) / Q), and, when each v_i comes with its degrees of freedom,
//!   Welch's (1951) test of equal effects, which allows for the v_i being estimates themselves.
//! - The prediction interval for the effect at a new unit (k >= 3): mu_w +- t_{k-2}
//!   sqrt(tau^2 + SE^2) (Higgins, Thompson and Spiegelhalter 2009).
//!
//! Pure computation: no I/O.

use super::StatsError;
use super::dist::{chi2_sf, f_sf, t_ppf, t_two_sided_p};
use abperf_model::describe::variance;
use serde::Serialize;

/// The combined estimate and its heterogeneity.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RandomEffects {
    /// Estimates combined.
    pub k: usize,
    /// Between-unit variance of the effect (Paule-Mandel) and its square root.
    pub tau2: f64,
    pub tau: f64,
    /// The random-effects mean and the standard error the interval and p use (HKSJ, scale
    /// truncated at 1).
    pub mean: f64,
    pub se: f64,
    /// The HKSJ scale q and the SEs without the truncation (plain HKSJ) and with the scale 1.
    pub hksj_scale: f64,
    pub se_hksj: f64,
    pub se_fixed_scale: f64,
    /// t = mean / se with k - 1 degrees of freedom, and its two-sided p.
    pub t: f64,
    pub df: usize,
    pub p: f64,
    /// Level of `ci` (1 - alpha); `ci_equivalence` is at 1 - 2 alpha (the TOST interval).
    pub level: f64,
    pub ci: [f64; 2],
    pub ci_equivalence: [f64; 2],
    /// Where the effect at a new unit lies, at `level` (k >= 3).
    pub prediction: Option<[f64; 2]>,
    /// Each estimate's share of the random-effects weight.
    pub weights: Vec<f64>,
    /// The fixed-effect (inverse-variance) mean, Cochran's Q, its p and I^2.
    pub fixed_mean: f64,
    pub q: f64,
    pub q_p: f64,
    pub i2: f64,
    /// Welch's test of equal effects (when the variances' degrees of freedom are known): F, its
    /// degrees of freedom and p.
    pub welch: Option<WelchHeterogeneity>,
}

/// Welch's (1951) heterogeneous-variance test that k effects are equal.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct WelchHeterogeneity {
    pub f: f64,
    pub df1: f64,
    pub df2: f64,
    pub p: f64,
}

fn check(y: &[f64], v: &[f64]) -> Result<(), StatsError> {
    if y.len() != v.len() {
        return Err(StatsError::Invalid(format!(
            "{} effects but {} variances",
            y.len(),
            v.len()
        )));
    }
    if y.len() < 2 {
        return Err(StatsError::TooFew {
            what: "a random-effects combination",
            need: 2,
            got: y.len(),
        });
    }
    super::check_finite(y)?;
    match v.iter().position(|x| !(x.is_finite() && *x > 0.0)) {
        Some(i) => Err(StatsError::Invalid(format!(
            "estimate {i} has variance {}: every estimate needs a positive, finite variance",
            v[i]
        ))),
        None => Ok(()),
    }
}

/// The mean weighted by `w`.
fn weighted_mean(y: &[f64], w: &[f64]) -> f64 {
    let total: f64 = w.iter().sum();
    y.iter().zip(w).map(|(y, w)| y * w).sum::<f64>() / total
}

/// Weights 1 / (v_i + tau^2), their mean of y, and sum w_i (y_i - mean)^2.
fn generalised_q(y: &[f64], v: &[f64], tau2: f64) -> (Vec<f64>, f64, f64) {
    let w: Vec<f64> = v.iter().map(|v| 1.0 / (v + tau2)).collect();
    let m = weighted_mean(y, &w);
    let q = y.iter().zip(&w).map(|(y, w)| w * (y - m).powi(2)).sum();
    (w, m, q)
}

/// Paule-Mandel tau^2: the root of Q(tau^2) = k - 1, or 0 when Q(0) <= k - 1. Q decreases in
/// tau^2 and is at most k - 1 at sum (y_i - ybar)^2 / (k - 1), which brackets the root.
pub fn paule_mandel(y: &[f64], v: &[f64]) -> f64 {
    let df = y.len() as f64 - 1.0;
    if generalised_q(y, v, 0.0).2 <= df {
        return 0.0;
    }
    let (mut lo, mut hi) = (0.0, variance(y));
    let mut t = 0.0;
    for _ in 0..200 {
        let (w, m, q) = generalised_q(y, v, t);
        let excess = q - df;
        if excess > 0.0 {
            lo = t
        } else {
            hi = t
        }
        // dQ / dtau^2 = -sum w_i^2 (y_i - m)^2 (m minimises Q, so its own change drops out).
        let slope: f64 = y.iter().zip(&w).map(|(y, w)| (w * (y - m)).powi(2)).sum();
        let next = t + excess / slope;
        let next = if next.is_finite() && next > lo && next < hi {
            next
        } else {
            0.5 * (lo + hi)
        };
        if (next - t).abs() <= 1e-15 * next.abs() || hi - lo <= 1e-15 * hi {
            return next;
        }
        t = next;
    }
    t
}

/// Welch's test that the effects are equal, each variance v_i with `df[i]` degrees of freedom.
fn welch_heterogeneity(y: &[f64], v: &[f64], df: &[f64]) -> Option<WelchHeterogeneity> {
    let k = y.len() as f64;
    let w: Vec<f64> = v.iter().map(|v| 1.0 / v).collect();
    let total: f64 = w.iter().sum();
    let m = weighted_mean(y, &w);
    let a: f64 = w
        .iter()
        .zip(df)
        .map(|(w, f)| (1.0 - w / total).powi(2) / f)
        .sum();
    let between = y
        .iter()
        .zip(&w)
        .map(|(y, w)| w * (y - m).powi(2))
        .sum::<f64>()
        / (k - 1.0);
    let f = between / (1.0 + 2.0 * (k - 2.0) / (k * k - 1.0) * a);
    let df2 = (k * k - 1.0) / (3.0 * a);
    let p = f_sf(f, k - 1.0, df2);
    (p.is_finite() && df.iter().all(|f| *f > 0.0)).then_some(WelchHeterogeneity {
        f,
        df1: k - 1.0,
        df2,
        p,
    })
}

/// Cochran's Q about the fixed-effect mean, its chi-squared p and I^2.
fn cochran(y: &[f64], v: &[f64]) -> (f64, f64, f64, f64) {
    let (_, fixed, q) = generalised_q(y, v, 0.0);
    let df = y.len() as f64 - 1.0;
    let i2 = if q > 0.0 {
        ((q - df) / q).max(0.0)
    } else {
        0.0
    };
    (fixed, q, chi2_sf(q, df), i2)
}

/// `m` +- the t quantile at `level` with `df` degrees of freedom times `se`.
fn interval(m: f64, se: f64, df: f64, level: f64) -> [f64; 2] {
    let h = t_ppf(0.5 + level / 2.0, df) * se;
    [m - h, m + h]
}

/// Combine the estimates `y` with variances `v` (and, when known, the degrees of freedom of each
/// variance, for Welch's heterogeneity test), with intervals at 1 - `alpha`.
pub fn random_effects(
    y: &[f64],
    v: &[f64],
    df: Option<&[f64]>,
    alpha: f64,
) -> Result<RandomEffects, StatsError> {
    check(y, v)?;
    let k = y.len();
    let tau2 = paule_mandel(y, v);
    let (w, mean, wss) = generalised_q(y, v, tau2);
    let total: f64 = w.iter().sum();
    let scale = wss / (k - 1) as f64;
    let se = (scale.max(1.0) / total).sqrt();
    let t = mean / se;
    let (fixed_mean, q, q_p, i2) = cochran(y, v);
    let dfk = (k - 1) as f64;
    Ok(RandomEffects {
        k,
        tau2,
        tau: tau2.sqrt(),
        mean,
        se,
        hksj_scale: scale,
        se_hksj: (scale / total).sqrt(),
        se_fixed_scale: (1.0 / total).sqrt(),
        t,
        df: k - 1,
        p: if se > 0.0 { t_two_sided_p(t, dfk) } else { 1.0 },
        level: 1.0 - alpha,
        ci: interval(mean, se, dfk, 1.0 - alpha),
        ci_equivalence: interval(mean, se, dfk, 1.0 - 2.0 * alpha),
        prediction: (k >= 3)
            .then(|| interval(mean, (tau2 + se * se).sqrt(), (k - 2) as f64, 1.0 - alpha)),
        weights: w.iter().map(|w| w / total).collect(),
        fixed_mean,
        q,
        q_p,
        i2,
        welch: df
            .filter(|d| d.len() == k)
            .and_then(|d| welch_heterogeneity(y, v, d)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_effects_have_no_between_variance() {
        let r = random_effects(&[0.01, 0.01, 0.01], &[1e-4, 2e-4, 1e-4], None, 0.05).unwrap();
        assert_eq!(r.tau2, 0.0);
        assert!((r.mean - 0.01).abs() < 1e-15);
        assert_eq!(r.q, 0.0);
        assert_eq!(r.i2, 0.0);
        // q = 0: the truncated scale keeps the fixed-scale SE.
        assert_eq!(r.se, r.se_fixed_scale);
        assert!(r.prediction.is_some());
    }

    #[test]
    fn paule_mandel_solves_its_equation() {
        let (y, v) = ([0.03, -0.002, 0.011, 0.025], [1e-5, 4e-6, 2e-5, 8e-6]);
        let t = paule_mandel(&y, &v);
        assert!(t > 0.0);
        let (_, _, q) = generalised_q(&y, &v, t);
        assert!((q - 3.0).abs() < 1e-10, "Q({t}) = {q}");
        let r = random_effects(&y, &v, Some(&[4.0, 4.0, 6.0, 3.5]), 0.05).unwrap();
        // At the Paule-Mandel root the HKSJ scale is 1.
        assert!((r.hksj_scale - 1.0).abs() < 1e-10);
        assert!(r.ci[0] < r.mean && r.mean < r.ci[1]);
        let w = r.welch.unwrap();
        assert!(w.p < 0.05 && w.df1 == 3.0, "{w:?}");
        assert!((r.weights.iter().sum::<f64>() - 1.0).abs() < 1e-12);
    }

    /// tools/hosts_reference.py: statsmodels' combine_effects (Paule-Mandel), anova_generic
    /// (Welch) and scipy's t for the truncated HKSJ interval.
    #[test]
    fn matches_statsmodels() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/data/hosts/meta_reference.json"
        );
        let doc: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let mut cases: Vec<(String, &serde_json::Value)> = doc["cases"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), v))
            .collect();
        cases.push(("csv".into(), &doc["csv"]["combined"]));
        for (name, c) in cases {
            check_case(&name, c);
        }
    }

    fn check_case(name: &str, c: &serde_json::Value) {
        use crate::reference::assert_rel;
        let nums = |k: &str| -> Vec<f64> {
            c[k].as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_f64().unwrap())
                .collect()
        };
        let num = |k: &str| c[k].as_f64().unwrap();
        let df = nums("df");
        let r = random_effects(&nums("y"), &nums("v"), Some(&df), num("alpha")).unwrap();
        let tol = 1e-8;
        let at = |what: &str| format!("{name} {what}");
        for (got, key) in [
            (r.tau2, "tau2"),
            (r.mean, "mean"),
            (r.fixed_mean, "fixed_mean"),
            (r.se, "se"),
            (r.se_hksj, "se_hksj"),
            (r.se_fixed_scale, "se_fixed_scale"),
            (r.p, "p"),
            (r.q, "q"),
            (r.q_p, "q_p"),
            (r.i2, "i2"),
        ] {
            assert_rel(got, num(key), tol, &at(key));
        }
        for (got, key) in [(r.ci, "ci"), (r.ci_equivalence, "ci_equivalence")] {
            let want = nums(key);
            assert_rel(got[0], want[0], tol, &at(key));
            assert_rel(got[1], want[1], tol, &at(key));
        }
        // statsmodels' plain HKSJ interval (the scale not truncated).
        let h = t_ppf(1.0 - num("alpha") / 2.0, (r.k - 1) as f64) * r.se_hksj;
        assert_rel(r.mean - h, nums("ci_hksj")[0], tol, &at("ci_hksj"));
        for (w, want) in r.weights.iter().zip(nums("weights")) {
            assert_rel(*w, want, tol, &at("weights"));
        }
        match (r.prediction, c.get("prediction")) {
            (Some(p), Some(_)) => {
                let want = nums("prediction");
                assert_rel(p[0], want[0], tol, &at("prediction"));
                assert_rel(p[1], want[1], tol, &at("prediction"));
            }
            (None, None) => {}
            (got, _) => panic!("{name}: prediction {got:?}"),
        }
        let w = r.welch.unwrap();
        assert_rel(w.f, num("welch_f"), tol, &at("welch_f"));
        assert_rel(w.df2, num("welch_df2"), tol, &at("welch_df2"));
        assert_rel(w.p, num("welch_p"), tol, &at("welch_p"));
    }

    #[test]
    fn bad_input_is_an_error() {
        assert!(random_effects(&[0.1], &[1.0], None, 0.05).is_err());
        assert!(random_effects(&[0.1, 0.2], &[1.0, 0.0], None, 0.05).is_err());
        assert!(random_effects(&[0.1, f64::NAN], &[1.0, 1.0], None, 0.05).is_err());
        assert!(random_effects(&[0.1, 0.2], &[1.0], None, 0.05).is_err());
    }
}
