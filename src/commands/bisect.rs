//! `abperf bisect`: which commit of a git range changed a measured command, by the statistical
//! bisection of `stats::bisect` (docs/bisect.md). What is bisected, a program or a kernel, is
//! chosen once ([`Plan::bisect`], [`builder`]); each revision is built once ([`revisions`]); every step (the ends' A/B, each search round, the confirmation) is
//! an ordinary run experiment in the store, made and executed by the run machinery ([`step`]),
//! linked to the bisection by its design ([`stored`]); `--resume` replays the stored steps and
//! goes on; `bisect status` and the final report ([`report`]) are read from the store alone.

mod builder;
mod drive;
pub(super) mod git;
mod kernel;
mod report;
mod revisions;
mod step;
mod stored;

use crate::commands::DbArgs;
use crate::commands::kernel_git::SourceArgs;
use crate::commands::vm::VmSettings;
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
    branch it merged (--descend-merges runs it). With --kernel-tree DIR instead of --build, the \
    kernel is bisected: each revision's kernel is built as --kernel git:REV builds it (untimed, \
    --kconfig, --patch; cached by content, so a revision is built once: about 30-45 s for a \
    neighbouring commit of a tinyconfig tree on 2 cores, 10 s for a cache hit), each probe boots \
    in VMs interleaved with both ends, one boot per revision and round (the boots are the \
    replicates; --warmup counts per boot), and the command runs in the guest. A revision whose \
    kernel does not build is skipped. See docs/bisect.md for what a kernel bisection costs."
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
    #[arg(long, value_name = "CMD", required_unless_present = "kernel_tree")]
    pub build: Option<String>,
    /// Bisect a kernel: the revisions are those of this git tree (a work tree or a bare
    /// repository, never modified), each built as --kernel git:REV and booted in VMs; the
    /// command runs in the guest (instead of --build and --repo)
    #[arg(long, value_name = "DIR", conflicts_with_all = ["build", "repo"])]
    pub kernel_tree: Option<std::path::PathBuf>,
    /// The base configuration of the kernels (with --kernel-tree): defconfig, tinyconfig,
    /// running or a .config file, abperf's fragment merged in [default: tinyconfig]
    #[arg(long, value_name = "BASE")]
    pub kconfig: Option<String>,
    /// A patch applied on top of every revision's kernel (with --kernel-tree; repeatable)
    #[arg(long = "patch", value_name = "FILE")]
    pub patches: Vec<std::path::PathBuf>,
    #[command(flatten)]
    pub vm: VmSettings,
    /// Keep each boot's console (kernel log) in DIR (with --kernel-tree)
    #[arg(long, value_name = "DIR")]
    pub vm_console: Option<std::path::PathBuf>,
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
    /// The measured command (after --), run in the revision's worktree (in the guest, for a
    /// kernel)
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
        let ended = plan.bisect()?;
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

/// What is bisected: a program built by a command, or a kernel.
#[derive(Debug)]
pub enum Kind {
    /// `--build CMD`.
    Program(String),
    /// `--kernel-tree DIR` (the tree is the plan's repository) and the VMs.
    Kernel {
        source: SourceArgs,
        vm: VmSettings,
        console: Option<std::path::PathBuf>,
    },
}

impl Kind {
    /// The kind `a` asks for (`--build` or `--kernel-tree`, taken out of `a`) and the
    /// repository the range is read from (None: the current directory).
    fn of(a: &mut BisectArgs) -> anyhow::Result<(Kind, Option<std::path::PathBuf>)> {
        Ok(match (a.build.take(), a.kernel_tree.take()) {
            (Some(build), None) => {
                let kernel_only = [
                    ("--kconfig", a.kconfig.is_some()),
                    ("--patch", !a.patches.is_empty()),
                    ("--vm-console", a.vm_console.is_some()),
                    ("--accel", a.vm.accel.is_some()),
                    ("--vm-cpus", a.vm.vm_cpus.is_some()),
                    ("--vm-memory", a.vm.vm_memory.is_some()),
                    ("--vm-pin", a.vm.vm_pin.is_some()),
                    ("--boot-timeout", a.vm.boot_timeout.is_some()),
                ];
                if let Some((flag, _)) = kernel_only.iter().find(|f| f.1) {
                    return Err(usage(format!(
                        "{flag} applies to a kernel bisection: give --kernel-tree DIR"
                    )));
                }
                (Kind::Program(build), a.repo.take())
            }
            (None, Some(tree)) => {
                if a.vm_console.as_ref().is_some_and(|d| !d.is_dir()) {
                    return Err(usage("--vm-console: expected an existing directory"));
                }
                let source = SourceArgs {
                    kernel_tree: Some(tree.clone()),
                    patches: std::mem::take(&mut a.patches),
                    kconfig: a.kconfig.take(),
                };
                let kind = Kind::Kernel {
                    source,
                    vm: std::mem::take(&mut a.vm),
                    console: a.vm_console.take(),
                };
                (kind, Some(tree))
            }
            _ => return Err(usage("bisect: give --build CMD or --kernel-tree DIR")),
        })
    }
}

/// `bisect`'s options, checked once.
#[derive(Debug)]
pub struct Plan {
    pub good: String,
    pub bad: String,
    pub repo: std::path::PathBuf,
    pub kind: Kind,
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
    fn of(mut a: BisectArgs) -> anyhow::Result<Plan> {
        let (Some(good), Some(bad)) = (a.good.take(), a.bad.take()) else {
            return Err(usage("bisect: --good and --bad are required"));
        };
        let (kind, repo) = Kind::of(&mut a)?;
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
        let repo = match repo {
            Some(r) => r,
            None => std::env::current_dir()?,
        };
        let repo = std::fs::canonicalize(&repo)
            .map_err(|e| usage(format!("--repo {}: {e}", repo.display())))?;
        Ok(Plan {
            good,
            bad,
            repo,
            kind,
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

    /// Bisect with the plan's kind of bisection: the one place it is chosen.
    fn bisect(&self) -> anyhow::Result<drive::Ended> {
        match &self.kind {
            Kind::Program(build) => {
                let shell = builder::ShellBuild {
                    repo: self.repo.clone(),
                    command: build.clone(),
                };
                drive::bisect(self, shell, build.clone())
            }
            Kind::Kernel {
                source,
                vm,
                console,
            } => {
                let mut source = source.clone();
                // The canonical tree, as the range is read from it.
                source.kernel_tree = Some(self.repo.clone());
                let k = kernel::KernelBuild::new(source, vm, console.clone())?;
                let described = k.describe();
                drive::bisect(self, k, described)
            }
        }
    }
}
