//! Running experiments: the design of an experiment (variants, `-L` parameters, knobs, the
//! seeded schedule), the runner that executes it (spawn, wait4, counters, knobs written,
//! verified and restored, boots of kernel variants, the experiment loop that commits every run)
//! and `doctor`, which checks and quiets the machine the runs share.

pub mod boot_loop;
pub mod design;
pub mod doctor;
pub mod fleet;
pub mod runner;
