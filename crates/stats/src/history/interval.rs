//! Each change's intervals. Size: the difference of the weighted means of the segments on either
//! side (up to the neighbouring changes), with its normal interval. Location: the
//! likelihood-ratio set {k : T(k_hat) - T(k) <= c} of the split's profile on that stretch, with
//! c the 1 - alpha quantile of T*(k*_hat) - T*(k_hat) over a parametric bootstrap from the fitted
//! two-level model (the distribution of the profile drop at the true location).

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::calibrate::normal;
use super::segment::Fit;
use super::statistic::Prefix;
use super::{Change, Config};
use crate::dist::norm_ppf;

/// The changes at `splits` (indices into the kept points, in order), with their intervals.
pub(super) fn changes(fit: &Fit, splits: &[usize], cfg: &Config, seed: u64) -> Vec<Change> {
    let z = norm_ppf(1.0 - cfg.alpha / 2.0);
    splits
        .iter()
        .enumerate()
        .map(|(j, &k)| {
            let a = if j == 0 { 0 } else { splits[j - 1] };
            let b = splits.get(j + 1).copied().unwrap_or(fit.x.len());
            let (wl, ml) = fit.prefix.level(a, k);
            let (wr, mr) = fit.prefix.level(k, b);
            let size = mr - ml;
            let half = z * (1.0 / wl + 1.0 / wr).sqrt();
            let (lo, hi) = location(fit, (a, k, b), (ml, mr), (cfg, seed), j as u64);
            Change {
                index: fit.kept[k],
                location: (fit.kept[lo - 1] + 1, fit.kept[hi]),
                size,
                size_interval: (size - half, size + half),
                statistic: fit.prefix.split(a, k, b),
            }
        })
        .collect()
}

/// The first and last split of [a, b) in the location set (indices into the kept points).
fn location(
    fit: &Fit,
    (a, k, b): (usize, usize, usize),
    levels: (f64, f64),
    (cfg, seed): (&Config, u64),
    stream: u64,
) -> (usize, usize) {
    let c = profile_quantile(&fit.se[a..b], k - a, levels, (cfg, seed), stream);
    let top = fit.prefix.split(a, k, b);
    let set: Vec<usize> = Prefix::candidates(a, b)
        .filter(|&m| top - fit.prefix.split(a, m, b) <= c)
        .collect();
    // k itself is always in the set (its drop is 0).
    (set[0], set[set.len() - 1])
}

/// The 1 - alpha quantile of the profile drop at the true split, over series simulated with
/// levels `ml` before `k` and `mr` from it, and the points' standard errors.
fn profile_quantile(
    se: &[f64],
    k: usize,
    (ml, mr): (f64, f64),
    (cfg, seed): (&Config, u64),
    stream: u64,
) -> f64 {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(stream + 1);
    let n = se.len();
    let mut x = vec![0.0; n];
    let mut drops: Vec<f64> = (0..cfg.simulations)
        .map(|_| {
            for (i, (xi, s)) in x.iter_mut().zip(se).enumerate() {
                *xi = if i < k { ml } else { mr } + s * normal(&mut rng);
            }
            let p = Prefix::new(&x, se);
            let (_, best) = p.best(0, n).unwrap_or((k, 0.0));
            best - p.split(0, k, n)
        })
        .collect();
    drops.sort_unstable_by(f64::total_cmp);
    let at = ((1.0 - cfg.alpha) * (drops.len() + 1) as f64).ceil() as usize;
    drops[at.clamp(1, drops.len()) - 1]
}
