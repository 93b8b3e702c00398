//! The result of one `abperf doctor` check ([`Check`], with its [`Status`]): found by the checks
//! in `abperf-run` (`run::doctor`), stored in an experiment's environment, printed by
//! `abperf-report` (`report::doctor`).

use serde::Serialize;

/// How a finding bears on measurements.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Status {
    /// Nothing to worry about.
    #[serde(rename = "ok")]
    Ok,
    /// Adds noise or bias; fix it for sub-1% work.
    #[serde(rename = "warn")]
    Warn,
    /// Makes small effects unmeasurable until fixed.
    #[serde(rename = "bad")]
    Bad,
    /// Worth recording; nothing to fix.
    #[serde(rename = "info")]
    Info,
    /// This kernel or machine does not expose it.
    #[serde(rename = "not available")]
    NotAvailable,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Warn => "warn",
            Status::Bad => "bad",
            Status::Info => "info",
            Status::NotAvailable => "not available",
        }
    }
}

/// One check's result.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    pub name: &'static str,
    pub status: Status,
    pub finding: String,
    /// Why it matters for measurements.
    pub why: &'static str,
    /// What to do about it (None when nothing is to be done).
    pub fix: Option<String>,
}

impl Check {
    /// The check with `f` as what to do about it.
    pub fn fix(mut self, f: impl Into<String>) -> Check {
        self.fix = Some(f.into());
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_status_serialises_as_the_word_it_prints() {
        for s in [
            Status::Ok,
            Status::Warn,
            Status::Bad,
            Status::Info,
            Status::NotAvailable,
        ] {
            assert_eq!(
                serde_json::to_value(s).unwrap(),
                serde_json::Value::from(s.as_str())
            );
        }
    }
}
