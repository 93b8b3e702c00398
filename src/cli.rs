//! Command-line definitions (clap). One `Args` struct per subcommand lives beside its command in
//! `commands/` (with the options several share, `DbArgs` and `AnalysisArgs`); this file only
//! lists the subcommands.

use crate::commands;
use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "abperf",
    version = commands::LONG_VERSION,
    propagate_version = true,
    about = "A/B/n performance experiments for Linux kernel and systems work"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
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
    /// Stores as a whole: `store copy FROM TO` copies experiments from one store into another
    Store(crate::commands::store_copy::StoreArgs),
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
    /// Series of experiments over time or a label: change points with error control,
    /// re-measured with --confirm (text, mail, JSON, HTML)
    History(crate::commands::history::HistoryArgs),
    /// Runs per variant needed to resolve an effect, and their wall-clock cost
    Plan(crate::commands::plan::PlanArgs),
    /// Which commit of a git range changed a measured command: statistical bisection, every
    /// probe interleaved with both ends, the culprit confirmed by an A/B (`bisect status [ID]`)
    Bisect(crate::commands::bisect::BisectArgs),
    /// Tracepoint captures (tracefs) into TLB-flush, pair-duration and count tables
    Trace(crate::commands::trace::TraceArgs),
    /// Kernels built from source (--kernel git:REV): list, build or gc the cache of built kernels
    Kernel(crate::commands::kernel::KernelCmdArgs),
    /// Kernels as virtual machines: fetch kernel packages, probe KVM, run a command in a kernel
    Vm(crate::commands::vm::VmArgs),
    /// One experiment over the hosts of an Ansible inventory: `fleet run -i INVENTORY`, `fleet
    /// status ID`
    Fleet(crate::commands::fleet::FleetArgs),
    /// The boot loop on this machine (run --boot-on-host): status, stop, resume (at boot), unit
    BootLoop(crate::commands::boot_loop::BootLoopArgs),
    /// Models on stored data: `model ceiling` predicts the best tlb_single_page_flush_ceiling
    #[command(visible_alias = "advise")]
    Model(crate::commands::ceiling::ModelArgs),
    /// Built-in workloads (page-aging, kbuild, flush-storm, fork-exec, ctxsw, pagefault):
    /// list, show, exec, prepare
    Workload(crate::commands::workload::WorkloadArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell)
    Completions(crate::commands::completions::CompletionsArgs),
    /// Print the manual page (roff), or write every page into a directory
    Man(crate::commands::completions::ManArgs),
}

/// Parse the command line, run the subcommand, print a one-line error; returns the exit code.
pub fn main() -> i32 {
    // SIGPIPE stays ignored (Rust's default), so a closed pipe is an EPIPE error, never a death
    // with knobs changed: `run` catches it as a signal and stops like Ctrl-C after restoring
    // (exit 141); elsewhere a print to the closed pipe panics, and that panic is turned into the
    // same quiet exit 141 below after every guard on the way has run (`abperf show 3 | head`).
    commands::quiet_print_failures();
    crate::store::Location::adopt_environment();
    let cli = match parser()
        .try_get_matches()
        .and_then(|m| Cli::from_arg_matches(&m))
    {
        Ok(c) => c,
        Err(e) => {
            if let Some(msg) = renamed(&e) {
                crate::error::stderr_line(&msg);
                return 2;
            }
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return code;
        }
    };
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| dispatch(cli)));
    match result {
        Ok(Ok(code)) => code,
        Ok(Err(e)) => {
            crate::error::stderr_line(&format!("abperf: error: {e:#}"));
            crate::error::exit_code(&e)
        }
        Err(payload) => match commands::print_failure(payload.as_ref()) {
            // The output went away (a closed pipe, a hung-up terminal): nothing to say, and
            // nowhere to say it.
            Some(code) => code,
            None => std::panic::resume_unwind(payload),
        },
    }
}
/// Flags renamed where the old name cannot stay as an alias because it means something else in
/// another subcommand: (subcommand, old name, the new name and why).
const RENAMED: &[(&str, &str, &str)] = &[(
    "abperf vm run",
    "--cpu",
    "--cpu-model MODEL (the QEMU CPU model; --cpu is a CPU number, as in abperf micro)",
)];

/// For an unknown flag that is a renamed one, the line that names its new name (clap's own
/// suggestion could be another flag).
fn renamed(e: &clap::Error) -> Option<String> {
    use clap::error::{ContextKind, ErrorKind};
    if e.kind() != ErrorKind::UnknownArgument {
        return None;
    }
    let arg = e.get(ContextKind::InvalidArg)?.to_string();
    let usage = e.get(ContextKind::Usage)?.to_string();
    RENAMED
        .iter()
        .find(|(cmd, old, _)| {
            (arg == *old || arg.starts_with(&format!("{old}=")))
                && usage.contains(&format!("{cmd} "))
        })
        .map(|(cmd, old, new)| format!("abperf: error: {cmd} {old} is now {new}"))
}

/// The parser, with every subcommand taking negative numbers as values: `-r -1` is then refused
/// by the flag's own value parser, which names the flag ("invalid value '-1' for '--runs <RUNS>'"),
/// instead of clap's "unexpected argument '-1'" that names none.
pub fn parser() -> clap::Command {
    fn negatives_are_values(c: clap::Command) -> clap::Command {
        c.allow_negative_numbers(true)
            .mut_subcommands(negatives_are_values)
    }
    negatives_are_values(Cli::command())
}

fn dispatch(cli: Cli) -> anyhow::Result<i32> {
    match cli.command {
        Command::Run(a) => commands::run::run(a),
        Command::List(a) => commands::list::run(a),
        Command::Show(a) => commands::show::run(a),
        Command::Export(a) => commands::export::run(a),
        Command::Delete(a) => commands::delete::run(a),
        Command::Store(a) => commands::store_copy::run(a),
        Command::Doctor(a) => commands::doctor::run(a),
        // `perf script` recordings are profiled runs, not timed runs: their own importer.
        Command::Import(args) if args.format == crate::import::Format::PerfScript => {
            commands::import_profile::run(args)
        }
        Command::Import(args) => commands::import::run(args),
        Command::Report(args) => commands::report::run(args),
        Command::Micro(a) => commands::micro::run(a),
        Command::Compare(args) => commands::compare::run(args),
        Command::Plan(args) => commands::plan::run(args),
        Command::Bisect(a) => commands::bisect::run(a),
        Command::History(a) => commands::history::run(a),
        Command::Trace(a) => commands::trace::run(a),
        Command::Kernel(a) => commands::kernel::run(a),
        Command::Vm(a) => commands::vm::run(a),
        Command::Model(a) => commands::ceiling::run(a),
        Command::BootLoop(a) => commands::boot_loop::run(a),
        Command::Fleet(a) => commands::fleet::run(a),
        Command::Workload(a) => commands::workload::run(a),
        Command::Completions(a) => commands::completions::completions(a, Cli::command()),
        Command::Man(a) => commands::completions::man(a, Cli::command()),
    }
}
