//! Which abperf made a measurement: version, git commit and build date, shown by `abperf
//! --version` and stored in every experiment's environment snapshot under `abperf`. The commit
//! and date come from the binary's build script (the `abperf` crate) and are handed over by
//! [`set_identity`] when the program starts, so that a new commit rebuilds only that crate;
//! library code run without it (unit tests) says `unknown`.

use serde_json::{Value, json};
use std::sync::OnceLock;

/// The crate version, e.g. `0.1.0`.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

static IDENTITY: OnceLock<(&'static str, &'static str)> = OnceLock::new();

/// Record the git commit the binary was built from (12 hex digits, `-dirty` with uncommitted
/// changes, or `unknown`) and its build date (UTC, `YYYY-MM-DD`). The first call wins.
pub fn set_identity(commit: &'static str, build_date: &'static str) {
    let _ = IDENTITY.set((commit, build_date));
}

/// The build identity as stored in an experiment's environment.
pub fn identity() -> Value {
    let (commit, date) = IDENTITY.get().copied().unwrap_or(("unknown", "unknown"));
    json!({"version": VERSION, "commit": commit, "build_date": date})
}
