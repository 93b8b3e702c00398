//! One variant of one experiment as `abperf history` reads it: the experiment's row (labels,
//! time, host, kernel) and the variant's summary of one metric, counted by the store (SQLite,
//! or the PostgreSQL server) without reading the runs.

use crate::experiment::Kind;
use crate::label::Labels;

/// A variant's summary of one metric in one experiment.
#[derive(Debug, Clone, PartialEq)]
pub struct HistoryPoint {
    pub experiment: i64,
    /// What made the experiment: `run` (its design can be run again), `import` (measured
    /// elsewhere: nothing to re-run) or `micro`.
    pub kind: Kind,
    /// UTC, RFC 3339.
    pub created: String,
    pub labels: Labels,
    /// The environment's hostname ("" when not recorded).
    pub host: String,
    /// The environment's kernel release ("" when not recorded).
    pub kernel: String,
    pub variant: String,
    /// The variant's command (or its workload's description), "" when it has none.
    pub command: String,
    pub metric: String,
    /// The replicates of the estimate: timed, successful, not excluded runs with the metric (a
    /// micro configuration: its rounds).
    pub runs: u64,
    pub mean: f64,
    /// Sample standard deviation (0 with one run).
    pub sd: f64,
}

impl HistoryPoint {
    /// The standard error of the mean, at the level the experiment was replicated at (its
    /// runs; a micro configuration's rounds).
    pub fn se(&self) -> f64 {
        if self.runs < 2 {
            f64::NAN
        } else {
            self.sd / (self.runs as f64).sqrt()
        }
    }
}
