//! Two micro experiments side by side, with the rounds as the unit: every configuration stored
//! in both becomes two variants (one per experiment) in a family of its own (parameter
//! [`BY`]), and each round of samples becomes one run whose metrics are the round's medians.
//! The comparison itself is the ordinary analysis (`stats::analysis` with `--by config`, one
//! Holm or BH correction over every configuration): samples within a round share the host's
//! phase, so comparing round medians puts the host's slow phases into the variance the test
//! accounts for instead of into thousands of falsely independent samples.

use abperf_model::describe::median;
use abperf_model::{Dataset, Metric, Run};
use std::collections::BTreeMap;

/// The parameter that names a configuration's family.
pub const BY: &str = "config";

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
/// `LABEL:CONFIG` with parameters `config`, `bench` and `side`, one run per round.
pub fn pair(a: &Dataset, b: &Dataset, labels: [&str; 2], only: Option<&str>) -> Paired {
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
        for (side, ds, pos) in [(labels[0], a, pa), (labels[1], b, pb)] {
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
            for (block, metrics) in round_runs(ds, pos) {
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
    let source = format!("round medians of {} (baseline) and {}", a.source, b.source);
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
        let p = pair(&a, &b, ["#1", "#2"], None);
        assert_eq!(p.only_a, ["b/x"]);
        assert_eq!(p.only_b, ["b/z"]);
        let names: Vec<&str> = p.data.variants.iter().map(|v| v.name.as_str()).collect();
        assert_eq!(names, ["#1:b/y", "#2:b/y"]);
        assert_eq!(p.data.variants[1].parameters[BY], "b/y");
        // b/y is variant 1 of a (values doubled): round medians 4 and 7; in b, variant 0: 5.
        assert_eq!(p.data.values(0, "cycles"), [4.0, 7.0]);
        assert_eq!(p.data.values(1, "cycles"), [5.0]);
        let only = pair(&a, &b, ["#1", "#2"], Some("b/z"));
        assert!(only.data.variants.is_empty());
        assert_eq!(only.only_b, ["b/z"]);
    }
}
