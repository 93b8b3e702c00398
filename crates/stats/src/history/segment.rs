//! One series prepared for segmentation (outliers screened out, noise factor found) and binary
//! segmentation on it.

use super::statistic::Prefix;
use super::{Config, Scale, screen};

/// Median absolute value to standard deviation, for normal data.
const MAD_TO_SD: f64 = 1.482_602_218_505_602;

pub(super) struct Fit {
    /// Input indices of the points kept (not outliers), in order.
    pub(super) kept: Vec<usize>,
    /// The kept points' values and standard errors (the latter times the noise factor).
    pub(super) x: Vec<f64>,
    pub(super) se: Vec<f64>,
    pub(super) prefix: Prefix,
    n: usize,
    factor: f64,
}

impl Fit {
    pub(super) fn new(x: &[f64], se: &[f64], cfg: &Config) -> Self {
        // The screen judges a point by its standard error times the series' own noise factor
        // (the median of the successive differences, which one outlier or one step does not
        // move): with standard errors far below the night-to-night scatter, the raw screen
        // took every point near a step for an outlier (tests/history.rs on a busy machine).
        let pre = match cfg.scale {
            Scale::Given => 1.0,
            Scale::Estimated => noise_factor(x, se).max(1.0),
        };
        let screened: Vec<f64> = se.iter().map(|s| s * pre).collect();
        let out = screen::outliers(x, &screened, cfg.outlier_z);
        let kept: Vec<usize> = (0..x.len()).filter(|&i| !out[i]).collect();
        let kx: Vec<f64> = kept.iter().map(|&i| x[i]).collect();
        let kse: Vec<f64> = kept.iter().map(|&i| se[i]).collect();
        let factor = match cfg.scale {
            Scale::Given => 1.0,
            Scale::Estimated => noise_factor(&kx, &kse).max(1.0),
        };
        let kse: Vec<f64> = kse.iter().map(|s| s * factor).collect();
        let prefix = Prefix::new(&kx, &kse);
        Fit {
            kept,
            x: kx,
            se: kse,
            prefix,
            n: x.len(),
            factor,
        }
    }

    pub(super) fn noise_factor(&self) -> f64 {
        self.factor
    }

    pub(super) fn outliers(&self) -> Vec<usize> {
        let mut kept = self.kept.iter().peekable();
        (0..self.n)
            .filter(|i| {
                if kept.peek() == Some(&i) {
                    kept.next();
                    false
                } else {
                    true
                }
            })
            .collect()
    }

    /// The largest statistic over every split of the whole (kept) series; 0 when too few points
    /// are left to split.
    pub(super) fn whole_statistic(&self) -> f64 {
        self.prefix.best(0, self.prefix.len()).map_or(0.0, |b| b.1)
    }

    /// Binary segmentation: split where the statistic is largest while it exceeds the
    /// threshold, then look again on each side. Returns the splits (indices into the kept
    /// points, the first point after each change) in order.
    pub(super) fn binary_segmentation(&self, threshold: f64) -> Vec<usize> {
        let mut found = Vec::new();
        let mut todo = vec![(0, self.prefix.len())];
        while let Some((s, e)) = todo.pop() {
            if let Some((k, t)) = self.prefix.best(s, e)
                && t > threshold
            {
                found.push(k);
                todo.push((s, k));
                todo.push((k, e));
            }
        }
        found.sort_unstable();
        found
    }
}

/// The series' noise relative to its standard errors: the robust standard deviation of the
/// standardised differences of neighbouring points (a change or an outlier moves one or two of
/// them, not their median). About 1 when the standard errors are the whole noise.
fn noise_factor(x: &[f64], se: &[f64]) -> f64 {
    let mut d: Vec<f64> = x
        .windows(2)
        .zip(se.windows(2))
        .map(|(x, s)| ((x[1] - x[0]) / (s[0] * s[0] + s[1] * s[1]).sqrt()).abs())
        .collect();
    if d.is_empty() {
        return 1.0;
    }
    d.sort_unstable_by(f64::total_cmp);
    let m = d.len() / 2;
    let median = if d.len() % 2 == 1 {
        d[m]
    } else {
        (d[m - 1] + d[m]) / 2.0
    };
    MAD_TO_SD * median
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn noise_factor_sees_noise_the_standard_errors_miss() {
        // Alternating +-3 around a level with SEs of 1: differences of 6 / sqrt(2).
        let x: Vec<f64> = (0..20)
            .map(|i| if i % 2 == 0 { 3.0 } else { -3.0 })
            .collect();
        let se = vec![1.0; 20];
        let f = noise_factor(&x, &se);
        assert!((f - MAD_TO_SD * 6.0 / 2f64.sqrt()).abs() < 1e-12, "{f}");
    }

    #[test]
    fn binary_segmentation_finds_two_steps() {
        let mut x = vec![0.0; 30];
        for (i, v) in x.iter_mut().enumerate() {
            *v = if i >= 20 {
                -4.0
            } else if i >= 10 {
                6.0
            } else {
                0.0
            } + 0.3 * ((i * 7 % 5) as f64 - 2.0);
        }
        let se = vec![1.0; 30];
        let cfg = Config {
            scale: Scale::Given,
            ..Config::default()
        };
        let fit = Fit::new(&x, &se, &cfg);
        assert_eq!(fit.binary_segmentation(20.0), vec![10, 20]);
        assert!(fit.outliers().is_empty());
    }
}
