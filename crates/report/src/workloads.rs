//! The results of `abperf workload`: the built-in workloads in a table ([`List`]) and one
//! workload in words ([`Show`]: what it stresses, its kernel paths, parameters, metrics, run time
//! and what this machine offers it).

use super::plain::Plain;
use abperf_model::workload::{Description, direction_word};
use std::fmt::Write;

/// `workload list`: name, version and summary of every workload.
pub struct List<'a>(pub &'a [Description]);

impl Plain for List<'_> {
    fn text(&self) -> String {
        let mut s = String::new();
        let w = self.0.iter().map(|x| x.name.len()).max().unwrap_or(4);
        let _ = writeln!(s, "{:<w$}  VERSION  SUMMARY", "NAME");
        for x in self.0 {
            let _ = writeln!(s, "{:<w$}  {:>7}  {}", x.name, x.version, x.summary);
        }
        s
    }

    fn json(&self) -> anyhow::Result<String> {
        Ok(serde_json::to_string_pretty(self.0)?)
    }
}

/// `workload show NAME`: the workload and the findings about this machine that decide whether
/// it can run here.
pub struct Show<'a> {
    pub workload: &'a Description,
    pub this_machine: &'a [String],
}

impl Plain for Show<'_> {
    fn text(&self) -> String {
        let d = self.workload;
        let mut s = String::new();
        let _ = writeln!(s, "{} (version {})", d.name, d.version);
        let _ = writeln!(s, "  {}", d.summary);
        let _ = writeln!(s, "modelled on: {}", d.modelled_on);
        let _ = writeln!(s, "stresses: {}", d.stresses);
        let _ = writeln!(s, "kernel paths:");
        for k in d.kernel_paths {
            let _ = writeln!(s, "  - {k}");
        }
        let _ = writeln!(
            s,
            "parameters (NAME=VALUE; lists inside a value are joined with '+'):"
        );
        for p in &d.params {
            let _ = writeln!(s, "  {}={}  ({})", p.name, p.default, p.allowed);
            let _ = writeln!(s, "      {}", p.help);
        }
        let _ = writeln!(s, "metrics:");
        let nw = d.metrics.iter().map(|m| m.name.len()).max().unwrap_or(0);
        let uw = d.metrics.iter().map(|m| m.unit.len()).max().unwrap_or(0);
        for m in d.metrics {
            let _ = writeln!(
                s,
                "  {:<nw$}  {:<uw$}  {:<16}  {}",
                m.name,
                m.unit,
                direction_word(m.direction),
                m.help
            );
        }
        let _ = writeln!(s, "prepare: {}", d.prepare.unwrap_or("nothing to prepare"));
        let _ = writeln!(s, "run time here (2 vCPUs): {}", d.runtime);
        if !self.this_machine.is_empty() {
            let _ = writeln!(s, "this machine:");
            for n in self.this_machine {
                let _ = writeln!(s, "  {n}");
            }
        }
        s
    }

    fn json(&self) -> anyhow::Result<String> {
        let mut v = serde_json::to_value(self.workload)?;
        v["this_machine"] = serde_json::to_value(self.this_machine)?;
        Ok(serde_json::to_string_pretty(&v)?)
    }
}
