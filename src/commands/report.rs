//! `abperf report`: render one experiment as text, mail, Markdown, JSON, CSV, HTML or
//! hyperfine JSON.

use crate::error::usage;
use crate::report::{self, ReportFormat, ReportOptions};
use crate::store::Store;
use anyhow::Context;
use std::io::Write;
use std::path::PathBuf;

/// Report an experiment: verdicts, summary tables, plots, raw runs.
#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    /// Experiment id (a number or 'latest')
    #[arg(value_name = "ID")]
    pub id: String,
    /// Output format
    #[arg(long, value_enum, default_value = "text")]
    pub format: ReportFormat,
    /// Write to FILE instead of standard output
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Metric(s) to give verdicts for (repeatable, or 'all'; default wall_ns, else the first metric)
    #[arg(long, value_name = "NAME")]
    pub metric: Vec<String>,
    /// Baseline variant (default: the first)
    #[arg(long, value_name = "NAME")]
    pub baseline: Option<String>,
    /// Significance level
    #[arg(long, default_value_t = 0.05, value_name = "P")]
    pub alpha: f64,
    #[command(flatten)]
    pub db: crate::cli::DbArgs,
}

pub fn run(args: ReportArgs) -> anyhow::Result<i32> {
    if !(args.alpha > 0.0 && args.alpha < 1.0) {
        return Err(usage(format!(
            "--alpha {}: expected a number between 0 and 1 (e.g. 0.05)",
            args.alpha
        )));
    }
    let store = Store::open_resolved(args.db.db.as_deref())?;
    let id = store.resolve_id(&args.id)?;
    let opts = ReportOptions {
        metrics: args.metric.clone(),
        baseline: args.baseline.clone(),
        alpha: args.alpha,
    };
    let data = report::build(&store, id, &opts)?;
    if data.runs.is_empty() {
        eprintln!("abperf: note: experiment {id} has no runs yet");
    }
    let text = report::render(args.format, &data)?;
    match &args.output {
        Some(p) => {
            std::fs::write(p, text).with_context(|| format!("cannot write {}", p.display()))?
        }
        None => {
            let mut out = std::io::stdout().lock();
            if let Err(e) = out.write_all(text.as_bytes()).and_then(|_| out.flush())
                && e.kind() != std::io::ErrorKind::BrokenPipe
            {
                return Err(e).context("cannot write to standard output");
            }
        }
    }
    Ok(0)
}
