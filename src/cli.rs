//! Command-line definitions (clap). One `Args` struct per subcommand lives beside its command in
//! `commands/`; this file only lists the subcommands and the options every store user shares.

use clap::{Parser, Subcommand};
use std::path::PathBuf;

#[derive(Debug, Parser)]
#[command(
    name = "abperf",
    version,
    about = "A/B/n performance experiments for Linux kernel and systems work"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// `--db PATH`, shared by every subcommand that reads or writes the store.
#[derive(Debug, Clone, clap::Args)]
pub struct DbArgs {
    /// SQLite store (default: $ABPERF_DB, else $XDG_DATA_HOME/abperf/abperf.db, else
    /// ~/.local/share/abperf/abperf.db)
    #[arg(long, value_name = "PATH")]
    pub db: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
#[allow(clippy::large_enum_variant)] // parsed once per process
pub enum Command {
    /// Run an A/B/n experiment: commands, -L parameters or -k kernel knobs as variants
    Run(crate::commands::run::RunArgs),
    /// List stored experiments
    List(crate::commands::list::ListArgs),
    /// Show an experiment: design, environment, per-variant summary
    Show(crate::commands::show::ShowArgs),
    /// Export every run and metric of an experiment (json or csv)
    Export(crate::commands::export::ExportArgs),
    /// Delete an experiment
    Delete(crate::commands::delete::DeleteArgs),
    /// Check this machine for noise sources; --fix applies safe settings, --restore puts them back
    Doctor(crate::commands::doctor::DoctorArgs),
    /// Import /usr/bin/time, perf stat or hyperfine output as runs
    Import(crate::commands::import::ImportArgs),
    /// Report an experiment as text, mail, Markdown, JSON, CSV, HTML or hyperfine JSON
    Report(crate::commands::report::ReportArgs),
    /// Microbenchmarks: TLB flush/shootdown/miss/refill, faults, syscall, ctxsw, xstate, signal
    Micro(crate::commands::micro::MicroArgs),
    /// Verdicts: each variant against the baseline (stored experiment, two experiments, or files)
    Compare(crate::commands::compare::CompareArgs),
    /// Runs per variant needed to resolve an effect, and their wall-clock cost
    Plan(crate::commands::plan::PlanArgs),
    /// Tracepoint captures (tracefs) into TLB-flush, pair-duration and count tables
    Trace(crate::commands::trace::TraceArgs),
    /// Built-in workloads (page-aging, kbuild, flush-storm, fork-exec, ctxsw, pagefault):
    /// list, show, exec, prepare
    Workload(crate::commands::workload::WorkloadArgs),
}
