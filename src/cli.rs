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
    #[arg(long, value_name = "PATH", global = true)]
    pub db: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Microbenchmarks: TLB flush/shootdown/miss/refill, faults, syscall, ctxsw, xstate, signal
    Micro(crate::commands::micro::MicroArgs),
}
