//! `abperf report`: render one experiment as text, mail, Markdown, JSON, CSV, HTML, hyperfine
//! JSON or perf-stat blocks, with the same analysis as `abperf compare`.

use super::output::{self, AnalysisArgs};
use crate::report::{Format, View};
use crate::store::Store;
use std::path::PathBuf;

/// Report an experiment: verdicts, summary tables, plots, raw runs.
#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    /// Experiment id (a number or 'latest')
    #[arg(value_name = "ID")]
    pub id: String,
    /// Output format
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
    /// Write to FILE instead of standard output
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub analysis: AnalysisArgs,
    #[command(flatten)]
    pub db: crate::commands::DbArgs,
}

pub fn run(args: ReportArgs) -> anyhow::Result<i32> {
    args.analysis.check()?;
    let store = Store::open_to_read(&args.db.location()?)?;
    let id = super::lookup::experiment_id(&store, &args.id)?;
    let mut r = output::load(&store, id, View::Report)?;
    if r.data.runs.is_empty() {
        crate::error::stderr_line(&format!("abperf: note: experiment {id} has no runs yet"));
    }
    output::escape_for_people(&mut r, args.format);
    args.analysis
        .escaped_for(args.format)
        .analyse_into(&mut r)?;
    output::write(&args.format.render(&r)?, args.output.as_ref())?;
    Ok(0)
}
