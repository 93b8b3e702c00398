//! The perf-stat-like per-variant block: mean of each metric over the analysed runs with the
//! `( +- x% )` figure, which, as in `perf stat --repeat`, is the standard error of the mean
//! relative to the mean (100 * SD / sqrt(n) / mean), not the spread of single runs.

use crate::store::{Run, RunStatus, Variant};
use statrs::statistics::Statistics;
use std::collections::BTreeMap;
use std::fmt::Write;

/// Metrics in display order with their labels; anything else follows alphabetically.
const KNOWN: &[(&str, &str)] = &[
    ("wall_ns", "wall"),
    ("user_ns", "user"),
    ("sys_ns", "sys"),
    ("maxrss_kib", "max RSS"),
    ("minflt", "minor faults"),
    ("majflt", "major faults"),
    ("nvcsw", "voluntary ctx switches"),
    ("nivcsw", "involuntary ctx switches"),
    ("inblock", "block input ops"),
    ("oublock", "block output ops"),
];

/// Runs that count for analysis: timed (not warm-up), successful, not excluded.
pub fn analysed(runs: &[Run]) -> impl Iterator<Item = &Run> {
    runs.iter()
        .filter(|r| !r.warmup && r.status == RunStatus::Ok && r.excluded.is_none())
}

/// Scale a value of `unit` for display; returns (number text, unit text).
pub fn human(value: f64, unit: &str) -> (String, String) {
    match unit {
        "ns" => {
            let a = value.abs();
            let (div, u) = if a >= 1e9 {
                (1e9, "s")
            } else if a >= 1e6 {
                (1e6, "ms")
            } else if a >= 1e3 {
                (1e3, "us")
            } else {
                (1.0, "ns")
            };
            (format!("{:.3}", value / div), u.to_string())
        }
        "count" => (group_thousands(value), String::new()),
        other => (group_thousands(value), other.to_string()),
    }
}

fn group_thousands(v: f64) -> String {
    if v.abs() >= 1e15 || v.fract().abs() > 1e-9 && v.abs() < 1000.0 {
        return format!("{v:.2}");
    }
    let s = format!("{:.0}", v.abs());
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if v < 0.0 { format!("-{out}") } else { out }
}

/// Display order of the metrics present in `runs`.
pub fn metric_order(runs: &[Run]) -> Vec<String> {
    let mut present: BTreeMap<String, ()> = BTreeMap::new();
    for r in runs {
        for k in r.metrics.keys() {
            present.insert(k.clone(), ());
        }
    }
    let mut out: Vec<String> = KNOWN
        .iter()
        .filter(|(k, _)| present.contains_key(*k))
        .map(|(k, _)| k.to_string())
        .collect();
    out.extend(
        present
            .keys()
            .filter(|k| !KNOWN.iter().any(|(n, _)| n == k))
            .cloned(),
    );
    out
}

pub fn label(metric: &str) -> &str {
    KNOWN
        .iter()
        .find(|(k, _)| *k == metric)
        .map(|(_, l)| *l)
        .unwrap_or(metric)
}

/// The block for one variant.
pub fn variant_block(v: &Variant, runs: &[Run]) -> String {
    let mine: Vec<Run> = runs
        .iter()
        .filter(|r| r.variant == v.position)
        .cloned()
        .collect();
    let ok: Vec<&Run> = analysed(&mine).collect();
    let failed = mine
        .iter()
        .filter(|r| !r.warmup && r.status != RunStatus::Ok)
        .count();
    let warm = mine.iter().filter(|r| r.warmup).count();
    let mut s = String::new();
    let mut extra = Vec::new();
    if warm > 0 {
        extra.push(format!("{warm} warm-up"));
    }
    if failed > 0 {
        extra.push(format!("{failed} failed or timed out, not analysed"));
    }
    let extra = if extra.is_empty() {
        String::new()
    } else {
        format!(", {}", extra.join(", "))
    };
    let _ = writeln!(s, " Variant '{}' ({} runs{extra}):", v.name, ok.len());
    if ok.is_empty() {
        let _ = writeln!(s, "        (no successful runs)");
        return s;
    }
    for m in metric_order(&mine) {
        let vals: Vec<f64> = ok
            .iter()
            .filter_map(|r| r.metrics.get(&m).copied())
            .collect();
        if vals.is_empty() {
            continue;
        }
        let unit = ok
            .iter()
            .find_map(|r| r.units.get(&m))
            .map(String::as_str)
            .unwrap_or("");
        let mean = vals.iter().mean();
        let (num, u) = human(mean, unit);
        let pm = if vals.len() >= 2 && mean != 0.0 {
            let se = vals.iter().std_dev() / (vals.len() as f64).sqrt();
            format!("( +- {:5.2}% )", 100.0 * se / mean.abs())
        } else {
            String::new()
        };
        let _ = writeln!(s, "  {num:>16} {u:<4} {:<26} {pm}", label(&m));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scaling() {
        assert_eq!(human(12_345_000_000.0, "ns"), ("12.345".into(), "s".into()));
        assert_eq!(human(1_500.0, "ns"), ("1.500".into(), "us".into()));
        assert_eq!(human(1_234_567.0, "count").0, "1,234,567");
        assert_eq!(human(2048.0, "KiB"), ("2,048".into(), "KiB".into()));
        assert_eq!(human(-1234.0, "count").0, "-1,234");
    }
}
