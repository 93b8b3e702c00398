//! The differential flame graph as an inline SVG (no scripts, like [`super::svg`]): B's frames,
//! roots at the bottom, each as wide as B's mean share of samples with it on the stack; red
//! where that share grew from A to B, blue where it shrank (deeper for a larger change), grey
//! where the interval covers 0 or the frame was not tested. Names are cut to the frame's width;
//! each frame's `<title>` (a tooltip, not a script) gives its numbers.

use super::flame::{Flame, Frame};
use super::svg::esc;
use std::fmt::Write;

/// Frames narrower than this fraction of B's samples are not drawn.
pub const MIN_WIDTH: f64 = 0.002;

const W: f64 = 760.0;
const ROW: f64 = 17.0;
/// Approximate width of one character of the 11 px label font.
const CHAR: f64 = 6.6;

fn pct(x: f64) -> f64 {
    100.0 * x
}

/// The fill of `f`: red or blue, deeper for a larger change relative to `max` (the largest
/// |change| among the coloured frames), grey when not shown to change.
fn fill(f: &Frame, max: f64) -> String {
    match &f.change {
        Some(c) if c.low > 0.0 || c.high < 0.0 => {
            let t = (c.diff.abs() / max.max(1e-12)).clamp(0.0, 1.0);
            // From a pale tint to the bar chart's red (#D55E00) or blue (#0072B2).
            let (r, g, b) = if c.diff > 0.0 {
                (213.0, 94.0, 0.0)
            } else {
                (0.0, 114.0, 178.0)
            };
            let mix = |v: f64| (255.0 - (255.0 - v) * (0.3 + 0.7 * t)).round() as u8;
            format!("#{:02X}{:02X}{:02X}", mix(r), mix(g), mix(b))
        }
        _ => "#D0D0D0".to_string(),
    }
}

/// The tooltip of `f`.
fn tip(f: &Frame, a: &str, b: &str) -> String {
    let what = match &f.change {
        Some(c) => format!(
            "{:+.2} points (95% CI {:+.2}..{:+.2}, q={:.3})",
            pct(c.diff),
            pct(c.low),
            pct(c.high),
            c.q
        ),
        None => "change not tested".to_string(),
    };
    format!(
        "{}\n{a} {:.2}% -> {b} {:.2}% of samples: {what}\n{}",
        f.name,
        pct(f.share_a),
        pct(f.share_b),
        f.path.replace(';', " > ")
    )
}

/// `name` cut to `chars` characters (`..` at the end), empty when fewer than 3 fit.
fn clipped(name: &str, chars: usize) -> String {
    if chars < 3 {
        return String::new();
    }
    if name.chars().count() <= chars {
        return name.to_string();
    }
    let mut s: String = name.chars().take(chars - 2).collect();
    s.push_str("..");
    s
}

/// The flame graph of `flame` (variant `b` against baseline `a`).
pub fn graph(flame: &Flame, event: &str, a: &str, b: &str) -> String {
    let depth = flame.frames.iter().map(|f| f.depth + 1).max().unwrap_or(0);
    if depth == 0 {
        return String::new();
    }
    let (left, top) = (10.0, 10.0);
    let h = top + ROW * depth as f64 + 30.0;
    let span = W - 2.0 * left;
    let max = flame
        .frames
        .iter()
        .filter_map(|f| f.change.as_ref())
        .filter(|c| c.low > 0.0 || c.high < 0.0)
        .map(|c| c.diff.abs())
        .fold(0.0, f64::max);
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="plot flame-diff" width="{W}" height="{h}" viewBox="0 0 {W} {h}" role="img" aria-label="differential flame graph of {} samples, {} against {}">"#,
        esc(event),
        esc(b),
        esc(a)
    );
    for f in &flame.frames {
        let x = left + f.x * span;
        let w = f.width * span;
        let y = top + ROW * (depth - 1 - f.depth) as f64;
        let label = clipped(&f.name, ((w - 4.0) / CHAR).floor().max(0.0) as usize);
        let _ = write!(
            s,
            r##"<g class="frame"><title>{}</title><rect x="{x:.2}" y="{y:.1}" width="{:.2}" height="{:.1}" fill="{}" stroke="#FFF" stroke-width="0.5"/>"##,
            esc(&tip(f, a, b)),
            w.max(0.1),
            ROW - 1.0,
            fill(f, max)
        );
        if !label.is_empty() {
            let _ = write!(
                s,
                r##"<text x="{:.2}" y="{:.1}" font-size="11" fill="#000">{}</text>"##,
                x + 2.0,
                y + ROW - 5.0,
                esc(&label)
            );
        }
        s.push_str("</g>");
    }
    let _ = write!(
        s,
        r##"<text x="{:.1}" y="{:.1}" font-size="11" text-anchor="middle" fill="#333">width: {}'s share of {} samples; red: larger in {}, blue: smaller, grey: interval covers 0 or not tested</text>"##,
        W / 2.0,
        h - 8.0,
        esc(b),
        esc(event),
        esc(b)
    );
    s.push_str("</svg>\n");
    let mut note = format!(
        "Differential flame graph: {}'s frames (callers below callees), each as wide as {}'s mean share of samples with it on the stack, coloured by the change of that share from {} ({:.0}% bootstrap interval over runs, BH over the frames drawn); frames under {:.1}% not drawn",
        esc(b),
        esc(b),
        esc(a),
        95.0,
        pct(MIN_WIDTH)
    );
    if flame.other_b > 0.0 {
        let _ = write!(
            note,
            "; {:.1}% of {}'s samples are in stacks not kept",
            pct(flame.other_b),
            esc(b)
        );
    }
    if flame.cut {
        let _ = write!(
            note,
            "; stacks cut at {} frames from the root",
            super::flame::MAX_DEPTH
        );
    }
    if let Some(why) = &flame.untested {
        let _ = write!(note, "; no frame tested: {}", esc(why));
    }
    format!("<p class=\"note\">{note}.</p>\n{s}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use abperf_stats::profile_diff::SymbolDiff;

    fn frame(path: &str, depth: usize, x: f64, width: f64, diff: Option<f64>) -> Frame {
        Frame {
            path: path.into(),
            name: path.rsplit(';').next().unwrap().into(),
            depth,
            x,
            width,
            share_a: width,
            share_b: width,
            change: diff.map(|d| SymbolDiff {
                symbol: path.into(),
                share_a: width - d,
                share_b: width,
                diff: d,
                low: d - 0.01,
                high: d + 0.01,
                p: 0.01,
                q: 0.02,
                named: true,
            }),
        }
    }

    #[test]
    fn frames_are_coloured_clipped_and_escaped() {
        let flame = Flame {
            frames: vec![
                frame("main", 0, 0.0, 1.0, None),
                frame("main;hot<x>", 1, 0.0, 0.6, Some(0.2)),
                frame("main;cold", 1, 0.6, 0.39, Some(-0.1)),
                frame(
                    "main;a_very_long_name_that_cannot_fit",
                    1,
                    0.99,
                    0.01,
                    Some(0.005),
                ),
            ],
            other_b: 0.0,
            untested: None,
            cut: false,
        };
        let s = graph(&flame, "cpu-clock", "A", "B");
        assert_eq!(s.matches("<g class=\"frame\">").count(), 4);
        assert_eq!(s.matches("<title>").count(), 4);
        assert!(s.contains("#D55E00"), "the largest rise at full red: {s}");
        assert!(s.contains("fill=\"#D0D0D0\""), "main is grey");
        assert!(s.contains("hot&lt;x&gt;") && !s.contains("hot<x>"));
        // The 7.6 px frame has no label, but its tooltip names it.
        assert!(!s.contains("fill=\"#000\">a_very"));
        assert!(s.contains("fill=\"#000\">hot&lt;x&gt;<"), "{s}");
        assert!(s.contains("<title>a_very_long_name_that_cannot_fit\n"));
        assert!(!s.contains("<script"));
        // A change whose interval covers 0 is grey.
        let mut f = frame("main", 0, 0.0, 1.0, Some(0.005));
        assert_eq!(fill(&f, 0.1), "#D0D0D0");
        f.change.as_mut().unwrap().low = 0.001;
        assert_ne!(fill(&f, 0.1), "#D0D0D0");
        assert_eq!(clipped("abcdef", 5), "abc..");
        assert_eq!(clipped("abc", 3), "abc");
        assert_eq!(clipped("abcdef", 2), "");
    }
}
