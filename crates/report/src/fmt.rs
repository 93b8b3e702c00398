//! Number and text formatting shared by the renderers: values in readable units with a scale
//! chosen once per metric, fixed-width cells, and word wrapping for the 72-column mail format.

/// A display scale for one metric: divide by `div`, append `suffix`.
#[derive(Debug, Clone, PartialEq)]
pub struct Scale {
    pub div: f64,
    pub suffix: &'static str,
    pub decimals: usize,
}

/// Pick a scale for values of `unit` around `magnitude` (e.g. the largest mean).
pub fn scale_for(unit: &str, magnitude: f64) -> Scale {
    let m = magnitude.abs();
    let s = |div, suffix, decimals| Scale {
        div,
        suffix,
        decimals,
    };
    match unit {
        "ns" => {
            if m >= 1e9 {
                s(1e9, "s", 3)
            } else if m >= 1e6 {
                s(1e6, "ms", 3)
            } else if m >= 1e3 {
                s(1e3, "us", 3)
            } else {
                s(1.0, "ns", 1)
            }
        }
        "KiB" => {
            if m >= 1024.0 * 1024.0 {
                s(1024.0 * 1024.0, "GiB", 3)
            } else if m >= 1024.0 {
                s(1024.0, "MiB", 1)
            } else {
                s(1.0, "KiB", 0)
            }
        }
        "count" => {
            if m >= 1e9 {
                s(1e9, "G", 3)
            } else if m >= 1e6 {
                s(1e6, "M", 3)
            } else if m >= 1e4 {
                s(1e3, "K", 2)
            } else {
                s(1.0, "", 1)
            }
        }
        "%" => s(1.0, "%", 2),
        _ => {
            let decimals = if m >= 1000.0 {
                1
            } else if m >= 1.0 {
                3
            } else {
                6
            };
            Scale {
                div: 1.0,
                suffix: "",
                decimals,
            }
        }
    }
}

impl Scale {
    /// The value in this scale, without the unit.
    pub fn num(&self, v: f64) -> String {
        if !v.is_finite() {
            return "n/a".to_string();
        }
        format!("{:.*}", self.decimals, v / self.div)
    }

    /// The value with its unit ("880.438 s", "58.367 M").
    pub fn show(&self, v: f64, unit: &str) -> String {
        let n = self.num(v);
        match (self.suffix, unit) {
            ("", "count") | ("", "") => n,
            ("", other) => format!("{n} {other}"),
            (s, _) => format!("{n} {s}"),
        }
    }

    /// The unit as shown in table headers.
    pub fn unit_label(&self, unit: &str) -> String {
        match (self.suffix, unit) {
            ("", "count") => String::new(),
            ("", other) => other.to_string(),
            (s, _) => s.to_string(),
        }
    }
}

/// Scale for metric `name` in `data`, from the largest absolute mean over variants.
pub fn metric_scale(data: &super::Report, name: &str) -> Scale {
    let unit = data.metric(name).map(|m| m.unit.as_str()).unwrap_or("");
    let mag = data
        .describe
        .iter()
        .filter(|d| d.metric == name)
        .map(|d| d.d.mean.abs())
        .fold(0.0, f64::max);
    scale_for(unit, mag)
}

/// perf stat's "+- 0.04%" figure, or "" when unknown.
pub fn pm(p: Option<f64>) -> String {
    match p {
        Some(p) if p.is_finite() => format!("{p:.2}%"),
        _ => String::new(),
    }
}

/// Signed change of `b` relative to `a` in percent ("+0.58%"), or "" when `a` is zero.
pub fn change_pct(a: f64, b: f64) -> String {
    if a == 0.0 || !a.is_finite() || !b.is_finite() {
        return String::new();
    }
    let c = (b / a - 1.0) * 100.0;
    let c = if c.abs() < 0.005 { 0.0 } else { c };
    format!("{c:+.2}%")
}

/// Cut `s` to at most `width` characters, marking the cut with "~".
/// A wall-clock duration of `s` seconds for people: "12.3 s", "2.1 min", "2 h 05 min".
pub fn duration(s: f64) -> String {
    if !s.is_finite() {
        "n/a".to_string()
    } else if s >= 3600.0 {
        let m = (s / 60.0).round() as u64;
        format!("{} h {:02} min", m / 60, m % 60)
    } else if s >= 60.0 {
        format!("{:.1} min", s / 60.0)
    } else {
        format!("{s:.1} s")
    }
}

pub use abperf_model::number_text::thousands;

pub fn truncate(s: &str, width: usize) -> String {
    if s.chars().count() <= width {
        return s.to_string();
    }
    let mut t: String = s.chars().take(width.saturating_sub(1)).collect();
    t.push('~');
    t
}

/// Replace control characters (newlines, tabs, escapes) so user text cannot break a layout.
pub fn one_line(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// Wrap `text` at `width` columns; continuation lines start with `indent`. Words longer than
/// the width are split, so no line ever exceeds it.
pub fn wrap(text: &str, width: usize, indent: &str) -> Vec<String> {
    let text = one_line(text);
    let mut lines = Vec::new();
    let mut cur = String::new();
    for word in text.split_whitespace() {
        let mut word: String = word.to_string();
        loop {
            let prefix_len = if lines.is_empty() {
                0
            } else {
                indent.chars().count()
            };
            let cur_len = cur.chars().count();
            let used = if cur.is_empty() {
                prefix_len
            } else {
                prefix_len + cur_len + 1
            };
            let room = width.saturating_sub(used);
            let wlen = word.chars().count();
            if wlen <= room {
                if !cur.is_empty() {
                    cur.push(' ');
                }
                cur.push_str(&word);
                break;
            }
            if !cur.is_empty() {
                lines.push(std::mem::take(&mut cur));
                continue;
            }
            // A word longer than a whole line: split it (at least one character per line).
            let room = room.max(1);
            let head: String = word.chars().take(room).collect();
            word = word.chars().skip(room).collect();
            lines.push(head);
        }
    }
    if !cur.is_empty() || lines.is_empty() {
        lines.push(cur);
    }
    lines
        .into_iter()
        .enumerate()
        .map(|(i, l)| if i == 0 { l } else { format!("{indent}{l}") })
        .collect()
}

/// "99% CI" for intervals that are all at 99%; "CI" when there are none or (never by
/// construction) intervals of different levels. A heading or method line over many intervals
/// takes its level from them.
pub fn ci_words(levels: impl Iterator<Item = f64>) -> String {
    let labels: std::collections::BTreeSet<String> =
        levels.map(abperf_stats::verdict::level_label).collect();
    match labels.iter().next() {
        Some(l) if labels.len() == 1 => format!("{l} CI"),
        _ => "CI".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(duration(12.34), "12.3 s");
        assert_eq!(duration(125.0), "2.1 min");
        assert_eq!(duration(7500.0), "2 h 05 min");
    }

    #[test]
    fn scales() {
        let s = scale_for("ns", 880.4375e9);
        assert_eq!(s.show(880.4375e9, "ns"), "880.438 s");
        assert_eq!(scale_for("ns", 1.5e6).show(1.5e6, "ns"), "1.500 ms");
        assert_eq!(
            scale_for("KiB", 798736.0).show(798736.0, "KiB"),
            "780.0 MiB"
        );
        assert_eq!(
            scale_for("count", 58366597.0).show(58366597.0, "count"),
            "58.367 M"
        );
        assert_eq!(scale_for("count", 12.0).show(12.0, "count"), "12.0");
        assert_eq!(scale_for("J", 3.0).show(3.0, "J"), "3.000 J");
        assert_eq!(scale_for("ns", 1.0).num(f64::NAN), "n/a");
    }

    #[test]
    fn wrapping_never_exceeds_width() {
        let long = "y is 0.58% faster than n (95% CI 0.55%..0.61%, p<0.0001, n=12+12, Welch) \
                    and a_very_long_token_without_spaces_that_is_much_longer_than_the_line_width_allows_for";
        for l in wrap(long, 72, "  ") {
            assert!(l.chars().count() <= 72, "{l}");
        }
        assert_eq!(wrap("a b", 72, "  "), ["a b"]);
        assert_eq!(wrap("", 72, "  "), [""]);
        assert_eq!(wrap("aaaa bbbb", 6, "  "), ["aaaa", "  bbbb"]);
        assert_eq!(wrap("x\ny", 72, ""), ["x y"]);
    }

    #[test]
    fn small_helpers() {
        assert_eq!(change_pct(880.44, 875.35), "-0.58%");
        assert_eq!(change_pct(0.0, 1.0), "");
        assert_eq!(truncate("abcdef", 4), "abc~");
        assert_eq!(truncate("abc", 4), "abc");
        assert_eq!(pm(Some(0.041)), "0.04%");
        assert_eq!(pm(None), "");
    }
}
