//! The replication-level section of a report whose runs name their invocation, boot or host
//! (imported tables): the verdicts come from the means of the highest replicated level's units
//! (docs/statistics.md#levels), and the section shows per variant the variance components of
//! every level (REML), the intraclass correlation at each level, each comparison on top-level
//! means next to what runs taken as independent would claim, and the Kalibera-Jones repetitions
//! per level. Booted kernels without such labels keep `levels`' two-level section.

use super::Report;
use super::fmt::{metric_scale, one_line};
use super::levels::comparisons;
use super::section::Section;
use abperf_model::Level;
use abperf_stats::analysis::{Analysis, Settings, analyse};
use abperf_stats::levels::Target;
use abperf_stats::replicated::{self, LevelsPlan, Replicated};
use abperf_stats::verdict::Counted;
use serde::Serialize;
use std::fmt::Write;

/// What a report says about replication levels.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReplicationSection {
    /// The level whose unit means the verdicts come from ("host", "boot", "invocation"), or
    /// "none" when there are no verdicts.
    pub verdicts_from: String,
    pub metrics: Vec<Replicated>,
}

/// Analyse a report whose runs name replication levels: verdicts from the unit means of the top
/// replicated level of the first metric (with `settings`), and the section for `metrics`.
/// Returns false, changing nothing, when no level above the runs is replicated.
pub fn attach(
    r: &mut Report,
    settings: Option<&Settings>,
    metrics: &[String],
    target: Target,
) -> bool {
    let Some(top) = metrics
        .first()
        .and_then(|m| replicated::choose(&r.data, m).top())
    else {
        return false;
    };
    if let Some(s) = settings {
        r.analysis = Some(top_level_analysis(r, s, top));
    }
    let baseline = settings.map(|s| s.baseline).unwrap_or(0);
    let metrics = metrics
        .iter()
        .filter_map(|m| replicated::analyse(&r.data, m, baseline, target))
        .collect();
    r.replication = Some(ReplicationSection {
        verdicts_from: if settings.is_some() {
            top.name()
        } else {
            "none"
        }
        .to_string(),
        metrics,
    });
    true
}

/// The verdicts of `r` from its `top` level: with hosts as the top level, every pair whose hosts
/// all ran both variants judged host by host (`stats::hosts`), the others (and other levels) on
/// the top level's unit means.
fn top_level_analysis(r: &Report, s: &Settings, top: Level) -> Analysis {
    let mut s = s.clone();
    s.options.counted = Counted::Means(top.name());
    let mut a = if top == Level::Host {
        abperf_stats::hosts::analyse(&r.data, &s)
    } else {
        analyse(&r.data.level_means(top), &s)
    };
    let blocked = a
        .comparisons
        .iter()
        .filter(|c| c.details.hosts.is_some())
        .count();
    let means = format!("on {} means (one value per {})", top.name(), top.name());
    a.tests_text = if blocked == 0 {
        format!("{means}: {}", a.tests_text)
    } else {
        format!(
            "hosts as blocks where every host ran both variants ({blocked} of {} comparisons: \
             per-host effects, random effects with Paule-Mandel tau^2, HKSJ {} CI); the others \
             {means}: {}",
            a.comparisons.len(),
            abperf_stats::verdict::level_label(1.0 - s.options.alpha),
            a.tests_text
        )
    };
    a
}

fn level_names(l: &Replicated) -> Vec<&'static str> {
    let mut names: Vec<&str> = l.levels.iter().map(|x| x.name()).collect();
    names.push("run");
    names
}

/// Per variant: units per level, mean, SD of each level's component, ICC at each level above
/// the runs.
fn components_table(s: &mut String, r: &Report, sec: &ReplicationSection, l: &Replicated) {
    let sc = metric_scale(r, &l.metric);
    let unit = r.data.unit(&l.metric).to_string();
    let names = level_names(l);
    let largest_sd = l
        .variants
        .iter()
        .filter_map(|v| v.components.as_ref())
        .flat_map(|c| c.variances.iter().map(|v| v.sqrt()))
        .fold(0.0, f64::max);
    let sd_scale = super::fmt::scale_for(&unit, largest_sd);
    let _ = writeln!(
        s,
        "Replication levels, {} ({}{}):",
        one_line(&l.metric),
        names.join(" > "),
        if sec.verdicts_from == "none" {
            String::new()
        } else if r
            .comparisons()
            .iter()
            .any(|c| c.metric == l.metric && c.details.hosts.is_some())
        {
            "; the verdicts come from each host's own effect, hosts as blocks".to_string()
        } else {
            format!("; the verdicts come from {} means", sec.verdicts_from)
        }
    );
    let mut head = format!("  {:<20}", "variant");
    for n in &names {
        let _ = write!(head, " {:>8}", format!("{n}s"));
    }
    let _ = write!(head, " {:>14}", "mean");
    for n in &names {
        let _ = write!(head, " {:>11}", format!("{n} SD"));
    }
    let _ = writeln!(s, "{head}  ICC ({})", names[..names.len() - 1].join("/"));
    for v in &l.variants {
        let name = super::fmt::truncate(&one_line(&v.variant), 20);
        let Some(c) = &v.components else {
            let _ = writeln!(
                s,
                "  {name:<20} {}",
                v.note.as_deref().unwrap_or("no values")
            );
            continue;
        };
        let mut line = format!("  {name:<20}");
        for u in &c.units {
            let _ = write!(line, " {u:>8}");
        }
        let _ = write!(line, " {:>14}", sc.show(c.mean, &unit));
        for var in &c.variances {
            let _ = write!(line, " {:>11}", sd_scale.show(var.sqrt(), &unit));
        }
        let icc: Vec<String> = v.icc[..v.icc.len() - 1]
            .iter()
            .map(|i| format!("{i:.2}"))
            .collect();
        let _ = writeln!(
            s,
            "{line}  {}  ({}{})",
            icc.join("/"),
            match c.method {
                abperf_stats::nested::Method::Reml => "REML",
                abperf_stats::nested::Method::Anova => "ANOVA",
            },
            if c.balanced { "" } else { ", unbalanced" }
        );
    }
}

fn plan_text(s: &mut String, p: &LevelsPlan) {
    let parts: Vec<String> = p
        .levels
        .iter()
        .enumerate()
        .map(|(i, l)| {
            let reps = l
                .repetitions
                .map(|r| r.to_string())
                .unwrap_or_else(|| "more than abperf plans for".into());
            let per = if i == 0 && p.tau2_pct2.is_some() {
                "(each running every variant)".to_string()
            } else if i == 0 {
                "per variant".to_string()
            } else {
                format!("per {}", p.levels[i - 1].level)
            };
            let cost = l
                .cost_seconds
                .map(|c| format!("{c:.3} s each"))
                .unwrap_or_else(|| "cost not measured".into());
            format!(
                "{reps} {}(s) {per} [{}; T^2 {:.4} %^2; {cost}]",
                l.level, l.basis, l.rel_var_pct2
            )
        })
        .collect();
    let blocks = match (p.tau2_pct2, p.effect_sd_pct) {
        (Some(t), Some(sd)) => format!(
            "; hosts as blocks: SD of a host's effect {sd:.2}% (tau^2 {t:.4} %^2 between hosts, \
             plus both variants' host means)"
        ),
        _ => String::new(),
    };
    let _ = writeln!(
        s,
        "  plan for a {}% change at {:.0}% power (alpha {}): {}; CV of a {} mean {:.2}%{blocks}{}",
        p.target.effect_pct,
        p.target.power * 100.0,
        p.target.alpha,
        parts.join(", "),
        p.levels[0].level,
        p.cv_top_mean_pct,
        p.seconds
            .map(|x| format!(", {} in all", super::fmt::duration(x)))
            .unwrap_or_default()
    );
}

/// `plan --from ID` of an experiment whose runs name replication levels: the Kalibera-Jones
/// repetitions at each level for the target, from experiment `id`'s components.
pub fn plan_advice(l: &Replicated, id: i64) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "From experiment {id}'s replication levels ({}), metric {}:",
        level_names(l).join(" > "),
        one_line(&l.metric)
    );
    match &l.plan {
        Some(p) => plan_text(&mut s, p),
        None => {
            let _ = writeln!(s, "  no plan: no variant has variance components");
        }
    }
    for n in &l.notes {
        let _ = writeln!(s, "  {}", one_line(n));
    }
    s
}

fn text(r: &Report) -> String {
    let Some(sec) = &r.replication else {
        return String::new();
    };
    let mut s = super::hosts::text(r);
    for l in &sec.metrics {
        components_table(&mut s, r, sec, l);
        if let Some(top) = l.levels.first() {
            comparisons(&mut s, &l.comparisons, top.name(), top.plural());
        }
        if let Some(p) = &l.plan {
            plan_text(&mut s, p);
        }
        for n in &l.notes {
            let _ = writeln!(s, "  {}", one_line(n));
        }
        let _ = writeln!(s);
    }
    s
}

impl Section for ReplicationSection {
    fn text(&self, r: &Report) -> String {
        text(r)
    }

    fn json(&self, _r: &Report) -> Option<anyhow::Result<serde_json::Value>> {
        Some(serde_json::to_value(self).map_err(Into::into))
    }
}
