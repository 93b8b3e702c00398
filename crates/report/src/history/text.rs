//! `abperf history` as text: the series and the changes found, or one series point by point.

use super::{Analysed, Bisection, Change, HistoryReport, Order};
use crate::fmt::{Scale, one_line, scale_for};
use std::fmt::Write;

/// The unit of a fixed run metric (`wall_ns`, `maxrss_kib`, counts).
pub fn unit(metric: &str) -> &'static str {
    if metric.ends_with("_ns") {
        "ns"
    } else if metric.ends_with("_kib") {
        "KiB"
    } else {
        "count"
    }
}

/// The display scale of a series.
pub fn scale(a: &Analysed) -> Scale {
    let m = a
        .series
        .points
        .iter()
        .map(|p| p.mean.abs())
        .fold(0.0, f64::max);
    scale_for(unit(&a.series.key.metric), m)
}

/// How the order is named: "label commit" or "time".
pub fn order_words(order: &Order) -> String {
    match order {
        Order::Time => "time".into(),
        Order::Label(l) => format!("label {l}"),
    }
}

/// Point `i`'s name as "KEY=VALUE" (label order) or its time.
pub fn point_words(a: &Analysed, i: usize, order: &Order) -> String {
    let name = one_line(&a.series.point_name(i, order));
    match order {
        Order::Label(l) => format!("{l}={name}"),
        Order::Time => name,
    }
}

fn signed(scale: &Scale, v: f64, u: &str) -> String {
    let s = scale.show(v, u);
    if v >= 0.0 { format!("+{s}") } else { s }
}

/// One change in one line: where, how big, how sure, detected or confirmed.
pub fn change_line(r: &HistoryReport, a: &Analysed, c: &Change) -> String {
    let sc = scale(a);
    let u = unit(&a.series.key.metric);
    let level = 100.0 * (1.0 - r.alpha);
    let (lo, hi) = c.location;
    let location = if lo == hi {
        "exactly there".to_string()
    } else {
        format!(
            "between {} and {}",
            point_words(a, lo, &r.order),
            point_words(a, hi, &r.order)
        )
    };
    let status = match &c.confirmed {
        None => "detected".to_string(),
        Some(k) if k.confirmed => format!("confirmed ({})", k.text),
        Some(k) => format!("not confirmed ({})", k.text),
    };
    format!(
        "at {}: {} ({:+.1}%, {level:.0}% CI {} .. {}), {}; first point after it {location} \
         ({level:.0}%); p {:.4}, adjusted {:.4}; {status}",
        point_words(a, c.index, &r.order),
        signed(&sc, c.size, u),
        100.0 * c.relative,
        signed(&sc, c.size_interval.0, u),
        signed(&sc, c.size_interval.1, u),
        if c.regression { "worse" } else { "better" },
        a.p,
        a.adjusted_p
    )
}

pub fn render(r: &HistoryReport) -> String {
    let mut s = String::new();
    if r.one
        && let Some(a) = r.series.first()
    {
        one_series(&mut s, r, a);
        return s;
    }
    let _ = writeln!(
        s,
        "{} series, points ordered by {}; alpha {} (Benjamini-Hochberg across the series)",
        r.series.len(),
        order_words(&r.order),
        r.alpha
    );
    if r.series.is_empty() {
        let _ = writeln!(
            s,
            "no series: history reads `run` and `import` experiments whose variants have at least two timed runs (`micro` ones with --metric cycles, ns, ...){}",
            match &r.order {
                Order::Label(l) => format!(" and the label {l}"),
                Order::Time => String::new(),
            }
        );
        return s;
    }
    let _ = writeln!(
        s,
        "{:>4}  {:>6}  {:>8}  {:>7}  series",
        "#", "points", "p", "changes"
    );
    for a in &r.series {
        let p = match &a.skipped {
            Some(_) => "-".to_string(),
            None => format!("{:.4}", a.p),
        };
        let _ = writeln!(
            s,
            "{:>4}  {:>6}  {:>8}  {:>7}  {}",
            a.series.number,
            a.series.points.len(),
            p,
            a.changes.len(),
            one_line(&a.series.key.text())
        );
    }
    let changes: Vec<_> = r.changes().collect();
    if changes.is_empty() {
        let _ = writeln!(s, "\nno change found");
        return s;
    }
    let _ = writeln!(s, "\nchanges:");
    for (a, c) in changes {
        let _ = writeln!(
            s,
            "series {}: {}",
            a.series.number,
            one_line(&a.series.key.text())
        );
        let _ = writeln!(s, "  {}", change_line(r, a, c));
        if let Some(b) = &c.bisect {
            let _ = writeln!(s, "  {}", bisect_line(b));
        }
    }
    s
}

/// A change's bisection in one line: what it found, or the command that bisects it.
pub fn bisect_line(b: &Bisection) -> String {
    match &b.result {
        Some(found) => format!("bisect: {found} ({})", b.command),
        None => format!("bisect the commits between the two sides: {}", b.command),
    }
}

fn one_series(s: &mut String, r: &HistoryReport, a: &Analysed) {
    let _ = writeln!(
        s,
        "series {}: {}; {} points ordered by {}",
        a.series.number,
        one_line(&a.series.key.text()),
        a.series.points.len(),
        order_words(&r.order)
    );
    let sc = scale(a);
    let u = unit(&a.series.key.metric);
    let level = 100.0 * (1.0 - r.alpha);
    let z = abperf_stats::dist::norm_ppf(1.0 - r.alpha / 2.0);
    let _ = writeln!(
        s,
        "{:<24} {:>10} {:>5} {:>14} {:>30}",
        "point",
        "experiment",
        "runs",
        "mean",
        format!("{level:.0}% CI of the mean")
    );
    for (i, p) in a.series.points.iter().enumerate() {
        if let Some(c) = a.changes.iter().find(|c| c.index == i) {
            let _ = writeln!(s, "--- change {}", change_line(r, a, c));
            if let Some(b) = &c.bisect {
                let _ = writeln!(s, "--- {}", bisect_line(b));
            }
        }
        let half = z * p.se();
        let mark = if a.outliers.contains(&i) {
            "  outlier"
        } else {
            ""
        };
        let _ = writeln!(
            s,
            "{:<24} {:>10} {:>5} {:>14} {:>30}{mark}",
            crate::fmt::truncate(&one_line(&a.series.point_name(i, &r.order)), 24),
            p.experiment,
            p.runs,
            sc.show(p.mean, u),
            format!(
                "{} .. {}",
                sc.show(p.mean - half, u),
                sc.show(p.mean + half, u)
            )
        );
    }
    match (&a.skipped, a.changes.is_empty()) {
        (Some(why), _) => {
            let _ = writeln!(s, "not analysed: {why}");
        }
        (None, true) => {
            let _ = writeln!(s, "no change (p {:.4})", a.p);
        }
        (None, false) => {}
    }
    if a.noise_factor > 1.0 {
        let _ = writeln!(
            s,
            "the points scatter {:.2}x more than their standard errors say: the standard errors were widened by that",
            a.noise_factor
        );
    }
}
