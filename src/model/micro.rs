//! What `abperf micro` concludes beside its samples: derived figures (knee, implied ceiling,
//! per-miss cost), skips and environment notes.

use serde::Serialize;

/// A derived microbenchmark figure, a skip reason or an environment note.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MicroFinding {
    /// Benchmark family (`tlb-flush`, ...), empty for suite-wide notes.
    pub bench: String,
    /// `madvise-knee`, `skipped`, `note`, ...
    pub key: String,
    pub value: Option<f64>,
    pub unit: String,
    pub text: String,
}
