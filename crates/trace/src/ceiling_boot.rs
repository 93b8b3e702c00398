//! The ceiling advisor's bootstrap: every micro configuration's samples resampled (medians
//! retaken, the curve refitted with and without the constraint that no cost is negative) and
//! every flush count drawn from a Poisson distribution, seeded.

use super::ceiling_counts::{Counts, Sized};
use super::ceiling_inputs::{
    Options, Pairs, Params, Rates, Samples, fit, miss_per_page, net_medians, pct,
};
use abperf_model::ceiling::Estimate;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn resample(v: &[f64], rng: &mut ChaCha8Rng) -> Vec<f64> {
    (0..v.len())
        .map(|_| v[rng.random_range(0..v.len())])
        .collect()
}

fn resample_pairs(v: &Pairs, rng: &mut ChaCha8Rng) -> Pairs {
    v.iter()
        .map(|(n, t, e)| (*n, resample(t, rng), resample(e, rng)))
        .collect()
}

/// Poisson draw (Knuth below 30, normal approximation above). Not statrs's `Poisson`: its
/// sampler implements rand 0.10's traits, and this workspace's generators are rand 0.9's.
fn poisson(l: f64, rng: &mut ChaCha8Rng) -> f64 {
    if l <= 0.0 {
        return 0.0;
    }
    if l < 30.0 {
        let lim = (-l).exp();
        let (mut k, mut p) = (0.0, 1.0);
        loop {
            p *= rng.random::<f64>();
            if p <= lim {
                return k;
            }
            k += 1.0;
        }
    }
    // Box-Muller
    let u1: f64 = rng.random::<f64>().max(1e-300);
    let u2: f64 = rng.random();
    let z = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
    (l + z * l.sqrt()).round().max(0.0)
}

fn poisson_sized(s: &mut Sized, rng: &mut ChaCha8Rng) {
    for v in s.by_size.values_mut() {
        *v = poisson(*v, rng);
    }
    s.always_full = poisson(s.always_full, rng);
}

/// An estimate with the 2.5% and 97.5% percentiles of its replicates (the value alone
/// without replicates).
/// The median of the replicates with their 2.5% and 97.5% percentiles: the headline and its band
/// from one distribution, so the value is always inside its band (`value` without replicates).
pub(crate) fn median_estimate(value: f64, reps: &mut [f64]) -> Estimate {
    let mut e = estimate(value, reps);
    if !reps.is_empty() {
        e.value = pct(reps, 0.5);
    }
    e
}

pub(crate) fn estimate(value: f64, reps: &mut [f64]) -> Estimate {
    if reps.is_empty() {
        return Estimate {
            value,
            low: value,
            high: value,
        };
    }
    Estimate {
        value,
        low: pct(reps, 0.025),
        high: pct(reps, 0.975),
    }
}

/// The replicates of one set of parameters: p, F, R, z, a.
#[derive(Default)]
pub(crate) struct ParamReps {
    pub per_page: Vec<f64>,
    pub full_extra: Vec<f64>,
    pub refill: Vec<f64>,
    pub zap: Vec<f64>,
    pub fixed: Vec<f64>,
}

impl ParamReps {
    fn push(&mut self, p: &Params) {
        self.per_page.push(p.t.p);
        self.full_extra.push(p.t.f);
        self.refill.push(p.refill);
        self.zap.push(p.t.z);
        self.fixed.push(p.t.a);
    }
}

/// The bootstrap replicates: per evaluated ceiling its cost and its cost above the best, and
/// per replicate the best ceiling and the model's parameters (constrained and not).
pub(crate) struct Replicates {
    pub cost: Vec<Vec<f64>>,
    pub above: Vec<Vec<f64>>,
    pub best: Vec<f64>,
    pub crossover: Vec<f64>,
    pub constrained: ParamReps,
    pub unconstrained: ParamReps,
    /// Per count of remote CPUs (as in `Samples::shootdown`): the sender's extra cost.
    pub shootdown: Vec<Vec<f64>>,
}

/// What stays fixed across the replicates.
pub(crate) struct Setup<'a> {
    pub s: &'a Samples,
    pub cnt: &'a Counts,
    pub cs: &'a [u64],
    pub c0: u64,
    pub ws: u64,
    pub seconds: f64,
    /// The recommended ceiling (the point estimate's best): the cost "above the best" of each
    /// replicate is its cost at a ceiling minus its cost at this one, the contrast the headline
    /// states.
    pub best: u64,
}

impl Replicates {
    /// `opts.resamples` replicates (seeded).
    pub fn draw(x: &Setup, opts: &Options, best_of: fn(&[(u64, f64)]) -> u64) -> Replicates {
        let s = x.s;
        let mut rng = ChaCha8Rng::seed_from_u64(opts.seed);
        let mut r = Replicates {
            cost: vec![Vec::new(); x.cs.len()],
            above: vec![Vec::new(); x.cs.len()],
            best: Vec::new(),
            crossover: Vec::new(),
            constrained: ParamReps::default(),
            unconstrained: ParamReps::default(),
            shootdown: vec![Vec::new(); s.shootdown.len()],
        };
        for _ in 0..opts.resamples {
            let fl = resample_pairs(&s.flush, &mut rng);
            let rf = resample_pairs(&s.refill, &mut rng);
            let ms = s
                .miss
                .as_ref()
                .map(|(n, a, d)| (*n, resample(a, &mut rng), resample(d, &mut rng)));
            let sd = resample_pairs(&s.shootdown, &mut rng);
            let (p, raw) = fit(
                &net_medians(&fl),
                &net_medians(&rf),
                miss_per_page(&ms),
                x.c0,
                x.ws,
            );
            let mut c = x.cnt.clone();
            for k in [&mut c.local, &mut c.received, &mut c.sent] {
                poisson_sized(k, &mut rng);
            }
            let rates = Rates::new(&c, x.seconds);
            let curve: Vec<(u64, f64)> = x.cs.iter().map(|v| (*v, p.cost(&rates, *v))).collect();
            let at_best = curve
                .iter()
                .find(|v| v.0 == x.best)
                .map_or(f64::NAN, |v| v.1);
            for (i, (_, v)) in curve.iter().enumerate() {
                r.cost[i].push(*v);
                r.above[i].push(v - at_best);
            }
            r.best.push(best_of(&curve) as f64);
            r.crossover.push(p.crossover());
            r.constrained.push(&p);
            r.unconstrained.push(&raw);
            for (i, (_, d)) in net_medians(&sd).iter().enumerate() {
                r.shootdown[i].push(*d);
            }
        }
        r
    }
}
