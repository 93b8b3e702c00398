//! `cargo bench --bench levels`: seeded simulations where the truth is known (issue 26).
//!
//! 1. Boot-level coverage: A/A pairs of 8 boots x 5 runs per variant at boot ICC 0, 0.3 and 0.8;
//!    the verdict's 95% interval, computed as `compare` computes it on boot means (the same
//!    `stats::compare::compare` on `Dataset::level_means`), must cover a ratio of 1 in 95% +- 2%
//!    of pairs; the interval from runs taken as independent is shown beside it.
//! 2. A/A false-call rate of every printed call: 2,000 pairs per distribution through
//!    `stats::compare::compare` with `compare`'s default options (bootstrap included); a pair
//!    counts when the headline calls a difference (faster or slower) or a DISAGREE flag is
//!    printed.
//! 3. The sequential rule (`--until-decided`, 4 looks, 40 runs): the share of 100,000 A/A
//!    experiments that end in a call.
//! 4. The run order (`drift_screen`): two-sample pairs in an interleaved run order, the A/A
//!    call rate of the ANCOVA with run index (primary whenever the order is known) overall and
//!    where the Mann-Kendall screen fires, and its power with no drift, a linear drift and a step
//!    against the old screen -> ANCOVA design and Welch alone. `cargo bench --bench levels --
//!    drift` runs this section alone.
//! 5. Family tables (`family_tables`): the share of A/A tables of seed 001's design at alpha
//!    0.01 that print any claim (headline, DISAGREE, variability sentence, outlier recheck).
//!    `cargo bench --bench levels -- family` runs this section alone.
//!
//! `cargo test --all-targets` runs it once as a smoke test with a few pairs and no checks.

use abperf::model::{Dataset, Labels, Level, Metric, Run, Variant};
use abperf::stats::compare::{Options, Sample, apply_correction, compare};
use abperf::stats::dist::norm_ppf;
use abperf::stats::levels::Target;
use abperf::stats::multiple::Correction;
use abperf::stats::replicated;
use abperf::stats::sequential::{Plan, simulate};
use abperf::stats::verdict::Verdict;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const TARGET: Target = Target {
    effect_pct: 0.5,
    alpha: 0.05,
    power: 0.8,
};

struct Draw(ChaCha8Rng);

impl Draw {
    fn normal(&mut self) -> f64 {
        norm_ppf(self.0.random_range(1e-15..1.0 - 1e-15))
    }
    fn t3(&mut self) -> f64 {
        let chi2: f64 = (0..3).map(|_| self.normal().powi(2)).sum();
        self.normal() / (chi2 / 3.0).sqrt()
    }
    fn poisson(&mut self, lambda: f64) -> f64 {
        // Knuth: multiply uniforms until the product drops below e^-lambda.
        let limit = (-lambda).exp();
        let (mut k, mut p) = (0.0, 1.0);
        loop {
            p *= self.0.random::<f64>();
            if p <= limit {
                return k;
            }
            k += 1.0;
        }
    }
}

/// A dataset of two variants x `boots` boots x `runs` runs, labelled by boot: boot SD `sb`, run
/// SD `sw`, both variants with mean 1000.
fn boots(d: &mut Draw, boots: usize, runs: usize, sb: f64, sw: f64) -> Dataset {
    let mut out = Vec::new();
    for v in 0..2 {
        for b in 0..boots {
            let boot = sb * d.normal();
            for _ in 0..runs {
                let seq = out.len() as u32;
                out.push(Run {
                    labels: Labels {
                        boot: Some(format!("b{b}")),
                        ..Labels::default()
                    },
                    ..Run::ok(
                        seq,
                        v,
                        vec![Metric::new(
                            "wall_ns",
                            1000.0 + boot + sw * d.normal(),
                            "ns",
                        )],
                    )
                });
            }
        }
    }
    Dataset::new(
        vec![],
        vec![Variant::named("a"), Variant::named("b")],
        out,
        "simulated".into(),
    )
}

fn values(ds: &Dataset, v: usize) -> Vec<f64> {
    ds.runs
        .iter()
        .filter(|r| r.variant == v)
        .filter_map(|r| r.value("wall_ns"))
        .collect()
}

fn covers(a: &[f64], b: &[f64], opts: &Options) -> bool {
    let c = compare("wall_ns", Sample::new("a", a), Sample::new("b", b), opts).unwrap();
    c.ratio_ci.is_some_and(|[lo, hi]| lo <= 1.0 && 1.0 <= hi)
}

fn coverage(pairs: usize, timed: bool) {
    println!("Boot-level 95% CI coverage, A/A, 8 boots x 5 runs per variant, {pairs} pairs:");
    println!(
        "  {:>4}  {:>16}  {:>22}  {:>24}",
        "ICC", "boot means", "levels section", "runs as independent"
    );
    let opts = Options {
        resamples: 0,
        ..Options::default()
    };
    for (i, icc) in [0.0, 0.3, 0.8].into_iter().enumerate() {
        let mut d = Draw(ChaCha8Rng::seed_from_u64(2600 + i as u64));
        let (sb, sw) = ((icc * 100.0f64).sqrt(), ((1.0 - icc) * 100.0f64).sqrt());
        let (mut top, mut section, mut naive) = (0usize, 0usize, 0usize);
        for _ in 0..pairs {
            let ds = boots(&mut d, 8, 5, sb, sw);
            let means = ds.level_means(Level::Boot);
            top += usize::from(covers(&values(&means, 0), &values(&means, 1), &opts));
            naive += usize::from(covers(&values(&ds, 0), &values(&ds, 1), &opts));
            // The replication section's own interval (Fieller on boot means).
            let r = replicated::analyse(&ds, "wall_ns", 0, TARGET).unwrap();
            let ci = r.comparisons[0].ratio_ci.as_ref().unwrap();
            section += usize::from(ci.low <= 1.0 && 1.0 <= ci.high);
        }
        let share = |k: usize| 100.0 * k as f64 / pairs as f64;
        let (t, n) = (top as f64 / pairs as f64, naive as f64 / pairs as f64);
        println!(
            "  {icc:>4.1}  {:>15.2}%  {:>21.2}%  {:>23.2}%",
            100.0 * t,
            share(section),
            100.0 * n
        );
        if timed {
            assert!(
                (0.93..=0.97).contains(&t),
                "boot-level coverage {t} at ICC {icc}"
            );
        }
    }
}

/// One A/A pair of `n` values per side from `draw`: whether any call is printed, and whether
/// it is a DISAGREE flag without a headline call.
fn aa(draw: &mut dyn FnMut() -> f64, n: usize, opts: &Options) -> (bool, bool) {
    let a: Vec<f64> = (0..n).map(|_| draw()).collect();
    let b: Vec<f64> = (0..n).map(|_| draw()).collect();
    let c = compare("m", Sample::new("a", &a), Sample::new("b", &b), opts).unwrap();
    let headline = matches!(c.verdict, Verdict::Faster | Verdict::Slower);
    (
        headline || c.disagree.is_some(),
        !headline && c.disagree.is_some(),
    )
}

fn false_calls(pairs: usize, timed: bool) {
    println!(
        "\nA/A rate of any printed call (headline or DISAGREE), compare's defaults, {pairs} pairs:"
    );
    let cases: [(&str, usize, bool); 6] = [
        ("normal n=10", 10, false),
        ("normal n=30", 30, false),
        ("lognormal n=30", 30, false),
        ("bimodal n=30", 30, false),
        ("t3 n=30", 30, false),
        ("Poisson(20) n=30", 30, true),
    ];
    for (i, (name, n, count)) in cases.into_iter().enumerate() {
        let mut d = Draw(ChaCha8Rng::seed_from_u64(2700 + i as u64));
        let opts = Options {
            count,
            seed: 2700 + i as u64,
            ..Options::default()
        };
        let mut draw: Box<dyn FnMut() -> f64> = match i {
            0 | 1 => Box::new(move || 100.0 + d.normal()),
            2 => Box::new(move || 100.0 * (0.5 * d.normal()).exp()),
            3 => Box::new(move || {
                let hump = if d.0.random::<bool>() { 10.0 } else { 0.0 };
                100.0 + hump + d.normal()
            }),
            4 => Box::new(move || 100.0 + d.t3()),
            _ => Box::new(move || d.poisson(20.0)),
        };
        let (mut any, mut flags) = (0usize, 0usize);
        for _ in 0..pairs {
            let (a, f) = aa(&mut draw, n, &opts);
            any += usize::from(a);
            flags += usize::from(f);
        }
        let rate = any as f64 / pairs as f64;
        println!(
            "  {name:<18} {:>6.2}% ({any} of {pairs}; {flags} by a flag alone)",
            100.0 * rate
        );
        if timed {
            // 5% + 3 binomial SDs of 2,000 pairs (0.49 points).
            assert!(rate <= 0.065, "{name}: A/A false calls {rate}");
        }
    }
}

/// How the runs of a two-sample pair in one schedule drift: none, linear (every run `x` times
/// its position / the last position higher) or a step (runs in the second half `x` higher).
#[derive(Clone, Copy)]
enum Shape {
    Flat,
    Linear(f64),
    Step(f64),
}

impl Shape {
    fn factor(self, i: usize, last: usize) -> f64 {
        match self {
            Shape::Flat => 1.0,
            Shape::Linear(x) => 1.0 + x * i as f64 / last as f64,
            Shape::Step(x) if 2 * i > last => 1.0 + x,
            Shape::Step(_) => 1.0,
        }
    }
}

/// What each design printed for one ordered pair: whether `compare` (the ANCOVA with run index,
/// primary whenever the run order is known) called a difference (headline or DISAGREE), whether
/// the Mann-Kendall screen found drift at alpha, whether Welch alone (`welch_only`) called one,
/// and whether the old design (Welch, switched to the ANCOVA on a Mann-Kendall hit) did.
struct Calls {
    ancova: bool,
    screen_hit: bool,
    welch: bool,
    screened: bool,
}

/// One two-sample pair measured in an interleaved run order (A at even positions, B at odd),
/// each run `1 + 0.01 x normal`, B's runs `effect` higher, drifting by `shape`.
fn ordered_pair(d: &mut Draw, n: usize, effect: f64, shape: Shape, opts: &Options) -> Calls {
    let (mut a, mut b, mut ia, mut ib) = (vec![], vec![], vec![], vec![]);
    for i in 0..2 * n {
        let x = (1.0 + 0.01 * d.normal()) * shape.factor(i, 2 * n - 1);
        if i % 2 == 0 {
            a.push(1000.0 * x);
            ia.push(i as f64);
        } else {
            b.push(1000.0 * x * (1.0 + effect));
            ib.push(i as f64);
        }
    }
    let (sa, sb) = (
        Sample::with_order("a", &a, &ia),
        Sample::with_order("b", &b, &ib),
    );
    let call = |c: &abperf::stats::compare::Comparison| {
        matches!(c.verdict, Verdict::Faster | Verdict::Slower) || c.disagree.is_some()
    };
    let c = compare("m", sa, sb, opts).unwrap();
    let welch = compare(
        "m",
        sa,
        sb,
        &Options {
            welch_only: true,
            ..opts.clone()
        },
    )
    .unwrap();
    let screen_hit = welch.drift_p.is_some_and(|p| p < opts.alpha);
    // The old design: the ANCOVA's verdict where the screen fired, Welch's elsewhere.
    let screened = if screen_hit { call(&c) } else { call(&welch) };
    Calls {
        ancova: call(&c),
        screen_hit,
        welch: call(&welch),
        screened,
    }
}

/// 4. Two-sample pairs with a run order (issue 45): the A/A rate of any printed call (headline or
///    DISAGREE) of `compare` (the ANCOVA with run index on every ordered pair), also among the
///    pairs where the Mann-Kendall screen fires; and the power for +1% with no drift, a +2%
///    linear drift and a +2% step halfway, against the old screen -> ANCOVA design and Welch
///    alone. Bootstrap off (resamples 0): the call and the DISAGREE flag do not use it.
fn drift_screen(pairs: usize, timed: bool) {
    println!("\nRun order: n=20+20 interleaved, CV 1%, {pairs} pairs each, seed 4500:");
    for alpha in [0.05, 0.01] {
        let opts = Options {
            alpha,
            resamples: 0,
            ..Options::default()
        };
        for (name, effect, shape) in [
            ("A/A, no drift", 0.0, Shape::Flat),
            ("A/A, +2% drift", 0.0, Shape::Linear(0.02)),
            ("+1%, no drift", 0.01, Shape::Flat),
            ("+1%, +2% drift", 0.01, Shape::Linear(0.02)),
            ("+1%, +2% step", 0.01, Shape::Step(0.02)),
        ] {
            let mut d = Draw(ChaCha8Rng::seed_from_u64(4500));
            // [ANCOVA always (compare), old screen -> ANCOVA, Welch alone] x [all pairs, pairs
            // the screen fired on].
            let (mut calls, mut hits) = ([[0usize; 2]; 3], 0usize);
            for _ in 0..pairs {
                let k = ordered_pair(&mut d, 20, effect, shape, &opts);
                hits += usize::from(k.screen_hit);
                for (j, c) in [k.ancova, k.screened, k.welch].into_iter().enumerate() {
                    calls[j][0] += usize::from(c);
                    calls[j][1] += usize::from(c && k.screen_hit);
                }
            }
            let pct = |x: usize, of: usize| 100.0 * x as f64 / of.max(1) as f64;
            println!(
                "  alpha {alpha:<4} {name:<15} ANCOVA always {:>6.2}%, old screen->ANCOVA {:>6.2}%, \
                 Welch alone {:>6.2}%; of the {hits} pairs the screen fires on: {:.2}%, {:.2}%, {:.2}%",
                pct(calls[0][0], pairs),
                pct(calls[1][0], pairs),
                pct(calls[2][0], pairs),
                pct(calls[0][1], hits),
                pct(calls[1][1], hits),
                pct(calls[2][1], hits),
            );
            if timed && effect == 0.0 {
                // alpha + 3 binomial SDs of `pairs` pairs.
                let limit = alpha + 3.0 * (alpha * (1.0 - alpha) / pairs as f64).sqrt();
                let rate = calls[0][0] as f64 / pairs as f64;
                assert!(rate <= limit, "{name} at {alpha}: A/A {rate} > {limit}");
            }
        }
    }
}

/// 5. Family tables of seed 001's design on A/A data (issue 45): 6 families of 3 variants x 31
///    lognormal runs (sigma 0.3), every pair on the mean and the variability, Holm over m=36 at
///    alpha 0.01, bootstrap on (1,000 resamples); a table counts when any line prints a claim:
///    a FASTER/SLOWER headline, a DISAGREE line, a variability sentence, or a trimmed-means
///    recheck saying a difference. Once without a run order (Welch), once with the 3 variants
///    interleaved (the ANCOVA with run index primary). The data are drawn from seed 4501.
fn family_tables(tables: usize, timed: bool) {
    println!(
        "\nA/A family tables at alpha 0.01 (6 families x 3 variants x 31 runs, Holm m=36), \
         {tables} tables each:"
    );
    for ordered in [false, true] {
        let mut d = Draw(ChaCha8Rng::seed_from_u64(4501));
        let opts = Options {
            alpha: 0.01,
            resamples: 1000,
            seed: 4501,
            ..Options::default()
        };
        let order: [Vec<f64>; 3] =
            std::array::from_fn(|k| (0..31).map(|i| (3 * i + k) as f64).collect());
        let (mut with_claim, mut kinds, mut by_ancova) = (0usize, [0usize; 4], 0usize);
        for _ in 0..tables {
            let mut comps = Vec::new();
            for _family in 0..6 {
                let v: [Vec<f64>; 3] =
                    std::array::from_fn(|_| (0..31).map(|_| (0.3 * d.normal()).exp()).collect());
                for (i, j) in [(0, 1), (0, 2), (1, 2)] {
                    let (a, b) = if ordered {
                        (
                            Sample::with_order("A", &v[i], &order[i]),
                            Sample::with_order("B", &v[j], &order[j]),
                        )
                    } else {
                        (Sample::new("A", &v[i]), Sample::new("B", &v[j]))
                    };
                    comps.push(compare("t", a, b, &opts).unwrap());
                }
            }
            apply_correction(&mut comps, Correction::Holm, true);
            let mut any = false;
            for c in &comps {
                by_ancova += usize::from(c.evidence.method == "ANCOVA");
                let called = matches!(c.verdict, Verdict::Faster | Verdict::Slower);
                let recheck = c
                    .details
                    .without_severe_outliers
                    .as_ref()
                    .is_some_and(|r| r.changed && !called);
                let claims = [
                    called,
                    c.disagree.is_some(),
                    c.variability_text().is_some(),
                    recheck,
                ];
                for (k, x) in claims.into_iter().enumerate() {
                    kinds[k] += usize::from(x);
                }
                any |= claims.contains(&true);
            }
            with_claim += usize::from(any);
        }
        let rate = with_claim as f64 / tables as f64;
        println!(
            "  {:<28} {:>5.2}% of tables print a claim ({with_claim} of {tables}; lines: {} \
             headline, {} DISAGREE, {} variability, {} recheck; {by_ancova} of {} comparisons \
             by the ANCOVA)",
            if ordered {
                "run order"
            } else {
                "no run order (Welch)"
            },
            100.0 * rate,
            kinds[0],
            kinds[1],
            kinds[2],
            kinds[3],
            18 * tables
        );
        if timed {
            // 1% + 3 binomial SDs of `tables` tables.
            let limit = 0.01 + 3.0 * (0.01 * 0.99 / tables as f64).sqrt();
            assert!(rate <= limit, "family tables: {rate} > {limit}");
        }
    }
}

fn main() {
    let timed = std::env::args().any(|a| a == "--bench");
    let pairs = if timed { 2000 } else { 10 };
    let only = |name: &str| std::env::args().any(|a| a == name);
    if only("drift") || only("family") {
        if only("drift") {
            drift_screen(if timed { 6000 } else { 10 }, timed);
        }
        if only("family") {
            family_tables(if timed { 1000 } else { 2 }, timed);
        }
        return;
    }
    drift_screen(if timed { 6000 } else { 10 }, timed);
    family_tables(if timed { 1000 } else { 2 }, timed);
    coverage(pairs, timed);
    false_calls(pairs, timed);
    let n = if timed { 100_000 } else { 100 };
    let plan = Plan {
        looks: 4,
        max_runs: 40,
        alpha: 0.05,
    };
    let s = simulate(&plan, 0.0, n, 2800);
    println!(
        "\nSequential (--until-decided, 4 looks, 40 runs), {n} A/A experiments: {:.2}% end in a call (mean {:.1} runs)",
        100.0 * s.called,
        s.mean_runs
    );
    if timed {
        // alpha + 3 binomial SDs of 100,000 experiments (0.07 points).
        assert!(s.called <= 0.052, "sequential A/A {}", s.called);
    }
}
