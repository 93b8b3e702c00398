//! One file per subcommand: glue from parsed options to the library.

pub mod compare;
pub mod compare_input;
pub mod compare_micro;
pub mod completions;
pub mod delete;
pub mod doctor;
pub mod export;
pub mod hints;
pub mod import;
pub mod list;
pub mod lookup;
pub mod metrics;
pub mod micro;
pub mod model;
pub mod output;
pub mod plan;
pub mod plan_levels;
pub mod report;
pub mod run;
pub mod run_boots;
pub mod show;
pub mod trace;
pub mod vm;
pub mod workload;

use std::path::PathBuf;

/// What `abperf --version` prints after the name: version, commit, build date.
pub const LONG_VERSION: &str = crate::measure::build::LONG_VERSION;

/// `--db PATH`, shared by every subcommand that reads or writes the store.
#[derive(Debug, Clone, clap::Args)]
pub struct DbArgs {
    /// SQLite store (default: $ABPERF_DB, else $XDG_DATA_HOME/abperf/abperf.db, else
    /// ~/.local/share/abperf/abperf.db)
    #[arg(long, value_name = "PATH")]
    pub db: Option<PathBuf>,
}
