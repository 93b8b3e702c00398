//! A workload's own metrics and how they reach the runner.
//!
//! Protocol: when the environment variable [`METRICS_ENV`] (`ABPERF_METRICS_FILE`) names a file,
//! the workload appends one JSON object per metric and line to it, and prints nothing else about
//! its metrics:
//!
//! ```text
//! {"name":"accesses_per_s","value":81234.5,"unit":"accesses/s","direction":"higher_is_better"}
//! ```
//!
//! `direction` is `higher_is_better`, `lower_is_better` or `count` (a tally that explains other
//! figures, neither good nor bad in itself). The file is opened with `O_APPEND|O_CREAT`, so a
//! runner can also pass `/dev/fd/N` of a pipe or memfd it holds. Without the variable the same
//! metrics are printed to stderr in a readable table. [`read_file`] parses the file back.

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::Path;

/// Environment variable naming the file that receives the metrics, one JSON line each.
pub const METRICS_ENV: &str = "ABPERF_METRICS_FILE";

/// Which way is better for a metric: the model's ([`abperf_model::Direction`]), written in this
/// protocol (and in `workload show`) in its own words, snake_case, where the store and the
/// reports write kebab-case ([`Direction::as_str`]).
pub use abperf_model::Direction;

use abperf_model::workload::direction_words;
/// The declarations and the protocol's words live in the model, where `abperf-report` reads
/// them too.
pub use abperf_model::workload::{MetricSpec, direction_word};

fn readable(d: Direction) -> &'static str {
    match d {
        Direction::HigherIsBetter => "higher is better",
        Direction::LowerIsBetter => "lower is better",
        Direction::Count => "count",
    }
}

/// One reported value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Metric {
    pub name: String,
    pub value: f64,
    pub unit: String,
    #[serde(with = "direction_words")]
    pub direction: Direction,
}

/// Build a metric from its declaration. Panics on a name the workload did not declare: that is a
/// programming error caught by every workload's tests, never user input.
pub fn metric(specs: &[MetricSpec], name: &str, value: f64) -> Metric {
    let s = specs
        .iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("metric {name} is not declared"));
    Metric {
        name: s.name.to_string(),
        value,
        unit: s.unit.to_string(),
        direction: s.direction,
    }
}

/// One JSON line per metric.
pub fn to_lines(metrics: &[Metric]) -> String {
    let mut s = String::new();
    for m in metrics {
        s.push_str(&serde_json::to_string(m).expect("metric serialises"));
        s.push('\n');
    }
    s
}

/// Readable table (stderr when no metrics file is set).
pub fn to_text(title: &str, metrics: &[Metric]) -> String {
    let w = metrics.iter().map(|m| m.name.len()).max().unwrap_or(0);
    let vals: Vec<String> = metrics.iter().map(|m| fmt_value(m.value)).collect();
    let vw = vals.iter().map(|v| v.len()).max().unwrap_or(0);
    let uw = metrics.iter().map(|m| m.unit.len()).max().unwrap_or(0);
    let mut s = format!("{title}\n");
    for (m, v) in metrics.iter().zip(&vals) {
        s.push_str(&format!(
            "  {:<w$}  {:>vw$} {:<uw$}  ({})\n",
            m.name,
            v,
            m.unit,
            readable(m.direction)
        ));
    }
    s
}

fn fmt_value(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else if v.abs() >= 100.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.4}")
    }
}

/// Deliver metrics: to `$ABPERF_METRICS_FILE` when set (one write of all lines), else stderr.
pub fn emit(title: &str, metrics: &[Metric]) -> Result<()> {
    match std::env::var_os(METRICS_ENV).filter(|v| !v.is_empty()) {
        Some(path) => {
            let mut f = std::fs::OpenOptions::new()
                .append(true)
                .create(true)
                .open(&path)
                .with_context(|| {
                    format!(
                        "opening {METRICS_ENV}={} to write the metrics",
                        Path::new(&path).display()
                    )
                })?;
            f.write_all(to_lines(metrics).as_bytes())
                .with_context(|| format!("writing metrics to {}", Path::new(&path).display()))?;
        }
        None => abperf_model::error::stderr_line(to_text(title, metrics).trim_end_matches('\n')),
    }
    Ok(())
}

/// Parse metric lines (the runner's side). Blank lines are ignored; anything else that is not a
/// metric object is an error naming the line.
pub fn parse_lines(text: &str, origin: &str) -> Result<Vec<Metric>> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let m: Metric = serde_json::from_str(line).with_context(|| {
            format!(
                "{origin}:{}: expected {{\"name\", \"value\", \"unit\", \"direction\"}}, got {line:?}",
                i + 1
            )
        })?;
        if m.name.is_empty() || !m.value.is_finite() {
            bail!(
                "{origin}:{}: metric needs a name and a finite value: {line:?}",
                i + 1
            );
        }
        out.push(m);
    }
    Ok(out)
}

/// Read a metrics file written through [`METRICS_ENV`].
pub fn read_file(path: &Path) -> Result<Vec<Metric>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading metrics file {}", path.display()))?;
    parse_lines(&text, &path.display().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPECS: &[MetricSpec] = &[
        MetricSpec {
            name: "ops_per_s",
            unit: "ops/s",
            direction: Direction::HigherIsBetter,
            help: "",
        },
        MetricSpec {
            name: "pages",
            unit: "pages",
            direction: Direction::Count,
            help: "",
        },
    ];

    #[test]
    fn lines_round_trip() {
        let ms = vec![
            metric(SPECS, "ops_per_s", 12.5),
            metric(SPECS, "pages", 3.0),
        ];
        let s = to_lines(&ms);
        assert_eq!(
            s.lines().next().unwrap(),
            r#"{"name":"ops_per_s","value":12.5,"unit":"ops/s","direction":"higher_is_better"}"#
        );
        assert_eq!(parse_lines(&s, "x").unwrap(), ms);
        let t = to_text("w", &ms);
        assert!(
            t.contains("ops_per_s") && t.contains("(higher is better)"),
            "{t}"
        );
    }

    #[test]
    fn bad_lines_are_named() {
        let e = parse_lines("\n{\"name\":\"a\"}\n", "f.jsonl").unwrap_err();
        assert!(format!("{e:#}").contains("f.jsonl:2"), "{e:#}");
        let e = parse_lines(
            r#"{"name":"a","value":1,"unit":"s","direction":"sideways"}"#,
            "f",
        )
        .unwrap_err();
        assert!(format!("{e:#}").contains("f:1"), "{e:#}");
    }
}
