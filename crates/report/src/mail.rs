//! `--format mail`: plain text for a mailing-list reply. Every line is at most 72 columns:
//! the verdict line(s), the summary paragraph of a family analysis, a compact table of the
//! verdict metrics, what each variant ran, one method line, provenance.

use super::fmt::{metric_scale, one_line, pm, truncate, wrap};
use super::section::Section;
use super::{Render, Report};

pub const WIDTH: usize = 72;

pub struct Mail;

impl Render for Mail {
    fn render(&self, d: &Report) -> anyhow::Result<String> {
        Ok(render(d))
    }
}

fn render(d: &Report) -> String {
    let mut out: Vec<String> = Vec::new();
    verdicts(d, &mut out);
    for metric in &d.selected() {
        table(d, metric, &mut out);
    }
    if let Some(lines) = super::hosts::mail(d, WIDTH) {
        out.extend(lines);
    }
    // the ceiling advice lays out its own table and paragraph within WIDTH
    if let Some(a) = d.ceiling.as_ref().and_then(|a| a.mail(d)) {
        out.extend(a.lines().map(String::from));
        out.push(String::new());
    }
    // LKP-like rows of the profile differential (their own layout; long names wrapped).
    if let Some(p) = d.profile.as_ref().and_then(|p| p.mail(d)) {
        out.extend(p.lines().map(String::from));
        out.push(String::new());
    }
    if let Some(e) = d.data.experiment()
        && (d.trace.is_some() || d.micro.is_some())
        && d.ceiling.is_none()
    {
        let what = if d.trace.is_some() { "Trace" } else { "Micro" };
        let hint = format!(
            "{what} tables (wider than a mail line): abperf report {} --format text",
            e.id
        );
        para(&hint, &mut out);
        out.push(String::new());
    }
    compared(d, &mut out);
    method_and_provenance(d, &mut out);
    let mut s = out.join("\n");
    s.push('\n');
    s
}

fn para(text: &str, out: &mut Vec<String>) {
    out.extend(wrap(text, WIDTH, "  "));
}

/// The verdict lines (one metric: the line as it is, ready to paste; several: which metric each
/// is about), or for a family analysis the summary paragraph, which says every decisive verdict
/// in a reviewer's words instead of one line per pair.
fn verdicts(d: &Report, out: &mut Vec<String>) {
    let selected = d.selected();
    let summary = super::compare::Details.mail(d);
    for v in d.comparisons().iter().filter(|_| summary.is_none()) {
        if selected.len() > 1 {
            para(&format!("{}: {}", v.metric, v.line), out);
        } else {
            para(&v.line, out);
        }
    }
    for n in &d.verdict_notes() {
        para(n, out);
    }
    if let Some(text) = &summary {
        // Paragraphs wrap flush left, list items ("- ") under their text.
        for l in text.lines() {
            match l {
                "" => out.push(String::new()),
                item if item.starts_with("- ") => out.extend(wrap(item, WIDTH, "  ")),
                p => out.extend(wrap(p, WIDTH, "")),
            }
        }
    } else {
        out.push(String::new());
    }
}

/// Compact table of one verdict metric: variant, n, mean, +-, min, max.
fn table(d: &Report, metric: &str, out: &mut Vec<String>) {
    let Some(info) = d.metric(metric) else {
        return;
    };
    let sc = metric_scale(d, metric);
    let unit = sc.unit_label(&info.unit);
    let title = if unit.is_empty() {
        metric.to_string()
    } else {
        format!("{metric} ({unit})")
    };
    out.push(truncate(&one_line(&title), WIDTH));
    // Columns: name 20, n 4, mean 12, +- 8, min 12, max 12 (+ 5 separators) = 73 -> name 19.
    let name_w = 19;
    out.push(format!(
        "{:<name_w$} {:>4} {:>12} {:>8} {:>12} {:>12}",
        "variant", "n", "mean", "+-", "min", "max"
    ));
    for v in &d.data.variants {
        let Some(desc) = d.description(&v.name, metric) else {
            continue;
        };
        let row = format!(
            "{:<name_w$} {:>4} {:>12} {:>8} {:>12} {:>12}",
            truncate(&one_line(&v.name), name_w),
            desc.n,
            truncate(&sc.num(desc.mean), 12),
            pm(d.pm_pct(&v.name, metric)),
            truncate(&sc.num(desc.min), 12),
            truncate(&sc.num(desc.max), 12)
        );
        out.push(truncate(&row, WIDTH));
    }
    out.push(String::new());
}

/// What each variant ran (`ran`), in LKP's manner for a kernel built from git: the base commit
/// and each patch by subject. Left out for micro suites (hundreds of configurations).
fn compared(d: &Report, out: &mut Vec<String>) {
    if d.micro.is_some() || d.micro_compare.is_some() {
        return;
    }
    out.push("Variants compared:".into());
    for v in &d.data.variants {
        out.extend(wrap(&format!("- {}", v.name), WIDTH, "  "));
        for l in super::ran::lines(v) {
            out.extend(
                wrap(&l.1, WIDTH - 4, "  ")
                    .into_iter()
                    .map(|w| format!("    {w}")),
            );
        }
    }
    out.push(String::new());
}

/// The method line (order, n, seed, tests, alpha) and the provenance line.
fn method_and_provenance(d: &Report, out: &mut Vec<String>) {
    let seed = d
        .data
        .experiment()
        .and_then(|e| e.seed)
        .map(|s| s.to_string())
        .unwrap_or_else(|| "none".into());
    let tests = d.tests();
    let tests = if tests.is_empty() {
        "no tests".to_string()
    } else {
        tests
    };
    let method = format!(
        "Method: {}, n={}, seed {seed}, {tests}, alpha {}",
        d.order_text(),
        d.n_text(),
        d.alpha()
    );
    para(&method, out);
    let files = d.files();
    let src = if files.is_empty() {
        String::new()
    } else {
        format!(", imported from {}", files.join(", "))
    };
    let prov = format!(
        "abperf {}, {}{src}; {}; data sha256 {}",
        d.tool_version,
        d.title(),
        d.machine_text(),
        d.data_sha256
    );
    para(&prov, out);
}

#[cfg(test)]
mod tests {
    use super::super::testdata::sample_named;
    use super::WIDTH;

    #[test]
    fn every_line_fits_72_columns() {
        let long = "a-variant-name-that-is-far-too-long-for-any-mail-table-column-at-all <b>";
        let d = sample_named(long, "B\tmit\ttabs");
        let m = super::render(&d);
        for l in m.lines() {
            assert!(
                l.chars().count() <= WIDTH,
                "{} columns: {l:?}",
                l.chars().count()
            );
            assert!(!l.contains('\t'), "{l:?}");
        }
        assert!(m.contains("Method: "), "{m}");
        assert!(m.contains("experiment 7"), "{m}");
        assert!(m.contains("user_ns (s)"), "{m}");
    }
}
