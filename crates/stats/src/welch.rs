//! Welch's unequal-variance t-test and the Fieller confidence interval for the ratio of two
//! independent means (Fieller 1954), both with Welch-Satterthwaite degrees of freedom.

use super::StatsError;
use super::dist::{t_ppf, t_two_sided_p};
use abperf_model::describe::{mean, variance};
use serde::Serialize;

/// Welch t-test of B against A (t > 0 when B's mean is larger).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Welch {
    pub t: f64,
    pub df: f64,
    /// Two-sided p-value.
    pub p: f64,
    /// mean(B) - mean(A).
    pub diff: f64,
    /// Standard error of the difference.
    pub se: f64,
}

/// Squared standard errors (var/n) of both means and the Welch-Satterthwaite df.
pub(crate) fn welch_parts(a: &[f64], b: &[f64]) -> Result<(f64, f64, f64), StatsError> {
    for (what, x) in [("baseline", a), ("variant", b)] {
        if x.len() < 2 {
            return Err(StatsError::TooFew {
                what,
                need: 2,
                got: x.len(),
            });
        }
    }
    let sa = variance(a) / a.len() as f64;
    let sb = variance(b) / b.len() as f64;
    if sa + sb == 0.0 {
        return Err(StatsError::ZeroVariance("Welch t-test"));
    }
    let df = (sa + sb).powi(2) / (sa * sa / (a.len() - 1) as f64 + sb * sb / (b.len() - 1) as f64);
    Ok((sa, sb, df))
}

/// Welch's t-test, two-sided (scipy: `ttest_ind(b, a, equal_var=False)`).
pub fn welch(a: &[f64], b: &[f64]) -> Result<Welch, StatsError> {
    let (sa, sb, df) = welch_parts(a, b)?;
    welch_with(mean(a), mean(b), sa, sb, df)
}

/// Squared standard errors and Welch-Satterthwaite df from summary figures: means are not
/// needed, variances are sample variances (n-1), `n` the runs each summarises.
pub fn moments_parts(
    va: f64,
    na: usize,
    vb: f64,
    nb: usize,
) -> Result<(f64, f64, f64), StatsError> {
    for (what, n) in [("baseline", na), ("variant", nb)] {
        if n < 2 {
            return Err(StatsError::TooFew {
                what,
                need: 2,
                got: n,
            });
        }
    }
    let (sa, sb) = (va / na as f64, vb / nb as f64);
    if sa + sb == 0.0 {
        return Err(StatsError::ZeroVariance("Welch t-test"));
    }
    let df = (sa + sb).powi(2) / (sa * sa / (na - 1) as f64 + sb * sb / (nb - 1) as f64);
    Ok((sa, sb, df))
}

/// Welch's t-test from means, squared standard errors and df.
pub fn welch_with(ma: f64, mb: f64, sa: f64, sb: f64, df: f64) -> Result<Welch, StatsError> {
    let diff = mb - ma;
    let se = (sa + sb).sqrt();
    let t = diff / se;
    Ok(Welch {
        t,
        df,
        p: t_two_sided_p(t, df),
        diff,
        se,
    })
}

/// Confidence interval for theta = mean(B) / mean(A).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RatioCi {
    pub ratio: f64,
    pub low: f64,
    pub high: f64,
    pub level: f64,
}

/// Fieller interval at `level` (e.g. 0.95) for mean(B)/mean(A) with Welch df.
///
/// Solves (mB - theta mA)^2 = t^2 (sB^2 + theta^2 sA^2) for theta, where s^2 = var/n. When the
/// baseline mean is not significantly different from zero (g = t^2 sA^2 / mA^2 >= 1) the set is
/// unbounded and an error says which: the whole line (`UnboundedRatio`), or two rays, every ratio
/// up to one root and from the other (`ExclusiveRatio`), when the variant's mean is different
/// from 0.
pub fn fieller(a: &[f64], b: &[f64], level: f64) -> Result<RatioCi, StatsError> {
    let (sa, sb, df) = welch_parts(a, b)?;
    fieller_with(mean(a), mean(b), sa, sb, df, level)
}

/// Fieller interval from summary figures (means, squared standard errors, df).
pub fn fieller_with(
    ma: f64,
    mb: f64,
    sa: f64,
    sb: f64,
    df: f64,
    level: f64,
) -> Result<RatioCi, StatsError> {
    if ma <= 0.0 {
        return Err(StatsError::NonPositiveMean(ma));
    }
    let t = t_ppf(0.5 + level / 2.0, df);
    let t2 = t * t;
    let qa = ma * ma - t2 * sa;
    // The discriminant mA^2 mB^2 - (mA^2 - t^2 sA)(mB^2 - t^2 sB), written without the
    // difference of two nearly equal products: at a CV of 1e-8 (instruction or fault counts)
    // that difference cancels to 0 and the interval collapses onto the ratio.
    let disc = t2 * (ma * ma * sb + mb * mb * sa - t2 * sa * sb);
    if qa <= 0.0 {
        // The quadratic opens downwards: the set is outside its roots, or everything.
        if qa < 0.0 && disc > 0.0 {
            let (r1, r2) = ((ma * mb + disc.sqrt()) / qa, (ma * mb - disc.sqrt()) / qa);
            return Err(StatsError::ExclusiveRatio {
                below: r1.min(r2),
                above: r1.max(r2),
            });
        }
        return Err(StatsError::UnboundedRatio);
    }
    let root = disc.max(0.0).sqrt();
    Ok(RatioCi {
        ratio: mb / ma,
        low: (ma * mb - root) / qa,
        high: (ma * mb + root) / qa,
        level,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reference::{Reference, assert_rel};

    #[test]
    fn welch_matches_scipy() {
        let r = Reference::load();
        for c in r.cases("welch") {
            let (a, b) = (c.vec("a"), c.vec("b"));
            let w = welch(&a, &b).unwrap();
            assert_rel(w.t, c.num("t"), 1e-9, "welch t");
            assert_rel(w.df, c.num("df"), 1e-9, "welch df");
            assert_rel(w.p, c.num("p"), 1e-9, "welch p");
        }
    }

    #[test]
    fn fieller_matches_direct_inversion() {
        let r = Reference::load();
        for c in r.cases("fieller") {
            let (a, b) = (c.vec("a"), c.vec("b"));
            let ci = fieller(&a, &b, c.num("level")).unwrap();
            assert_rel(ci.low, c.num("low"), 1e-9, "fieller low");
            assert_rel(ci.high, c.num("high"), 1e-9, "fieller high");
        }
    }

    #[test]
    fn fieller_holds_at_tiny_cv() {
        // Counts near 1e9 with a CV of 1e-9 and a shift Welch calls not significant: the
        // interval must still contain 1 (it collapsed onto the ratio when computed by difference).
        let a: Vec<f64> = (0..10).map(|i| 1e9 + (i % 5) as f64).collect();
        let b: Vec<f64> = (0..10).map(|i| 1e9 + 0.7 + ((i * 3) % 5) as f64).collect();
        let w = welch(&a, &b).unwrap();
        assert!(w.p > 0.05, "{w:?}");
        let ci = fieller(&a, &b, 0.95).unwrap();
        assert!(ci.low < 1.0 && ci.high > 1.0, "{ci:?}");
        assert!(ci.high - ci.low > 1e-10, "{ci:?}");
        // And with a real shift the interval excludes 1, as Welch's p says.
        let c: Vec<f64> = b.iter().map(|x| x + 5.0).collect();
        assert!(welch(&a, &c).unwrap().p < 0.01);
        assert!(fieller(&a, &c, 0.95).unwrap().low > 1.0);
    }

    #[test]
    fn a_noisy_baseline_gives_two_rays_or_everything_never_a_bounded_interval() {
        // The baseline mean not different from 0, the variant's clearly is: the set is the two
        // rays outside the roots, and the estimate lies on one of them.
        let a = [0.2, 3.0, 0.1, 2.5, 0.05, 0.3];
        let b = [10.0, 10.5, 9.8, 10.2, 9.9, 10.1];
        match fieller(&a, &b, 0.95) {
            Err(StatsError::ExclusiveRatio { below, above }) => {
                let r = mean(&b) / mean(&a);
                assert!(below < above, "{below} {above}");
                assert!(r <= below || r >= above, "{r} {below} {above}");
                // Each root solves (mB - theta mA)^2 = t^2 (sB + theta^2 sA).
                let (sa, sb, df) = welch_parts(&a, &b).unwrap();
                let t2 = t_ppf(0.975, df).powi(2);
                for th in [below, above] {
                    let lhs = (mean(&b) - th * mean(&a)).powi(2);
                    assert_rel(lhs, t2 * (sb + th * th * sa), 1e-9, "root");
                }
            }
            other => panic!("{other:?}"),
        }
        // Both means indistinguishable from 0: every ratio is in the set.
        let b2 = [0.1, 2.0, -1.0, 2.8, -0.9, 0.4];
        assert_eq!(fieller(&a, &b2, 0.95), Err(StatsError::UnboundedRatio));
    }

    #[test]
    fn zero_variance_is_an_error_not_nan() {
        assert_eq!(
            welch(&[1.0; 5], &[1.0; 5]),
            Err(StatsError::ZeroVariance("Welch t-test"))
        );
        assert!(matches!(
            welch(&[1.0], &[1.0, 2.0]),
            Err(StatsError::TooFew { .. })
        ));
        assert!(fieller(&[-1.0, 1.0, 0.5], &[1.0, 2.0, 3.0], 0.95).is_err());
    }
}
