//! `--format perf-stat` and the per-variant block of `show` and the end of `run`: the mean of
//! each metric over the counted runs with the `( +- x% )` figure, which, as in
//! `perf stat --repeat`, is the standard error of the mean relative to the mean
//! (100 * SD / sqrt(n) / mean), not the spread of single runs.

use super::fmt::one_line;
use super::{Render, Report};
use abperf_model::metric::label;
use abperf_model::{Dataset, RunStatus};
use std::fmt::Write;

pub struct PerfStat;

impl Render for PerfStat {
    fn render(&self, r: &Report) -> anyhow::Result<String> {
        let mut s = String::new();
        for pos in 0..r.data.variants.len() {
            let _ = writeln!(s, "{}", variant_block(&r.data, pos));
        }
        Ok(s)
    }
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

/// The block for the variant at `pos`.
pub fn variant_block(data: &Dataset, pos: usize) -> String {
    let name = data
        .variants
        .get(pos)
        .map(|v| v.name.as_str())
        .unwrap_or("?");
    let mine: Vec<_> = data.runs.iter().filter(|r| r.variant == pos).collect();
    let counted = data.counted(pos).count();
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
    let _ = writeln!(s, " Variant '{}' ({counted} runs{extra}):", one_line(name));
    if counted == 0 {
        let _ = writeln!(s, "        (no successful runs)");
        return s;
    }
    // One row per metric; the unit and label columns widen for long units (a workload's
    // "accesses_per_s") so that the `( +- x% )` figures stay in one column.
    let rows: Vec<(String, String, String, String)> = data
        .main_metrics()
        .filter_map(|m| {
            let d = data.describe(pos, &m.name)?;
            let (num, u) = human(d.mean, &m.unit);
            let pm = d
                .pm_pct
                .map(|p| format!("( +- {p:5.2}% )"))
                .unwrap_or_default();
            Some((num, u, one_line(label(&m.name)), pm))
        })
        .collect();
    let uw = rows
        .iter()
        .map(|r| r.1.chars().count())
        .max()
        .unwrap_or(0)
        .max(4);
    let lw = rows
        .iter()
        .map(|r| r.2.chars().count())
        .max()
        .unwrap_or(0)
        .max(26);
    for (num, u, l, pm) in rows {
        let _ = writeln!(s, "  {num:>16} {u:<uw$} {l:<lw$} {pm}");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_units_keep_the_columns() {
        use abperf_model::{Metric, Run, Variant};
        let runs = (0..3)
            .map(|seq| {
                Run::ok(
                    seq,
                    0,
                    vec![
                        Metric::new("wall_ns", 1e6 + seq as f64, "ns"),
                        Metric::new("accesses_per_s", 57191.0 + seq as f64, "accesses/s"),
                    ],
                )
            })
            .collect();
        let data = Dataset::new(vec![], vec![Variant::named("w")], runs, "test".into());
        let b = variant_block(&data, 0);
        let cols: Vec<usize> = b.lines().filter_map(|l| l.find("( +-")).collect();
        assert_eq!(cols.len(), 2, "{b}");
        assert_eq!(cols[0], cols[1], "{b}");
    }

    #[test]
    fn scaling() {
        assert_eq!(human(12_345_000_000.0, "ns"), ("12.345".into(), "s".into()));
        assert_eq!(human(1_500.0, "ns"), ("1.500".into(), "us".into()));
        assert_eq!(human(1_234_567.0, "count").0, "1,234,567");
        assert_eq!(human(2048.0, "KiB"), ("2,048".into(), "KiB".into()));
        assert_eq!(human(-1234.0, "count").0, "-1,234");
    }

    #[test]
    fn blocks_per_variant() {
        let d = super::super::testdata::sample();
        let t = PerfStat.render(&d).unwrap();
        assert!(t.contains(" Variant 'A' (8 runs):"), "{t}");
        assert!(t.contains("( +- "), "{t}");
        assert!(!t.contains("stderr_pct"), "{t}");
    }
}
