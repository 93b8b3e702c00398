//! Drift over the run order: Mann-Kendall trend test (with tie correction, no continuity
//! correction, identical to scipy's asymptotic `kendalltau(order, x)`), stratified by variant
//! (seasonal Kendall) so that it also sees drift under sequential order; Sen's slope (median of
//! pairwise slopes, scipy `theilslopes`), lag-1 autocorrelation, and the ANCOVA estimate of a
//! variant effect adjusted for a linear trend in the run index.

use super::StatsError;
use super::dist::{norm_sf, t_ppf, t_two_sided_p};
use super::inversions::{Fenwick, dense_ranks};
use super::sen::sen_slope_of;
use abperf_model::describe::{mean, sorted};
use serde::Serialize;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MannKendall {
    /// Concordant minus discordant pairs.
    pub s: f64,
    pub var_s: f64,
    pub z: f64,
    /// Two-sided p-value (normal approximation).
    pub p: f64,
    /// Kendall's tau-b between order and value.
    pub tau: f64,
}

/// S, Var(S) (tie-corrected), number of pairs and of tied pairs of one series.
fn mk_parts(x: &[f64]) -> (f64, f64, f64, f64) {
    let n = x.len();
    let s = kendall_s(x);
    let xs = sorted(x);
    let (mut tie_var, mut tie_pairs) = (0.0, 0.0);
    let mut i = 0;
    while i < n {
        let mut j = i;
        while j + 1 < n && xs[j + 1] == xs[i] {
            j += 1;
        }
        let t = (j - i + 1) as f64;
        tie_var += t * (t - 1.0) * (2.0 * t + 5.0);
        tie_pairs += t * (t - 1.0) / 2.0;
        i = j + 1;
    }
    let nf = n as f64;
    let var_s = ((nf * (nf - 1.0) * (2.0 * nf + 5.0) - tie_var) / 18.0).max(0.0);
    (s, var_s, nf * (nf - 1.0) / 2.0, tie_pairs)
}

/// Mann-Kendall test of a monotonic trend in `x` (values in run order).
pub fn mann_kendall(x: &[f64]) -> Result<MannKendall, StatsError> {
    mann_kendall_stratified(&[x])
}

/// Stratified (seasonal) Mann-Kendall test (Hirsch, Slack and Smith 1982): S and Var(S) summed
/// over groups, each group in its own run order; only pairs within a group are compared, so
/// differences between the groups' levels (the variant effect) do not mask or fake a trend.
pub fn mann_kendall_stratified(groups: &[&[f64]]) -> Result<MannKendall, StatsError> {
    let n: usize = groups.iter().map(|g| g.len()).sum();
    if groups.iter().all(|g| g.len() < 3) {
        return Err(StatsError::TooFew {
            what: "Mann-Kendall trend test",
            need: 3,
            got: n,
        });
    }
    let (mut s, mut var_s, mut pairs, mut untied) = (0.0, 0.0, 0.0, 0.0);
    for g in groups {
        let (gs, gv, gp, gt) = mk_parts(g);
        s += gs;
        var_s += gv;
        pairs += gp;
        untied += gp - gt;
    }
    if var_s <= 0.0 || untied <= 0.0 {
        return Ok(MannKendall {
            s,
            var_s: 0.0,
            z: 0.0,
            p: 1.0,
            tau: 0.0,
        });
    }
    let z = s / var_s.sqrt();
    let tau = s / (pairs * untied).sqrt();
    Ok(MannKendall {
        s,
        var_s,
        z,
        p: (2.0 * norm_sf(z.abs())).min(1.0),
        tau,
    })
}

/// Sen's slope: median of (x_j - x_i) / (t_j - t_i) over pairs with t_j != t_i, exactly as
/// sorting every slope gives it, in O(n) memory ([`super::sen`]).
pub fn sen_slope(t: &[f64], x: &[f64]) -> Option<f64> {
    sen_slope_of(&[(t, x)])
}

/// Concordant minus discordant pairs of a series against its order: pairs i < j with x_j > x_i
/// less those with x_j < x_i (equal values, -0.0 and 0.0 too, and NaN count neither), counted
/// with a Fenwick tree over the values' ranks in O(n log n).
fn kendall_s(x: &[f64]) -> f64 {
    let (ranks, distinct) = dense_ranks(x);
    let mut tree = Fenwick::new(distinct);
    let (mut inserted, mut s) = (0u64, 0i64);
    for r in ranks.into_iter().flatten() {
        let less = tree.below(r);
        let greater = inserted - tree.below(r + 1);
        s += less as i64 - greater as i64;
        tree.add(r);
        inserted += 1;
    }
    s as f64
}

/// Lag-1 autocorrelation of a series; `None` for fewer than 3 values or zero variance.
pub fn lag1_autocorrelation(x: &[f64]) -> Option<f64> {
    if x.len() < 3 {
        return None;
    }
    let m = mean(x);
    let den: f64 = x.iter().map(|v| (v - m).powi(2)).sum();
    if den == 0.0 {
        return None;
    }
    let num: f64 = x.windows(2).map(|w| (w[0] - m) * (w[1] - m)).sum();
    Some(num / den)
}

/// Drift analysis of two variants measured in one schedule.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Drift {
    pub mann_kendall: MannKendall,
    /// Sen's slope of the residuals per run-index step, in the metric's unit.
    pub sen_slope: Option<f64>,
    pub lag1: Option<f64>,
}

/// Residuals (value minus its variant's mean) of both samples, sorted by run index.
fn residual_series(a: &[f64], ia: &[f64], b: &[f64], ib: &[f64]) -> (Vec<f64>, Vec<f64>) {
    let (ma, mb) = (mean(a), mean(b));
    let mut v: Vec<(f64, f64)> = ia.iter().zip(a).map(|(&i, &x)| (i, x - ma)).collect();
    v.extend(ib.iter().zip(b).map(|(&i, &x)| (i, x - mb)));
    v.sort_by(|p, q| p.0.total_cmp(&q.0));
    v.into_iter().unzip()
}

/// One variant's (run index, value) pairs in run order.
fn in_order(x: &[f64], ix: &[f64]) -> (Vec<f64>, Vec<f64>) {
    let mut v: Vec<(f64, f64)> = ix.iter().copied().zip(x.iter().copied()).collect();
    v.sort_by(|p, q| p.0.total_cmp(&q.0));
    v.into_iter().unzip()
}

/// Drift of two variants measured in one schedule: stratified Mann-Kendall over each variant's
/// run order, the within-variant Sen's slope, and the lag-1 autocorrelation of the residuals in
/// run order.
pub fn drift(a: &[f64], ia: &[f64], b: &[f64], ib: &[f64]) -> Result<Drift, StatsError> {
    if ia.len() != a.len() || ib.len() != b.len() {
        return Err(StatsError::Invalid(
            "run-order indices and values differ in length".into(),
        ));
    }
    let (ta, xa) = in_order(a, ia);
    let (tb, xb) = in_order(b, ib);
    let mk = mann_kendall_stratified(&[&xa, &xb])?;
    let sen = sen_slope_of(&[(&ta, &xa), (&tb, &xb)]);
    let (_, r) = residual_series(a, ia, b, ib);
    Ok(Drift {
        mann_kendall: mk,
        sen_slope: sen,
        lag1: lag1_autocorrelation(&r),
    })
}

/// ANCOVA: value = c + effect * [variant] + slope * run_index + error.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Ancova {
    /// Adjusted difference B - A.
    pub effect: f64,
    pub se: f64,
    pub t: f64,
    pub df: f64,
    pub p: f64,
    /// Drift per run-index step.
    pub slope: f64,
    /// Baseline mean adjusted to the mean run index.
    pub baseline_adjusted: f64,
    /// effect / baseline_adjusted + 1.
    pub ratio: f64,
    /// The `level` interval of the ratio (the adjusted baseline mean treated as known).
    pub ratio_ci: (f64, f64),
    /// The confidence level of `ratio_ci` (1 - alpha when it is the verdict's).
    pub level: f64,
}

/// Least-squares ANCOVA of B against A with a linear run-index term.
pub fn ancova(
    a: &[f64],
    ia: &[f64],
    b: &[f64],
    ib: &[f64],
    level: f64,
) -> Result<Ancova, StatsError> {
    let n = a.len() + b.len();
    if n < 4 || a.len() < 2 || b.len() < 2 {
        return Err(StatsError::TooFew {
            what: "ANCOVA",
            need: 4,
            got: n,
        });
    }
    let y: Vec<f64> = a.iter().chain(b).copied().collect();
    let g: Vec<f64> = a.iter().map(|_| 0.0).chain(b.iter().map(|_| 1.0)).collect();
    let t: Vec<f64> = ia.iter().chain(ib).copied().collect();
    let (my, mg, mt) = (mean(&y), mean(&g), mean(&t));
    let (mut sgg, mut stt, mut sgt, mut sgy, mut sty, mut syy) = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
    for k in 0..n {
        let (dy, dg, dt) = (y[k] - my, g[k] - mg, t[k] - mt);
        sgg += dg * dg;
        stt += dt * dt;
        sgt += dg * dt;
        sgy += dg * dy;
        sty += dt * dy;
        syy += dy * dy;
    }
    let det = sgg * stt - sgt * sgt;
    if det <= 1e-12 * sgg * stt {
        return Err(StatsError::Invalid(
            "variant and run index are collinear: ANCOVA cannot separate them".into(),
        ));
    }
    let effect = (sgy * stt - sty * sgt) / det;
    let slope = (sty * sgg - sgy * sgt) / det;
    let rss = (syy - effect * sgy - slope * sty).max(0.0);
    let df = (n - 3) as f64;
    let sigma2 = rss / df;
    let se = (sigma2 * stt / det).sqrt();
    if se == 0.0 {
        return Err(StatsError::ZeroVariance("ANCOVA residuals"));
    }
    let tstat = effect / se;
    let baseline_adjusted = my - effect * mg;
    if baseline_adjusted <= 0.0 {
        return Err(StatsError::NonPositiveMean(baseline_adjusted));
    }
    let tc = t_ppf(0.5 + level / 2.0, df);
    Ok(Ancova {
        effect,
        se,
        t: tstat,
        df,
        p: t_two_sided_p(tstat, df),
        slope,
        baseline_adjusted,
        ratio: 1.0 + effect / baseline_adjusted,
        ratio_ci: (
            1.0 + (effect - tc * se) / baseline_adjusted,
            1.0 + (effect + tc * se) / baseline_adjusted,
        ),
        level,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reference::{Reference, assert_rel};

    #[test]
    fn mann_kendall_matches_scipy_kendalltau() {
        let r = Reference::load();
        for c in r.cases("kendall") {
            let mk = mann_kendall(&c.vec("x")).unwrap();
            assert_rel(mk.tau, c.num("tau"), 1e-9, "tau");
            assert_rel(mk.p, c.num("p"), 1e-9, &format!("MK p {}", c.str("name")));
            assert_rel(
                sen_slope(&c.vec("t"), &c.vec("x")).unwrap(),
                c.num("sen"),
                1e-12,
                "Sen",
            );
            assert_rel(
                lag1_autocorrelation(&c.vec("x")).unwrap(),
                c.num("lag1"),
                1e-9,
                "lag1",
            );
        }
    }

    #[test]
    fn stratified_matches_reference() {
        let r = Reference::load();
        for c in r.cases("kendall_stratified") {
            let mk = mann_kendall_stratified(&[&c.vec("x1"), &c.vec("x2")]).unwrap();
            assert_rel(mk.s, c.num("s"), 1e-12, "S");
            assert_rel(mk.var_s, c.num("var_s"), 1e-12, "Var S");
            assert_rel(mk.p, c.num("p"), 1e-9, "stratified p");
        }
    }

    #[test]
    fn ancova_matches_least_squares() {
        let r = Reference::load();
        for c in r.cases("ancova") {
            let an = ancova(&c.vec("a"), &c.vec("ia"), &c.vec("b"), &c.vec("ib"), 0.95).unwrap();
            assert_rel(an.effect, c.num("effect"), 1e-9, "effect");
            assert_rel(an.slope, c.num("slope"), 1e-9, "slope");
            assert_rel(an.se, c.num("se"), 1e-9, "se");
            assert_rel(an.p, c.num("p"), 1e-9, "p");
        }
    }

    #[test]
    fn kendall_s_equals_comparing_every_pair() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(46);
        for case in 0..300 {
            let n = rng.random_range(0..60);
            let x: Vec<f64> = (0..n)
                .map(|_| match rng.random_range(0..6) {
                    0 => 0.0,
                    1 => -0.0,
                    2 => f64::NAN,
                    3 => rng.random_range(-3..4) as f64,
                    _ => rng.random_range(-1e3..1e3),
                })
                .collect();
            let mut want = 0.0;
            for i in 0..n {
                for j in i + 1..n {
                    let d = x[j] - x[i];
                    want += if d > 0.0 {
                        1.0
                    } else if d < 0.0 {
                        -1.0
                    } else {
                        0.0
                    };
                }
            }
            assert_eq!(kendall_s(&x), want, "case {case}: {x:?}");
        }
    }

    #[test]
    fn constant_series_has_no_trend() {
        let mk = mann_kendall(&[1.0; 10]).unwrap();
        assert_eq!(mk.p, 1.0);
        assert!(lag1_autocorrelation(&[1.0; 10]).is_none());
        assert!(mann_kendall(&[1.0, 2.0]).is_err());
    }
}
