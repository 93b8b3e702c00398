//! The summary paragraph of a family analysis (`compare --pairs all --by ... --test
//! mean,variability`), in the register of seed 001's reply: per family (workload), which
//! variant was fastest and by how much, which differences in run-to-run variation are
//! significant, which pairs cannot be told apart and why, then a conclusion listing the decisive
//! results. Every sentence is made from the comparisons' verdicts and the figures they carry
//! (the verdict's own wording through [`Evidence::line`], the corrected p-values, the SD ratio
//! and its interval, the CVs): nothing is re-tested here, so the paragraph claims nothing the
//! statistics did not.

use super::fmt::one_line;
use super::labels::in_family as short_name;
use abperf_stats::analysis::{Analysis, Pairs, Test, by_params};
use abperf_stats::compare::Comparison;
use abperf_stats::verdict::{
    Evidence, Verdict, fmt_p, fmt_pct, fmt_signed_pct, fmt_times, level_label,
};

/// One block of the summary: a heading ("pattern=seq op=read:") and its sentences.
#[derive(Debug, Clone, PartialEq)]
pub struct Block {
    pub heading: String,
    pub sentences: Vec<String>,
    /// The sentences are a list (the conclusion), one per line, rather than one paragraph.
    pub list: bool,
}

/// The summary of `a`, one block per family and metric, then the conclusion; `None` for a
/// plain "each variant against the baseline, mean only" analysis (its verdict lines say it all).
pub fn summary(a: &Analysis) -> Option<Vec<Block>> {
    let variability = a.tests.contains(&Test::Variability);
    if a.comparisons.is_empty() || (a.pairs == Pairs::Baseline && a.by.is_none() && !variability) {
        return None;
    }
    let mut blocks = Vec::new();
    let mut groups: Vec<Group> = Vec::new();
    for c in &a.comparisons {
        match groups
            .iter_mut()
            .find(|g| g.family == c.family && g.metric == c.metric)
        {
            Some(g) => g.comps.push(c),
            None => groups.push(Group {
                family: c.family.clone(),
                metric: c.metric.clone(),
                comps: vec![c],
            }),
        }
    }
    for g in &groups {
        blocks.push(Block {
            heading: g.heading(a),
            sentences: g.sentences(a),
            list: false,
        });
    }
    blocks.push(conclusion(a, &groups));
    Some(blocks)
}

/// The comparisons of one family on one metric.
struct Group<'a> {
    family: Option<String>,
    metric: String,
    comps: Vec<&'a Comparison>,
}

/// A pair's figures in words, the names shortened to what tells them apart inside the family.
struct Said<'a> {
    c: &'a Comparison,
    variant: String,
    baseline: String,
    /// What the verdicts count: "run", "boot", "host" ([`Analysis::unit`]).
    unit: &'a str,
}

impl<'a> Said<'a> {
    fn new(a: &'a Analysis, c: &'a Comparison) -> Said<'a> {
        Said {
            c,
            unit: &a.unit,
            variant: short_name(a, &c.variant, c),
            baseline: short_name(a, &c.baseline, c),
        }
    }

    /// The verdict's own sentence (stats' wording) with the short names, without its run
    /// counts and method ("B is 8.00% faster than A (95% CI ..., p=0.0012 Holm m=36)").
    fn verdict(&self) -> String {
        let ev = Evidence {
            variant: self.variant.clone(),
            baseline: self.baseline.clone(),
            ..self.c.evidence.clone()
        };
        let line = ev.line(self.c.verdict);
        match line.rfind(", n=") {
            Some(i) if line.ends_with(')') => format!("{})", &line[..i]),
            _ => line,
        }
    }

    /// The variant that came out better in a FASTER/SLOWER verdict, and the other one.
    fn winner(&self) -> Option<(&str, &str)> {
        match self.c.verdict {
            Verdict::Faster => Some((&self.variant, &self.baseline)),
            Verdict::Slower => Some((&self.baseline, &self.variant)),
            _ => None,
        }
    }

    /// A decisive mean result without its size: "noflush was faster than flush".
    fn kind(&self) -> Option<String> {
        let verb = match self.c.verdict {
            Verdict::Faster if self.c.evidence.count => "fewer",
            Verdict::Slower if self.c.evidence.count => "more",
            Verdict::Faster => "faster",
            Verdict::Slower => "slower",
            _ => return None,
        };
        Some(if self.c.evidence.count {
            format!(
                "{} had {verb} {} than {}",
                self.variant,
                one_line(&self.c.metric),
                self.baseline
            )
        } else {
            format!("{} was {verb} than {}", self.variant, self.baseline)
        })
    }

    /// The size of the verdict's change as its sentence states it: in percent (|ratio - 1|),
    /// or as a factor for changes of 2x and more.
    fn size(&self) -> Size {
        let r = self.c.evidence.ratio;
        if r > 0.5 && r < 2.0 {
            Size::Pct((r - 1.0).abs() * 100.0)
        } else {
            Size::Times(sd_factor(r))
        }
    }

    /// A significant difference in run-to-run variation without its size.
    fn variation_kind(&self, alpha: f64) -> Option<String> {
        self.c.p_variability_adjusted.filter(|p| *p < alpha)?;
        let more = if self.c.sd_ratio? >= 1.0 {
            "more"
        } else {
            "less"
        };
        Some(format!(
            "{} had {more} run-to-run variation than {}",
            self.variant, self.baseline
        ))
    }

    /// A significant difference in run-to-run variation, in words.
    fn variation(&self, alpha: f64) -> Option<String> {
        let p = self.c.p_variability_adjusted.filter(|p| *p < alpha)?;
        let r = self.c.sd_ratio?;
        let (b, a) = (&self.variant, &self.baseline);
        let how = if r >= 1.0 {
            format!(
                "{b} had {} more run-to-run variation than {a}",
                fmt_times(r)
            )
        } else {
            format!(
                "{b} had {} less run-to-run variation than {a}",
                fmt_times(1.0 / r)
            )
        };
        let d = &self.c.details;
        let cv = match (d.variant.cv, d.baseline.cv) {
            (Some(x), Some(y)) => {
                format!("CV {} against {}; ", fmt_pct(100.0 * x), fmt_pct(100.0 * y))
            }
            _ => String::new(),
        };
        let ci = self
            .c
            .sd_ratio_ci
            .zip(self.c.sd_ratio_level())
            .map(|([l, h], level)| format!(", {} BCa CI {l:.2}..{h:.2}", level_label(level)))
            .unwrap_or_default();
        Some(format!(
            "{how} ({cv}SD ratio {r:.2}{ci}, Brown-Forsythe {}{})",
            fmt_p(p),
            correction(&self.c.evidence)
        ))
    }

    /// A pair that could not be told apart, why, and the pair with its figures.
    fn indistinguishable(&self) -> Option<(Why, String)> {
        let e = &self.c.evidence;
        let (b, a) = (&self.variant, &self.baseline);
        let change = fmt_signed_pct((e.ratio - 1.0) * 100.0);
        let ci = |x: Option<(f64, f64)>, level: &str| {
            x.map(|(l, h)| {
                format!(
                    ", {level} CI {}..{}",
                    fmt_signed_pct((l - 1.0) * 100.0),
                    fmt_signed_pct((h - 1.0) * 100.0)
                )
            })
            .unwrap_or_default()
        };
        let p =
            e.p.map(|p| format!(", {}{}", fmt_p(p), correction(e)))
                .unwrap_or_default();
        match self.c.verdict {
            Verdict::NoDifference => Some((
                Why::Equivalent,
                format!(
                    "{b} and {a} ({change}{})",
                    ci(e.ci90, &e.equivalence_label())
                ),
            )),
            Verdict::Inconclusive => {
                let more = match e.runs_needed_observed {
                    Some(n) if ((e.ratio - 1.0) * 100.0).abs() >= 0.005 => {
                        format!(
                            "; about {n} {}s per variant would resolve a change this size",
                            self.unit
                        )
                    }
                    _ => String::new(),
                };
                // An uncorrected 1 - alpha CI that excludes no change beside a corrected p above alpha:
                // the correction, not the precision, kept it from being called.
                let why = match e.ci95 {
                    Some((l, h)) if l > 1.0 || h < 1.0 => Why::Correction,
                    _ => Why::Precision,
                };
                Some((
                    why,
                    format!(
                        "{b} and {a} ({change}{}{p}{more})",
                        ci(e.ci95, &e.ci_label())
                    ),
                ))
            }
            _ => None,
        }
    }
}

/// Why a pair could not be told apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Why {
    /// Inconclusive: the interval is too wide.
    Precision,
    /// Inconclusive although the uncorrected 1 - alpha CI excludes no change: the corrected p is not
    /// below alpha.
    Correction,
    /// NO DIFFERENCE: the 1 - 2 alpha CI lies within the margin.
    Equivalent,
}

/// " Holm m=36" (empty without a correction).
fn correction(e: &Evidence) -> String {
    if e.correction.is_empty() {
        String::new()
    } else {
        format!(" {}", e.correction)
    }
}

impl Group<'_> {
    /// "pattern=seq op=read" (with the metric when several are judged), or the metric alone
    /// without --by.
    fn heading(&self, a: &Analysis) -> String {
        let family = match (&a.by, &self.family) {
            (Some(by), Some(f)) => {
                let params = by_params(by);
                let values: Vec<&str> = if params.len() == 1 {
                    vec![f.as_str()]
                } else {
                    f.split(',').collect()
                };
                let words: Vec<String> = params
                    .iter()
                    .zip(values)
                    .map(|(p, v)| format!("{p}={v}"))
                    .collect();
                Some(one_line(&words.join(" ")))
            }
            _ => None,
        };
        match (family, a.metrics.len() > 1) {
            (Some(f), true) => format!("{f}, {}", one_line(&self.metric)),
            (Some(f), false) => f,
            (None, _) => one_line(&self.metric),
        }
    }

    fn said<'b>(&'b self, a: &'b Analysis) -> Vec<Said<'b>> {
        self.comps.iter().map(|c| Said::new(a, c)).collect()
    }

    /// The variant significantly better than every other variant of the family, if any.
    fn fastest(&self, said: &[Said]) -> Option<String> {
        let mut names: Vec<&str> = Vec::new();
        for s in said {
            for n in [s.baseline.as_str(), s.variant.as_str()] {
                if !names.contains(&n) {
                    names.push(n);
                }
            }
        }
        names.iter().find_map(|w| {
            let beats = |other: &&str| said.iter().any(|s| s.winner() == Some((*w, *other)));
            names
                .iter()
                .filter(|o| *o != w)
                .all(beats)
                .then(|| w.to_string())
        })
    }

    /// "the fastest", or for an event count "the best" (fewest).
    fn best(&self) -> &'static str {
        if self.comps.iter().any(|c| c.evidence.count) {
            "the best"
        } else {
            "the fastest"
        }
    }

    fn sentences(&self, a: &Analysis) -> Vec<String> {
        let said = self.said(a);
        let alpha = a.options.alpha;
        let mut out = Vec::new();
        let decided: Vec<String> = said
            .iter()
            .filter(|s| s.winner().is_some())
            .map(Said::verdict)
            .collect();
        match (self.fastest(&said), decided.is_empty()) {
            (Some(w), _) => out.push(format!("{w} was {}: {}.", self.best(), decided.join("; "))),
            (None, false) => out.push(format!(
                "No variant was significantly faster than all the others. {}.",
                decided.join("; ")
            )),
            (None, true) => {
                out.push("There were no statistically significant differences in the mean.".into())
            }
        }
        if a.tests.contains(&Test::Variability) {
            let var: Vec<String> = said.iter().filter_map(|s| s.variation(alpha)).collect();
            if var.is_empty() {
                out.push("The run-to-run variations were not statistically different.".into());
            } else {
                out.push(format!("{}.", var.join("; ")));
            }
        }
        let same: Vec<(Why, String)> = said.iter().filter_map(Said::indistinguishable).collect();
        let margin = said.first().map_or(0.0, |s| s.c.evidence.margin * 100.0);
        for (kind, why) in [
            (
                Why::Precision,
                "Not statistically different, for lack of precision".to_string(),
            ),
            (
                Why::Correction,
                format!(
                    "Not significant after the correction for m={} tests, although the \
                     uncorrected {} does not contain 0",
                    a.m,
                    super::fmt::ci_words(a.comparisons.iter().map(|c| c.evidence.ci_level()))
                ),
            ),
            (
                Why::Equivalent,
                format!("Equivalent within the margin of +-{}", fmt_pct(margin)),
            ),
        ] {
            let pairs: Vec<&str> = same
                .iter()
                .filter(|(w, _)| *w == kind)
                .map(|(_, p)| p.as_str())
                .collect();
            if !pairs.is_empty() {
                out.push(format!("{why}: {}.", pairs.join("; ")));
            }
        }
        out
    }
}

/// The conclusion: how many tests were significant, which variant was fastest where, and each
/// decisive kind of result (the same pair, the same direction) with the families it held in and
/// the range of its sizes; then the families without any.
fn conclusion(a: &Analysis, groups: &[Group]) -> Block {
    let alpha = a.options.alpha;
    let significant = a
        .comparisons
        .iter()
        .map(|c| {
            usize::from(decided(c))
                + usize::from(c.p_variability_adjusted.is_some_and(|p| p < alpha))
        })
        .sum::<usize>();
    let mut out = vec![format!(
        "{significant} of m={} tests were significant at alpha {alpha} after {}.",
        a.m, a.correction
    )];
    let mut fastest: Tally = Vec::new();
    let mut results: Tally = Vec::new();
    let mut quiet = Vec::new();
    for g in groups {
        let said = g.said(a);
        let head = g.heading(a);
        if let Some(w) = g.fastest(&said) {
            tally(&mut fastest, format!("{w} was {}", g.best()), &head, None);
        }
        let mut any = false;
        for s in &said {
            if let Some(kind) = s.kind() {
                any = true;
                tally(&mut results, kind, &head, Some(s.size()));
            }
            if let Some(kind) = s.variation_kind(alpha) {
                any = true;
                tally(
                    &mut results,
                    kind,
                    &head,
                    s.c.sd_ratio.map(|r| Size::Times(sd_factor(r))),
                );
            }
        }
        if !any {
            quiet.push(head);
        }
    }
    let n = groups.len();
    let said_of = |(what, fams, sizes): &(String, Vec<String>, Vec<Size>)| {
        let k = if fams.len() == n {
            format!("all {n} families")
        } else {
            format!("{} of {n} families", fams.len())
        };
        format!(
            "{what} in {k} ({}{}).",
            fams.join("; "),
            range(sizes, fams.len())
        )
    };
    if n > 1 {
        for f in &fastest {
            out.push(said_of(f));
        }
        if fastest.is_empty() {
            out.push("No variant was significantly the fastest in any family.".into());
        }
    }
    for r in &results {
        out.push(said_of(r));
    }
    if !quiet.is_empty() {
        out.push(format!("No significant results: {}.", quiet.join("; ")));
    }
    Block {
        heading: "Conclusion".into(),
        sentences: out,
        list: true,
    }
}

/// A result's size as its sentence states it.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Size {
    Pct(f64),
    Times(f64),
}

impl Size {
    fn text(self) -> String {
        match self {
            Size::Pct(x) => fmt_pct(x),
            Size::Times(x) => fmt_times(x),
        }
    }
    fn value(self) -> f64 {
        match self {
            Size::Pct(x) | Size::Times(x) => x,
        }
    }
}

/// "; by 7.54%..8.52%" over the sizes of a result in `families` families (empty unless every
/// family gave a size in the same unit).
fn range(sizes: &[Size], families: usize) -> String {
    let same_unit = sizes
        .windows(2)
        .all(|w| std::mem::discriminant(&w[0]) == std::mem::discriminant(&w[1]));
    if sizes.len() != families || !same_unit {
        return String::new();
    }
    let pick = |f: fn(f64, f64) -> bool| {
        sizes
            .iter()
            .copied()
            .reduce(|a, b| if f(b.value(), a.value()) { b } else { a })
    };
    match (pick(|b, a| b < a), pick(|b, a| b > a)) {
        (Some(lo), Some(hi)) if lo.text() == hi.text() => format!("; by {}", lo.text()),
        (Some(lo), Some(hi)) => format!("; by {}..{}", lo.text(), hi.text()),
        _ => String::new(),
    }
}

/// Kinds of result, each with the families it held in and its sizes.
type Tally = Vec<(String, Vec<String>, Vec<Size>)>;

fn tally(t: &mut Tally, kind: String, family: &str, size: Option<Size>) {
    let i = match t.iter().position(|(k, _, _)| *k == kind) {
        Some(i) => i,
        None => {
            t.push((kind, Vec::new(), Vec::new()));
            t.len() - 1
        }
    };
    t[i].1.push(family.to_string());
    t[i].2.extend(size);
}

/// The factor by which one SD exceeds the other (>= 1).
fn sd_factor(r: f64) -> f64 {
    if r >= 1.0 { r } else { 1.0 / r }
}

/// Whether a comparison's verdict is FASTER or SLOWER.
fn decided(c: &Comparison) -> bool {
    matches!(c.verdict, Verdict::Faster | Verdict::Slower)
}

/// The summary as plain text, one line per paragraph or list item ("- "), each block a heading
/// line first and a blank line after it (a terminal wraps the lines; the mail renderer wraps
/// them at 72 columns).
pub fn text(blocks: &[Block]) -> String {
    let mut s = String::new();
    for b in blocks {
        s += &format!("{}:\n", b.heading);
        if b.list {
            for x in &b.sentences {
                s += &format!("- {x}\n");
            }
        } else {
            s += &format!("{}\n", b.sentences.join(" "));
        }
        s.push('\n');
    }
    s
}

/// The summary in Markdown: a bold heading per block, a paragraph or a list.
pub fn markdown(blocks: &[Block]) -> String {
    let cell = super::table::cell;
    let mut s = String::new();
    for b in blocks {
        s += &format!("**{}.**", cell(&b.heading));
        if b.list {
            s.push_str("\n\n");
            for x in &b.sentences {
                s += &format!("- {}\n", cell(x));
            }
            s.push('\n');
        } else {
            s += &format!(" {}\n\n", cell(&b.sentences.join(" ")));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::super::testdata::sample;
    use super::*;

    #[test]
    fn plain_comparisons_have_no_summary() {
        let r = sample();
        assert!(summary(r.analysis.as_ref().unwrap()).is_none());
    }

    #[test]
    fn every_pair_gets_a_block_and_the_conclusion_counts_what_was_decided() {
        let mut a = sample().analysis.unwrap();
        a.pairs = Pairs::All;
        let blocks = summary(&a).unwrap();
        assert_eq!(blocks.len(), 2, "{blocks:?}");
        assert_eq!(blocks[0].heading, "user_ns");
        let c = &a.comparisons[0];
        let decided = usize::from(decided(c));
        assert_eq!(
            blocks[1].sentences[0],
            format!("{decided} of m=1 tests were significant at alpha 0.05 after Holm.")
        );
        // The block's first sentence carries the verdict's own sentence, without n and method.
        let said = Said::new(&a, c).verdict();
        assert!(!said.contains(", n=") && !said.contains("Welch)"), "{said}");
        if decided == 1 {
            assert!(blocks[0].sentences[0].contains(&said), "{blocks:?}");
            assert!(
                blocks[0].sentences[0].contains(" was the fastest: "),
                "{blocks:?}"
            );
        }
        let t = text(&blocks);
        assert!(
            t.starts_with("user_ns:\n") && t.contains("\nConclusion:\n- "),
            "{t}"
        );
    }
}
