//! The differential of two variants' profiles under a verdict: in text ("B spends +4.1% of its
//! samples in flush_tlb_mm_range (95% CI +3.2..+5.0%)") and as LKP-like mail rows
//! (`perf-profile.self.SYMBOL`, A's share, the change, B's share). Shares are percent of
//! samples, changes percentage points of samples (docs/profile.md#reading-the-output).

use abperf_model::escape::control;
use abperf_model::profile::ShareKind;
use abperf_stats::profile_diff::{ProfileDiff, SymbolDiff};
use std::fmt::Write;

/// How many named symbols a text block lists (the JSON has them all).
const SHOWN: usize = 10;

fn pct(x: f64) -> String {
    format!("{:+.1}%", 100.0 * x)
}

/// An adjusted p-value: `=0.012`, or `<0.001`.
fn q(q: f64) -> String {
    if q < 0.001 {
        "<0.001".to_string()
    } else {
        format!("={q:.3}")
    }
}

fn sentence(s: &SymbolDiff, b: &str, kind: ShareKind, level: f64) -> String {
    let place = match kind {
        ShareKind::SelfShare => "in",
        ShareKind::Inclusive => "under",
    };
    format!(
        "{} spends {} of its samples {place} {} ({:.0}% CI {}..{})",
        control(b),
        pct(s.diff),
        control(&s.symbol),
        100.0 * level,
        pct(s.low),
        pct(s.high)
    )
}

/// The text block: a heading naming the event, the runs and the correction, then one sentence
/// per named symbol (at most [`SHOWN`]), or a line saying no symbol's share changed.
pub fn text(d: &ProfileDiff, event: &str, a: &str, b: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Profile ({} share of {} samples; {} profiled runs of {}, {} of {}; BH {}% over {} symbols):",
        d.kind.name(),
        control(event),
        d.runs_a,
        control(a),
        d.runs_b,
        control(b),
        100.0 * d.fdr,
        d.symbols.len()
    );
    let named: Vec<&SymbolDiff> = d.named().collect();
    if named.is_empty() {
        out.push_str("  no symbol's share changed\n");
    }
    for s in named.iter().take(SHOWN) {
        let _ = writeln!(out, "  {} (q{})", sentence(s, b, d.kind, d.level), q(s.q));
    }
    if named.len() > SHOWN {
        let _ = writeln!(out, "  ... and {} more symbols", named.len() - SHOWN);
    }
    out
}

/// LKP-like rows of the named symbols: A's share, the change and B's share in percent of
/// samples, the interval, and `perf-profile.self.SYMBOL` (`children` for inclusive shares).
pub fn mail_rows(d: &ProfileDiff) -> String {
    let kind = match d.kind {
        ShareKind::SelfShare => "self",
        ShareKind::Inclusive => "children",
    };
    let mut out = String::new();
    for s in d.named() {
        let _ = writeln!(
            out,
            "{:>10.2} {:>+10.2} {:>10.2}  ({:+.2}..{:+.2})  perf-profile.{kind}.{}",
            100.0 * s.share_a,
            100.0 * s.diff,
            100.0 * s.share_b,
            100.0 * s.low,
            100.0 * s.high,
            control(&s.symbol)
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn diff(named: bool) -> ProfileDiff {
        ProfileDiff {
            kind: ShareKind::SelfShare,
            level: 0.95,
            fdr: 0.05,
            resamples: 2000,
            runs_a: 5,
            runs_b: 5,
            symbols: vec![SymbolDiff {
                symbol: "flush_tlb_mm_range\x1b[2J".into(),
                share_a: 0.123,
                share_b: 0.164,
                diff: 0.041,
                low: 0.032,
                high: 0.050,
                p: 0.0001,
                q: 0.0012,
                named,
            }],
        }
    }

    #[test]
    fn a_named_symbol_reads_as_a_sentence() {
        let t = text(&diff(true), "cpu-clock", "A", "B");
        assert_eq!(
            t,
            "Profile (self share of cpu-clock samples; 5 profiled runs of A, 5 of B; BH 5% over 1 symbols):\n  \
             B spends +4.1% of its samples in flush_tlb_mm_range\\e[2J (95% CI +3.2%..+5.0%) (q=0.001)\n"
        );
        assert_eq!(
            mail_rows(&diff(true)),
            "     12.30      +4.10      16.40  (+3.20..+5.00)  perf-profile.self.flush_tlb_mm_range\\e[2J\n"
        );
    }

    #[test]
    fn nothing_named_says_so() {
        let t = text(&diff(false), "cpu-clock", "A", "B");
        assert!(t.ends_with("  no symbol's share changed\n"), "{t}");
        assert!(mail_rows(&diff(false)).is_empty());
    }
}
