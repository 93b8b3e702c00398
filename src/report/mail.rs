//! `--format mail`: plain text for a mailing-list reply. Every line is at most 72 columns:
//! the verdict line(s), a compact table of the verdict metrics, one method line, provenance.

use super::ReportData;
use super::fmt::{metric_scale, one_line, pm, truncate, wrap};

pub const WIDTH: usize = 72;

pub fn render(d: &ReportData) -> String {
    let mut out: Vec<String> = Vec::new();
    let para = |text: &str, out: &mut Vec<String>| out.extend(wrap(text, WIDTH, "  "));
    // One metric: the line as it is, ready to paste; several: say which metric each is about.
    for v in &d.verdicts {
        if d.selected.len() > 1 {
            para(&format!("{}: {}", v.metric, v.line), &mut out);
        } else {
            para(&v.line, &mut out);
        }
    }
    for n in &d.verdict_notes {
        para(n, &mut out);
    }
    out.push(String::new());

    // Compact table: variant, n, mean, +-, min, max for each verdict metric.
    for metric in &d.selected {
        let Some(info) = d.metric(metric) else {
            continue;
        };
        let sc = metric_scale(d, metric);
        let unit = sc.unit_label(&info.unit);
        let title = if unit.is_empty() {
            metric.clone()
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
        for v in &d.variants {
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

    if d.trace.is_some() {
        let hint = format!(
            "Trace tables (wider than a mail line): abperf report {} --format text",
            d.experiment.id
        );
        para(&hint, &mut out);
        out.push(String::new());
    }
    let seed = d
        .experiment
        .seed
        .map(|s| s.to_string())
        .unwrap_or_else(|| "none".into());
    let tests = if d.tests.is_empty() {
        "no tests"
    } else {
        d.tests.as_str()
    };
    let method = format!(
        "Method: {}, n={}, seed {seed}, {tests}, alpha {}",
        d.order_text(),
        d.n_text(),
        d.alpha
    );
    para(&method, &mut out);
    let src = if d.sources.is_empty() {
        String::new()
    } else {
        format!(", imported from {}", d.sources.join(", "))
    };
    let prov = format!(
        "abperf {}, experiment {} \"{}\"{src}; {}; data sha256 {}",
        d.tool_version,
        d.experiment.id,
        d.experiment.name,
        d.machine_text(),
        &d.data_sha256[..16.min(d.data_sha256.len())]
    );
    para(&prov, &mut out);
    let mut s = out.join("\n");
    s.push('\n');
    s
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
        assert!(m.contains("abperf 0.1.0, experiment 7"), "{m}");
        assert!(m.contains("user_ns (s)"), "{m}");
    }
}
