//! `hyperfine --export-json` files.
//!
//! Each entry of `results` is a variant named by its `command` (hyperfine writes the `-n` name
//! there), with its `-L` parameters. Every element of `times` (seconds) becomes a run with
//! `wall_ns`; `exit_codes` (null for a signal death) and, where present, `memory_usage_byte`
//! (hyperfine >= 1.17, stored as `maxrss_kib`) are per run too. `user` and `system` are only means
//! in hyperfine's export, so they go to [`Variant::summary`] (`user_ns_mean`, `sys_ns_mean`) and
//! are never copied onto runs.

use super::{Exit, Imported, Metric, ParseError, RunKind, unit};
use crate::Format;
use abperf_model::SummaryValue;
use serde::Deserialize;
use std::collections::BTreeMap;

#[derive(Deserialize)]
struct Export {
    results: Vec<Result_>,
}

#[derive(Deserialize)]
struct Result_ {
    command: String,
    #[serde(default)]
    times: Option<Vec<f64>>,
    #[serde(default)]
    exit_codes: Option<Vec<Option<i32>>>,
    #[serde(default)]
    memory_usage_byte: Option<Vec<u64>>,
    #[serde(default)]
    user: Option<f64>,
    #[serde(default)]
    system: Option<f64>,
    #[serde(default)]
    parameters: Option<BTreeMap<String, serde_json::Value>>,
}

/// Lines (1-based) of every `"command"` key in order, to point errors at the offending result
/// (one pass over the text).
fn command_lines(text: &str) -> Vec<usize> {
    let mut out = Vec::new();
    let mut line = 1;
    let mut last = 0;
    for (pos, _) in text.match_indices("\"command\"") {
        line += text[last..pos].bytes().filter(|&b| b == b'\n').count();
        last = pos;
        out.push(line);
    }
    out
}

/// Parse a hyperfine JSON export.
pub fn parse(file: &str, text: &str) -> Result<Imported, ParseError> {
    let export: Export = serde_json::from_str(text).map_err(|e| {
        ParseError::new(
            file,
            e.line().max(1),
            format!("not a hyperfine --export-json file: {e} (expected {{\"results\": [{{\"command\": ..., \"times\": [...]}}]}})"),
        )
    })?;
    let mut out = Imported::new(file, Format::Hyperfine);
    let lines = command_lines(text);
    for (idx, r) in export.results.into_iter().enumerate() {
        let line = lines.get(idx).copied().unwrap_or(1);
        let err = |msg: String| {
            ParseError::new(
                file,
                line,
                format!("result {} ({:?}): {msg}", idx + 1, r.command),
            )
        };
        if out.has_variant(&r.command) {
            return Err(err(
                "the same command appears twice; name the commands apart with hyperfine -n".into(),
            ));
        }
        let times = r
            .times
            .as_ref()
            .ok_or_else(|| err("no per-run \"times\" (re-export with hyperfine >= 1.2)".into()))?;
        if let Some(codes) = &r.exit_codes
            && codes.len() != times.len()
        {
            return Err(err(format!(
                "{} exit codes for {} times",
                codes.len(),
                times.len()
            )));
        }
        if let Some(mem) = &r.memory_usage_byte
            && mem.len() != times.len()
        {
            return Err(err(format!(
                "{} memory_usage_byte values for {} times",
                mem.len(),
                times.len()
            )));
        }
        let v = out.variant_mut(&r.command);
        v.command = Some(r.command.clone());
        if let Some(params) = &r.parameters {
            for (k, val) in params {
                let s = match val {
                    serde_json::Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                v.parameters.insert(k.clone(), s);
            }
        }
        for (name, mean) in [("user_ns_mean", r.user), ("sys_ns_mean", r.system)] {
            if let Some(m) = mean {
                if !(m.is_finite() && m >= 0.0) {
                    return Err(err(format!("bad mean {name}: {m}")));
                }
                v.summary.insert(
                    name.to_string(),
                    SummaryValue {
                        value: full_ns(m),
                        unit: unit::NS.to_string(),
                    },
                );
            }
        }
        for (k, &t) in times.iter().enumerate() {
            if !(t.is_finite() && t >= 0.0) {
                return Err(err(format!(
                    "times[{k}] = {t} is not a non-negative number of seconds"
                )));
            }
            let mut metrics = vec![Metric::new("wall_ns", full_ns(t), unit::NS)];
            if let Some(mem) = &r.memory_usage_byte {
                metrics.push(Metric::new("maxrss_kib", mem[k] as f64 / 1024.0, unit::KIB));
            }
            // hyperfine writes null when the command was killed by a signal; the number is lost.
            let exit = r.exit_codes.as_ref().map(|c| match c[k] {
                Some(code) => Exit::Code(code),
                None => Exit::Signal(None),
            });
            out.push_run(&r.command, line, metrics, exit, RunKind::Single);
        }
    }
    Ok(out)
}

/// hyperfine's seconds (full doubles, measured to the nanosecond and averaged below it) in
/// nanoseconds, kept to their precision: rounding to whole nanoseconds, as the text importers
/// do for decimals printed to a few digits, would move p-values at 1e-6 relative.
fn full_ns(secs: f64) -> f64 {
    secs * 1e9
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ParsedRun;

    const TWO: &str = r#"{
  "results": [
    {
      "command": "sleep 0.01",
      "mean": 0.0119, "stddev": 0.00005, "median": 0.0119,
      "user": 0.001573, "system": 0.0,
      "min": 0.0118, "max": 0.0120,
      "times": [0.011949078, 0.012044901, 0.011967871],
      "exit_codes": [0, 0, null]
    },
    {
      "command": "sh -c \"exit {n}\"",
      "mean": 0.02, "stddev": 0.0001, "median": 0.02,
      "times": [0.02, 0.021],
      "exit_codes": [1, 1],
      "memory_usage_byte": [2097152, 1048576],
      "parameters": {"n": "1"}
    }
  ]
}"#;

    #[test]
    fn seconds_keep_their_digits_below_a_nanosecond() {
        let j = r#"{"results": [{"command": "a", "times": [0.0123456789012, 2.5e-10]}]}"#;
        let imp = parse("h.json", j).unwrap();
        let w = |k: usize| imp.runs_at(0)[k].metric("wall_ns").unwrap();
        assert!((w(0) - 12_345_678.901_2).abs() < 1e-7, "{}", w(0));
        assert_eq!(w(1), 0.25);
    }

    #[test]
    fn parses_runs_and_parameters() {
        let imp = parse("h.json", TWO).unwrap();
        assert_eq!(imp.variants.len(), 2);
        let a = &imp.variants[0];
        let a_runs = imp.runs_at(0);
        assert_eq!(a.name, "sleep 0.01");
        assert_eq!(a_runs.len(), 3);
        let close = |x: Option<f64>, y: f64| (x.unwrap() - y).abs() < 1e-6;
        assert!(close(a_runs[0].metric("wall_ns"), 11_949_078.0));
        assert_eq!(a_runs[0].metric("user_ns"), None);
        assert!(close(Some(a.summary["user_ns_mean"].value), 1_573_000.0));
        assert_eq!(a_runs[2].exit(), Some(Exit::Signal(None)));
        assert_eq!(a_runs[0].line(), 4);
        let b = &imp.variants[1];
        let b_runs = imp.runs_at(1);
        assert_eq!(b.parameters.get("n").map(String::as_str), Some("1"));
        assert_eq!(b_runs[1].exit(), Some(Exit::Code(1)));
        assert_eq!(b_runs[0].metric("maxrss_kib"), Some(2048.0));
        assert_eq!(b_runs[0].line(), 12);
    }

    #[test]
    fn malformed() {
        let e = parse("h.json", "{\n \"results\": [\n  {\"command\": 3}\n ]\n}").unwrap_err();
        assert_eq!(e.line, 3);
        assert!(
            e.to_string().starts_with("h.json:3: not a hyperfine"),
            "{e}"
        );
        let e = parse(
            "h.json",
            "{\"results\": [\n{\"command\": \"a\",\n \"times\": [1, 2], \"exit_codes\": [0]}]}",
        )
        .unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.msg.contains("1 exit codes for 2 times"), "{e}");
        let e = parse(
            "h.json",
            "{\"results\": [\n{\"command\": \"a\", \"times\": [1, -2]}]}",
        )
        .unwrap_err();
        assert!(e.msg.contains("times[1]"), "{e}");
        let e = parse(
            "h.json",
            "{\"results\": [{\"command\": \"a\", \"mean\": 1}]}",
        )
        .unwrap_err();
        assert!(e.msg.contains("no per-run"), "{e}");
    }
}
