//! `abperf doctor`: is this machine quiet enough to measure a 0.5% effect? One check per noise
//! source (cpufreq, SMT, ASLR, THP, NUMA balancing, swap, watchdogs, busy processes, VM, clock,
//! tracing, memory pressure), each with what it found, why it matters and how to fix it; and
//! the safe settings `doctor --fix` and `run --tune` apply (and always put back).

pub mod checks;
pub mod sys;
pub mod tune;

pub use checks::{Check, Status, run_all};
pub use tune::{Setting, recommended};
