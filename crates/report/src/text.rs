//! `--format text`: what a terminal shows. The [`View`] picks the layout: `report`'s
//! perf-stat-like blocks and verdicts, `compare`'s detailed comparisons, `show`'s listing of an
//! experiment, the tables of a trace capture or a micro suite, the end of `run`.

use super::fmt::{metric_scale, one_line};
use super::section::Section;
use super::{Render, Report, View, compare, levels, perfstat};
use std::fmt::Write;

pub struct Text;

impl Render for Text {
    fn render(&self, r: &Report) -> anyhow::Result<String> {
        let mut out = by_view(r);
        // The profiled runs' cost and differentials, after the verdicts (docs/profile.md).
        if let Some(p) = &r.profile
            && matches!(r.view, View::Report | View::Compare | View::RunEnd)
        {
            out.push_str(&p.text(r));
        }
        Ok(out)
    }
}

/// The text of `r`'s view.
fn by_view(r: &Report) -> String {
    {
        match r.view {
            View::Report | View::Export => report(r),
            View::Compare => compare::Details.text(r),
            View::Show { runs } => show(r, runs),
            View::Trace(_) => match &r.trace {
                Some(t) => t.text(r),
                None => report(r),
            },
            View::Micro => match &r.micro {
                Some(m) => m.text(r),
                None => report(r),
            },
            View::RunEnd => run_end(r),
            View::Ceiling => match &r.ceiling {
                Some(a) => a.text(r),
                None => report(r),
            },
        }
    }
}

/// The verdict lines, one per comparison (prefixed with the metric when `name` or when there are
/// several), then the notes.
fn verdict_lines(r: &Report, name: bool) -> Vec<String> {
    let many = name || r.selected().len() > 1;
    let mut out: Vec<String> = r
        .comparisons()
        .iter()
        .map(|c| {
            if many {
                format!("{}: {}", one_line(&c.metric), one_line(&c.line))
            } else {
                one_line(&c.line)
            }
        })
        .collect();
    out.extend(r.verdict_notes().iter().map(|n| one_line(n)));
    out
}

/// The end of `abperf run`: a perf-stat block per variant, then the verdict lines.
fn run_end(r: &Report) -> String {
    let mut s = String::new();
    for pos in 0..r.data.variants.len() {
        let _ = writeln!(s, "{}", perfstat::variant_block(&r.data, pos));
    }
    let lines = verdict_lines(r, false);
    for l in &lines {
        let _ = writeln!(s, "{l}");
    }
    if !lines.is_empty() {
        let _ = writeln!(s);
    }
    if let Some(l) = &r.levels {
        s.push_str(&l.text(r));
    }
    if let Some(l) = &r.replication {
        s.push_str(&l.text(r));
    }
    s
}

fn header(s: &mut String, r: &Report) {
    match r.data.experiment() {
        Some(e) => {
            let _ = writeln!(
                s,
                "Experiment {} \"{}\" ({}, {}, created {})",
                e.id,
                one_line(&e.name),
                e.kind.as_str(),
                e.status.as_str(),
                e.created
            );
        }
        None => {
            let _ = writeln!(s, "{}", one_line(&r.title()));
        }
    }
    let _ = writeln!(
        s,
        "  {} variant(s), {} run(s), {} analysed (n={}); {}",
        r.data.variants.len(),
        r.data.runs.len(),
        r.data.counted_total(),
        r.n_text(),
        r.order_text()
    );
    let files = r.files();
    if !files.is_empty() {
        let _ = writeln!(s, "  imported from {}", one_line(&files.join(", ")));
    }
}

fn footer(s: &mut String, r: &Report) {
    let _ = writeln!(s, "{}", one_line(&r.machine_text()));
    let tests = r.tests();
    if !tests.is_empty() {
        let _ = writeln!(s, "tests: {tests}");
    }
    let _ = writeln!(
        s,
        "abperf {}, data sha256 {}",
        r.tool_version, r.data_sha256
    );
}

/// `abperf report --format text`.
fn report(r: &Report) -> String {
    let mut s = String::new();
    header(&mut s, r);
    // A micro experiment's hundreds of configurations get the micro tables below instead.
    let blocks = if r.micro.is_some() {
        0
    } else {
        r.data.variants.len()
    };
    for (pos, v) in r.data.variants.iter().enumerate().take(blocks) {
        let _ = writeln!(s);
        let _ = writeln!(
            s,
            " Performance summary for '{}' ({}):",
            one_line(&v.name),
            r.runs_text(pos)
        );
        for l in super::ran::lines_but(v, &[]) {
            let _ = writeln!(s, "   {}", one_line(&l));
        }
        let _ = writeln!(s);
        for m in r.main_metrics() {
            let Some(desc) = r.description(&v.name, &m.name) else {
                continue;
            };
            let sc = metric_scale(r, &m.name);
            let pm = r
                .pm_pct(&v.name, &m.name)
                .map(|p| format!("( +- {p:>5.2}% )"))
                .unwrap_or_default();
            let _ = writeln!(
                s,
                "  {:>16} {:<4} {:<24} {pm}",
                sc.num(desc.mean),
                sc.unit_label(&m.unit),
                one_line(&m.name)
            );
        }
        for (k, sv) in &v.summary {
            let sc = super::fmt::scale_for(&sv.unit, sv.value);
            let _ = writeln!(
                s,
                "  {:>16} {:<4} {:<24} (as imported, no per-run values)",
                sc.num(sv.value),
                sc.unit_label(&sv.unit),
                one_line(k)
            );
        }
    }
    let _ = writeln!(s);
    if r.analysis.is_some() {
        let _ = writeln!(
            s,
            "Verdicts (baseline '{}', alpha {}, metric {}):",
            one_line(r.baseline()),
            r.alpha(),
            one_line(&r.selected().join(", "))
        );
    } else {
        let _ = writeln!(s, "Verdicts:");
    }
    for l in verdict_lines(r, true) {
        let _ = writeln!(s, "  {l}");
    }
    let _ = writeln!(s);
    if let Some(l) = &r.levels {
        s.push_str(&l.text(r));
    }
    if let Some(l) = &r.replication {
        s.push_str(&l.text(r));
    }
    if let Some(t) = &r.trace {
        let _ = writeln!(s, "Trace tables:\n{}", t.text(r).trim_end());
        let _ = writeln!(s);
    }
    if let Some(m) = &r.micro {
        let _ = writeln!(s, "{}", m.text(r).trim_end());
        let _ = writeln!(s);
    }
    footer(&mut s, r);
    s
}

fn field(env: &serde_json::Value, key: &str) -> String {
    match &env[key] {
        serde_json::Value::Null => "(not available)".into(),
        serde_json::Value::String(s) => one_line(s),
        v => one_line(&v.to_string()),
    }
}

/// `abperf show`: the experiment, its design and environment, variants and knobs, a perf-stat
/// block per variant; every run with `--runs`.
fn show(r: &Report, runs: bool) -> String {
    let mut s = String::new();
    let Some(e) = r.data.experiment() else {
        return report(r);
    };
    experiment(&mut s, r, e);
    environment(&mut s, &e.environment);
    variants(&mut s, r);
    s.push_str(&levels::Boots.text(r));
    let _ = writeln!(s);
    if let Some(m) = &r.micro {
        let _ = writeln!(s, "{}", m.text(r).trim_end());
    } else {
        for pos in 0..r.data.variants.len() {
            let _ = writeln!(s, "{}", perfstat::variant_block(&r.data, pos));
        }
    }
    if runs {
        run_list(&mut s, r);
    }
    s
}

/// The experiment's name, kind, status, command, seed and design.
fn experiment(s: &mut String, r: &Report, e: &abperf_model::Experiment) {
    let _ = writeln!(s, "experiment {}: {}", e.id, one_line(&e.name));
    let _ = writeln!(
        s,
        "  kind {}, status {}, created {}",
        e.kind.as_str(),
        e.status.as_str(),
        e.created
    );
    let _ = writeln!(
        s,
        "  command: {}",
        one_line(&shell_words::join(&e.command_line))
    );
    if !e.labels.is_empty() {
        let labels: Vec<String> = e.labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let _ = writeln!(s, "  labels: {}", one_line(&labels.join(" ")));
    }
    if let Some(seed) = e.seed {
        let _ = writeln!(
            s,
            "  seed {seed}, {} of {} scheduled runs stored",
            r.data.runs.len(),
            r.data.planned
        );
    }
    let _ = writeln!(s, "  design: {}", one_line(&e.design.to_string()));
}

/// The environment fields the experiment recorded.
fn environment(s: &mut String, env: &serde_json::Value) {
    let _ = writeln!(s, "environment:");
    for key in [
        "kernel",
        "cmdline",
        "cpu_model",
        "cpu_count",
        "mem_total_kib",
        "thp_enabled",
        "cpufreq_governor",
        "clocksource",
        "hostname",
        "abperf_version",
    ] {
        let _ = writeln!(s, "  {key:<18} {}", field(env, key));
    }
    let _ = writeln!(
        s,
        "  {:<18} {}",
        "virtualization",
        one_line(&env["virtualization"].to_string())
    );
    if let (Some(commit), Some(date)) = (
        env["abperf"]["commit"].as_str(),
        env["abperf"]["build_date"].as_str(),
    ) {
        let _ = writeln!(
            s,
            "  {:<18} commit {}, built {}",
            "abperf_build",
            one_line(commit),
            one_line(date)
        );
    }
}

/// Each variant's command, workload and knobs.
fn variants(s: &mut String, r: &Report) {
    let _ = writeln!(s, "variants:");
    for (pos, v) in r.data.variants.iter().enumerate() {
        let _ = writeln!(
            s,
            "  [{pos}] {}: {}",
            one_line(&v.name),
            one_line(v.command.as_deref().unwrap_or("-"))
        );
        if let Some(w) = &v.workload {
            let _ = writeln!(
                s,
                "      workload {} version {}, seed {}",
                one_line(&w.name),
                w.version,
                if w.per_run_seed {
                    "per run (the experiment's seed + the run's seq)"
                } else {
                    "fixed by the command"
                }
            );
        }
        for k in &v.knobs {
            let _ = writeln!(
                s,
                "      knob {} = {} (original: {})",
                one_line(&k.path),
                one_line(&k.value),
                one_line(k.original.as_deref().unwrap_or("not recorded"))
            );
        }
        // The rest of what it ran: -L parameters (a micro configuration's are in its name) and
        // the kernel's provenance (the kernel itself is in the list of what each variant boots).
        use super::ran::Item;
        let skip: &[Item] = if r.micro.is_some() {
            &[Item::Command, Item::Knob, Item::Kernel, Item::Parameters]
        } else {
            &[Item::Command, Item::Knob, Item::Kernel]
        };
        for l in super::ran::lines_but(v, skip) {
            let _ = writeln!(s, "      {}", one_line(&l));
        }
    }
}

/// `--runs`: one line per run with its times and peak memory.
fn run_list(s: &mut String, r: &Report) {
    // Long names keep what tells them apart (cutting them at the width makes them alike).
    let names: Vec<String> = r.data.variants.iter().map(|v| one_line(&v.name)).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let labels = super::labels::short_labels(&refs, 60);
    let w = labels
        .iter()
        .map(|l| l.chars().count())
        .max()
        .unwrap_or(7)
        .clamp(7, 60);
    let _ = writeln!(
        s,
        "{:>5}  {:<w$} {:<7} {:<8} {:>14} {:>12} {:>12} {:>12}",
        "seq", "variant", "warmup", "status", "wall", "user", "sys", "maxrss KiB"
    );
    for run in &r.data.runs {
        let t = |k: &str| {
            run.value(k)
                .map(|x| {
                    let (n, u) = perfstat::human(x, "ns");
                    format!("{n} {u}")
                })
                .unwrap_or_default()
        };
        let _ = writeln!(
            s,
            "{:>5}  {:<w$} {:<7} {:<8} {:>14} {:>12} {:>12} {:>12}",
            run.seq,
            labels.get(run.variant).map(String::as_str).unwrap_or("?"),
            if run.warmup { "yes" } else { "" },
            run.status.as_str(),
            t("wall_ns"),
            t("user_ns"),
            t("sys_ns"),
            run.value("maxrss_kib")
                .map(|x| format!("{x:.0}"))
                .unwrap_or_default()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::super::testdata::sample;
    use super::*;

    #[test]
    fn perf_stat_like_blocks() {
        let d = sample();
        let t = Text.render(&d).unwrap();
        assert!(t.contains(" Performance summary for 'A' (8 runs):"), "{t}");
        assert!(t.contains("user_ns"), "{t}");
        assert!(t.contains("( +- "), "{t}");
        assert!(
            !t.contains("user_ns.stderr_pct"),
            "auxiliary metrics stay out: {t}"
        );
        assert!(
            t.contains("Verdicts (baseline 'A', alpha 0.05, metric user_ns):"),
            "{t}"
        );
        assert!(t.contains(&d.data_sha256), "{t}");
        assert!(!t.contains("NaN"), "{t}");
    }

    #[test]
    fn views() {
        let mut d = sample();
        d.view = View::Show { runs: true };
        let t = Text.render(&d).unwrap();
        assert!(t.starts_with("experiment 7: tlb <flush> & co"), "{t}");
        assert_eq!(t.lines().filter(|l| l.contains(" ok ")).count(), 16, "{t}");
        d.view = View::Compare;
        let t = Text.render(&d).unwrap();
        let line = &d.comparisons()[0].line;
        assert!(t.starts_with(&format!("user_ns: {line}\n")), "{t}");
        assert!(!t.contains("B vs A (baseline)"), "{t}");
        d.details = true;
        let t = Text.render(&d).unwrap();
        assert!(t.contains("\nuser_ns: B vs A (baseline)"), "{t}");
        assert!(t.contains(&format!("sha256 {}", d.data_sha256)), "{t}");
        d.view = View::RunEnd;
        let t = Text.render(&d).unwrap();
        assert!(
            t.contains(" Variant 'B' (8 runs):") && t.contains("B is "),
            "{t}"
        );
    }
}
