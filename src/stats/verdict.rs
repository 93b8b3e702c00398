//! The three-way verdict (FASTER / SLOWER, NO DIFFERENCE, INCONCLUSIVE) and its paste-ready
//! wording, exactly as STATISTICS.md prescribes: percentages to 2 decimals, p to 2 significant
//! digits (never "p=0": p<0.0001), n as "12+12".

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

/// Everything the verdict and its sentence depend on.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Evidence {
    pub baseline: String,
    pub variant: String,
    /// Primary estimate of mean(B)/mean(A) and its 95% and 90% intervals.
    pub ratio: f64,
    pub ci95: Option<(f64, f64)>,
    pub ci90: Option<(f64, f64)>,
    /// The p-value the verdict uses (adjusted when a correction applies).
    pub p: Option<f64>,
    /// Correction label for the line, e.g. "Holm m=3"; empty when none.
    pub correction: String,
    pub n_baseline: usize,
    pub n_variant: usize,
    /// "Welch" or "ANCOVA".
    pub method: String,
    pub higher_is_better: bool,
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

    /// FASTER/SLOWER when the 95% CI excludes 1 and p < alpha; NO DIFFERENCE when the 90% CI
    /// lies inside 1 +- D; otherwise INCONCLUSIVE.
    pub fn decide(&self) -> Verdict {
        if let (Some((lo, hi)), Some(p)) = (self.ci95, self.p)
            && p < self.alpha
            && (hi < 1.0 || lo > 1.0)
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

    /// The paste-ready sentence for `verdict`.
    pub fn line(&self, verdict: Verdict) -> String {
        let (b, a) = (&self.variant, &self.baseline);
        let n = format!("n={}+{}", self.n_baseline, self.n_variant);
        let tail = format!("{}, {n}, {}", self.p_text(), self.method);
        match verdict {
            Verdict::Faster | Verdict::Slower => {
                let sign = if verdict == Verdict::Faster {
                    1.0
                } else {
                    -1.0
                };
                let (g_lo, g_hi) = self
                    .ci95
                    .map(|c| self.gain_ci(c))
                    .unwrap_or((f64::NAN, f64::NAN));
                let (lo, hi) = if sign > 0.0 {
                    (g_lo, g_hi)
                } else {
                    (-g_hi, -g_lo)
                };
                format!(
                    "{b} is {} {} than {a} ({}95% CI {}..{}, {tail})",
                    fmt_pct(sign * self.gain(self.ratio)),
                    verdict.as_str(),
                    self.hib(),
                    fmt_pct(lo),
                    fmt_pct(hi)
                )
            }
            Verdict::NoDifference => {
                let ci = self
                    .ci95
                    .map(|(lo, hi)| {
                        format!(
                            "95% CI {}..{}, ",
                            fmt_signed_pct((lo - 1.0) * 100.0),
                            fmt_signed_pct((hi - 1.0) * 100.0)
                        )
                    })
                    .unwrap_or_default();
                let mut s = format!(
                    "No significant difference: {b} vs {a} {} ({ci}{tail})",
                    fmt_signed_pct((self.ratio - 1.0) * 100.0)
                );
                if let (Some(cv), Some(det)) = (self.cv_pct, self.detectable_pct) {
                    s += &format!(
                        "; at the observed CV of {} a {} change would have been detected with {:.0}% power",
                        fmt_pct(cv),
                        fmt_pct(det),
                        self.power * 100.0
                    );
                }
                s
            }
            Verdict::Inconclusive => {
                let g = self.gain(self.ratio);
                let (word, sign) = if g >= 0.0 {
                    ("faster", 1.0)
                } else {
                    ("slower", -1.0)
                };
                let ci = self
                    .ci95
                    .map(|c| {
                        let (lo, hi) = self.gain_ci(c);
                        let (lo, hi) = if sign > 0.0 { (lo, hi) } else { (-hi, -lo) };
                        format!("95% CI {}..{}, ", fmt_signed_pct(lo), fmt_signed_pct(hi))
                    })
                    .unwrap_or_default();
                let mut s = format!(
                    "Inconclusive: {b} is {} {word} ({}{ci}{tail})",
                    fmt_pct(g.abs()),
                    self.hib()
                );
                let eff = fmt_effect(self.effect_pct);
                match self.runs_needed {
                    Some(r) => {
                        s += &format!(
                            "; about {r} runs per variant are needed to resolve a {eff} change"
                        )
                    }
                    None if self.cv_pct.is_some() => {
                        s += &format!(
                            "; more than {} runs per variant would be needed to resolve a {eff} change",
                            super::power::MAX_RUNS
                        )
                    }
                    None => {}
                }
                s
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(ratio: f64, ci95: (f64, f64), ci90: (f64, f64), p: f64) -> Evidence {
        Evidence {
            baseline: "A".into(),
            variant: "B".into(),
            ratio,
            ci95: Some(ci95),
            ci90: Some(ci90),
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
            "Inconclusive: B is 0.21% faster (95% CI -0.11%..+0.53%, p=0.18, n=8+8, Welch); \
             about 17 runs per variant are needed to resolve a 0.3% change"
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
        // Significant p but CI touching 1 is not a verdict.
        let edge = ev(1.01, (0.999, 1.02), (1.0, 1.02), 0.04);
        assert_eq!(edge.decide(), Verdict::Inconclusive);
    }
}
