//! `abperf doctor`: is this machine quiet enough to measure a 0.5% effect? One check per noise
//! source (cpufreq, SMT, ASLR, THP, NUMA balancing, swap, watchdogs, busy processes, VM, clock,
//! tracing, memory pressure), each with what it found, why it matters and how to fix it; and
//! the safe settings `doctor --fix` and `run --tune` apply (and always put back).

pub mod checks;
pub mod sys;
pub mod tune;

pub use crate::model::Setting;
pub use checks::{Check, Status, run_all};
pub use tune::recommended;

use serde_json::{Map, Value};

/// The environment snapshot stored with an experiment: the machine and kernel
/// (`measure::env::machine`) and every doctor check's finding under `doctor` (sampled over
/// [`DOCTOR_SAMPLE`]), so that comparing two experiments lists each check that differs.
pub fn environment() -> Value {
    let mut env = crate::measure::env::machine();
    let (doctor, sampled) = doctor_findings();
    if let Value::Object(m) = &mut env {
        m.insert("doctor".into(), doctor);
        m.insert("doctor_sampled".into(), sampled);
    }
    env
}

/// How long the snapshot samples other processes' CPU use (`abperf doctor` itself uses 1 s).
pub const DOCTOR_SAMPLE: std::time::Duration = std::time::Duration::from_millis(200);

/// Checks whose finding is a sample (CPU use, load, pressure, steal time) and differs every time.
const SAMPLED_CHECKS: &[&str] = &[
    "busy_processes",
    "load_average",
    "memory_pressure",
    "virtualization",
];

/// Every `abperf doctor` check: `doctor.NAME` = "status: finding" (for sampled checks only the
/// status, so a comparison lists them when their status changes, not every time), and the
/// sampled findings in `doctor_sampled.NAME`, which `differences` leaves out.
fn doctor_findings() -> (Value, Value) {
    let checks = run_all(&sys::Sys::real(), DOCTOR_SAMPLE);
    let mut m = Map::new();
    let mut sampled = Map::new();
    for c in checks {
        let status = c.status.as_str();
        if SAMPLED_CHECKS.contains(&c.name) {
            m.insert(c.name.to_string(), Value::String(status.to_string()));
            sampled.insert(c.name.to_string(), Value::String(c.finding));
        } else {
            m.insert(
                c.name.to_string(),
                Value::String(format!("{status}: {}", c.finding)),
            );
        }
    }
    (Value::Object(m), Value::Object(sampled))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn environment_holds_machine_and_findings() {
        let s = environment();
        assert!(s["kernel"].as_str().is_some_and(|k| !k.is_empty()));
        let d = s["doctor"].as_object().unwrap();
        assert!(d["thp"].as_str().unwrap().contains("enabled: "));
        assert_eq!(d.len(), 19);
        assert!(s["doctor_sampled"]["load_average"].as_str().is_some());
    }
}
