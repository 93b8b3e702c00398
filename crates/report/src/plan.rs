//! The answer of `abperf plan`: the runs per variant that resolve an effect with the requested
//! power, from a coefficient of variation ([`FromCv`]) or a stored pilot experiment
//! ([`FromPilot`], with the expected wall-clock cost); for kernel variants, the boots and runs
//! per boot with the least wall time from the pilot's variance components ([`FromBoots`],
//! Kalibera and Jones 2013).

use abperf_stats::levels::{self, Design, Levels, Target};
use abperf_stats::power::{MAX_RUNS, power_two_sample, runs_needed_cv};
use abperf_stats::verdict::{fmt_effect, fmt_pct};
use std::fmt::Write;

/// Nanoseconds in words: "2 h 05 min", "3.4 min", "12.3 s".
fn duration_ns(ns: f64) -> String {
    super::fmt::duration(ns / 1e9)
}

/// The runs per variant at a CV of `cv` percent (None: more than abperf plans for), in words
/// with the power they reach and the rule of thumb.
fn runs_text(cv: f64, t: &Target) -> (Option<usize>, String) {
    let n = runs_needed_cv(cv, t.effect_pct, t.alpha, t.power);
    let k = thumb_factor(t.alpha, t.power);
    let thumb = k * (cv / t.effect_pct).powi(2);
    let text = match n {
        Some(n) => format!(
            "{n} runs per variant (power {:.2} at n={n}; rule of thumb {k:.1} (CV/effect)^2 = {:.1})",
            power_two_sample(t.effect_pct / cv.max(f64::MIN_POSITIVE), n, t.alpha),
            thumb
        ),
        None => format!("more than {MAX_RUNS} runs per variant"),
    };
    (n, text)
}

/// The normal approximation's factor of (CV/effect)^2 at this alpha and power:
/// 2 (z_{1-alpha/2} + z_power)^2, 15.7 at 0.05 and 0.8, 29.8 at 0.01 and 0.9.
fn thumb_factor(alpha: f64, power: f64) -> f64 {
    use abperf_stats::dist::norm_ppf;
    2.0 * (norm_ppf(1.0 - alpha / 2.0) + norm_ppf(power)).powi(2)
}

/// "To resolve a 0.5% change with 80% power (two-sided Welch, alpha 0.05):".
fn head(t: &Target) -> String {
    format!(
        "To resolve a {} change with {:.0}% power (two-sided Welch, alpha {}):",
        fmt_effect(t.effect_pct),
        t.power * 100.0,
        t.alpha
    )
}

/// `plan --cv PCT`: the runs per variant at that CV.
pub struct FromCv {
    pub target: Target,
    pub cv: f64,
}

impl FromCv {
    pub fn text(&self) -> String {
        let (_, text) = runs_text(self.cv, &self.target);
        format!(
            "{}\n  at a CV of {}: {text}\n",
            head(&self.target),
            fmt_pct(self.cv)
        )
    }
}

/// One variant of a pilot experiment.
pub enum PilotVariant {
    /// Fewer than two runs: no CV.
    TooFew { name: String, n: usize },
    /// Its CV in percent over `n` runs.
    Cv { name: String, cv: f64, n: usize },
}

/// `plan --from ID`: the CV of every variant of the pilot, the runs per variant at the largest,
/// and what they would cost.
pub struct FromPilot {
    pub target: Target,
    pub variants: Vec<PilotVariant>,
    /// The largest CV (percent) and its variant.
    pub worst: (f64, String),
    pub n_variants: usize,
    /// The sum over variants of the mean stored run duration (None: not every variant has one).
    pub run_cost_ns: Option<f64>,
    /// The untimed work per run read from the stored timestamps and the gaps it is the median
    /// of (`Dataset::untimed_per_run_ns`).
    pub untimed_ns: Option<(f64, usize)>,
}

impl FromPilot {
    pub fn text(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "{}", head(&self.target));
        for v in &self.variants {
            let _ = match v {
                PilotVariant::TooFew { name, n } => {
                    writeln!(s, "  {name}: {n} run(s), too few to estimate the CV")
                }
                PilotVariant::Cv { name, cv, n } => {
                    writeln!(s, "  {name}: CV {} over {n} runs", fmt_pct(*cv))
                }
            };
        }
        let (cv, name) = &self.worst;
        let (n, text) = runs_text(*cv, &self.target);
        let _ = writeln!(s, "  at the largest CV, {} ({name}): {text}", fmt_pct(*cv));
        if let Some(n) = n {
            match self.run_cost_ns {
                Some(cost) => {
                    let (untimed, how) = match self.untimed_ns {
                        Some((gap, gaps)) => (
                            gap,
                            format!(
                                "the mean stored run durations plus {} of untimed work per run \
                                 (setup, --pre, re-warm, dropped caches, boots: the median of {gaps} \
                                 gaps from a run's end to the next run's start)",
                                duration_ns(gap)
                            ),
                        ),
                        None => (
                            0.0,
                            "the mean stored run durations; the untimed work between runs is not \
                             measured here (overlapping or too few timestamps) and not counted"
                                .to_string(),
                        ),
                    };
                    let total = (cost + untimed * self.n_variants as f64) * n as f64;
                    let _ = writeln!(
                        s,
                        "  expected wall-clock: {} variants x {n} runs = {} (from {how}; without warm-ups)",
                        self.n_variants,
                        duration_ns(total)
                    );
                }
                None => {
                    let _ = writeln!(
                        s,
                        "  expected wall-clock: unknown (no stored run durations)"
                    );
                }
            }
        }
        s
    }
}

/// `plan --from ID` of an experiment with boots: the variance components of each variant, the
/// costs of a boot and of a run, and the cheapest design (or, without one, the notes saying why).
pub struct FromBoots<'a> {
    pub target: Target,
    pub experiment: i64,
    pub levels: &'a Levels,
}

impl FromBoots<'_> {
    pub fn text(&self) -> String {
        let (t, l) = (&self.target, self.levels);
        let mut s = String::new();
        let _ = writeln!(
            s,
            "To resolve a {} change with {:.0}% power (two-sided Welch on boot means, alpha {}), from \
             experiment {}'s boots:",
            fmt_effect(t.effect_pct),
            t.power * 100.0,
            t.alpha,
            self.experiment
        );
        components(&mut s, l);
        if let Some(c) = &l.costs {
            let _ = writeln!(
                s,
                "  cost: a boot {:.1} s beyond its timed runs, a run {:.2} s (host wall time over {} boot(s))",
                c.boot_seconds, c.run_seconds, c.boots_measured
            );
        }
        let Some(p) = &l.plan else {
            for n in &l.notes {
                let _ = writeln!(s, "  {n}");
            }
            return s;
        };
        let line = |d: &Design| match (d.boots, d.seconds) {
            (Some(b), Some(secs)) => format!(
                "{} run(s) per boot x {b} boots per variant: {} for {} variant(s)",
                d.runs_per_boot,
                duration_ns(secs * 1e9),
                p.variants
            ),
            _ => format!(
                "{} run(s) per boot: more boots than abperf plans for",
                d.runs_per_boot
            ),
        };
        let _ = writeln!(
            s,
            "  best: {} (Kalibera-Jones: r = ceil(sqrt((c_boot/c_run) (T1^2/T2^2))), T1^2 = {:.4} %^2, T2^2 = {:.4} %^2{})",
            line(&p.best),
            p.rel_var_run_pct2,
            p.rel_var_boot_pct2,
            if p.unbounded {
                format!(
                    "; no boot variance seen, so r is capped at {}",
                    levels::MAX_RUNS_PER_BOOT
                )
            } else {
                String::new()
            }
        );
        for d in &p.alternatives {
            let _ = writeln!(s, "  instead: {}", line(d));
        }
        for n in l.notes.iter().filter(|n| n.starts_with("TCG")) {
            let _ = writeln!(s, "  {n}");
        }
        s
    }
}

/// Per variant: boots, runs per boot, the boot and run SDs relative to the mean, the ICC.
fn components(s: &mut String, l: &Levels) {
    for v in &l.variants {
        let _ = match &v.components {
            Some(c) => writeln!(
                s,
                "  {}: {} boots x {} runs; boot SD {}, run SD {}, ICC {}",
                v.variant,
                c.boots,
                if c.runs_min == c.runs_max {
                    c.runs_min.to_string()
                } else {
                    format!("{}-{}", c.runs_min, c.runs_max)
                },
                pct(c.var_boot, c.mean),
                pct(c.var_run, c.mean),
                c.icc
                    .map(|i| format!("{i:.2}"))
                    .unwrap_or_else(|| "n/a".into())
            ),
            None => writeln!(
                s,
                "  {}: {}",
                v.variant,
                v.note.as_deref().unwrap_or("no values")
            ),
        };
    }
}

/// The SD of a variance component relative to the mean, in percent.
fn pct(var: Option<f64>, mean: f64) -> String {
    match var {
        Some(v) if mean != 0.0 => format!("{:.3}%", 100.0 * v.sqrt() / mean.abs()),
        _ => "n/a".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule_of_thumb_is_at_the_requested_alpha_and_power() {
        // 2 (1.95996 + 0.84162)^2 and 2 (2.57583 + 1.28155)^2.
        assert_eq!(format!("{:.1}", thumb_factor(0.05, 0.8)), "15.7");
        assert_eq!(format!("{:.1}", thumb_factor(0.01, 0.9)), "29.8");
    }
}
