//! `abperf history --format mail`: each change as a regression report, plain text wrapped at 72
//! columns, ready to paste into a reply on a kernel list.

use super::text::{bisect_line, change_line, order_words, point_words, scale, unit};
use super::{Analysed, Change, HistoryReport};
use crate::fmt::{one_line, wrap};

fn one(out: &mut Vec<String>, r: &HistoryReport, a: &Analysed, c: &Change) {
    let sc = scale(a);
    let u = unit(&a.series.key.metric);
    let before = &a.series.points[c.index - 1];
    let after = &a.series.points[c.index];
    let head = format!(
        "{} {} {:+.1}% at {}",
        one_line(&a.series.key.text()),
        if c.regression {
            "regressed"
        } else {
            "improved"
        },
        100.0 * c.relative,
        point_words(a, c.index, &r.order)
    );
    out.extend(wrap(&head, 72, ""));
    out.push(String::new());
    let what = format!(
        "In a history of {} experiments ordered by {}, the level of {} changed by {}. {}",
        a.series.points.len(),
        order_words(&r.order),
        a.series.key.metric,
        sc.show(c.size, u),
        change_line(r, a, c)
    );
    out.extend(wrap(&what, 72, ""));
    out.push(String::new());
    out.push(format!(
        "  before: experiment {} ({}), {} over {} runs",
        before.experiment,
        point_words(a, c.index - 1, &r.order),
        sc.show(before.mean, u),
        before.runs
    ));
    out.push(format!(
        "  after:  experiment {} ({}), {} over {} runs",
        after.experiment,
        point_words(a, c.index, &r.order),
        sc.show(after.mean, u),
        after.runs
    ));
    if let Some(b) = &c.bisect {
        out.push(String::new());
        out.extend(wrap(&bisect_line(b), 72, ""));
    }
    if c.confirmed.is_none() {
        out.push(String::new());
        out.extend(wrap(
            "Detected from the stored history only; not yet re-measured (abperf history --confirm runs an interleaved A/B of the two sides).",
            72,
            "",
        ));
    }
    out.push(String::new());
}

pub fn render(r: &HistoryReport) -> String {
    let mut out = Vec::new();
    for (a, c) in r.changes() {
        one(&mut out, r, a, c);
    }
    if out.is_empty() {
        out.push(format!(
            "No change found in {} series (alpha {}, Benjamini-Hochberg across the series).",
            r.series.len(),
            r.alpha
        ));
    }
    out.push(format!("-- \nabperf {} history", env!("CARGO_PKG_VERSION")));
    let mut s = out.join("\n");
    s.push('\n');
    s
}
