//! The three-way verdict (FASTER / SLOWER, NO DIFFERENCE, INCONCLUSIVE) and its paste-ready
//! wording, exactly as docs/statistics.md#wording prescribes: percentages to 2 decimals, p to 2
//! significant digits (never "p=0": p<0.0001), n as "12+12".

use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Verdict {
    #[serde(rename = "faster")]
    Faster,
    #[serde(rename = "slower")]
    Slower,
    #[serde(rename = "no difference")]
    NoDifference,
    #[serde(rename = "inconclusive")]
    Inconclusive,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Faster => "faster",
            Verdict::Slower => "slower",
            Verdict::NoDifference => "no difference",
            Verdict::Inconclusive => "inconclusive",
        }
    }
    pub fn upper(self) -> &'static str {
        match self {
            Verdict::Faster => "FASTER",
            Verdict::Slower => "SLOWER",
            Verdict::NoDifference => "NO DIFFERENCE",
            Verdict::Inconclusive => "INCONCLUSIVE",
        }
    }
}

/// "p=0.48", "p=0.0012", "p<0.0001": two significant digits, trailing zeros dropped.
pub fn fmt_p(p: f64) -> String {
    if !p.is_finite() {
        return "p=n/a".into();
    }
    if p < 0.0001 {
        return "p<0.0001".into();
    }
    if p >= 1.0 {
        return "p=1".into();
    }
    let mag = p.log10().floor() as i32; // -1 for 0.48, -4 for 0.00012
    let decimals = (1 - mag).max(0) as usize;
    let s = format!("{p:.decimals$}");
    // Rounding can carry (0.0999 -> 0.10); re-format once more when it did.
    let s = if s
        .parse::<f64>()
        .map(|v| v >= 10f64.powi(mag + 1))
        .unwrap_or(false)
    {
        format!("{p:.prec$}", prec = decimals.saturating_sub(1))
    } else {
        s
    };
    let s = if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    };
    format!("p={s}")
}

/// "0.54%" (2 decimals, sign only when negative). Negative zero prints as 0.00.
pub fn fmt_pct(x: f64) -> String {
    let v = if x.abs() < 0.005 { 0.0 } else { x };
    format!("{v:.2}%")
}

/// "+0.15%" / "-0.31%" (explicit sign).
pub fn fmt_signed_pct(x: f64) -> String {
    let v = if x.abs() < 0.005 { 0.0 } else { x };
    format!("{v:+.2}%")
}

/// A user-given percentage with as many decimals as it needs ("0.3%", "0.25%").
pub fn fmt_effect(x: f64) -> String {
    let s = format!("{x:.4}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    format!("{s}%")
}

/// A confidence level as a person writes it: 0.95 -> "95%", 0.99 -> "99%", 0.999 -> "99.9%".
pub fn level_label(level: f64) -> String {
    let pct = format!("{:.4}", level * 100.0);
    format!("{}%", pct.trim_end_matches('0').trim_end_matches('.'))
}

/// What a comparison's observations are, in its words: "n=8+8 boots", "about 17 boots per
/// variant to resolve ...".
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Counted {
    /// Runs (the default).
    #[default]
    Runs,
    /// The means of one replication level's units: "boot", "host", "invocation".
    Means(&'static str),
    /// Hosts as blocks: one effect per host, the pairs counted once.
    HostEffects,
}

impl Counted {
    /// "n=8+8", "n=8+8 boots", "n=4 hosts".
    pub fn n(&self, baseline: usize, variant: usize) -> String {
        match self {
            Counted::Runs => format!("n={baseline}+{variant}"),
            Counted::Means(u) => format!("n={baseline}+{variant} {u}s"),
            Counted::HostEffects => format!("n={baseline} hosts"),
        }
    }

    /// "17 runs per variant", "17 boots per variant", "17 hosts".
    pub fn per_variant(&self, n: impl std::fmt::Display) -> String {
        match self {
            Counted::Runs => format!("{n} runs per variant"),
            Counted::Means(u) => format!("{n} {u}s per variant"),
            Counted::HostEffects => format!("{n} hosts"),
        }
    }

    /// One observation: "run", "boot", "host".
    pub fn one(&self) -> &'static str {
        match self {
            Counted::Runs => "run",
            Counted::Means(u) => u,
            Counted::HostEffects => "host",
        }
    }

    /// What the spread the power figures rest on is called.
    fn spread(&self) -> &'static str {
        match self {
            Counted::HostEffects => "SD of a host's effect",
            _ => "CV",
        }
    }
}

/// Everything the verdict and its sentence depend on.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Evidence {
    pub baseline: String,
    pub variant: String,
    /// Primary estimate of mean(B)/mean(A), its interval at 1 - alpha (95% at the default alpha;
    /// the name is the default's) and its 1 - 2 alpha interval (for TOST).
    pub ratio: f64,
    pub ci95: Option<(f64, f64)>,
    pub ci90: Option<(f64, f64)>,
    /// `ci95` is None because Fieller's set is unbounded (the baseline mean not different from 0
    /// at 1 - alpha). The set then excludes 1 exactly when Welch's p < alpha (both use Welch's
    /// df), so a call stands on p and the difference's sign, its size unbounded.
    pub ratio_unbounded: bool,
    /// When `ratio_unbounded`, Fieller's set may be two rays (exclusive): every ratio up to the
    /// first number and from the second (the first is 0 or less when only the upper ray holds
    /// positive ratios). None when bounded or when the set is every ratio.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ratio_rays: Option<(f64, f64)>,
    /// The p-value the verdict uses (adjusted when a correction applies).
    pub p: Option<f64>,
    /// Correction label for the line, e.g. "Holm m=3"; empty when none.
    pub correction: String,
    pub n_baseline: usize,
    pub n_variant: usize,
    /// "Welch" or "ANCOVA".
    pub method: String,
    pub higher_is_better: bool,
    /// The metric, and whether it is an event count (spoken of as "more" and "fewer").
    pub metric: String,
    pub count: bool,
    pub alpha: f64,
    /// Relative equivalence margin D (0.002 = 0.2%).
    pub margin: f64,
    /// Pooled CV in percent, the smallest effect of interest in percent, power.
    pub cv_pct: Option<f64>,
    pub effect_pct: f64,
    pub power: f64,
    /// Smallest change (percent) detectable with `power` at this n.
    pub detectable_pct: Option<f64>,
    /// Runs per variant needed to resolve `effect_pct`.
    pub runs_needed: Option<usize>,
    /// Runs per variant needed to resolve the change observed (at the observed CV).
    pub runs_needed_observed: Option<usize>,
    /// What n and the runs needed count (`analysis.unit` in JSON says it for the whole
    /// analysis).
    #[serde(skip)]
    pub counted: Counted,
}

/// "2.35x", "14.3x", "312x": a ratio of 2 or more, with 3 significant digits up to 1000.
pub fn fmt_times(r: f64) -> String {
    if !r.is_finite() {
        "n/a".into()
    } else if r < 10.0 {
        format!("{r:.2}x")
    } else if r < 100.0 {
        format!("{r:.1}x")
    } else {
        format!("{r:.0}x")
    }
}

impl Evidence {
    /// Improvement in percent for a ratio: (1 - r) for times, (r - 1) when higher is better.
    fn gain(&self, r: f64) -> f64 {
        if self.higher_is_better {
            (r - 1.0) * 100.0
        } else {
            (1.0 - r) * 100.0
        }
    }

    fn gain_ci(&self, ci: (f64, f64)) -> (f64, f64) {
        let (x, y) = (self.gain(ci.0), self.gain(ci.1));
        (x.min(y), x.max(y))
    }

    fn p_text(&self) -> String {
        let p = self.p.map(fmt_p).unwrap_or_else(|| "p=n/a".into());
        if self.correction.is_empty() {
            p
        } else {
            format!("{p} {}", self.correction)
        }
    }

    fn hib(&self) -> &'static str {
        if self.higher_is_better {
            "higher is better; "
        } else {
            ""
        }
    }

    /// The level of `ci95`, the primary interval: 1 - alpha (the name is the default's).
    pub fn ci_level(&self) -> f64 {
        1.0 - self.alpha
    }

    /// The level of `ci90`, the equivalence interval: 1 - 2 alpha (90% at the default alpha).
    pub fn equivalence_level(&self) -> f64 {
        1.0 - 2.0 * self.alpha
    }

    /// The label of the primary interval's level: "95%", "99%", "99.9%".
    pub fn ci_label(&self) -> String {
        level_label(self.ci_level())
    }

    /// The label of the equivalence interval's level: "90%", "98%".
    pub fn equivalence_label(&self) -> String {
        level_label(self.equivalence_level())
    }

    /// Whether the 1 - alpha confidence set of the ratio excludes 1: a bounded interval on one
    /// side of it, or an unbounded Fieller set beside p < alpha (see `ratio_unbounded`).
    pub fn excludes_one(&self) -> bool {
        match self.ci95 {
            Some((lo, hi)) => hi < 1.0 || lo > 1.0,
            None => self.ratio_unbounded && self.p.is_some_and(|p| p < self.alpha),
        }
    }

    /// The unbounded set named as such: "99% confidence set of the ratio unbounded (two rays:
    /// up to 0.1234 and from 5.6789)".
    pub fn unbounded_words(&self) -> String {
        let rays = match self.ratio_rays {
            Some((lo, hi)) if lo > 0.0 => format!(" (two rays: up to {lo:.4} and from {hi:.4})"),
            Some((_, hi)) => format!(" (one ray: from {hi:.4} up)"),
            None => String::new(),
        };
        format!(
            "{} confidence set of the ratio unbounded{rays}",
            self.ci_label()
        )
    }

    /// FASTER/SLOWER when the 1 - alpha CI excludes 1 and p < alpha; NO DIFFERENCE when the
    /// 1 - 2 alpha CI lies inside 1 +- D; otherwise INCONCLUSIVE.
    pub fn decide(&self) -> Verdict {
        if let Some(p) = self.p
            && p < self.alpha
            && self.excludes_one()
        {
            return if self.gain(self.ratio) > 0.0 {
                Verdict::Faster
            } else {
                Verdict::Slower
            };
        }
        if let Some((lo, hi)) = self.ci90
            && lo > 1.0 - self.margin
            && hi < 1.0 + self.margin
        {
            return Verdict::NoDifference;
        }
        Verdict::Inconclusive
    }

    /// "B is 0.58% faster than A", "B is 14.3x slower than A", "B has 31.2x more minflt than
    /// A": the verdict's subject and size; `(lo, hi)` of the 95% CI in the same words.
    fn sized(&self, verdict: Verdict) -> (String, String) {
        let (b, a) = (&self.variant, &self.baseline);
        let better = verdict == Verdict::Faster;
        // The factor by which the variant is worse (>1) or better, in the metric's direction.
        let factor = |r: f64| {
            if self.higher_is_better == better {
                r
            } else {
                1.0 / r
            }
        };
        let big = self.ratio >= 2.0 || self.ratio <= 0.5;
        let (lo, hi) = self.ci95.unwrap_or((f64::NAN, f64::NAN));
        if big {
            let (x, y) = (factor(lo), factor(hi));
            let ci = format!("{}..{}", fmt_times(x.min(y)), fmt_times(x.max(y)));
            let size = fmt_times(factor(self.ratio));
            let s = if self.count {
                let word = if self.ratio > 1.0 { "more" } else { "fewer" };
                format!("{b} has {size} {word} {} than {a}", self.metric)
            } else {
                format!("{b} is {size} {} than {a}", verdict.as_str())
            };
            return (s, ci);
        }
        let sign = if better { 1.0 } else { -1.0 };
        let (g_lo, g_hi) = self.gain_ci((lo, hi));
        let (lo, hi) = if sign > 0.0 {
            (g_lo, g_hi)
        } else {
            (-g_hi, -g_lo)
        };
        let ci = format!("{}..{}", fmt_pct(lo), fmt_pct(hi));
        let size = fmt_pct(sign * self.gain(self.ratio));
        let s = if self.count {
            let word = if self.ratio > 1.0 { "more" } else { "fewer" };
            format!("{b} has {size} {word} {} than {a}", self.metric)
        } else {
            format!("{b} is {size} {} than {a}", verdict.as_str())
        };
        (s, ci)
    }

    /// The signed change of the variant's mean, and its 95% CI in the same convention: the
    /// interval never flips sign or order ("-13.11% (95% CI -52.61%..+175.54%").
    fn change(&self) -> (String, String) {
        let c = fmt_signed_pct((self.ratio - 1.0) * 100.0);
        let ci = self
            .ci95
            .map(|(lo, hi)| {
                format!(
                    "{} CI {}..{}, ",
                    self.ci_label(),
                    fmt_signed_pct((lo - 1.0) * 100.0),
                    fmt_signed_pct((hi - 1.0) * 100.0)
                )
            })
            .unwrap_or_else(|| {
                if self.ratio_unbounded {
                    format!("{}, ", self.unbounded_words())
                } else {
                    String::new()
                }
            });
        (c, ci)
    }

    /// The paste-ready sentence for `verdict`.
    pub fn line(&self, verdict: Verdict) -> String {
        let (b, a) = (&self.variant, &self.baseline);
        let n = self.counted.n(self.n_baseline, self.n_variant);
        let tail = format!("{}, {n}, {}", self.p_text(), self.method);
        match verdict {
            Verdict::Faster | Verdict::Slower => {
                let (what, ci) = self.sized(verdict);
                let ci = match self.ci95 {
                    Some(_) => format!("{} CI {ci}", self.ci_label()),
                    None => format!("{}: the baseline mean is too noisy", self.unbounded_words()),
                };
                format!("{what} ({}{ci}, {tail})", self.hib())
            }
            Verdict::NoDifference => {
                let (change, ci) = self.change();
                let mut s = format!("No significant difference: {b} vs {a} {change} ({ci}{tail})");
                if let (Some(cv), Some(det)) = (self.cv_pct, self.detectable_pct) {
                    s += &format!(
                        "; at the observed {} of {} a {} change would have been detected with {:.0}% power",
                        self.counted.spread(),
                        fmt_pct(cv),
                        fmt_pct(det),
                        self.power * 100.0
                    );
                }
                s
            }
            Verdict::Inconclusive => {
                let (change, ci) = self.change();
                let mut s = format!(
                    "Inconclusive: {b} vs {a} {change} ({}{ci}{tail})",
                    self.hib()
                );
                let eff = fmt_effect(self.effect_pct);
                let observed = ((self.ratio - 1.0) * 100.0).abs();
                let needed = |n: Option<usize>, what: &str| match n {
                    Some(r) => format!("about {} to resolve {what}", self.counted.per_variant(r)),
                    None => format!(
                        "more than {} to resolve {what}",
                        self.counted.per_variant(super::power::MAX_RUNS)
                    ),
                };
                if self.cv_pct.is_some() {
                    let mut parts = Vec::new();
                    if observed >= 0.005 && (observed - self.effect_pct).abs() > 1e-9 {
                        parts.push(needed(
                            self.runs_needed_observed,
                            &format!("the observed {} change", fmt_pct(observed)),
                        ));
                    }
                    parts.push(needed(
                        self.runs_needed,
                        &format!("a {eff} change (the smallest of interest)"),
                    ));
                    s += &format!("; {}", parts.join(", "));
                }
                s
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_interval_is_labelled_with_its_level() {
        assert_eq!(level_label(0.95), "95%");
        assert_eq!(level_label(0.99), "99%");
        assert_eq!(level_label(0.999), "99.9%");
        let mut e = ev(0.9946, (0.9923, 0.9969), (0.993, 0.996), 0.0001);
        e.alpha = 0.01;
        assert!(
            e.line(Verdict::Faster)
                .contains("(99% CI 0.31%..0.77%, p=0.0001"),
            "{}",
            e.line(Verdict::Faster)
        );
    }

    #[test]
    fn an_unbounded_ratio_set_calls_only_beside_p_below_alpha() {
        let mut e = ev(4.4, (0.0, 0.0), (0.0, 0.0), 6e-6);
        (e.ci95, e.ci90, e.alpha) = (None, None, 5e-5);
        // Without a bounded interval and without knowing why (a non-positive mean): no call.
        assert_eq!(e.decide(), Verdict::Inconclusive);
        e.ratio_unbounded = true;
        assert_eq!(e.decide(), Verdict::Slower);
        let line = e.line(Verdict::Slower);
        assert!(
            line.starts_with(
                "B is 4.40x slower than A (99.995% confidence set of the ratio unbounded"
            ),
            "{line}"
        );
        e.p = Some(0.2);
        assert_eq!(e.decide(), Verdict::Inconclusive);
    }

    #[test]
    fn lines_count_what_was_compared() {
        let mut e = ev(0.9979, (0.9947, 1.0011), (0.9952, 1.0006), 0.18);
        (
            e.n_baseline,
            e.n_variant,
            e.runs_needed,
            e.runs_needed_observed,
        ) = (8, 8, Some(17), Some(300));
        e.counted = Counted::Means("boot");
        let l = e.line(Verdict::Inconclusive);
        assert!(l.contains(", n=8+8 boots, Welch)"), "{l}");
        assert!(
            l.contains("about 300 boots per variant to resolve the observed"),
            "{l}"
        );
        assert!(!l.contains("runs per variant"), "{l}");
        e.runs_needed = None;
        let l = e.line(Verdict::Inconclusive);
        let most = super::super::power::MAX_RUNS;
        assert!(
            l.contains(&format!("more than {most} boots per variant to resolve a")),
            "{l}"
        );
        // Hosts as blocks: the pairs counted once, the units asked for are hosts.
        (e.n_baseline, e.n_variant, e.counted) = (4, 4, Counted::HostEffects);
        let l = e.line(Verdict::Inconclusive);
        assert!(l.contains(", n=4 hosts, Welch)"), "{l}");
        assert!(l.contains("about 300 hosts to resolve the observed"), "{l}");
        e.detectable_pct = Some(0.5);
        let l = e.line(Verdict::NoDifference);
        assert!(
            l.contains("at the observed SD of a host's effect of "),
            "{l}"
        );
    }

    fn ev(ratio: f64, ci95: (f64, f64), ci90: (f64, f64), p: f64) -> Evidence {
        Evidence {
            baseline: "A".into(),
            variant: "B".into(),
            ratio,
            ci95: Some(ci95),
            ci90: Some(ci90),
            ratio_unbounded: false,
            ratio_rays: None,
            counted: Counted::Runs,
            p: Some(p),
            correction: String::new(),
            n_baseline: 12,
            n_variant: 12,
            method: "Welch".into(),
            higher_is_better: false,
            alpha: 0.05,
            margin: 0.002,
            cv_pct: Some(0.27),
            effect_pct: 0.3,
            power: 0.8,
            detectable_pct: Some(0.33),
            runs_needed: Some(17),
            runs_needed_observed: Some(300),
            metric: "wall_ns".into(),
            count: false,
        }
    }

    #[test]
    fn p_formatting() {
        assert_eq!(fmt_p(0.48123), "p=0.48");
        assert_eq!(fmt_p(0.18), "p=0.18");
        assert_eq!(fmt_p(0.0001), "p=0.0001");
        assert_eq!(fmt_p(0.000123), "p=0.00012");
        assert_eq!(fmt_p(0.00001), "p<0.0001");
        assert_eq!(fmt_p(0.0), "p<0.0001");
        assert_eq!(fmt_p(0.0999), "p=0.1");
        assert_eq!(fmt_p(0.01), "p=0.01");
        assert_eq!(fmt_p(0.014), "p=0.014");
        assert_eq!(fmt_p(1.0), "p=1");
        assert_eq!(fmt_p(0.996), "p=1");
        assert_eq!(fmt_pct(-0.001), "0.00%");
        assert_eq!(fmt_effect(0.3), "0.3%");
    }

    #[test]
    fn wording_matches_statistics_md() {
        let f = ev(
            1.0 - 0.0054,
            (1.0 - 0.0077, 1.0 - 0.0031),
            (0.993, 0.995),
            0.0001,
        );
        assert_eq!(f.decide(), Verdict::Faster);
        assert_eq!(
            f.line(Verdict::Faster),
            "B is 0.54% faster than A (95% CI 0.31%..0.77%, p=0.0001, n=12+12, Welch)"
        );

        let nd = ev(
            1.0 - 0.0008,
            (1.0 - 0.0031, 1.0 + 0.0015),
            (0.9985, 1.0012),
            0.48,
        );
        assert_eq!(nd.decide(), Verdict::NoDifference);
        assert_eq!(
            nd.line(Verdict::NoDifference),
            "No significant difference: B vs A -0.08% (95% CI -0.31%..+0.15%, p=0.48, n=12+12, Welch); \
             at the observed CV of 0.27% a 0.33% change would have been detected with 80% power"
        );

        let mut inc = ev(
            1.0 - 0.0021,
            (1.0 - 0.0053, 1.0 + 0.0011),
            (0.995, 1.0005),
            0.18,
        );
        inc.n_baseline = 8;
        inc.n_variant = 8;
        assert_eq!(inc.decide(), Verdict::Inconclusive);
        assert_eq!(
            inc.line(Verdict::Inconclusive),
            "Inconclusive: B vs A -0.21% (95% CI -0.53%..+0.11%, p=0.18, n=8+8, Welch); \
             about 300 runs per variant to resolve the observed 0.21% change, \
             about 17 runs per variant to resolve a 0.3% change (the smallest of interest)"
        );
    }

    #[test]
    fn slower_and_higher_is_better_flip() {
        let s = ev(1.01, (1.005, 1.015), (1.006, 1.014), 0.001);
        assert_eq!(s.decide(), Verdict::Slower);
        assert_eq!(
            s.line(Verdict::Slower),
            "B is 1.00% slower than A (95% CI 0.50%..1.50%, p=0.001, n=12+12, Welch)"
        );
        let mut r = s.clone();
        r.higher_is_better = true;
        assert_eq!(r.decide(), Verdict::Faster);
        assert_eq!(
            r.line(Verdict::Faster),
            "B is 1.00% faster than A (higher is better; 95% CI 0.50%..1.50%, p=0.001, n=12+12, Welch)"
        );
        // Large effects as ratios, counts as more / fewer, CIs in the same words.
        let big = ev(14.26, (12.1, 16.9), (12.5, 16.0), 1e-9);
        assert_eq!(
            big.line(Verdict::Slower),
            "B is 14.3x slower than A (95% CI 12.1x..16.9x, p<0.0001, n=12+12, Welch)"
        );
        let fast = ev(1.0 / 14.26, (1.0 / 16.9, 1.0 / 12.1), (0.06, 0.08), 1e-9);
        assert_eq!(
            fast.line(Verdict::Faster),
            "B is 14.3x faster than A (95% CI 12.1x..16.9x, p<0.0001, n=12+12, Welch)"
        );
        let mut cnt = ev(32.2, (30.0, 34.5), (30.5, 34.0), 1e-9);
        cnt.count = true;
        cnt.metric = "minflt".into();
        assert_eq!(
            cnt.line(Verdict::Slower),
            "B has 32.2x more minflt than A (95% CI 30.0x..34.5x, p<0.0001, n=12+12, Welch)"
        );
        let mut few = ev(0.97, (0.96, 0.98), (0.962, 0.978), 1e-5);
        few.count = true;
        few.metric = "minflt".into();
        assert_eq!(
            few.line(Verdict::Faster),
            "B has 3.00% fewer minflt than A (95% CI 2.00%..4.00%, p<0.0001, n=12+12, Welch)"
        );
        // An inconclusive CI wider than the effect keeps one sign convention.
        let wide = ev(0.8689, (0.4739, 2.7554), (0.55, 2.2), 0.41);
        assert_eq!(
            wide.line(Verdict::Inconclusive),
            "Inconclusive: B vs A -13.11% (95% CI -52.61%..+175.54%, p=0.41, n=12+12, Welch); \
             about 300 runs per variant to resolve the observed 13.11% change, \
             about 17 runs per variant to resolve a 0.3% change (the smallest of interest)"
        );
        // Significant p but CI touching 1 is not a verdict.
        let edge = ev(1.01, (0.999, 1.02), (1.0, 1.02), 0.04);
        assert_eq!(edge.decide(), Verdict::Inconclusive);
    }
}
