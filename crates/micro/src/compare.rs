//! Two micro experiments side by side, with the rounds as the unit: every configuration stored
//! in both becomes two variants (one per experiment) in a family of its own (parameter
//! [`BY`]), and each round of samples becomes one run whose metrics are the round's medians.
//! The comparison itself is the ordinary analysis (`stats::analysis` with `--by config`, one
//! Holm or BH correction over every configuration): samples within a round share the host's
//! phase, so comparing round medians puts the host's slow phases into the variance the test
//! accounts for instead of into thousands of falsely independent samples.
//!
//! Rounds within one process share its buffers, their alignment and physical pages; a second
//! process does not, so two separate experiments differ by more than their rounds vary. When
//! both sides were measured in several invocations (`abperf micro --invocations N`), the unit
//! is the invocation ([`Unit::Invocation`]): each invocation's mean of its round medians is one
//! observation, and the test sees the variance between processes.

use abperf_model::describe::median;
use abperf_model::micro::MicroRound;
use abperf_model::{Dataset, Metric, Run};
use std::collections::BTreeMap;

/// The parameter that names a configuration's family.
pub const BY: &str = "config";

/// What one observation of a configuration is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// A round's median (valid within one process: the two sides measured in one).
    Round,
    /// An invocation's mean of its round medians (each invocation a process of its own).
    Invocation,
}

impl Unit {
    pub fn as_str(self) -> &'static str {
        match self {
            Unit::Round => "round",
            Unit::Invocation => "invocation",
        }
    }
}

/// The invocation each round of a micro experiment was measured in: (variant position, round)
/// -> invocation, from its stored rounds.
#[derive(Debug, Clone, Default)]
pub struct Invocations(BTreeMap<(usize, i32), u32>);

impl Invocations {
    pub fn of(rounds: &[MicroRound]) -> Invocations {
        Invocations(
            rounds
                .iter()
                .map(|r| ((r.variant, r.round as i32), r.invocation))
                .collect(),
        )
    }

    /// How many invocations measured the experiment (1 for rounds of one process, or none).
    pub fn count(&self) -> usize {
        let set: std::collections::BTreeSet<u32> = self.0.values().copied().collect();
        set.len().max(1)
    }

    /// The invocation of round `block` of variant `pos` (0 when unknown).
    fn of_round(&self, pos: usize, block: i32) -> u32 {
        self.0.get(&(pos, block)).copied().unwrap_or(0)
    }
}

/// One run per invocation of variant `pos` of `ds`: each metric's mean over the invocation's
/// round medians ([`round_runs`]), block = the invocation.
pub fn invocation_runs(ds: &Dataset, pos: usize, inv: &Invocations) -> Vec<(i32, Vec<Metric>)> {
    let mut by_inv: BTreeMap<u32, BTreeMap<String, Vec<f64>>> = BTreeMap::new();
    for (block, metrics) in round_runs(ds, pos) {
        let i = by_inv.entry(inv.of_round(pos, block)).or_default();
        for m in metrics {
            i.entry(m.name).or_default().push(m.value);
        }
    }
    by_inv
        .into_iter()
        .map(|(i, metrics)| {
            let ms = metrics
                .into_iter()
                .map(|(name, v)| {
                    let mean = v.iter().sum::<f64>() / v.len() as f64;
                    let unit = ds.unit(&name);
                    Metric::new(&name, mean, unit)
                })
                .collect();
            (i as i32, ms)
        })
        .collect()
}

/// The paired data of two micro experiments.
pub struct Paired {
    /// Two variants per configuration in both (baseline first), one run per round.
    pub data: Dataset,
    /// Configurations stored in only one of the two (e.g. a benchmark skipped on one kernel).
    pub only_a: Vec<String>,
    pub only_b: Vec<String>,
}

/// One run per round (block) of variant `pos` of `ds`: each metric's median over the round's
/// counted samples, in round order.
pub fn round_runs(ds: &Dataset, pos: usize) -> Vec<(i32, Vec<Metric>)> {
    let mut by_round: BTreeMap<i32, BTreeMap<&str, Vec<f64>>> = BTreeMap::new();
    for r in ds.counted(pos) {
        let round = by_round.entry(r.block).or_default();
        for m in &r.metrics {
            round.entry(m.name.as_str()).or_default().push(m.value);
        }
    }
    by_round
        .into_iter()
        .map(|(block, metrics)| {
            let ms = metrics
                .into_iter()
                .map(|(name, v)| Metric::new(name, median(&v), ds.unit(name)))
                .collect();
            (block, ms)
        })
        .collect()
}

/// Pair the configurations of `a` (baseline) and `b` whose names match (and, with `only`,
/// whose name starts with it), labelled `labels` (e.g. `#12`, `#13`): variants
/// `LABEL:CONFIG` with parameters `config`, `bench` and `side`, one run per round, or with
/// [`Unit::Invocation`] one per invocation (`inv`: each side's rounds' invocations).
pub fn pair(
    a: &Dataset,
    b: &Dataset,
    labels: [&str; 2],
    only: Option<&str>,
    unit: Unit,
    inv: [&Invocations; 2],
) -> Paired {
    let wanted = |n: &str| only.is_none_or(|p| n.starts_with(p));
    let mut variants = Vec::new();
    let mut runs = Vec::new();
    let mut only_a = Vec::new();
    for (pa, va) in a.variants.iter().enumerate() {
        if !wanted(&va.name) {
            continue;
        }
        let Some(pb) = b.position(&va.name) else {
            only_a.push(va.name.clone());
            continue;
        };
        for (side, ds, pos, inv) in [(labels[0], a, pa, inv[0]), (labels[1], b, pb, inv[1])] {
            let v = &ds.variants[pos];
            let at = variants.len();
            let mut p = BTreeMap::new();
            p.insert(BY.to_string(), v.name.clone());
            p.insert("side".to_string(), side.to_string());
            if let Some(bench) = v.parameters.get("bench") {
                p.insert("bench".to_string(), bench.clone());
            }
            variants.push(abperf_model::Variant {
                name: format!("{side}:{}", v.name),
                parameters: p,
                ..abperf_model::Variant::named(&v.name)
            });
            let obs = match unit {
                Unit::Round => round_runs(ds, pos),
                Unit::Invocation => invocation_runs(ds, pos, inv),
            };
            for (block, metrics) in obs {
                runs.push(Run {
                    block,
                    ..Run::ok(runs.len() as u32, at, metrics)
                });
            }
        }
    }
    let only_b = b
        .variants
        .iter()
        .filter(|v| wanted(&v.name) && a.position(&v.name).is_none())
        .map(|v| v.name.clone())
        .collect();
    let mut experiments = a.experiments.clone();
    experiments.extend(b.experiments.iter().cloned());
    let source = format!(
        "{} of {} (baseline) and {}",
        match unit {
            Unit::Round => "round medians",
            Unit::Invocation => "invocation means of the round medians",
        },
        a.source,
        b.source
    );
    let mut data = Dataset::new(experiments, variants, runs, source);
    // The rounds of two experiments share no schedule: no drift test across them.
    data.ordered = false;
    Paired {
        data,
        only_a,
        only_b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use abperf_model::Variant;

    fn micro(names: &[&str], rounds: &[&[f64]]) -> Dataset {
        let mut variants = Vec::new();
        let mut runs = Vec::new();
        for (i, n) in names.iter().enumerate() {
            let mut v = Variant::named(n);
            v.parameters.insert("bench".into(), "b".into());
            variants.push(v);
            for (r, xs) in rounds.iter().enumerate() {
                for &x in *xs {
                    runs.push(Run {
                        block: r as i32,
                        ..Run::ok(
                            runs.len() as u32,
                            i,
                            vec![Metric::new("cycles", x * (i + 1) as f64, "cycles")],
                        )
                    });
                }
            }
        }
        Dataset::new(Vec::new(), variants, runs, "t".into())
    }

    #[test]
    fn rounds_become_runs_of_their_medians_and_configs_pair_by_name() {
        let a = micro(&["b/x", "b/y"], &[&[1.0, 9.0, 2.0], &[4.0, 3.0]]);
        let b = micro(&["b/y", "b/z"], &[&[5.0]]);
        let none = Invocations::default();
        let p = pair(&a, &b, ["#1", "#2"], None, Unit::Round, [&none, &none]);
        assert_eq!(p.only_a, ["b/x"]);
        assert_eq!(p.only_b, ["b/z"]);
        let names: Vec<&str> = p.data.variants.iter().map(|v| v.name.as_str()).collect();
        assert_eq!(names, ["#1:b/y", "#2:b/y"]);
        assert_eq!(p.data.variants[1].parameters[BY], "b/y");
        // b/y is variant 1 of a (values doubled): round medians 4 and 7; in b, variant 0: 5.
        assert_eq!(p.data.values(0, "cycles"), [4.0, 7.0]);
        assert_eq!(p.data.values(1, "cycles"), [5.0]);
        let only = pair(
            &a,
            &b,
            ["#1", "#2"],
            Some("b/z"),
            Unit::Round,
            [&none, &none],
        );
        assert!(only.data.variants.is_empty());
        assert_eq!(only.only_b, ["b/z"]);
        // Rounds 0 and 1 of a's b/y in invocations 0 and 1: one observation each; b's one
        // round in invocation 0.
        let ia = Invocations(BTreeMap::from([((1, 0), 0), ((1, 1), 1)]));
        assert_eq!(ia.count(), 2);
        assert_eq!(none.count(), 1);
        let p = pair(&a, &b, ["#1", "#2"], None, Unit::Invocation, [&ia, &none]);
        assert_eq!(p.data.values(0, "cycles"), [4.0, 7.0]);
        assert_eq!(p.data.values(1, "cycles"), [5.0]);
        // Both rounds in one invocation: their mean.
        let one = Invocations(BTreeMap::from([((1, 0), 3), ((1, 1), 3)]));
        let p = pair(&a, &b, ["#1", "#2"], None, Unit::Invocation, [&one, &none]);
        assert_eq!(p.data.values(0, "cycles"), [5.5]);
        assert!(p.data.source.starts_with("invocation means"));
    }
}
