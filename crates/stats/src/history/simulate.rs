//! A seeded generator of histories for the benchmark and the tests (issue 43's "done when"):
//! points around a level with heteroscedastic standard errors (log-uniform from half to twice
//! the typical one), the noise of each point drawn with its own standard error, an optional
//! planted step of a given number of typical standard errors, and an optional single outlier.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::Point;
use super::calibrate::normal;

/// The level before any step; the typical standard error is 1.
pub const LEVEL: f64 = 100.0;
/// A planted step leaves at least this many points on each side.
pub const STEP_MARGIN: usize = 6;
/// A planted outlier is at least this many points from the step.
const OUTLIER_GAP: usize = 3;

/// What to generate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spec {
    pub points: usize,
    /// Step size in typical standard errors (up or down at random); 0 for a change-free series.
    pub step: f64,
    /// Probability that the series has one outlier of 6 to 10 of its point's standard errors.
    pub outlier: f64,
}

/// One generated series and what was planted in it.
#[derive(Debug, Clone, PartialEq)]
pub struct Generated {
    pub points: Vec<Point>,
    /// The first point after the planted step.
    pub change: Option<usize>,
    pub outlier: Option<usize>,
}

/// The series number `index` of a set: the same (spec, seed, index) always gives the same series.
pub fn generate(spec: &Spec, seed: u64, index: u64) -> Generated {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(index);
    let n = spec.points;
    let se: Vec<f64> = (0..n)
        .map(|_| 2f64.powf(rng.random_range(-1.0..1.0)))
        .collect();
    let change = (spec.step != 0.0 && n > 2 * STEP_MARGIN)
        .then(|| rng.random_range(STEP_MARGIN..=n - STEP_MARGIN));
    let up = if rng.random_bool(0.5) { 1.0 } else { -1.0 };
    let outlier = rng.random_bool(spec.outlier.clamp(0.0, 1.0)).then(|| {
        loop {
            let i = rng.random_range(0..n);
            if change.is_none_or(|c| i.abs_diff(c) >= OUTLIER_GAP) {
                break i;
            }
        }
    });
    let kick = if rng.random_bool(0.5) { 1.0 } else { -1.0 } * rng.random_range(6.0..10.0);
    let points = (0..n)
        .map(|i| {
            let step = if change.is_some_and(|c| i >= c) {
                up * spec.step
            } else {
                0.0
            };
            let out = if outlier == Some(i) {
                kick * se[i]
            } else {
                0.0
            };
            Point {
                estimate: LEVEL + step + out + se[i] * normal(&mut rng),
                se: se[i],
            }
        })
        .collect();
    Generated {
        points,
        change,
        outlier,
    }
}
