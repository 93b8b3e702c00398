//! Change points in a history: a series of per-point estimates, each with its own standard
//! error (one experiment per point, in the order of a label or of time). Issue 43's statistical
//! core; the method, its assumptions and its error control are argued in docs/history.md.
//!
//! [`detect`] runs binary segmentation on the inverse-variance-weighted likelihood-ratio (CUSUM)
//! statistic after screening single-point excursions out as outliers. The threshold is the
//! 1 - alpha quantile of the statistic's maximum under "no change", found by a seeded Monte Carlo
//! of that very procedure on the series' own length and standard errors, so a change-free series
//! reports any change with probability alpha (up to the Monte Carlo's resolution) and the same
//! input always gives the same answer. Each change gets a location interval (a likelihood-ratio
//! set calibrated by a parametric bootstrap) and a size interval. [`across_series`] applies
//! Benjamini-Hochberg to the p-values of several series of one query.

mod calibrate;
mod interval;
mod screen;
mod segment;
pub mod simulate;
mod statistic;

use crate::StatsError;
use crate::multiple::benjamini_hochberg;

/// One point of a series: an experiment's estimate and its standard error.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    pub estimate: f64,
    pub se: f64,
}

/// How the standard errors are used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    /// As given: the points' standard errors are the whole noise between points.
    Given,
    /// Multiplied by the series' own robust noise factor when that is above 1 (night-to-night
    /// variation the experiments' standard errors do not contain); never below the given SEs.
    Estimated,
}

/// The detection's settings. `Default` is what docs/history.md describes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Config {
    /// Probability of reporting any change in a change-free series; also the level of the
    /// intervals (1 - alpha).
    pub alpha: f64,
    /// Monte Carlo series of the null (and bootstrap series per location interval).
    pub simulations: usize,
    /// Seed of every simulation, mixed with the series' own values: the same input gives the
    /// same answer.
    pub seed: u64,
    /// A point further than this many standard errors from the points on each side of it is an
    /// outlier, not a change.
    pub outlier_z: f64,
    pub scale: Scale,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            alpha: 0.05,
            simulations: 1999,
            seed: 43,
            outlier_z: 3.5,
            scale: Scale::Estimated,
        }
    }
}

/// A change point. Indices are into the input series; `index` is the first point after the
/// change.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    pub index: usize,
    /// The first point after the change lies in `location.0 ..= location.1` (level 1 - alpha).
    pub location: (usize, usize),
    /// Weighted mean after minus weighted mean before (between the neighbouring changes).
    pub size: f64,
    pub size_interval: (f64, f64),
    /// The weighted likelihood-ratio statistic of this split, divided by the noise factor.
    pub statistic: f64,
}

/// What [`detect`] found in one series.
#[derive(Debug, Clone, PartialEq)]
pub struct History {
    /// In order of index.
    pub changes: Vec<Change>,
    /// Points screened out as single-point excursions (indices into the input).
    pub outliers: Vec<usize>,
    /// Monte Carlo p-value of "no change anywhere" (the largest statistic of the whole series).
    pub p: f64,
    /// The statistic a split must exceed to be reported.
    pub threshold: f64,
    /// The noise factor the standard errors were multiplied by (1 with [`Scale::Given`]).
    pub noise_factor: f64,
}

/// Fewest points a series needs: two segments of at least [`statistic::MIN_SEGMENT`] points
/// plus room for an outlier on each side.
pub const MIN_POINTS: usize = 2 * statistic::MIN_SEGMENT + 2;

/// Find the change points of one series.
pub fn detect(points: &[Point], cfg: &Config) -> Result<History, StatsError> {
    check(points, cfg)?;
    let x: Vec<f64> = points.iter().map(|p| p.estimate).collect();
    let se: Vec<f64> = points.iter().map(|p| p.se).collect();
    let seed = calibrate::series_seed(&x, &se, cfg.seed);
    let null = calibrate::null_maxima(&se, seed, cfg)?;
    let threshold = calibrate::threshold(&null, cfg.alpha);
    let fit = segment::Fit::new(&x, &se, cfg);
    let whole = fit.whole_statistic();
    let p = calibrate::p_value(&null, whole);
    let splits = if p <= cfg.alpha {
        fit.binary_segmentation(threshold)
    } else {
        Vec::new()
    };
    let changes = interval::changes(&fit, &splits, cfg, seed);
    Ok(History {
        changes,
        outliers: fit.outliers(),
        p,
        threshold,
        noise_factor: fit.noise_factor(),
    })
}

fn check(points: &[Point], cfg: &Config) -> Result<(), StatsError> {
    if points.len() < MIN_POINTS {
        return Err(StatsError::TooFew {
            what: "a change-point history",
            need: MIN_POINTS,
            got: points.len(),
        });
    }
    for (index, p) in points.iter().enumerate() {
        if !p.estimate.is_finite() {
            return Err(StatsError::NonFinite { index });
        }
        if !(p.se.is_finite() && p.se > 0.0) {
            return Err(StatsError::Invalid(format!(
                "point {index}: the standard error {} is not a positive finite number",
                p.se
            )));
        }
    }
    if !(cfg.alpha > 0.0 && cfg.alpha < 0.5) {
        return Err(StatsError::Invalid(format!(
            "alpha {} is not between 0 and 0.5",
            cfg.alpha
        )));
    }
    if cfg.alpha * ((cfg.simulations + 1) as f64) < 1.0 {
        return Err(StatsError::Invalid(format!(
            "{} simulations cannot resolve alpha {}: at least {} are needed",
            cfg.simulations,
            cfg.alpha,
            (1.0 / cfg.alpha).ceil() as usize
        )));
    }
    if !(cfg.outlier_z.is_finite() && cfg.outlier_z > 0.0) {
        return Err(StatsError::Invalid(format!(
            "the outlier cut-off {} is not a positive number of standard errors",
            cfg.outlier_z
        )));
    }
    Ok(())
}

/// Benjamini-Hochberg adjusted p-values of several series of one query (their
/// [`History::p`]), in the input order: a series' changes are reported when its adjusted
/// p-value is at most alpha, which holds the false discovery rate among the series with a
/// change at alpha.
pub fn across_series(p: &[f64]) -> Vec<f64> {
    benjamini_hochberg(p)
}

/// Drop the changes of the series whose Benjamini-Hochberg adjusted p-value is above alpha;
/// returns the adjusted p-values.
pub fn keep_discoveries(series: &mut [History], alpha: f64) -> Vec<f64> {
    let p: Vec<f64> = series.iter().map(|h| h.p).collect();
    let adjusted = across_series(&p);
    for (h, q) in series.iter_mut().zip(&adjusted) {
        if *q > alpha {
            h.changes.clear();
        }
    }
    adjusted
}

#[cfg(test)]
mod tests {
    use super::simulate::{Spec, generate};
    use super::*;

    fn quick() -> Config {
        Config {
            simulations: 399,
            ..Config::default()
        }
    }

    #[test]
    fn change_free_series_report_a_change_about_alpha_of_the_time() {
        let spec = Spec {
            points: 30,
            step: 0.0,
            outlier: 0.0,
        };
        let n = 200;
        let cfg = quick();
        let mut any = 0;
        let mut p_small = 0;
        for i in 0..n {
            let h = detect(&generate(&spec, 7, i).points, &cfg).unwrap();
            any += !h.changes.is_empty() as usize;
            p_small += (h.p <= cfg.alpha) as usize;
        }
        assert_eq!(any, p_small, "a change is reported exactly when p <= alpha");
        // 200 series at 5%: 10 expected, binomial SD 3.1.
        assert!(any <= 20, "{any} of {n} change-free series had a change");
    }

    #[test]
    fn a_planted_step_is_found_inside_its_intervals() {
        let spec = Spec {
            points: 40,
            step: 3.0,
            outlier: 0.0,
        };
        let g = generate(&spec, 11, 0);
        let truth = g.change.unwrap();
        let h = detect(&g.points, &quick()).unwrap();
        assert_eq!(h.changes.len(), 1, "{h:?}");
        let c = &h.changes[0];
        assert!(
            c.location.0 <= truth && truth <= c.location.1,
            "{truth} {c:?}"
        );
        assert!(c.location.0 <= c.index && c.index <= c.location.1, "{c:?}");
        let (lo, hi) = c.size_interval;
        assert!(lo <= c.size && c.size <= hi);
        let step = 3.0 * c.size.signum();
        assert!(lo <= step && step <= hi, "{c:?}");
        assert!(h.p <= 0.05);
    }

    #[test]
    fn one_outlier_is_not_a_change() {
        let mut points: Vec<Point> = (0..30)
            .map(|i| Point {
                estimate: 10.0 + 0.5 * (((i * 37) % 11) as f64 / 5.0 - 1.0),
                se: 0.5,
            })
            .collect();
        points[2].estimate = 10.0 + 20.0 * 0.5;
        let h = detect(&points, &quick()).unwrap();
        assert!(h.changes.is_empty(), "{h:?}");
        assert_eq!(h.outliers, vec![2]);
        // Without the screen the same point makes a change.
        let loose = Config {
            outlier_z: 1e9,
            ..quick()
        };
        assert!(!detect(&points, &loose).unwrap().changes.is_empty());
    }

    #[test]
    fn the_same_input_gives_the_same_answer() {
        let g = generate(
            &Spec {
                points: 25,
                step: 2.0,
                outlier: 1.0,
            },
            3,
            5,
        );
        assert_eq!(detect(&g.points, &quick()), detect(&g.points, &quick()));
    }

    #[test]
    fn bad_input_is_refused_with_its_reason() {
        let mut points = vec![
            Point {
                estimate: 1.0,
                se: 1.0
            };
            10
        ];
        assert!(matches!(
            detect(&points[..3], &quick()),
            Err(StatsError::TooFew { got: 3, .. })
        ));
        points[4].se = 0.0;
        let e = detect(&points, &quick()).unwrap_err().to_string();
        assert!(e.contains("point 4"), "{e}");
        points[4].se = 1.0;
        points[6].estimate = f64::NAN;
        assert_eq!(
            detect(&points, &quick()),
            Err(StatsError::NonFinite { index: 6 })
        );
        points[6].estimate = 1.0;
        let few = Config {
            simulations: 10,
            ..quick()
        };
        assert!(detect(&points, &few).is_err());
    }

    #[test]
    fn benjamini_hochberg_keeps_only_the_discoveries() {
        let mk = |p: f64| History {
            changes: vec![Change {
                index: 5,
                location: (4, 6),
                size: 1.0,
                size_interval: (0.5, 1.5),
                statistic: 20.0,
            }],
            outliers: vec![],
            p,
            threshold: 10.0,
            noise_factor: 1.0,
        };
        let mut series = vec![mk(0.001), mk(0.04), mk(0.5)];
        let q = keep_discoveries(&mut series, 0.05);
        assert_eq!(q, across_series(&[0.001, 0.04, 0.5]));
        assert!((q[1] - 0.06).abs() < 1e-12);
        let kept: Vec<bool> = series.iter().map(|h| !h.changes.is_empty()).collect();
        assert_eq!(kept, [true, false, false]);
    }
}
