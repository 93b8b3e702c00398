//! Output of the ceiling advisor (`abperf model ceiling`): the inputs, the predicted cost per
//! second of every ceiling with its band (text table, CSV, JSON, Markdown; an SVG curve in the
//! HTML page), the recommendation, the model and its assumptions in words, and what was
//! validated.

use super::Report;
use super::section::Section;
use abperf_model::ceiling::{CeilingAdvice, Estimate};
use std::fmt::Write;

use super::fmt::thousands as n0;

fn est(e: &Estimate, unit: &str) -> String {
    format!(
        "{} {unit} (95% {} .. {})",
        n0(e.value),
        n0(e.low),
        n0(e.high)
    )
}

/// Ceilings shown in the text table: 0..=64 and the larger values evaluated.
fn shown(a: &CeilingAdvice) -> impl Iterator<Item = &abperf_model::ceiling::CeilingPoint> {
    a.curve.iter()
}

/// The recommendation in one sentence.
fn verdict(a: &CeilingAdvice) -> String {
    let range = if a.best_range.0 == a.best_range.1 {
        String::new()
    } else if a.best_range.1 > 100_000 {
        format!(
            " (any value from {} up predicts the same cost)",
            a.best_range.0
        )
    } else {
        format!(
            " (every value from {} to {} predicts the same cost: the workload flushes no size in between)",
            a.best_range.0, a.best_range.1
        )
    };
    let def = a
        .at(a.default_ceiling)
        .map(|p| {
            format!(
                "; the kernel default {} is predicted to cost {} cycles/s more (95% {} .. {})",
                a.default_ceiling,
                n0(p.above_best.value),
                n0(p.above_best.low),
                n0(p.above_best.high)
            )
        })
        .unwrap_or_default();
    format!(
        "Recommended tlb_single_page_flush_ceiling: {}{range}; 95% band {} .. {}{def}.",
        a.best, a.band.0, a.band.1
    )
}

/// The whole advice as text.
fn text(a: &CeilingAdvice) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "Ceiling advisor: tlb_single_page_flush_ceiling for the workload of capture {} on the machine of micro experiment {}",
        a.capture_id, a.micro_id
    );
    for w in &a.warnings {
        let _ = writeln!(s, "WARNING: {w}");
    }
    inputs(&mut s, a);
    curve_table(&mut s, a);
    let _ = writeln!(s, "\n{}", verdict(a));
    model_and_validation(&mut s, a);
    s
}

/// "Inputs": the workload's flush mix and the model's terms with their sources.
fn inputs(s: &mut String, a: &CeilingAdvice) {
    let m = &a.mix;
    let _ = writeln!(s, "\nInputs");
    let _ = writeln!(
        s,
        "  workload: {} local range flushes in {:.3} s ({} per second; {} full flushes sized from their call, {} per second of no known size); {} of them sent shootdown IPIs, received {} times on other CPUs (receipts are priced as receipts, not as local flushes)",
        n0(m.flushes as f64),
        m.seconds,
        n0(m.flushes as f64 / m.seconds),
        n0(m.recovered as f64),
        n0(m.always_full),
        n0(m.sent as f64),
        n0(m.remote as f64)
    );
    let total: f64 = m.rates.iter().map(|r| r.1).sum::<f64>() + m.always_full;
    let mut sizes: Vec<String> = m
        .rates
        .iter()
        .filter(|r| r.1 / total >= 0.005)
        .map(|(n, r)| format!("{n}: {:.1}%", 100.0 * r / total))
        .collect();
    if m.always_full / total >= 0.005 {
        sizes.push(format!(
            "full, size unknown: {:.1}%",
            100.0 * m.always_full / total
        ));
    }
    let _ = writeln!(
        s,
        "  local flush sizes (pages: share, 0.5% or more): {}",
        sizes.join(", ")
    );
    let c = &a.costs;
    let _ = writeln!(
        s,
        "  terms (every cost fitted at or above 0; the unconstrained fit beside it; * = changes with the ceiling):"
    );
    for t in &c.terms {
        let raw = if t.resolved {
            String::new()
        } else if t.unconstrained.high < 0.0 {
            format!(
                "; unconstrained {} (95% {} .. {}): below 0, impossible for a cost",
                n0(t.unconstrained.value),
                n0(t.unconstrained.low),
                n0(t.unconstrained.high)
            )
        } else {
            format!(
                "; not resolvable: |{}| < its 95% band {} .. {}",
                n0(t.unconstrained.value),
                n0(t.unconstrained.low),
                n0(t.unconstrained.high)
            )
        };
        let _ = writeln!(
            s,
            "   {}{:<3} {}: {}{raw}",
            if t.by_ceiling { "*" } else { " " },
            t.symbol,
            t.name,
            est(&t.estimate, &t.unit)
        );
        let _ = writeln!(s, "         from {}", t.source);
        if let Some(r) = &t.to_resolve {
            let _ = writeln!(s, "         to resolve it: {r}");
        }
    }
    if !c.terms.iter().any(|t| t.symbol.starts_with('I')) {
        let _ = writeln!(
            s,
            "   the sender's IPI cost by remote CPUs is not measured (abperf micro tlb-shootdown); it does not change with the ceiling"
        );
    }
    let _ = writeln!(
        s,
        "  lines of the micro curve split at its kernel's ceiling {} ({}): partial {:.0} + {:.1}*n, full {:.0} + {:.1}*n cycles",
        c.measured_ceiling,
        c.ceiling_source,
        c.partial_line.0,
        c.partial_line.1,
        c.full_line.0,
        c.full_line.1
    );
    let _ = writeln!(
        s,
        "  per local flush, a full flush is cheaper above {} pages (95% {} .. {})",
        n0(a.crossover.value),
        n0(a.crossover.low),
        n0(a.crossover.high)
    );
}

/// The predicted cost per second by ceiling, ceilings with the same prediction on one line.
fn curve_table(s: &mut String, a: &CeilingAdvice) {
    let _ = writeln!(
        s,
        "\nPredicted cycles per second in the workload's flushing calls (zap + flush + refill), by ceiling"
    );
    let _ = writeln!(
        s,
        "{:>8}  {:>14}  {:>25}  {:>14}  {:>25}",
        "ceiling", "cycles/s", "95% band", "above best", "95% band"
    );
    // ceilings with the same prediction (no flush size between them) share one line
    let pts: Vec<_> = shown(a).collect();
    let mut i = 0;
    while i < pts.len() {
        let p = pts[i];
        let mut j = i;
        while j + 1 < pts.len() && pts[j + 1].cycles_per_s == p.cycles_per_s {
            j += 1;
        }
        // the prediction holds up to the next evaluated ceiling (every flush size is one)
        let open = j + 1 == pts.len();
        let last = if open {
            u64::MAX
        } else {
            pts[j + 1].ceiling - 1
        };
        let has = |c: u64| (p.ceiling..=last).contains(&c);
        let mut marks = Vec::new();
        if has(a.best) {
            marks.push("best".to_string());
        }
        if has(a.default_ceiling) {
            marks.push(format!("kernel default {}", a.default_ceiling));
        }
        if has(a.costs.measured_ceiling) && a.costs.measured_ceiling != a.default_ceiling {
            marks.push(format!("micro's kernel {}", a.costs.measured_ceiling));
        }
        let mark = if marks.is_empty() {
            String::new()
        } else {
            format!("  <- {}", marks.join(", "))
        };
        let label = if open {
            format!("{}..", p.ceiling)
        } else if last == p.ceiling {
            p.ceiling.to_string()
        } else {
            format!("{}..{last}", p.ceiling)
        };
        i = j + 1;
        let _ = writeln!(
            s,
            "{:>8}  {:>14}  {:>25}  {:>14}  {:>25}{mark}",
            label,
            n0(p.cycles_per_s.value),
            format!("{} .. {}", n0(p.cycles_per_s.low), n0(p.cycles_per_s.high)),
            n0(p.above_best.value),
            format!("{} .. {}", n0(p.above_best.low), n0(p.above_best.high))
        );
    }
}

/// The model and its assumptions in words, then what was validated against the traced calls.
fn model_and_validation(s: &mut String, a: &CeilingAdvice) {
    let _ = writeln!(s, "\nModel");
    for l in &a.model {
        let _ = writeln!(s, "  - {l}");
    }
    let _ = writeln!(s, "Assumptions");
    for l in &a.assumptions {
        let _ = writeln!(s, "  - {l}");
    }
    let _ = writeln!(s, "Validation");
    for l in &a.validation {
        let _ = writeln!(s, "  - {l}");
    }
    if let Some(k) = &a.knob_check {
        knob_check(s, k);
    }
    if !a.checks.is_empty() {
        let _ = writeln!(
            s,
            "{:>8}  {:>8}  {:>14}  {:>14}  {:>8}",
            "pages", "calls", "traced median", "micro median", "ratio"
        );
        for c in &a.checks {
            let _ = writeln!(
                s,
                "{:>8}  {:>8}  {:>14}  {:>14}  {:>8.2}",
                c.pages,
                c.calls,
                n0(c.traced_median),
                n0(c.micro_median),
                c.traced_median / c.micro_median
            );
        }
    }
}

/// A percent estimate with its band, or "-".
fn pct_band(e: Option<&Estimate>) -> String {
    e.map(|e| format!("{:.1}% ({:.1} .. {:.1})", e.value, e.low, e.high))
        .unwrap_or_else(|| "-".into())
}

/// The check by the knob: per ceiling, predicted against measured, percent less than at the
/// baseline.
fn knob_check(s: &mut String, k: &abperf_model::ceiling::KnobCheck) {
    let _ = writeln!(
        s,
        "By the knob: percent less than at ceiling {} (negative: more), 95% intervals",
        k.baseline
    );
    let _ = writeln!(
        s,
        "{:>8}  {:>5}  {:>26}  {:>26}  {:>26}  {:>26}  agreed",
        "ceiling",
        "runs",
        "flush cost, predicted",
        "wall time, predicted",
        "wall time, measured",
        "sys time, measured"
    );
    for r in &k.rows {
        let _ = writeln!(
            s,
            "{:>8}  {:>5}  {:>26}  {:>26}  {:>26}  {:>26}  {}",
            r.ceiling,
            r.runs,
            pct_band(Some(&r.predicted_flush_pct)),
            pct_band(r.predicted_wall_pct.as_ref()),
            pct_band(r.measured_wall_pct.as_ref()),
            pct_band(r.measured_sys_pct.as_ref()),
            match r.agrees {
                Some(true) => "yes",
                Some(false) => "no",
                None => "-",
            }
        );
    }
    for n in &k.notes {
        let _ = writeln!(s, "  - {n}");
    }
    let _ = writeln!(
        s,
        "  - {}",
        if k.agreed {
            "The prediction and the measurement agreed at every ceiling (the predicted band overlaps the measured 95% interval of the wall time)."
        } else {
            "The prediction and the measurement did not agree at every ceiling (see \"agreed\"): the model misses something this workload does, or the runs were too noisy to tell."
        }
    );
}

/// JSON: the advice as the model holds it.
fn json(a: &CeilingAdvice) -> serde_json::Value {
    let mut v = serde_json::to_value(a).unwrap_or(serde_json::Value::Null);
    v["verdict"] = verdict(a).into();
    v
}

/// CSV: one row per ceiling.
fn csv(a: &CeilingAdvice) -> anyhow::Result<String> {
    let mut w = ::csv::Writer::from_writer(Vec::new());
    w.write_record([
        "ceiling",
        "cycles_per_s",
        "cycles_per_s_low",
        "cycles_per_s_high",
        "above_best",
        "above_best_low",
        "above_best_high",
        "best",
    ])?;
    for p in &a.curve {
        w.write_record([
            p.ceiling.to_string(),
            format!("{:.1}", p.cycles_per_s.value),
            format!("{:.1}", p.cycles_per_s.low),
            format!("{:.1}", p.cycles_per_s.high),
            format!("{:.1}", p.above_best.value),
            format!("{:.1}", p.above_best.low),
            format!("{:.1}", p.above_best.high),
            u8::from(p.ceiling == a.best).to_string(),
        ])?;
    }
    super::table::finish(w)
}

/// Markdown: the inputs and recommendation as text, the curve as a table.
fn markdown(a: &CeilingAdvice) -> String {
    use super::table::cell;
    let mut s = String::new();
    let _ = writeln!(s, "#### Ceiling advisor\n\n**{}**\n", cell(&verdict(a)));
    for w in &a.warnings {
        let _ = writeln!(s, "- WARNING: {}", cell(w));
    }
    let c = &a.costs;
    let _ = writeln!(
        s,
        "- per-page flush cost: {}\n- full flush fixed cost beyond a partial one: {}\n- refill after a full flush ({} pages): {}\n- a full flush is cheaper above {} pages\n",
        cell(&est(&c.per_page, "cycles/page")),
        cell(&est(&c.full_extra, "cycles")),
        c.working_set,
        cell(&est(&c.refill, "cycles")),
        n0(a.crossover.value)
    );
    s.push_str(
        "| ceiling | cycles/s | 95% band | above best | 95% band |\n|---:|---:|---:|---:|---:|\n",
    );
    for p in &a.curve {
        let _ = writeln!(
            s,
            "| {}{} | {} | {} .. {} | {} | {} .. {} |",
            p.ceiling,
            if p.ceiling == a.best { " (best)" } else { "" },
            n0(p.cycles_per_s.value),
            n0(p.cycles_per_s.low),
            n0(p.cycles_per_s.high),
            n0(p.above_best.value),
            n0(p.above_best.low),
            n0(p.above_best.high)
        );
    }
    s.push_str("\nModel and assumptions:\n\n");
    for l in a.model.iter().chain(&a.assumptions) {
        let _ = writeln!(s, "- {}", cell(l));
    }
    s.push_str("\nValidation:\n\n");
    for l in &a.validation {
        let _ = writeln!(s, "- {}", cell(l));
    }
    s
}

/// The curve plot's geometry: the value range and the margins of the drawing.
struct Frame {
    lo: f64,
    hi: f64,
    w: f64,
    h: f64,
    left: f64,
    right: f64,
    top: f64,
    bottom: f64,
}

impl Frame {
    /// The frame of values `lo..hi`, padded by 5% (by 1 when flat).
    fn new(lo: f64, hi: f64) -> Frame {
        let (lo, hi) = if hi > lo {
            let pad = (hi - lo) * 0.05;
            (lo - pad, hi + pad)
        } else {
            (lo - 1.0, hi + 1.0)
        };
        let (w, h, left, right, top, bottom) = (760.0, 320.0, 96.0, 20.0, 24.0, 44.0);
        Frame {
            lo,
            hi,
            w,
            h,
            left,
            right,
            top,
            bottom,
        }
    }

    /// The x coordinate of ceiling `c` (0..64).
    fn x(&self, c: f64) -> f64 {
        self.left + (self.w - self.left - self.right) * c / 64.0
    }

    /// The y coordinate of cycles per second `v`.
    fn y(&self, v: f64) -> f64 {
        self.top + (self.h - self.top - self.bottom) * (1.0 - (v - self.lo) / (self.hi - self.lo))
    }
}

/// The curve as an SVG: predicted cycles per second against ceilings 0..64 (linear axis),
/// the bootstrap band shaded, the best ceiling and the kernel default marked.
fn svg(a: &CeilingAdvice) -> Option<String> {
    use super::svg::esc;
    let pts: Vec<_> = a.curve.iter().filter(|p| p.ceiling <= 64).collect();
    if pts.len() < 2 {
        return None;
    }
    let lo = pts
        .iter()
        .map(|p| p.cycles_per_s.low)
        .fold(f64::INFINITY, f64::min);
    let hi = pts
        .iter()
        .map(|p| p.cycles_per_s.high)
        .fold(f64::NEG_INFINITY, f64::max);
    if !(lo.is_finite() && hi.is_finite()) {
        return None;
    }
    let f = Frame::new(lo, hi);
    let (w, h) = (f.w, f.h);
    let mut s = String::new();
    let _ = write!(
        s,
        "<svg class=\"plot ceiling-curve\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" role=\"img\"><title>{}</title>",
        esc("predicted flush cost per second by tlb_single_page_flush_ceiling")
    );
    axes(&mut s, &f);
    band_and_line(&mut s, &f, &pts);
    markers(&mut s, &f, a);
    s.push_str("</svg>");
    Some(s)
}

/// Horizontal grid lines with their values, the ceiling ticks every 8 pages, the axis titles.
fn axes(s: &mut String, f: &Frame) {
    use super::svg::{nice_ticks, tick_decimals};
    let Frame {
        w,
        h,
        left,
        right,
        top,
        bottom,
        ..
    } = *f;
    let ticks = nice_ticks(f.lo, f.hi, 6);
    let dec = tick_decimals(&ticks);
    for t in &ticks {
        let _ = write!(
            s,
            "<line x1=\"{left}\" x2=\"{}\" y1=\"{y:.1}\" y2=\"{y:.1}\" stroke=\"#eee\"/><text x=\"{}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"end\">{}</text>",
            w - right,
            left - 4.0,
            f.y(*t) + 4.0,
            if dec == 0 {
                n0(*t)
            } else {
                format!("{t:.dec$}")
            },
            y = f.y(*t)
        );
    }
    for c in (0..=64).step_by(8) {
        let _ = write!(
            s,
            "<line x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{}\" y2=\"{}\" stroke=\"#999\"/><text x=\"{x:.1}\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\">{c}</text>",
            h - bottom,
            h - bottom + 4.0,
            h - bottom + 16.0,
            x = f.x(c as f64)
        );
    }
    let _ = write!(
        s,
        "<text x=\"{}\" y=\"{}\" font-size=\"12\" text-anchor=\"middle\">tlb_single_page_flush_ceiling (pages)</text><text x=\"14\" y=\"{}\" font-size=\"12\" transform=\"rotate(-90 14 {})\" text-anchor=\"middle\">cycles per second</text>",
        (left + w - right) / 2.0,
        h - 6.0,
        (top + h - bottom) / 2.0,
        (top + h - bottom) / 2.0
    );
}

/// The bootstrap band shaded, the predicted cost drawn over it.
fn band_and_line(s: &mut String, f: &Frame, pts: &[&abperf_model::ceiling::CeilingPoint]) {
    use super::svg::colour;
    let mut band = String::new();
    for p in pts {
        let _ = write!(
            band,
            "{:.1},{:.1} ",
            f.x(p.ceiling as f64),
            f.y(p.cycles_per_s.high)
        );
    }
    for p in pts.iter().rev() {
        let _ = write!(
            band,
            "{:.1},{:.1} ",
            f.x(p.ceiling as f64),
            f.y(p.cycles_per_s.low)
        );
    }
    let _ = write!(
        s,
        "<polygon class=\"band\" points=\"{}\" fill=\"{}\" fill-opacity=\"0.2\" stroke=\"none\"/>",
        band.trim_end(),
        colour(0)
    );
    let line: Vec<String> = pts
        .iter()
        .map(|p| {
            format!(
                "{:.1},{:.1}",
                f.x(p.ceiling as f64),
                f.y(p.cycles_per_s.value)
            )
        })
        .collect();
    let _ = write!(
        s,
        "<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"/>",
        line.join(" "),
        colour(0)
    );
}

/// Dashed vertical lines at the best ceiling and the kernel default (when within 0..64).
fn markers(s: &mut String, f: &Frame, a: &CeilingAdvice) {
    use super::svg::esc;
    let (h, top, bottom) = (f.h, f.top, f.bottom);
    for (c, label, col) in [
        (a.best, format!("best {}", a.best), "#1a7f37"),
        (
            a.default_ceiling,
            format!("default {}", a.default_ceiling),
            "#888",
        ),
    ] {
        if c > 64 {
            continue;
        }
        let _ = write!(
            s,
            "<line class=\"marker\" data-ceiling=\"{c}\" x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{top}\" y2=\"{}\" stroke=\"{col}\" stroke-dasharray=\"4 3\"/><text x=\"{:.1}\" y=\"{}\" font-size=\"11\" fill=\"{col}\">{}</text>",
            h - bottom,
            f.x(c as f64) + 3.0,
            top + 10.0,
            esc(&label),
            x = f.x(c as f64)
        );
    }
}

/// The HTML section: recommendation, the curve, the inputs and the model in words.
fn html(a: &CeilingAdvice) -> String {
    use super::svg::esc;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "<h2>Ceiling advisor</h2><p class=\"verdict\">{}</p>",
        esc(&verdict(a))
    );
    for w in &a.warnings {
        let _ = writeln!(s, "<p class=\"note\">WARNING: {}</p>", esc(w));
    }
    if let Some(svg) = svg(a) {
        s.push_str(&svg);
        s.push('\n');
    }
    let _ = writeln!(s, "<pre class=\"ceiling\">{}</pre>", esc(&text(a)));
    s
}

impl Section for CeilingAdvice {
    fn text(&self, _r: &Report) -> String {
        text(self)
    }

    /// Seed 002's table of the capture and one paragraph of advice, within 72 columns.
    fn mail(&self, r: &Report) -> Option<String> {
        Some(super::ceiling_mail::mail(self, r.trace.as_ref()))
    }

    fn markdown(&self, _r: &Report) -> Option<String> {
        Some(markdown(self))
    }

    fn csv(&self, _r: &Report) -> Option<anyhow::Result<String>> {
        Some(csv(self))
    }

    fn json(&self, _r: &Report) -> Option<anyhow::Result<serde_json::Value>> {
        Some(Ok(json(self)))
    }

    fn html(&self, _r: &Report) -> Option<String> {
        Some(html(self))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use abperf_model::ceiling::*;

    pub fn sample() -> CeilingAdvice {
        let e = |v: f64| Estimate {
            value: v,
            low: v * 0.9,
            high: v * 1.1,
        };
        let curve = (0..=64u64)
            .map(|c| {
                let v = 1e6 + (c as f64 - 20.0).powi(2) * 1000.0;
                CeilingPoint {
                    ceiling: c,
                    cycles_per_s: e(v),
                    above_best: e(v - 1e6),
                }
            })
            .collect();
        CeilingAdvice {
            capture_id: 3,
            micro_id: 1,
            mix: FlushMix {
                rates: vec![(1, 1000.0), (33, 100.0)],
                always_full: 5.0,
                flushes: 1105,
                seconds: 1.0,
                remote: 10,
                sent: 10,
                received_rates: vec![(1, 10.0)],
                received_always_full: 0.0,
                sent_rates: vec![(1, 10.0)],
                sent_always_full: 0.0,
                recovered: 0,
            },
            costs: FlushCosts {
                per_page: e(300.0),
                full_extra: e(5000.0),
                refill: e(1000.0),
                working_set: 512,
                measured_ceiling: 33,
                ceiling_source: "knee".into(),
                refill_source: "tlb-refill".into(),
                partial_line: (200.0, 500.0),
                full_line: (5200.0, 200.0),
                terms: vec![
                    Term {
                        symbol: "p".into(),
                        name: "per-page flush (INVLPG)".into(),
                        unit: "cycles/page".into(),
                        estimate: e(300.0),
                        unconstrained: e(300.0),
                        resolved: true,
                        by_ceiling: true,
                        source: "micro 1 tlb-flush".into(),
                        to_resolve: None,
                    },
                    Term {
                        symbol: "R".into(),
                        name: "refill after a full flush, working set 512 pages".into(),
                        unit: "cycles".into(),
                        estimate: Estimate {
                            value: 0.0,
                            low: 0.0,
                            high: 5079.0,
                        },
                        unconstrained: Estimate {
                            value: -310.0,
                            low: -5254.0,
                            high: 5079.0,
                        },
                        resolved: false,
                        by_ceiling: true,
                        source: "micro 1 tlb-refill".into(),
                        to_resolve: Some("about 280 times the samples (`abperf micro tlb-refill --samples 9000`)".into()),
                    },
                ],
            },
            curve,
            best: 20,
            best_range: (20, 20),
            band: (18, 23),
            crossover: e(20.0),
            default_ceiling: 33,
            change: Change {
                from: 33,
                to: 20,
                percent_less: Estimate {
                    value: 14.5,
                    low: 9.0,
                    high: 20.25,
                },
                cycles_less: e(169_000.0),
            },
            changes: vec![],
            knob_check: None,
            resamples: 100,
            seed: 1,
            model: vec!["m".into()],
            assumptions: vec!["a <b>".into()],
            validation: vec!["v".into()],
            checks: vec![Check {
                pages: 1,
                calls: 300,
                traced_median: 4000.0,
                micro_median: 2000.0,
            }],
            warnings: vec![],
        }
    }

    #[test]
    fn every_format_shows_the_curve_and_the_verdict() {
        let a = sample();
        let t = text(&a);
        assert!(t.contains("Recommended tlb_single_page_flush_ceiling: 20; 95% band 18 .. 23; the kernel default 33 is predicted to cost 169,000 cycles/s more"), "{t}");
        assert!(
            t.lines()
                .any(|l| l.contains("<- best") && l.trim_start().starts_with("20 ")),
            "{t}"
        );
        assert!(t.contains("<- kernel default 33"));
        assert!(
            t.contains("      1       300           4,000           2,000      2.00"),
            "{t}"
        );
        let c = csv(&a).unwrap();
        assert_eq!(c.lines().count(), 66);
        assert!(
            c.lines().nth(21).unwrap().starts_with("20,1000000.0,"),
            "{c}"
        );
        assert!(c.lines().nth(21).unwrap().ends_with(",1"));
        let j = json(&a);
        assert_eq!(j["best"], 20);
        assert_eq!(j["curve"].as_array().unwrap().len(), 65);
        assert!(j["verdict"].as_str().unwrap().starts_with("Recommended"));
        let m = markdown(&a);
        assert!(m.contains("| 20 (best) | 1,000,000 |"), "{m}");
        let h = html(&a);
        assert!(h.contains("class=\"plot ceiling-curve\""));
        assert!(h.contains("data-ceiling=\"20\"") && h.contains("data-ceiling=\"33\""));
        assert!(h.contains("class=\"band\""));
        assert!(h.contains("a &lt;b&gt;") && !h.contains("a <b>"));
    }

    /// Issue 29: the check by the knob, predicted against measured, in text and in the mail.
    #[test]
    fn the_knob_check_is_shown_with_its_verdict() {
        let mut a = sample();
        let est = |v: f64, l: f64, h: f64| Estimate {
            value: v,
            low: l,
            high: h,
        };
        a.knob_check = Some(KnobCheck {
            experiment_id: 3,
            baseline: 33,
            rows: vec![KnobCheckRow {
                ceiling: 20,
                runs: 5,
                predicted_flush_pct: est(14.5, 9.0, 20.2),
                predicted_wall_pct: Some(est(9.1, 7.2, 10.9)),
                measured_wall_pct: Some(est(17.3, -6.0, 33.4)),
                measured_sys_pct: Some(est(18.1, -4.8, 36.9)),
                agrees: Some(true),
            }],
            agreed: true,
            notes: vec!["Measured: experiment 3".into(), "under QEMU's TCG".into()],
        });
        let t = text(&a);
        assert!(
            t.contains("By the knob: percent less than at ceiling 33"),
            "{t}"
        );
        assert!(
            t.lines().any(|l| l.trim_start().starts_with("20 ")
                && l.contains("9.1% (7.2 .. 10.9)")
                && l.contains("17.3% (-6.0 .. 33.4)")
                && l.ends_with("yes")),
            "{t}"
        );
        assert!(t.contains("agreed at every ceiling"), "{t}");
        let m = super::super::ceiling_mail::paragraph(&a);
        assert!(m.contains("Measured with the knob (experiment 3, 5 runs): at ceiling 20 against 33 the wall time was 17.3% less (95% -6.0 .. 33.4%), 9.1% predicted (95% 7.2 .. 10.9%): they agree."), "{m}");
        assert!(m.contains("under QEMU's TCG"), "{m}");
        assert!(!m.contains("Predicted, not measured"), "{m}");
    }

    /// Issue 29: a term whose unconstrained fit is negative is shown as not resolvable, with
    /// its constrained band (never below 0) and what would resolve it.
    #[test]
    fn unresolvable_terms_are_named_and_never_negative() {
        let a = sample();
        let t = text(&a);
        assert!(
            t.contains("*R   refill after a full flush, working set 512 pages: 0 cycles (95% 0 .. 5,079); not resolvable: |-310| < its 95% band -5,254 .. 5,079"),
            "{t}"
        );
        assert!(
            t.contains("to resolve it: about 280 times the samples"),
            "{t}"
        );
        let m = super::super::ceiling_mail::paragraph(&a);
        assert!(m.starts_with("With tlb_single_page_flush_ceiling 20 instead of 33, the workload's flushing is predicted to cost 14.5% less (95% 9.0 .. 20.2%)"), "{m}");
        assert!(m.contains("refill after a full flush, working set 512 pages is not resolvable here (|-310| cycles within 95% -5,254 .. 5,079; taken as 0 .. 5,079); about 280 times"), "{m}");
    }
}
