//! Comparisons when only summary statistics exist: `perf stat -r N` prints a mean and its
//! relative standard error, not the runs, and a `mean sd n` line in ministat mode says as much.
//! Welch's test, the Fieller interval and TOST need nothing else; the rank tests, the bootstrap,
//! Brown-Forsythe and the drift check need the single runs and are not made (the comparison says
//! so).

use super::StatsError;
use super::compare::{Comparison, Details, Options};
use super::equivalence::tost_with;
use super::outliers::Outliers;
use super::power::{MIN_RUNS, detectable_effect, runs_needed_cv};
use super::verdict::Evidence;
use super::welch::{fieller_with, moments_parts, welch_with};
use abperf_model::describe::Description;
use serde::Serialize;

/// Mean, sample SD and number of runs of one variant.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Moments {
    pub mean: f64,
    pub sd: f64,
    pub n: usize,
}

impl Moments {
    /// The moments of all the runs several summaries describe together: the pooled mean, and
    /// the variance within plus between the parts.
    pub fn pooled(parts: &[Moments]) -> Option<Moments> {
        let n: usize = parts.iter().map(|p| p.n).sum();
        if n == 0 {
            return None;
        }
        let mean = parts.iter().map(|p| p.n as f64 * p.mean).sum::<f64>() / n as f64;
        if n < 2 {
            return Some(Moments { mean, sd: 0.0, n });
        }
        let ss: f64 = parts
            .iter()
            .map(|p| {
                (p.n.saturating_sub(1)) as f64 * p.sd * p.sd
                    + p.n as f64 * (p.mean - mean) * (p.mean - mean)
            })
            .sum();
        Some(Moments {
            mean,
            sd: (ss / (n - 1) as f64).sqrt(),
            n,
        })
    }

    fn description(&self) -> Description {
        let se = self.sd / (self.n as f64).sqrt();
        let rel = |v: f64| (self.n >= 2 && self.mean != 0.0).then(|| v / self.mean.abs());
        Description {
            n: self.n,
            mean: self.mean,
            median: f64::NAN,
            sd: self.sd,
            cv: rel(self.sd),
            min: f64::NAN,
            max: f64::NAN,
            q1: f64::NAN,
            q3: f64::NAN,
            se,
            pm_pct: rel(se).map(|r| 100.0 * r),
        }
    }
}

fn no_outliers() -> Outliers {
    Outliers {
        q1: f64::NAN,
        q3: f64::NAN,
        iqr: f64::NAN,
        mad: f64::NAN,
        flags: Vec::new(),
    }
}

/// Compare variant `b` with baseline `a` from their summary statistics.
pub fn compare_summary(
    metric: &str,
    (base, a): (&str, Moments),
    (var, b): (&str, Moments),
    opts: &Options,
) -> Result<Comparison, StatsError> {
    for m in [a, b] {
        if !(m.mean.is_finite() && m.sd.is_finite() && m.sd >= 0.0) {
            return Err(StatsError::Invalid(format!(
                "summary mean {} sd {}: not finite numbers",
                m.mean, m.sd
            )));
        }
    }
    if a.mean <= 0.0 {
        return Err(StatsError::NonPositiveMean(a.mean));
    }
    let level = 1.0 - opts.alpha;
    let ratio = b.mean / a.mean;
    let cv_pct = 100.0 * ((a.sd * a.sd + b.sd * b.sd) / 2.0).sqrt() / a.mean;
    let runs = runs_needed_cv(cv_pct, opts.effect_pct, opts.alpha, opts.power);
    let mut notes = vec![
        "summary statistics only (mean, SD and n per variant, as perf stat -r prints them): \
         the rank, bootstrap, variability and drift checks need the single runs and were not made"
            .to_string(),
    ];
    let mut ev = Evidence {
        baseline: base.to_string(),
        variant: var.to_string(),
        ratio,
        ci95: None,
        ci90: None,
        ratio_unbounded: false,
        ratio_rays: None,
        counted: Default::default(),
        p: None,
        correction: String::new(),
        n_baseline: a.n,
        n_variant: b.n,
        method: "Welch (summaries)".into(),
        higher_is_better: opts.higher_is_better,
        metric: metric.to_string(),
        count: opts.count,
        alpha: opts.alpha,
        margin: opts.margin_pct / 100.0,
        cv_pct: Some(cv_pct),
        effect_pct: opts.effect_pct,
        power: opts.power,
        detectable_pct: detectable_effect(a.n.min(b.n), opts.alpha, opts.power).map(|d| d * cv_pct),
        runs_needed: runs,
        runs_needed_observed: runs_needed_cv(
            cv_pct,
            (ratio - 1.0).abs() * 100.0,
            opts.alpha,
            opts.power,
        ),
    };
    let mut details = Details::described(
        a.description(),
        b.description(),
        no_outliers(),
        no_outliers(),
    );
    let mut c = Comparison::unjudged(&ev, &details, opts);
    if a.n < MIN_RUNS || b.n < MIN_RUNS {
        notes.push(format!(
            "fewer than {MIN_RUNS} runs summarised in a variant: no test was made"
        ));
        c.line = format!(
            "Description only: {var} vs {base} {} (n={}+{} summarised)",
            super::verdict::fmt_signed_pct(c.change_pct),
            a.n,
            b.n
        );
        c.notes = notes;
        return Ok(c);
    }
    let (sa, sb, df) = moments_parts(a.sd * a.sd, a.n, b.sd * b.sd, b.n)?;
    let w = welch_with(a.mean, b.mean, sa, sb, df)?;
    c.p_welch = Some(w.p);
    details.welch = Some(w);
    match fieller_with(a.mean, b.mean, sa, sb, df, level) {
        Ok(ci) => {
            details.fieller95 = Some(ci);
            c.ratio_ci = Some([ci.low, ci.high]);
        }
        Err(e) => {
            ev.ratio_unbounded = e.unbounded_ratio();
            ev.ratio_rays = e.ratio_rays();
            notes.push(format!("Fieller interval: {e}"));
        }
    }
    details.fieller90 = fieller_with(a.mean, b.mean, sa, sb, df, 1.0 - 2.0 * opts.alpha).ok();
    details.tost = tost_with(a.mean, b.mean, sa, sb, df, opts.margin_pct / 100.0).ok();
    ev.ci95 = details.fieller95.map(|ci| (ci.low, ci.high));
    ev.ci90 = details.fieller90.map(|ci| (ci.low, ci.high));
    ev.p = c.p_welch;
    c.notes = notes;
    c.evidence = ev;
    c.details = details;
    c.p_adjusted = c.evidence.p;
    c.refresh();
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;
    use abperf_model::describe::{mean, sd};

    #[test]
    fn summaries_give_the_same_welch_test_as_the_runs() {
        let a: Vec<f64> = (0..12).map(|i| 100.0 + (i % 5) as f64 * 0.3).collect();
        let b: Vec<f64> = (0..10).map(|i| 99.2 + (i % 4) as f64 * 0.4).collect();
        let m = |x: &[f64]| Moments {
            mean: mean(x),
            sd: sd(x),
            n: x.len(),
        };
        let o = Options::default();
        let s = compare_summary("t", ("A", m(&a)), ("B", m(&b)), &o).unwrap();
        let r = super::super::compare::compare(
            "t",
            super::super::compare::Sample::new("A", &a),
            super::super::compare::Sample::new("B", &b),
            &o,
        )
        .unwrap();
        assert!((s.p_welch.unwrap() / r.p_welch.unwrap() - 1.0).abs() < 1e-12);
        assert_eq!(s.ratio_ci, r.ratio_ci);
        assert_eq!(s.verdict, r.verdict);
        assert!(s.notes[0].contains("were not made"), "{:?}", s.notes);
        assert!(s.p_mannwhitney.is_none() && s.sd_ratio_ci.is_none());
    }

    #[test]
    fn pooled_moments_of_parts_equal_the_moments_of_all() {
        let x: Vec<f64> = (0..20).map(|i| (i * 7 % 11) as f64).collect();
        let parts: Vec<Moments> = x
            .chunks(5)
            .map(|c| Moments {
                mean: mean(c),
                sd: sd(c),
                n: c.len(),
            })
            .collect();
        let p = Moments::pooled(&parts).unwrap();
        assert_eq!(p.n, 20);
        assert!((p.mean - mean(&x)).abs() < 1e-12 && (p.sd - sd(&x)).abs() < 1e-12);
    }
}
