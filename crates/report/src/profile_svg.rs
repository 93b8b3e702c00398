//! The profile differential as an inline SVG (no scripts, like [`super::svg`]): one row per
//! symbol, the change of its share of samples from the baseline to the variant as a bar from 0
//! (red: more samples, blue: fewer) with its bootstrap interval as a whisker; named symbols
//! (BH) in bold. The differential flame graph drawn under it, from the runs' stored call stacks,
//! is [`super::flame_svg`].

use super::svg::{axis_x, esc, nice_ticks, padded_range, tick_decimals};
use abperf_stats::profile_diff::{ProfileDiff, SymbolDiff};
use std::fmt::Write;

/// The most symbols drawn (named ones first, then the largest changes).
const ROWS: usize = 20;

/// The chart of `d` (variant `b` against baseline `a`); a note when no symbol was compared.
pub fn differential(d: &ProfileDiff, event: &str, a: &str, b: &str) -> String {
    let rows: Vec<&SymbolDiff> = d.symbols.iter().take(ROWS).collect();
    if rows.is_empty() {
        return format!(
            "<p class=\"note\">Profile of {} against {}: no symbol compared.</p>\n",
            esc(b),
            esc(a)
        );
    }
    let pct = |x: f64| 100.0 * x;
    let vals = rows
        .iter()
        .flat_map(|s| [pct(s.low), pct(s.high), pct(s.diff)])
        .chain([0.0]);
    let Some((lo, hi)) = padded_range(vals) else {
        return String::new();
    };
    let (w, left, right, top, row_h) = (760.0, 300.0, 20.0, 10.0, 22.0);
    let y_axis = top + row_h * rows.len() as f64;
    let h = y_axis + 40.0;
    let x = |v: f64| left + (v - lo) / (hi - lo) * (w - left - right);
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="plot profile-diff" width="{w}" height="{h}" viewBox="0 0 {w} {h}" role="img" aria-label="change of each symbol's share of {} samples, {} against {}">"#,
        esc(event),
        esc(b),
        esc(a)
    );
    let t = nice_ticks(lo, hi, 6);
    let dec = tick_decimals(&t);
    let ticks: Vec<(f64, String)> = t.into_iter().map(|v| (v, format!("{v:+.dec$}"))).collect();
    axis_x(&mut s, &ticks, x, top, y_axis);
    let _ = write!(
        s,
        r##"<line x1="{z:.1}" y1="{top}" x2="{z:.1}" y2="{y_axis:.1}" stroke="#000"/><text x="{:.1}" y="{:.1}" font-size="11" text-anchor="middle" fill="#333">{} share of {} samples, {} minus {} (percentage points), {:.0}% CI over runs</text>"##,
        left + (w - left - right) / 2.0,
        h - 4.0,
        d.kind.name(),
        esc(event),
        esc(b),
        esc(a),
        100.0 * d.level,
        z = x(0.0)
    );
    for (i, r) in rows.iter().enumerate() {
        let cy = top + row_h * (i as f64 + 0.5);
        let tip = format!(
            "{}: {:.2}% -> {:.2}% ({:+.2}, CI {:+.2}..{:+.2}, q={:.3})",
            r.symbol,
            pct(r.share_a),
            pct(r.share_b),
            pct(r.diff),
            pct(r.low),
            pct(r.high),
            r.q
        );
        let weight = if r.named { "bold" } else { "normal" };
        let _ = write!(
            s,
            r##"<text class="symbol" x="{:.1}" y="{:.1}" font-size="12" font-weight="{weight}" text-anchor="end" fill="#222"><title>{}</title>{}</text>"##,
            left - 8.0,
            cy + 4.0,
            esc(&tip),
            esc(&super::labels::elide_middle(&r.symbol, 44))
        );
        let (x0, x1) = (x(0.0).min(x(pct(r.diff))), x(0.0).max(x(pct(r.diff))));
        let fill = if r.diff > 0.0 { "#D55E00" } else { "#0072B2" };
        let opacity = if r.named { "0.9" } else { "0.35" };
        let _ = write!(
            s,
            r#"<rect class="bar" x="{x0:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{fill}" fill-opacity="{opacity}"><title>{}</title></rect>"#,
            cy - row_h * 0.35,
            (x1 - x0).max(0.5),
            row_h * 0.7,
            esc(&tip)
        );
        let _ = write!(
            s,
            r##"<line class="ci" x1="{:.1}" y1="{cy:.1}" x2="{:.1}" y2="{cy:.1}" stroke="#000" stroke-width="1.5"/>"##,
            x(pct(r.low)),
            x(pct(r.high)),
        );
    }
    s.push_str("</svg>\n");
    format!(
        "<h3>{} against {}</h3>\n<p class=\"note\">{} profiled runs of {}, {} of {}; BH {}% over {} symbols (bold: named).</p>\n{s}",
        esc(b),
        esc(a),
        d.runs_a,
        esc(a),
        d.runs_b,
        esc(b),
        100.0 * d.fdr,
        d.symbols.len()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use abperf_model::profile::ShareKind;

    #[test]
    fn bars_whiskers_and_escaped_names() {
        let sym = |name: &str, diff: f64, named: bool| SymbolDiff {
            symbol: name.into(),
            share_a: 0.3,
            share_b: 0.3 + diff,
            diff,
            low: diff - 0.01,
            high: diff + 0.01,
            p: 0.01,
            q: 0.02,
            named,
        };
        let d = ProfileDiff {
            kind: ShareKind::SelfShare,
            level: 0.95,
            fdr: 0.05,
            resamples: 2000,
            runs_a: 5,
            runs_b: 5,
            symbols: vec![sym("hot<x>", 0.14, true), sym("cold", -0.12, false)],
        };
        let s = differential(&d, "cpu-clock", "A", "B");
        assert_eq!(s.matches("<rect class=\"bar\"").count(), 2);
        assert_eq!(s.matches("<line class=\"ci\"").count(), 2);
        assert!(s.contains("hot&lt;x&gt;") && !s.contains("hot<x>"), "{s}");
        assert!(!s.contains("<script"));
        assert!(s.contains("#D55E00") && s.contains("#0072B2"));
    }
}
