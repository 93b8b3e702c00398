//! One description of a sample and one quantile definition, used by every table (text, CSV,
//! Markdown), every plot (the HTML box plots' quartiles and whiskers) and the outlier fences, so
//! that they never disagree: linear interpolation between order statistics, Hyndman and Fan's
//! type 7 (numpy's and R's default).

use serde::Serialize;

/// Arithmetic mean; 0 for an empty slice.
pub fn mean(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        return 0.0;
    }
    // Shifted by the first value: exact for constant data, accurate for large offsets.
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

/// The `q` quantile of sorted data: type 7, `s[h] ` interpolated linearly at `h = (n-1) q`.
/// 0 for an empty slice.
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

/// Description of one sample.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Description {
    pub n: usize,
    pub mean: f64,
    pub median: f64,
    /// Sample standard deviation (n-1 denominator); 0 for a single value.
    pub sd: f64,
    /// SD / mean; `None` for a single value or a zero mean.
    pub cv: Option<f64>,
    pub min: f64,
    pub max: f64,
    /// First and third quartiles (type 7): the box of a box plot and the base of Tukey's fences.
    pub q1: f64,
    pub q3: f64,
    /// Standard error of the mean, SD / sqrt(n).
    pub se: f64,
    /// perf stat's "(+- x%)": 100 * SD / sqrt(n) / |mean|; `None` for a single value or a zero
    /// mean.
    pub pm_pct: Option<f64>,
}

impl Description {
    /// The description of the sample multiplied by `k > 0`.
    pub fn scale(&mut self, k: f64) {
        for x in [
            &mut self.mean,
            &mut self.median,
            &mut self.sd,
            &mut self.min,
            &mut self.max,
            &mut self.q1,
            &mut self.q3,
            &mut self.se,
        ] {
            *x *= k;
        }
    }
}

/// Describe a sample; `None` when it is empty or holds a value that is not finite.
pub fn describe(xs: &[f64]) -> Option<Description> {
    if xs.is_empty() || xs.iter().any(|x| !x.is_finite()) {
        return None;
    }
    let s = sorted(xs);
    let n = xs.len();
    let m = mean(xs);
    let sd = sd(xs);
    let se = sd / (n as f64).sqrt();
    let rel = |v: f64| (n >= 2 && m != 0.0).then(|| v / m.abs());
    Some(Description {
        n,
        mean: m,
        median: median_sorted(&s),
        sd,
        cv: rel(sd),
        min: s[0],
        max: s[n - 1],
        q1: quantile_sorted(&s, 0.25),
        q3: quantile_sorted(&s, 0.75),
        se,
        pm_pct: rel(se).map(|r| 100.0 * r),
    })
}

/// Order statistics of a microbenchmark's samples (same quantile definition).
#[derive(Debug, Clone, Copy, Default, Serialize, serde::Deserialize, PartialEq)]
pub struct Summary {
    pub n: usize,
    pub min: f64,
    pub p10: f64,
    pub median: f64,
    pub p90: f64,
    pub max: f64,
    pub mean: f64,
}

impl Summary {
    /// Summary of `v` (non-finite values are ignored; an empty sample gives all zeros, n = 0).
    pub fn of(v: &[f64]) -> Summary {
        let s: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
        if s.is_empty() {
            return Summary::default();
        }
        let s = sorted(&s);
        Summary {
            n: s.len(),
            min: s[0],
            p10: quantile_sorted(&s, 0.10),
            median: median_sorted(&s),
            p90: quantile_sorted(&s, 0.90),
            max: s[s.len() - 1],
            mean: mean(&s),
        }
    }

    pub fn scaled(&self, k: f64) -> Summary {
        Summary {
            n: self.n,
            min: self.min * k,
            p10: self.p10 * k,
            median: self.median * k,
            p90: self.p90 * k,
            max: self.max * k,
            mean: self.mean * k,
        }
    }
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
        assert_eq!((d.q1, d.q3), (1.75, 3.25));
        assert!((d.pm_pct.unwrap() - 100.0 * d.sd / 2.0 / 2.5).abs() < 1e-12);
    }

    #[test]
    fn degenerate_samples_have_no_nan() {
        assert!(describe(&[]).is_none());
        assert!(describe(&[f64::NAN]).is_none());
        let d = describe(&[5.0]).unwrap();
        assert_eq!((d.sd, d.se, d.cv, d.pm_pct), (0.0, 0.0, None, None));
        let z = describe(&[0.0, 0.0]).unwrap();
        assert!(z.cv.is_none() && z.pm_pct.is_none());
    }

    #[test]
    fn quantiles_match_numpy_linear() {
        let s = sorted(&[7.0, 1.0, 3.0, 5.0, 9.0]);
        assert_eq!(quantile_sorted(&s, 0.25), 3.0);
        assert_eq!(quantile_sorted(&s, 0.1), 1.8);
        // numpy.percentile([10.0, 10.1, ..., 10.6, 11.06], [25, 75]) = [10.175, 10.525]
        let xs = [10.0, 10.1, 10.2, 10.3, 10.4, 10.5, 10.6, 11.06];
        let d = describe(&xs).unwrap();
        assert!(
            (d.q1 - 10.175).abs() < 1e-12 && (d.q3 - 10.525).abs() < 1e-12,
            "{d:?}"
        );
    }

    #[test]
    fn seed003_perf_stat_figure() {
        // perf stat prints SD/sqrt(n)/mean: 10 runs with SD 0.6% of the mean -> +-0.19%.
        let xs: Vec<f64> = (0..10)
            .map(|i| 100.0 + if i % 2 == 0 { 0.6 } else { -0.6 })
            .collect();
        let d = describe(&xs).unwrap();
        let expect = 100.0 * sd(&xs) / (10f64).sqrt() / 100.0;
        assert!((d.pm_pct.unwrap() - expect).abs() < 1e-12);
    }

    #[test]
    fn summary_quantiles() {
        let v: Vec<f64> = (1..=11).map(|x| x as f64).collect();
        let s = Summary::of(&v);
        assert_eq!(
            (s.n, s.min, s.p10, s.median, s.p90, s.max),
            (11, 1.0, 2.0, 6.0, 10.0, 11.0)
        );
        assert_eq!(Summary::of(&[f64::NAN]).n, 0);
    }
}
