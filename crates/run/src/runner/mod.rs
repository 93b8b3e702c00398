//! Running workloads: spawn a timed child (fork/exec to wait4), knobs (write, verify, restore),
//! signal handling, built-in workloads as variants (`@NAME`), and the experiment loop that
//! commits every run the moment it ends.

pub mod boots;
pub mod cpuset;
pub mod experiment;
pub mod guest;
pub mod knob_file;
pub mod knob_lock;
pub mod knobs;
pub mod noise;
pub mod preflight;
pub mod profiled;
pub mod signals;
pub mod spawn;
pub mod spawn_fork;
pub mod spawn_helper;
mod spawn_posix;
pub mod spawn_server;
pub mod workload;

pub use abperf_measure::command::Prepared;
/// How a command is resolved (a program in PATH, or `sh -c`) lives below the runner, where
/// `abperf-trace` starts its command too.
pub use abperf_measure::{command, shell};
pub use experiment::{RunConfig, execute};
pub use knobs::KnobGuard;
