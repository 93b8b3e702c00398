//! abperf: a performance laboratory for A/B/n experiments on Linux.
//!
//! This crate is the command line (`cli`, `commands`); the work is done by the workspace's
//! crates, re-exported here under the names the commands use (docs/architecture.md has the map):
//! `cli` -> `design` (variants, schedule) -> `runner` (timed child, wait4, counters, knobs) ->
//! `store` (SQLite or PostgreSQL) -> `stats` -> `report`.

pub mod cli;
pub mod commands;

pub use abperf_import as import;
pub use abperf_ksrc as ksrc;
pub use abperf_measure as measure;
pub use abperf_micro as micro;
pub use abperf_model as model;
pub use abperf_model::error;
pub use abperf_report as report;
pub use abperf_run::{boot_loop, design, doctor, fleet, runner};
pub use abperf_stats as stats;
pub use abperf_store as store;
pub use abperf_trace as trace;
pub use abperf_vm as vm;
pub use abperf_workload as workload;
