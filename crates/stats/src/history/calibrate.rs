//! The null distribution of the whole series' largest statistic, by a seeded Monte Carlo of the
//! whole procedure (screening, noise factor, maximum over splits) on normal points with the
//! series' own standard errors and one level: the threshold then holds the false-alarm rate at
//! alpha for that length and those standard errors, whatever the asymptotics say.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::Config;
use super::segment::Fit;
use crate::StatsError;
use crate::dist::norm_ppf;

/// A standard normal draw.
pub(super) fn normal(rng: &mut ChaCha8Rng) -> f64 {
    norm_ppf(rng.random_range(1e-15..1.0 - 1e-15))
}

/// The simulations' seed: the configured one mixed with the series (FNV-1a over the bits of its
/// values and standard errors). The same series always gets the same simulations, and different
/// series get independent ones, so the Monte Carlo's own error in the threshold does not repeat
/// across every series of a store (with one shared set of simulations, a threshold that came out
/// low by chance would raise the false-alarm rate of all of them at once).
pub(super) fn series_seed(x: &[f64], se: &[f64], seed: u64) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ seed;
    for v in x.iter().chain(se) {
        for b in v.to_bits().to_le_bytes() {
            h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h
}

/// The simulated maxima, largest first.
pub(super) fn null_maxima(se: &[f64], seed: u64, cfg: &Config) -> Result<Vec<f64>, StatsError> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut x = vec![0.0; se.len()];
    let mut out = Vec::with_capacity(cfg.simulations);
    for _ in 0..cfg.simulations {
        for (xi, s) in x.iter_mut().zip(se) {
            *xi = s * normal(&mut rng);
        }
        out.push(Fit::new(&x, se, cfg).whole_statistic());
    }
    out.sort_unstable_by(|a, b| b.total_cmp(a));
    if out.first().is_none_or(|m| *m <= 0.0) {
        return Err(StatsError::Invalid(
            "the series has too few points left after screening outliers to place a change"
                .to_string(),
        ));
    }
    Ok(out)
}

/// The statistic to exceed: T > threshold exactly when the Monte Carlo p-value
/// (1 + #{null >= T}) / (B + 1) is at most alpha.
pub(super) fn threshold(null: &[f64], alpha: f64) -> f64 {
    let allowed = (alpha * (null.len() + 1) as f64 + 1e-9).floor() as usize - 1;
    null[allowed.min(null.len() - 1)]
}

pub(super) fn p_value(null: &[f64], t: f64) -> f64 {
    let at_least = null.iter().take_while(|&&m| m >= t).count();
    (1 + at_least) as f64 / (null.len() + 1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threshold_and_p_value_agree() {
        let null: Vec<f64> = (1..=99).rev().map(|i| i as f64).collect();
        let thr = threshold(&null, 0.05);
        assert_eq!(thr, 95.0);
        for t in [94.0, 95.0, 95.5, 96.0, 200.0] {
            assert_eq!(t > thr, p_value(&null, t) <= 0.05, "t {t}");
        }
    }
}
