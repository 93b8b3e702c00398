//! What a report shows of an `abperf micro` experiment (kind `micro`): one row per stored
//! configuration (median, p10, p90 of its samples in cycles and ns), the TLB flush curves
//! (cycles against pages, one series per operation and remote mode) and the stored findings
//! (knee / implied ceiling, skips, notes). Built from the report's runs, so it is a pure
//! function of [`ReportData`] plus the findings; the SVG is drawn by [`super::svg::micro_curve`].

use super::ReportData;
use crate::micro::harness::Summary;
use crate::store::MicroFinding;
use std::fmt::Write;

/// Benchmark families drawn as curves (cycles against pages); the rest are tables.
pub const CURVE_BENCHES: &[&str] = &["tlb-flush", "tlb-shootdown"];

/// One stored configuration.
#[derive(Debug, Clone)]
pub struct MicroRow {
    pub variant: String,
    pub bench: String,
    /// `madvise`, `mprotect`, ... (parameter `op`).
    pub op: Option<String>,
    /// `touched` or `empty` (parameter `range`).
    pub range: Option<String>,
    /// `local`, `spin1`, `sleep1`, ... (parameter `remote`, shootdowns only).
    pub remote: Option<String>,
    pub pages: u64,
    /// What one sample is the cost of (`call`, `access`, ...).
    pub per: String,
    pub cycles: Summary,
    pub ns: Summary,
}

/// A micro experiment's rows and findings.
#[derive(Debug, Clone, Default)]
pub struct MicroData {
    pub rows: Vec<MicroRow>,
    pub findings: Vec<MicroFinding>,
}

/// One line of a curve plot: (pages, p10, median, p90) ascending in pages.
#[derive(Debug, Clone)]
pub struct Series {
    pub label: String,
    pub points: Vec<(f64, f64, f64, f64)>,
    /// Drawn dashed (a reference such as the empty-range cost).
    pub dashed: bool,
    /// Colour index.
    pub colour: usize,
}

/// A vertical marker: x value and its label.
#[derive(Debug, Clone)]
pub struct Marker {
    pub x: f64,
    pub label: String,
}

/// Rows from the report's analysed runs.
pub fn build(d: &ReportData, findings: Vec<MicroFinding>) -> MicroData {
    let rows = d
        .variants
        .iter()
        .filter_map(|v| {
            let cycles = Summary::of(&d.values(v.position, "cycles"));
            if cycles.n == 0 {
                return None;
            }
            let p = |k: &str| v.parameters.get(k).cloned();
            Some(MicroRow {
                variant: v.name.clone(),
                bench: p("bench")
                    .unwrap_or_else(|| v.name.split('/').next().unwrap_or("").to_string()),
                op: p("op"),
                range: p("range"),
                remote: p("remote"),
                pages: p("pages").and_then(|s| s.parse().ok()).unwrap_or(1),
                per: p("per").unwrap_or_default(),
                cycles,
                ns: Summary::of(&d.values(v.position, "ns")),
            })
        })
        .collect();
    MicroData { rows, findings }
}

impl MicroData {
    /// Families present, in the order of their first configuration.
    pub fn benches(&self) -> Vec<&str> {
        let mut b: Vec<&str> = Vec::new();
        for r in &self.rows {
            if !b.contains(&r.bench.as_str()) {
                b.push(&r.bench);
            }
        }
        b
    }

    /// Series keys (remote mode, op) of a curve family, in order of appearance.
    fn keys(&self, bench: &str) -> Vec<(Option<String>, String)> {
        let mut keys = Vec::new();
        for r in self.rows.iter().filter(|r| r.bench == bench) {
            if let Some(op) = &r.op {
                let k = (r.remote.clone(), op.clone());
                if !keys.contains(&k) {
                    keys.push(k);
                }
            }
        }
        keys
    }

    fn rows_of<'a>(
        &'a self,
        bench: &'a str,
        key: &'a (Option<String>, String),
        range: &'a str,
    ) -> impl Iterator<Item = &'a MicroRow> + 'a {
        self.rows.iter().filter(move |r| {
            r.bench == bench
                && r.remote == key.0
                && r.op.as_deref() == Some(key.1.as_str())
                && r.range.as_deref() == Some(range)
        })
    }

    /// Per-call cycles of `bench` against pages: per (remote mode, op) the touched range with
    /// its p10-p90 band, and the empty range's median dashed in the same colour.
    pub fn call_series(&self, bench: &str) -> Vec<Series> {
        let mut out = Vec::new();
        for (i, key) in self.keys(bench).iter().enumerate() {
            let label = series_label(key);
            let mut touched: Vec<_> = self
                .rows_of(bench, key, "touched")
                .map(|r| (r.pages as f64, r.cycles.p10, r.cycles.median, r.cycles.p90))
                .collect();
            touched.sort_by(|a, b| a.0.total_cmp(&b.0));
            let mut empty: Vec<_> = self
                .rows_of(bench, key, "empty")
                .map(|r| {
                    let m = r.cycles.median;
                    (r.pages as f64, m, m, m)
                })
                .collect();
            empty.sort_by(|a, b| a.0.total_cmp(&b.0));
            if !touched.is_empty() {
                out.push(Series {
                    label: label.clone(),
                    points: touched,
                    dashed: false,
                    colour: i,
                });
            }
            if !empty.is_empty() {
                out.push(Series {
                    label: format!("{label} (empty range)"),
                    points: empty,
                    dashed: true,
                    colour: i,
                });
            }
        }
        out
    }

    /// Per-page cycles of the flush itself: (touched - empty median) / pages, the figure the knee
    /// is found on; the band is the touched p10-p90 less the same empty median, per page.
    pub fn per_page_series(&self, bench: &str) -> Vec<Series> {
        let mut out = Vec::new();
        for (i, key) in self.keys(bench).iter().enumerate() {
            let mut pts = Vec::new();
            for t in self.rows_of(bench, key, "touched") {
                let e = self
                    .rows_of(bench, key, "empty")
                    .find(|e| e.pages == t.pages)
                    .map(|e| e.cycles.median)
                    .unwrap_or(0.0);
                let n = t.pages.max(1) as f64;
                pts.push((
                    n,
                    (t.cycles.p10 - e) / n,
                    (t.cycles.median - e) / n,
                    (t.cycles.p90 - e) / n,
                ));
            }
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            if !pts.is_empty() {
                out.push(Series {
                    label: series_label(key),
                    points: pts,
                    dashed: false,
                    colour: i,
                });
            }
        }
        out
    }

    /// The knees (implied `tlb_single_page_flush_ceiling`) the `tlb-flush` run found, merged
    /// when both operations agree.
    pub fn knee_markers(&self) -> Vec<Marker> {
        let mut m: Vec<(f64, Vec<String>)> = Vec::new();
        for f in &self.findings {
            if f.bench != "tlb-flush" || !f.key.ends_with("-knee") {
                continue;
            }
            let Some(v) = f.value.filter(|v| v.is_finite() && *v > 0.0) else {
                continue;
            };
            let op = f.key.trim_end_matches("-knee").to_string();
            match m.iter_mut().find(|(x, _)| *x == v) {
                Some((_, ops)) => ops.push(op),
                None => m.push((v, vec![op])),
            }
        }
        m.into_iter()
            .map(|(x, ops)| Marker {
                x,
                label: format!("implied ceiling {x:.0} ({})", ops.join(", ")),
            })
            .collect()
    }

    /// Findings (with a value or a text) of `bench`, skips included.
    pub fn findings_of<'a>(&'a self, bench: &'a str) -> impl Iterator<Item = &'a MicroFinding> {
        self.findings.iter().filter(move |f| f.bench == bench)
    }

    /// Suite-wide notes.
    pub fn notes(&self) -> impl Iterator<Item = &MicroFinding> {
        self.findings.iter().filter(|f| f.bench.is_empty())
    }

    /// Plain-text table: one row per configuration (median, p10, p90 cycles; median ns), then
    /// the findings.
    pub fn text_table(&self) -> String {
        let mut s = String::new();
        let w = self
            .rows
            .iter()
            .map(|r| r.variant.chars().count())
            .max()
            .unwrap_or(6)
            .max(6);
        let _ = writeln!(
            s,
            "{:w$}  {:>10} {:>10} {:>10} {:>10}  per",
            "config", "p10", "median", "p90", "ns(med)"
        );
        for r in &self.rows {
            let _ = writeln!(
                s,
                "{:w$}  {:>10} {:>10} {:>10} {:>10}  {}",
                r.variant,
                num(r.cycles.p10, 0),
                num(r.cycles.median, 0),
                num(r.cycles.p90, 0),
                num(r.ns.median, 1),
                r.per
            );
        }
        for f in &self.findings {
            let _ = writeln!(s, "* {}", finding_text(f));
        }
        s
    }
}

/// A finite number with `dec` decimals, `-` otherwise.
pub fn num(x: f64, dec: usize) -> String {
    if x.is_finite() {
        format!("{x:.dec$}")
    } else {
        "-".into()
    }
}

/// A finding as one line: its text, or for skips and notes the key and text.
pub fn finding_text(f: &MicroFinding) -> String {
    if f.key.starts_with("skipped") {
        format!("{} {}: {}", f.bench, f.key, f.text)
    } else if f.key == "note" {
        format!("note: {}", f.text)
    } else {
        f.text.clone()
    }
}

fn series_label(key: &(Option<String>, String)) -> String {
    match &key.0 {
        Some(r) => format!("{} {r}", key.1),
        None => key.1.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(name: &str, op: &str, range: &str, remote: Option<&str>, n: u64, c: f64) -> MicroRow {
        let s = Summary::of(&[c - 10.0, c, c + 10.0]);
        MicroRow {
            variant: name.into(),
            bench: if remote.is_some() {
                "tlb-shootdown"
            } else {
                "tlb-flush"
            }
            .into(),
            op: Some(op.into()),
            range: Some(range.into()),
            remote: remote.map(str::to_string),
            pages: n,
            per: "call".into(),
            cycles: s,
            ns: s.scaled(0.5),
        }
    }

    fn finding(key: &str, v: Option<f64>) -> MicroFinding {
        MicroFinding {
            bench: "tlb-flush".into(),
            key: key.into(),
            value: v,
            unit: "pages".into(),
            text: format!("{key} text"),
        }
    }

    #[test]
    fn series_and_markers() {
        let mut rows = Vec::new();
        for n in [4u64, 1, 2] {
            rows.push(row("a", "madvise", "touched", None, n, 1000.0 * n as f64));
            rows.push(row("a", "madvise", "empty", None, n, 500.0));
            rows.push(row("a", "mprotect", "touched", None, n, 800.0 * n as f64));
            rows.push(row("s", "madvise", "touched", Some("spin1"), n, 3000.0));
        }
        let d = MicroData {
            rows,
            findings: vec![
                finding("madvise-knee", Some(33.0)),
                finding("mprotect-knee", Some(33.0)),
                finding("x-knee", None),
            ],
        };
        let s = d.call_series("tlb-flush");
        assert_eq!(s.len(), 3, "madvise, its empty range, mprotect");
        assert_eq!(s[0].label, "madvise");
        assert!(s[1].dashed && s[1].colour == 0);
        assert_eq!(
            s[0].points.iter().map(|p| p.0).collect::<Vec<_>>(),
            [1.0, 2.0, 4.0]
        );
        assert_eq!(s[0].points[2], (4.0, 3992.0, 4000.0, 4008.0));
        let pp = d.per_page_series("tlb-flush");
        // (4000 - 500) / 4
        assert_eq!(pp[0].points[2].2, 875.0);
        // No empty range stored: nothing subtracted.
        assert_eq!(pp[1].points[0].2, 800.0);
        let sd = d.call_series("tlb-shootdown");
        assert_eq!(sd[0].label, "madvise spin1");
        let m = d.knee_markers();
        assert_eq!(m.len(), 1);
        assert_eq!(m[0].x, 33.0);
        assert_eq!(m[0].label, "implied ceiling 33 (madvise, mprotect)");
        let t = d.text_table();
        assert!(t.contains("x-knee text"));
        assert!(t.lines().nth(1).unwrap().contains("3992"), "{t}");
    }
}
