//! The one shape of abperf's data, spoken by every other module: an experiment, its variants,
//! its runs and their metrics, as stored, imported, analysed and reported.
//!
//! - [`experiment`] holds [`Experiment`] (kind, design, environment, status), [`NewExperiment`]
//! - [`variant`] holds [`Variant`] (command, `-L` parameters, knobs, per-variant summaries, the
//!   built-in workload it runs: [`WorkloadRef`])
//! - [`run`] holds [`Run`] (sequence, status, timestamps, flags, metrics, import provenance), [`Slot`]
//! - [`metric`] holds [`Metric`], [`MetricInfo`] and [`Direction`] (which way is better)
//! - [`describe`] holds one description of a sample and one quantile definition (Hyndman-Fan type 7)
//!   for every table, plot and outlier fence
//! - [`dataset`] holds [`Dataset`], what every reader gets: which runs count, the values of a metric,
//!   and the data hash (`docs/data-hash.md`)
//! - [`ceiling`] holds the ceiling advisor's prediction (`abperf model ceiling`)
//! - [`boot`] holds [`BootConfig`] (what a kernel variant boots), [`BootPlan`] and [`Boot`] (the
//!   boots of a two-level experiment); [`boot_level`] the boot-level view of a [`Dataset`]
//! - [`provenance`] holds [`KernelProvenance`]: what a kernel variant's kernel was built from and
//!   the hashes of the image and modules it booted
//! - [`owner`] holds [`Owner`] (pid, start time, boot id, host: is the experiment's process still
//!   alive?) and [`KnobClaim`] (who holds a knob and what it held before)
//! - [`micro`], [`trace`] and [`tune`] hold the stored results of `abperf micro`, `abperf trace` and the
//!   settings `doctor --fix` / `run --tune` change
//! - [`doctor`], [`vm`] and [`workload`] hold the results of `abperf doctor` (a check), `abperf vm`
//!   (a cached kernel, the KVM probe) and `abperf workload` (a workload's description), made by
//!   the crates that find them and printed by `abperf-report`, which depends on none of those
//!
//! - [`error`] holds the errors callers branch on ([`error::UsageError`]: exit code 2) and the one
//!   way a message reaches the terminal; [`escape`] makes user text harmless there
//!
//! This crate depends on no other abperf crate (its Cargo.toml names none).

pub mod boot;
pub mod boot_level;
pub mod cache_dir;
pub mod ceiling;
pub mod dataset;
pub mod describe;
pub mod doctor;
pub mod error;
pub mod escape;
pub mod experiment;
pub mod history_point;
pub mod label;
pub mod metric;
pub mod micro;
pub mod number_text;
pub mod owner;
pub mod profile;
pub mod provenance;
pub mod replication;
pub mod run;
pub mod time;
pub mod trace;
pub mod tune;
pub mod variant;
pub mod vm;
pub mod workload;

pub use boot::{Boot, BootConfig, BootPlan, KernelSource, PatchId};
pub use dataset::Dataset;
pub use describe::{Description, Summary, describe};
pub use experiment::{Experiment, ExperimentSummary, Kind, NewExperiment, SequentialPlan, Status};
pub use metric::{Direction, Metric, MetricInfo};
pub use micro::MicroFinding;
pub use owner::{KnobClaim, Liveness, Owner};
pub use provenance::{KernelProvenance, PatchRef};
pub use replication::Level;
pub use run::{Labels, Run, RunStatus, Slot, Source};
pub use tune::{Setting, TuneRecord};
pub use variant::{KnobSetting, SummaryValue, Variant, WorkloadRef};
