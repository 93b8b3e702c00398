//! Statistics for A/B/n performance comparisons, as specified in docs/statistics.md#conventions.
//!
//! Pure computation: no I/O. Every function returns a clear [`StatsError`] (or a documented
//! `None`) instead of NaN or a panic on degenerate input (too few values, zero variance, ties).
//! Reference values for the unit tests come from scipy (`tools/stats_reference.py` writes
//! `tests/data/stats_reference.json`); the product itself never calls Python.

pub mod analysis;
pub mod bisect;
pub mod bootstrap;
pub mod compare;
pub mod counts;
pub mod dist;
pub mod drift;
pub mod equivalence;
pub mod history;
pub mod host_effects;
pub mod hosts;
mod inversions;
pub mod levels;
pub mod meta_analysis;
pub mod multiple;
pub mod nested;
pub mod outliers;
pub mod power;
pub mod profile_diff;
pub mod rank;
pub mod replicated;
pub mod selfcheck;
mod sen;
pub mod sequential;
mod sequential_cache;
mod sequential_table;
pub mod summary;
pub mod trimmed;
pub mod variance;
pub mod verdict;
pub mod welch;

#[cfg(test)]
pub(crate) mod reference;

use thiserror::Error;

/// Why a statistic could not be computed. The message is meant for the user.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum StatsError {
    #[error("{what} needs at least {need} values, got {got}")]
    TooFew {
        what: &'static str,
        need: usize,
        got: usize,
    },
    #[error("{0}: every value is the same (zero variance), so no test is possible")]
    ZeroVariance(&'static str),
    #[error("value {index} is not a finite number")]
    NonFinite { index: usize },
    #[error("the baseline mean is {0}; a ratio needs a positive baseline mean")]
    NonPositiveMean(f64),
    /// Fieller's set for a ratio whose baseline mean is not different from 0 at the level.
    #[error(
        "the baseline mean is too noisy (not different from 0): the ratio's confidence set is unbounded"
    )]
    UnboundedRatio,
    /// Fieller's set when the baseline mean is not different from 0 but the variant's is: two
    /// rays, every ratio up to `below` and every ratio from `above` (an exclusive set).
    #[error(
        "the baseline mean is too noisy (not different from 0): the ratio's confidence set is unbounded, two rays (up to {below:.4} and from {above:.4})"
    )]
    ExclusiveRatio { below: f64, above: f64 },
    #[error("{0}")]
    Invalid(String),
}

impl StatsError {
    /// Whether this is Fieller's unbounded set (every ratio, or two rays).
    pub fn unbounded_ratio(&self) -> bool {
        matches!(self, Self::UnboundedRatio | Self::ExclusiveRatio { .. })
    }

    /// The two rays' ends of an exclusive Fieller set.
    pub fn ratio_rays(&self) -> Option<(f64, f64)> {
        match *self {
            Self::ExclusiveRatio { below, above } => Some((below, above)),
            _ => None,
        }
    }
}

/// Check that every value is finite.
pub fn check_finite(xs: &[f64]) -> Result<(), StatsError> {
    match xs.iter().position(|x| !x.is_finite()) {
        Some(index) => Err(StatsError::NonFinite { index }),
        None => Ok(()),
    }
}
