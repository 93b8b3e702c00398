//! `--format html`: one self-contained page. No scripts, no network, no external assets (a
//! Content-Security-Policy forbids them); inline CSS and SVG only. Every piece of user text
//! (experiment, variant and metric names, commands, paths) is escaped.

use super::fmt::{change_pct, metric_scale, pm};
use super::section::Section;
use super::svg::{self, colour, esc};
use super::{Render, Report};
use std::fmt::Write;

/// Raw runs listed in the page (all of them are in the CSV and JSON reports).
pub const MAX_RUN_ROWS: usize = 5000;

pub(crate) const STYLE: &str = "body{font-family:sans-serif;margin:1.5em auto;max-width:800px;color:#222}\
h1{font-size:1.4em}h2{font-size:1.15em;margin-top:1.6em;border-bottom:1px solid #ccc}\
table{border-collapse:collapse;font-size:.9em}td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}\
td.l,th.l{text-align:left}.verdict{font-weight:bold}.note{color:#555}.swatch{display:inline-block;\
width:.8em;height:.8em;margin-right:.3em}code{font-size:.9em}.prov{color:#555;font-size:.85em}\
.scroll{overflow-x:auto;max-width:100%}td.name{max-width:24em;overflow-wrap:anywhere}";

/// The page's Content-Security-Policy: no script, no fetch, inline style and data: images only.
pub(crate) const CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; img-src data:";

pub struct Html;

impl Render for Html {
    fn render(&self, d: &Report) -> anyhow::Result<String> {
        Ok(render(d))
    }
}

fn render(d: &Report) -> String {
    let mut s = String::new();
    page_head(&mut s, d);
    // Two micro suites: the compact comparison instead of a verdict, a plot and a table row for
    // each of hundreds of configurations.
    if let Some(m) = &d.micro_compare {
        let _ = writeln!(
            s,
            "{} configuration(s) in both, {} round median(s).</p>",
            m.rows.len(),
            d.data.runs.len()
        );
        s.push_str(&m.html(d).unwrap_or_default());
        provenance(&mut s, d);
        return s;
    }
    let _ = writeln!(
        s,
        "{} variant(s), {} run(s), {} analysed (n={}); {}.</p>",
        d.data.variants.len(),
        d.data.runs.len(),
        d.data.counted_total(),
        esc(&d.n_text()),
        esc(&d.order_text())
    );

    verdicts(&mut s, d);
    if let Some(p) = d.profile.as_ref().and_then(|p| p.html(d)) {
        s.push_str(&p);
    }

    // Variants.
    let is_micro = d.micro.is_some();
    if let Some(m) = d.micro.as_ref().and_then(|m| m.html(d)) {
        s.push_str(&m);
    }
    if is_micro {
        let _ = write!(
            s,
            "<h2>Variants</h2><details><summary>{} configuration(s)</summary>",
            d.data.variants.len()
        );
    } else {
        s.push_str("<h2>Variants</h2>");
    }
    variants_table(&mut s, d, is_micro);
    if is_micro {
        s.push_str("</details>\n");
    } else {
        summary_and_plots(&mut s, d);
    }

    if let Some(t) = d.trace.as_ref().and_then(|t| t.html(d)) {
        s.push_str(&t);
    }
    if let Some(a) = d.ceiling.as_ref().and_then(|a| a.html(d)) {
        s.push_str(&a);
    }
    runs_and_provenance(&mut s, d);
    s
}

/// The document's head (title, style, the security policy), the heading and the opening of the
/// experiment's line (closed by the caller with its counts).
fn page_head(s: &mut String, d: &Report) {
    let title = d.title();
    let _ = write!(
        s,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
<meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">\
<meta name=\"viewport\" content=\"width=device-width\"><title>abperf {}</title><style>{STYLE}</style></head><body>\n",
        esc(&title)
    );
    match d.data.experiment() {
        Some(e) => {
            let _ = writeln!(
                s,
                "<h1>Experiment {}: <span class=\"name\">{}</span></h1>",
                e.id,
                esc(&e.name)
            );
            let _ = write!(
                s,
                "<p>{} experiment, {}, created {}; ",
                esc(e.kind.as_str()),
                esc(e.status.as_str()),
                esc(&e.created),
            );
        }
        None => {
            let _ = writeln!(s, "<h1>{}</h1>", esc(&title));
            s.push_str("<p>");
        }
    }
}

/// The verdict of each comparison, the notes, and the forest plot of the ratios.
fn verdicts(s: &mut String, d: &Report) {
    if d.analysis.is_some() {
        let _ = writeln!(
            s,
            "<h2>Verdicts</h2><p class=\"note\">Baseline <b>{}</b>, alpha {}, metric {}.</p><ul id=\"verdicts\">",
            esc(d.baseline()),
            d.alpha(),
            esc(&d.selected().join(", "))
        );
    } else {
        s.push_str("<h2>Verdicts</h2><ul id=\"verdicts\">");
    }
    for v in d.comparisons() {
        let _ = writeln!(
            s,
            "<li class=\"verdict\">{}: {}</li>",
            esc(&v.metric),
            esc(&v.line)
        );
    }
    for n in &d.verdict_notes() {
        let _ = writeln!(s, "<li class=\"note\">{}</li>", esc(n));
    }
    s.push_str("</ul>\n");
    if let Some(f) = svg::forest(d) {
        let _ = writeln!(s, "<h2>Ratio of means (forest plot)</h2>\n{f}");
    }
}

/// One row per variant: its label when plots use one, name, command, parameters and runs.
fn variants_table(s: &mut String, d: &Report, is_micro: bool) {
    let labels = svg::variant_labels(d);
    // Micro configurations are not plotted per variant: no labels to map.
    let labelled = !is_micro
        && labels
            .iter()
            .zip(&d.data.variants)
            .any(|(l, v)| *l != v.name);
    s.push_str("<div class=\"scroll\"><table id=\"variants\"><tr>");
    if labelled {
        s.push_str("<th class=\"l\">label</th>");
    }
    s.push_str("<th class=\"l\">variant</th><th class=\"l\">command</th><th class=\"l\">parameters</th><th>runs</th></tr>\n");
    for (i, v) in d.data.variants.iter().enumerate() {
        let params: Vec<String> = v
            .parameters
            .iter()
            .map(|(k, val)| format!("{k}={val}"))
            .collect();
        let n = d.data.runs.iter().filter(|r| r.variant == i).count();
        let swatch = format!(
            "<span class=\"swatch\" style=\"background:{}\"></span>",
            colour(i)
        );
        s.push_str("<tr>");
        if labelled {
            let _ = write!(
                s,
                "<td class=\"l\">{swatch}<span class=\"label\">{}</span></td>",
                esc(&labels[i])
            );
        }
        let _ = writeln!(
            s,
            "<td class=\"l name\">{}<span class=\"variant-name\">{}</span></td><td class=\"l\"><code>{}</code></td><td class=\"l\">{}</td><td>{n}</td></tr>",
            if labelled { "" } else { swatch.as_str() },
            esc(&v.name),
            esc(v.command.as_deref().unwrap_or("")),
            esc(&params.join(", "))
        );
    }
    s.push_str("</table></div>\n");
    kernels_and_knobs(s, d, is_micro);
    if labelled {
        s.push_str("<p class=\"note\">Plots and the summary name variants by their label.</p>\n");
    }
}

/// What the variants table does not show of what each variant ran (`ran`): knobs, the kernel,
/// its provenance; nothing when no variant has any.
fn kernels_and_knobs(s: &mut String, d: &Report, is_micro: bool) {
    use super::ran::{Item, any_beyond_command, lines_but};
    if is_micro || !any_beyond_command(&d.data.variants) {
        return;
    }
    s.push_str("<ul id=\"variants-ran\">");
    for v in &d.data.variants {
        let _ = write!(s, "<li><b>{}</b><ul>", esc(&v.name));
        for l in lines_but(v, &[Item::Command, Item::Parameters]) {
            let _ = write!(s, "<li><code>{}</code></li>", esc(&l));
        }
        s.push_str("</ul></li>");
    }
    s.push_str("</ul>\n");
}

/// The summary table, run-order and distribution plots (one column and one row per variant:
/// left out for micro experiments, whose hundreds of configurations get curves and a table).
fn summary_and_plots(s: &mut String, d: &Report) {
    // Summary table.
    let base = if d.analysis.is_some() {
        d.baseline().to_string()
    } else {
        d.variant_name(0).to_string()
    };
    let labels = svg::variant_labels(d);
    s.push_str("<h2>Summary</h2><p class=\"note\">Mean ± perf stat's figure (SD/√n/mean); change of the mean against the baseline.</p><div class=\"scroll\"><table id=\"summary\"><tr><th class=\"l\">metric</th>");
    for (i, v) in d.data.variants.iter().enumerate() {
        let _ = write!(s, "<th title=\"{}\">{}</th>", esc(&v.name), esc(&labels[i]));
        if v.name != base {
            s.push_str("<th>change</th>");
        }
    }
    s.push_str("</tr>\n");
    for m in d.main_metrics() {
        let sc = metric_scale(d, &m.name);
        let unit = sc.unit_label(&m.unit);
        let _ = write!(
            s,
            "<tr><td class=\"l\">{} {}</td>",
            esc(&m.name),
            esc(&unit)
        );
        let bmean = d.description(&base, &m.name).map(|x| x.mean);
        for v in &d.data.variants {
            let desc = d.description(&v.name, &m.name);
            let cell = desc
                .map(|x| {
                    let p = pm(d.pm_pct(&v.name, &m.name));
                    if p.is_empty() {
                        sc.num(x.mean)
                    } else {
                        format!("{} ± {p}", sc.num(x.mean))
                    }
                })
                .unwrap_or_default();
            let _ = write!(s, "<td>{}</td>", esc(&cell));
            if v.name != base {
                let ch = match (bmean, desc) {
                    (Some(a), Some(b)) => change_pct(a, b.mean),
                    _ => String::new(),
                };
                let _ = write!(s, "<td>{}</td>", esc(&ch));
            }
        }
        s.push_str("</tr>\n");
    }
    s.push_str("</table></div>\n");

    // Plots.
    if d.data.counted_total() < 2 {
        s.push_str("<p class=\"note no-plots\">One run: nothing to plot (the values are in the summary and the runs table).</p>\n");
        return;
    }
    if d.order_text() == "order as imported" {
        s.push_str("<h2>Run order</h2><p class=\"note\">Each point is a run in the order it was imported, coloured by variant. An imported file's order is not necessarily the order the runs were measured in.</p>\n");
    } else {
        s.push_str("<h2>Run order</h2><p class=\"note\">Each point is a run at its place in the schedule, coloured by variant: drift and interleaving show at a glance.</p>\n");
    }
    for m in &d.selected() {
        if !svg::varies(d, m) {
            no_variation(s, d, m);
        } else if let Some(p) = svg::run_order(d, m) {
            s.push_str(&p);
            s.push('\n');
        }
    }
    s.push_str("<h2>Distributions</h2><p class=\"note\">Points are runs; the box spans the quartiles with the median marked, whiskers reach the furthest runs within 1.5 IQR.</p>\n");
    let mut constant = Vec::new();
    for m in d.main_metrics() {
        if !svg::varies(d, &m.name) {
            constant.push(m.name.clone());
        } else if let Some(p) = svg::distribution(d, &m.name) {
            let _ = writeln!(s, "<h3>{}</h3>\n{p}", esc(&m.name));
        }
    }
    for m in &constant {
        no_variation(s, d, m);
    }
}

/// The sentence that stands for the plot of a metric every run gave the same value of.
fn no_variation(s: &mut String, d: &Report, metric: &str) {
    let value = (0..d.data.variants.len()).find_map(|i| d.values(i, metric).first().copied());
    let text = match value {
        Some(v) => {
            let unit = d.metric(metric).map(|m| m.unit.clone()).unwrap_or_default();
            format!(
                "{metric}: every run of every variant gave {} (no variation: no plot)",
                metric_scale(d, metric).show(v, &unit)
            )
        }
        None => format!("{metric}: no values (no plot)"),
    };
    let _ = writeln!(
        s,
        "<p class=\"note no-variation\" data-metric=\"{}\">{}</p>",
        esc(metric),
        esc(&text)
    );
}

/// The raw runs (collapsed) and the provenance line; closes the page.
fn runs_and_provenance(s: &mut String, d: &Report) {
    // Raw runs.
    let names: Vec<&str> = d.data.metrics.iter().map(|m| m.name.as_str()).collect();
    let _ = write!(
        s,
        "<h2>Runs</h2><details><summary>{} stored run(s), raw values</summary><div class=\"scroll\"><table id=\"runs\"><tr><th>seq</th><th class=\"l\">variant</th><th class=\"l\">status</th><th>exit</th>",
        d.data.runs.len()
    );
    for n in &names {
        let _ = write!(s, "<th>{}</th>", esc(n));
    }
    s.push_str("<th class=\"l\">source</th></tr>\n");
    for r in d.data.runs.iter().take(MAX_RUN_ROWS) {
        let status = if r.counts() {
            r.status.as_str().to_string()
        } else {
            format!("{} (not analysed)", r.status.as_str())
        };
        let exit = match (r.exit_code, r.signal) {
            (Some(c), _) => c.to_string(),
            (None, Some(sig)) => format!("signal {sig}"),
            _ => String::new(),
        };
        let _ = write!(
            s,
            "<tr><td>{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{}</td>",
            r.seq,
            esc(d.variant_name(r.variant)),
            esc(&status),
            esc(&exit)
        );
        for n in &names {
            let v = r.value(n).map(|v| format!("{v}")).unwrap_or_default();
            let _ = write!(s, "<td>{}</td>", esc(&v));
        }
        let src = r
            .source
            .as_ref()
            .map(|x| format!("{}:{}", x.file, x.line))
            .unwrap_or_default();
        let _ = writeln!(s, "<td class=\"l\">{}</td></tr>", esc(&src));
    }
    s.push_str("</table></div>");
    if d.data.runs.len() > MAX_RUN_ROWS {
        let _ = write!(
            s,
            "<p class=\"note\">The first {MAX_RUN_ROWS} of {} runs; --format csv or json has them all.</p>",
            d.data.runs.len()
        );
    }
    s.push_str("</details>\n");
    provenance(s, d);
}

/// The provenance paragraph, and the end of the page.
fn provenance(s: &mut String, d: &Report) {
    let cmd = d
        .data
        .experiments
        .iter()
        .map(|e| shell_words::join(&e.command_line))
        .collect::<Vec<_>>()
        .join("; ");
    let tests = d.tests();
    let files = d.files();
    let _ = writeln!(
        s,
        "<h2>Provenance</h2><p class=\"prov\">abperf {}; made by <code>{}</code>; {}; tests: {}; {}; data sha256 <code>{}</code>.</p>",
        esc(&d.tool_version),
        esc(&cmd),
        esc(&d.machine_text()),
        if tests.is_empty() {
            "none".to_string()
        } else {
            esc(&tests)
        },
        if files.is_empty() {
            String::new()
        } else {
            format!("imported from {}", esc(&files.join(", ")))
        },
        esc(&d.data_sha256)
    );
    s.push_str("</body></html>\n");
}

#[cfg(test)]
mod tests {
    use super::super::testdata::sample_named;

    #[test]
    fn self_contained_and_escaped() {
        let d = sample_named("<script>alert(1)</script>", "B");
        let h = super::render(&d);
        assert!(h.starts_with("<!DOCTYPE html>"));
        assert!(!h.contains("<script"), "no script element may appear");
        assert!(h.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
        assert!(h.contains("tlb &lt;flush&gt; &amp; co"));
        assert!(
            !h.contains("http://")
                || h.matches("http://").count()
                    == h.matches("xmlns=\"http://www.w3.org/2000/svg\"").count()
        );
        assert!(!h.contains("https://"));
        assert!(h.contains("class=\"plot distribution\""));
        assert!(h.contains("class=\"plot run-order\""));
        assert!(!h.contains("NaN"));
    }

    #[test]
    fn micro_experiment_gets_curves_not_summary() {
        use crate::micro::{MicroData, MicroRow};
        use abperf_model::{MicroFinding, Summary};
        let mut d = sample_named("A", "B");
        let row = |op: &str, range: &str, n: u64| MicroRow {
            variant: format!("tlb-flush/{op}/{range}/n={n}"),
            bench: "tlb-flush".into(),
            op: Some(op.into()),
            range: Some(range.into()),
            remote: None,
            pages: n,
            per: "call".into(),
            params: Default::default(),
            cycles: Summary::of(&[n as f64 * 100.0, n as f64 * 110.0]),
            ns: Summary::of(&[n as f64 * 40.0]),
            core_cycles: Summary::default(),
        };
        let mut rows: Vec<MicroRow> = [1, 2, 4, 33, 64]
            .iter()
            .flat_map(|&n| [row("madvise", "touched", n), row("madvise", "empty", n)])
            .collect();
        rows.push(MicroRow {
            variant: "syscall/<getppid>".into(),
            bench: "syscall".into(),
            op: None,
            range: None,
            remote: None,
            pages: 1,
            per: "call".into(),
            params: Default::default(),
            cycles: Summary::of(&[300.0, 310.0, 320.0]),
            ns: Summary::of(&[100.0]),
            core_cycles: Summary::default(),
        });
        d.micro = Some(MicroData {
            rows,
            findings: vec![MicroFinding {
                bench: "tlb-flush".into(),
                key: "madvise-knee".into(),
                value: Some(33.0),
                unit: "pages".into(),
                text: "madvise: knee after 33 pages".into(),
            }],
            design: serde_json::Value::Null,
        });
        let h = super::render(&d);
        assert_eq!(h.matches("class=\"plot micro-curve").count(), 2);
        assert_eq!(h.matches("class=\"ceiling\" data-pages=\"33\"").count(), 2);
        assert!(h.contains("implied ceiling 33 (madvise)"));
        assert!(h.contains("data-bench=\"syscall\""));
        assert!(h.contains("syscall/&lt;getppid&gt;"));
        assert!(!h.contains("<getppid>"));
        assert!(
            h.contains("<td>310</td><td>302</td><td>318</td><td>100.0</td><td>3</td>"),
            "{h}"
        );
        assert!(
            !h.contains("id=\"summary\""),
            "no per-variant summary columns"
        );
        assert!(!h.contains("class=\"plot distribution\""));
        assert!(!h.contains("NaN"));
    }
}
