//! Which abperf made a measurement: version, git commit and build date (from `build.rs`), shown by
//! `abperf --version` and stored in every experiment's environment snapshot under `abperf`.

use serde_json::{Value, json};

/// The crate version, e.g. `0.1.0`.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
/// The git commit the binary was built from (12 hex digits, `-dirty` with uncommitted changes),
/// or `unknown` (a source tree without git history or `.git-commit`).
pub const COMMIT: &str = env!("ABPERF_COMMIT");
/// The build date, UTC, `YYYY-MM-DD`.
pub const BUILD_DATE: &str = env!("ABPERF_BUILD_DATE");
/// What `--version` prints after the program name.
pub const LONG_VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("ABPERF_COMMIT"),
    ", built ",
    env!("ABPERF_BUILD_DATE"),
    ")"
);

/// The build identity as stored in an experiment's environment.
pub fn identity() -> Value {
    json!({"version": VERSION, "commit": COMMIT, "build_date": BUILD_DATE})
}
