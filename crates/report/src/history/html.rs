//! `abperf history --format html -o DIR`: `index.html` (the series, the changes) and one page
//! per series (`series-N.html`: its points with their intervals, the change points and their
//! location bands as an inline SVG, and the table). Self-contained and script-free, under the
//! HTML report's Content-Security-Policy; every piece of stored text is escaped.

use super::text::{bisect_line, change_line, order_words, scale, unit};
use super::{Analysed, HistoryReport};
use crate::html::{CSP, STYLE};
use crate::svg::{axis_x, axis_y, esc, nice_ticks, padded_range, scaled_ticks};
use std::fmt::Write;

/// The pages: (file name, content), the index first.
pub fn render(r: &HistoryReport) -> Vec<(String, String)> {
    let mut pages = vec![("index.html".to_string(), index(r))];
    for a in &r.series {
        pages.push((file(a), series_page(r, a)));
    }
    pages
}

fn file(a: &Analysed) -> String {
    format!("series-{}.html", a.series.number)
}

fn head(s: &mut String, title: &str) {
    let _ = write!(
        s,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
<meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">\
<meta name=\"viewport\" content=\"width=device-width\"><title>abperf {}</title><style>{STYLE}\
.band{{fill:#f5c542;fill-opacity:.35}}.cp{{stroke:#c00;stroke-width:2}}</style></head><body>\n<h1>{}</h1>\n",
        esc(title),
        esc(title)
    );
}

fn index(r: &HistoryReport) -> String {
    let mut s = String::new();
    head(&mut s, "history");
    let _ = writeln!(
        s,
        "<p>{} series, points ordered by {}; alpha {} (Benjamini-Hochberg across the series).</p>",
        r.series.len(),
        esc(&order_words(&r.order)),
        r.alpha
    );
    s.push_str("<h2>Changes</h2>\n");
    let changes: Vec<_> = r.changes().collect();
    if changes.is_empty() {
        s.push_str("<p>No change found.</p>\n");
    } else {
        s.push_str("<ul>\n");
        for (a, c) in changes {
            let _ = writeln!(
                s,
                "<li><a href=\"{}\">series {}</a>: {} <span class=\"verdict\">{}</span></li>",
                file(a),
                a.series.number,
                esc(&a.series.key.text()),
                esc(&change_line(r, a, c))
            );
        }
        s.push_str("</ul>\n");
    }
    s.push_str("<h2>Series</h2>\n<table><tr><th>#</th><th>points</th><th>p</th><th>changes</th><th class=\"l\">series</th></tr>\n");
    for a in &r.series {
        let _ = writeln!(
            s,
            "<tr><td><a href=\"{}\">{}</a></td><td>{}</td><td>{}</td><td>{}</td><td class=\"l name\">{}</td></tr>",
            file(a),
            a.series.number,
            a.series.points.len(),
            if a.skipped.is_some() {
                "-".to_string()
            } else {
                format!("{:.4}", a.p)
            },
            a.changes.len(),
            esc(&a.series.key.text())
        );
    }
    s.push_str("</table>\n</body></html>\n");
    s
}

fn series_page(r: &HistoryReport, a: &Analysed) -> String {
    let mut s = String::new();
    head(&mut s, &format!("history: series {}", a.series.number));
    let _ = writeln!(
        s,
        "<p><a href=\"index.html\">all series</a> &middot; {}; {} points ordered by {}.</p>",
        esc(&a.series.key.text()),
        a.series.points.len(),
        esc(&order_words(&r.order))
    );
    for c in &a.changes {
        let _ = writeln!(
            s,
            "<p class=\"verdict\">Change {}</p>",
            esc(&change_line(r, a, c))
        );
        if let Some(b) = &c.bisect {
            let _ = writeln!(s, "<p class=\"note\">{}</p>", esc(&bisect_line(b)));
        }
    }
    if let Some(why) = &a.skipped {
        let _ = writeln!(s, "<p class=\"note\">Not analysed: {}.</p>", esc(why));
    } else if a.changes.is_empty() {
        let _ = writeln!(s, "<p>No change (p {:.4}).</p>", a.p);
    }
    s.push_str(&plot(r, a).unwrap_or_default());
    points_table(&mut s, r, a);
    s.push_str("</body></html>\n");
    s
}

/// The points with their intervals, a band over each change's location interval and a line
/// where each change is.
fn plot(r: &HistoryReport, a: &Analysed) -> Option<String> {
    let sc = scale(a);
    let z = abperf_stats::dist::norm_ppf(1.0 - r.alpha / 2.0);
    let pts = &a.series.points;
    let (lo, hi) = padded_range(
        pts.iter()
            .flat_map(|p| [p.mean - z * p.se(), p.mean + z * p.se()]),
    )?;
    let n = pts.len() as f64;
    let (w, h, left, right, top, bottom) = (760.0, 320.0, 80.0, 20.0, 16.0, 40.0);
    let x = |i: f64| left + (i + 0.5) / n * (w - left - right);
    let y = |v: f64| top + (hi - v) / (hi - lo) * (h - top - bottom);
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="plot history" width="{w}" height="{h}" viewBox="0 0 {w} {h}" role="img" aria-label="{} by {}">"#,
        esc(&a.series.key.metric),
        esc(&order_words(&r.order))
    );
    for c in &a.changes {
        let (x0, x1) = (x(c.location.0 as f64 - 1.0), x(c.location.1 as f64));
        let _ = write!(
            s,
            r#"<rect class="band" x="{:.1}" y="{top}" width="{:.1}" height="{:.1}"/>"#,
            x0,
            (x1 - x0).max(1.0),
            h - top - bottom
        );
    }
    axis_y(&mut s, &scaled_ticks(lo, hi, 5, &sc), y, left, w - right);
    let ticks: Vec<(f64, String)> = nice_ticks(0.0, n - 1.0, 8)
        .into_iter()
        .filter(|t| t.fract() == 0.0)
        .map(|t| {
            (
                t,
                esc(&crate::fmt::truncate(
                    &a.series.point_name(t as usize, &r.order),
                    12,
                )),
            )
        })
        .collect();
    axis_x(&mut s, &ticks, x, top, h - bottom);
    for (i, p) in pts.iter().enumerate() {
        let (px, half) = (x(i as f64), z * p.se());
        let fill = if a.outliers.contains(&i) {
            "none"
        } else {
            "#1f77b4"
        };
        let _ = write!(
            s,
            "<line x1=\"{px:.1}\" x2=\"{px:.1}\" y1=\"{:.1}\" y2=\"{:.1}\" stroke=\"#1f77b4\"/>\
<circle cx=\"{px:.1}\" cy=\"{:.1}\" r=\"3\" fill=\"{fill}\" stroke=\"#1f77b4\"><title>{}: {}</title></circle>",
            y(p.mean - half),
            y(p.mean + half),
            y(p.mean),
            esc(&a.series.point_name(i, &r.order)),
            esc(&sc.show(p.mean, unit(&a.series.key.metric)))
        );
    }
    for c in &a.changes {
        let px = x(c.index as f64 - 0.5);
        let _ = write!(
            s,
            "<line class=\"cp\" x1=\"{px:.1}\" x2=\"{px:.1}\" y1=\"{top}\" y2=\"{:.1}\"/>",
            h - bottom
        );
    }
    s.push_str("</svg>\n");
    Some(s)
}

fn points_table(s: &mut String, r: &HistoryReport, a: &Analysed) {
    let sc = scale(a);
    let u = unit(&a.series.key.metric);
    let z = abperf_stats::dist::norm_ppf(1.0 - r.alpha / 2.0);
    let _ = writeln!(
        s,
        "<h2>Points</h2><div class=\"scroll\"><table><tr><th class=\"l\">point</th><th>experiment</th>\
<th>runs</th><th>mean</th><th>{:.0}% CI</th><th class=\"l\">kernel</th><th class=\"l\"></th></tr>",
        100.0 * (1.0 - r.alpha)
    );
    for (i, p) in a.series.points.iter().enumerate() {
        let half = z * p.se();
        let mut note = String::new();
        if a.changes.iter().any(|c| c.index == i) {
            note.push_str("first after a change ");
        }
        if a.outliers.contains(&i) {
            note.push_str("outlier");
        }
        let _ = writeln!(
            s,
            "<tr><td class=\"l name\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{} .. {}</td><td class=\"l\">{}</td><td class=\"l\">{}</td></tr>",
            esc(&a.series.point_name(i, &r.order)),
            p.experiment,
            p.runs,
            esc(&sc.show(p.mean, u)),
            esc(&sc.show(p.mean - half, u)),
            esc(&sc.show(p.mean + half, u)),
            esc(&p.kernel),
            note
        );
    }
    s.push_str("</table></div>\n");
}
