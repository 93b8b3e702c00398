//! `--format csv`, written with the `csv` crate (RFC 4180 quoting). Two layouts:
//!
//! - Long form (`report`, `compare`, ...): one header,
//!   `record,variant,seq,status,warmup,counted,exit_code,signal,metric,stat,value,unit,source_file,source_line,text`.
//!   `record` is `run` (one row per run and metric, stat `value`), `describe` (per variant and
//!   metric: n, mean, sd, median, min, max, q1, q3, pm_pct), `comparison` (per variant against
//!   the baseline: ratio, ratio_ci_low, ratio_ci_high, p; the verdict sentence in `text`),
//!   `micro` (per configuration and metric: n, min, p10, median, p90, max) or `trace` (per table
//!   row: `variant` the table, `metric` the group, `seq` the key; stat count, timed, avg_cycles,
//!   min_cycles, max_cycles, avg_ns).
//! - Wide (`export`, and `trace report` in the trace module's own table layout): one row per
//!   run, one column per metric.
//!
//! Text a user typed (names, commands, paths) that a spreadsheet would read as a formula (a
//! leading `=`, `+`, `-`, `@`, tab or carriage return) gets a leading `'`.

use super::section::Section;
use super::table::{finish, neutral};
use super::{Render, Report, View};
use abperf_model::Run;

pub struct Csv;

impl Render for Csv {
    fn render(&self, r: &Report) -> anyhow::Result<String> {
        if r.view == View::Ceiling
            && let Some(out) = r.ceiling.as_ref().and_then(|a| a.csv(r))
        {
            return out;
        }
        // Two micro suites: one row per configuration (`micro_compare::CSV_HEADER`).
        if let Some(out) = r.micro_compare.as_ref().and_then(|m| m.csv(r)) {
            return out;
        }
        if let View::Trace(_) = r.view
            && let Some(out) = r.trace.as_ref().and_then(|t| t.csv(r))
        {
            return out;
        }
        match r.view {
            View::Export => wide(r),
            _ => long(r),
        }
    }
}

pub const HEADER: [&str; 15] = [
    "record",
    "variant",
    "seq",
    "status",
    "warmup",
    "counted",
    "exit_code",
    "signal",
    "metric",
    "stat",
    "value",
    "unit",
    "source_file",
    "source_line",
    "text",
];

fn num(v: f64) -> String {
    if v.is_finite() {
        format!("{v}")
    } else {
        String::new()
    }
}

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map(|x| x.to_string()).unwrap_or_default()
}

/// A long-form row with only the given columns set.
#[derive(Default)]
struct Row {
    record: &'static str,
    variant: String,
    seq: String,
    run: [String; 5],
    metric: String,
    stat: String,
    value: String,
    unit: String,
    source: [String; 2],
    text: String,
}

impl Row {
    fn write(self, w: &mut ::csv::Writer<Vec<u8>>) -> anyhow::Result<()> {
        let [status, warmup, counted, exit, sig] = self.run;
        let [file, line] = self.source;
        w.write_record([
            self.record.to_string(),
            neutral(&self.variant),
            self.seq,
            status,
            warmup,
            counted,
            exit,
            sig,
            neutral(&self.metric),
            self.stat,
            self.value,
            self.unit,
            neutral(&file),
            line,
            neutral(&self.text),
        ])?;
        Ok(())
    }
}

fn run_columns(r: &Run) -> [String; 5] {
    [
        r.status.as_str().to_string(),
        r.warmup.to_string(),
        r.counts().to_string(),
        opt(r.exit_code),
        opt(r.signal),
    ]
}

fn long(d: &Report) -> anyhow::Result<String> {
    let mut w = ::csv::Writer::from_writer(Vec::new());
    w.write_record(HEADER)?;
    if d.include_runs {
        run_rows(&mut w, d)?;
    }
    describe_rows(&mut w, d)?;
    comparison_rows(&mut w, d)?;
    micro_rows(&mut w, d)?;
    trace_rows(&mut w, d)?;
    finish(w)
}

/// `run`: one row per run and metric (a run without metrics gets one row).
fn run_rows(w: &mut ::csv::Writer<Vec<u8>>, d: &Report) -> anyhow::Result<()> {
    for r in &d.data.runs {
        let variant = d.variant_name(r.variant).to_string();
        let source = r
            .source
            .as_ref()
            .map(|s| [s.file.clone(), s.line.to_string()])
            .unwrap_or_default();
        let base = || Row {
            record: "run",
            variant: variant.clone(),
            seq: r.seq.to_string(),
            run: run_columns(r),
            source: source.clone(),
            ..Row::default()
        };
        if r.metrics.is_empty() {
            base().write(w)?;
        }
        let mut ms: Vec<_> = r.metrics.iter().collect();
        ms.sort_by(|a, b| a.name.cmp(&b.name));
        for m in ms {
            Row {
                metric: m.name.clone(),
                stat: "value".into(),
                value: num(m.value),
                unit: m.unit.clone(),
                ..base()
            }
            .write(w)?;
        }
    }
    Ok(())
}

/// `describe`: per variant and metric, n, mean, sd, median, min, max, q1, q3 and pm_pct.
fn describe_rows(w: &mut ::csv::Writer<Vec<u8>>, d: &Report) -> anyhow::Result<()> {
    for x in &d.describe {
        let unit = d.data.unit(&x.metric).to_string();
        let s = &x.d;
        let stats: [(&str, Option<f64>, &str); 9] = [
            ("n", Some(s.n as f64), ""),
            ("mean", Some(s.mean), &unit),
            ("sd", Some(s.sd), &unit),
            ("median", Some(s.median), &unit),
            ("min", Some(s.min), &unit),
            ("max", Some(s.max), &unit),
            ("q1", Some(s.q1), &unit),
            ("q3", Some(s.q3), &unit),
            ("pm_pct", s.pm_pct, "%"),
        ];
        for (stat, v, u) in stats {
            Row {
                record: "describe",
                variant: x.variant.clone(),
                metric: x.metric.clone(),
                stat: stat.into(),
                value: v.map(num).unwrap_or_default(),
                unit: u.to_string(),
                ..Row::default()
            }
            .write(w)?;
        }
    }
    Ok(())
}

/// `comparison`: per variant against the baseline, the ratio, its CI and p, with the verdict.
fn comparison_rows(w: &mut ::csv::Writer<Vec<u8>>, d: &Report) -> anyhow::Result<()> {
    for c in d.comparisons() {
        let ci = c.ratio_ci;
        let stats = [
            ("ratio", Some(c.ratio)),
            ("ratio_ci_low", ci.map(|c| c[0])),
            ("ratio_ci_high", ci.map(|c| c[1])),
            ("p", c.p()),
        ];
        for (stat, v) in stats {
            Row {
                record: "comparison",
                variant: c.variant.clone(),
                metric: c.metric.clone(),
                stat: stat.into(),
                value: v.map(num).unwrap_or_default(),
                text: format!("{}: {}", c.verdict.as_str(), c.line),
                ..Row::default()
            }
            .write(w)?;
        }
    }
    Ok(())
}

/// `micro`: per configuration and metric, n, min, p10, median, p90 and max; then the findings.
fn micro_rows(w: &mut ::csv::Writer<Vec<u8>>, d: &Report) -> anyhow::Result<()> {
    if let Some(m) = &d.micro {
        for row in &m.rows {
            for (metric, s) in [
                ("cycles", &row.cycles),
                ("ns", &row.ns),
                ("core_cycles", &row.core_cycles),
            ] {
                for (stat, v) in [
                    ("n", s.n as f64),
                    ("min", s.min),
                    ("p10", s.p10),
                    ("median", s.median),
                    ("p90", s.p90),
                    ("max", s.max),
                ] {
                    Row {
                        record: "micro",
                        variant: row.variant.clone(),
                        metric: metric.into(),
                        stat: stat.into(),
                        value: num(v),
                        unit: if metric == "ns" { "ns" } else { "cycles" }.into(),
                        text: row.per.clone(),
                        ..Row::default()
                    }
                    .write(w)?;
                }
            }
        }
        for f in &m.findings {
            Row {
                record: "micro-finding",
                variant: f.bench.clone(),
                metric: f.key.clone(),
                value: f.value.map(num).unwrap_or_default(),
                unit: f.unit.clone(),
                text: f.text.clone(),
                ..Row::default()
            }
            .write(w)?;
        }
    }
    Ok(())
}

/// `trace`: per table row (table, group, key) and statistic.
fn trace_rows(w: &mut ::csv::Writer<Vec<u8>>, d: &Report) -> anyhow::Result<()> {
    if let Some(table) = d.trace.as_ref().and_then(|t| t.csv(d)) {
        // The trace table layout, one row per (table, group, key) and statistic.
        let table = table?;
        let mut rd = ::csv::Reader::from_reader(table.as_bytes());
        let header = rd.headers()?.clone();
        for rec in rd.records() {
            let rec = rec?;
            for (i, stat) in header.iter().enumerate().skip(3) {
                Row {
                    record: "trace",
                    variant: rec[0].to_string(),
                    seq: rec[2].to_string(),
                    metric: rec[1].to_string(),
                    stat: stat.to_string(),
                    value: rec[i].to_string(),
                    ..Row::default()
                }
                .write(w)?;
            }
        }
    }
    Ok(())
}

/// One row per run, one column per metric (sorted by name): what a spreadsheet wants.
/// One row per run (by variant, then in schedule order): the columns `abperf import --format csv` reads back (docs/import.md#tables):
/// the run's place and outcome, its replication labels (a booted kernel's boot by number), the
/// variant's parameters as `param.NAME`, and one `NAME [UNIT]` column per metric.
fn wide(d: &Report) -> anyhow::Result<String> {
    let mut metrics: Vec<(&str, &str)> = d
        .data
        .metrics
        .iter()
        .map(|m| (m.name.as_str(), m.unit.as_str()))
        .collect();
    metrics.sort();
    let params: std::collections::BTreeSet<&str> = d
        .data
        .variants
        .iter()
        .flat_map(|v| v.parameters.keys().map(String::as_str))
        .collect();
    let mut w = ::csv::Writer::from_writer(Vec::new());
    let mut header: Vec<String> = [
        "experiment",
        "variant",
        "seq",
        "warmup",
        "status",
        "counted",
        "exit_code",
        "signal",
        "started_ns",
        "ended_ns",
        "block",
        "invocation",
        "boot",
        "host",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    header.extend(params.iter().map(|p| neutral(&format!("param.{p}"))));
    header.extend(metrics.iter().map(|(n, u)| neutral(&format!("{n} [{u}]"))));
    w.write_record(&header)?;
    let exp = d
        .data
        .experiment()
        .map(|e| e.id.to_string())
        .unwrap_or_default();
    // By variant, then schedule order: `import --format csv` numbers the variants in order of
    // first appearance, so the export imports back with the same baseline.
    let mut runs: Vec<&Run> = d.data.runs.iter().collect();
    runs.sort_by_key(|r| (r.variant, r.seq));
    for r in runs {
        let boot = r.labels.boot.clone().or_else(|| {
            d.data
                .boot_of(r.variant, r.seq)
                .map(|b| b.number.to_string())
        });
        let label = |l: &Option<String>| l.as_deref().map(neutral).unwrap_or_default();
        let mut rec = vec![
            exp.clone(),
            neutral(d.variant_name(r.variant)),
            r.seq.to_string(),
            r.warmup.to_string(),
            r.status.as_str().to_string(),
            r.counts().to_string(),
            opt(r.exit_code),
            opt(r.signal),
            r.started_ns.to_string(),
            r.ended_ns.to_string(),
            r.block.to_string(),
            label(&r.labels.invocation),
            label(&boot),
            label(&r.labels.host),
        ];
        let variant = d.data.variants.get(r.variant);
        rec.extend(params.iter().map(|p| {
            variant
                .and_then(|v| v.parameters.get(*p))
                .map(|x| neutral(x))
                .unwrap_or_default()
        }));
        rec.extend(
            metrics
                .iter()
                .map(|(m, _)| r.value(m).map(num).unwrap_or_default()),
        );
        w.write_record(&rec)?;
    }
    finish(w)
}

#[cfg(test)]
mod tests {
    use super::super::testdata::sample_named;
    use super::*;

    #[test]
    fn long_form_with_quoting() {
        let d = sample_named("a,\"b\"", "=HYPERLINK(\"x\")");
        let c = Csv.render(&d).unwrap();
        let mut rd = ::csv::Reader::from_reader(c.as_bytes());
        assert_eq!(rd.headers().unwrap().iter().collect::<Vec<_>>(), HEADER);
        let rows: Vec<::csv::StringRecord> = rd.records().map(|r| r.unwrap()).collect();
        assert!(rows.iter().all(|r| r.len() == HEADER.len()));
        assert_eq!(rows.iter().filter(|r| &r[0] == "run").count(), 16 * 4);
        assert!(
            rows.iter()
                .any(|r| &r[1] == "a,\"b\"" && &r[8] == "maxrss_kib")
        );
        assert!(
            rows.iter().any(|r| &r[1] == "'=HYPERLINK(\"x\")"),
            "a formula is neutralised"
        );
        assert!(
            rows.iter()
                .any(|r| &r[0] == "describe" && &r[8] == "user_ns" && &r[9] == "q1")
        );
        assert!(rows.iter().any(|r| &r[0] == "comparison" && &r[9] == "p"));
        assert!(!c.contains("NaN"));
    }

    #[test]
    fn wide_form_one_row_per_run() {
        let mut d = sample_named("A", "B");
        d.view = View::Export;
        let c = Csv.render(&d).unwrap();
        let mut rd = ::csv::Reader::from_reader(c.as_bytes());
        let h = rd.headers().unwrap().clone();
        assert!(h.iter().any(|x| x == "user_ns [ns]"), "{h:?}");
        assert_eq!(rd.records().count(), 16);
        assert_eq!(neutral("-1"), "'-1");
        assert_eq!(neutral("a-1"), "a-1");
    }
}
