//! Yuen's test of trimmed means (Yuen 1974; scipy: `ttest_ind(b, a, equal_var=False,
//! trim=0.2)`): the same number of values is cut from both tails of each sample, so a few
//! extreme runs cannot decide the result, and the winsorized variances keep the test valid.
//! It is the sensitivity check `compare` runs when a sample holds severe outliers; being
//! symmetric, it does not manufacture differences between two samples of the same bimodal
//! distribution, as dropping one sample's slow runs did.

use super::StatsError;
use super::dist::t_two_sided_p;
use abperf_model::describe::{mean, sorted};
use serde::Serialize;

/// Yuen's test of B against A.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Yuen {
    /// Share cut from each tail of each sample.
    pub trim: f64,
    pub trimmed_mean_baseline: f64,
    pub trimmed_mean_variant: f64,
    /// trimmed mean(B) / trimmed mean(A).
    pub ratio: f64,
    pub t: f64,
    pub df: f64,
    pub p: f64,
}

/// Trimmed mean and d = (n-1) s_w^2 / (h (h-1)) of one sample (s_w^2: the winsorized variance,
/// h: the values left after trimming).
fn parts(x: &[f64], trim: f64) -> Result<(f64, f64, usize), StatsError> {
    let n = x.len();
    let g = (trim * n as f64).floor() as usize;
    let h = n - 2 * g;
    if h < 2 {
        return Err(StatsError::TooFew {
            what: "Yuen's trimmed-means test",
            need: 2 * g + 2,
            got: n,
        });
    }
    let s = sorted(x);
    let tm = mean(&s[g..n - g]);
    let (lo, hi) = (s[g], s[n - g - 1]);
    let w: Vec<f64> = s.iter().map(|v| v.clamp(lo, hi)).collect();
    let wm = mean(&w);
    let sw2 = w.iter().map(|v| (v - wm) * (v - wm)).sum::<f64>() / (n - 1) as f64;
    Ok((tm, (n - 1) as f64 * sw2 / (h as f64 * (h - 1) as f64), h))
}

/// Yuen's test with `trim` (0 <= trim < 0.5) cut from each tail.
pub fn yuen(a: &[f64], b: &[f64], trim: f64) -> Result<Yuen, StatsError> {
    if !(0.0..0.5).contains(&trim) {
        return Err(StatsError::Invalid(format!(
            "trim {trim}: expected a share from 0 to below 0.5"
        )));
    }
    let (ma, da, ha) = parts(a, trim)?;
    let (mb, db, hb) = parts(b, trim)?;
    if da + db == 0.0 {
        return Err(StatsError::ZeroVariance("Yuen's trimmed-means test"));
    }
    let t = (mb - ma) / (da + db).sqrt();
    let df = (da + db).powi(2) / (da * da / (ha - 1) as f64 + db * db / (hb - 1) as f64);
    Ok(Yuen {
        trim,
        trimmed_mean_baseline: ma,
        trimmed_mean_variant: mb,
        ratio: mb / ma,
        t,
        df,
        p: t_two_sided_p(t, df),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reference::{Reference, assert_rel};

    #[test]
    fn yuen_matches_scipy() {
        let r = Reference::load();
        let cases = r.cases("yuen");
        assert!(!cases.is_empty());
        for c in cases {
            let y = yuen(&c.vec("a"), &c.vec("b"), c.num("trim")).unwrap();
            assert_rel(y.t, c.num("t"), 1e-9, "yuen t");
            assert_rel(y.df, c.num("df"), 1e-9, "yuen df");
            assert_rel(y.p, c.num("p"), 1e-9, "yuen p");
        }
    }

    #[test]
    fn too_few_after_trimming_is_an_error() {
        assert!(matches!(
            yuen(&[1.0, 2.0, 3.0], &[1.0, 2.0, 3.0, 4.0, 5.0], 0.4),
            Err(StatsError::TooFew { .. })
        ));
        assert!(yuen(&[1.0; 6], &[1.0; 6], 0.2).is_err());
    }
}
