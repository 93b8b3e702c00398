//! Statistical bisection (`abperf bisect`, docs/bisect.md): which commit of a range changed a
//! noisy measurement, with the error of the name it gives controlled. [`posterior`] is the
//! location's posterior with the levels integrated out, [`search`] the state machine that chooses
//! what to measure and when to stop, [`simulate`] the seeded simulation that checks the error it
//! claims against plain bisection with a fixed number of runs per step.

pub mod posterior;
pub mod search;
pub mod simulate;

pub use search::{Ab, Bisection, Outcome, Settings, Step, sequential_ab};
