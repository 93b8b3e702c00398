//! The profile differential under `compare`'s text verdicts (docs/profile.md): each variant's
//! profiled runs against the baseline's, when the experiment has profiled runs.

use super::output::AnalysisArgs;
use crate::error::usage;
use crate::model::Dataset;
use crate::model::profile::{Profile, ProfiledRun};
use crate::stats::profile_diff::{Options, differential};
use crate::store::Store;
use std::fmt::Write;

/// The text block of experiment `id`'s profiled runs: each variant against the baseline
/// (`--baseline`, else the first variant); empty when it has none.
pub fn block(store: &Store, id: i64, analysis: &AnalysisArgs) -> anyhow::Result<String> {
    let runs = store.profiles(id)?;
    if runs.is_empty() {
        return Ok(String::new());
    }
    let names: Vec<String> = store.variants(id)?.into_iter().map(|v| v.name).collect();
    let base = match &analysis.baseline {
        Some(b) => names
            .iter()
            .position(|n| n == b)
            .ok_or_else(|| usage(format!("--baseline {b}: no such variant")))?,
        None => 0,
    };
    let of = |v: usize| -> Vec<Profile> {
        runs.iter()
            .filter(|r| r.variant == v)
            .map(|r| r.profile.clone())
            .collect()
    };
    let event = &runs[0].profile.event;
    let mut out = cost_line(&runs, &store.load(id)?);
    let a = of(base);
    for (v, name) in names.iter().enumerate().filter(|(v, _)| *v != base) {
        match differential(&a, &of(v), Options::default()) {
            Ok(d) => out.push_str(&crate::report::profile::text(&d, event, &names[base], name)),
            Err(e) => {
                let _ = writeln!(
                    out,
                    "Profile of {} against {}: {e}",
                    crate::model::escape::control(name),
                    crate::model::escape::control(&names[base])
                );
            }
        }
    }
    Ok(out)
}

/// How many profiled runs the experiment has and what they cost: their time under perf (with
/// the read-back) in all and per run, against the timed runs' mean wall time.
fn cost_line(runs: &[ProfiledRun], data: &Dataset) -> String {
    let wall: i64 = runs.iter().map(|r| r.wall_ns).sum();
    let each = wall as f64 / runs.len() as f64 / 1e9;
    let timed: Vec<f64> = (0..data.variants.len())
        .flat_map(|v| data.values(v, "wall_ns"))
        .collect();
    let against = if timed.is_empty() {
        String::new()
    } else {
        let mean = timed.iter().sum::<f64>() / timed.len() as f64 / 1e9;
        format!(" against {mean:.2} s per timed run")
    };
    format!(
        "\n{} profiled runs of {} (not timed; {:.1} s under perf in all, {each:.2} s each{against})\n",
        runs.len(),
        crate::model::escape::control(&runs[0].profile.event),
        wall as f64 / 1e9,
    )
}
