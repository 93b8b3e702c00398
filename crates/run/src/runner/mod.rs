//! Running workloads: spawn a timed child (fork/exec to wait4), knobs (write, verify, restore),
//! signal handling, built-in workloads as variants (`@NAME`), and the experiment loop that
//! commits every run the moment it ends.

pub mod boots;
pub mod command;
pub mod cpuset;
pub mod experiment;
pub mod guest;
pub mod knob_file;
pub mod knob_lock;
pub mod knobs;
pub mod noise;
pub mod preflight;
pub mod shell;
pub mod signals;
pub mod spawn;
pub mod spawn_fork;
pub mod spawn_helper;
mod spawn_posix;
pub mod spawn_server;
pub mod workload;

pub use command::Prepared;
pub use experiment::{RunConfig, execute};
pub use knobs::KnobGuard;
