//! The settings `abperf doctor --fix` and `abperf run --tune` change, and the record of each
//! change that lets `doctor --restore` (or the run itself) put back exactly what was there.

use serde::{Deserialize, Serialize};

/// One setting to apply: write `value` to `path`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Setting {
    pub path: String,
    pub value: String,
    /// What it holds now (selected choice for multiple-choice files).
    pub current: String,
}

/// Who made a tune session.
pub const SOURCE_FIX: &str = "doctor --fix";
pub const SOURCE_RUN: &str = "run --tune";

/// One recorded setting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TuneRecord {
    pub id: i64,
    pub session_id: i64,
    pub source: String,
    pub experiment_id: Option<i64>,
    pub path: String,
    pub original: String,
    pub value: String,
    pub state: String,
    pub changed: String,
}
