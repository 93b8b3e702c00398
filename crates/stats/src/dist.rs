//! Thin wrappers over statrs distributions: quantiles and tail probabilities used everywhere.

use statrs::distribution::{ChiSquared, ContinuousCDF, FisherSnedecor, Normal, StudentsT};

fn std_normal() -> Normal {
    Normal::standard()
}

/// Standard normal CDF.
pub fn norm_cdf(z: f64) -> f64 {
    std_normal().cdf(z)
}

/// Standard normal survival function, accurate in the upper tail.
pub fn norm_sf(z: f64) -> f64 {
    std_normal().sf(z)
}

/// Standard normal quantile.
pub fn norm_ppf(p: f64) -> f64 {
    std_normal().inverse_cdf(p)
}

/// Above this many degrees of freedom the t distribution is the normal one to double precision
/// in every use here; statrs' t quantile does not terminate for infinite df.
const NORMAL_DF: f64 = 1e7;

fn student(df: f64) -> Option<StudentsT> {
    StudentsT::new(0.0, 1.0, df).ok()
}

/// Student t CDF with `df` degrees of freedom (df may be fractional); NaN for a df that is not
/// a positive number.
pub fn t_cdf(t: f64, df: f64) -> f64 {
    if t.is_nan() || df.is_nan() || df <= 0.0 {
        return f64::NAN;
    }
    if df > NORMAL_DF {
        return norm_cdf(t);
    }
    student(df).map_or(f64::NAN, |d| d.cdf(t))
}

/// Student t survival function P(T > t).
pub fn t_sf(t: f64, df: f64) -> f64 {
    if t.is_nan() || df.is_nan() || df <= 0.0 {
        return f64::NAN;
    }
    if df > NORMAL_DF {
        return norm_sf(t);
    }
    student(df).map_or(f64::NAN, |d| d.sf(t))
}

/// Two-sided p-value of a t statistic.
pub fn t_two_sided_p(t: f64, df: f64) -> f64 {
    (2.0 * t_sf(t.abs(), df)).min(1.0)
}

/// Student t quantile, polished with Newton steps on the CDF so that it agrees with the CDF to
/// double precision (the statrs inverse is only approximate for fractional df). NaN for a p
/// outside (0, 1) or a df that is not a positive number: never a loop.
pub fn t_ppf(p: f64, df: f64) -> f64 {
    if !(p > 0.0 && p < 1.0) || df.is_nan() || df <= 0.0 {
        return f64::NAN;
    }
    if df > NORMAL_DF {
        return norm_ppf(p);
    }
    let Some(d) = student(df) else {
        return f64::NAN;
    };
    let mut x = d.inverse_cdf(p);
    use statrs::distribution::Continuous;
    for _ in 0..4 {
        let f = d.pdf(x);
        if f <= 0.0 || !f.is_finite() {
            break;
        }
        // g(x) = cdf(x) - p, computed on the smaller tail to keep precision.
        let g = if p < 0.5 {
            d.cdf(x) - p
        } else {
            (1.0 - p) - d.sf(x)
        };
        let step = g / f;
        if !step.is_finite() {
            break;
        }
        x -= step;
        if step.abs() <= 1e-15 * x.abs().max(1.0) {
            break;
        }
    }
    x
}

/// Upper tail of the F distribution P(F > f).
pub fn f_sf(f: f64, df1: f64, df2: f64) -> f64 {
    match FisherSnedecor::new(df1, df2) {
        Ok(d) => d.sf(f),
        Err(_) => f64::NAN,
    }
}

/// Upper tail of the chi-squared distribution P(X > x) with `df` degrees of freedom.
pub fn chi2_sf(x: f64, df: f64) -> f64 {
    match ChiSquared::new(df) {
        Ok(d) => d.sf(x),
        Err(_) => f64::NAN,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_degrees_of_freedom_is_nan_not_a_hang() {
        for df in [f64::NAN, 0.0, -1.0] {
            assert!(t_ppf(0.975, df).is_nan() && t_cdf(1.0, df).is_nan() && t_sf(1.0, df).is_nan());
        }
        assert!((t_ppf(0.975, f64::INFINITY) - 1.959963984540054).abs() < 1e-12);
        assert!((t_ppf(0.975, 1e9) - 1.959963984540054).abs() < 1e-9);
        assert!(t_ppf(1.0, 10.0).is_nan() && t_ppf(f64::NAN, 10.0).is_nan());
    }

    #[test]
    fn t_ppf_inverts_cdf() {
        for &df in &[1.5, 3.0, 10.0, 21.7, 100.0] {
            for &p in &[0.005, 0.025, 0.05, 0.5, 0.95, 0.975, 0.995] {
                let x = t_ppf(p, df);
                assert!((t_cdf(x, df) - p).abs() < 1e-13, "df={df} p={p}");
            }
        }
    }
}
