//! The analysis over replication levels (docs/statistics.md#levels): runs named by host, boot
//! and invocation are nested, and only units of the highest level that is replicated are
//! independent replicates.
//!
//! [`choose`] finds the levels a metric's runs are replicated at: a level counts when every
//! counted run names its unit, every variant has more units at it than at the level kept above
//! (else it is confounded with that level) and fewer than runs (else it is confounded with the
//! runs). [`analyse`] then gives per variant the variance components of the kept levels
//! (`nested`, REML), the intraclass correlation at each level, every variant against the
//! baseline on top-level unit means next to the runs taken as independent (`levels`'
//! comparison), and [`plan`]: Kalibera and Jones' optimal repetitions at each level from the
//! components and the measured costs of each level, where known.
//!
//! Pure computation: no I/O.

use super::host_effects::compare_hosts;
use super::levels::{LevelComparison, MAX_RUNS_PER_BOOT, MIN_BOOTS, Target, compare_levels};
use super::nested::{self, NestedComponents, NestedData};
use super::power::{pairs_needed, runs_needed_cv};
use abperf_model::describe::median;
use abperf_model::{Dataset, Level, Run};
use serde::Serialize;
use std::collections::HashMap;

/// The levels a metric is analysed at.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Choice {
    /// Replicated levels, top down (the first is where verdicts come from); empty: none.
    pub levels: Vec<Level>,
    /// Why a level the runs name is not used.
    pub notes: Vec<String>,
}

impl Choice {
    pub fn top(&self) -> Option<Level> {
        self.levels.first().copied()
    }
}

/// Counted runs of variant `pos` with a value of `metric`.
fn counted<'a>(ds: &'a Dataset, pos: usize, metric: &'a str) -> impl Iterator<Item = &'a Run> {
    ds.runs
        .iter()
        .filter(move |r| r.variant == pos && r.counts() && r.value(metric).is_some())
}

fn distinct(ds: &Dataset, pos: usize, metric: &str, level: Level) -> usize {
    let units: std::collections::HashSet<String> = counted(ds, pos, metric)
        .filter_map(|r| ds.unit_at(r, level))
        .collect();
    units.len()
}

/// The replicated levels of `metric` (see the module comment).
pub fn choose(ds: &Dataset, metric: &str) -> Choice {
    let mut choice = Choice {
        levels: Vec::new(),
        notes: Vec::new(),
    };
    let variants = 0..ds.variants.len();
    for level in Level::ALL {
        let (mut named, mut all) = (0usize, 0usize);
        for pos in variants.clone() {
            for r in counted(ds, pos, metric) {
                all += 1;
                named += usize::from(ds.unit_at(r, level).is_some());
            }
        }
        if named == 0 {
            continue;
        }
        if named < all {
            choice.notes.push(format!(
                "{} named for {named} of {all} runs only: not used as a level",
                level.name()
            ));
            continue;
        }
        let above = choice.levels.last().copied();
        let mut why = None;
        for pos in variants.clone() {
            let units = distinct(ds, pos, metric, level);
            let parents = above.map(|a| distinct(ds, pos, metric, a)).unwrap_or(1);
            let runs = counted(ds, pos, metric).count();
            if units <= parents {
                why = Some(match above {
                    Some(a) => format!("one {} per {}", level.name(), a.name()),
                    None => format!("one {} per variant", level.name()),
                });
            } else if units >= runs {
                why = Some(format!("one run per {}", level.name()));
            }
        }
        match why {
            Some(w) => choice.notes.push(format!(
                "{} not replicated ({w}): not a level of its own",
                level.name()
            )),
            None => choice.levels.push(level),
        }
    }
    choice
}

/// Variant `pos`'s values of `metric` with their units at `levels`.
pub fn nested_data(ds: &Dataset, pos: usize, metric: &str, levels: &[Level]) -> NestedData {
    let mut ids: Vec<HashMap<String, usize>> = vec![HashMap::new(); levels.len()];
    let mut d = NestedData {
        values: Vec::new(),
        units: vec![Vec::new(); levels.len()],
    };
    for r in counted(ds, pos, metric) {
        let units: Option<Vec<String>> = levels.iter().map(|&l| ds.unit_at(r, l)).collect();
        let (Some(units), Some(v)) = (units, r.value(metric)) else {
            continue;
        };
        d.values.push(v);
        for (k, u) in units.into_iter().enumerate() {
            let next = ids[k].len();
            d.units[k].push(*ids[k].entry(u).or_insert(next));
        }
    }
    d
}

/// Values of variant `pos` grouped by their unit at `level`, in order of first appearance.
pub fn groups(ds: &Dataset, pos: usize, metric: &str, level: Level) -> Vec<Vec<f64>> {
    let d = nested_data(ds, pos, metric, &[level]);
    let mut out: Vec<Vec<f64>> = Vec::new();
    for (v, &u) in d.values.iter().zip(&d.units[0]) {
        if u == out.len() {
            out.push(Vec::new());
        }
        out[u].push(*v);
    }
    out
}

/// One variant's components.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VariantComponents {
    pub variant: String,
    pub components: Option<NestedComponents>,
    /// Per level as `components.variances` (the runs last): the correlation of two runs that
    /// share a unit of that level (and so every unit above it), sum of the components down to it
    /// over the total.
    pub icc: Vec<f64>,
    pub note: Option<String>,
}

/// One level of a plan: repetitions of it inside one unit of the level above.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlanLevel {
    pub level: String,
    /// Pooled relative variance component, %^2.
    pub rel_var_pct2: f64,
    /// Cost of one unit beyond the units below it, seconds (None: not measured).
    pub cost_seconds: Option<f64>,
    /// Repetitions per unit of the level above (for the top level: per variant).
    pub repetitions: Option<usize>,
    /// How the repetitions were chosen: "kalibera-jones", "capped" (no variance above),
    /// "as measured" (a cost unknown), "power" (the top level).
    pub basis: String,
}

/// Kalibera-Jones advice over the levels.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LevelsPlan {
    pub target: Target,
    /// Top level first, the runs last.
    pub levels: Vec<PlanLevel>,
    /// CV of a top-level unit's mean at these repetitions, %.
    pub cv_top_mean_pct: f64,
    /// Wall time for all variants (None: a cost unknown).
    pub seconds: Option<f64>,
    /// Hosts as blocks (every host ran every variant): the between-host variance of the effect
    /// (tau^2, %^2, pooled over the comparisons with the baseline), and the SD of one host's
    /// effect at these repetitions, sqrt(tau^2 + 2 (T_1^2 / r_1 + T_2^2 / (r_1 r_2) + ...)),
    /// which the hosts come from (a paired test); null otherwise.
    pub tau2_pct2: Option<f64>,
    pub effect_sd_pct: Option<f64>,
}

/// The analysis of one metric.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Replicated {
    pub metric: String,
    /// The levels used, top down ("run" not included).
    pub levels: Vec<Level>,
    pub variants: Vec<VariantComponents>,
    /// Every variant against the baseline on top-level means (`boots`/`runs` of each count the
    /// top-level units and the runs).
    pub comparisons: Vec<LevelComparison>,
    pub plan: Option<LevelsPlan>,
    pub notes: Vec<String>,
}

fn variant_components(name: &str, d: &NestedData) -> VariantComponents {
    match nested::components(d) {
        Ok(c) => {
            let total: f64 = c.variances.iter().sum();
            let mut acc = 0.0;
            let icc = c
                .variances
                .iter()
                .map(|v| {
                    acc += v;
                    acc / total
                })
                .collect();
            VariantComponents {
                variant: name.to_string(),
                components: Some(c),
                icc,
                note: None,
            }
        }
        Err(e) => VariantComponents {
            variant: name.to_string(),
            components: None,
            icc: Vec::new(),
            note: Some(e.to_string()),
        },
    }
}

/// Median seconds of one counted run (None without timestamps).
fn run_cost(ds: &Dataset) -> Option<f64> {
    let d: Vec<f64> = ds
        .runs
        .iter()
        .filter(|r| r.counts())
        .filter_map(Run::duration_ns)
        .collect();
    (!d.is_empty()).then(|| median(&d) / 1e9)
}

/// A variant and a unit of the level above (None: the variant itself).
type Parent = (usize, Option<String>);

/// Median seconds between one unit of `level` ending and the next starting (units of one
/// variant and one parent unit, in time order): what a new unit costs beyond its runs. None
/// without timestamps, or when the units overlap in time (a median gap of 0).
fn unit_cost(ds: &Dataset, level: Level, parent: Option<Level>) -> Option<f64> {
    let mut spans: HashMap<(Parent, String), (i64, i64)> = HashMap::new();
    for r in ds.runs.iter().filter(|r| r.counts() && r.started_ns > 0) {
        let Some(u) = ds.unit_at(r, level) else {
            continue;
        };
        let p = parent.and_then(|p| ds.unit_at(r, p));
        let e = spans
            .entry(((r.variant, p), u))
            .or_insert((r.started_ns, r.ended_ns));
        e.0 = e.0.min(r.started_ns);
        e.1 = e.1.max(r.ended_ns);
    }
    let mut by_parent: HashMap<Parent, Vec<(i64, i64)>> = HashMap::new();
    for ((parent, _), s) in spans {
        by_parent.entry(parent).or_default().push(s);
    }
    let mut gaps = Vec::new();
    for mut s in by_parent.into_values() {
        s.sort();
        gaps.extend(s.windows(2).map(|w| (w[1].0 - w[0].1).max(0) as f64 / 1e9));
    }
    // Units that overlap in time (hosts measured side by side) say nothing about what a new one
    // costs: not measured.
    let m = (!gaps.is_empty()).then(|| median(&gaps))?;
    (m > 0.0).then_some(m)
}

/// Kalibera and Jones over levels: `rel` the pooled relative components (top level first, runs
/// last, %^2), `costs` the cost of a unit of each beyond its children, `current` the mean
/// repetitions per parent unit in the data. Where both costs of a pair are known,
/// r_i = ceil(sqrt((c_{i-1} / c_i) (T_i^2 / T_{i-1}^2))); else the data's repetitions.
pub fn plan(
    names: &[String],
    rel: &[f64],
    costs: &[Option<f64>],
    current: &[usize],
    target: Target,
    variants: usize,
) -> LevelsPlan {
    let n = rel.len();
    let mut levels: Vec<PlanLevel> = (0..n)
        .map(|i| PlanLevel {
            level: names[i].clone(),
            rel_var_pct2: rel[i],
            cost_seconds: costs[i],
            repetitions: None,
            basis: String::new(),
        })
        .collect();
    for i in 1..n {
        let (r, basis) = match (costs[i - 1], costs[i]) {
            (Some(up), Some(c)) if c > 0.0 && rel[i - 1] > 0.0 => {
                let r = ((up / c) * (rel[i] / rel[i - 1])).sqrt().ceil();
                (
                    (r as usize).clamp(1, MAX_RUNS_PER_BOOT as usize),
                    "kalibera-jones",
                )
            }
            (Some(_), Some(c)) if c > 0.0 => (MAX_RUNS_PER_BOOT as usize, "capped"),
            _ => (current[i].max(1), "as measured"),
        };
        levels[i].repetitions = Some(r);
        levels[i].basis = basis.to_string();
    }
    // Variance of a top-level mean: T_0 + T_1 / r_1 + T_2 / (r_1 r_2) + ...
    let (mut var, mut per) = (0.0, 1.0);
    for (i, l) in levels.iter().enumerate() {
        if i > 0 {
            per *= l.repetitions.unwrap_or(1) as f64;
        }
        var += rel[i] / per;
    }
    let cv = var.sqrt();
    let top =
        runs_needed_cv(cv, target.effect_pct, target.alpha, target.power).map(|b| b.max(MIN_BOOTS));
    levels[0].repetitions = top;
    levels[0].basis = "power".to_string();
    let seconds = seconds(&levels, variants);
    LevelsPlan {
        target,
        levels,
        cv_top_mean_pct: cv,
        seconds,
        tau2_pct2: None,
        effect_sd_pct: None,
    }
}

/// Wall time of a plan's `levels` for all variants: the top units times the cost of one,
/// c_0 + r_1 (c_1 + r_2 (c_2 + ...)), times the variants (each top unit runs every variant);
/// None when a cost or the top units are unknown.
fn seconds(levels: &[PlanLevel], variants: usize) -> Option<f64> {
    let mut unit = Some(0.0);
    for l in levels.iter().rev() {
        unit = match (unit, l.cost_seconds) {
            (Some(below), Some(c)) => Some(c + below),
            _ => None,
        };
        unit = unit.map(|u| u * l.repetitions.unwrap_or(1) as f64);
    }
    unit.filter(|_| levels[0].repetitions.is_some())
        .map(|u| u * variants as f64)
}

/// Hosts as blocks: the hosts of plan `p` (top level host, every host running every variant)
/// from the paired test of the per-host effects, whose variance is `tau2` (%^2) plus twice the
/// variance of one variant's host mean at the plan's repetitions below the host.
pub fn block_over_hosts(p: &mut LevelsPlan, tau2: f64, variants: usize) {
    let (mut within, mut per) = (0.0, 1.0);
    for l in &p.levels[1..] {
        per *= l.repetitions.unwrap_or(1) as f64;
        within += l.rel_var_pct2 / per;
    }
    let sd = (tau2 + 2.0 * within).sqrt();
    let t = p.target;
    p.levels[0].repetitions = pairs_needed(sd, t.effect_pct, t.alpha, t.power);
    p.levels[0].basis = "power, hosts as blocks".into();
    p.tau2_pct2 = Some(tau2);
    p.effect_sd_pct = Some(sd);
    p.seconds = seconds(&p.levels, variants);
}

/// Pooled relative components (%^2, the mean over variants of variance / mean^2) and mean
/// repetitions per parent unit, per level (runs last).
fn pooled(comps: &[&NestedComponents]) -> (Vec<f64>, Vec<usize>) {
    let n = comps[0].variances.len();
    let mut rel = vec![0.0; n];
    let mut reps = vec![0.0; n];
    for c in comps {
        let m2 = c.mean * c.mean;
        for i in 0..n {
            rel[i] += c.variances[i] / m2 * 1e4 / comps.len() as f64;
            let parents = if i == 0 { 1 } else { c.units[i - 1] };
            reps[i] += c.units[i] as f64 / parents as f64 / comps.len() as f64;
        }
    }
    (rel, reps.iter().map(|r| r.round() as usize).collect())
}

/// The analysis of `metric` over its replicated levels, every variant against `baseline`; None
/// when no level above the runs is replicated.
pub fn analyse(ds: &Dataset, metric: &str, baseline: usize, target: Target) -> Option<Replicated> {
    let choice = choose(ds, metric);
    let top = choice.top()?;
    let mut notes = choice.notes.clone();
    let variants: Vec<VariantComponents> = ds
        .variants
        .iter()
        .enumerate()
        .map(|(pos, v)| variant_components(&v.name, &nested_data(ds, pos, metric, &choice.levels)))
        .collect();
    let groups: Vec<Vec<Vec<f64>>> = (0..ds.variants.len())
        .map(|pos| groups(ds, pos, metric, top))
        .collect();
    let base = &ds.variants[baseline].name;
    let comparisons = (0..ds.variants.len())
        .filter(|&i| i != baseline)
        .map(|i| compare_levels(base, &ds.variants[i].name, &groups[baseline], &groups[i]))
        .collect();
    let comps: Vec<&NestedComponents> = variants
        .iter()
        .filter_map(|v| v.components.as_ref())
        .filter(|c| c.mean != 0.0)
        .collect();
    let plan = (!comps.is_empty())
        .then(|| levels_plan(ds, metric, baseline, &choice, &comps, target, &mut notes));
    if plan.as_ref().is_some_and(|p| p.seconds.is_none()) {
        notes.push(
            "plan: a level's cost is not measured (no timestamps): its repetitions are the data's"
                .into(),
        );
    }
    Some(Replicated {
        metric: metric.to_string(),
        levels: choice.levels,
        variants,
        comparisons,
        plan,
        notes,
    })
}

/// Kalibera-Jones over `choice`'s levels from the components `comps`, with the hosts as blocks
/// when every host ran every variant (else a note in `notes` says why not).
fn levels_plan(
    ds: &Dataset,
    metric: &str,
    baseline: usize,
    choice: &Choice,
    comps: &[&NestedComponents],
    target: Target,
    notes: &mut Vec<String>,
) -> LevelsPlan {
    let (rel, reps) = pooled(comps);
    let mut names: Vec<String> = choice.levels.iter().map(|l| l.name().to_string()).collect();
    names.push("run".into());
    let mut costs: Vec<Option<f64>> = (0..choice.levels.len())
        .map(|k| {
            let parent = k.checked_sub(1).map(|p| choice.levels[p]);
            unit_cost(ds, choice.levels[k], parent)
        })
        .collect();
    costs.push(run_cost(ds));
    let mut p = plan(&names, &rel, &costs, &reps, target, ds.variants.len());
    if choice.top() == Some(Level::Host) {
        let within = choice.levels.get(1).copied();
        match host_tau2(ds, metric, baseline, within, target.alpha) {
            Ok(tau2) => block_over_hosts(&mut p, tau2, ds.variants.len()),
            Err(why) => notes.push(format!(
                "plan: hosts not blocks ({why}): the hosts per variant are for the unpaired \
                 comparison of host means"
            )),
        }
    }
    p
}

/// tau^2 of the per-host effects (%^2), averaged over every variant against `baseline`; Err
/// with the reason when a pair's hosts are not blocks.
fn host_tau2(
    ds: &Dataset,
    metric: &str,
    baseline: usize,
    within: Option<Level>,
    alpha: f64,
) -> Result<f64, String> {
    let mut taus = Vec::new();
    for i in (0..ds.variants.len()).filter(|&i| i != baseline) {
        let c = compare_hosts(ds, (baseline, i), metric, within, alpha)?;
        taus.push(c.combined.tau2 * 1e4);
    }
    Ok(taus.iter().sum::<f64>() / taus.len().max(1) as f64)
}

/// Whether `metric` of `ds` has a replicated level above the runs, and which is the top.
pub fn top_level(ds: &Dataset, metric: &str) -> Option<Level> {
    choose(ds, metric).top()
}

/// The level below the host that a host's standard error comes from for `metric`: the next
/// replicated level (None: the runs). None as a whole when the top level is not the host.
pub fn within_level(ds: &Dataset, metric: &str) -> Option<Option<Level>> {
    let c = choose(ds, metric);
    (c.top() == Some(Level::Host)).then(|| c.levels.get(1).copied())
}

#[cfg(test)]
mod tests {
    use super::*;
    use abperf_model::{Labels, Metric, Variant};

    /// 2 variants x `hosts` hosts x 3 boots x 4 runs, one invocation per run.
    fn dataset(hosts: usize) -> Dataset {
        let mut runs = Vec::new();
        let mut x = 1u64;
        for v in 0..2 {
            for h in 0..hosts {
                for b in 0..3 {
                    for i in 0..4 {
                        x = x
                            .wrapping_mul(6364136223846793005)
                            .wrapping_add(1442695040888963407);
                        let noise = (x >> 40) as f64 / (1u64 << 24) as f64;
                        let value = 100.0 + 5.0 * h as f64 + 2.0 * ((b + h) % 3) as f64 + noise;
                        let seq = runs.len() as u32;
                        runs.push(Run {
                            labels: Labels {
                                invocation: Some(format!("i{i}")),
                                boot: Some(format!("b{b}")),
                                host: Some(format!("h{h}")),
                            },
                            started_ns: 1_000_000_000 * (seq as i64 + 1) + 100_000_000 * b as i64,
                            ended_ns: 1_000_000_000 * (seq as i64 + 1)
                                + 100_000_000 * b as i64
                                + 500_000_000,
                            ..Run::ok(seq, v, vec![Metric::new("wall_ns", value, "ns")])
                        });
                    }
                }
            }
        }
        Dataset::new(
            vec![],
            vec![Variant::named("a"), Variant::named("b")],
            runs,
            "t".into(),
        )
    }

    #[test]
    fn levels_chosen_top_down() {
        let c = choose(&dataset(3), "wall_ns");
        assert_eq!(c.levels, [Level::Host, Level::Boot]);
        assert!(
            c.notes[0].contains("invocation not replicated (one run per invocation)"),
            "{c:?}"
        );
        let c = choose(&dataset(1), "wall_ns");
        assert_eq!(c.levels, [Level::Boot], "one host per variant");
        assert!(c.notes[0].contains("one host per variant"), "{c:?}");
    }

    #[test]
    fn analysis_and_plan() {
        let ds = dataset(3);
        let a = analyse(
            &ds,
            "wall_ns",
            0,
            Target {
                effect_pct: 1.0,
                alpha: 0.05,
                power: 0.8,
            },
        )
        .unwrap();
        let c = a.variants[0].components.as_ref().unwrap();
        assert_eq!(c.units, [3, 9, 36]);
        assert_eq!(a.variants[0].icc.len(), 3);
        assert!((a.variants[0].icc[2] - 1.0).abs() < 1e-12);
        assert_eq!(a.comparisons[0].boots, [3, 3], "host means");
        assert_eq!(a.comparisons[0].runs, [36, 36]);
        let p = a.plan.unwrap();
        assert_eq!(p.levels.len(), 3);
        assert_eq!(p.levels[2].cost_seconds, Some(0.5));
        assert!(
            p.levels[1].cost_seconds.is_some(),
            "boots follow each other in time"
        );
        // Every host ran both variants: hosts are blocks, the hosts come from the paired test.
        assert_eq!(p.levels[0].basis, "power, hosts as blocks");
        assert!(p.tau2_pct2.is_some() && p.effect_sd_pct.is_some());
        // Units side by side in time: their cost is not measured (a run's still is).
        let mut parallel = ds.clone();
        for r in &mut parallel.runs {
            (r.started_ns, r.ended_ns) = (1_000_000_000, 1_500_000_000);
        }
        let q = analyse(&parallel, "wall_ns", 0, p.target)
            .unwrap()
            .plan
            .unwrap();
        assert_eq!(q.levels[1].cost_seconds, None);
        assert_eq!(q.levels[2].cost_seconds, Some(0.5));
        assert_eq!(
            (q.levels[1].basis.as_str(), q.seconds),
            ("as measured", None)
        );
        // No level replicated: no analysis.
        let mut flat = ds.clone();
        for r in &mut flat.runs {
            r.labels = Labels::default();
        }
        assert!(analyse(&flat, "wall_ns", 0, p.target).is_none());
    }

    #[test]
    fn kalibera_jones_over_levels() {
        // Two levels as levels.rs's test: T_boot = 0.04, T_run = 0.25 %^2, a boot 20 s, a run
        // 0.5 s: 16 runs per boot.
        let t = Target {
            effect_pct: 0.5,
            alpha: 0.05,
            power: 0.8,
        };
        let names = ["boot".to_string(), "run".to_string()];
        let p = plan(
            &names,
            &[0.04, 0.25],
            &[Some(20.0), Some(0.5)],
            &[6, 5],
            t,
            2,
        );
        assert_eq!(p.levels[1].repetitions, Some(16));
        let two = crate::levels::optimal_runs_per_boot(0.25, 0.04, 0.5, 20.0);
        assert_eq!(two, Some(16));
        assert!((p.cv_top_mean_pct - (0.04f64 + 0.25 / 16.0).sqrt()).abs() < 1e-12);
        let b = p.levels[0].repetitions.unwrap() as f64;
        assert!((p.seconds.unwrap() - b * (20.0 + 16.0 * 0.5) * 2.0).abs() < 1e-9);
        // Hosts as blocks over host > boot > run: the SD of a host's effect is
        // sqrt(tau^2 + 2 (T_boot / r_boot + T_run / (r_boot r_run))); the host's own variance
        // (T_host) cancels.
        let names3 = ["host".to_string(), "boot".to_string(), "run".to_string()];
        let mut p3 = plan(
            &names3,
            &[9.0, 0.04, 0.25],
            &[None, Some(20.0), Some(0.5)],
            &[4, 6, 5],
            t,
            2,
        );
        let unpaired = p3.levels[0].repetitions.unwrap();
        block_over_hosts(&mut p3, 0.01, 2);
        let r = 16.0;
        let sd = (0.01f64 + 2.0 * (0.04 / 6.0 + 0.25 / (6.0 * r))).sqrt();
        assert_eq!(p3.levels[1].repetitions, Some(6), "as measured");
        assert!((p3.effect_sd_pct.unwrap() - sd).abs() < 1e-12);
        let hosts = p3.levels[0].repetitions.unwrap();
        assert_eq!(Some(hosts), crate::power::pairs_needed(sd, 0.5, 0.05, 0.8));
        assert!(
            hosts < unpaired,
            "{hosts} paired hosts, {unpaired} unpaired"
        );
        assert_eq!(p3.seconds, None, "a host's cost is not measured");
        // A cost unknown: the data's repetitions, no time.
        let p = plan(&names, &[0.04, 0.25], &[None, Some(0.5)], &[6, 5], t, 2);
        assert_eq!((p.levels[1].repetitions, p.seconds), (Some(5), None));
        assert_eq!(p.levels[1].basis, "as measured");
    }
}
