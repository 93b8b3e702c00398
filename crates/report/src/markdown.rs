//! `--format md`: GitHub-flavoured Markdown: verdicts, the summary paragraph of a family
//! analysis, a summary table (one row per metric, one
//! column per variant, mean +- perf's relative standard error, change against the baseline),
//! method and provenance.

use super::fmt::{change_pct, metric_scale, pm};
use super::section::Section;
use super::table::cell;
use super::{Render, Report};
use std::fmt::Write;

pub struct Markdown;

impl Render for Markdown {
    fn render(&self, d: &Report) -> anyhow::Result<String> {
        Ok(render(d))
    }
}

fn render(d: &Report) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "### abperf {}\n", cell(&d.title()));
    // Two micro suites: one row per configuration in a compact table, not a verdict each.
    if let Some(m) = &d.micro_compare {
        s += &m.markdown(d).unwrap_or_default();
        let _ = writeln!(
            s,
            "\nRounds as the unit; {}, alpha {}; every configuration in `--format csv` or `json`.",
            if d.tests().is_empty() {
                "no tests".to_string()
            } else {
                cell(&d.tests())
            },
            d.alpha()
        );
    }
    for v in d.comparisons().iter().filter(|_| d.micro_compare.is_none()) {
        let _ = writeln!(s, "- **{}**: {}", cell(&v.metric), cell(&v.line));
    }
    for n in &d.verdict_notes() {
        let _ = writeln!(s, "- {}", cell(n));
    }
    let _ = writeln!(s);
    // Two micro suites: their table says it per configuration.
    if let Some(summary) = super::compare::Details.markdown(d) {
        s += &summary;
    }
    // A micro experiment's configurations are no columns to compare: its tables follow.
    if d.micro.is_none() && d.micro_compare.is_none() {
        summary_table(&mut s, d);
    }
    if d.micro_compare.is_none() {
        runs_line(&mut s, d);
    }
    if d.micro.is_none() && d.micro_compare.is_none() {
        compared(&mut s, d);
    }
    if let Some(h) = super::hosts::markdown(d) {
        s += &h;
    }
    if let Some(body) = d.trace.as_ref().and_then(|t| t.markdown(d)) {
        let _ = writeln!(s, "\n#### Trace tables\n\n{}", body.trim_end());
    }
    if let Some(a) = d.ceiling.as_ref().and_then(|a| a.markdown(d)) {
        let _ = writeln!(s, "\n{}", a.trim_end());
    }
    if let Some(m) = d.micro.as_ref().and_then(|m| m.markdown(d)) {
        let _ = writeln!(s, "\n#### Micro benchmarks\n\n{m}");
    }
    let files = d.files();
    let src = if files.is_empty() {
        String::new()
    } else {
        format!(", imported from {}", cell(&files.join(", ")))
    };
    let created = d
        .data
        .experiment()
        .map(|e| format!(" created {}", e.created))
        .unwrap_or_default();
    let _ = writeln!(
        s,
        "\n<sub>abperf {}, {}{created}{src}; {}; data sha256 `{}`</sub>",
        d.tool_version,
        cell(&d.title()),
        cell(&d.machine_text()),
        d.data_sha256
    );
    s
}

/// What each variant ran (`ran`): one item per variant, its command, parameters, knobs, kernel
/// and the kernel's provenance under it.
fn compared(s: &mut String, d: &Report) {
    let _ = writeln!(s, "\nVariants compared:\n");
    for v in &d.data.variants {
        let _ = writeln!(s, "- **{}**", cell(&v.name));
        for (_, l) in super::ran::lines(v) {
            let _ = writeln!(s, "  - {}", cell(&l));
        }
    }
}

/// "Runs per variant: ...": the runs, the order and the tests of an ordinary comparison.
fn runs_line(s: &mut String, d: &Report) {
    let _ = writeln!(
        s,
        "Runs per variant: {}. Mean ± perf stat's figure (SD/√n/mean). {}, {}, alpha {}.",
        d.n_text(),
        cell(&d.order_text()),
        if d.tests().is_empty() {
            "no tests".to_string()
        } else {
            cell(&d.tests())
        },
        d.alpha()
    );
}

/// One row per metric, one column per variant with its change against the baseline.
fn summary_table(s: &mut String, d: &Report) {
    let base = if d.analysis.is_some() {
        d.baseline().to_string()
    } else {
        d.variant_name(0).to_string()
    };
    let others: Vec<&str> = d
        .data
        .variants
        .iter()
        .filter(|v| v.name != base)
        .map(|v| v.name.as_str())
        .collect();
    let mut header = format!("| metric | {} (baseline) |", cell(&base));
    let mut rule = "|---|---:|".to_string();
    for o in &others {
        let _ = write!(header, " {} | change |", cell(o));
        rule.push_str("---:|---:|");
    }
    let _ = writeln!(s, "{header}\n{rule}");
    for m in d.main_metrics() {
        let sc = metric_scale(d, &m.name);
        let unit = sc.unit_label(&m.unit);
        let shown = |v: &str| {
            d.description(v, &m.name)
                .map(|x| {
                    let p = pm(d.pm_pct(v, &m.name));
                    if p.is_empty() {
                        sc.num(x.mean)
                    } else {
                        format!("{} ± {p}", sc.num(x.mean))
                    }
                })
                .unwrap_or_default()
        };
        let label = if unit.is_empty() {
            cell(&m.name)
        } else {
            format!("{} ({})", cell(&m.name), cell(&unit))
        };
        let mut row = format!("| {label} | {} |", shown(&base));
        let bmean = d.description(&base, &m.name).map(|x| x.mean);
        for o in &others {
            let ch = match (bmean, d.description(o, &m.name)) {
                (Some(a), Some(b)) => change_pct(a, b.mean),
                _ => String::new(),
            };
            let _ = write!(row, " {} | {ch} |", shown(o));
        }
        let _ = writeln!(s, "{row}");
    }
    let _ = writeln!(s);
}

#[cfg(test)]
mod tests {
    use super::super::testdata::sample_named;

    #[test]
    fn table_shape_and_escaping() {
        let d = sample_named("a|b", "<script>x</script>");
        let m = super::render(&d);
        assert!(m.contains(&d.data_sha256));
        assert!(
            m.contains("| metric | a\\|b (baseline) | &lt;script&gt;x&lt;/script&gt; | change |"),
            "{m}"
        );
        assert!(m.contains("|---|---:|---:|---:|"), "{m}");
        let row = m
            .lines()
            .find(|l| l.starts_with("| user\\_ns (s)"))
            .expect(&m);
        assert_eq!(row.matches(" | ").count(), 3, "{row}");
        assert!(row.contains('%'), "{row}");
        assert!(!m.contains("<script>"));
    }
}
