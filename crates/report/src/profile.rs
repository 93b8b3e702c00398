//! The differential of two variants' profiles under a verdict: in text ("B spends +4.1% of its
//! samples in flush_tlb_mm_range (95% CI +3.2..+5.0%)") and as LKP-like mail rows
//! (`perf-profile.self.SYMBOL`, A's share, the change, B's share). Shares are percent of
//! samples, changes percentage points of samples (docs/profile.md#reading-the-output).

use super::Report;
use super::section::Section;
use abperf_model::escape::control;
use abperf_model::profile::{ProfiledRun, ShareKind};
use abperf_stats::profile_diff::{ProfileDiff, SymbolDiff};
use serde::Serialize;
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
/// samples, the interval, and `perf-profile.self.EVENT-pp.SYMBOL` (`children` for inclusive
/// shares; LKP's rows say `cycles-pp`, these name the event sampled). A row longer than a mail
/// line puts its name on the next line (names are never cut: they are what a reader greps).
pub fn mail_rows(d: &ProfileDiff, event: &str) -> String {
    let kind = match d.kind {
        ShareKind::SelfShare => "self",
        ShareKind::Inclusive => "children",
    };
    let mut out = String::new();
    for s in d.named() {
        let nums = format!(
            "{:>6.2} {:>+6.2} {:>6.2} ({:+.2}..{:+.2})",
            100.0 * s.share_a,
            100.0 * s.diff,
            100.0 * s.share_b,
            100.0 * s.low,
            100.0 * s.high,
        );
        let name = format!(
            "perf-profile.{kind}.{}-pp.{}",
            control(event),
            control(&s.symbol)
        );
        if nums.len() + 2 + name.len() <= super::mail::WIDTH {
            let _ = writeln!(out, "{nums}  {name}");
        } else {
            let _ = writeln!(out, "{nums}\n    {name}");
        }
    }
    out
}

/// One variant's differential against the baseline, or why there is none.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VariantDiff {
    pub baseline: String,
    pub variant: String,
    /// The differential (absent when it could not be made).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub differential: Option<ProfileDiff>,
    /// Why there is no differential (too few profiled runs, ...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// An experiment's profiled runs (`run --profile`, `import --format perf-script`) and each
/// variant's differential against the baseline (docs/profile.md).
#[derive(Debug, Clone, PartialEq)]
pub struct ProfileSection {
    pub runs: Vec<ProfiledRun>,
    pub diffs: Vec<VariantDiff>,
}

impl ProfileSection {
    /// The event sampled (the first run's: every run of an experiment samples one).
    pub fn event(&self) -> &str {
        self.runs
            .first()
            .map(|r| r.profile.event.as_str())
            .unwrap_or("")
    }

    /// The differential flame graph of `v` (empty unless both variants' runs have stacks).
    fn flame_graph(&self, r: &Report, v: &VariantDiff) -> String {
        let position = |name: &str| r.data.variants.iter().position(|x| x.name == name);
        let (Some(a), Some(b)) = (position(&v.baseline), position(&v.variant)) else {
            return String::new();
        };
        let of = |i: usize| -> Vec<&ProfiledRun> {
            self.runs.iter().filter(|x| x.variant == i).collect()
        };
        match super::flame::merge(&of(a), &of(b), super::flame_svg::MIN_WIDTH) {
            Some(f) => super::flame_svg::graph(&f, self.event(), &v.baseline, &v.variant),
            None => String::new(),
        }
    }

    /// How many profiled runs there are and what they cost: their time under perf (with the
    /// read-back) in all and per run, against the timed runs' mean wall time; imported
    /// recordings have no cost recorded.
    pub fn cost_line(&self, r: &Report) -> String {
        let n = self.runs.len();
        let event = control(self.event());
        let wall: i64 = self.runs.iter().map(|r| r.wall_ns).sum();
        if wall == 0 {
            return format!("{n} profiled runs of {event} (imported; their cost is not recorded)");
        }
        let each = wall as f64 / n as f64 / 1e9;
        let timed: Vec<f64> = (0..r.data.variants.len())
            .flat_map(|v| r.data.values(v, "wall_ns"))
            .collect();
        let against = if timed.is_empty() {
            String::new()
        } else {
            let mean = timed.iter().sum::<f64>() / timed.len() as f64 / 1e9;
            format!(" against {mean:.2} s per timed run")
        };
        format!(
            "{n} profiled runs of {event} (not timed; {:.1} s under perf in all, {each:.2} s each{against})",
            wall as f64 / 1e9,
        )
    }
}

impl Section for ProfileSection {
    fn text(&self, r: &Report) -> String {
        let mut out = format!("\n{}\n", self.cost_line(r));
        let event = self.event();
        for v in &self.diffs {
            match (&v.differential, &v.error) {
                (Some(d), _) => out.push_str(&text(d, event, &v.baseline, &v.variant)),
                (None, e) => {
                    let _ = writeln!(
                        out,
                        "Profile of {} against {}: {}",
                        control(&v.variant),
                        control(&v.baseline),
                        control(e.as_deref().unwrap_or("not made"))
                    );
                }
            }
        }
        out
    }

    fn mail(&self, r: &Report) -> Option<String> {
        let mut out = String::new();
        for l in super::fmt::wrap(&self.cost_line(r), super::mail::WIDTH, "  ") {
            let _ = writeln!(out, "{l}");
        }
        for v in &self.diffs {
            let Some(d) = &v.differential else { continue };
            let heading = format!(
                "{} against {} ({} share, % of samples; BH {}%, {} symbols):",
                control(&v.variant),
                control(&v.baseline),
                d.kind.name(),
                100.0 * d.fdr,
                d.symbols.len()
            );
            out.push('\n');
            for l in super::fmt::wrap(&heading, super::mail::WIDTH, "  ") {
                let _ = writeln!(out, "{l}");
            }
            let rows = mail_rows(d, self.event());
            if rows.is_empty() {
                out.push_str("  no symbol's share changed\n");
            } else {
                let _ = writeln!(
                    out,
                    "{:>6} {:>6} {:>6} ({:.0}% CI)",
                    "base",
                    "change",
                    control(&v.variant).chars().take(6).collect::<String>(),
                    100.0 * d.level
                );
                out.push_str(&rows);
            }
        }
        Some(out)
    }

    fn json(&self, r: &Report) -> Option<anyhow::Result<serde_json::Value>> {
        let wall: i64 = self.runs.iter().map(|r| r.wall_ns).sum();
        let mut v = serde_json::json!({
            "event": self.event(),
            "profiled_runs": self.runs.len(),
            "wall_ns": wall,
            "differentials": self.diffs,
        });
        // The runs' shares are raw data: in `export` (and wherever runs are listed).
        if r.include_runs {
            v["runs"] = match serde_json::to_value(&self.runs) {
                Ok(x) => x,
                Err(e) => return Some(Err(e.into())),
            };
            // The call stacks are drawn in the HTML report only (the export's shape is kept).
            if let Some(runs) = v["runs"].as_array_mut() {
                runs.iter_mut()
                    .filter_map(serde_json::Value::as_object_mut)
                    .for_each(|o| {
                        o.remove("stacks");
                    });
            }
        }
        Some(Ok(v))
    }

    fn html(&self, r: &Report) -> Option<String> {
        let mut out = format!(
            "<h2>Profile</h2>\n<p class=\"note\">{}</p>\n",
            super::svg::esc(&self.cost_line(r))
        );
        for v in &self.diffs {
            match &v.differential {
                Some(d) => {
                    out.push_str(&super::profile_svg::differential(
                        d,
                        self.event(),
                        &v.baseline,
                        &v.variant,
                    ));
                    out.push_str(&self.flame_graph(r, v));
                }
                None => {
                    let _ = writeln!(
                        out,
                        "<p class=\"note\">Profile of {} against {}: {}</p>",
                        super::svg::esc(&v.variant),
                        super::svg::esc(&v.baseline),
                        super::svg::esc(v.error.as_deref().unwrap_or("not made"))
                    );
                }
            }
        }
        Some(out)
    }
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
            mail_rows(&diff(true), "cpu-clock"),
            " 12.30  +4.10  16.40 (+3.20..+5.00)\n    perf-profile.self.cpu-clock-pp.flush_tlb_mm_range\\e[2J\n"
        );
        let mut short = diff(true);
        short.symbols[0].symbol = "hot".into();
        assert_eq!(
            mail_rows(&short, "cycles"),
            " 12.30  +4.10  16.40 (+3.20..+5.00)  perf-profile.self.cycles-pp.hot\n"
        );
    }

    #[test]
    fn nothing_named_says_so() {
        let t = text(&diff(false), "cpu-clock", "A", "B");
        assert!(t.ends_with("  no symbol's share changed\n"), "{t}");
        assert!(mail_rows(&diff(false), "cpu-clock").is_empty());
    }
}
