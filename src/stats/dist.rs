//! Thin wrappers over statrs distributions: quantiles and tail probabilities used everywhere.

use statrs::distribution::{ContinuousCDF, FisherSnedecor, Normal, StudentsT};

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

fn student(df: f64) -> StudentsT {
    // df > 0 is guaranteed by callers; fall back to the normal limit otherwise.
    StudentsT::new(0.0, 1.0, df)
        .unwrap_or_else(|_| StudentsT::new(0.0, 1.0, f64::INFINITY).expect("normal limit"))
}

/// Student t CDF with `df` degrees of freedom (df may be fractional).
pub fn t_cdf(t: f64, df: f64) -> f64 {
    student(df).cdf(t)
}

/// Student t survival function P(T > t).
pub fn t_sf(t: f64, df: f64) -> f64 {
    student(df).sf(t)
}

/// Two-sided p-value of a t statistic.
pub fn t_two_sided_p(t: f64, df: f64) -> f64 {
    (2.0 * t_sf(t.abs(), df)).min(1.0)
}

/// Student t quantile, polished with Newton steps on the CDF so that it agrees with the CDF to
/// double precision (the statrs inverse is only approximate for fractional df).
pub fn t_ppf(p: f64, df: f64) -> f64 {
    // statrs's inverse CDF loops forever for infinite df (and `student` maps a NaN df there):
    // use the normal limit for df = inf, and say NaN for a NaN df.
    if df.is_nan() {
        return f64::NAN;
    }
    if df == f64::INFINITY {
        return norm_ppf(p);
    }
    let d = student(df);
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

#[cfg(test)]
mod tests {
    use super::*;

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
