//! The two-level section of a report whose data come from booted kernels (boots x runs): the
//! verdicts are computed from boot means (the boots are the independent replicates), and the
//! section shows the variance components per variant, the intraclass correlation, the boot-level
//! comparison next to what runs taken as independent would claim, the measured costs of a boot
//! and of a run, and the cheapest design for a target effect (Kalibera and Jones).
//!
//! [`attach`] fills a [`Report`]; the [`LevelsSection`]'s [`Section`] renders it for the text
//! formats and as the JSON document's `levels`. [`Boots`] is `show`'s list of the boots.

use super::Report;
use super::fmt::{metric_scale, one_line};
use super::section::Section;
use abperf_stats::analysis::{Settings, analyse};
use abperf_stats::levels::{self, Design, LevelComparison, Levels, Target};
use abperf_stats::verdict::{Counted, fmt_p};
use serde::Serialize;
use std::fmt::Write;

/// What a report says about the two levels.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LevelsSection {
    /// "boot means" when the report's verdicts were computed from boot means; "none" when there
    /// are no verdicts.
    pub verdicts_from: String,
    /// One analysis per judged metric.
    pub metrics: Vec<Levels>,
}

/// The note every output of kernels booted under TCG carries.
pub const TCG_NOTE: &str = "TCG: the kernels ran under QEMU's emulator (KVM was not used); the \
                            runs test the machinery, and their timings say nothing about \
                            hardware costs";

/// Add [`TCG_NOTE`] to `r`'s notes once, when any of its boots ran under TCG, and the notes on
/// variants that boot the same kernel image (`same_config::image_notes`), each once.
pub fn tcg_note(r: &mut Report) {
    if r.data.accelerators().iter().any(|a| a == "tcg") && !r.notes.iter().any(|n| n == TCG_NOTE) {
        r.notes.push(TCG_NOTE.to_string());
    }
    for n in super::same_config::image_notes(&r.data.variants) {
        if !r.notes.contains(&n) {
            r.notes.push(n);
        }
    }
}

/// Analyse a report whose data have boots: verdicts from boot means (with `settings`, when there
/// is something to compare), and the two-level analysis of `metrics` with plan advice for
/// `target`.
pub fn attach(r: &mut Report, settings: Option<&Settings>, metrics: &[String], target: Target) {
    tcg_note(r);
    if !r.data.has_boots() {
        return;
    }
    let same = super::same_config::notes(&r.data);
    r.notes.extend(same);
    if let Some(s) = settings {
        let boot_means = r.data.boot_level();
        let mut s = s.clone();
        s.options.counted = Counted::Means("boot");
        let mut a = analyse(&boot_means, &s);
        a.tests_text = format!("on boot means (one value per boot): {}", a.tests_text);
        r.analysis = Some(a);
    }
    let baseline = settings.map(|s| s.baseline).unwrap_or(0);
    let metrics = metrics
        .iter()
        .filter_map(|m| levels::analyse(&r.data, m, baseline, target))
        .collect();
    r.levels = Some(LevelsSection {
        verdicts_from: if settings.is_some() {
            "boot means"
        } else {
            "none"
        }
        .to_string(),
        metrics,
    });
}

/// Seconds in words: "42.0 s", "3.4 min", "2 h 05 min".
fn design_text(d: &Design) -> String {
    match (d.boots, d.seconds) {
        (Some(b), Some(s)) => format!(
            "{} run(s) per boot x {b} boots per variant = {} (CV of a boot mean {:.2}%)",
            d.runs_per_boot,
            super::fmt::duration(s),
            d.cv_boot_mean_pct
        ),
        _ => format!(
            "{} run(s) per boot: more boots than abperf plans for",
            d.runs_per_boot
        ),
    }
}

/// The section for the text formats ("" without boots).
fn text(r: &Report) -> String {
    let Some(sec) = &r.levels else {
        return String::new();
    };
    let mut s = String::new();
    for l in &sec.metrics {
        variance_table(&mut s, r, sec, l);
        comparisons(&mut s, &l.comparisons, "boot", "boots");
        costs_and_plan(&mut s, l);
        notes(&mut s, r, l);
        let _ = writeln!(s);
    }
    s
}

/// The title of a metric, then per variant its boots, runs per boot, mean, the boot and run
/// standard deviations, the intraclass correlation and the F test of the boot effect.
fn variance_table(s: &mut String, r: &Report, sec: &LevelsSection, l: &Levels) {
    let sc = metric_scale(r, &l.metric);
    let unit = r.data.unit(&l.metric).to_string();
    let show = |v: f64| sc.show(v, &unit);
    // The SDs get a scale of their own: they are orders of magnitude below the means.
    let largest_sd = l
        .variants
        .iter()
        .filter_map(|v| v.components.as_ref())
        .flat_map(|c| [c.var_boot, c.var_run])
        .flatten()
        .map(f64::sqrt)
        .fold(0.0, f64::max);
    let sd_scale = super::fmt::scale_for(&unit, largest_sd);
    let show_sd = |v: f64| sd_scale.show(v, &unit);
    let _ = writeln!(
        s,
        "Two levels, {} (boots x runs{}):",
        one_line(&l.metric),
        if sec.verdicts_from == "boot means" {
            "; the verdicts come from boot means, Kalibera & Jones 2013"
        } else {
            ""
        }
    );
    let width = l
        .variants
        .iter()
        .map(|v| v.variant.chars().count())
        .max()
        .unwrap_or(7)
        .clamp(7, 40);
    let _ = writeln!(
        s,
        "  {:<width$} {:>5} {:>9} {:>14} {:>12} {:>12} {:>6}  boot effect",
        "variant", "boots", "runs/boot", "mean", "boot SD", "run SD", "ICC"
    );
    for v in &l.variants {
        let name = super::fmt::truncate(&one_line(&v.variant), width);
        match &v.components {
            Some(c) => {
                let per_boot = if c.runs_min == c.runs_max {
                    c.runs_min.to_string()
                } else {
                    format!("{}-{}", c.runs_min, c.runs_max)
                };
                let sd = |x: Option<f64>| x.map(|v| show_sd(v.sqrt())).unwrap_or("n/a".into());
                let _ = writeln!(
                    s,
                    "  {name:<width$} {:>5} {per_boot:>9} {:>14} {:>12} {:>12} {:>6}  {}",
                    c.boots,
                    show(c.mean),
                    sd(c.var_boot),
                    sd(c.var_run),
                    c.icc.map(|i| format!("{i:.2}")).unwrap_or("n/a".into()),
                    match c.p {
                        Some(p) => format!("F={:.2}, {}", c.f.unwrap_or(f64::NAN), fmt_p(p)),
                        None => v.note.clone().unwrap_or_default(),
                    }
                );
            }
            None => {
                let _ = writeln!(
                    s,
                    "  {name:<width$} {}",
                    v.note.as_deref().unwrap_or("no values")
                );
            }
        }
    }
}

/// Each variant against the baseline: the ratio of `level` means (boot, host, ...) with its
/// interval, next to what runs taken as independent would claim; `plural` names the units.
pub(crate) fn comparisons(
    s: &mut String,
    comparisons: &[LevelComparison],
    level: &str,
    plural: &str,
) {
    for c in comparisons {
        let n = format!("n={}+{} {plural}", c.boots[0], c.boots[1]);
        match (&c.ratio_ci, &c.welch) {
            (Some(ci), Some(w)) => {
                let naive = match (&c.naive_ratio_ci, c.width_ratio) {
                    (Some(x), Some(k)) if k > 0.0 => format!(
                        "; runs taken as independent (n={}+{}) would claim {:.4}..{:.4}, {:.1}x narrower",
                        c.runs[0], c.runs[1], x.low, x.high, k
                    ),
                    _ => String::new(),
                };
                let _ = writeln!(
                    s,
                    "  {} vs {}: ratio of {level} means {:.4} ({} CI {:.4}..{:.4}, Welch {}, {n}){naive}",
                    one_line(&c.variant),
                    one_line(&c.baseline),
                    ci.ratio,
                    abperf_stats::verdict::level_label(ci.level),
                    ci.low,
                    ci.high,
                    fmt_p(w.p)
                );
            }
            _ => {
                let _ = writeln!(
                    s,
                    "  {} vs {}: no {level}-level interval ({n}): {}",
                    one_line(&c.variant),
                    one_line(&c.baseline),
                    c.notes.join("; ")
                );
            }
        }
    }
}

/// The measured costs of a boot and of a run, and the cheapest design for the target effect.
fn costs_and_plan(s: &mut String, l: &Levels) {
    if let Some(c) = &l.costs {
        let _ = writeln!(
            s,
            "  cost: a boot {:.1} s beyond its timed runs, a run {:.2} s (host wall time, {} boot(s))",
            c.boot_seconds, c.run_seconds, c.boots_measured
        );
    }
    if let Some(p) = &l.plan {
        let _ = writeln!(
            s,
            "  plan for a {}% change at {:.0}% power (alpha {}), {} variant(s): {}",
            p.target.effect_pct,
            p.target.power * 100.0,
            p.target.alpha,
            p.variants,
            design_text(&p.best)
        );
        let _ = writeln!(
            s,
            "    runs per boot r = ceil(sqrt((c_boot/c_run) (T1^2/T2^2))) with T1^2 = {:.4} %^2 (runs), T2^2 = {:.4} %^2 (boots){}",
            p.rel_var_run_pct2,
            p.rel_var_boot_pct2,
            if p.unbounded {
                format!(
                    ": no boot variance seen, r capped at {}",
                    levels::MAX_RUNS_PER_BOOT
                )
            } else {
                String::new()
            }
        );
        for d in &p.alternatives {
            let _ = writeln!(s, "    instead: {}", design_text(d));
        }
    }
}

/// The metric's notes (the TCG warning only when the report's own notes lack it).
fn notes(s: &mut String, r: &Report, l: &Levels) {
    // The report's own notes carry the TCG warning already.
    let tcg_said = r.notes.iter().any(|n| n == TCG_NOTE);
    for n in l
        .notes
        .iter()
        .filter(|n| !(tcg_said && n.starts_with("TCG:")))
    {
        let _ = writeln!(s, "  {}", one_line(n));
    }
}

/// `show`'s list of a kernel-variant experiment: what each variant boots, then every boot ("" for
/// other experiments).
fn boots_text(r: &Report) -> String {
    if !r.data.has_boots() && r.data.variants.iter().all(|v| v.boot.is_none()) {
        return String::new();
    }
    let mut s = String::new();
    for (pos, v) in r.data.variants.iter().enumerate() {
        if let Some(b) = &v.boot {
            let _ = writeln!(
                s,
                "  [{pos}] boots {} ({}){}{}",
                one_line(&b.kernel),
                one_line(&b.release),
                if b.append.is_empty() {
                    String::new()
                } else {
                    format!(" with '{}'", one_line(&b.append))
                },
                b.package
                    .as_ref()
                    .map(|p| format!(", package {p}"))
                    .unwrap_or_default()
            );
        }
    }
    let _ = writeln!(s, "boots:");
    for b in &r.data.boots {
        let secs = |x: Option<f64>| x.map(|v| format!("{v:.1} s")).unwrap_or("-".into());
        let _ = writeln!(
            s,
            "  boot {:>3} (plan {:>3}) {:<12} {} {:<8} up {:>8}, {:>8} in all, {} run(s){}: {}",
            b.number,
            b.plan,
            super::fmt::truncate(&one_line(r.variant_name(b.variant)), 12),
            b.accel.to_uppercase(),
            b.status,
            secs(b.boot_seconds),
            secs(b.seconds),
            b.runs.len(),
            if b.extra_warmups > 0 {
                format!(" (+{} extra warm-up)", b.extra_warmups)
            } else {
                String::new()
            },
            one_line(
                b.cmdline
                    .as_deref()
                    .unwrap_or("(the guest did not come up)")
            )
        );
    }
    s
}

impl Section for LevelsSection {
    fn text(&self, r: &Report) -> String {
        text(r)
    }

    fn json(&self, _r: &Report) -> Option<anyhow::Result<serde_json::Value>> {
        Some(serde_json::to_value(self).map_err(Into::into))
    }
}

/// `show`'s list of what each kernel variant boots and of every boot.
pub struct Boots;

impl Section for Boots {
    fn text(&self, r: &Report) -> String {
        boots_text(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::View;
    use crate::testdata::sample;
    use abperf_model::Dataset;

    fn with_boots() -> Dataset {
        let mut d = sample().data;
        d.boots = abperf_model::boot::testdata::four_boots();
        d
    }

    #[test]
    fn verdicts_from_boot_means_and_the_section() {
        let mut r = Report::new(with_boots(), View::Report);
        let s = Settings {
            baseline: 0,
            metrics: vec!["user_ns".to_string()],
            options: abperf_stats::compare::Options::default(),
            correction: abperf_stats::multiple::Correction::Holm,
            without_outliers: false,
            force_higher_is_better: false,
            pairs: abperf_stats::analysis::Pairs::Baseline,
            by: None,
            tests: vec![abperf_stats::analysis::Test::Mean],
        };
        attach(
            &mut r,
            Some(&s),
            &["user_ns".to_string()],
            Target {
                effect_pct: 0.5,
                alpha: 0.05,
                power: 0.8,
            },
        );
        let a = r.analysis.as_ref().unwrap();
        assert_eq!(a.comparisons[0].n_baseline, 2, "boot means, not runs");
        assert!(
            a.comparisons[0].line.contains("n=2+2 boots"),
            "{}",
            a.comparisons[0].line
        );
        assert!(a.tests_text.starts_with("on boot means"));
        let sec = r.levels.as_ref().unwrap();
        assert_eq!(sec.verdicts_from, "boot means");
        let l = &sec.metrics[0];
        assert_eq!(l.variants[0].components.as_ref().unwrap().boots, 2);
        assert_eq!(l.costs.unwrap().boot_seconds, 12.0);
        assert!(r.notes.iter().any(|n| n == TCG_NOTE));
        let t = text(&r);
        assert!(t.contains("Two levels, user_ns"), "{t}");
        assert!(t.contains("ratio of boot means"), "{t}");
        assert!(
            t.contains("cost: a boot 12.0 s beyond its timed runs, a run 0.50 s"),
            "{t}"
        );
        let shown = boots_text(&r);
        assert!(shown.contains("boot   3 (plan   3)"), "{shown}");
        // Once only.
        tcg_note(&mut r);
        assert_eq!(r.notes.iter().filter(|n| *n == TCG_NOTE).count(), 1);
    }
}
