//! What `abperf compare A B` shows of two micro experiments: one row per configuration stored in
//! both (median of the round medians in each, the ratio with its 1 - alpha CI, the corrected p and the
//! verdict of the ordinary analysis), grouped by benchmark family with the differing rows first,
//! a per-family count, the findings of both side by side (knee, per-miss cost, ...) and a
//! one-paragraph summary. Built from the analysis of the paired round medians
//! (`micro::compare::pair`), so every figure is the analysis's own.

use super::Report;
use super::fmt::truncate;
use super::section::Section;
use abperf_model::MicroFinding;
use abperf_stats::compare::Comparison;
use abperf_stats::verdict::Verdict;
use serde::Serialize;
use std::fmt::Write;

/// One configuration.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub bench: String,
    pub config: String,
    pub metric: String,
    /// Observations compared in each experiment: rounds, or invocations (boots) when those are
    /// the unit ([`MicroCompare::unit`]).
    pub rounds_a: usize,
    pub rounds_b: usize,
    /// Median of the observations (round medians, or invocation means) in each experiment, in
    /// the metric's unit.
    pub median_a: f64,
    pub median_b: f64,
    /// The verdict's estimate of mean(B) / mean(A) over the round medians, and its CI (at
    /// 1 - alpha: [`MicroCompare::ci_label`]).
    pub ratio: f64,
    pub ratio_ci: Option<[f64; 2]>,
    /// The primary p-value after the correction over every configuration.
    pub p_adjusted: Option<f64>,
    pub verdict: Verdict,
    /// When the verdict is withheld ([`MicroCompare::withheld`]): what the rounds of one
    /// process would have said, which is no verdict on the two experiments.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub within_process: Option<Verdict>,
}

impl Row {
    /// FASTER or SLOWER.
    pub fn differs(&self) -> bool {
        matches!(self.verdict, Verdict::Faster | Verdict::Slower)
    }

    /// FASTER or SLOWER within one process, the verdict withheld.
    pub fn differs_within(&self) -> bool {
        matches!(self.within_process, Some(Verdict::Faster | Verdict::Slower))
    }

    /// Shown in the tables of differing rows: a verdict or a withheld within-process call.
    fn shown(&self) -> bool {
        self.differs() || self.differs_within()
    }

    /// The verdict column: "SLOWER", or "withheld (SLOWER within one process)".
    fn verdict_text(&self) -> String {
        match self.within_process {
            Some(v) => format!("withheld ({} within one process)", v.upper()),
            None => self.verdict.upper().to_string(),
        }
    }
}

/// A benchmark family's count of verdicts.
#[derive(Debug, Clone, Serialize, Default)]
pub struct Family {
    pub bench: String,
    pub configurations: usize,
    pub faster: usize,
    pub slower: usize,
    pub no_difference: usize,
    pub inconclusive: usize,
}

/// A finding (same bench and key) in both experiments.
#[derive(Debug, Clone, Serialize)]
pub struct FindingPair {
    pub bench: String,
    pub key: String,
    pub unit: String,
    pub a: Option<f64>,
    pub b: Option<f64>,
    /// For a knee: the same estimate made in every round of each side, compared with the
    /// rounds as the unit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rounds: Option<RoundEstimates>,
}

/// A finding estimated once per round on both sides, and the test of the two sets.
#[derive(Debug, Clone, Serialize)]
pub struct RoundEstimates {
    /// Rounds in which the estimate exists (a knee was found), and rounds in all.
    pub found_a: usize,
    pub rounds_a: usize,
    pub found_b: usize,
    pub rounds_b: usize,
    /// Median of the per-round estimates.
    pub median_a: Option<f64>,
    pub median_b: Option<f64>,
    /// Mann-Whitney U of the per-round estimates (two-sided), when both sides have 3 or more.
    pub p: Option<f64>,
    /// `moved` (p below alpha), `same` or `unknown` (too few rounds with an estimate).
    pub verdict: &'static str,
}

impl RoundEstimates {
    /// Compare the per-round estimates `a` and `b` (`None`: not found in that round).
    pub fn of(a: &[Option<f64>], b: &[Option<f64>], alpha: f64) -> RoundEstimates {
        let fa: Vec<f64> = a.iter().flatten().copied().collect();
        let fb: Vec<f64> = b.iter().flatten().copied().collect();
        let med = |x: &[f64]| {
            (!x.is_empty()).then(|| {
                let mut v = x.to_vec();
                v.sort_by(f64::total_cmp);
                let n = v.len();
                if n % 2 == 1 {
                    v[n / 2]
                } else {
                    (v[n / 2 - 1] + v[n / 2]) / 2.0
                }
            })
        };
        let p = (fa.len() >= 3 && fb.len() >= 3)
            .then(|| abperf_stats::rank::mann_whitney(&fa, &fb, None).ok())
            .flatten()
            .map(|m| m.p);
        RoundEstimates {
            found_a: fa.len(),
            rounds_a: a.len(),
            found_b: fb.len(),
            rounds_b: b.len(),
            median_a: med(&fa),
            median_b: med(&fb),
            p,
            verdict: match p {
                Some(p) if p < alpha => "moved",
                Some(_) => "same",
                None => "unknown",
            },
        }
    }

    /// "per round: 33 (28/32 rounds) -> 16 (30/32), Mann-Whitney p=1.2e-5: moved".
    pub fn text(&self) -> String {
        let v = |x: Option<f64>| x.map(|x| format!("{x:.0}")).unwrap_or_else(|| "-".into());
        format!(
            "per round: {} ({}/{} rounds) -> {} ({}/{}), Mann-Whitney p={}: {}",
            v(self.median_a),
            self.found_a,
            self.rounds_a,
            v(self.median_b),
            self.found_b,
            self.rounds_b,
            self.p
                .map(|p| format!("{p:.2}"))
                .unwrap_or_else(|| "-".into()),
            self.verdict
        )
    }
}

/// The section.
#[derive(Debug, Clone, Serialize)]
pub struct MicroCompare {
    /// The experiments' labels (`#ID`), baseline first.
    pub labels: [String; 2],
    /// "round": each round's median is one observation (valid within one process);
    /// "invocation": each invocation's (process's) mean of its round medians; "boot": the same
    /// with every invocation a boot of its own (`micro --kernel`).
    pub unit: &'static str,
    /// The invocations (processes) each side was measured in.
    pub invocations: [usize; 2],
    /// Why no verdict is given (a side measured in one process, not interleaved with the
    /// other): the rows' verdicts are `inconclusive`, the rounds' calls in `within_process`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub withheld: Option<String>,
    /// Whether the two were measured interleaved round by round, as variants of one
    /// `abperf micro -k` (round r of each next to each other), rather than as two runs.
    pub interleaved: bool,
    pub rows: Vec<Row>,
    pub families: Vec<Family>,
    pub findings: Vec<FindingPair>,
    /// Configurations stored in only one of the two experiments.
    pub only_a: Vec<String>,
    pub only_b: Vec<String>,
    pub summary: String,
    /// Families whose differing configurations all moved the same way: a shift of the whole
    /// benchmark between the two runs, which a phase of the host causes as easily as a kernel.
    pub cautions: Vec<String>,
    /// The level of the ratio's interval, as labelled: 1 - alpha ("95%", "99%").
    pub ci_label: String,
}

/// How the two sides were compared: the observation's unit ("round" or "invocation"), each
/// side's invocations, and why verdicts are withheld, if they are.
#[derive(Debug, Clone)]
pub struct Basis {
    pub unit: &'static str,
    pub invocations: [usize; 2],
    pub withheld: Option<String>,
}

/// Build the section from `r`'s analysis (the paired round medians or invocation means, one
/// family per configuration) and the two experiments' findings.
pub fn build(
    r: &Report,
    labels: [String; 2],
    findings: [&[MicroFinding]; 2],
    only: [Vec<String>; 2],
    basis: Basis,
) -> MicroCompare {
    let comps: &[Comparison] = r
        .analysis
        .as_ref()
        .map(|a| a.comparisons.as_slice())
        .unwrap_or(&[]);
    let rows: Vec<Row> = comps
        .iter()
        .map(|c| {
            let config = c.family.clone().unwrap_or_else(|| c.variant.clone());
            let bench = r
                .data
                .position(&c.variant)
                .and_then(|p| r.data.variants[p].parameters.get("bench").cloned())
                .unwrap_or_else(|| config.split('/').next().unwrap_or("").to_string());
            Row {
                bench,
                config,
                metric: c.metric.clone(),
                rounds_a: c.n_baseline,
                rounds_b: c.n_variant,
                median_a: c.details.baseline.median,
                median_b: c.details.variant.median,
                ratio: c.evidence.ratio,
                ratio_ci: c.evidence.ci95.map(|(l, h)| [l, h]),
                p_adjusted: c.p(),
                verdict: if basis.withheld.is_some() {
                    Verdict::Inconclusive
                } else {
                    c.verdict
                },
                within_process: basis.withheld.is_some().then_some(c.verdict),
            }
        })
        .collect();
    let mut families: Vec<Family> = Vec::new();
    for row in &rows {
        let f = match families.iter().position(|f| f.bench == row.bench) {
            Some(i) => &mut families[i],
            None => {
                families.push(Family {
                    bench: row.bench.clone(),
                    ..Family::default()
                });
                families.last_mut().expect("just pushed")
            }
        };
        f.configurations += 1;
        match row.verdict {
            Verdict::Faster => f.faster += 1,
            Verdict::Slower => f.slower += 1,
            Verdict::NoDifference => f.no_difference += 1,
            Verdict::Inconclusive => f.inconclusive += 1,
        }
    }
    let mut pairs = Vec::new();
    for fa in findings[0] {
        // Only the families compared (all of them unless --variant picked some).
        if fa.key.starts_with("skipped")
            || fa.key == "note"
            || !families.iter().any(|f| f.bench == fa.bench)
        {
            continue;
        }
        if let Some(fb) = findings[1]
            .iter()
            .find(|f| f.bench == fa.bench && f.key == fa.key)
            && (fa.value.is_some() || fb.value.is_some())
        {
            pairs.push(FindingPair {
                bench: fa.bench.clone(),
                key: fa.key.clone(),
                unit: fa.unit.clone(),
                a: fa.value,
                b: fb.value,
                rounds: None,
            });
        }
    }
    let [only_a, only_b] = only;
    let mut summary = summary(
        &rows,
        &families,
        &pairs,
        r.analysis.as_ref().map(|a| a.m),
        basis.unit,
    );
    if let Some(w) = &basis.withheld {
        let within = rows.iter().filter(|r| r.differs_within()).count();
        summary = format!(
            "{w} Within one process (rounds as the unit) {within} of {} configurations would \
             differ; that is no evidence that the two experiments do.",
            rows.len()
        );
    }
    let cautions = cautions(&rows, &families);
    MicroCompare {
        labels,
        unit: basis.unit,
        invocations: basis.invocations,
        withheld: basis.withheld,
        interleaved: false,
        rows,
        families,
        findings: pairs,
        only_a,
        only_b,
        summary,
        cautions,
        ci_label: abperf_stats::verdict::level_label(
            1.0 - r.analysis.as_ref().map_or(0.05, |a| a.options.alpha),
        ),
    }
}

/// See [`MicroCompare::cautions`]: three or more differing configurations in a family, all in
/// one direction.
fn cautions(rows: &[Row], families: &[Family]) -> Vec<String> {
    let mut out = Vec::new();
    for f in families {
        let diff: Vec<&Row> = rows
            .iter()
            .filter(|r| r.bench == f.bench && r.differs())
            .collect();
        let up = diff.iter().all(|r| r.ratio > 1.0);
        let down = diff.iter().all(|r| r.ratio < 1.0);
        if diff.len() >= 3 && (up || down) {
            let lo = diff.iter().map(|r| r.ratio).fold(f64::INFINITY, f64::min);
            let hi = diff
                .iter()
                .map(|r| r.ratio)
                .fold(f64::NEG_INFINITY, f64::max);
            out.push(format!(
                "{}: all {} differing configurations moved the same way ({}..{}): a shift of the \
                 whole benchmark between the two runs looks the same whether the host's load or \
                 the change caused it; repeat each side (A B A B) before trusting it",
                f.bench,
                diff.len(),
                pct(lo),
                pct(hi)
            ));
        }
    }
    out
}

fn pct(x: f64) -> String {
    format!("{:+.1}%", (x - 1.0) * 100.0)
}

fn ci_text(ci: Option<[f64; 2]>) -> String {
    ci.map(|[l, h]| format!("{}..{}", pct(l), pct(h)))
        .unwrap_or_else(|| "-".into())
}

/// "tlb-flush: madvise/touched/n=33 +12.0% (CI +8.1%..+16.0%), 2 more; knee 33 -> 16. xstate:
/// no difference (12 configurations)."
fn summary(
    rows: &[Row],
    families: &[Family],
    findings: &[FindingPair],
    m: Option<usize>,
    unit: &str,
) -> String {
    let mut parts = Vec::new();
    for f in families {
        let diff: Vec<&Row> = rows
            .iter()
            .filter(|r| r.bench == f.bench && r.differs())
            .collect();
        let moved: Vec<String> = findings
            .iter()
            .filter(|p| p.bench == f.bench)
            .filter_map(|p| match (p.a, p.b) {
                (Some(a), Some(b)) if p.unit == "pages" && a != b => {
                    Some(format!("{} {a:.0} -> {b:.0}", p.key))
                }
                _ => None,
            })
            .collect();
        let mut s = if let Some(biggest) = diff
            .iter()
            .max_by(|x, y| (x.ratio.ln().abs()).total_cmp(&y.ratio.ln().abs()))
        {
            let name = biggest
                .config
                .strip_prefix(&format!("{}/", f.bench))
                .unwrap_or(&biggest.config);
            let more = if diff.len() > 1 {
                format!(", {} more of {} differ", diff.len() - 1, f.configurations)
            } else {
                format!(" (1 of {} differs)", f.configurations)
            };
            format!(
                "{}: {name} {} (CI {}){more}",
                f.bench,
                pct(biggest.ratio),
                ci_text(biggest.ratio_ci)
            )
        } else if f.no_difference == f.configurations {
            format!(
                "{}: no difference ({} configurations within the margin)",
                f.bench, f.configurations
            )
        } else {
            format!(
                "{}: none differs ({} configurations, {} within the margin)",
                f.bench, f.configurations, f.no_difference
            )
        };
        if !moved.is_empty() {
            s += &format!("; {}", moved.join(", "));
        }
        parts.push(s);
    }
    if parts.is_empty() {
        return "no configuration stored in both experiments".into();
    }
    let differ: usize = families.iter().map(|f| f.faster + f.slower).sum();
    format!(
        "{}. {differ} of {} configurations differ ({unit}s as the unit, corrected over m={}).",
        parts.join(". "),
        rows.len(),
        m.unwrap_or(0)
    )
}

/// What one observation is, for the reports.
fn unit_text(m: &MicroCompare) -> String {
    if m.unit != "round" {
        format!(
            "each {u}'s mean of its round medians one observation; {} and {} {u}s",
            m.invocations[0],
            m.invocations[1],
            u = m.unit
        )
    } else {
        "each round's median one observation".to_string()
    }
}

fn value(x: f64) -> String {
    if x.abs() >= 100.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.2}")
    }
}

/// The text: summary, then per family the differing rows and a count of the rest (every row
/// with `all`), then the findings side by side.
fn text(m: &MicroCompare, all: bool) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}", m.summary);
    for c in &m.cautions {
        let _ = writeln!(out, "caution: {c}");
    }
    let _ = writeln!(out);
    let metric = m.rows.first().map(|r| r.metric.as_str()).unwrap_or("");
    let w = m
        .rows
        .iter()
        .map(|r| r.config.chars().count())
        .max()
        .unwrap_or(6)
        .clamp(6, 60);
    let [la, lb] = &m.labels;
    // Value columns as wide as the labels (knob variants are named `knob=value`), 10 to 28.
    let vw = la.chars().count().max(lb.chars().count()).clamp(10, 28);
    let head_a = if la.chars().count() + 1 + metric.chars().count() <= vw {
        format!("{la} {metric}")
    } else {
        truncate(la, vw)
    };
    for f in &m.families {
        let _ = writeln!(
            out,
            "{}: {} configurations, {} faster, {} slower, {} no difference, {} inconclusive",
            f.bench, f.configurations, f.faster, f.slower, f.no_difference, f.inconclusive
        );
        let shown: Vec<&Row> = m
            .rows
            .iter()
            .filter(|r| r.bench == f.bench && (all || r.shown()))
            .collect();
        if shown.is_empty() {
            continue;
        }
        let _ = writeln!(
            out,
            "  {:<w$}  {:>vw$} {:>vw$} {:>8} {:<17} {:>8}  verdict",
            "config",
            head_a,
            truncate(lb, vw),
            "change",
            format!("({} CI)", m.ci_label),
            "p adj"
        );
        let mut rows = shown;
        rows.sort_by_key(|r| !r.shown());
        for r in rows {
            let _ = writeln!(
                out,
                "  {:<w$}  {:>vw$} {:>vw$} {:>8} {:<17} {:>8}  {}",
                truncate(&r.config, w),
                value(r.median_a),
                value(r.median_b),
                pct(r.ratio),
                format!("({})", ci_text(r.ratio_ci)),
                r.p_adjusted
                    .map(|p| format!("{p:.2e}"))
                    .unwrap_or_else(|| "-".into()),
                r.verdict_text()
            );
        }
    }
    if !m.findings.is_empty() {
        let _ = writeln!(out);
        let _ = writeln!(out, "Findings ({la} -> {lb}):");
        for p in &m.findings {
            let v = |x: Option<f64>| x.map(value).unwrap_or_else(|| "-".into());
            let _ = writeln!(
                out,
                "  {}/{}: {} -> {} {}{}",
                p.bench,
                p.key,
                v(p.a),
                v(p.b),
                p.unit,
                p.rounds
                    .as_ref()
                    .map(|r| format!("; {}", r.text()))
                    .unwrap_or_default()
            );
        }
    }
    for (label, only) in [(la, &m.only_a), (lb, &m.only_b)] {
        if !only.is_empty() {
            let _ = writeln!(
                out,
                "only in {label}: {} configuration(s), e.g. {}",
                only.len(),
                only.iter().take(3).cloned().collect::<Vec<_>>().join(", ")
            );
        }
    }
    out
}

/// The rows of a family in the order the reports show them: the differing ones first.
fn family_rows<'m>(m: &'m MicroCompare, bench: &str, all: bool) -> Vec<&'m Row> {
    let mut rows: Vec<&Row> = m
        .rows
        .iter()
        .filter(|r| r.bench == bench && (all || r.shown()))
        .collect();
    rows.sort_by_key(|r| !r.shown());
    rows
}

fn p_text(p: Option<f64>) -> String {
    p.map(|p| format!("{p:.2e}")).unwrap_or_else(|| "-".into())
}

/// `--format md`: the summary, the cautions, the per-family counts, the differing rows and the
/// findings side by side (every row is in the CSV and JSON).
fn markdown(m: &MicroCompare) -> String {
    use super::table::cell;
    let mut s = String::new();
    let [la, lb] = &m.labels;
    let _ = writeln!(s, "{}\n", cell(&m.summary));
    for c in &m.cautions {
        let _ = writeln!(s, "- caution: {}", cell(c));
    }
    if !m.cautions.is_empty() {
        let _ = writeln!(s);
    }
    let _ = writeln!(
        s,
        "| family | configurations | faster | slower | no difference | inconclusive |\n|---|--:|--:|--:|--:|--:|"
    );
    for f in &m.families {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} |",
            cell(&f.bench),
            f.configurations,
            f.faster,
            f.slower,
            f.no_difference,
            f.inconclusive
        );
    }
    let differing: Vec<&Row> = m
        .families
        .iter()
        .flat_map(|f| family_rows(m, &f.bench, false))
        .collect();
    let metric = m.rows.first().map(|r| r.metric.as_str()).unwrap_or("");
    if differing.is_empty() {
        let _ = writeln!(s, "\nNo configuration differs.");
    } else {
        let _ = writeln!(
            s,
            "\n| configuration | {} ({}) | {} | change | {} CI | p adj | verdict |\n|---|--:|--:|--:|---|--:|---|",
            cell(la),
            cell(metric),
            cell(lb),
            m.ci_label
        );
        for r in differing {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} | {} | {} |",
                cell(&r.config),
                value(r.median_a),
                value(r.median_b),
                pct(r.ratio),
                ci_text(r.ratio_ci),
                p_text(r.p_adjusted),
                r.verdict_text()
            );
        }
    }
    if !m.findings.is_empty() {
        let _ = writeln!(
            s,
            "\n| finding | {} | {} | unit |\n|---|--:|--:|---|",
            cell(la),
            cell(lb)
        );
        for p in &m.findings {
            let v = |x: Option<f64>| x.map(value).unwrap_or_else(|| "-".into());
            let _ = writeln!(
                s,
                "| {}/{} | {} | {} | {} |",
                cell(&p.bench),
                cell(&p.key),
                v(p.a),
                v(p.b),
                cell(&p.unit)
            );
        }
    }
    for (label, only) in [(la, &m.only_a), (lb, &m.only_b)] {
        if !only.is_empty() {
            let _ = writeln!(
                s,
                "\nOnly in {}: {} configuration(s).",
                cell(label),
                only.len()
            );
        }
    }
    s
}

/// CSV header of a micro comparison: one row per configuration.
pub const CSV_HEADER: [&str; 14] = [
    "bench",
    "config",
    "metric",
    "label_a",
    "label_b",
    "rounds_a",
    "rounds_b",
    "median_a",
    "median_b",
    "ratio",
    "ratio_ci_low",
    "ratio_ci_high",
    "p_adjusted",
    "verdict",
];

/// `--format csv`: every configuration, one row each (`CSV_HEADER`).
fn csv(m: &MicroCompare) -> anyhow::Result<String> {
    use super::table::neutral;
    let mut w = ::csv::Writer::from_writer(Vec::new());
    w.write_record(CSV_HEADER)?;
    let num = |x: Option<f64>| x.map(|v| v.to_string()).unwrap_or_default();
    for r in &m.rows {
        w.write_record([
            neutral(&r.bench),
            neutral(&r.config),
            neutral(&r.metric),
            neutral(&m.labels[0]),
            neutral(&m.labels[1]),
            r.rounds_a.to_string(),
            r.rounds_b.to_string(),
            r.median_a.to_string(),
            r.median_b.to_string(),
            r.ratio.to_string(),
            num(r.ratio_ci.map(|c| c[0])),
            num(r.ratio_ci.map(|c| c[1])),
            num(r.p_adjusted),
            r.verdict.as_str().to_string(),
        ])?;
    }
    super::table::finish(w)
}

/// `--format html`: the section of the page (summary, counts, per family the differing rows
/// and, folded, every row; the findings).
fn html(m: &MicroCompare) -> String {
    use super::svg::esc;
    let mut s = String::new();
    let [la, lb] = &m.labels;
    let _ = writeln!(
        s,
        "<h2>Micro comparison</h2><p id=\"micro-summary\">{}</p>",
        esc(&m.summary)
    );
    for c in &m.cautions {
        let _ = writeln!(s, "<p class=\"note caution\">caution: {}</p>", esc(c));
    }
    let metric = m.rows.first().map(|r| r.metric.as_str()).unwrap_or("");
    let _ = writeln!(
        s,
        "<p class=\"note\">{} (baseline) against {}; {} as the unit ({}); medians of the \
         round medians in {}.</p>",
        esc(la),
        esc(lb),
        esc(m.unit),
        unit_text(m),
        esc(metric)
    );
    s.push_str("<div class=\"scroll\"><table id=\"micro-families\"><tr><th class=\"l\">family</th><th>configurations</th><th>faster</th><th>slower</th><th>no difference</th><th>inconclusive</th></tr>\n");
    for f in &m.families {
        let _ = writeln!(
            s,
            "<tr><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&f.bench),
            f.configurations,
            f.faster,
            f.slower,
            f.no_difference,
            f.inconclusive
        );
    }
    s.push_str("</table></div>\n");
    let row = |s: &mut String, r: &Row| {
        let _ = writeln!(
            s,
            "<tr class=\"{}\"><td class=\"l name\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"l verdict\">{}</td></tr>",
            if r.shown() { "differs" } else { "same" },
            esc(&r.config),
            value(r.median_a),
            value(r.median_b),
            pct(r.ratio),
            esc(&ci_text(r.ratio_ci)),
            r.rounds_a.min(r.rounds_b),
            p_text(r.p_adjusted),
            esc(&r.verdict_text())
        );
    };
    let head = format!(
        "<div class=\"scroll\"><table class=\"micro-compare\"><tr><th class=\"l\">configuration</th><th>{}</th><th>{}</th><th>change</th><th>{} CI</th><th>rounds</th><th>p adj</th><th class=\"l\">verdict</th></tr>\n",
        esc(la),
        esc(lb),
        m.ci_label
    );
    for f in &m.families {
        let _ = writeln!(s, "<h3>{}</h3>", esc(&f.bench));
        let diff = family_rows(m, &f.bench, false);
        if !diff.is_empty() {
            s.push_str(&head);
            for r in diff {
                row(&mut s, r);
            }
            s.push_str("</table></div>\n");
        }
        let _ = write!(
            s,
            "<details><summary>all {} configurations</summary>{head}",
            f.configurations
        );
        for r in family_rows(m, &f.bench, true) {
            row(&mut s, r);
        }
        s.push_str("</table></div></details>\n");
    }
    if !m.findings.is_empty() {
        let _ = writeln!(
            s,
            "<h3>Findings</h3><div class=\"scroll\"><table id=\"micro-findings\"><tr><th class=\"l\">finding</th><th>{}</th><th>{}</th><th class=\"l\">unit</th></tr>",
            esc(la),
            esc(lb)
        );
        for p in &m.findings {
            let v = |x: Option<f64>| x.map(value).unwrap_or_else(|| "-".into());
            let _ = writeln!(
                s,
                "<tr><td class=\"l\">{}/{}</td><td>{}</td><td>{}</td><td class=\"l\">{}</td></tr>",
                esc(&p.bench),
                esc(&p.key),
                v(p.a),
                v(p.b),
                esc(&p.unit)
            );
        }
        s.push_str("</table></div>\n");
    }
    for (label, only) in [(la, &m.only_a), (lb, &m.only_b)] {
        if !only.is_empty() {
            let _ = writeln!(
                s,
                "<p class=\"note\">Only in {}: {} configuration(s), e.g. {}.</p>",
                esc(label),
                only.len(),
                esc(&only.iter().take(3).cloned().collect::<Vec<_>>().join(", "))
            );
        }
    }
    s
}

impl Section for MicroCompare {
    /// The differing rows of each family (every row in the other formats).
    fn text(&self, _r: &Report) -> String {
        text(self, false)
    }

    fn markdown(&self, _r: &Report) -> Option<String> {
        Some(markdown(self))
    }

    fn csv(&self, _r: &Report) -> Option<anyhow::Result<String>> {
        Some(csv(self))
    }

    fn json(&self, _r: &Report) -> Option<anyhow::Result<serde_json::Value>> {
        Some(serde_json::to_value(self).map_err(Into::into))
    }

    fn html(&self, _r: &Report) -> Option<String> {
        Some(html(self))
    }
}
