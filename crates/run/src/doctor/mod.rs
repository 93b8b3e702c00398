//! `abperf doctor`: is this machine quiet enough to measure a 0.5% effect? One check per noise
//! source (cpufreq, SMT, ASLR, THP, NUMA balancing, swap, watchdogs, busy processes, VM, clock,
//! tracing, memory pressure), each with what it found, why it matters and how to fix it; and
//! the safe settings `doctor --fix` and `run --tune` apply (and always put back).

pub mod checks;
pub mod sys;
pub mod tune;

pub use abperf_model::Setting;
pub use checks::{Check, Status, run_all};
pub use tune::recommended;

use serde_json::{Map, Value};

/// The environment snapshot stored with an experiment: the machine and kernel
/// (`measure::env::machine`) and every doctor check's finding under `doctor` (sampled over
/// [`DOCTOR_SAMPLE`]), so that comparing two experiments lists each check that differs.
pub fn environment() -> Value {
    let mut env = abperf_measure::env::machine();
    let (doctor, sampled) = doctor_findings();
    if let Value::Object(m) = &mut env {
        m.insert("doctor".into(), doctor);
        m.insert("doctor_sampled".into(), sampled);
    }
    env
}

/// The snapshot without sampling: the machine and kernel and every check that reads a setting
/// (`doctor.NAME` = "status: finding"), read at once, with no scan of /proc. The sampled checks
/// (other processes' CPU use, load, steal, memory pressure) and irqbalance (a scan of the
/// process list) are left out: `abperf run` adds them from its samples over the runs
/// ([`Sampling`]).
pub fn environment_unsampled() -> Value {
    let mut env = abperf_measure::env::machine();
    let mut m = Map::new();
    for c in checks::settings(&sys::Sys::real()) {
        m.insert(
            c.name.to_string(),
            Value::String(format!("{}: {}", c.status.as_str(), c.finding)),
        );
    }
    if let Value::Object(e) = &mut env {
        e.insert("doctor".into(), Value::Object(m));
    }
    env
}

/// `env` with the keys of `patch` set, an object merged one level down (as the store's
/// `merge_environment` does): a [`Sampling::finish`] patch completes an unsampled snapshot.
pub fn merged(mut env: Value, patch: &Value) -> Value {
    if let (Value::Object(e), Value::Object(p)) = (&mut env, patch) {
        for (k, v) in p {
            match (e.get_mut(k), v) {
                (Some(Value::Object(old)), Value::Object(new)) => {
                    old.extend(new.clone());
                }
                _ => {
                    e.insert(k.clone(), v.clone());
                }
            }
        }
    }
    env
}

/// The sampled checks over an experiment's runs: the first scan of /proc is taken on a thread
/// the moment sampling starts (so the first run does not wait for it), the second when the runs
/// are over. Nothing runs in between: dropping a `Sampling` (an error, Ctrl-C) leaves at most
/// the first scan to finish on its own.
pub struct Sampling {
    first: Option<std::thread::JoinHandle<(checks::Sample, std::time::Instant)>>,
}

impl Sampling {
    pub fn start() -> Sampling {
        let first = std::thread::Builder::new()
            .name("abperf-sample".into())
            .spawn(|| {
                let t = std::time::Instant::now();
                (checks::Sample::take(&sys::Sys::real()), t)
            })
            .ok();
        Sampling { first }
    }

    /// The sampled findings since [`Sampling::start`], as a patch of the environment:
    /// `doctor.NAME` (the status) and `doctor_sampled.NAME` (the finding), plus
    /// `doctor_sampled.window` (what the sample covers), and `doctor.irqbalance` from the
    /// second scan's process list.
    pub fn finish(self, over: &str) -> Value {
        let s = sys::Sys::real();
        let (a, t0) = self
            .first
            .and_then(|h| h.join().ok())
            .unwrap_or_else(|| (checks::Sample::default(), std::time::Instant::now()));
        let b = checks::Sample::take(&s);
        let window = t0.elapsed();
        let act = checks::activity(&a, &b, window, &[std::process::id()]);
        let mut doctor = Map::new();
        let irq = checks::irqbalance_pids(&b.pids_named("irqbalance"));
        doctor.insert(
            irq.name.into(),
            Value::String(format!("{}: {}", irq.status.as_str(), irq.finding)),
        );
        let mut sampled = Map::new();
        for c in checks::sampled(&s, &act) {
            doctor.insert(c.name.into(), Value::String(c.status.as_str().into()));
            sampled.insert(c.name.into(), Value::String(c.finding));
        }
        sampled.insert(
            "window".into(),
            Value::String(format!("{over}, {:.3} s", window.as_secs_f64())),
        );
        serde_json::json!({"doctor": doctor, "doctor_sampled": sampled})
    }
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

    #[test]
    fn unsampled_then_sampled_make_the_whole_snapshot() {
        let s = environment_unsampled();
        let d = s["doctor"].as_object().unwrap();
        assert_eq!(d.len(), 19 - SAMPLED_CHECKS.len() - 1);
        assert!(SAMPLED_CHECKS.iter().all(|c| !d.contains_key(*c)));
        assert!(!d.contains_key("irqbalance"));
        assert!(s.get("doctor_sampled").is_none());
        // This process's own CPU use (the busy loop) is left out of busy_processes.
        let sampling = Sampling::start();
        let t = std::time::Instant::now();
        while t.elapsed() < std::time::Duration::from_millis(30) {
            std::hint::black_box(t.elapsed());
        }
        let patch = sampling.finish("the test");
        for c in SAMPLED_CHECKS {
            assert!(patch["doctor"][c].as_str().is_some(), "{c}: {patch}");
            assert!(
                patch["doctor_sampled"][c].as_str().is_some(),
                "{c}: {patch}"
            );
        }
        assert!(patch["doctor"]["irqbalance"].as_str().is_some(), "{patch}");
        let whole = merged(s.clone(), &patch);
        assert_eq!(whole["doctor"].as_object().unwrap().len(), 19);
        assert_eq!(whole["kernel"], s["kernel"]);
        assert!(whole["doctor_sampled"]["window"].is_string());
        assert_eq!(d.len() + patch["doctor"].as_object().unwrap().len(), 19);
        let window = patch["doctor_sampled"]["window"].as_str().unwrap();
        assert!(window.starts_with("the test, 0.0"), "{window}");
        let busy = patch["doctor_sampled"]["busy_processes"].as_str().unwrap();
        let me = format!("(pid {})", std::process::id());
        assert!(!busy.contains(&me), "{busy}");
    }
}
