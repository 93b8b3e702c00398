//! `abperf compare`: verdicts for each variant against the baseline, from a stored experiment,
//! two stored experiments (e.g. two kernels), or files of numbers (ministat mode).

use super::compare_input::{from_files, two_experiments};
use super::compare_micro;
use super::output::{self, AnalysisArgs};
use crate::error::usage;
use crate::report::{Format, Report, View};
use crate::store::Store;
use std::path::Path;

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Inputs: one experiment ID (each variant against the baseline), two experiment IDs \
(baseline and candidate, environment differences listed first), or two or more files of numbers \
(ministat mode: one value per line, '#' lines ignored, -c picks a column; the first file is the baseline).\n\n\
The '(+- x%)' after each variant is perf stat's figure: the standard error of the mean relative to the mean.\n\
Verdicts: FASTER/SLOWER when the 95% CI of the ratio excludes 1 and p < alpha; NO DIFFERENCE when the 90% CI \
lies within +-margin; otherwise INCONCLUSIVE, with the runs per variant needed.\n\n\
Two micro experiments: every configuration in both is compared with the rounds as the unit (each round's median \
is one observation), metric core_cycles, margin 2%, no bootstrap unless --metric/--margin/--resamples say \
otherwise, Holm over all configurations; --variant PREFIX picks configurations (e.g. tlb-flush). One micro \
experiment: its tables; one of two variants of an interleaved `abperf micro -k` run: the two variants compared."
)]
pub struct CompareArgs {
    /// Experiment ID ('latest'), two IDs, or files of numbers
    #[arg(value_name = "ID|FILE", required = true, num_args = 1..)]
    pub inputs: Vec<String>,
    /// With two experiments: the variant compared in both (default: the first of each); with two
    /// micro experiments: only the configurations whose name starts with NAME (e.g. tlb-flush)
    #[arg(long, value_name = "NAME")]
    pub variant: Option<String>,
    #[command(flatten)]
    pub analysis: AnalysisArgs,
    /// Output format
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Write to FILE instead of standard output
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<std::path::PathBuf>,
    /// Ministat mode: the whitespace-separated column to read (from 1)
    #[arg(short = 'c', long = "column", default_value_t = 1, value_name = "N")]
    pub column: usize,
    /// Ministat mode: every line is `mean sd n`, a summary of n runs (as perf stat -r prints
    /// them); compared with Welch from the summaries (no rank or bootstrap checks)
    #[arg(long, conflicts_with = "column")]
    pub summary: bool,
    #[command(flatten)]
    pub db: crate::commands::DbArgs,
}

fn is_experiment_ref(s: &str) -> bool {
    s == "latest" || s.parse::<i64>().is_ok()
}

/// Load the inputs: files, one experiment, or one variant of each of two experiments.
fn load(args: &CompareArgs) -> anyhow::Result<Report> {
    let files: Vec<bool> = args.inputs.iter().map(|p| Path::new(p).is_file()).collect();
    if files.iter().all(|&f| f) {
        if args.inputs.len() < 2 {
            return Err(usage(format!(
                "{}: one file is one variant; give at least two files (the first is the baseline)",
                args.inputs[0]
            )));
        }
        return Ok(Report::new(
            from_files(&args.inputs, args.column, args.summary)?,
            View::Compare,
        ));
    }
    if let Some(bad) = args
        .inputs
        .iter()
        .zip(&files)
        .find(|(p, f)| !**f && !is_experiment_ref(p))
    {
        return Err(usage(format!(
            "'{}': no such file, and not an experiment id (a number or 'latest')",
            bad.0
        )));
    }
    if files.iter().any(|&f| f) {
        return Err(usage(
            "mix of files and experiment ids: give only files or only ids",
        ));
    }
    let store = Store::open_resolved_for_reading(args.db.db.as_deref())?;
    match args.inputs.len() {
        1 => {
            let id = super::lookup::experiment_id(&store, &args.inputs[0])?;
            // One micro experiment: its configurations are not treatments of one workload;
            // without a named baseline, its tables (`abperf micro` prints the same).
            let micro = store.experiment(id)?.kind == crate::model::Kind::Micro;
            if micro && args.analysis.baseline.is_none() && args.analysis.by.is_none() {
                return output::load(&store, id, View::Micro);
            }
            output::load(&store, id, View::Compare)
        }
        2 => {
            let ida = super::lookup::experiment_id(&store, &args.inputs[0])?;
            let idb = super::lookup::experiment_id(&store, &args.inputs[1])?;
            let (ds, diffs) = two_experiments(&store, [ida, idb], args.variant.as_deref())?;
            let mut r = Report::new(ds, View::Compare);
            r.env_diffs = diffs;
            Ok(r)
        }
        n => Err(usage(format!(
            "{n} experiment ids: give one experiment, or two to compare with each other"
        ))),
    }
}

pub fn run(args: CompareArgs) -> anyhow::Result<i32> {
    args.analysis.check()?;
    if let [a, b] = args.inputs.as_slice()
        && is_experiment_ref(a)
        && is_experiment_ref(b)
        && !Path::new(a).is_file()
        && !Path::new(b).is_file()
    {
        let store = Store::open_resolved(args.db.db.as_deref())?;
        let ids = [
            super::lookup::experiment_id(&store, a)?,
            super::lookup::experiment_id(&store, b)?,
        ];
        if let Some(r) = micro_report(&store, ids, &args)? {
            return print(&r, &args);
        }
    }
    // One micro experiment measured as a variant of an interleaved `abperf micro -k`: its
    // variants compared with each other.
    if let [a] = args.inputs.as_slice()
        && is_experiment_ref(a)
        && !Path::new(a).is_file()
        && args.analysis.baseline.is_none()
        && args.analysis.by.is_none()
    {
        let store = Store::open_resolved_for_reading(args.db.db.as_deref())?;
        let id = super::lookup::experiment_id(&store, a)?;
        let group = compare_micro::siblings(&store, id)?;
        match group.as_slice() {
            [] | [_] => {}
            &[x, y] => {
                if let Some(r) = micro_report(&store, [x, y], &args)? {
                    return print(&r, &args);
                }
            }
            more => {
                return Err(usage(format!(
                    "experiment {id} is one of {} variants measured interleaved (experiments {}): \
                     compare two of them, e.g. abperf compare {} {}",
                    more.len(),
                    more.iter()
                        .map(|i| i.to_string())
                        .collect::<Vec<_>>()
                        .join(", "),
                    more[0],
                    more[1]
                )));
            }
        }
    }
    let mut r = load(&args)?;
    if r.view == View::Micro {
        return print(&r, &args);
    }
    if r.data.variants.len() < 2 {
        return Err(usage(format!(
            "only one variant ({}): nothing to compare it with",
            r.data.variant_names()
        )));
    }
    output::escape_for_people(&mut r, args.format);
    args.analysis
        .escaped_for(args.format)
        .analyse_into(&mut r)?;
    print(&r, &args)
}

/// The comparison of two micro experiments `ids` ([`compare_micro::report`]); `Ok(None)` when
/// they are not both micro experiments.
fn micro_report(
    store: &Store,
    ids: [i64; 2],
    args: &CompareArgs,
) -> anyhow::Result<Option<Report>> {
    compare_micro::report(store, ids, args.variant.as_deref(), &args.analysis)
}

/// Render `r` in the asked format to standard output or `-o FILE`: exit code 0.
fn print(r: &Report, args: &CompareArgs) -> anyhow::Result<i32> {
    output::write(&args.format.render(r)?, args.output.as_ref())?;
    Ok(0)
}
