//! A variant: one of the things an experiment compares.

use super::boot::BootConfig;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A kernel knob as stored with its variant: the value this variant sets and what the file held
/// before abperf touched it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KnobSetting {
    pub path: String,
    pub value: String,
    /// The file's content before abperf wrote it (None until read).
    pub original: Option<String>,
}

/// A figure a tool reported once per variant, without per-run values (hyperfine's mean user and
/// system time). Never copied onto runs: that would invent per-run values.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SummaryValue {
    pub value: f64,
    pub unit: String,
}

/// The built-in workload a variant runs (`abperf run @NAME:K=V,...`), as it was when the
/// experiment was made. Every run of the variant uses this version: `run --resume` refuses an
/// abperf whose workload has another version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkloadRef {
    pub name: String,
    /// Bumped whenever what the workload measures changes.
    pub version: u32,
    /// Every parameter with its value, defaults filled in (`seed` only when the command fixes
    /// it).
    pub params: BTreeMap<String, String>,
    /// Each run gets `seed` = the experiment's seed + the run's sequence number (false: the
    /// command fixes `seed`).
    pub per_run_seed: bool,
}

/// One variant. Its position is its index in the experiment's variant list (0 = the default
/// baseline).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Variant {
    pub name: String,
    /// The command it runs (None for micro configurations and tool summaries).
    pub command: Option<String>,
    /// `-L` parameter values (and, for micro configurations, the configuration's parameters).
    pub parameters: BTreeMap<String, String>,
    pub knobs: Vec<KnobSetting>,
    /// Figures its tool reported only per variant (imports), by name.
    pub summary: BTreeMap<String, SummaryValue>,
    /// The kernel (and command line) it boots, for a kernel variant (`run --kernel/--append`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub boot: Option<BootConfig>,
    /// The built-in workload it runs, for a workload variant (`run @NAME`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workload: Option<WorkloadRef>,
    /// What its kernel was built from and the hashes of what it booted, for a kernel variant
    /// (stored in `kernel_provenance`; None for other variants and stores before it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provenance: Option<super::provenance::KernelProvenance>,
}

impl Variant {
    /// A variant with a name and nothing else.
    pub fn named(name: &str) -> Variant {
        Variant {
            name: name.to_string(),
            command: None,
            parameters: BTreeMap::new(),
            knobs: Vec::new(),
            summary: BTreeMap::new(),
            boot: None,
            workload: None,
            provenance: None,
        }
    }
}
