//! Two levels of repetition: boots, and runs inside each boot (Kalibera and Jones, "Rigorous
//! Benchmarking in Reasonable Time", ISMM 2013; docs/statistics.md#levels).
//!
//! Each boot of a kernel lands on its own page layout and cache placement, so runs inside one
//! boot are correlated and only the boots are independent replicates. Per variant, a one-way
//! random-effects ANOVA splits the variance into a boot component (sigma_b^2, Kalibera and
//! Jones' T_2^2) and a run component (sigma_w^2, their T_1^2); the intraclass correlation
//! ICC = sigma_b^2 / (sigma_b^2 + sigma_w^2) says how much of the variation is between boots.
//! Verdicts and their confidence intervals come from the boot means (Welch on boot means,
//! Fieller on their ratio): counting runs as independent gives intervals too narrow by about
//! sqrt(design effect) = sqrt(1 + (n - 1) ICC).
//!
//! The cheapest design for a target precision takes r = ceil(sqrt((c_boot / c_run) (T_1^2 /
//! T_2^2))) runs per boot (the formula of docs/statistics.md#levels with i = 1), where c_boot is
//! what a boot costs beyond its timed runs and c_run what a run costs; the number of boots then
//! follows from the variance of a boot mean, T_2^2 + T_1^2 / r, as for runs in a one-level
//! experiment.
//!
//! Pure computation: no I/O.

use super::StatsError;
use super::dist::f_sf;
use super::power::runs_needed_cv;
use super::welch::{self, RatioCi, Welch};
use abperf_model::Dataset;
use abperf_model::describe::mean;
use serde::Serialize;

/// Variance components of one variant's runs, grouped by boot.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Components {
    /// Boots with at least one value (a).
    pub boots: usize,
    /// Values over all boots (N).
    pub runs: usize,
    /// Runs per boot: the smallest, the largest, and n0 = (N - sum n_i^2 / N) / (a - 1), the
    /// effective group size of an unbalanced design (equal to n when balanced).
    pub runs_min: usize,
    pub runs_max: usize,
    pub n0: f64,
    /// Mean of all runs, and mean of the boot means.
    pub mean: f64,
    pub mean_of_boot_means: f64,
    pub boot_means: Vec<f64>,
    /// Mean squares between and within boots with their degrees of freedom (None when there
    /// are too few boots, or no boot with two runs).
    pub ms_between: Option<f64>,
    pub df_between: usize,
    pub ms_within: Option<f64>,
    pub df_within: usize,
    /// F = MS_between / MS_within and its p-value: is there any boot-to-boot variance?
    pub f: Option<f64>,
    pub p: Option<f64>,
    /// sigma_w^2 = MS_within (Kalibera and Jones' T_1^2).
    pub var_run: Option<f64>,
    /// sigma_b^2 = (MS_between - MS_within) / n0, as estimated (may be negative by chance)...
    pub var_boot_estimate: Option<f64>,
    /// ...and truncated at 0 (T_2^2).
    pub var_boot: Option<f64>,
    /// sigma_b^2 / (sigma_b^2 + sigma_w^2), from the truncated estimate.
    pub icc: Option<f64>,
    /// 1 + (n0 - 1) ICC: how many times the variance of a mean of runs is underestimated when
    /// the runs are taken as independent.
    pub design_effect: Option<f64>,
}

/// One-way random-effects ANOVA of `groups` (one group of values per boot; empty groups are
/// left out).
pub fn components(groups: &[Vec<f64>]) -> Result<Components, StatsError> {
    let groups: Vec<&Vec<f64>> = groups.iter().filter(|g| !g.is_empty()).collect();
    for g in &groups {
        super::check_finite(g)?;
    }
    let a = groups.len();
    if a == 0 {
        return Err(StatsError::TooFew {
            what: "variance components",
            need: 1,
            got: 0,
        });
    }
    let n: usize = groups.iter().map(|g| g.len()).sum();
    let all: Vec<f64> = groups.iter().flat_map(|g| g.iter().copied()).collect();
    let grand = mean(&all);
    let boot_means: Vec<f64> = groups.iter().map(|g| mean(g)).collect();
    let sizes: Vec<usize> = groups.iter().map(|g| g.len()).collect();
    let ss_between: f64 = groups
        .iter()
        .zip(&boot_means)
        .map(|(g, m)| g.len() as f64 * (m - grand) * (m - grand))
        .sum();
    let ss_within: f64 = groups
        .iter()
        .zip(&boot_means)
        .map(|(g, m)| g.iter().map(|x| (x - m) * (x - m)).sum::<f64>())
        .sum();
    let df_between = a.saturating_sub(1);
    let df_within = n - a;
    let ms_between = (df_between > 0).then(|| ss_between / df_between as f64);
    let ms_within = (df_within > 0).then(|| ss_within / df_within as f64);
    let nf = n as f64;
    let n0 = if a > 1 {
        (nf - sizes.iter().map(|&s| (s * s) as f64).sum::<f64>() / nf) / (a - 1) as f64
    } else {
        nf
    };
    let var_boot_estimate = match (ms_between, ms_within) {
        (Some(b), Some(w)) => Some((b - w) / n0),
        _ => None,
    };
    let var_boot = var_boot_estimate.map(|v| v.max(0.0));
    let (f, p) = match (ms_between, ms_within) {
        (Some(b), Some(w)) if w > 0.0 => {
            let f = b / w;
            (Some(f), Some(f_sf(f, df_between as f64, df_within as f64)))
        }
        _ => (None, None),
    };
    let icc = match (var_boot, ms_within) {
        (Some(b), Some(w)) if b + w > 0.0 => Some(b / (b + w)),
        _ => None,
    };
    Ok(Components {
        boots: a,
        runs: n,
        runs_min: sizes.iter().copied().min().unwrap_or(0),
        runs_max: sizes.iter().copied().max().unwrap_or(0),
        n0,
        mean: grand,
        mean_of_boot_means: mean(&boot_means),
        boot_means,
        ms_between,
        df_between,
        ms_within,
        df_within,
        f,
        p,
        var_run: ms_within,
        var_boot_estimate,
        var_boot,
        icc,
        design_effect: icc.map(|i| 1.0 + (n0 - 1.0) * i),
    })
}

/// Kalibera and Jones' optimal repetitions at the lower level: runs per boot
/// r = ceil(sqrt((cost_boot / cost_run) * (var_run / var_boot))), at least 1. `None` when
/// var_boot is 0 (no boot-to-boot variance seen: r is unbounded) or an input is not positive.
pub fn optimal_runs_per_boot(
    var_run: f64,
    var_boot: f64,
    cost_run: f64,
    cost_boot: f64,
) -> Option<u64> {
    if !(var_boot > 0.0 && cost_run > 0.0 && cost_boot >= 0.0 && var_run >= 0.0) {
        return None;
    }
    let r = ((cost_boot / cost_run) * (var_run / var_boot))
        .sqrt()
        .ceil();
    if !r.is_finite() {
        return None;
    }
    Some((r as u64).max(1))
}

/// What a run and a boot cost, in seconds of wall time.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Costs {
    /// One timed run (with its pre/post and abperf's own work).
    pub run_seconds: f64,
    /// One boot beyond its timed runs: QEMU start, kernel boot, warm-ups, power-off.
    pub boot_seconds: f64,
    /// Boots these means come from.
    pub boots_measured: usize,
}

/// Target of a plan.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Target {
    /// Smallest effect to resolve, in percent.
    pub effect_pct: f64,
    pub alpha: f64,
    pub power: f64,
}

/// One design: runs per boot, boots per variant, and what they give and cost.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Design {
    pub runs_per_boot: u64,
    /// Boots per variant for the target (None: more than power.rs searches).
    pub boots: Option<usize>,
    /// CV of a boot mean at this many runs per boot, in percent.
    pub cv_boot_mean_pct: f64,
    /// Wall time per variant and for all variants, in seconds.
    pub seconds_per_variant: Option<f64>,
    pub seconds: Option<f64>,
}

/// `plan` advice for a two-level experiment.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LevelPlan {
    pub target: Target,
    pub costs: Costs,
    pub variants: usize,
    /// Pooled relative components (variance / mean^2, in percent^2) the plan assumes.
    pub rel_var_run_pct2: f64,
    pub rel_var_boot_pct2: f64,
    /// The Kalibera-Jones runs per boot; `unbounded` when no boot variance was seen (then the
    /// design below caps r at [`MAX_RUNS_PER_BOOT`]).
    pub unbounded: bool,
    pub best: Design,
    /// Other designs for comparison: one run per boot, and the runs per boot of the data.
    pub alternatives: Vec<Design>,
}

/// Largest runs per boot a plan proposes.
pub const MAX_RUNS_PER_BOOT: u64 = 100;

/// Fewest boots per variant a plan proposes: the boot means need their own degrees of freedom.
pub const MIN_BOOTS: usize = 4;

fn design(rv_run: f64, rv_boot: f64, r: u64, costs: &Costs, t: &Target, variants: usize) -> Design {
    let cv = (rv_boot + rv_run / r as f64).sqrt();
    let boots = runs_needed_cv(cv, t.effect_pct, t.alpha, t.power).map(|b| b.max(MIN_BOOTS));
    let per = boots.map(|b| b as f64 * (costs.boot_seconds + r as f64 * costs.run_seconds));
    Design {
        runs_per_boot: r,
        boots,
        cv_boot_mean_pct: cv,
        seconds_per_variant: per,
        seconds: per.map(|s| s * variants as f64),
    }
}

/// The design that reaches `target` in the least time, given the variance components of the
/// data (pooled over variants, relative to each variant's mean) and the measured costs.
/// `current_r` is the runs per boot of the data (listed among the alternatives).
pub fn plan(
    comps: &[&Components],
    costs: Costs,
    target: Target,
    variants: usize,
    current_r: u64,
) -> Result<LevelPlan, StatsError> {
    let usable: Vec<&&Components> = comps
        .iter()
        .filter(|c| c.var_run.is_some() && c.var_boot.is_some() && c.mean != 0.0)
        .collect();
    if usable.is_empty() {
        return Err(StatsError::Invalid(
            "no variant has two boots with two runs in one of them: the two variance components cannot be told apart".into(),
        ));
    }
    if !(costs.run_seconds > 0.0 && costs.boot_seconds >= 0.0) {
        return Err(StatsError::Invalid(
            "the cost of a run is not known (no timed run with host timings)".into(),
        ));
    }
    // Pooled relative components, in percent^2, weighted by degrees of freedom.
    let (mut w_run, mut w_boot, mut d_run, mut d_boot) = (0.0, 0.0, 0.0, 0.0);
    for c in &usable {
        let m2 = c.mean * c.mean;
        w_run += c.var_run.unwrap_or(0.0) / m2 * 1e4 * c.df_within as f64;
        d_run += c.df_within as f64;
        w_boot += c.var_boot.unwrap_or(0.0) / m2 * 1e4 * c.df_between as f64;
        d_boot += c.df_between as f64;
    }
    let rv_run = w_run / d_run.max(1.0);
    let rv_boot = w_boot / d_boot.max(1.0);
    let kj = optimal_runs_per_boot(rv_run, rv_boot, costs.run_seconds, costs.boot_seconds);
    let r = kj.unwrap_or(MAX_RUNS_PER_BOOT).min(MAX_RUNS_PER_BOOT);
    let best = design(rv_run, rv_boot, r, &costs, &target, variants);
    let mut alternatives = Vec::new();
    for alt in [1, current_r.max(1)] {
        if alt != r && !alternatives.iter().any(|d: &Design| d.runs_per_boot == alt) {
            alternatives.push(design(rv_run, rv_boot, alt, &costs, &target, variants));
        }
    }
    Ok(LevelPlan {
        target,
        costs,
        variants,
        rel_var_run_pct2: rv_run,
        rel_var_boot_pct2: rv_boot,
        unbounded: kj.is_none(),
        best,
        alternatives,
    })
}

/// A variant against the baseline on boot means, and what treating runs as independent would
/// have claimed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LevelComparison {
    pub baseline: String,
    pub variant: String,
    /// Boots and runs of the baseline and the variant.
    pub boots: [usize; 2],
    pub runs: [usize; 2],
    /// Welch's t-test and the Fieller 95% interval of the ratio, on boot means.
    pub welch: Option<Welch>,
    pub ratio_ci: Option<RatioCi>,
    /// The same on runs taken as independent (wrong for boots; shown to compare).
    pub naive_welch: Option<Welch>,
    pub naive_ratio_ci: Option<RatioCi>,
    /// Width of the boot-level interval over the width of the naive one.
    pub width_ratio: Option<f64>,
    /// Why a figure is missing.
    pub notes: Vec<String>,
}

/// Compare the boot means of `b` with those of `a` (groups of values per boot).
pub fn compare_levels(
    baseline: &str,
    variant: &str,
    a: &[Vec<f64>],
    b: &[Vec<f64>],
) -> LevelComparison {
    let ma: Vec<f64> = a
        .iter()
        .filter(|g| !g.is_empty())
        .map(|g| mean(g))
        .collect();
    let mb: Vec<f64> = b
        .iter()
        .filter(|g| !g.is_empty())
        .map(|g| mean(g))
        .collect();
    let ra: Vec<f64> = a.iter().flatten().copied().collect();
    let rb: Vec<f64> = b.iter().flatten().copied().collect();
    let mut notes = Vec::new();
    let mut note = |what: &str, r: Result<(), StatsError>| {
        if let Err(e) = r {
            notes.push(format!("{what}: {e}"));
        }
    };
    let w = welch::welch(&ma, &mb);
    let f = welch::fieller(&ma, &mb, 0.95);
    let nw = welch::welch(&ra, &rb);
    let nf = welch::fieller(&ra, &rb, 0.95);
    note("boot means", w.as_ref().map(|_| ()).map_err(Clone::clone));
    note(
        "boot means, ratio",
        f.as_ref().map(|_| ()).map_err(Clone::clone),
    );
    let width_ratio = match (&f, &nf) {
        (Ok(x), Ok(y)) if y.high > y.low => Some((x.high - x.low) / (y.high - y.low)),
        _ => None,
    };
    LevelComparison {
        baseline: baseline.to_string(),
        variant: variant.to_string(),
        boots: [ma.len(), mb.len()],
        runs: [ra.len(), rb.len()],
        welch: w.ok(),
        ratio_ci: f.ok(),
        naive_welch: nw.ok(),
        naive_ratio_ci: nf.ok(),
        width_ratio,
        notes,
    }
}

/// Components of one variant, or why there are none.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VariantLevels {
    pub variant: String,
    pub components: Option<Components>,
    pub note: Option<String>,
}

/// The two-level analysis of one metric of a dataset with boots.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Levels {
    pub metric: String,
    /// kvm | tcg; TCG timings say nothing about hardware costs.
    pub accelerators: Vec<String>,
    pub variants: Vec<VariantLevels>,
    /// Every variant against the baseline.
    pub comparisons: Vec<LevelComparison>,
    /// Measured costs of a run and of a boot (None when the boots carry no host timings).
    pub costs: Option<Costs>,
    /// The cheapest design for `target` (None without costs or components).
    pub plan: Option<LevelPlan>,
    pub notes: Vec<String>,
}

/// What a run and a boot cost in the boots of `ds`: the host seconds of the timed runs over
/// their number, and per boot the rest of its wall time.
pub fn costs(ds: &Dataset) -> Option<Costs> {
    let (mut run_s, mut runs, mut boot_s, mut boots) = (0.0, 0usize, 0.0, 0usize);
    for b in &ds.boots {
        let (Some(total), Some(rs)) = (b.seconds, b.run_seconds) else {
            continue;
        };
        let timed = b
            .runs
            .iter()
            .filter(|&&seq| {
                ds.runs
                    .iter()
                    .any(|r| r.seq == seq && r.variant == b.variant && !r.warmup)
            })
            .count();
        if timed == 0 || b.status != "complete" {
            continue;
        }
        run_s += rs;
        runs += timed;
        boot_s += (total - rs).max(0.0);
        boots += 1;
    }
    (runs > 0 && boots > 0).then(|| Costs {
        run_seconds: run_s / runs as f64,
        boot_seconds: boot_s / boots as f64,
        boots_measured: boots,
    })
}

/// The two-level analysis of `metric` (every variant against `baseline`), with plan advice for
/// `target`; None when the dataset has no boots.
pub fn analyse(ds: &Dataset, metric: &str, baseline: usize, target: Target) -> Option<Levels> {
    if !ds.has_boots() {
        return None;
    }
    let mut notes = Vec::new();
    let accelerators = ds.accelerators();
    if accelerators.iter().any(|a| a == "tcg") {
        notes.push(
            "TCG: the kernels ran under QEMU's emulator; these figures test the machinery and say nothing about hardware costs".to_string(),
        );
    }
    let groups: Vec<Vec<Vec<f64>>> = (0..ds.variants.len())
        .map(|p| ds.boot_groups(p, metric))
        .collect();
    let mut variants = Vec::new();
    for (v, g) in ds.variants.iter().zip(&groups) {
        let (components, note) = match components(g) {
            Ok(c) => {
                let note = if c.ms_within.is_none() {
                    Some("one run per boot: the run-level variance is not identified".to_string())
                } else if c.ms_between.is_none() {
                    Some("one boot: the boot-level variance is not identified".to_string())
                } else {
                    None
                };
                (Some(c), note)
            }
            Err(e) => (None, Some(e.to_string())),
        };
        variants.push(VariantLevels {
            variant: v.name.clone(),
            components,
            note,
        });
    }
    let base = &ds.variants[baseline].name;
    let comparisons = ds
        .variants
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != baseline)
        .map(|(i, v)| compare_levels(base, &v.name, &groups[baseline], &groups[i]))
        .collect();
    let costs = costs(ds);
    let comps: Vec<&Components> = variants
        .iter()
        .filter_map(|v| v.components.as_ref())
        .collect();
    let current_r = comps.iter().map(|c| c.n0.round() as u64).max().unwrap_or(1);
    let plan = match costs {
        Some(c) => match plan(&comps, c, target, ds.variants.len(), current_r) {
            Ok(p) => Some(p),
            Err(e) => {
                notes.push(format!("no plan: {e}"));
                None
            }
        },
        None => {
            notes.push(
                "no plan: the boots carry no host timings (cost of a run and of a boot unknown)"
                    .into(),
            );
            None
        }
    };
    Some(Levels {
        metric: metric.to_string(),
        accelerators,
        variants,
        comparisons,
        costs,
        plan,
        notes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reference::{Reference, assert_rel, normal};
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    /// `boots` boots of `runs` runs: mean mu, boot SD sb, run SD sw.
    fn simulate(
        rng: &mut ChaCha8Rng,
        mu: f64,
        sb: f64,
        sw: f64,
        boots: usize,
        runs: usize,
    ) -> Vec<Vec<f64>> {
        (0..boots)
            .map(|_| {
                let b = mu + sb * normal(rng);
                (0..runs).map(|_| b + sw * normal(rng)).collect()
            })
            .collect()
    }

    #[test]
    fn balanced_textbook_example() {
        // Three boots of three runs: boot means 2, 5, 8; within SS = 2 per boot.
        let g = vec![
            vec![1.0, 2.0, 3.0],
            vec![4.0, 5.0, 6.0],
            vec![7.0, 8.0, 9.0],
        ];
        let c = components(&g).unwrap();
        assert_eq!((c.boots, c.runs, c.n0), (3, 9, 3.0));
        assert_eq!(c.ms_between, Some(27.0)); // 3 * (9 + 0 + 9) / 2
        assert_eq!(c.ms_within, Some(1.0)); // 6 / 6
        assert_eq!(c.var_boot, Some(26.0 / 3.0));
        assert_rel(
            c.icc.unwrap(),
            (26.0 / 3.0) / (26.0 / 3.0 + 1.0),
            1e-12,
            "icc",
        );
        assert_rel(c.f.unwrap(), 27.0, 1e-12, "F");
        assert_rel(
            c.design_effect.unwrap(),
            1.0 + 2.0 * c.icc.unwrap(),
            1e-12,
            "deff",
        );
        // No boot effect at all: a negative estimate is kept, the component truncated.
        let g = vec![vec![1.0, 9.0], vec![2.0, 8.0], vec![5.0, 5.0]];
        let c = components(&g).unwrap();
        assert!(c.var_boot_estimate.unwrap() < 0.0);
        assert_eq!((c.var_boot, c.icc), (Some(0.0), Some(0.0)));
        // Degenerate inputs say what is missing.
        let c = components(&[vec![1.0, 2.0]]).unwrap();
        assert!(c.ms_between.is_none() && c.var_boot.is_none());
        let c = components(&[vec![1.0], vec![2.0]]).unwrap();
        assert!(c.ms_within.is_none() && c.icc.is_none());
        assert!(components(&[]).is_err());
        assert!(components(&[vec![f64::NAN]]).is_err());
    }

    #[test]
    fn matches_scipy_and_statsmodels() {
        let r = Reference::load();
        for c in r.cases("levels") {
            let sizes = c.vec("sizes");
            let values = c.vec("values");
            let mut groups = Vec::new();
            let mut at = 0;
            for s in sizes {
                groups.push(values[at..at + s as usize].to_vec());
                at += s as usize;
            }
            let got = components(&groups).unwrap();
            let name = c.str("name");
            assert_rel(got.ms_between.unwrap(), c.num("ms_between"), 1e-10, &name);
            assert_rel(got.ms_within.unwrap(), c.num("ms_within"), 1e-10, &name);
            assert_rel(got.f.unwrap(), c.num("f"), 1e-10, &name);
            assert_rel(got.p.unwrap(), c.num("p"), 1e-8, &name);
            assert_rel(got.n0, c.num("n0"), 1e-12, &name);
            assert_rel(
                got.var_boot_estimate.unwrap(),
                c.num("var_boot"),
                1e-9,
                &name,
            );
            assert_rel(got.icc.unwrap(), c.num("icc"), 1e-9, &name);
            // statsmodels' REML fit agrees with the ANOVA estimates when the design is
            // balanced (and the estimate positive).
            if c.num("reml_var_boot") > 0.0 {
                assert_rel(got.var_boot.unwrap(), c.num("reml_var_boot"), 1e-4, &name);
                assert_rel(got.var_run.unwrap(), c.num("reml_var_run"), 1e-4, &name);
            }
        }
        for c in r.cases("kalibera_jones") {
            let got = optimal_runs_per_boot(
                c.num("var_run"),
                c.num("var_boot"),
                c.num("cost_run"),
                c.num("cost_boot"),
            );
            assert_eq!(got, Some(c.num("r") as u64), "{}", c.str("name"));
        }
    }

    #[test]
    fn simulation_recovers_known_components() {
        // sigma_b = 2, sigma_w = 1: ICC = 0.8. The ANOVA estimators are unbiased (before
        // truncation), balanced or not.
        let mut rng = ChaCha8Rng::seed_from_u64(15);
        let (sb, sw) = (2.0, 1.0);
        let trials = 2000;
        let (mut vb, mut vw, mut vb_unbal) = (0.0, 0.0, 0.0);
        for _ in 0..trials {
            let g = simulate(&mut rng, 100.0, sb, sw, 8, 5);
            let c = components(&g).unwrap();
            vb += c.var_boot_estimate.unwrap();
            vw += c.var_run.unwrap();
            let mut g = simulate(&mut rng, 100.0, sb, sw, 8, 6);
            for (i, x) in g.iter_mut().enumerate() {
                x.truncate(2 + i % 5);
            }
            vb_unbal += components(&g).unwrap().var_boot_estimate.unwrap();
        }
        let (vb, vw, vbu) = (
            vb / trials as f64,
            vw / trials as f64,
            vb_unbal / trials as f64,
        );
        // Standard errors: var_boot ~ 4 * sqrt(2/7) / sqrt(2000) ~ 0.05.
        assert!((vb - 4.0).abs() < 0.2, "boot variance {vb}");
        assert!((vw - 1.0).abs() < 0.03, "run variance {vw}");
        assert!((vbu - 4.0).abs() < 0.25, "unbalanced boot variance {vbu}");
    }

    #[test]
    fn boot_level_intervals_cover_and_naive_ones_do_not() {
        // A/A: both variants have the same mean; the boot-level 95% interval of the ratio must
        // cover 1 about 95% of the time, while runs taken as independent (5 per boot, ICC 0.5)
        // give intervals too narrow by sqrt(1 + 4 * 0.5) ~ 1.7.
        let mut rng = ChaCha8Rng::seed_from_u64(2013);
        let trials = 1000;
        let (mut boot_cover, mut naive_cover, mut widths) = (0, 0, 0.0);
        for _ in 0..trials {
            let a = simulate(&mut rng, 1000.0, 5.0, 5.0, 8, 5);
            let b = simulate(&mut rng, 1000.0, 5.0, 5.0, 8, 5);
            let c = compare_levels("a", "b", &a, &b);
            let ci = c.ratio_ci.unwrap();
            let naive = c.naive_ratio_ci.unwrap();
            boot_cover += usize::from(ci.low <= 1.0 && 1.0 <= ci.high);
            naive_cover += usize::from(naive.low <= 1.0 && 1.0 <= naive.high);
            widths += c.width_ratio.unwrap();
        }
        let boot = boot_cover as f64 / trials as f64;
        let naive = naive_cover as f64 / trials as f64;
        let width = widths / trials as f64;
        abperf_model::error::stderr_line(&format!(
            "A/A coverage: boot-level {boot}, runs as independent {naive}; width ratio {width:.2}"
        ));
        assert!((0.93..=0.97).contains(&boot), "boot-level coverage {boot}");
        assert!(naive < 0.85, "naive coverage {naive}");
        assert!((1.5..2.3).contains(&width), "width ratio {width}");
    }

    #[test]
    fn kalibera_jones_runs_per_boot_minimise_the_time() {
        // Relative components 0.04 %^2 (boots) and 0.25 %^2 (runs), a boot of 20 s and a run
        // of 0.5 s: r = ceil(sqrt(40 * 6.25)) = 16. A search over r for the cheapest design
        // that reaches the same target agrees to within the rounding of boots to integers.
        let c = |m: f64, vb: f64, vw: f64| Components {
            boots: 6,
            runs: 30,
            runs_min: 5,
            runs_max: 5,
            n0: 5.0,
            mean: m,
            mean_of_boot_means: m,
            boot_means: vec![],
            ms_between: Some(vw + 5.0 * vb),
            df_between: 5,
            ms_within: Some(vw),
            df_within: 24,
            f: None,
            p: None,
            var_run: Some(vw),
            var_boot_estimate: Some(vb),
            var_boot: Some(vb),
            icc: None,
            design_effect: None,
        };
        // In the metric's unit, variance = relative variance (%^2) * mean^2 / 1e4.
        let a = c(100.0, 0.04, 0.25);
        let b = c(200.0, 0.16, 1.0);
        let costs = Costs {
            run_seconds: 0.5,
            boot_seconds: 20.0,
            boots_measured: 12,
        };
        let target = Target {
            effect_pct: 0.5,
            alpha: 0.05,
            power: 0.8,
        };
        let p = plan(&[&a, &b], costs, target, 2, 5).unwrap();
        assert_rel(p.rel_var_boot_pct2, 0.04, 1e-12, "pooled boot");
        assert_rel(p.rel_var_run_pct2, 0.25, 1e-12, "pooled run");
        assert_eq!(p.best.runs_per_boot, 16);
        assert!(!p.unbounded);
        let best = p.best.seconds.unwrap();
        let mut cheapest = f64::INFINITY;
        for r in 1..200 {
            let d = design(0.25, 0.04, r, &costs, &target, 2);
            cheapest = cheapest.min(d.seconds.unwrap());
        }
        assert!(
            best <= cheapest * 1.1,
            "KJ design {best} s, cheapest {cheapest} s"
        );
        let one = &p.alternatives[0];
        assert_eq!(one.runs_per_boot, 1);
        assert!(one.seconds.unwrap() > best, "{one:?}");
        // No boot variance: r is unbounded and capped.
        let flat = c(100.0, 0.0, 0.25);
        let p = plan(&[&flat], costs, target, 2, 5).unwrap();
        assert!(p.unbounded);
        assert_eq!(p.best.runs_per_boot, MAX_RUNS_PER_BOOT);
        assert_eq!(p.best.boots, Some(MIN_BOOTS));
        assert_eq!(optimal_runs_per_boot(1.0, 0.0, 1.0, 1.0), None);
        assert_eq!(optimal_runs_per_boot(1.0, 100.0, 1.0, 1.0), Some(1));
    }
}
