//! `model ceiling --format mail`: what a commit message or a reply on linux-mm can carry. Seed
//! 002's table of the workload's local flushes (size, %, cumulative %, cycles, cycles/page,
//! samples; cycles are medians, so a few long calls do not pull them) and one paragraph of
//! advice. Every line fits 72 columns; the per-ceiling table is left to `--format text`.

use super::TraceSection;
use super::fmt::wrap;
use super::mail::WIDTH;
use abperf_model::ceiling::{CeilingAdvice, Estimate};
use abperf_model::trace::{Bin, TlbTable};
use std::collections::BTreeMap;

/// Seed 002 printed sizes with at least this many flushes.
const MIN_SAMPLES: u64 = 50;

use super::fmt::thousands as n0;

fn pct(x: f64) -> String {
    format!("{x:.1}%")
}

fn band(e: &Estimate) -> String {
    format!("95% {:.1} .. {:.1}%", e.low, e.high)
}

/// The local flushes (the CPU that asked; not receipts, not sends) by pages.
fn local_rows(tl: &TlbTable) -> BTreeMap<i64, Bin> {
    let mut m: BTreeMap<i64, Bin> = BTreeMap::new();
    for r in &tl.rows {
        let name = tl.reason_name(r.reason).to_ascii_lowercase();
        let local = name == "local shootdown"
            || name == "local mm shootdown"
            || (name.starts_with("reason ") && matches!(r.reason, 2 | 3));
        if local {
            m.entry(r.pages).or_default().merge(&r.bin);
        }
    }
    m
}

/// Seed 002's table of the capture's local flushes, sizes with at least 50 flushes.
fn table(trace: &TraceSection) -> Vec<String> {
    let Some(tl) = trace.tables.tlb.as_ref() else {
        return vec!["(the capture has no tlb_flush table)".into()];
    };
    let rows = local_rows(tl);
    let total: u64 = rows.values().map(|b| b.count).sum();
    if total == 0 {
        return vec!["(the capture has no local flushes)".into()];
    }
    let u = trace.info.units();
    let mut out = vec![
        format!(
            "Local TLB flushes of capture {} by size (pages; -1 = full flush)",
            trace.info.id.unwrap_or(0)
        ),
        format!(
            "{:>6} {:>7} {:>7} {:>9} {:>11} {:>9}",
            "pages", "%", "cum%", "cycles", "cycles/page", "samples"
        ),
    ];
    let (mut cum, mut left, mut left_n) = (0u64, 0usize, 0u64);
    for (pages, b) in &rows {
        cum += b.count;
        if b.count < MIN_SAMPLES {
            left += 1;
            left_n += b.count;
            continue;
        }
        let med = b.median().and_then(|m| u.cycles(m));
        let per_page = match (med, *pages) {
            (Some(m), p) if p > 0 => n0(m / p as f64),
            _ => "-".into(),
        };
        out.push(format!(
            "{:>6} {:>7} {:>7} {:>9} {:>11} {:>9}",
            pages,
            format!("{:.2}%", 100.0 * b.count as f64 / total as f64),
            format!("{:.2}%", 100.0 * cum as f64 / total as f64),
            med.map(n0).unwrap_or_else(|| "-".into()),
            per_page,
            b.count
        ));
    }
    let mut note = "cycles: median of the enclosing call (syscall, zap and flush, traced), so a few long calls do not pull it; cycles/page: that median over the pages".to_string();
    if left > 0 {
        note.push_str(&format!(
            "; {left} sizes with fewer than {MIN_SAMPLES} flushes ({left_n} flushes) left out"
        ));
    }
    out.extend(wrap(&format!("({note})"), WIDTH, ""));
    out
}

/// The advice in one paragraph: the change at the best ceiling with its band, the terms the
/// data cannot resolve and what would, whether a run with the knob agreed.
pub fn paragraph(a: &CeilingAdvice) -> String {
    let ch = &a.change;
    let mut s = if ch.from == ch.to {
        format!(
            "The workload's flushing is predicted cheapest at the ceiling it ran with, {} (95% of the bootstrap replicates put the best ceiling in {} .. {}).",
            ch.from, a.band.0, a.band.1
        )
    } else {
        let (word, p) = if ch.percent_less.value >= 0.0 {
            ("less", ch.percent_less)
        } else {
            (
                "more",
                Estimate {
                    value: -ch.percent_less.value,
                    low: -ch.percent_less.high,
                    high: -ch.percent_less.low,
                },
            )
        };
        format!(
            "With tlb_single_page_flush_ceiling {} instead of {}, the workload's flushing is predicted to cost {} {word} ({}); 95% of the bootstrap replicates put the best ceiling in {} .. {}.",
            ch.to,
            ch.from,
            pct(p.value),
            band(&p),
            a.band.0,
            a.band.1
        )
    };
    let m = &a.mix;
    s.push_str(&format!(
        " It makes {} local range flushes per second; {} shootdowns received on other CPUs are priced as receipts, not as local flushes.",
        n0(m.flushes as f64 / m.seconds),
        n0(m.remote as f64)
    ));
    for t in a.costs.terms.iter().filter(|t| t.by_ceiling && !t.resolved) {
        s.push_str(&format!(
            " {} is not resolvable here (|{}| {} within 95% {} .. {}; taken as {} .. {});",
            t.name,
            n0(t.unconstrained.value),
            t.unit,
            n0(t.unconstrained.low),
            n0(t.unconstrained.high),
            n0(t.estimate.low),
            n0(t.estimate.high)
        ));
        match &t.to_resolve {
            Some(r) => s.push_str(&format!(" {r}.")),
            None => s.push_str(" a cost cannot be negative, so it is held at 0."),
        }
    }
    match &a.knob_check {
        Some(k) => {
            for r in &k.rows {
                let m = r
                    .measured_wall_pct
                    .map(|m| format!("{} less ({})", pct(m.value), band(&m)))
                    .unwrap_or_else(|| "could not be compared".into());
                let p = r
                    .predicted_wall_pct
                    .map(|p| format!("{} predicted ({})", pct(p.value), band(&p)))
                    .unwrap_or_else(|| "no prediction in time".into());
                s.push_str(&format!(
                    " Measured with the knob (experiment {}, {} runs): at ceiling {} against {} the wall time was {m}, {p}{}.",
                    k.experiment_id,
                    r.runs,
                    r.ceiling,
                    k.baseline,
                    match r.agrees {
                        Some(true) => ": they agree",
                        Some(false) => ": they do not agree",
                        None => "",
                    }
                ));
            }
            for n in k.notes.iter().skip(1) {
                s.push(' ');
                s.push_str(n);
            }
        }
        None => s.push_str(" Predicted, not measured: no run with the ceiling changed checked it."),
    }
    s
}

/// The mail: seed 002's table, then the paragraph; every line within 72 columns.
pub fn mail(a: &CeilingAdvice, trace: Option<&TraceSection>) -> String {
    let mut out = Vec::new();
    if let Some(t) = trace {
        out.extend(table(t));
        out.push(String::new());
    }
    out.extend(wrap(&paragraph(a), WIDTH, ""));
    out.push(String::new());
    out.extend(wrap(
        &format!(
            "The full table by ceiling: abperf model ceiling --trace {} --micro {} --format text",
            a.capture_id, a.micro_id
        ),
        WIDTH,
        "  ",
    ));
    out.join("\n")
}
