//! `abperf doctor`: is this machine quiet enough to measure a 0.5% effect? One check per noise
//! source (cpufreq, SMT, ASLR, THP, NUMA balancing, swap, watchdogs, busy processes, VM, clock,
//! tracing, memory pressure), each with what it found, why it matters and how to fix it; and
//! the safe settings `doctor --fix` and `run --tune` apply (and always put back).

pub mod checks;
pub mod sys;
pub mod tune;

pub use abperf_model::Setting;
pub use abperf_model::doctor::{Check, Status};
pub use checks::run_all;
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
    // One moment's snapshot: the machine and the settings checks share what they read (about
    // 30 files, /proc/cpuinfo among them, would otherwise be read twice).
    let sys = sys::Sys::real().remembering();
    let mut env = abperf_measure::env::machine_from(&sys);
    let mut m = Map::new();
    for c in checks::settings(&sys) {
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

/// The sampled checks over an experiment's runs. /proc/stat is read at once; the first scan of
/// every process is taken on a thread [`SCAN_AFTER`] later (so the first run does not wait for
/// it), the second when the runs are over. Runs over sooner are not scanned at all: a scan of
/// every process costs more CPU than a short experiment (two scans were a quarter of `abperf run
/// -r 1 true`), and CPU shares over a few clock ticks say nothing. Dropping a `Sampling` (an
/// error, Ctrl-C) leaves at most the first scan to finish on its own.
pub struct Sampling {
    started: std::time::Instant,
    cpu: checks::Sample,
    stop: Option<std::sync::mpsc::Sender<()>>,
    first: Option<std::thread::JoinHandle<Option<(checks::Sample, std::time::Instant)>>>,
}

/// How long the runs must last before other processes are scanned.
pub const SCAN_AFTER: std::time::Duration = std::time::Duration::from_millis(500);

impl Sampling {
    pub fn start() -> Sampling {
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        let first = std::thread::Builder::new()
            .name("abperf-sample".into())
            .spawn(move || {
                // A message or a closed channel: the runs ended before the scan was due.
                if stopped.recv_timeout(SCAN_AFTER)
                    != Err(std::sync::mpsc::RecvTimeoutError::Timeout)
                {
                    return None;
                }
                let t = std::time::Instant::now();
                Some((checks::Sample::take(&sys::Sys::real()), t))
            })
            .ok();
        Sampling {
            started: std::time::Instant::now(),
            cpu: checks::Sample::cpu_only(&sys::Sys::real()),
            stop: Some(stop),
            first,
        }
    }

    /// The sampled findings since [`Sampling::start`], as a patch of the environment:
    /// `doctor.NAME` (the status) and `doctor_sampled.NAME` (the finding), plus
    /// `doctor_sampled.window` (what the sample covers), and `doctor.irqbalance` from the
    /// second scan's process list.
    pub fn finish(mut self, over: &str) -> Value {
        let s = sys::Sys::real();
        drop(self.stop.take());
        let first = self.first.take().and_then(|h| h.join().ok()).flatten();
        let scanned = first.is_some();
        let (a, t0, b) = match first {
            Some((a, t0)) => (a, t0, checks::Sample::take(&s)),
            None => (self.cpu, self.started, checks::Sample::cpu_only(&s)),
        };
        let window = t0.elapsed();
        let act = checks::activity(&a, &b, window, &[std::process::id()]);
        let mut doctor = Map::new();
        let mut sampled = Map::new();
        let mut checks = checks::sampled(&s, &act);
        checks.push(checks::irqbalance_pids(&b.pids_named("irqbalance")));
        for c in checks {
            let unscanned = !scanned && ["busy_processes", "irqbalance"].contains(&c.name);
            let (status, finding) = if unscanned {
                let ms = window.as_secs_f64() * 1e3;
                let not = format!(
                    "not sampled: the runs took {ms:.0} ms, under the {} ms before other \
                     processes are scanned (abperf doctor samples them)",
                    SCAN_AFTER.as_millis()
                );
                (Status::Info, not)
            } else {
                (c.status, c.finding)
            };
            if c.name == "irqbalance" {
                doctor.insert(
                    c.name.into(),
                    Value::String(format!("{}: {finding}", status.as_str())),
                );
                continue;
            }
            doctor.insert(c.name.into(), Value::String(status.as_str().into()));
            sampled.insert(c.name.into(), Value::String(finding));
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
    fn the_shared_snapshot_is_the_one_read_directly() {
        // The machine part read through the doctor's remembering reader (as
        // environment_unsampled does) equals the one read file by file.
        let shared = abperf_measure::env::machine_from(&sys::Sys::real().remembering());
        assert_eq!(shared, abperf_measure::env::machine());
        let s = environment_unsampled();
        assert_eq!(s["vulnerabilities"], shared["vulnerabilities"]);
        assert_eq!(s["cpu_flags"], shared["cpu_flags"]);
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
        // 30 ms of busy loop, more on a loaded host (it once read 0.1 s at load 7): below the
        // scan delay, which the assertions below rest on.
        let secs: f64 = window
            .strip_prefix("the test, ")
            .and_then(|w| w.strip_suffix(" s"))
            .and_then(|w| w.parse().ok())
            .unwrap_or_else(|| panic!("{window}"));
        assert!((0.03..SCAN_AFTER.as_secs_f64()).contains(&secs), "{window}");
        // 30 ms: no process is scanned (a scan costs more than such an experiment).
        let busy = patch["doctor_sampled"]["busy_processes"].as_str().unwrap();
        assert!(busy.starts_with("not sampled: the runs took"), "{busy}");
        assert!(
            patch["doctor"]["irqbalance"]
                .as_str()
                .unwrap()
                .contains("not sampled")
        );
    }

    #[test]
    fn runs_past_the_scan_delay_are_sampled_without_this_process() {
        let sampling = Sampling::start();
        let t = std::time::Instant::now();
        while t.elapsed() < SCAN_AFTER + std::time::Duration::from_millis(100) {
            std::hint::black_box(t.elapsed());
        }
        let patch = sampling.finish("the test");
        let busy = patch["doctor_sampled"]["busy_processes"].as_str().unwrap();
        assert!(!busy.contains("not sampled"), "{busy}");
        let me = format!("(pid {})", std::process::id());
        assert!(!busy.contains(&me), "{busy}");
        let irq = patch["doctor"]["irqbalance"].as_str().unwrap();
        assert!(!irq.contains("not sampled"), "{irq}");
    }
}
