//! `--format csv`: everything in long form, one header, RFC 4180 quoting.
//!
//! Columns: `record,variant,seq,status,warmup,analysed,exit_code,signal,metric,stat,value,unit,
//! source_file,source_line,text`. `record` is `run` (one row per run and metric, stat `value`),
//! `describe` (per variant and metric: n, mean, sd, median, min, max, q1, q3, pm_pct) or
//! `comparison` (per variant against the baseline: ratio, ratio_ci_low, ratio_ci_high, p; the
//! verdict sentence in `text`).

use super::ReportData;

pub const HEADER: &str = "record,variant,seq,status,warmup,analysed,exit_code,signal,metric,stat,value,unit,source_file,source_line,text";

/// Quote a field when it holds a comma, quote, or line break.
pub fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

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

#[allow(clippy::too_many_arguments)]
fn row(out: &mut String, cols: [&str; 15]) {
    let line: Vec<String> = cols.iter().map(|c| field(c)).collect();
    out.push_str(&line.join(","));
    out.push('\n');
}

pub fn render(d: &ReportData) -> String {
    let mut out = String::from(HEADER);
    out.push('\n');
    for r in &d.runs {
        let (file, line) = r
            .source
            .as_ref()
            .map(|s| (s.file.clone(), s.line.to_string()))
            .unwrap_or_default();
        let (seq, status, warm, an, exit, sig) = (
            r.seq.to_string(),
            r.status.as_str(),
            r.warmup.to_string(),
            r.analysed.to_string(),
            opt(r.exit_code),
            opt(r.signal),
        );
        if r.metrics.is_empty() {
            row(
                &mut out,
                [
                    "run",
                    &r.variant_name,
                    &seq,
                    status,
                    &warm,
                    &an,
                    &exit,
                    &sig,
                    "",
                    "",
                    "",
                    "",
                    &file,
                    &line,
                    "",
                ],
            );
        }
        for (name, v) in &r.metrics {
            let unit = d.metric(name).map(|m| m.unit.as_str()).unwrap_or("");
            row(
                &mut out,
                [
                    "run",
                    &r.variant_name,
                    &seq,
                    status,
                    &warm,
                    &an,
                    &exit,
                    &sig,
                    name,
                    "value",
                    &num(*v),
                    unit,
                    &file,
                    &line,
                    "",
                ],
            );
        }
    }
    for x in &d.describe {
        let unit = d.metric(&x.metric).map(|m| m.unit.as_str()).unwrap_or("");
        let stats: [(&str, Option<f64>, &str); 9] = [
            ("n", Some(x.n as f64), ""),
            ("mean", Some(x.mean), unit),
            ("sd", x.sd, unit),
            ("median", Some(x.median), unit),
            ("min", Some(x.min), unit),
            ("max", Some(x.max), unit),
            ("q1", Some(x.q1), unit),
            ("q3", Some(x.q3), unit),
            ("pm_pct", x.pm_pct, "%"),
        ];
        for (stat, v, u) in stats {
            let v = v.map(num).unwrap_or_default();
            row(
                &mut out,
                [
                    "describe", &x.variant, "", "", "", "", "", "", &x.metric, stat, &v, u, "", "",
                    "",
                ],
            );
        }
    }
    for c in &d.verdicts {
        let ci = c.ratio_ci;
        let stats = [
            ("ratio", Some(c.ratio)),
            ("ratio_ci_low", ci.map(|c| c[0])),
            ("ratio_ci_high", ci.map(|c| c[1])),
            ("p", c.p),
        ];
        for (stat, v) in stats {
            let v = v.map(num).unwrap_or_default();
            let text = format!("{}: {}", c.verdict, c.line);
            row(
                &mut out,
                [
                    "comparison",
                    &c.variant,
                    "",
                    "",
                    "",
                    "",
                    "",
                    "",
                    &c.metric,
                    stat,
                    &v,
                    "",
                    "",
                    "",
                    &text,
                ],
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::testdata::sample_named;

    #[test]
    fn long_form_with_quoting() {
        let d = sample_named("a,\"b\"", "B");
        let c = super::render(&d);
        let mut lines = c.lines();
        assert_eq!(lines.next(), Some(super::HEADER));
        let runs = c.lines().filter(|l| l.starts_with("run,")).count();
        assert_eq!(runs, 16 * 4);
        assert!(
            c.contains("run,\"a,\"\"b\"\"\",0,ok,false,true,0,,maxrss_kib,value,"),
            "{c}"
        );
        assert!(
            c.lines()
                .any(|l| l.starts_with("describe,B,,,,,,,user_ns,mean,")),
            "{c}"
        );
        assert!(!c.contains("NaN"));
        for l in c.lines() {
            if !l.contains('"') {
                assert_eq!(l.split(',').count(), 15, "{l}");
            }
        }
    }
}
