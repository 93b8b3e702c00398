//! The differential of two variants' profiles: for each symbol, the change of its share of
//! samples from A's profiled runs to B's, with a percentile bootstrap interval over runs and a
//! Welch p-value, adjusted by Benjamini-Hochberg over every symbol compared (docs/profile.md).
//!
//! A run is the unit: shares are computed per profiled run, so the interval reflects how much
//! the profile moves from run to run, not the (much smaller) sampling error of one long
//! recording. The interval is the percentile interval of mean(B) - mean(A) over resamples that
//! draw each variant's runs with replacement; the same resampled runs serve every symbol. The
//! p-value is Welch's (better calibrated than a bootstrap p-value with five runs a side), and
//! a symbol is *named* when its BH-adjusted p-value is below the level.

use super::StatsError;
use super::multiple::benjamini_hochberg;
use super::welch::welch;
use abperf_model::describe::{mean, quantile_sorted};
use abperf_model::profile::{Profile, ShareKind};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;
use serde::Serialize;
use std::collections::BTreeSet;

/// How a differential is computed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Options {
    pub kind: ShareKind,
    /// Confidence level of the intervals (0.95).
    pub level: f64,
    /// False discovery rate at which a symbol is named (0.05).
    pub fdr: f64,
    pub resamples: usize,
    pub seed: u64,
    /// Symbols whose mean share (over both variants' runs) is below this are not compared.
    pub min_share: f64,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            kind: ShareKind::SelfShare,
            level: 0.95,
            fdr: 0.05,
            resamples: 2000,
            seed: 1,
            min_share: 0.002,
        }
    }
}

/// One symbol's change of share.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SymbolDiff {
    pub symbol: String,
    /// Mean share over A's and B's profiled runs (fractions of samples).
    pub share_a: f64,
    pub share_b: f64,
    /// share_b - share_a, and its bootstrap interval.
    pub diff: f64,
    pub low: f64,
    pub high: f64,
    /// Welch's two-sided p-value and the Benjamini-Hochberg adjusted one.
    pub p: f64,
    pub q: f64,
    /// q below the false discovery rate.
    pub named: bool,
}

/// The differential of two variants' profiles.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProfileDiff {
    pub kind: ShareKind,
    pub level: f64,
    pub fdr: f64,
    pub resamples: usize,
    pub runs_a: usize,
    pub runs_b: usize,
    /// Every symbol compared, named ones first, then by |diff| (largest first), then by name.
    pub symbols: Vec<SymbolDiff>,
}

impl ProfileDiff {
    /// The symbols whose change is named at the false discovery rate.
    pub fn named(&self) -> impl Iterator<Item = &SymbolDiff> {
        self.symbols.iter().filter(|s| s.named)
    }
}

/// Shares of `symbols` per run: `out[s][r]` is run r's share of symbol s (0 where not kept).
fn matrix(profiles: &[Profile], symbols: &[&str], kind: ShareKind) -> Vec<Vec<f64>> {
    let per_run: Vec<_> = profiles.iter().map(|p| p.shares(kind)).collect();
    symbols
        .iter()
        .map(|s| {
            per_run
                .iter()
                .map(|m| m.get(s).copied().unwrap_or(0.0))
                .collect()
        })
        .collect()
}

/// The differential of B's profiled runs against A's.
pub fn differential(
    a: &[Profile],
    b: &[Profile],
    opts: Options,
) -> Result<ProfileDiff, StatsError> {
    for (what, x) in [("baseline profiles", a), ("variant profiles", b)] {
        if x.len() < 2 {
            return Err(StatsError::TooFew {
                what,
                need: 2,
                got: x.len(),
            });
        }
    }
    let all: BTreeSet<&str> = a
        .iter()
        .chain(b)
        .flat_map(|p| p.shares(opts.kind).into_keys())
        .collect();
    let all: Vec<&str> = all.into_iter().collect();
    let (ma, mb) = (matrix(a, &all, opts.kind), matrix(b, &all, opts.kind));
    let mut rows = Vec::new();
    for (i, s) in all.iter().enumerate() {
        let pooled =
            (ma[i].iter().sum::<f64>() + mb[i].iter().sum::<f64>()) / (a.len() + b.len()) as f64;
        if pooled < opts.min_share {
            continue;
        }
        // Equal shares in every run (a symbol on every stack): nothing to test.
        let Ok(w) = welch(&ma[i], &mb[i]) else {
            continue;
        };
        rows.push((*s, i, w.p));
    }
    let ps: Vec<f64> = rows.iter().map(|r| r.2).collect();
    let qs = benjamini_hochberg(&ps);
    let boots = resample(
        &ma,
        &mb,
        &rows.iter().map(|r| r.1).collect::<Vec<_>>(),
        opts,
    );
    let tail = (1.0 - opts.level) / 2.0;
    let mut symbols: Vec<SymbolDiff> = rows
        .iter()
        .zip(qs)
        .zip(boots)
        .map(|(((s, i, p), q), mut d)| {
            d.sort_by(f64::total_cmp);
            let (share_a, share_b) = (mean(&ma[*i]), mean(&mb[*i]));
            SymbolDiff {
                symbol: s.to_string(),
                share_a,
                share_b,
                diff: share_b - share_a,
                low: quantile_sorted(&d, tail),
                high: quantile_sorted(&d, 1.0 - tail),
                p: *p,
                q,
                named: q < opts.fdr,
            }
        })
        .collect();
    symbols.sort_by(|x, y| {
        y.named
            .cmp(&x.named)
            .then(y.diff.abs().total_cmp(&x.diff.abs()))
            .then_with(|| x.symbol.cmp(&y.symbol))
    });
    Ok(ProfileDiff {
        kind: opts.kind,
        level: opts.level,
        fdr: opts.fdr,
        resamples: opts.resamples,
        runs_a: a.len(),
        runs_b: b.len(),
        symbols,
    })
}

/// Resampled mean(B) - mean(A) of each row in `rows`; the same drawn runs for every row.
fn resample(ma: &[Vec<f64>], mb: &[Vec<f64>], rows: &[usize], opts: Options) -> Vec<Vec<f64>> {
    let mut rng = ChaCha20Rng::seed_from_u64(opts.seed);
    let mut out = vec![Vec::with_capacity(opts.resamples); rows.len()];
    let (na, nb) = (
        ma.first().map_or(0, Vec::len),
        mb.first().map_or(0, Vec::len),
    );
    let (mut ia, mut ib) = (vec![0; na], vec![0; nb]);
    for _ in 0..opts.resamples {
        ia.iter_mut().for_each(|x| *x = rng.random_range(0..na));
        ib.iter_mut().for_each(|x| *x = rng.random_range(0..nb));
        for (o, &r) in out.iter_mut().zip(rows) {
            let sa: f64 = ia.iter().map(|&j| ma[r][j]).sum::<f64>() / na as f64;
            let sb: f64 = ib.iter().map(|&j| mb[r][j]).sum::<f64>() / nb as f64;
            o.push(sb - sa);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use abperf_model::profile::Counts;
    use rand::Rng;

    /// A run of `n` samples: `hot` takes about `p_hot` of them, the rest spread over `main`
    /// and 20 small symbols; the draws are seeded.
    fn run(rng: &mut ChaCha20Rng, p_hot: f64, n: usize) -> Profile {
        let mut c = Counts::default();
        for _ in 0..n {
            let u: f64 = rng.random();
            if u < p_hot {
                c.add_stack(["hot", "main"]);
            } else if u < p_hot + 0.3 {
                c.add_stack(["main"]);
            } else {
                let k = rng.random_range(0..20);
                let name = format!("f{k}");
                c.add_stack([name.as_str(), "main"]);
            }
        }
        c.profile("cpu-clock", 200)
    }

    fn runs(seed: u64, p_a: f64, p_b: f64, k: usize) -> (Vec<Profile>, Vec<Profile>) {
        let mut rng = ChaCha20Rng::seed_from_u64(seed);
        let a = (0..k).map(|_| run(&mut rng, p_a, 2000)).collect();
        let b = (0..k).map(|_| run(&mut rng, p_b, 2000)).collect();
        (a, b)
    }

    #[test]
    fn a_symbol_that_takes_more_tops_the_differential() {
        for seed in 0..5 {
            let (a, b) = runs(seed, 0.10, 0.16, 5);
            let d = differential(&a, &b, Options::default()).unwrap();
            let top = &d.symbols[0];
            assert_eq!(top.symbol, "hot", "seed {seed}: {:?}", d.symbols);
            assert!(top.named && top.low > 0.0, "seed {seed}: {top:?}");
            assert!((top.diff - 0.06).abs() < 0.02, "{top:?}");
        }
    }

    #[test]
    fn an_a_a_rarely_names_a_symbol() {
        let named = (0..40)
            .filter(|&seed| {
                let (a, b) = runs(100 + seed, 0.1, 0.1, 5);
                let d = differential(&a, &b, Options::default()).unwrap();
                d.named().count() > 0
            })
            .count();
        // BH at 5% under the complete null bounds the chance of naming any symbol by 5%.
        assert!(named <= 5, "{named} of 40 A/A differentials named a symbol");
    }

    #[test]
    fn inclusive_shares_leave_out_symbols_on_every_stack() {
        let (a, b) = runs(7, 0.10, 0.16, 4);
        let opts = Options {
            kind: ShareKind::Inclusive,
            ..Options::default()
        };
        let d = differential(&a, &b, opts).unwrap();
        assert!(d.symbols.iter().all(|s| s.symbol != "main"));
        assert_eq!(d.symbols[0].symbol, "hot");
    }

    #[test]
    fn intervals_hold_the_difference_and_are_seeded() {
        let (a, b) = runs(9, 0.10, 0.12, 6);
        let d1 = differential(&a, &b, Options::default()).unwrap();
        let d2 = differential(&a, &b, Options::default()).unwrap();
        assert_eq!(d1, d2);
        for s in &d1.symbols {
            assert!(s.low <= s.diff + 1e-12 && s.diff <= s.high + 1e-12, "{s:?}");
            assert!(s.q >= s.p);
        }
    }

    #[test]
    fn too_few_runs_is_an_error() {
        let (a, b) = runs(1, 0.1, 0.1, 1);
        assert!(matches!(
            differential(&a, &b, Options::default()),
            Err(StatsError::TooFew { .. })
        ));
    }
}
