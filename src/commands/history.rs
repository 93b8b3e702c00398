//! `abperf history`: the store's experiments as series, their change points with error
//! control (docs/history.md), `--confirm` re-measuring each change (`history_confirm`).

use super::DbArgs;
use super::{history_bisect, history_confirm};
use crate::error::usage;
use crate::report::history::{self as h, HistoryReport, Order};
use crate::store::Store;
use anyhow::Context;
use std::path::PathBuf;

/// The exit status of `--fail-on` when a change it names was found.
pub const REGRESSION_EXIT: i32 = 3;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum HistoryFormat {
    /// the series and the changes (one series: its points)
    Text,
    /// each change as a regression report, at most 72 columns
    Mail,
    /// every series with its points and changes
    Json,
    /// an index and one page per series (needs -o DIR)
    Html,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FailOn {
    /// a change that --confirm confirmed makes a metric worse
    Regression,
    /// a detected change makes a metric worse (no re-measurement)
    Detected,
}

#[derive(Debug, clap::Args)]
pub struct HistoryArgs {
    /// The series to show point by point: its number in the listing, or text of its
    /// description (command, variant, host); default: every series, its changes listed
    #[arg(long, value_name = "SELECTOR")]
    pub series: Option<String>,
    /// The metric (one every run has: wall_ns, user_ns, sys_ns, maxrss_kib, minflt, ...)
    #[arg(long, default_value = "wall_ns", value_name = "M")]
    pub metric: String,
    /// Order of the points: a label's key (numbers numerically, else as text), or `time`
    #[arg(long = "order-by", default_value = "time", value_name = "LABEL|time")]
    pub order: String,
    /// Only the series of this variant name
    #[arg(long, value_name = "NAME")]
    pub variant: Option<String>,
    /// Probability of a false change in a change-free series, and 1 - the intervals' level;
    /// also the false discovery rate across series
    #[arg(long, default_value_t = 0.05, value_name = "A")]
    pub alpha: f64,
    /// Output format (html: an index and one page per series, written into -o DIR)
    #[arg(long, value_enum, default_value_t = HistoryFormat::Text)]
    pub format: HistoryFormat,
    /// Write here instead of standard output (a directory for --format html)
    #[arg(short = 'o', long = "output", value_name = "PATH")]
    pub output: Option<PathBuf>,
    /// Exit with status 3 when such a change was found
    #[arg(long, value_enum, value_name = "WHAT")]
    pub fail_on: Option<FailOn>,
    /// Re-measure each change: an interleaved A/B of the stored commands on either side of its
    /// location, stored as a new experiment (labelled history-confirm)
    #[arg(long)]
    pub confirm: bool,
    /// Timed runs per side of each re-measurement
    #[arg(long, default_value_t = 10, value_name = "N")]
    pub confirm_runs: u32,
    /// Run the stored commands --confirm prints (a store is shared: what it holds is not
    /// trusted without this)
    #[arg(long, requires = "confirm")]
    pub trust_stored_design: bool,
    /// With --confirm: the label carrying each experiment's commit; a change whose sides carry
    /// different commits (and ran the same command) gets the `abperf bisect` of the commits
    /// between them
    #[arg(long, default_value = "commit", value_name = "KEY")]
    pub commit_label: String,
    /// With --confirm: run those bisections (needs --repo and --build) instead of printing them
    #[arg(long, requires_all = ["confirm", "repo", "build"])]
    pub bisect: bool,
    /// The git repository of the commits (for the bisection's command line, or --bisect)
    #[arg(long, value_name = "DIR", requires = "confirm")]
    pub repo: Option<PathBuf>,
    /// The build command of the bisection, run in each revision's worktree
    #[arg(long, value_name = "CMD", requires = "confirm")]
    pub build: Option<String>,
    #[command(flatten)]
    pub db: DbArgs,
}

fn check(args: &HistoryArgs) -> anyhow::Result<Order> {
    if !(args.alpha > 0.0 && args.alpha < 0.5) {
        return Err(usage(format!(
            "--alpha {}: expected a level between 0 and 0.5",
            args.alpha
        )));
    }
    if args.format == HistoryFormat::Html && args.output.is_none() {
        return Err(usage(
            "--format html writes a directory of pages: give it with -o DIR",
        ));
    }
    if args.fail_on == Some(FailOn::Regression) && !args.confirm {
        return Err(usage(
            "--fail-on regression judges confirmed changes: add --confirm (or --fail-on detected)",
        ));
    }
    if !(1..=100_000).contains(&args.confirm_runs) || (args.confirm && args.confirm_runs < 2) {
        return Err(usage("--confirm-runs: expected 2 to 100000"));
    }
    if !crate::model::label::valid_key(&args.commit_label) {
        return Err(usage(format!(
            "--commit-label '{}': expected a label key",
            args.commit_label
        )));
    }
    Ok(match args.order.as_str() {
        "time" => Order::Time,
        l if crate::model::label::valid_key(l) => Order::Label(l.to_string()),
        l => {
            return Err(usage(format!(
                "--order-by '{l}': expected a label key or 'time'"
            )));
        }
    })
}

pub fn run(args: HistoryArgs) -> anyhow::Result<i32> {
    let order = check(&args)?;
    let location = args.db.location()?;
    let store = Store::open_to_read(&location)?;
    let points = store.history_points(&args.metric).map_err(|e| {
        if e.to_string().starts_with("--metric") {
            usage(e.to_string())
        } else {
            e
        }
    })?;
    drop(store);
    let mut series = h::group(points, &order);
    if let Some(v) = &args.variant {
        series.retain(|s| &s.key.variant == v);
    }
    if let Some(sel) = &args.series {
        let one = h::select(&series, sel).map_err(usage)?.clone();
        series = vec![one];
    }
    let mut report =
        h::analyse(series, order, args.alpha, args.series.is_some()).map_err(anyhow::Error::msg)?;
    if args.confirm {
        let settings = history_confirm::Settings {
            metric: args.metric.clone(),
            alpha: args.alpha,
            confirm_runs: args.confirm_runs,
            trust_stored_design: args.trust_stored_design,
        };
        history_confirm::confirm_all(&mut report, &location, &settings)?;
        let bisect = history_bisect::Settings {
            label: args.commit_label.clone(),
            repo: args.repo.clone(),
            build: args.build.clone(),
            run: args.bisect,
            metric: args.metric.clone(),
            alpha: args.alpha,
            trust_stored_design: args.trust_stored_design,
        };
        history_bisect::bisect_all(&mut report, &location, &bisect)?;
    }
    write(&report, &args)?;
    Ok(exit_status(&report, args.fail_on))
}

fn write(r: &HistoryReport, args: &HistoryArgs) -> anyhow::Result<()> {
    let text = match args.format {
        HistoryFormat::Text => h::text::render(r),
        HistoryFormat::Mail => h::mail::render(r),
        HistoryFormat::Json => h::json::render(r),
        HistoryFormat::Html => {
            let dir = args.output.as_ref().context("-o DIR")?;
            std::fs::create_dir_all(dir)
                .with_context(|| format!("creating the directory {}", dir.display()))?;
            for (name, page) in h::html::render(r) {
                let path = dir.join(name);
                std::fs::write(&path, page)
                    .with_context(|| format!("writing {}", path.display()))?;
            }
            return Ok(());
        }
    };
    super::output::write(&text, args.output.as_ref())
}

/// 3 when `--fail-on` names a change that was found, else 0.
fn exit_status(r: &HistoryReport, fail_on: Option<FailOn>) -> i32 {
    let hit = r.changes().any(|(_, c)| {
        c.regression
            && match fail_on {
                None => false,
                Some(FailOn::Detected) => true,
                Some(FailOn::Regression) => c.confirmed.as_ref().is_some_and(|k| k.confirmed),
            }
    });
    if hit {
        crate::error::stderr_line("abperf: history: a change made a metric worse (--fail-on)");
        REGRESSION_EXIT
    } else {
        0
    }
}
