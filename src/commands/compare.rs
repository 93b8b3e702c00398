//! `abperf compare`: verdicts for each variant against the baseline, from a stored experiment,
//! two stored experiments (e.g. two kernels), or files of numbers (ministat mode).

use super::compare_input::{from_files, two_experiments};
use super::output::{self, AnalysisArgs};
use super::{compare_micro, compare_profile, lookup};
use crate::error::usage;
use crate::report::{Format, Report, View};
use crate::store::Store;
use std::path::Path;

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Inputs: one experiment ID (each variant against the baseline), two experiment IDs \
(baseline and candidate, environment differences listed first), or two or more files of numbers \
(ministat mode: one value per line, '#' lines ignored, -c picks a column; the first file is the baseline).\n\n\
Text: the verdict lines first; with --pairs all, --by or --test variability, a summary written from the verdicts \
(per family: the fastest, significant differences in run-to-run variation, pairs that cannot be told apart and why; \
a conclusion) and a table of every pair; --details adds every test's figures per pair.\n\
The '(+- x%)' after each variant is perf stat's figure: the standard error of the mean relative to the mean.\n\
Verdicts: FASTER/SLOWER when the 1 - alpha CI of the ratio excludes 1 and p < alpha; NO DIFFERENCE when the \
1 - 2 alpha CI lies within +-margin; otherwise INCONCLUSIVE, with the runs per variant needed. Every interval is \
labelled with its own level (--alpha 0.01: 99% and 98%).\n\n\
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
    /// Text: every comparison in full after the verdict lines and the summary (test statistics,
    /// robust checks, variability, drift, outliers); JSON always holds all of it
    #[arg(long)]
    pub details: bool,
    /// Ministat mode: the whitespace-separated column to read (from 1)
    #[arg(short = 'c', long = "column", default_value_t = 1, value_name = "N")]
    pub column: usize,
    /// Ministat mode: every line is `mean sd n`, a summary of n runs (as perf stat -r prints
    /// them); compared with Welch from the summaries (no rank or bootstrap checks)
    #[arg(long, conflicts_with = "column")]
    pub summary: bool,
    /// Exit with status 3 when kernel variants ran the same configuration (the report's SAME
    /// CONFIGURATION note: their boots show no difference in what the kernel did; or SAME
    /// IMAGE: they booted byte-identical kernels)
    #[arg(long)]
    pub strict: bool,
    /// Text: under the verdicts, `git log --oneline BASE..VARIANT` for every kernel variant
    /// whose provenance names the revision it was built from (in --kernel-tree)
    #[arg(long)]
    pub git_log: bool,
    /// With --git-log: the git repository of the kernel source (default: the current directory)
    #[arg(long, value_name = "DIR", requires = "git_log")]
    pub kernel_tree: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub db: crate::commands::DbArgs,
}

/// `compare --strict`'s exit status when variants ran the same configuration.
pub const SAME_CONFIGURATION_EXIT: i32 = 3;

fn is_experiment_ref(s: &str) -> bool {
    s == "latest" || s.parse::<i64>().is_ok()
}

/// What the inputs name.
enum Inputs<'a> {
    /// Two or more files of numbers (ministat mode), the first the baseline.
    Files,
    /// One stored experiment: each variant against the baseline.
    One(&'a str),
    /// Two stored experiments: baseline and candidate.
    Two(&'a str, &'a str),
    /// More experiments than `compare` takes (refused once the store is open).
    Many(usize),
}

impl<'a> Inputs<'a> {
    /// Files or experiment references; a usage error for one file alone, a name that is
    /// neither, or a mix.
    fn of(inputs: &'a [String]) -> anyhow::Result<Inputs<'a>> {
        let files: Vec<bool> = inputs.iter().map(|p| Path::new(p).is_file()).collect();
        if files.iter().all(|&f| f) {
            if inputs.len() < 2 {
                return Err(usage(format!(
                    "{}: one file is one variant; give at least two files (the first is the baseline)",
                    inputs[0]
                )));
            }
            return Ok(Inputs::Files);
        }
        if let Some(bad) = inputs
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
        Ok(match inputs {
            [a] => Inputs::One(a),
            [a, b] => Inputs::Two(a, b),
            more => Inputs::Many(more.len()),
        })
    }
}

/// What the inputs give: a report to print as it is (a micro comparison or a micro
/// experiment's tables), or data whose variants are to be judged.
enum Loaded {
    Ready(Report),
    ToJudge(Report),
}

/// Load the inputs: files, one experiment, or one variant of each of two experiments (two
/// micro experiments: their comparison).
fn load(args: &CompareArgs) -> anyhow::Result<Loaded> {
    let db = &args.db.location()?;
    match Inputs::of(&args.inputs)? {
        Inputs::Files => Ok(Loaded::ToJudge(Report::new(
            from_files(&args.inputs, args.column, args.summary)?,
            View::Compare,
        ))),
        Inputs::One(reference) => {
            let store = Store::open_to_read(db)?;
            let id = lookup::experiment_id(&store, reference)?;
            one_experiment(&store, id, args)
        }
        Inputs::Two(a, b) => {
            let store = Store::open_to_read(db)?;
            let ids = [
                lookup::experiment_id(&store, a)?,
                lookup::experiment_id(&store, b)?,
            ];
            if let Some(r) = micro_report(&store, ids, args)? {
                return Ok(Loaded::Ready(r));
            }
            let (ds, diffs) = two_experiments(&store, ids, args.variant.as_deref())?;
            let mut r = Report::new(ds, View::Compare);
            r.env_diffs = diffs;
            Ok(Loaded::ToJudge(r))
        }
        Inputs::Many(n) => {
            Store::open_to_read(db)?;
            Err(usage(format!(
                "{n} experiment ids: give one experiment, or two to compare with each other"
            )))
        }
    }
}

/// Stored experiment `id`. Without a named baseline or `--by`, a micro experiment is not a set
/// of treatments: one of two variants of an interleaved `abperf micro -k` is compared with the
/// other, and any other gives its tables (`abperf micro` prints the same).
fn one_experiment(store: &Store, id: i64, args: &CompareArgs) -> anyhow::Result<Loaded> {
    let plain = args.analysis.baseline.is_none() && args.analysis.by.is_empty();
    if plain {
        match compare_micro::siblings(store, id)?.as_slice() {
            [] | [_] => {}
            &[x, y] => {
                if let Some(r) = micro_report(store, [x, y], args)? {
                    return Ok(Loaded::Ready(r));
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
    let micro = store.experiment(id)?.kind == crate::model::Kind::Micro;
    if micro && plain {
        return Ok(Loaded::Ready(output::load(store, id, View::Micro)?));
    }
    let mut r = output::load(store, id, View::Compare)?;
    if let Some(b) = args.analysis.baseline.as_deref()
        && r.profile.is_some()
    {
        r.profile = compare_profile::section(store, id, Some(b), false)?;
    }
    Ok(Loaded::ToJudge(r))
}

/// Load the inputs, judge their variants unless the report is ready as it is, and print it.
pub fn run(args: CompareArgs) -> anyhow::Result<i32> {
    args.analysis.check()?;
    let loaded = load(&args)?;
    let mut r = match loaded {
        Loaded::Ready(r) => r,
        Loaded::ToJudge(r) => judge(r, &args)?,
    };
    r.details = args.details;
    for n in r
        .notes
        .iter()
        .filter(|n| n.starts_with(output::MIXED_LABELS))
    {
        crate::error::stderr_line(&format!("abperf: warning: {n}"));
    }
    let mut text = args.format.render(&r)?;
    if args.format == Format::Text && args.git_log {
        let tree = args.kernel_tree.clone().unwrap_or_else(|| ".".into());
        text.push_str(&super::compare_git_log::block(&r, &tree));
    }
    output::write(&text, args.output.as_ref())?;
    let same = r.notes.iter().any(|n| {
        n.starts_with(crate::report::same_config::PREFIX)
            || n.starts_with(crate::report::same_config::IMAGE_PREFIX)
    });
    if args.strict && same {
        crate::error::stderr_line(
            "abperf: --strict: the variants ran the same configuration (see the SAME \
             CONFIGURATION or SAME IMAGE note)",
        );
        return Ok(SAME_CONFIGURATION_EXIT);
    }
    Ok(0)
}

/// The verdicts of `r`'s variants, with the names escaped for people when the format is read
/// by them.
fn judge(mut r: Report, args: &CompareArgs) -> anyhow::Result<Report> {
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
    Ok(r)
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
