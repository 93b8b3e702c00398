//! `abperf bisect`: which commit of a git range changed a measured command, by the statistical
//! bisection of `stats::bisect` (docs/bisect.md). Each revision is built once in a private
//! worktree ([`worktrees`]); every step (the ends' A/B, each search round, the confirmation) is
//! an ordinary run experiment in the store, made and executed by the run machinery ([`step`]),
//! linked to the bisection by its design ([`stored`]); `--resume` replays the stored steps and
//! goes on; `bisect status` and the final report ([`report`]) are read from the store alone.

mod builder;
mod drive;
pub(super) mod git;
mod report;
mod step;
mod stored;
mod worktrees;

use crate::commands::DbArgs;
use crate::error::usage;
use crate::stats::bisect::Settings;

/// `abperf bisect --good REV --bad REV --build CMD -- CMD...`, or `abperf bisect status [ID]`.
#[derive(Debug, clap::Args)]
#[command(
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true,
    after_help = "Bisects any git repository: each revision is checked out with `git worktree add \
    --detach` into a private directory (never your checkout), built there with --build, and the \
    command runs in that worktree ({WORKTREE} names it). Every probe runs interleaved with both \
    ends; the culprit is named only when an A/B against its parent confirms it. The range is the \
    first-parent line; a culprit that is a merge is said to be one, with the bisection of the \
    branch it merged (--descend-merges runs it). Kernels (build, boot, measure) are not bisected \
    yet: --build is the only way to build a revision until the issue \"From a commit or a patch \
    to a booted kernel\" lands."
)]
pub struct BisectArgs {
    #[command(subcommand)]
    pub sub: Option<BisectSub>,
    /// The revision known good (before the change)
    #[arg(long, value_name = "REV", required = true)]
    pub good: Option<String>,
    /// The revision known bad (after the change)
    #[arg(long, value_name = "REV", required = true)]
    pub bad: Option<String>,
    /// The git repository (default: the current directory)
    #[arg(long, value_name = "DIR")]
    pub repo: Option<std::path::PathBuf>,
    /// The build command, run by `sh -c` in each revision's worktree; a revision whose build
    /// fails is skipped
    #[arg(long, value_name = "CMD", required = true)]
    pub build: Option<String>,
    /// The metric the bisection follows (default: wall time)
    #[arg(long, value_name = "NAME", default_value = "wall_ns")]
    pub metric: String,
    /// Posterior mass one commit must hold to be the candidate is 1 - delta
    #[arg(long, default_value_t = 0.05)]
    pub delta: f64,
    /// Level of the ends' A/B and of the confirmation
    #[arg(long, default_value_t = 0.05)]
    pub alpha: f64,
    /// The most rounds of the ends' A/B (one run of each end per round); it stops at the first
    /// of --looks looks that decides
    #[arg(long, value_name = "N", default_value_t = 60)]
    pub ends_runs: usize,
    /// Runs of the probe per search round (each end runs as often)
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub probe_runs: usize,
    /// The most search rounds
    #[arg(long, value_name = "N", default_value_t = 500)]
    pub max_rounds: usize,
    /// The most rounds of the confirmation (candidate against its parent); it stops at the
    /// first of --looks looks that decides
    #[arg(long, value_name = "N", default_value_t = 100)]
    pub confirm_runs: usize,
    /// Equally spaced looks of the ends' A/B and of the confirmation (O'Brien-Fleming
    /// boundaries as `run --until-decided`, the false-call rate kept at alpha); 1: fixed
    /// numbers of rounds
    #[arg(long, value_name = "K", default_value_t = 5)]
    pub looks: usize,
    /// Seed of every step's run order (default: random; always printed and stored)
    #[arg(long)]
    pub seed: Option<u64>,
    /// Untimed warm-up runs per revision in every step
    #[arg(long, default_value_t = 0)]
    pub warmup: u32,
    /// Command run untimed before each run (in the revision's worktree)
    #[arg(long, visible_alias = "prepare", value_name = "CMD")]
    pub pre: Option<String>,
    /// Pin the workload (and --pre) to these CPUs, e.g. 1 or 0-1
    #[arg(long, value_name = "CPUS")]
    pub pin: Option<String>,
    /// Kill a run's process group after S seconds and record it as timed out
    #[arg(long, value_name = "S")]
    pub timeout: Option<f64>,
    /// Show the workload's output (default: discarded)
    #[arg(long)]
    pub show_output: bool,
    /// The report's format
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// When the culprit is a merge, bisect the branch it merged in turn (from where it forked to
    /// its tip), as a new bisection (default: the report says so and gives the command)
    #[arg(long)]
    pub descend_merges: bool,
    /// Continue bisection ID (the command line must be the same as when it started)
    #[arg(long, value_name = "ID")]
    pub resume: Option<String>,
    #[command(flatten)]
    pub db: DbArgs,
    /// The measured command (after --), run in the revision's worktree
    #[arg(last = true, value_name = "CMD", required = true)]
    pub command: Vec<String>,
}

#[derive(Debug, clap::Subcommand)]
pub enum BisectSub {
    /// A bisection's report (done or in progress), or every bisection of the store
    Status(StatusArgs),
}

#[derive(Debug, clap::Args)]
pub struct StatusArgs {
    /// The bisection (the id of its first experiment); without it, every bisection
    #[arg(value_name = "ID")]
    pub id: Option<String>,
    /// The report's format
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    #[command(flatten)]
    pub db: DbArgs,
}

/// How a bisection is reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Text,
    /// A reply to a regression report
    Mail,
    Json,
}

pub fn run(args: BisectArgs) -> anyhow::Result<i32> {
    if let Some(BisectSub::Status(s)) = args.sub {
        return drive::status(&s);
    }
    let mut plan = Plan::of(args)?;
    loop {
        let ended = drive::bisect(&plan)?;
        let Some((base, tip)) = ended.descend else {
            return Ok(ended.code);
        };
        // The culprit is a merge: bisect the branch it merged, a new bisection of its own.
        crate::error::stderr_line(&format!(
            "abperf: bisect: the culprit is a merge; bisecting the merged branch with --good \
             {base} --bad {tip} (a new bisection; resume it with those two and its own id)"
        ));
        plan.good = base;
        plan.bad = tip;
        plan.resume = None;
    }
}

/// `bisect`'s options, checked once.
#[derive(Debug)]
pub struct Plan {
    pub good: String,
    pub bad: String,
    pub repo: std::path::PathBuf,
    pub build: String,
    pub command: String,
    pub metric: String,
    pub settings: Settings,
    pub seed: u64,
    pub warmup: u32,
    pub pre: Option<String>,
    pub pin: Option<String>,
    pub timeout: Option<f64>,
    pub show_output: bool,
    pub format: Format,
    pub resume: Option<String>,
    pub descend_merges: bool,
    pub db: DbArgs,
}

impl Plan {
    fn of(a: BisectArgs) -> anyhow::Result<Plan> {
        let (Some(good), Some(bad), Some(build)) = (a.good, a.bad, a.build) else {
            return Err(usage("bisect: --good, --bad and --build are required"));
        };
        let unit = |flag: &str, v: f64| -> anyhow::Result<()> {
            if v.is_finite() && v > 0.0 && v < 0.5 {
                Ok(())
            } else {
                Err(usage(format!(
                    "{flag}: expected a number above 0 and below 0.5, got {v}"
                )))
            }
        };
        unit("--delta", a.delta)?;
        unit("--alpha", a.alpha)?;
        for (flag, v, low) in [
            ("--ends-runs", a.ends_runs, 2),
            ("--confirm-runs", a.confirm_runs, 2),
            ("--probe-runs", a.probe_runs, 1),
            ("--max-rounds", a.max_rounds, 1),
        ] {
            if !(low..=10_000).contains(&v) {
                return Err(usage(format!("{flag}: expected {low} to 10000, got {v}")));
            }
        }
        if !(1..=20).contains(&a.looks) {
            return Err(usage(format!("--looks {}: expected 1 to 20", a.looks)));
        }
        let least = a.ends_runs.min(a.confirm_runs);
        if a.looks > 1 && least < 4 * a.looks {
            return Err(usage(format!(
                "--looks {} with --ends-runs {} and --confirm-runs {}: expected at least 4 \
                 rounds per look (both {} or more, or --looks 1)",
                a.looks,
                a.ends_runs,
                a.confirm_runs,
                4 * a.looks
            )));
        }
        if let Some(t) = a.timeout
            && !(t.is_finite() && t > 0.0)
        {
            return Err(usage(format!(
                "--timeout: expected a positive number of seconds, got {t}"
            )));
        }
        if a.command.is_empty() || a.command.iter().all(|w| w.trim().is_empty()) {
            return Err(usage("bisect: the measured command (after --) is empty"));
        }
        let repo = match a.repo {
            Some(r) => r,
            None => std::env::current_dir()?,
        };
        let repo = std::fs::canonicalize(&repo)
            .map_err(|e| usage(format!("--repo {}: {e}", repo.display())))?;
        Ok(Plan {
            good,
            bad,
            repo,
            build,
            // One word is a command line as written (shell syntax and all); several are words.
            command: match a.command.as_slice() {
                [one] => one.clone(),
                words => shell_words::join(words),
            },
            metric: a.metric,
            settings: Settings {
                delta: a.delta,
                alpha: a.alpha,
                ends_runs: a.ends_runs,
                probe_runs: a.probe_runs,
                max_rounds: a.max_rounds,
                confirm_runs: a.confirm_runs,
                looks: a.looks,
            },
            seed: a.seed.unwrap_or_else(rand::random),
            warmup: a.warmup,
            pre: a.pre,
            pin: a.pin,
            timeout: a.timeout,
            show_output: a.show_output,
            format: a.format,
            resume: a.resume,
            descend_merges: a.descend_merges,
            db: a.db,
        })
    }

    /// How each revision is built: the one place the kind of build is chosen (`--build` today;
    /// a kernel built from the revision joins here as a second [`builder::Builder`]).
    fn builder(&self) -> Box<dyn builder::Builder> {
        Box::new(builder::ShellBuild {
            command: self.build.clone(),
        })
    }
}
