//! Per-variant description: n, mean, median, SD, CV, min, max, standard error and the perf-stat
//! "(+- x%)" figure (standard error of the mean relative to the mean, as `perf stat -r` prints it).

use serde::Serialize;

/// Summary of one sample.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Description {
    pub n: usize,
    pub mean: f64,
    pub median: f64,
    /// Sample standard deviation (n-1 denominator); 0 for a single value.
    pub sd: f64,
    /// SD / mean; `None` when the mean is 0.
    pub cv: Option<f64>,
    pub min: f64,
    pub max: f64,
    /// Standard error of the mean, SD / sqrt(n).
    pub se: f64,
    /// perf stat's "(+- x%)": 100 * SD / sqrt(n) / mean; `None` when the mean is 0.
    pub pm_pct: Option<f64>,
}

/// Arithmetic mean; 0 for an empty slice.
pub fn mean(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        return 0.0;
    }
    // Two-pass for accuracy: shift by the first value.
    let x0 = xs[0];
    x0 + xs.iter().map(|x| x - x0).sum::<f64>() / xs.len() as f64
}

/// Sample variance (n-1 denominator); 0 for fewer than two values.
pub fn variance(xs: &[f64]) -> f64 {
    if xs.len() < 2 {
        return 0.0;
    }
    let m = mean(xs);
    xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (xs.len() - 1) as f64
}

/// Sample standard deviation.
pub fn sd(xs: &[f64]) -> f64 {
    variance(xs).sqrt()
}

/// Sorted copy (total order; callers reject NaN beforehand).
pub fn sorted(xs: &[f64]) -> Vec<f64> {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    v
}

/// Quantile of sorted data with linear interpolation (numpy's default, Hyndman-Fan type 7).
pub fn quantile_sorted(s: &[f64], q: f64) -> f64 {
    if s.is_empty() {
        return 0.0;
    }
    let h = (s.len() - 1) as f64 * q.clamp(0.0, 1.0);
    let lo = h.floor() as usize;
    let hi = h.ceil() as usize;
    s[lo] + (h - lo as f64) * (s[hi] - s[lo])
}

/// Median of sorted data.
pub fn median_sorted(s: &[f64]) -> f64 {
    quantile_sorted(s, 0.5)
}

/// Median (copies and sorts).
pub fn median(xs: &[f64]) -> f64 {
    median_sorted(&sorted(xs))
}

/// Describe a sample; `None` for an empty one.
pub fn describe(xs: &[f64]) -> Option<Description> {
    if xs.is_empty() {
        return None;
    }
    let s = sorted(xs);
    let n = xs.len();
    let m = mean(xs);
    let sd = sd(xs);
    let se = sd / (n as f64).sqrt();
    let rel = |v: f64| if m != 0.0 { Some(v / m) } else { None };
    Some(Description {
        n,
        mean: m,
        median: median_sorted(&s),
        sd,
        cv: rel(sd),
        min: s[0],
        max: s[n - 1],
        se,
        pm_pct: rel(se).map(|r| 100.0 * r),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn describes_small_sample() {
        let d = describe(&[1.0, 2.0, 3.0, 4.0]).unwrap();
        assert_eq!(d.n, 4);
        assert_eq!(d.mean, 2.5);
        assert_eq!(d.median, 2.5);
        assert!((d.sd - (5.0f64 / 3.0).sqrt()).abs() < 1e-15);
        assert_eq!((d.min, d.max), (1.0, 4.0));
        assert!((d.pm_pct.unwrap() - 100.0 * d.sd / 2.0 / 2.5).abs() < 1e-12);
    }

    #[test]
    fn degenerate_samples_have_no_nan() {
        assert!(describe(&[]).is_none());
        let d = describe(&[5.0]).unwrap();
        assert_eq!((d.sd, d.se), (0.0, 0.0));
        let z = describe(&[0.0, 0.0]).unwrap();
        assert!(z.cv.is_none() && z.pm_pct.is_none());
    }

    #[test]
    fn quantiles_match_numpy_linear() {
        let s = sorted(&[7.0, 1.0, 3.0, 5.0, 9.0]);
        assert_eq!(quantile_sorted(&s, 0.25), 3.0);
        assert_eq!(quantile_sorted(&s, 0.1), 1.8);
    }

    #[test]
    fn seed003_perf_stat_figure() {
        // perf stat prints SD/sqrt(n)/mean: 10 runs with SD 0.6% of the mean -> +-0.19%.
        let xs: Vec<f64> = (0..10)
            .map(|i| 100.0 + if i % 2 == 0 { 0.6 } else { -0.6 } * 1.0)
            .collect();
        let d = describe(&xs).unwrap();
        let expect = 100.0 * sd(&xs) / (10f64).sqrt() / 100.0;
        assert!((d.pm_pct.unwrap() - expect).abs() < 1e-12);
    }
}
