//! Inline SVG plots for the HTML report: per-variant distribution (strip plus box), run-order
//! plot coloured by variant, forest plot of ratio CIs. Plain strings, no external assets; every
//! piece of user text goes through [`esc`].

use super::Report;
use super::fmt::{Scale, metric_scale, truncate};
use std::fmt::Write;

/// One line of a curve plot: (pages, p10, median, p90) ascending in pages.
#[derive(Debug, Clone)]
pub struct Series {
    pub label: String,
    pub points: Vec<(f64, f64, f64, f64)>,
    /// Drawn dashed (a reference such as the empty-range cost).
    pub dashed: bool,
    /// Colour index.
    pub colour: usize,
}

/// A vertical marker: x value and its label.
#[derive(Debug, Clone)]
pub struct Marker {
    pub x: f64,
    pub label: String,
}

/// At most this many points per variant in a distribution plot, and in a run-order plot; the
/// box (quartiles, median, whiskers) always uses every run. Beyond it, points are taken at an
/// even stride and the plot says so.
pub const MAX_POINTS: usize = 2000;

/// Indices of at most `max` of `n` items, evenly spread (all of them when n <= max).
pub fn thin(n: usize, max: usize) -> impl Iterator<Item = usize> {
    let step = n.div_ceil(max.max(1)).max(1);
    (0..n).step_by(step)
}

/// Width of variant labels in plots (characters).
pub const LABEL_WIDTH: usize = 24;

/// The label of every variant in plots: short, distinct, keeping what differs
/// ([`super::labels::short_labels`]); the HTML variants table maps labels to full names.
pub fn variant_labels(d: &Report) -> Vec<String> {
    let names: Vec<&str> = d.data.variants.iter().map(|v| v.name.as_str()).collect();
    super::labels::short_labels(&names, LABEL_WIDTH)
}

/// Whether `metric` takes more than one value over the counted runs of every variant together
/// (a plot of a constant shows nothing; the report says so in a sentence instead).
pub fn varies(d: &Report, metric: &str) -> bool {
    let mut first: Option<f64> = None;
    for i in 0..d.data.variants.len() {
        for v in d.values(i, metric) {
            match first {
                None => first = Some(v),
                Some(f) if f != v => return true,
                _ => {}
            }
        }
    }
    false
}

/// Okabe-Ito colours (colour-blind safe), cycled for more variants.
const PALETTE: &[&str] = &[
    "#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#999933", "#000000",
];

pub fn colour(i: usize) -> &'static str {
    PALETTE[i % PALETTE.len()]
}

/// Escape text for HTML and SVG (element content and quoted attributes).
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c if c.is_control() && c != '\n' && c != '\t' => o.push(' '),
            c => o.push(c),
        }
    }
    o
}

/// About `n` round tick values covering [lo, hi].
pub fn nice_ticks(lo: f64, hi: f64, n: usize) -> Vec<f64> {
    if !(lo.is_finite() && hi.is_finite()) || hi <= lo || n == 0 {
        return vec![lo];
    }
    let raw = (hi - lo) / n as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| raw <= *s)
        .unwrap_or(10.0 * mag);
    let first = (lo / step).ceil() * step;
    let mut t = Vec::new();
    let mut x = first;
    while x <= hi + step * 1e-9 && t.len() < 50 {
        t.push(if x.abs() < step * 1e-9 { 0.0 } else { x });
        x += step;
    }
    t
}

/// Decimals that show every tick of `ticks` (evenly spaced) distinctly.
pub fn tick_decimals(ticks: &[f64]) -> usize {
    if ticks.len() < 2 {
        return 3;
    }
    let step = (ticks[1] - ticks[0]).abs();
    let mut dec = 0;
    while dec < 9
        && ((step * 10f64.powi(dec as i32)).round() - step * 10f64.powi(dec as i32)).abs() > 1e-6
    {
        dec += 1;
    }
    dec
}

/// Ticks for raw values in [lo, hi], chosen round in the display scale `sc`: (raw value, label).
pub(crate) fn scaled_ticks(lo: f64, hi: f64, n: usize, sc: &Scale) -> Vec<(f64, String)> {
    let t = nice_ticks(lo / sc.div, hi / sc.div, n);
    let dec = tick_decimals(&t);
    t.into_iter()
        .map(|v| (v * sc.div, format!("{v:.dec$}")))
        .collect()
}

/// [lo, hi] padded by 5%, never empty.
pub(crate) fn padded_range(values: impl Iterator<Item = f64>) -> Option<(f64, f64)> {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in values.filter(|v| v.is_finite()) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if !lo.is_finite() {
        return None;
    }
    let span = if hi > lo {
        hi - lo
    } else {
        lo.abs().max(1.0) * 0.01
    };
    Some((lo - span * 0.05, hi + span * 0.05))
}

/// Deterministic vertical jitter for point `i`, in [-1, 1].
fn jitter(i: usize) -> f64 {
    ((i * 7919 + 13) % 17) as f64 / 8.0 - 1.0
}

pub(crate) fn axis_x(
    s: &mut String,
    ticks: &[(f64, String)],
    x: impl Fn(f64) -> f64,
    y0: f64,
    y1: f64,
) {
    for (t, label) in ticks {
        let px = x(*t);
        let _ = write!(
            s,
            r##"<line x1="{px:.1}" y1="{y0:.1}" x2="{px:.1}" y2="{y1:.1}" stroke="#ddd"/><text x="{px:.1}" y="{:.1}" font-size="11" text-anchor="middle" fill="#333">{}</text>"##,
            y1 + 14.0,
            esc(label)
        );
    }
}

/// Horizontal grid lines at `ticks` (raw value, label) with labels left of `x0`.
pub(crate) fn axis_y(
    s: &mut String,
    ticks: &[(f64, String)],
    y: impl Fn(f64) -> f64,
    x0: f64,
    x1: f64,
) {
    for (t, label) in ticks {
        let py = y(*t);
        let _ = write!(
            s,
            r##"<line x1="{x0:.1}" y1="{py:.1}" x2="{x1:.1}" y2="{py:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" font-size="11" text-anchor="end" fill="#333">{}</text>"##,
            x0 - 6.0,
            py + 4.0,
            esc(label)
        );
    }
}

/// Powers of two covering [lo, hi] (both > 0), for a log2 axis: (value, label). Every other
/// power when there are more than 12.
pub fn log2_ticks(lo: f64, hi: f64) -> Vec<(f64, String)> {
    if !(lo > 0.0 && hi >= lo && hi.is_finite()) {
        return Vec::new();
    }
    let (a, b) = (lo.log2().ceil() as i32, hi.log2().floor() as i32);
    let step = if b - a > 12 { 2 } else { 1 };
    (a..=b)
        .step_by(step)
        .map(|e| (2f64.powi(e), format!("{}", 2f64.powi(e))))
        .collect()
}

/// Strip plus box plot of `metric`, one row per variant.
pub fn distribution(d: &Report, metric: &str) -> Option<String> {
    let sc: Scale = metric_scale(d, metric);
    let unit = d.metric(metric).map(|m| m.unit.clone()).unwrap_or_default();
    let rows: Vec<(usize, &str, Vec<f64>)> = d
        .data
        .variants
        .iter()
        .enumerate()
        .map(|(i, v)| (i, v.name.as_str(), d.values(i, metric)))
        .filter(|(_, _, xs)| !xs.is_empty())
        .collect();
    let (lo, hi) = padded_range(rows.iter().flat_map(|(_, _, xs)| xs.iter().copied()))?;
    let labels = variant_labels(d);
    let (w, left, right, top, row_h) = (760.0, 200.0, 20.0, 10.0, 46.0);
    let h = top + row_h * rows.len() as f64 + 40.0;
    let x = |v: f64| left + (v - lo) / (hi - lo) * (w - left - right);
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="plot distribution" data-metric="{m}" width="{w}" height="{h}" viewBox="0 0 {w} {h}" role="img" aria-label="distribution of {m} per variant">"#,
        m = esc(metric)
    );
    let y_axis = top + row_h * rows.len() as f64;
    axis_x(&mut s, &scaled_ticks(lo, hi, 6, &sc), x, top, y_axis);
    if rows.iter().any(|(_, _, xs)| xs.len() > MAX_POINTS) {
        let _ = write!(
            s,
            r##"<text x="{:.1}" y="{:.1}" font-size="11" text-anchor="end" fill="#555">points: at most {MAX_POINTS} runs per variant shown; boxes use all</text>"##,
            w - right,
            h - 4.0
        );
    }
    let _ = write!(
        s,
        r##"<text x="{:.1}" y="{:.1}" font-size="11" text-anchor="middle" fill="#333">{} {}</text>"##,
        left + (w - left - right) / 2.0,
        h - 4.0,
        esc(metric),
        esc(&sc.unit_label(&unit))
    );
    for (row, (ci, name, xs)) in rows.iter().enumerate() {
        let cy = top + row_h * (row as f64 + 0.5);
        let col = colour(*ci);
        let _ = write!(
            s,
            r##"<text class="label" x="{:.1}" y="{:.1}" font-size="12" text-anchor="end" fill="#222"><title>{}</title>{}</text>"##,
            left - 8.0,
            cy + 4.0,
            esc(name),
            esc(&labels[*ci])
        );
        if let Some(desc) = d.description(name, metric) {
            let iqr = desc.q3 - desc.q1;
            let wlo = xs
                .iter()
                .copied()
                .filter(|v| *v >= desc.q1 - 1.5 * iqr)
                .fold(f64::INFINITY, f64::min);
            let whi = xs
                .iter()
                .copied()
                .filter(|v| *v <= desc.q3 + 1.5 * iqr)
                .fold(f64::NEG_INFINITY, f64::max);
            let _ = write!(
                s,
                r##"<line class="whisker" data-low="{wlo}" data-high="{whi}" x1="{:.1}" y1="{cy:.1}" x2="{:.1}" y2="{cy:.1}" stroke="#555"/><rect class="box" data-q1="{q1}" data-q3="{q3}" x="{:.1}" y="{:.1}" width="{:.1}" height="22" fill="none" stroke="#555"/><line class="median" x1="{m:.1}" y1="{:.1}" x2="{m:.1}" y2="{:.1}" stroke="#111" stroke-width="2"/>"##,
                x(wlo),
                x(whi),
                x(desc.q1),
                cy - 11.0,
                (x(desc.q3) - x(desc.q1)).max(0.5),
                cy - 11.0,
                cy + 11.0,
                m = x(desc.median),
                q1 = desc.q1,
                q3 = desc.q3,
            );
        }
        for i in thin(xs.len(), MAX_POINTS) {
            let v = &xs[i];
            let _ = write!(
                s,
                r#"<circle cx="{:.1}" cy="{:.1}" r="3" fill="{col}" fill-opacity="0.65"><title>{}</title></circle>"#,
                x(*v),
                cy + jitter(i) * 14.0,
                esc(&format!("{name}: {}", sc.show(*v, &unit)))
            );
        }
    }
    s.push_str("</svg>");
    Some(s)
}

/// Values of `metric` against schedule position, coloured by variant (drift and interleaving).
pub fn run_order(d: &Report, metric: &str) -> Option<String> {
    let sc = metric_scale(d, metric);
    let unit = d.metric(metric).map(|m| m.unit.clone()).unwrap_or_default();
    let pts: Vec<(u32, usize, f64)> = d
        .data
        .runs
        .iter()
        .filter(|r| r.counts())
        .filter_map(|r| r.value(metric).map(|v| (r.seq, r.variant, v)))
        .collect();
    let (lo, hi) = padded_range(pts.iter().map(|p| p.2))?;
    let (smin, smax) = (
        pts.iter().map(|p| p.0).min()? as f64,
        pts.iter().map(|p| p.0).max()? as f64,
    );
    let (smin, smax) = if smax > smin {
        (smin - 0.5, smax + 0.5)
    } else {
        (smin - 1.0, smax + 1.0)
    };
    // The legend: every variant, three a line (labels are at most LABEL_WIDTH characters).
    let labels = variant_labels(d);
    let legend_rows = d.data.variants.len().div_ceil(3).max(1);
    let (w, left, right, bottom) = (760.0, 80.0, 20.0, 40.0);
    let top = 16.0 + 18.0 * legend_rows as f64;
    let h = 266.0 + top;
    let x = |s: f64| left + (s - smin) / (smax - smin) * (w - left - right);
    let y = |v: f64| top + (hi - v) / (hi - lo) * (h - top - bottom);
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="plot run-order" data-metric="{m}" width="{w}" height="{h}" viewBox="0 0 {w} {h}" role="img" aria-label="{m} in run order">"#,
        m = esc(metric)
    );
    axis_y(&mut s, &scaled_ticks(lo, hi, 5, &sc), y, left, w - right);
    let seq_ticks: Vec<(f64, String)> = nice_ticks(smin.max(0.0), smax, 8)
        .into_iter()
        .filter(|t| t.fract() == 0.0)
        .map(|t| (t, format!("{t:.0}")))
        .collect();
    axis_x(&mut s, &seq_ticks, x, top, h - bottom);
    let _ = write!(
        s,
        r##"<text x="{:.1}" y="{:.1}" font-size="11" text-anchor="middle" fill="#333">run (schedule position); y: {} {}</text>"##,
        left + (w - left - right) / 2.0,
        h - 4.0,
        esc(metric),
        esc(&sc.unit_label(&unit))
    );
    // Legend.
    for (i, v) in d.data.variants.iter().enumerate() {
        let (lx, ly) = (10.0 + 250.0 * (i % 3) as f64, 18.0 + 18.0 * (i / 3) as f64);
        let _ = write!(
            s,
            r##"<g class="legend-entry" data-variant="{}"><title>{}</title><circle cx="{:.1}" cy="{:.1}" r="5" fill="{}"/><text class="label" x="{:.1}" y="{ly:.1}" font-size="12" fill="#222">{}</text></g>"##,
            esc(&v.name),
            esc(&v.name),
            lx + 5.0,
            ly - 4.0,
            colour(i),
            lx + 14.0,
            esc(&labels[i])
        );
    }
    let shown: Vec<usize> = thin(pts.len(), MAX_POINTS).collect();
    if shown.len() < pts.len() {
        let _ = write!(
            s,
            r##"<text x="{:.1}" y="{:.1}" font-size="11" text-anchor="end" fill="#555">{} of {} runs shown</text>"##,
            w - right,
            top + 12.0,
            shown.len(),
            pts.len()
        );
    }
    for (seq, pos, v) in shown.iter().map(|&i| &pts[i]) {
        let ci = *pos;
        let _ = write!(
            s,
            r#"<circle cx="{:.1}" cy="{:.1}" r="3.5" fill="{}"><title>{}</title></circle>"#,
            x(*seq as f64),
            y(*v),
            colour(ci),
            esc(&format!(
                "run {seq}, {}: {}",
                d.variant_name(*pos),
                sc.show(*v, &unit)
            ))
        );
    }
    s.push_str("</svg>");
    Some(s)
}

/// Forest plot: each verdict's change (ratio - 1, %) with its Fieller CI (at 1 - alpha); the line at 0 is "same".
pub fn forest(d: &Report) -> Option<String> {
    let rows: Vec<_> = d
        .comparisons()
        .iter()
        .filter(|v| v.ratio.is_finite())
        .collect();
    if rows.is_empty() {
        return None;
    }
    let pct = |r: f64| (r - 1.0) * 100.0;
    let mut vals: Vec<f64> = vec![0.0];
    for r in &rows {
        vals.push(pct(r.ratio));
        if let Some([a, b]) = r.ratio_ci {
            vals.extend([pct(a), pct(b)]);
        }
    }
    let (lo, hi) = padded_range(vals.into_iter())?;
    let labels = variant_labels(d);
    let label_of = |name: &str| {
        d.data
            .position(name)
            .map(|p| labels[p].clone())
            .unwrap_or_else(|| name.to_string())
    };
    let several_metrics = rows.iter().any(|r| r.metric != rows[0].metric);
    let baselines: std::collections::BTreeSet<&str> =
        rows.iter().map(|r| r.baseline.as_str()).collect();
    let against = match baselines.iter().next() {
        Some(b) if baselines.len() == 1 => format!("against {}", label_of(b)),
        _ => "against the baseline".to_string(),
    };
    // Each row's interval is its Fieller interval, at the verdict's level.
    let level = super::fmt::ci_words(
        rows.iter()
            .filter(|r| r.ratio_ci.is_some())
            .filter_map(|r| r.details.fieller95.map(|f| f.level)),
    );
    let (w, left, right, top, row_h) = (760.0, 260.0, 20.0, 10.0, 30.0);
    let h = top + row_h * rows.len() as f64 + 40.0;
    let x = |v: f64| left + (v - lo) / (hi - lo) * (w - left - right);
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="plot forest" width="{w}" height="{h}" viewBox="0 0 {w} {h}" role="img" aria-label="ratio of means with {} confidence intervals">"#,
        level.trim_end_matches(" CI")
    );
    let y_axis = top + row_h * rows.len() as f64;
    let t = nice_ticks(lo, hi, 6);
    let dec = tick_decimals(&t);
    let ticks: Vec<(f64, String)> = t.into_iter().map(|v| (v, format!("{v:+.dec$}%"))).collect();
    axis_x(&mut s, &ticks, x, top, y_axis);
    let _ = write!(
        s,
        r##"<line x1="{z:.1}" y1="{top}" x2="{z:.1}" y2="{y_axis:.1}" stroke="#000" stroke-dasharray="4 3"/><text x="{:.1}" y="{:.1}" font-size="11" text-anchor="middle" fill="#333">change of the mean {}, {level}</text>"##,
        left + (w - left - right) / 2.0,
        h - 4.0,
        esc(&against),
        z = x(0.0)
    );
    for (i, r) in rows.iter().enumerate() {
        let cy = top + row_h * (i as f64 + 0.5);
        // The baseline is the same on every row (it is named under the axis).
        let label = if several_metrics {
            format!("{} ({})", label_of(&r.variant), r.metric)
        } else {
            label_of(&r.variant)
        };
        let ci = d.data.position(&r.variant).unwrap_or(0);
        let _ = write!(
            s,
            r##"<text class="label" x="{:.1}" y="{:.1}" font-size="12" text-anchor="end" fill="#222"><title>{}</title>{}</text>"##,
            left - 8.0,
            cy + 4.0,
            esc(&r.line),
            esc(&super::labels::elide_middle(&label, 36))
        );
        if let Some([a, b]) = r.ratio_ci {
            let _ = write!(
                s,
                r#"<line class="ci" x1="{:.1}" y1="{cy:.1}" x2="{:.1}" y2="{cy:.1}" stroke="{}" stroke-width="2"/>"#,
                x(pct(a)),
                x(pct(b)),
                colour(ci)
            );
        }
        let _ = write!(
            s,
            r#"<rect x="{:.1}" y="{:.1}" width="8" height="8" fill="{}"><title>{}</title></rect>"#,
            x(pct(r.ratio)) - 4.0,
            cy - 4.0,
            colour(ci),
            esc(&r.line)
        );
    }
    s.push_str("</svg>");
    Some(s)
}

/// A curve plot's geometry: the log2 range of pages, the value range and the margins.
struct CurveFrame {
    lx0: f64,
    lx1: f64,
    lo: f64,
    hi: f64,
    w: f64,
    h: f64,
    left: f64,
    right: f64,
    top: f64,
    bottom: f64,
}

impl CurveFrame {
    /// The frame of `series` (None without a positive page count or a finite value); the top
    /// margin holds the legend, three entries a line.
    fn of(series: &[Series]) -> Option<CurveFrame> {
        let pts = || series.iter().flat_map(|s| s.points.iter());
        let (xmin, xmax) = pts()
            .map(|p| p.0)
            .filter(|x| *x > 0.0)
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| {
                (a.min(x), b.max(x))
            });
        if !(xmin.is_finite() && xmax.is_finite()) {
            return None;
        }
        let (lx0, lx1) = if xmax > xmin {
            let pad = (xmax.log2() - xmin.log2()) * 0.03;
            (xmin.log2() - pad, xmax.log2() + pad)
        } else {
            (xmin.log2() - 1.0, xmin.log2() + 1.0)
        };
        let (lo, hi) = padded_range(pts().flat_map(|p| [p.1, p.2, p.3]))?;
        Some(CurveFrame {
            lx0,
            lx1,
            lo,
            hi,
            w: 760.0,
            h: 340.0,
            left: 80.0,
            right: 20.0,
            top: 14.0 + 18.0 * ((series.len() as f64) / 3.0).ceil(),
            bottom: 40.0,
        })
    }

    /// The x coordinate of `v` pages (log2 axis).
    fn x(&self, v: f64) -> f64 {
        self.left
            + (v.log2() - self.lx0) / (self.lx1 - self.lx0) * (self.w - self.left - self.right)
    }

    /// The y coordinate of value `v`.
    fn y(&self, v: f64) -> f64 {
        self.top + (self.hi - v) / (self.hi - self.lo) * (self.h - self.top - self.bottom)
    }
}

/// A curve plot for micro benchmarks: each series' median against pages on a log2 x axis, a
/// p10-p90 band (solid series), dashed series as plain lines, and vertical markers (the implied
/// flush ceiling) labelled with their value. `class` names the plot in the DOM.
pub fn micro_curve(
    class: &str,
    series: &[Series],
    markers: &[Marker],
    y_label: &str,
) -> Option<String> {
    let f = CurveFrame::of(series)?;
    let (w, h) = (f.w, f.h);
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="plot micro-curve {c}" width="{w}" height="{h}" viewBox="0 0 {w} {h}" role="img" aria-label="{l} against pages (log2)">"#,
        c = esc(class),
        l = esc(y_label)
    );
    curve_axes(&mut s, &f, y_label);
    legend(&mut s, &f, series);
    for se in series {
        curve(&mut s, &f, se);
    }
    curve_markers(&mut s, &f, markers);
    s.push_str("</svg>");
    Some(s)
}

/// The value and log2 page axes with their titles.
fn curve_axes(s: &mut String, f: &CurveFrame, y_label: &str) {
    let (w, h, left, right, top, bottom) = (f.w, f.h, f.left, f.right, f.top, f.bottom);
    let t = nice_ticks(f.lo, f.hi, 5);
    let dec = tick_decimals(&t);
    let yt: Vec<(f64, String)> = t.into_iter().map(|v| (v, format!("{v:.dec$}"))).collect();
    axis_y(s, &yt, |v| f.y(v), left, w - right);
    axis_x(
        s,
        &log2_ticks(2f64.powf(f.lx0), 2f64.powf(f.lx1)),
        |v| f.x(v),
        top,
        h - bottom,
    );
    let _ = write!(
        s,
        r##"<text x="{:.1}" y="{:.1}" font-size="11" text-anchor="middle" fill="#333">pages (log2); y: {}; band: p10-p90</text>"##,
        left + (w - left - right) / 2.0,
        h - 4.0,
        esc(y_label)
    );
}

/// The legend above the plot, three entries a line.
fn legend(s: &mut String, f: &CurveFrame, series: &[Series]) {
    for (i, se) in series.iter().enumerate() {
        let (lx, ly) = (
            f.left + 220.0 * (i % 3) as f64,
            16.0 + 18.0 * (i / 3) as f64,
        );
        let _ = write!(
            s,
            r##"<line x1="{lx:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="{c}" stroke-width="2"{d}/><text x="{:.1}" y="{ly:.1}" font-size="12" fill="#222">{}</text>"##,
            ly - 4.0,
            lx + 18.0,
            ly - 4.0,
            lx + 22.0,
            esc(&truncate(&se.label, 28)),
            c = colour(se.colour),
            d = if se.dashed {
                r#" stroke-dasharray="5 3""#
            } else {
                ""
            }
        );
    }
}

/// One series: its p10-p90 band and points with their figures (solid series), its median line.
fn curve(s: &mut String, f: &CurveFrame, se: &Series) {
    let c = colour(se.colour);
    if !se.dashed && se.points.len() > 1 {
        let mut poly: Vec<String> = se
            .points
            .iter()
            .map(|p| format!("{:.1},{:.1}", f.x(p.0), f.y(p.3)))
            .collect();
        poly.extend(
            se.points
                .iter()
                .rev()
                .map(|p| format!("{:.1},{:.1}", f.x(p.0), f.y(p.1))),
        );
        let _ = write!(
            s,
            r#"<polygon class="band" points="{}" fill="{c}" fill-opacity="0.15" stroke="none"/>"#,
            poly.join(" ")
        );
    }
    let line: Vec<String> = se
        .points
        .iter()
        .map(|p| format!("{:.1},{:.1}", f.x(p.0), f.y(p.2)))
        .collect();
    let _ = write!(
        s,
        r#"<polyline class="median" points="{}" fill="none" stroke="{c}" stroke-width="{}"{}/>"#,
        line.join(" "),
        if se.dashed { 1 } else { 2 },
        if se.dashed {
            r#" stroke-dasharray="5 3""#
        } else {
            ""
        }
    );
    if !se.dashed {
        for p in &se.points {
            let _ = write!(
                s,
                r#"<circle cx="{:.1}" cy="{:.1}" r="2.5" fill="{c}"><title>{}</title></circle>"#,
                f.x(p.0),
                f.y(p.2),
                esc(&format!(
                    "{}, {} pages: median {:.1} (p10 {:.1}, p90 {:.1})",
                    se.label, p.0, p.2, p.1, p.3
                ))
            );
        }
    }
}

/// The vertical markers within the page range, labelled with their value.
fn curve_markers(s: &mut String, f: &CurveFrame, markers: &[Marker]) {
    let (h, top, bottom) = (f.h, f.top, f.bottom);
    for (i, m) in markers.iter().enumerate() {
        if !(m.x >= 2f64.powf(f.lx0) && m.x <= 2f64.powf(f.lx1)) {
            continue;
        }
        let px = f.x(m.x);
        let _ = write!(
            s,
            r##"<line class="ceiling" data-pages="{v}" x1="{px:.1}" y1="{top:.1}" x2="{px:.1}" y2="{:.1}" stroke="#000" stroke-width="1.5" stroke-dasharray="6 3"/><text class="ceiling-label" x="{:.1}" y="{:.1}" font-size="12" fill="#000">{}</text>"##,
            h - bottom,
            px + 4.0,
            top + 14.0 + 14.0 * i as f64,
            esc(&m.label),
            v = m.x
        );
    }
}

#[cfg(test)]
mod tests {
    use super::super::testdata::sample_named;
    use super::*;

    #[test]
    fn ticks_are_round_and_cover() {
        assert_eq!(nice_ticks(0.0, 10.0, 5), [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
        let t = nice_ticks(874.1, 881.9, 6);
        assert!(
            t.first().unwrap() >= &874.1 && t.last().unwrap() <= &881.9,
            "{t:?}"
        );
        assert!(t.len() >= 3);
        assert_eq!(nice_ticks(1.0, 1.0, 5), [1.0]);
        assert_eq!(tick_decimals(&[0.0, 2.5, 5.0]), 1);
        assert_eq!(tick_decimals(&[0.0, 200.0]), 0);
        assert_eq!(tick_decimals(&[0.1, 0.15]), 2);
        let sc = Scale {
            div: 1024.0,
            suffix: "MiB",
            decimals: 1,
        };
        let t = scaled_ticks(0.0, 800_000.0, 4, &sc);
        assert_eq!(t[1].1, "200");
        assert_eq!(t[1].0, 200.0 * 1024.0);
    }

    #[test]
    fn plots_escape_names_and_have_marks() {
        let d = sample_named("<script>alert(1)</script>", "B&\"q\"");
        let dist = distribution(&d, "user_ns").unwrap();
        assert!(dist.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
        assert!(!dist.contains("<script>"));
        assert!(dist.contains("B&amp;&quot;q&quot;"));
        assert_eq!(dist.matches("<circle").count(), 16);
        assert_eq!(dist.matches("class=\"box\"").count(), 2);
        let ro = run_order(&d, "user_ns").unwrap();
        assert_eq!(ro.matches("<circle").count(), 16 + 2);
        assert!(distribution(&d, "no-such-metric").is_none());
        for svg in [&dist, &ro] {
            assert!(!svg.contains("NaN") && !svg.contains("inf"), "{svg}");
        }
    }

    #[test]
    fn thinning() {
        assert_eq!(thin(5, 10).collect::<Vec<_>>(), [0, 1, 2, 3, 4]);
        assert_eq!(thin(10, 5).collect::<Vec<_>>(), [0, 2, 4, 6, 8]);
        assert_eq!(thin(11, 5).count(), 4);
        assert!(thin(100_000, MAX_POINTS).count() <= MAX_POINTS);
        assert_eq!(thin(0, 5).count(), 0);
    }

    #[test]
    fn forest_plot_rows_and_zero_line() {
        let mut d = sample_named("A", "<i>B</i>");
        let a = d.analysis.take();
        assert!(forest(&d).is_none(), "no verdicts, no forest plot");
        d.analysis = a;
        let f = forest(&d).unwrap();
        assert_eq!(f.matches("class=\"ci\"").count(), 1);
        assert!(f.contains("stroke-dasharray"), "the no-change line");
        assert!(f.contains("&lt;i&gt;B&lt;/i&gt;</text>"), "{f}");
        assert!(f.contains("change of the mean against A, 95% CI"), "{f}");
        assert!(!f.contains("<i>"));
        assert!(f.contains('%'), "{f}");
    }

    #[test]
    fn equal_values_do_not_divide_by_zero() {
        let mut d = sample_named("A", "B").data;
        for r in &mut d.runs {
            r.metrics[0].value = 5e9;
        }
        let d = Report::new(d, super::super::View::Report);
        let s = distribution(&d, "user_ns").unwrap() + &run_order(&d, "user_ns").unwrap();
        assert!(!s.contains("NaN") && !s.contains("inf"));
    }

    #[test]
    fn micro_curve_has_log_axis_band_and_ceiling() {
        use super::{Marker, Series};
        assert_eq!(
            log2_ticks(0.9, 600.0)
                .iter()
                .map(|t| t.1.as_str())
                .collect::<Vec<_>>(),
            ["1", "2", "4", "8", "16", "32", "64", "128", "256", "512"]
        );
        assert!(log2_ticks(0.0, 4.0).is_empty());
        let se = vec![
            Series {
                label: "<b>madvise</b>".into(),
                points: (0..10)
                    .map(|i| {
                        let n = 2f64.powi(i);
                        (n, n * 90.0, n * 100.0, n * 110.0)
                    })
                    .collect(),
                dashed: false,
                colour: 0,
            },
            Series {
                label: "madvise (empty range)".into(),
                points: vec![(1.0, 5.0, 5.0, 5.0), (512.0, 9.0, 9.0, 9.0)],
                dashed: true,
                colour: 0,
            },
        ];
        let m = [Marker {
            x: 33.0,
            label: "implied ceiling 33 (madvise)".into(),
        }];
        let svg = micro_curve("tlb-flush calls", &se, &m, "cycles per call").unwrap();
        assert!(svg.contains("class=\"plot micro-curve tlb-flush calls\""));
        assert_eq!(svg.matches("class=\"band\"").count(), 1);
        assert_eq!(svg.matches("<polyline").count(), 2);
        assert_eq!(svg.matches("<circle").count(), 10);
        assert!(svg.contains("data-pages=\"33\""));
        assert!(svg.contains(">implied ceiling 33 (madvise)</text>"));
        assert!(svg.contains(">512</text>") && svg.contains(">1</text>"));
        assert!(svg.contains("&lt;b&gt;madvise&lt;/b&gt;") && !svg.contains("<b>"));
        assert!(!svg.contains("NaN") && !svg.contains("inf"));
        // A marker outside the plotted pages is left out rather than drawn off the plot.
        let far = [Marker {
            x: 4096.0,
            label: "x".into(),
        }];
        assert!(
            !micro_curve("c", &se, &far, "y")
                .unwrap()
                .contains("ceiling")
        );
        assert!(micro_curve("c", &[], &m, "y").is_none());
    }
}
