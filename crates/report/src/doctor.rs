//! The result of `abperf doctor`: one line per check (status, name, finding; why it matters and
//! the fix wrapped below it unless it is ok), the count of each status, and what `--fix` would
//! change.

use super::plain::Plain;
use abperf_model::Setting;
use abperf_model::doctor::{Check, Status};
use std::collections::BTreeMap;
use std::fmt::Write;

/// The explanations start under the finding column.
const INDENT: usize = 34;
/// The explanations wrap at this width.
const WIDTH: usize = 100;

/// `abperf doctor`: the checks of this machine and the settings `--fix` would change.
pub struct Checks<'a> {
    pub checks: &'a [Check],
    pub would_change: &'a [Setting],
}

impl Plain for Checks<'_> {
    fn text(&self) -> String {
        let mut s = String::new();
        for c in self.checks {
            let _ = writeln!(s, "{:<13} {:<19} {}", c.status.as_str(), c.name, c.finding);
            if c.status != Status::Ok {
                let indent = " ".repeat(INDENT);
                s += &wrap(&format!("why: {}", c.why), &indent, WIDTH);
                if let Some(f) = &c.fix {
                    s += &wrap(&format!("fix: {f}"), &indent, WIDTH);
                }
            }
        }
        summary(&mut s, self.checks);
        would_change(&mut s, self.would_change);
        s
    }

    fn json(&self) -> anyhow::Result<String> {
        let doc = serde_json::json!({
            "checks": self.checks,
            "fix_would_change": self.would_change,
        });
        Ok(serde_json::to_string_pretty(&doc)?)
    }
}

/// "N checks: a ok, b warn, ..." after an empty line.
fn summary(s: &mut String, checks: &[Check]) {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for c in checks {
        *counts.entry(c.status.as_str()).or_default() += 1;
    }
    let summary: Vec<String> = ["ok", "warn", "bad", "info", "not available"]
        .iter()
        .filter_map(|s| counts.get(s).map(|n| format!("{n} {s}")))
        .collect();
    let _ = writeln!(s);
    let _ = writeln!(s, "{} checks: {}", checks.len(), summary.join(", "));
}

/// Each setting `--fix` would change, from its current value to the recommended one.
fn would_change(s: &mut String, would: &[Setting]) {
    if would.is_empty() {
        let _ = writeln!(
            s,
            "abperf doctor --fix would change nothing on this machine"
        );
    } else {
        let _ = writeln!(
            s,
            "abperf doctor --fix (or abperf run --tune) would change:"
        );
        for w in would {
            let _ = writeln!(s, "  {}: '{}' -> '{}'", w.path, w.current, w.value);
        }
    }
}

/// `text` wrapped at `width` columns, every line after `indent`.
fn wrap(text: &str, indent: &str, width: usize) -> String {
    let mut out = String::new();
    let mut line = String::new();
    for w in text.split_whitespace() {
        if !line.is_empty() && indent.len() + line.len() + 1 + w.len() > width {
            out.push_str(indent);
            out.push_str(&line);
            out.push('\n');
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(w);
    }
    if !line.is_empty() {
        out.push_str(indent);
        out.push_str(&line);
        out.push('\n');
    }
    out
}
