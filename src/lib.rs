//! abperf: a performance laboratory for A/B/n experiments on Linux.
//!
//! The data path: `cli` -> `design` (variants, schedule) -> `runner` (timed child, wait4,
//! counters, knobs) -> `store` (SQLite) -> `stats` -> `report`.

pub mod cli;
pub mod commands;
pub mod design;
pub mod doctor;
pub mod error;
pub mod import;
pub mod measure;
pub mod micro;
pub mod model;
pub mod report;
pub mod runner;
pub mod stats;
pub mod store;
pub mod trace;
pub mod vm;
pub mod workload;
