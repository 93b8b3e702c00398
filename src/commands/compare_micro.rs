//! `abperf compare A B` of two micro experiments: configuration by configuration, the rounds
//! as the unit (`micro::compare::pair`), one family per configuration with the usual analysis
//! and one correction over them all, shown as the compact micro comparison
//! (`report::micro_compare`).

use super::compare::CompareArgs;
use super::output;
use crate::error::usage;
use crate::model::Kind;
use crate::report::{Report, View};
use crate::store::Store;

/// The metric judged when none is named: core clock cycles (they stay put when turbo moves
/// the core clock against the fixed-rate counter).
pub const DEFAULT_METRIC: &str = "core_cycles";

/// The equivalence margin (percent) for NO DIFFERENCE unless `--margin` names another.
pub const DEFAULT_MARGIN_PCT: f64 = 2.0;

/// Compare `ids` when both are micro experiments; `Ok(None)` when they are not.
pub fn run(store: &Store, ids: [i64; 2], args: &CompareArgs) -> anyhow::Result<Option<i32>> {
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
    if args.analysis.by.is_some() || args.analysis.baseline.is_some() {
        return Err(usage(
            "--by/--baseline: two micro experiments are compared configuration by configuration \
             (each its own family); pick configurations with --variant PREFIX",
        ));
    }
    let a = store.load(ids[0])?;
    let b = store.load(ids[1])?;
    let labels = [format!("#{}", ids[0]), format!("#{}", ids[1])];
    let paired =
        crate::micro::compare::pair(&a, &b, [&labels[0], &labels[1]], args.variant.as_deref());
    if paired.data.variants.is_empty() {
        return Err(usage(match &args.variant {
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
                "experiments {} and {} have no configuration in common",
                ids[0], ids[1]
            ),
        }));
    }
    let mut analysis = args.analysis.clone();
    analysis.by = Some(crate::micro::compare::BY.to_string());
    if analysis.metric.is_empty() {
        analysis.metric = vec![DEFAULT_METRIC.to_string()];
    }
    // An equivalence margin of 0.2% (the default for whole workloads) is below a micro
    // benchmark's resolution: the counter's step alone is 2-26 ticks of a few hundred.
    if analysis.margin == output::AnalysisArgs::default().margin {
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
    let findings = [store.micro_findings(ids[0])?, store.micro_findings(ids[1])?];
    r.micro_compare = Some(crate::report::micro_compare::build(
        &r,
        labels,
        [&findings[0], &findings[1]],
        [paired.only_a, paired.only_b],
    ));
    output::write(&args.format.render(&r)?, args.output.as_ref())?;
    Ok(Some(0))
}
