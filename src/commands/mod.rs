//! One file per subcommand: glue from parsed options to the library.

pub mod bisect;
pub mod boot_loop;
pub mod ceiling;
pub mod ceiling_validate;
pub mod compare;
pub mod compare_git_log;
pub mod compare_input;
pub mod compare_micro;
pub mod compare_profile;
pub mod completions;
pub mod delete;
pub mod doctor;
pub mod export;
pub mod fleet;
pub mod hints;
pub mod history;
pub mod history_bisect;
pub mod history_confirm;
pub mod import;
pub mod import_profile;
pub mod kernel;
pub mod kernel_git;
pub mod list;
pub mod lookup;
pub mod metrics;
pub mod micro;
pub mod micro_args;
pub mod micro_invocations;
pub mod micro_kernels;
pub mod micro_variants;
pub mod output;
pub mod plan;
pub mod plan_levels;
pub mod report;
pub mod run;
pub mod show;
pub mod store_copy;
pub mod trace;
pub mod vm;
pub mod workload;

use crate::store::Location;
use clap::builder::{OsStringValueParser, TypedValueParser};

/// The longest span a seconds flag takes (`--timeout`, `--duration`, `--boot-timeout`, ...):
/// 10,000,000 s, about 115 days. Beyond it a `Duration` from the value could overflow.
pub const MAX_SECONDS: f64 = 1e7;

/// `s` seconds given with `flag`, checked: above 0 and below [`MAX_SECONDS`], else a usage
/// error naming the flag and the range.
pub fn positive_seconds(flag: &str, s: f64) -> anyhow::Result<std::time::Duration> {
    if s > 0.0 && s < MAX_SECONDS {
        Ok(std::time::Duration::from_secs_f64(s))
    } else {
        // 1e308 as typed, not as 309 digits
        let shown = if s.abs() >= 1e9 {
            format!("{s:e}")
        } else {
            s.to_string()
        };
        Err(crate::error::usage(format!(
            "{flag} {shown}: expected a number of seconds above 0 and below {MAX_SECONDS:.0} \
             (about 115 days)"
        )))
    }
}

/// What `abperf --version` prints after the name: version, commit, build date.
pub const LONG_VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("ABPERF_COMMIT"),
    ", built ",
    env!("ABPERF_BUILD_DATE"),
    ")"
);

/// `--db PATH`, shared by every subcommand that reads or writes the store.
#[derive(Debug, Clone, clap::Args)]
pub struct DbArgs {
    /// The store: an SQLite file, or a PostgreSQL database as a postgres:// URL (default:
    /// $ABPERF_DB, else $XDG_DATA_HOME/abperf/abperf.db, else ~/.local/share/abperf/abperf.db)
    #[arg(long, value_name = "PATH", value_parser = OsStringValueParser::new().map(Location::parse))]
    pub db: Option<Location>,
    /// How long to wait for a PostgreSQL store's server (connection, login, any statement)
    /// before giving up as a failed commit does
    #[arg(long, value_name = "SECONDS", default_value_t = 60.0)]
    pub db_timeout: f64,
}

impl DbArgs {
    /// The store's location: `--db`, else the default (`Location::resolve`); how long its
    /// server is waited for is set here, once.
    pub fn location(&self) -> anyhow::Result<Location> {
        crate::store::set_wait_limit(positive_seconds("--db-timeout", self.db_timeout)?);
        Location::resolve(self.db.as_ref())
    }
}

/// The exit code for a panic that is only a failed print to standard output or error: 141
/// (128 + SIGPIPE) for a closed pipe, 128 + N after signal N (a hung-up terminal comes with
/// SIGHUP), else 1. `None` for any other panic.
pub fn print_failure(payload: &(dyn std::any::Any + Send)) -> Option<i32> {
    let msg = panic_text(payload)?;
    if !msg.starts_with("failed printing to std") {
        return None;
    }
    if let Some(sig) = crate::runner::signals::received() {
        return Some(128 + sig);
    }
    Some(if msg.contains("Broken pipe") {
        128 + libc::SIGPIPE
    } else {
        1
    })
}

fn panic_text(payload: &(dyn std::any::Any + Send)) -> Option<&str> {
    payload
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| payload.downcast_ref::<&str>().copied())
}

/// Keep the default panic message except for failed prints (see [`print_failure`]): those end
/// the process quietly once the stack has unwound through every guard.
pub fn quiet_print_failures() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if !panic_text(info.payload()).is_some_and(|m| m.starts_with("failed printing to std")) {
            default(info);
        }
    }));
}
