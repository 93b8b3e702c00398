//! `abperf plan --from ID` of an experiment with boots (kernel variants): how many boots and
//! runs per boot reach the effect with the least wall time, from the experiment's variance
//! components and its measured costs of a boot and of a run (Kalibera and Jones 2013).

use super::output::fmt_duration;
use crate::error::usage;
use crate::model::Dataset;
use crate::stats::levels::{self, Target};
use crate::stats::verdict::fmt_effect;

/// Print the plan for `metric` of experiment `id` (`ds`, which has boots) to reach `target`.
pub fn run(ds: &Dataset, id: i64, metric: &str, target: Target) -> anyhow::Result<i32> {
    if ds.metric(metric).is_none() {
        return Err(usage(format!(
            "--metric {metric}: experiment {id} has no such metric"
        )));
    }
    let l = levels::analyse(ds, metric, 0, target).expect("the dataset has boots");
    println!(
        "To resolve a {} change with {:.0}% power (two-sided Welch on boot means, alpha {}), from \
         experiment {id}'s boots:",
        fmt_effect(target.effect_pct),
        target.power * 100.0,
        target.alpha
    );
    for v in &l.variants {
        match &v.components {
            Some(c) => println!(
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
            None => println!(
                "  {}: {}",
                v.variant,
                v.note.as_deref().unwrap_or("no values")
            ),
        }
    }
    if let Some(c) = &l.costs {
        println!(
            "  cost: a boot {:.1} s beyond its timed runs, a run {:.2} s (host wall time over {} boot(s))",
            c.boot_seconds, c.run_seconds, c.boots_measured
        );
    }
    match &l.plan {
        Some(p) => {
            let line = |d: &levels::Design| match (d.boots, d.seconds) {
                (Some(b), Some(s)) => format!(
                    "{} run(s) per boot x {b} boots per variant: {} for {} variant(s)",
                    d.runs_per_boot,
                    fmt_duration(s * 1e9),
                    p.variants
                ),
                _ => format!(
                    "{} run(s) per boot: more boots than abperf plans for",
                    d.runs_per_boot
                ),
            };
            println!(
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
                println!("  instead: {}", line(d));
            }
        }
        None => {
            for n in &l.notes {
                println!("  {n}");
            }
            return Err(anyhow::anyhow!(
                "experiment {id}: no two-level plan (see above)"
            ));
        }
    }
    for n in l.notes.iter().filter(|n| n.starts_with("TCG")) {
        println!("  {n}");
    }
    Ok(0)
}

/// The SD of a variance component relative to the mean, in percent.
fn pct(var: Option<f64>, mean: f64) -> String {
    match var {
        Some(v) if mean != 0.0 => format!("{:.3}%", 100.0 * v.sqrt() / mean.abs()),
        _ => "n/a".into(),
    }
}
