//! The text of `abperf compare`: environment differences, then each comparison in detail (the
//! verdict line first, then the per-variant summary, the robust cross-checks, variability,
//! drift, outliers and notes), then the provenance footer. Pure string formatting.

use super::Report;
use super::fmt::one_line;
use super::section::Section;
use abperf_model::describe::Description;
use abperf_stats::compare::Comparison;
use abperf_stats::outliers::{Outliers, Severity};
use abperf_stats::verdict::{fmt_p, fmt_pct, level_label};
use std::fmt::Write;

/// `v` with `sig` significant digits, no exponent for ordinary magnitudes.
pub fn fmt_sig(v: f64, sig: usize) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    let mag = v.abs().log10().floor() as i32;
    if !(-5..=15).contains(&mag) {
        return format!("{v:.prec$e}", prec = sig.saturating_sub(1));
    }
    let decimals = (sig as i32 - 1 - mag).max(0) as usize;
    let s = format!("{v:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// A value in its unit, nanoseconds scaled to a readable unit.
pub fn fmt_value(v: f64, unit: &str) -> String {
    if unit == "ns" {
        let a = v.abs();
        let (x, u) = if a >= 1e9 {
            (v / 1e9, "s")
        } else if a >= 1e6 {
            (v / 1e6, "ms")
        } else if a >= 1e3 {
            (v / 1e3, "us")
        } else {
            (v, "ns")
        };
        return format!("{} {u}", fmt_sig(x, 6));
    }
    if unit.is_empty() {
        fmt_sig(v, 6)
    } else {
        format!("{} {unit}", fmt_sig(v, 6))
    }
}

fn summary_row(out: &mut String, name: &str, d: &Description, unit: &str, width: usize) {
    let pct = |x: Option<f64>| {
        x.map(|v| fmt_pct(100.0 * v))
            .unwrap_or_else(|| "n/a".into())
    };
    let _ = writeln!(
        out,
        "    {name:<width$} {:>4} {:>14} {:>14} {:>12} {:>7} {:>14} {:>14}  (+- {})",
        d.n,
        fmt_value(d.mean, unit),
        fmt_value(d.median, unit),
        fmt_value(d.sd, unit),
        pct(d.cv),
        fmt_value(d.min, unit),
        fmt_value(d.max, unit),
        d.pm_pct.map(fmt_pct).unwrap_or_else(|| "n/a".into()),
    );
}

/// Outliers listed by value and run in the text; the rest are counted (the JSON report lists all).
const OUTLIERS_SHOWN: usize = 8;

fn outlier_text(name: &str, o: &Outliers, unit: &str) -> String {
    if o.flags.is_empty() {
        return format!("{name}: none");
    }
    let kind = |t: Option<Severity>| match t {
        Some(Severity::Severe) => "severe",
        Some(Severity::Mild) => "mild",
        None => "modified-z",
    };
    let items: Vec<String> = o
        .flags
        .iter()
        .take(OUTLIERS_SHOWN)
        .map(|f| {
            format!(
                "{} ({}, run #{})",
                fmt_value(f.value, unit),
                kind(f.tukey),
                f.index + 1
            )
        })
        .collect();
    let rest = &o.flags[o.flags.len().min(OUTLIERS_SHOWN)..];
    let more = if rest.is_empty() {
        String::new()
    } else {
        let severe = rest
            .iter()
            .filter(|f| f.tukey == Some(Severity::Severe))
            .count();
        format!(
            " and {} more ({severe} severe; all in --format json)",
            rest.len()
        )
    };
    format!("{name}: {}{more}", items.join(", "))
}

/// Full text of one comparison (the verdict line first).
pub fn comparison_text(c: &Comparison, unit: &str) -> String {
    let mut out = String::new();
    let d = &c.details;
    let dir = if c.higher_is_better {
        "higher is better"
    } else {
        "lower is better"
    };
    let _ = writeln!(
        out,
        "{}: {} vs {} (baseline), {dir}",
        c.metric, c.variant, c.baseline
    );
    let _ = writeln!(out, "  {}", headline(c));
    let width = c.baseline.len().max(c.variant.len()).max(7);
    let _ = writeln!(
        out,
        "    {:<width$} {:>4} {:>14} {:>14} {:>12} {:>7} {:>14} {:>14}",
        "variant", "n", "mean", "median", "sd", "cv", "min", "max"
    );
    summary_row(&mut out, &c.baseline, &d.baseline, unit, width);
    summary_row(&mut out, &c.variant, &d.variant, unit, width);
    primary(&mut out, c, unit);
    robust(&mut out, c, unit);
    variability_and_drift(&mut out, c, unit);
    outliers(&mut out, c, unit);
    for n in &c.notes {
        let _ = writeln!(out, "  note: {n}");
    }
    out
}

/// The primary test: Welch's t with the Fieller interval of the ratio, or ANCOVA under drift.
fn primary(out: &mut String, c: &Comparison, unit: &str) {
    let d = &c.details;
    if let Some(w) = &d.welch {
        let ci = d.fieller95.map(|f| {
            format!(
                ", ratio {:.5} ({} Fieller CI {:.5}..{:.5})",
                c.ratio,
                level_label(f.level),
                f.low,
                f.high
            )
        });
        // With a run order the ANCOVA is primary and Welch (unadjusted) a description.
        let role = if d.ancova.is_some() {
            "Welch (not adjusted for the run order):"
        } else {
            "primary: Welch"
        };
        let _ = writeln!(
            out,
            "  {role} t={:.3} df={:.1} {}{}",
            w.t,
            w.df,
            fmt_p(w.p),
            ci.unwrap_or_default()
        );
    }
    if let Some(an) = &d.ancova {
        let _ = writeln!(
            out,
            "  primary: ANCOVA with run index (the run order is known), effect {} ({}), ratio {:.5} ({} CI {:.5}..{:.5}), drift {} per run",
            fmt_value(an.effect, unit),
            fmt_p(an.p),
            an.ratio,
            level_label(an.level),
            an.ratio_ci.0,
            an.ratio_ci.1,
            fmt_value(an.slope, unit)
        );
    }
}

/// The robust cross-checks (Mann-Whitney, Hodges-Lehmann, the bootstrap) and whether they disagree
/// with the primary test.
fn robust(out: &mut String, c: &Comparison, unit: &str) {
    let d = &c.details;
    let mut robust = Vec::new();
    if let Some(mw) = &d.mann_whitney {
        let how = match mw.method {
            abperf_stats::rank::Method::Exact => "exact",
            abperf_stats::rank::Method::Asymptotic => "normal approx.",
        };
        robust.push(format!(
            "Mann-Whitney U={} {} ({how})",
            fmt_sig(mw.u_a, 6),
            fmt_p(mw.p)
        ));
    }
    if let Some(hl) = &d.hodges_lehmann {
        let level = level_label(hl.level);
        let ci = hl
            .ci
            .map(|(l, h)| {
                format!(
                    " ({level} CI {}..{})",
                    fmt_value(l, unit),
                    fmt_value(h, unit)
                )
            })
            .unwrap_or_else(|| format!(" (too few runs for a {level} CI)"));
        robust.push(format!(
            "Hodges-Lehmann shift {}{ci}",
            fmt_value(hl.shift, unit)
        ));
    }
    if !robust.is_empty() {
        let _ = writeln!(out, "  robust: {}", robust.join("; "));
    }
    if let Some(bs) = &d.bootstrap {
        let show = |r: &Result<abperf_stats::bootstrap::BcaCi, String>| match r {
            Ok(ci) => format!(
                "{:.5} ({} BCa {:.5}..{:.5})",
                ci.estimate,
                level_label(ci.level),
                ci.low,
                ci.high
            ),
            Err(e) => format!("n/a ({e})"),
        };
        let _ = writeln!(
            out,
            "  bootstrap ({} resamples, seed {}): ratio of means {}; ratio of medians {}",
            bs.resamples,
            bs.seed,
            show(&bs.ratio_means),
            show(&bs.ratio_medians)
        );
    }
    if let Some(d) = &c.disagree {
        let _ = writeln!(out, "  {d}");
    }
}

/// The SD ratio and Brown-Forsythe, the drift within variants, and the equivalence test.
fn variability_and_drift(out: &mut String, c: &Comparison, unit: &str) {
    let d = &c.details;
    let sd = match (c.sd_ratio, c.sd_ratio_ci.zip(c.sd_ratio_level())) {
        (Some(r), Some(([l, h], level))) => {
            format!(
                "SD ratio {r:.3} ({} BCa {l:.3}..{h:.3})",
                level_label(level)
            )
        }
        (Some(r), None) => format!("SD ratio {r:.3}"),
        _ => "SD ratio n/a (baseline SD is 0)".into(),
    };
    let bf = match c.p_brown_forsythe {
        Some(p) => format!("Brown-Forsythe {}", variability_p(c, p)),
        None => "Brown-Forsythe n/a".into(),
    };
    let _ = writeln!(out, "  variability: {sd}; {bf}");
    match &d.drift {
        Some(dr) => {
            let _ = writeln!(
                out,
                "  drift: Mann-Kendall (within variants) {}{}{}",
                fmt_p(dr.mann_kendall.p),
                dr.sen_slope
                    .map(|s| format!(", Sen's slope {} per run", fmt_value(s, unit)))
                    .unwrap_or_default(),
                dr.lag1
                    .map(|r| format!(", lag-1 autocorrelation {r:.2}"))
                    .unwrap_or_default()
            );
        }
        None => {
            let _ = writeln!(out, "  drift: not checked (no common run order)");
        }
    }
    if let Some(t) = &d.tost {
        let _ = writeln!(
            out,
            "  equivalence: TOST within +-{} {}",
            fmt_pct(t.margin * 100.0),
            fmt_p(t.p)
        );
    }
}

/// Brown-Forsythe's p (`raw`) and what it says, decided as the verdicts are: by the corrected p
/// when the variability is one of the tests corrected ("p=0.0031 (p=0.11 Holm m=36): no
/// difference in variability"); by the raw p labelled "uncorrected" when only the means were
/// corrected; by the raw p when nothing was.
fn variability_p(c: &Comparison, raw: f64) -> String {
    let corr = &c.evidence.correction;
    let (p, shown) = match c.p_variability_adjusted {
        Some(adj) if !corr.is_empty() => (adj, format!("{} ({} {corr})", fmt_p(raw), fmt_p(adj))),
        Some(adj) => (adj, fmt_p(adj)),
        None if !corr.is_empty() => (raw, format!("{} uncorrected", fmt_p(raw))),
        None => (raw, fmt_p(raw)),
    };
    let what = if p < c.options.alpha {
        "the variability differs"
    } else {
        "no difference in variability"
    };
    format!("{shown}: {what}")
}

/// The outliers flagged (and kept) in each variant, and the verdict without the severe ones.
fn outliers(out: &mut String, c: &Comparison, unit: &str) {
    let d = &c.details;
    let _ = writeln!(
        out,
        "  outliers (flagged, kept): {}; {}",
        outlier_text(&c.baseline, &d.outliers_baseline, unit),
        outlier_text(&c.variant, &d.outliers_variant, unit)
    );
    if let Some(r) = &d.without_severe_outliers {
        let _ = writeln!(
            out,
            "  severe outliers ({}+{}): sensitivity, {}",
            r.severe_baseline, r.severe_variant, r.line
        );
    }
}

/// The verdict word, then the sentence without repeating it ("INCONCLUSIVE: B vs A ...").
pub fn headline(c: &Comparison) -> String {
    let line = [
        "Inconclusive: ",
        "No significant difference: ",
        "No difference: ",
    ]
    .iter()
    .find_map(|p| c.line.strip_prefix(p))
    .unwrap_or(&c.line);
    format!("{}: {line}", c.verdict.upper())
}

/// "order abba, seed 3, 12 runs per variant, 1 warm-up" from a stored design.
fn design_text(d: &serde_json::Value) -> String {
    let mut parts = Vec::new();
    if let Some(o) = d.get("order").and_then(|v| v.as_str()) {
        parts.push(format!("order {o}"));
    }
    if let Some(s) = d.get("seed").filter(|v| !v.is_null()) {
        parts.push(format!("seed {s}"));
    }
    let boots = d
        .get("vm")
        .and_then(|v| v.get("boots"))
        .and_then(|v| v.as_u64());
    if let Some(b) = boots {
        parts.push(format!("{b} boots per variant"));
    }
    if let Some(r) = d.get("runs").and_then(|v| v.as_u64()) {
        let per = if boots.is_some() { "boot" } else { "variant" };
        match d.get("sequential").and_then(|s| s.get("looks")) {
            Some(k) => parts.push(format!("up to {r} runs per {per}, {k} looks")),
            None => parts.push(format!("{r} runs per {per}")),
        }
    }
    if let Some(w) = d.get("warmup").and_then(|v| v.as_u64()) {
        parts.push(format!("{w} warm-up(s)"));
    }
    if parts.is_empty() {
        d.to_string()
    } else {
        parts.join(", ")
    }
}

/// Seed 001's table: per family (workload) and pair, the ratio of means and the SD ratio, each
/// with its 95% CI and corrected p, significant cells marked. `None` for a plain "each variant
/// against the baseline, mean only" analysis (the verdict lines say it all).
pub fn family_table(r: &Report) -> Option<String> {
    use abperf_stats::analysis::Pairs;
    let a = r.analysis.as_ref()?;
    let t = FamilyTable::new(a);
    if a.pairs == Pairs::Baseline && a.by.is_none() && !t.variability {
        return None;
    }
    if a.comparisons.is_empty() {
        return None;
    }
    let mut out = String::new();
    t.header(&mut out);
    let mut ancova = false;
    for c in &a.comparisons {
        let (line, by_ancova) = t.row(c);
        ancova |= by_ancova;
        let _ = writeln!(out, "{}", line.trim_end());
    }
    if ancova {
        let _ = writeln!(
            out,
            "^ run order known: ratio, CI and p of the ANCOVA with run index (the verdict's)"
        );
    }
    Some(out)
}

/// How the m tests divide into `--by` families: "6 families pattern,op, each 3 pairs and 6
/// tests", or "3 families size, 1-3 pairs and 2-6 tests each" (None without --by).
pub fn families_text(a: &abperf_stats::analysis::Analysis) -> Option<String> {
    let by = a.by.as_deref()?;
    let f = &a.families;
    let range = |v: Vec<usize>| {
        let (lo, hi) = (
            v.iter().copied().min().unwrap_or(0),
            v.iter().copied().max().unwrap_or(0),
        );
        if lo == hi {
            format!("{lo}")
        } else {
            format!("{lo}-{hi}")
        }
    };
    let pairs = range(f.iter().map(|x| x.pairs).collect());
    let tests = range(f.iter().map(|x| x.tests).collect());
    let s = |n: &str| if n == "1" { "" } else { "s" };
    Some(format!(
        "{} {} {by}, each {pairs} pair{} and {tests} test{}",
        f.len(),
        if f.len() == 1 { "family" } else { "families" },
        s(&pairs),
        s(&tests)
    ))
}

/// "low..high" with `dec` decimals ("-" without an interval).
fn ci_text(c: Option<[f64; 2]>, dec: usize) -> String {
    c.map(|[l, h]| format!("{l:.dec$}..{h:.dec$}"))
        .unwrap_or_else(|| "-".into())
}

/// The ratio's interval in a table cell; Fieller's unbounded set named as such ("unbounded",
/// "two rays", "one ray": the verdict line gives the rays' ends), never left as if bounded.
fn ratio_ci_text(e: &abperf_stats::verdict::Evidence, ci: Option<[f64; 2]>) -> String {
    match (ci, e.ratio_unbounded, e.ratio_rays) {
        (None, true, Some((lo, _))) if lo > 0.0 => "two rays".into(),
        (None, true, Some(_)) => "one ray".into(),
        (None, true, None) => "unbounded".into(),
        _ => ci_text(ci, 4),
    }
}

/// A column's heading from the levels of the intervals under it: "(99% CI)".
fn ci_head(levels: impl Iterator<Item = f64>) -> String {
    format!("({})", super::fmt::ci_words(levels))
}

/// A p value without its "p=" ("-" without one).
fn p_short(x: Option<f64>) -> String {
    x.map(|v| {
        let s = fmt_p(v);
        s.strip_prefix("p=").unwrap_or(&s[1..]).to_string()
    })
    .unwrap_or_else(|| "-".into())
}

/// The layout of [`family_table`]: which columns it has and how wide they are.
struct FamilyTable<'a> {
    a: &'a abperf_stats::analysis::Analysis,
    /// The SD ratio columns are shown.
    variability: bool,
    /// The family column's width (0: no family column).
    fam_w: usize,
    pair_w: usize,
}

impl<'a> FamilyTable<'a> {
    fn new(a: &'a abperf_stats::analysis::Analysis) -> FamilyTable<'a> {
        use abperf_stats::analysis::Test;
        let fam_w = a
            .comparisons
            .iter()
            .map(|c| {
                c.family
                    .as_deref()
                    .map_or(0, |f| one_line(f).chars().count())
            })
            .max()
            .unwrap_or(0);
        let fam_w = if fam_w > 0 {
            fam_w.max(a.by.as_deref().map_or(0, str::len))
        } else {
            0
        };
        let mut t = FamilyTable {
            a,
            variability: a.tests.contains(&Test::Variability),
            fam_w,
            pair_w: 0,
        };
        t.pair_w = a
            .comparisons
            .iter()
            .map(|c| t.pair(c).chars().count())
            .max()
            .unwrap_or(4)
            .max(4);
        t
    }

    /// "*" for a p below alpha.
    fn star(&self, x: Option<f64>) -> &'static str {
        if x.is_some_and(|v| v < self.a.options.alpha) {
            "*"
        } else {
            " "
        }
    }

    /// Within a family the family's own "PARAM=value"s add nothing to a variant's name.
    fn short(&self, name: &str, c: &Comparison) -> String {
        super::labels::in_family(self.a, name, c)
    }

    fn pair(&self, c: &Comparison) -> String {
        format!(
            "{} vs {}",
            self.short(&c.variant, c),
            self.short(&c.baseline, c)
        )
    }

    /// What the stars mean, then the column headings.
    fn header(&self, out: &mut String) {
        let (a, pair_w) = (self.a, self.pair_w);
        let what = if self.variability {
            "mean and run-to-run variation"
        } else {
            "mean"
        };
        let _ = writeln!(
            out,
            "{what}: * = significant at alpha {} after {} over m={} tests{}",
            a.options.alpha,
            a.correction,
            a.m,
            families_text(a)
                .map(|t| format!(" ({t})"))
                .unwrap_or_default()
        );
        let fam_head = if self.fam_w > 0 {
            format!("{:<w$}  ", a.by.as_deref().unwrap_or(""), w = self.fam_w)
        } else {
            String::new()
        };
        let mut head = format!(
            "{fam_head}{:<pair_w$}  {:<8} {:>8} {:<17} {:>8}",
            "pair",
            "metric",
            "ratio",
            ci_head(a.comparisons.iter().map(|c| c.evidence.ci_level())),
            "p"
        );
        if self.variability {
            let sd = ci_head(a.comparisons.iter().filter_map(|c| c.sd_ratio_level()));
            head += &format!("   {:>8} {:<17} {:>8}", "SD ratio", sd, "p");
        }
        let _ = writeln!(out, "{}", head.trim_end());
    }

    /// One comparison's line, and whether its estimate is ANCOVA's.
    fn row(&self, c: &Comparison) -> (String, bool) {
        let (fam_w, pair_w) = (self.fam_w, self.pair_w);
        let fam = if fam_w > 0 {
            format!("{:<fam_w$}  ", one_line(c.family.as_deref().unwrap_or("")))
        } else {
            String::new()
        };
        // The verdict's own estimate: ANCOVA's (marked ^) where a run order made it primary.
        let e = &c.evidence;
        let ci95 = e.ci95.map(|(l, h)| [l, h]);
        let mark = if e.method == "ANCOVA" { "^" } else { "" };
        let mut line = format!(
            "{fam}{:<pair_w$}  {:<8} {:>8} {:<17} {:>7}{}",
            self.pair(c),
            super::fmt::truncate(&one_line(&c.metric), 8),
            format!("{:.4}{mark}", e.ratio),
            format!("({})", ratio_ci_text(e, ci95)),
            p_short(c.p_adjusted),
            self.star(c.p_adjusted.filter(|_| e.excludes_one()))
        );
        if self.variability {
            line += &format!(
                "   {:>8} {:<17} {:>7}{}",
                c.sd_ratio
                    .map(|x| format!("{x:.3}"))
                    .unwrap_or_else(|| "-".into()),
                format!("({})", ci_text(c.sd_ratio_ci, 2)),
                p_short(c.p_variability_adjusted),
                self.star(c.p_variability_adjusted)
            );
        }
        (line, !mark.is_empty())
    }
}

/// The verdict lines (each prefixed with its metric), then the summary paragraph of a family
/// analysis, then seed 001's table.
fn lead(r: &Report, out: &mut String) {
    for c in r.comparisons() {
        let _ = writeln!(out, "{}: {}", one_line(&c.metric), one_line(&c.line));
    }
    if !r.comparisons().is_empty() {
        let _ = writeln!(out);
    }
    if let Some(blocks) = summary_of(r) {
        out.push_str(&super::paragraph::text(&blocks));
    }
    if let Some(t) = family_table(r) {
        out.push_str(&t);
        let _ = writeln!(out);
    }
}

/// The environment fields that differ between two experiments.
fn env_diffs(out: &mut String, r: &Report) {
    if r.env_diffs.is_empty() {
        return;
    }
    let _ = writeln!(out, "Environment differences (baseline -> candidate):");
    for (k, a, b) in &r.env_diffs {
        let _ = writeln!(out, "  {}: {} -> {}", one_line(k), one_line(a), one_line(b));
    }
    let _ = writeln!(out);
}

/// The whole text of `abperf compare`: the verdict lines and the summary first, each
/// comparison in full with `--details`, then the provenance footer.
fn text(r: &Report) -> String {
    let mut out = String::new();
    // Two experiments: what differs between them comes first (after a micro comparison's
    // table).
    if let Some(m) = &r.micro_compare {
        out += &m.text(r);
        let _ = writeln!(out);
        env_diffs(&mut out, r);
    } else {
        env_diffs(&mut out, r);
        lead(r, &mut out);
    }
    // Two micro experiments: the table above says it per configuration.
    if r.micro_compare.is_none() && r.details {
        for c in r.comparisons() {
            out += &comparison_text(c, r.data.unit(&c.metric));
            let _ = writeln!(out);
        }
    }
    for n in r.verdict_notes() {
        let _ = writeln!(out, "{}", one_line(&n));
    }
    if let Some(l) = &r.levels {
        let _ = writeln!(out);
        out += &l.text(r);
    }
    if let Some(l) = &r.replication {
        let _ = writeln!(out);
        out += &l.text(r);
    }
    let _ = writeln!(out, "--");
    let _ = writeln!(
        out,
        "data: {} (sha256 {})",
        one_line(&r.data.source),
        r.data_sha256
    );
    if let Some(a) = &r.analysis {
        let _ = writeln!(out, "tests: {}", a.tests_text);
        let o = &a.options;
        let boot = if o.resamples > 0 {
            format!(
                "bootstrap {} seed {}",
                resamples_taken(r, o.resamples),
                o.seed
            )
        } else {
            "no bootstrap (--resamples 0)".to_string()
        };
        let _ = writeln!(
            out,
            "alpha {}, equivalence margin {}%, correction {} over m={}, {boot}",
            o.alpha, o.margin_pct, a.correction, a.m
        );
        if a.outliers_removed > 0 {
            let _ = writeln!(
                out,
                "left out: {} values Tukey flags as outliers (--without-outliers)",
                a.outliers_removed
            );
        }
    }
    if let Some(e) = r.data.experiment() {
        let _ = writeln!(out, "design: {}", one_line(&design_text(&e.design)));
    }
    if !r.details && r.micro_compare.is_none() && !r.comparisons().is_empty() {
        let _ = writeln!(
            out,
            "details: each comparison's statistics with --details (all of them in --format json)"
        );
    }
    let left = r.data.left_out();
    if left > 0 {
        let _ = writeln!(out, "left out: {left} runs (warm-up, failed or excluded)");
    }
    if let Some(e) = r.data.experiments.first() {
        let get = |k: &str| e.environment.get(k).and_then(|v| v.as_str());
        if get("cpu_model").is_some() || get("kernel").is_some() {
            let _ = writeln!(
                out,
                "machine: {}; kernel {}",
                one_line(get("cpu_model").unwrap_or("unknown CPU")),
                one_line(get("kernel").unwrap_or("unknown"))
            );
        }
    }
    out
}

/// The comparisons of `abperf compare` in detail, with the environment differences and the
/// provenance footer.
pub struct Details;

impl Section for Details {
    fn text(&self, r: &Report) -> String {
        text(r)
    }

    /// The summary of a family analysis, one line per paragraph or list item, blocks apart by
    /// a blank line, for the mail renderer to wrap (None for a plain comparison, and for two
    /// micro experiments, whose table says it per configuration).
    fn mail(&self, r: &Report) -> Option<String> {
        summary_of(r).map(|b| super::paragraph::text(&b))
    }

    /// The summary of a family analysis in Markdown.
    fn markdown(&self, r: &Report) -> Option<String> {
        summary_of(r).map(|b| super::paragraph::markdown(&b))
    }
}

/// The summary paragraph of `r`'s family analysis, if it has one.
fn summary_of(r: &Report) -> Option<Vec<super::paragraph::Block>> {
    if r.micro_compare.is_some() {
        return None;
    }
    r.analysis.as_ref().and_then(super::paragraph::summary)
}

/// The bootstrap resamples as taken: the number asked for, or, where large samples lowered it
/// (`capped_resamples`), the range taken, so the footer and each comparison's line agree.
fn resamples_taken(r: &Report, asked: usize) -> String {
    let taken: std::collections::BTreeSet<usize> = r
        .comparisons()
        .iter()
        .filter_map(|c| c.details.bootstrap.as_ref())
        .map(|b| b.resamples)
        .collect();
    match (taken.first(), taken.last()) {
        (Some(&lo), Some(&hi)) if lo < asked => {
            let took = if lo == hi {
                lo.to_string()
            } else {
                format!("{lo}..{hi}")
            };
            format!(
                "{took} resamples ({asked} asked; fewer above 2*10^8 draws, docs/statistics.md#bootstrap)"
            )
        }
        _ => format!("{asked} resamples"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_values() {
        assert_eq!(fmt_sig(880.4375, 6), "880.438");
        assert_eq!(fmt_value(26_346_436_425.0, "ns"), "26.3464 s");
        assert_eq!(fmt_value(1500.0, "ns"), "1.5 us");
        assert_eq!(fmt_value(12.0, "count"), "12 count");
        assert_eq!(fmt_sig(-5.115, 6), "-5.115");
    }

    #[test]
    fn long_outlier_lists_are_cut_and_counted() {
        // 100 values near 10 and 20 far out (severe): 8 listed, 12 counted.
        let mut xs: Vec<f64> = (0..100).map(|i| 10.0 + (i % 7) as f64 * 0.1).collect();
        xs.extend((0..20).map(|i| 1000.0 + i as f64));
        let o = abperf_stats::outliers::flag(&xs);
        assert_eq!(o.severe_count(), 20);
        let t = outlier_text("a", &o, "ns");
        assert_eq!(t.matches("run #").count(), OUTLIERS_SHOWN, "{t}");
        assert!(
            t.ends_with(" and 12 more (12 severe; all in --format json)"),
            "{t}"
        );
        let few = abperf_stats::outliers::flag(&xs[..103]);
        assert!(!outlier_text("a", &few, "ns").contains("more"));
    }
}
