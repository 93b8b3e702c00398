//! What is measured besides wall time: rusage from wait4, perf_event_open counters, and the
//! environment snapshot stored with every experiment.

pub mod affinity;
pub mod build;
pub mod counters;
pub mod env;
pub mod kmsg;
pub mod process;
pub mod rusage;
pub mod trace_marker;
pub mod trace_owner;
pub mod tracefs;
pub mod tsc;
