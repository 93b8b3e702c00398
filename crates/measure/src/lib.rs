//! What is measured besides wall time: rusage from wait4, perf_event_open counters, and the
//! environment snapshot stored with every experiment; and how the measured command is resolved
//! before it starts ([`command`]: a program found in PATH, or `sh -c` when [`shell`] syntax needs
//! it) and how its end is named ([`signals`]), shared by the runner and `abperf trace`.

pub mod affinity;
pub mod build;
pub mod command;
pub mod counters;
pub mod env;
pub mod kmsg;
pub mod perf_record;
pub mod process;
pub mod rusage;
pub mod shell;
pub mod signals;
pub mod trace_marker;
pub mod trace_owner;
pub mod tracefs;
pub mod tsc;
