//! What a report shows of an `abperf micro` experiment (kind `micro`): one row per stored
//! configuration (min, p10, median, p90, max of its samples in cycles, ns and core cycles), the
//! tables of each benchmark family (TLB flush per pages with the knee, TLB miss per pages,
//! generic tables), the TLB flush curves for the HTML page (cycles against pages, one series per
//! operation and remote mode) and the stored findings (knee / implied ceiling, skips, notes).
//! Built from a [`Dataset`] plus the findings and the suite's design, so it is a pure function
//! of stored data. Its [`Section`] renders the text tables (fenced in Markdown), the JSON
//! section and the HTML section, whose curves [`super::svg::micro_curve`] draws.

use super::Report;
use super::section::Section;
use super::svg::{self, Marker, Series, esc};
use abperf_model::{Dataset, MicroFinding, Summary};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write;

/// Benchmark families drawn as curves (cycles against pages); the rest are tables.
pub const CURVE_BENCHES: &[&str] = &["tlb-flush", "tlb-shootdown"];

/// One stored configuration.
#[derive(Debug, Clone, Serialize)]
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
    /// Every parameter of the configuration.
    pub params: BTreeMap<String, String>,
    pub cycles: Summary,
    pub ns: Summary,
    pub core_cycles: Summary,
}

/// A micro experiment's rows, findings and suite description.
#[derive(Debug, Clone, Default)]
pub struct MicroData {
    pub rows: Vec<MicroRow>,
    pub findings: Vec<MicroFinding>,
    /// The stored design: timer, CPU, pinning, benches, quick, elapsed time, SMT pressure.
    pub design: serde_json::Value,
}

/// Rows from the counted samples of every configuration.
pub fn build(d: &Dataset, findings: Vec<MicroFinding>) -> MicroData {
    let rows = d
        .variants
        .iter()
        .enumerate()
        .filter_map(|(pos, v)| {
            let cycles = Summary::of(&d.values(pos, "cycles"));
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
                params: v.parameters.clone(),
                cycles,
                ns: Summary::of(&d.values(pos, "ns")),
                core_cycles: Summary::of(&d.values(pos, "core_cycles")),
            })
        })
        .collect();
    MicroData {
        rows,
        findings,
        design: d.experiment().map(|e| e.design.clone()).unwrap_or_default(),
    }
}

impl MicroData {
    /// The JSON section (docs/report-json.md): rows, findings, skips, notes and the suite.
    fn json_value(&self) -> serde_json::Value {
        let skips: Vec<serde_json::Value> = self
            .findings
            .iter()
            .filter(|f| f.key.starts_with("skipped"))
            .map(|f| {
                serde_json::json!({
                    "bench": f.bench,
                    "config": f.key.strip_prefix("skipped:"),
                    "reason": f.text,
                })
            })
            .collect();
        let notes: Vec<&str> = self.notes().map(|f| f.text.as_str()).collect();
        let findings: Vec<&MicroFinding> = self
            .findings
            .iter()
            .filter(|f| !f.bench.is_empty() && !f.key.starts_with("skipped"))
            .collect();
        let g = |k: &str| self.design.get(k).cloned().unwrap_or_default();
        serde_json::json!({
            "quick": g("quick"),
            "benches": g("benches"),
            "cpu": g("cpu"),
            "remote_cpu": g("remote_cpu"),
            "timer": g("timer"),
            "cpu_info": g("cpu_info"),
            "adds_per_cycle": g("adds_per_cycle"),
            "elapsed_s": g("elapsed_s"),
            "rows": self.rows,
            "findings": findings,
            "skips": skips,
            "notes": notes,
        })
    }

    /// The row of configuration `name`.
    pub fn row(&self, name: &str) -> Option<&MicroRow> {
        self.rows.iter().find(|r| r.variant == name)
    }

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

fn f0(x: f64) -> String {
    num(x, 0)
}

fn f1(x: f64) -> String {
    num(x, 1)
}

/// Generic table: one row per configuration.
fn generic(out: &mut String, rows: &[&MicroRow]) {
    if rows.is_empty() {
        return;
    }
    let w = rows
        .iter()
        .map(|m| m.variant.chars().count())
        .max()
        .unwrap_or(10)
        .max(10);
    let _ = writeln!(
        out,
        "  {:w$}  {:>9} {:>9} {:>9} {:>9} {:>9} {:>10}  {:>8}  per",
        "config", "min", "p10", "median", "p90", "ns(med)", "core(med)", "samples"
    );
    for m in rows {
        let _ = writeln!(
            out,
            "  {:w$}  {:>9} {:>9} {:>9} {:>9} {:>9} {:>10}  {:>8}  {}",
            m.variant,
            f0(m.cycles.min),
            f0(m.cycles.p10),
            f0(m.cycles.median),
            f0(m.cycles.p90),
            f1(m.ns.median),
            f0(m.core_cycles.median),
            m.cycles.n,
            m.per
        );
    }
}

/// Flush table in the seeds' spirit: per-call and per-page cycles by pages, knee marked.
fn flush_table(out: &mut String, m: &MicroData, prefix: &str, knee: Option<u64>) {
    let ops = ["madvise", "mprotect"];
    let mut sizes: Vec<u64> = m
        .rows
        .iter()
        .filter(|r| r.variant.starts_with(&format!("{prefix}/")) && r.variant.contains("/touched/"))
        .map(|r| r.pages)
        .collect();
    sizes.sort();
    sizes.dedup();
    if sizes.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "  {prefix}: median cycles per call (touched minus empty range) and per page"
    );
    let _ = writeln!(
        out,
        "  {:>5}  {:>9} {:>8} {:>9}   {:>9} {:>8} {:>9}",
        "pages", "madvise", "/page", "empty", "mprotect", "/page", "empty"
    );
    for n in sizes {
        let mut line = format!("  {n:>5} ");
        for op in ops {
            let t = m.row(&format!("{prefix}/{op}/touched/n={n}"));
            let e = m.row(&format!("{prefix}/{op}/empty/n={n}"));
            match (t, e) {
                (Some(t), Some(e)) => {
                    let net = t.cycles.median - e.cycles.median;
                    let _ = write!(
                        line,
                        " {:>9} {:>8} {:>9}  ",
                        f0(net),
                        f0(net / n as f64),
                        f0(e.cycles.median)
                    );
                }
                _ => line.push_str(&format!(" {:>9} {:>8} {:>9}  ", "-", "-", "-")),
            }
        }
        if knee == Some(n) {
            line.push_str(" <- knee (last per-page flush)");
        }
        let _ = writeln!(out, "{}", line.trim_end());
    }
}

/// Families in the order the suite ran them (the design's list), else of their first row.
fn families(m: &MicroData) -> Vec<String> {
    let mut out: Vec<String> = m
        .design
        .get("benches")
        .and_then(|b| b.as_array())
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    for b in m.benches() {
        if !out.iter().any(|x| x == b) {
            out.push(b.to_string());
        }
    }
    out
}

/// The text of a micro suite: the timer and CPU, one table per benchmark family, its findings
/// and skips, the notes.
fn text(r: &Report, m: &MicroData) -> String {
    let mut out = String::new();
    let d = &m.design;
    let s = |k: &str| d.get(k).and_then(|v| v.as_str()).unwrap_or("").to_string();
    let quick = d.get("quick").and_then(|v| v.as_bool()) == Some(true);
    let _ = writeln!(
        out,
        "abperf micro{}  ({}), {}",
        if quick { " --quick" } else { "" },
        s("arch"),
        r.title()
    );
    if !s("cpu_description").is_empty() {
        let _ = writeln!(out, "cpu: {}", s("cpu_description"));
    }
    let cpu = d.get("cpu").map(|v| v.to_string()).unwrap_or_default();
    let remote = match d.get("remote_cpu") {
        Some(v) if !v.is_null() => v.to_string(),
        _ => "none".into(),
    };
    let _ = writeln!(out, "pinned to CPU {cpu}, remote CPU {remote}");
    if let Some(t) = d.get("timer") {
        let f = |k: &str| t.get(k).and_then(|v| v.as_f64()).unwrap_or(f64::NAN);
        let st = |k: &str| t.get(k).and_then(|v| v.as_str()).unwrap_or("?").to_string();
        let _ = writeln!(
            out,
            "cycles are counter ticks; core(med) = median in core clock cycles"
        );
        let _ = writeln!(
            out,
            "timer: {} at {:.3} MHz ({}); overhead {:.0} cycles subtracted, resolution {} cycles; \
             core clock {:.2} GHz",
            st("counter"),
            f("hz") / 1e6,
            st("hz_source"),
            f("overhead"),
            f("resolution"),
            f("core_ghz")
        );
    }
    for n in m.notes() {
        let _ = writeln!(out, "note: {}", n.text);
    }
    for b in families(m) {
        let rows: Vec<&MicroRow> = m.rows.iter().filter(|r| r.bench == b).collect();
        let _ = writeln!(out, "\n== {b} ==");
        let knee_of = |op: &str| {
            m.findings
                .iter()
                .find(|f| f.bench == b && f.key == format!("{op}-knee"))
                .and_then(|f| f.value)
                .map(|v| v as u64)
        };
        match b.as_str() {
            "tlb-flush" => flush_table(
                &mut out,
                m,
                "tlb-flush",
                knee_of("madvise").or(knee_of("mprotect")),
            ),
            "tlb-shootdown" => {
                let mut modes: Vec<String> = rows
                    .iter()
                    .filter_map(|r| r.variant.split('/').nth(1).map(str::to_string))
                    .collect();
                modes.dedup();
                for mode in modes {
                    flush_table(&mut out, m, &format!("tlb-shootdown/{mode}"), None);
                }
            }
            "tlb-miss" => {
                let mut ns: Vec<u64> = rows
                    .iter()
                    .filter_map(|r| r.params.get("nodes")?.parse().ok())
                    .collect();
                ns.sort();
                ns.dedup();
                let _ = writeln!(
                    out,
                    "  median cycles per access; miss = page-strided minus dense (same lines)"
                );
                let _ = writeln!(
                    out,
                    "  {:>6} {:>9} {:>9} {:>9} {:>9} {:>9}",
                    "pages", "dense", "4K", "4K miss", "2M", "2M miss"
                );
                for n in ns {
                    let g = |k: &str| {
                        m.row(&format!("tlb-miss/{k}/n={n}"))
                            .map(|r| r.cycles.median)
                            .unwrap_or(f64::NAN)
                    };
                    let (dn, s4, h2) = (g("dense"), g("4k"), g("2m"));
                    let _ = writeln!(
                        out,
                        "  {:>6} {:>9} {:>9} {:>9} {:>9} {:>9}",
                        n,
                        f1(dn),
                        f1(s4),
                        f1(s4 - dn),
                        f1(h2),
                        f1(h2 - dn)
                    );
                }
            }
            _ => generic(&mut out, &rows),
        }
        for f in m.findings_of(&b) {
            let _ = writeln!(out, "  * {}", finding_text(f));
        }
    }
    let elapsed = d
        .get("elapsed_s")
        .and_then(|v| v.as_f64())
        .map(|e| format!(" in {e:.1} s"))
        .unwrap_or_default();
    let _ = writeln!(out, "\n{} configurations{elapsed}", m.rows.len());
    out
}

fn series_label(key: &(Option<String>, String)) -> String {
    match &key.0 {
        Some(r) => format!("{} {r}", key.1),
        None => key.1.clone(),
    }
}

/// Micro benchmarks: findings, the TLB flush curves (per call and per page, implied ceiling
/// marked), and a compact table of every configuration.
fn html(s: &mut String, m: &MicroData) {
    s.push_str("<h2>Micro benchmarks</h2>\n");
    let notes: Vec<_> = m.notes().collect();
    if !notes.is_empty() {
        s.push_str("<ul class=\"micro-notes note\">");
        for f in notes {
            let _ = write!(s, "<li>{}</li>", esc(&f.text));
        }
        s.push_str("</ul>\n");
    }
    let knees = m.knee_markers();
    for bench in m.benches() {
        let _ = writeln!(s, "<h3>{}</h3>", esc(bench));
        let findings: Vec<_> = m.findings_of(bench).collect();
        if !findings.is_empty() {
            s.push_str("<ul class=\"micro-findings\">");
            for f in findings {
                let _ = write!(s, "<li>{}</li>", esc(&finding_text(f)));
            }
            s.push_str("</ul>\n");
        }
        if CURVE_BENCHES.contains(&bench) {
            let calls = svg::micro_curve(
                &format!("{bench} per-call"),
                &m.call_series(bench),
                &knees,
                "median cycles per call",
            );
            let pages = svg::micro_curve(
                &format!("{bench} per-page"),
                &m.per_page_series(bench),
                &knees,
                "cycles per page (touched minus empty-range median)",
            );
            if let Some(p) = calls {
                let _ = writeln!(
                    s,
                    "<p class=\"note\">Cycles per call against pages (log2): median of the touched range with its p10-p90 band; dashed: the empty range (syscall and page-table walk, nothing to flush). The vertical line is the implied tlb_single_page_flush_ceiling (the knee).</p>\n{p}"
                );
            }
            if let Some(p) = pages {
                let _ = writeln!(
                    s,
                    "<p class=\"note\">The flush per page: (touched - empty-range median) / pages; band: the touched p10-p90 less the same median.</p>\n{p}"
                );
            }
            let _ = write!(
                s,
                "<details><summary>{bench} configurations</summary>",
                bench = esc(bench)
            );
            table(s, m, bench);
            s.push_str("</details>\n");
        } else {
            table(s, m, bench);
        }
    }
}

/// Median, p10, p90 cycles and median ns of each configuration of `bench`.
fn table(s: &mut String, m: &MicroData, bench: &str) {
    let _ = writeln!(
        s,
        "<div class=\"scroll\"><table class=\"micro-table\" data-bench=\"{}\"><tr><th class=\"l\">configuration</th><th>median cycles</th><th>p10</th><th>p90</th><th>median ns</th><th>samples</th><th class=\"l\">per</th></tr>",
        esc(bench)
    );
    for r in m.rows.iter().filter(|r| r.bench == bench) {
        let _ = writeln!(
            s,
            "<tr><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"l\">{}</td></tr>",
            esc(&r.variant),
            num(r.cycles.median, 0),
            num(r.cycles.p10, 0),
            num(r.cycles.p90, 0),
            num(r.ns.median, 1),
            r.cycles.n,
            esc(&r.per)
        );
    }
    s.push_str("</table></div>\n");
}

impl Section for MicroData {
    fn text(&self, r: &Report) -> String {
        text(r, self)
    }

    /// The text tables in a fenced block (a table per configuration would not fit).
    fn markdown(&self, r: &Report) -> Option<String> {
        let body = text(r, self);
        let body = body.trim_end().replace("```", "'''");
        Some(format!("```text\n{body}\n```"))
    }

    fn json(&self, _r: &Report) -> Option<anyhow::Result<serde_json::Value>> {
        Some(Ok(self.json_value()))
    }

    fn html(&self, _r: &Report) -> Option<String> {
        let mut s = String::new();
        html(&mut s, self);
        Some(s)
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
            params: BTreeMap::new(),
            cycles: s,
            ns: s.scaled(0.5),
            core_cycles: s,
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
            design: serde_json::json!({"benches": ["tlb-flush"], "quick": true}),
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
        let r = super::super::testdata::sample();
        let t = text(&r, &d);
        assert!(t.contains("x-knee text"), "{t}");
        assert!(t.starts_with("abperf micro --quick"), "{t}");
        assert!(t.contains("== tlb-flush =="), "{t}");
    }
}
