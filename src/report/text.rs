//! `--format text`: a perf-stat-like block per variant (mean and the "( +- x% )" standard error
//! of the mean relative to the mean), then the verdicts.

use super::ReportData;
use super::fmt::{metric_scale, one_line};
use std::fmt::Write;

pub fn render(d: &ReportData) -> String {
    let mut s = String::new();
    let e = &d.experiment;
    let _ = writeln!(
        s,
        "Experiment {} \"{}\" ({}, {}, created {})",
        e.id,
        one_line(&e.name),
        e.kind,
        e.status.as_str(),
        e.created
    );
    let _ = writeln!(
        s,
        "  {} variant(s), {} run(s), {} analysed (n={}); {}",
        d.variants.len(),
        d.runs.len(),
        d.analysed_runs(),
        d.n_text(),
        d.order_text()
    );
    if !d.sources.is_empty() {
        let _ = writeln!(s, "  imported from {}", one_line(&d.sources.join(", ")));
    }
    for v in &d.variants {
        let _ = writeln!(s);
        let _ = writeln!(
            s,
            " Performance summary for '{}' ({}):",
            one_line(&v.name),
            d.runs_text(v.position)
        );
        if let Some(c) = &v.command {
            let _ = writeln!(s, "   command: {}", one_line(c));
        }
        let _ = writeln!(s);
        for m in d.main_metrics() {
            let Some(desc) = d.description(&v.name, &m.name) else {
                continue;
            };
            let sc = metric_scale(d, &m.name);
            let pm = d
                .pm_pct(&v.name, &m.name)
                .map(|p| format!("( +- {p:>5.2}% )"))
                .unwrap_or_default();
            let _ = writeln!(
                s,
                "  {:>16} {:<4} {:<24} {pm}",
                sc.num(desc.mean),
                sc.unit_label(&m.unit),
                one_line(&m.name)
            );
        }
        for (k, sv) in &v.import_summary {
            let sc = super::fmt::scale_for(&sv.unit, sv.value);
            let _ = writeln!(
                s,
                "  {:>16} {:<4} {:<24} (as imported, no per-run values)",
                sc.num(sv.value),
                sc.unit_label(&sv.unit),
                k
            );
        }
    }
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "Verdicts (baseline '{}', alpha {}, metric {}):",
        one_line(d.variant_name(d.baseline)),
        d.alpha,
        one_line(&d.selected.join(", "))
    );
    for v in &d.verdicts {
        let _ = writeln!(s, "  {}: {}", one_line(&v.metric), one_line(&v.line));
    }
    for n in &d.verdict_notes {
        let _ = writeln!(s, "  {}", one_line(n));
    }
    let _ = writeln!(s);
    if let Some(t) = &d.trace {
        let _ = writeln!(s, "Trace tables:\n{}", t.text.trim_end());
        let _ = writeln!(s);
    }
    if let Some(m) = &d.micro {
        let _ = writeln!(
            s,
            "Micro configurations (cycles):\n{}",
            m.text_table().trim_end()
        );
        let _ = writeln!(s);
    }
    let _ = writeln!(s, "{}", one_line(&d.machine_text()));
    if !d.tests.is_empty() {
        let _ = writeln!(s, "tests: {}", d.tests);
    }
    let _ = writeln!(
        s,
        "abperf {}, data sha256 {}",
        d.tool_version, d.data_sha256
    );
    s
}

#[cfg(test)]
mod tests {
    use super::super::testdata::sample;

    #[test]
    fn perf_stat_like_blocks() {
        let d = sample();
        let t = super::render(&d);
        assert!(t.contains(" Performance summary for 'A' (8 runs):"), "{t}");
        assert!(t.contains("user_ns"), "{t}");
        assert!(t.contains("( +- "), "{t}");
        assert!(
            !t.contains("user_ns.stderr_pct"),
            "auxiliary metrics stay out: {t}"
        );
        assert!(
            t.contains("Verdicts (baseline 'A', alpha 0.05, metric user_ns):"),
            "{t}"
        );
        assert!(!t.contains("NaN"), "{t}");
    }
}
