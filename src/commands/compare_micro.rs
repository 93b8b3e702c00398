//! `abperf compare A B` of two micro experiments: configuration by configuration, the rounds
//! as the unit (`micro::compare::pair`), one family per configuration with the usual analysis
//! and one correction over them all, shown as the compact micro comparison
//! (`report::micro_compare`).

use super::output::AnalysisArgs;
use crate::error::usage;
use crate::micro::compare::{Invocations, Unit};
use crate::model::{Dataset, Kind, MicroFinding};
use crate::report::micro_compare::Basis;
use crate::report::{Report, View};
use crate::store::Store;

/// The metric judged when none is named: core clock cycles (they stay put when turbo moves
/// the core clock against the fixed-rate counter).
pub const DEFAULT_METRIC: &str = "core_cycles";

/// The equivalence margin (percent) for NO DIFFERENCE unless `--margin` names another.
pub const DEFAULT_MARGIN_PCT: f64 = 2.0;

/// The comparison report of `ids` when both are micro experiments (configurations whose name
/// starts with `only`, if given); `Ok(None)` when they are not.
pub fn report(
    store: &Store,
    ids: [i64; 2],
    only: Option<&str>,
    analysis: &AnalysisArgs,
) -> anyhow::Result<Option<Report>> {
    let kinds = [
        store.experiment(ids[0])?.kind,
        store.experiment(ids[1])?.kind,
    ];
    match kinds {
        [Kind::Micro, Kind::Micro] => {}
        [Kind::Micro, _] | [_, Kind::Micro] => {
            return Err(usage(format!(
                "experiment {} is a micro suite and {} is not: compare micro experiments with each other",
                if kinds[0] == Kind::Micro {
                    ids[0]
                } else {
                    ids[1]
                },
                if kinds[0] == Kind::Micro {
                    ids[1]
                } else {
                    ids[0]
                },
            )));
        }
        _ => return Ok(None),
    }
    if !analysis.by.is_empty() || analysis.baseline.is_some() {
        return Err(usage(
            "--by/--baseline: two micro experiments are compared configuration by configuration \
             (each its own family); pick configurations with --variant PREFIX",
        ));
    }
    let a = store.load(ids[0])?;
    let b = store.load(ids[1])?;
    let labels = labels_of(&a, &b, ids);
    let findings = [store.micro_findings(ids[0])?, store.micro_findings(ids[1])?];
    let inv = [
        Invocations::of(&store.micro_rounds(ids[0])?),
        Invocations::of(&store.micro_rounds(ids[1])?),
    ];
    let r = build(
        [&a, &b],
        labels,
        [&findings[0], &findings[1]],
        [&inv[0], &inv[1]],
        only,
        analysis,
    )?;
    Ok(Some(r))
}

/// The interleaving record of a micro experiment measured as one of several variants of one
/// `abperf micro -k` (design field `interleaved`): its group, position and label.
pub fn interleaved(design: &serde_json::Value) -> Option<(String, usize, String)> {
    let i = design.get("interleaved")?;
    Some((
        i.get("group")?.as_str()?.to_string(),
        i.get("index")?.as_u64()? as usize,
        i.get("label")?.as_str()?.to_string(),
    ))
}

/// Labels of two micro experiments: their variant labels when both are variants of one
/// interleaved `abperf micro -k`, else `#ID`.
fn labels_of(a: &Dataset, b: &Dataset, ids: [i64; 2]) -> [String; 2] {
    let ia = a.experiment().and_then(|e| interleaved(&e.design));
    let ib = b.experiment().and_then(|e| interleaved(&e.design));
    match (ia, ib) {
        (Some((ga, _, la)), Some((gb, _, lb))) if ga == gb && la != lb => [la, lb],
        _ => [format!("#{}", ids[0]), format!("#{}", ids[1])],
    }
}

/// The other variants of the interleaved `abperf micro -k` that measured experiment `id`, in
/// their order (`id` itself included); empty when it was not one of several.
pub fn siblings(store: &Store, id: i64) -> anyhow::Result<Vec<i64>> {
    let Some((group, _, _)) = interleaved(&store.experiment(id)?.design) else {
        return Ok(Vec::new());
    };
    let mut found = Vec::new();
    for e in store.list()? {
        if e.kind != "micro" {
            continue;
        }
        if let Some((g, i, _)) = interleaved(&store.experiment(e.id)?.design)
            && g == group
        {
            found.push((i, e.id));
        }
    }
    found.sort();
    Ok(found.into_iter().map(|(_, id)| id).collect())
}

/// How two micro experiments can be compared ([`Basis`]): with several invocations on both
/// sides, the invocations are the unit; measured interleaved in one process (`micro -k`, one
/// invocation each), the rounds; otherwise the rounds' comparison is within one process, which
/// says nothing of the variance between two processes, and the verdicts are withheld.
/// With `boots`, each invocation was a boot of its own (`micro --kernel`), and the unit is
/// called so.
pub fn basis(same_group: bool, inv: [&Invocations; 2], labels: &[String; 2], boots: bool) -> Basis {
    let n = [inv[0].count(), inv[1].count()];
    let unit = if n[0] >= 2 && n[1] >= 2 {
        Unit::Invocation
    } else {
        Unit::Round
    };
    let processes = |n: usize| match (n, boots) {
        (1, false) => "one process".to_string(),
        (1, true) => "one boot".to_string(),
        (n, false) => format!("{n} processes (invocations)"),
        (n, true) => format!("{n} boots"),
    };
    let withheld = (unit == Unit::Round && !(same_group && n == [1, 1])).then(|| {
        format!(
            "No verdicts: {} was measured in {} and {} in {}, so the variance between \
             processes cannot be estimated, and rounds within one process understate it (two \
             separate runs of the same kernel differ by more than their rounds vary; see \
             docs/micro.md). For verdicts, measure both with --invocations N (N >= 2 each; the \
             invocations are then the replicates), or both in one command with -k.",
            labels[0],
            processes(n[0]),
            labels[1],
            processes(n[1])
        )
    });
    Basis {
        unit: match unit {
            Unit::Invocation if boots => "boot",
            u => u.as_str(),
        },
        invocations: n,
        withheld,
    }
}

/// Whether a micro experiment's invocations were boots (`micro --kernel`).
fn booted(d: &Dataset) -> bool {
    d.experiment()
        .and_then(|e| e.design.pointer("/vm/level").and_then(|l| l.as_str()))
        == Some("boot")
}

/// The comparison report of two micro suites `data` (baseline first) labelled `labels`, with
/// their findings and their rounds' invocations `inv`: configurations in both (whose name
/// starts with `only`, if given), the unit as [`basis`] says.
pub fn build(
    data: [&Dataset; 2],
    labels: [String; 2],
    findings: [&[MicroFinding]; 2],
    inv: [&Invocations; 2],
    only: Option<&str>,
    analysis: &AnalysisArgs,
) -> anyhow::Result<Report> {
    let [a, b] = data;
    let group = |d: &Dataset| {
        d.experiment()
            .and_then(|e| interleaved(&e.design))
            .map(|g| g.0)
    };
    let same_group = group(a).is_some() && group(a) == group(b);
    let basis = basis(same_group, inv, &labels, booted(a) && booted(b));
    let unit = if basis.unit == "round" {
        Unit::Round
    } else {
        Unit::Invocation
    };
    let paired = crate::micro::compare::pair(a, b, [&labels[0], &labels[1]], only, unit, inv);
    if paired.data.variants.is_empty() {
        return Err(usage(match only {
            Some(p) => format!(
                "--variant {p:?}: no configuration of both experiments starts with it \
                 (e.g. {})",
                a.variants
                    .iter()
                    .take(3)
                    .map(|v| v.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            None => format!(
                "{} and {} have no configuration in common",
                labels[0], labels[1]
            ),
        }));
    }
    let mut analysis = analysis.clone();
    analysis.by = vec![crate::micro::compare::BY.to_string()];
    if analysis.metric.is_empty() {
        analysis.metric = vec![DEFAULT_METRIC.to_string()];
    }
    // An equivalence margin of 0.2% (the default for whole workloads) is below a micro
    // benchmark's resolution: the counter's step alone is 2-26 ticks of a few hundred.
    if analysis.margin == AnalysisArgs::default().margin {
        analysis.margin = DEFAULT_MARGIN_PCT;
    }
    // Hundreds of configurations: the bootstrap cross-check (10,000 resamples each) would take
    // minutes; the verdicts are Welch/Fieller's. Asked for explicitly, it runs.
    if analysis.resamples == crate::stats::bootstrap::DEFAULT_RESAMPLES {
        analysis.resamples = 0;
    }
    let mut r = Report::new(paired.data, View::Compare);
    let (ea, eb) = (&r.data.experiments[0], &r.data.experiments[1]);
    let mut diffs = crate::measure::env::differences(&ea.environment, &eb.environment);
    diffs.extend(crate::micro::pressure_difference(&ea.design, &eb.design));
    r.env_diffs = diffs;
    analysis.analyse_into(&mut r)?;
    let mut m = crate::report::micro_compare::build(
        &r,
        labels,
        findings,
        [paired.only_a, paired.only_b],
        basis,
    );
    m.interleaved = same_group;
    // A whole family moving one way is what a phase of the host looks like between two runs;
    // measured interleaved, round r of each side shared the phase, and it is what a real
    // change looks like.
    if m.interleaved {
        m.cautions.clear();
    }
    // Knees of the flush curve: estimated in every round of both sides and compared.
    let alpha = r.analysis.as_ref().map_or(0.05, |x| x.options.alpha);
    for f in m.findings.iter_mut() {
        if let Some(op) = f.key.strip_suffix("-knee")
            && f.bench == "tlb-flush"
        {
            let knees = |d: &Dataset| -> Vec<Option<f64>> {
                crate::micro::knees::round_knees(d, &f.bench, op)
                    .into_iter()
                    .map(|k| k.map(|k| k as f64))
                    .collect()
            };
            let (ka, kb) = (knees(a), knees(b));
            if !ka.is_empty() && !kb.is_empty() {
                f.rounds = Some(crate::report::micro_compare::RoundEstimates::of(
                    &ka, &kb, alpha,
                ));
            }
        }
    }
    r.micro_compare = Some(m);
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::micro::{MicroRound, RoundProbe};

    fn inv(invocations: &[u32]) -> Invocations {
        let rounds: Vec<MicroRound> = invocations
            .iter()
            .enumerate()
            .map(|(r, &i)| MicroRound {
                variant: 0,
                round: r as u32,
                invocation: i,
                probe: RoundProbe {
                    started_ns: 0,
                    ticks_per_core_cycle: 1.0,
                    adds_per_cycle: f64::NAN,
                },
                cycles: vec![1.0],
            })
            .collect();
        Invocations::of(&rounds)
    }

    #[test]
    fn the_unit_follows_how_the_sides_were_measured() {
        let labels = ["#1".to_string(), "#2".to_string()];
        let (one, three) = (inv(&[0, 0]), inv(&[0, 1, 2]));
        // Several invocations on both sides: the invocations (or boots) are the unit.
        let b = basis(false, [&three, &three], &labels, false);
        assert_eq!((b.unit, b.invocations), ("invocation", [3, 3]));
        assert!(b.withheld.is_none());
        assert_eq!(basis(true, [&three, &three], &labels, true).unit, "boot");
        // Interleaved in one process: the rounds, with verdicts.
        let b = basis(true, [&one, &one], &labels, false);
        assert_eq!(b.unit, "round");
        assert!(b.withheld.is_none());
        // Separate processes, one on a side: no verdict, and why.
        let w = basis(false, [&one, &three], &labels, false)
            .withheld
            .unwrap();
        assert!(
            w.starts_with("No verdicts: #1 was measured in one process and #2 in 3 processes"),
            "{w}"
        );
        let w = basis(false, [&one, &one], &labels, true).withheld.unwrap();
        assert!(w.contains("#1 was measured in one boot"), "{w}");
    }
}
