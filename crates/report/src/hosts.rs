//! Hosts as blocks in a report (docs/compare.md#hosts-as-blocks): for each pair judged host by
//! host (`stats::hosts`), the per-host table (host, units, runs, change with its interval,
//! weight) and the combined line (random-effects mean, its interval and p, tau, I^2, Cochran's
//! Q, Welch's test of equal effects, the prediction interval for a new host), in text, Markdown
//! and mail; the JSON holds the same in `analysis.comparisons[].details.hosts`.

use super::Report;
use super::fmt::{one_line, truncate, wrap};
use super::table::cell;
use abperf_stats::compare::Comparison;
use abperf_stats::host_effects::{HostEffect, HostsComparison};
use abperf_stats::verdict::{fmt_p, fmt_pct, fmt_signed_pct, level_label};
use std::fmt::Write;

/// The comparisons of `r` judged host by host.
fn blocked(r: &Report) -> impl Iterator<Item = (&Comparison, &HostsComparison)> {
    r.comparisons()
        .iter()
        .filter_map(|c| c.details.hosts.as_ref().map(|h| (c, h)))
}

fn pct_ci(ci: [f64; 2]) -> String {
    format!("{}..{}", fmt_signed_pct(ci[0]), fmt_signed_pct(ci[1]))
}

fn ratio_pct(r: [f64; 2]) -> [f64; 2] {
    [(r[0] - 1.0) * 100.0, (r[1] - 1.0) * 100.0]
}

/// "b vs a, wall_ns (family x): each host's effect from its boots".
fn title(c: &Comparison, h: &HostsComparison) -> String {
    let family = c
        .family
        .as_ref()
        .map(|f| format!(" [{f}]"))
        .unwrap_or_default();
    one_line(&format!(
        "{} vs {}, {}{family}: each host's change from its {}s",
        h.variant, h.baseline, h.metric, h.within
    ))
}

/// The combined line: the random-effects mean with its interval and p, and the heterogeneity.
pub fn combined(h: &HostsComparison) -> String {
    let re = &h.combined;
    let lvl = level_label(re.level);
    let mean = (h.ratio - 1.0) * 100.0;
    let mut s = format!(
        "random effects over {} hosts: {} ({lvl} CI {}, {} uncorrected, HKSJ with t on {} df); \
         tau {} (Paule-Mandel), I^2 {:.0}%, Cochran's Q {:.2} ({} df, {})",
        re.k,
        fmt_signed_pct(mean),
        pct_ci(ratio_pct(h.ratio_ci)),
        fmt_p(re.p),
        re.df,
        fmt_pct(re.tau * 100.0),
        re.i2 * 100.0,
        re.q,
        re.df,
        fmt_p(re.q_p)
    );
    if let Some(w) = &re.welch {
        let _ = write!(s, "; Welch's test of equal effects {}", fmt_p(w.p));
    }
    if let Some(p) = h.prediction_ratio {
        let _ = write!(
            s,
            "; {lvl} prediction interval for a new host {}",
            pct_ci(ratio_pct(p))
        );
    }
    s
}

fn row(h: &HostEffect) -> [String; 6] {
    [
        one_line(&h.host),
        format!("{}+{}", h.units[0], h.units[1]),
        format!("{}+{}", h.runs[0], h.runs[1]),
        fmt_signed_pct(h.change_pct),
        pct_ci(h.ci_pct),
        format!("{:.1}%", h.weight * 100.0),
    ]
}

fn header(h: &HostsComparison) -> [String; 6] {
    [
        "host".into(),
        format!("{}s", h.within),
        "runs".into(),
        "change".into(),
        format!("{} CI", level_label(h.combined.level)),
        "weight".into(),
    ]
}

/// The per-host tables and combined lines, for the text of `compare` and `report`.
pub fn text(r: &Report) -> String {
    let mut s = String::new();
    for (c, h) in blocked(r) {
        let _ = writeln!(s, "Hosts as blocks, {}:", title(c, h));
        let w = h
            .hosts
            .iter()
            .map(|x| x.host.chars().count())
            .max()
            .unwrap_or(4)
            .clamp(4, 24);
        let line = |s: &mut String, cells: [String; 6]| {
            let _ = writeln!(
                s,
                "  {:<w$} {:>7} {:>9} {:>9} {:>19} {:>7}",
                truncate(&cells[0], w),
                cells[1],
                cells[2],
                cells[3],
                cells[4],
                cells[5]
            );
        };
        line(&mut s, header(h));
        for x in &h.hosts {
            line(&mut s, row(x));
        }
        let _ = writeln!(s, "  {}", combined(h));
        let _ = writeln!(s);
    }
    s
}

/// The same in GitHub-flavoured Markdown (None: no pair judged host by host).
pub fn markdown(r: &Report) -> Option<String> {
    let mut s = String::new();
    for (c, h) in blocked(r) {
        let _ = writeln!(s, "\n#### Hosts as blocks: {}\n", cell(&title(c, h)));
        let _ = writeln!(s, "| {} |", header(h).map(|x| cell(&x)).join(" | "));
        let _ = writeln!(s, "|---|--:|--:|--:|--:|--:|");
        for x in &h.hosts {
            let _ = writeln!(s, "| {} |", row(x).map(|x| cell(&x)).join(" | "));
        }
        let _ = writeln!(s, "\n{}", cell(&combined(h)));
    }
    (!s.is_empty()).then_some(s)
}

/// The same for a mail reply, every line within `width` columns (None: no pair judged host by
/// host).
pub fn mail(r: &Report, width: usize) -> Option<Vec<String>> {
    let mut out = Vec::new();
    for (c, h) in blocked(r) {
        out.extend(wrap(
            &format!("Hosts as blocks, {}:", title(c, h)),
            width,
            "  ",
        ));
        let line = |cells: [String; 6]| {
            truncate(
                &format!(
                    "{:<14} {:>5} {:>7} {:>8} {:>19} {:>6}",
                    truncate(&cells[0], 14),
                    cells[1],
                    cells[2],
                    cells[3],
                    cells[4],
                    cells[5]
                ),
                width,
            )
        };
        out.push(line(header(h)));
        out.extend(h.hosts.iter().map(|x| line(row(x))));
        out.extend(wrap(&combined(h), width, "  "));
        out.push(String::new());
    }
    (!out.is_empty()).then_some(out)
}
