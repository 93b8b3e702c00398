//! Who is running an experiment, and who holds a kernel knob: enough to tell later, from another
//! process (or after a reboot), whether that process still lives.
//!
//! A pid alone is not enough (pids are reused, and a pid in one PID namespace or on one host means
//! nothing in another), so an owner is the pid with the process's start time (clock ticks after
//! boot, field 22 of `/proc/PID/stat`), the boot id (`/proc/sys/kernel/random/boot_id`) and the
//! host name. The probing itself lives in `measure::process`; this module only holds the values
//! and decides from what a probe found.

use serde::{Deserialize, Serialize};

/// The process that owns an experiment or a knob.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Owner {
    pub pid: i32,
    /// Start time of the process in clock ticks after boot (`/proc/PID/stat` field 22).
    pub start_time: u64,
    pub boot_id: String,
    pub host: String,
}

/// Whether an owner still runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Liveness {
    Alive,
    /// Gone; the reason in words ("pid 123 has exited", "the machine rebooted since").
    Dead(String),
    /// Cannot be told from here (the owner ran on another host).
    Unknown(String),
}

impl Owner {
    /// Decide from what this machine says now: its `boot_id` and `host`, and the start time of
    /// the process with the owner's pid (`None`: no such process).
    pub fn liveness(&self, boot_id: &str, host: &str, start_time_now: Option<u64>) -> Liveness {
        if self.host != host {
            return Liveness::Unknown(format!(
                "pid {} runs on host {}, not this one ({host})",
                self.pid, self.host
            ));
        }
        if self.boot_id != boot_id {
            return Liveness::Dead(format!("pid {} ran before this machine rebooted", self.pid));
        }
        match start_time_now {
            Some(t) if t == self.start_time => Liveness::Alive,
            Some(_) => Liveness::Dead(format!(
                "pid {} has exited (the pid now names another process)",
                self.pid
            )),
            None => Liveness::Dead(format!("pid {} has exited", self.pid)),
        }
    }

    /// "pid 123 on host h", for messages.
    pub fn describe(&self) -> String {
        format!("pid {} on host {}", self.pid, self.host)
    }
}

/// The record a process leaves beside a knob's lock while it may have changed the knob: what the
/// knob held before (restored if the holder dies without putting it back), who holds it and for
/// which experiment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KnobClaim {
    /// The knob as the user named it.
    pub path: String,
    /// What the knob selected before the holder changed it.
    pub original: String,
    /// The knob's whole text before the holder changed it, restored byte for byte (trailing
    /// newline kept) unless it is a choice list such as `always [madvise] never`.
    #[serde(default)]
    pub original_raw: Option<String>,
    /// Every value the holder wrote (recorded before each write). The original is put back only
    /// while the knob holds one of them: any other value was set by someone else, on purpose.
    #[serde(default)]
    pub written: Vec<String>,
    pub owner: Owner,
    /// The experiment, when the holder is `abperf run`.
    pub experiment: Option<i64>,
    /// The store that experiment lives in.
    pub store: Option<String>,
    /// What holds it: "run", "run --tune", "doctor --fix", ...
    pub purpose: String,
    /// UTC, RFC 3339 (approximate: seconds).
    pub since: String,
}

impl KnobClaim {
    /// "experiment 7 (store /x.db, pid 123 on host h)", for messages.
    pub fn holder(&self) -> String {
        let mut s = match self.experiment {
            Some(id) => format!("abperf {} of experiment {id}", self.purpose),
            None => format!("abperf {}", self.purpose),
        };
        if let Some(st) = &self.store {
            s.push_str(&format!(" in store {st}"));
        }
        s.push_str(&format!(
            ", {}, since {}",
            self.owner.describe(),
            self.since
        ));
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn me() -> Owner {
        Owner {
            pid: 42,
            start_time: 1000,
            boot_id: "b1".into(),
            host: "h".into(),
        }
    }

    #[test]
    fn liveness_needs_pid_start_time_boot_and_host() {
        let o = me();
        assert_eq!(o.liveness("b1", "h", Some(1000)), Liveness::Alive);
        assert!(matches!(
            o.liveness("b1", "h", Some(999)),
            Liveness::Dead(_)
        ));
        assert!(matches!(o.liveness("b1", "h", None), Liveness::Dead(_)));
        assert!(matches!(
            o.liveness("b2", "h", Some(1000)),
            Liveness::Dead(_)
        ));
        assert!(matches!(
            o.liveness("b1", "other", Some(1000)),
            Liveness::Unknown(_)
        ));
    }

    #[test]
    fn claim_round_trips_as_json() {
        let c = KnobClaim {
            path: "/sys/x".into(),
            original: "a".into(),
            original_raw: Some("a\n".into()),
            written: vec!["b".into()],
            owner: me(),
            experiment: Some(3),
            store: Some("/s.db".into()),
            purpose: "run".into(),
            since: "2026-01-01T00:00:00Z".into(),
        };
        let j = serde_json::to_string(&c).unwrap();
        assert_eq!(serde_json::from_str::<KnobClaim>(&j).unwrap(), c);
        assert!(c.holder().contains("experiment 3"), "{}", c.holder());
        assert!(c.holder().contains("pid 42"), "{}", c.holder());
    }
}
