//! `model ceiling --validate`: the advice checked by the knob it advises on. The workload runs
//! (an `abperf run` experiment, ABBA order, the knob written, verified and restored by the
//! runner) with tlb_single_page_flush_ceiling at the current value, at the advised one and at
//! one more point, where the knob is writable: here, or inside guests with `--kernel`; or
//! `--validate-with ID` takes such an experiment. Per ceiling the model's predicted change of
//! the workload's flushing cost and wall time beside the measured change of wall and system
//! time, each with its interval, and whether they agreed.

use crate::model::ceiling::{CeilingAdvice, Estimate, KnobCheck, KnobCheckRow};
use crate::model::{Dataset, Kind};
use crate::stats::bootstrap::bootstrap;
use crate::store::Store;
use crate::trace::ceiling::KNOB;
use anyhow::{Context, Result};
use std::process::{Command, Stdio};

/// Bootstrap resamples and seed of the measured intervals.
const RESAMPLES: usize = 4000;
const SEED: u64 = 29;

/// The ceilings to run: the current value, the advised one, and one more point (halfway
/// between them, or twice the current value when the advice is to keep it).
pub fn ceilings(current: u64, best: u64) -> Vec<u64> {
    let mid = (current + best) / 2;
    let other = if mid != current && mid != best {
        mid
    } else if best != current {
        // adjacent values: one step beyond the advised one, away from the current value
        if best > current {
            best + (best - current).max(1)
        } else {
            best.saturating_sub(1)
                .max(if best == 0 { current * 2 } else { 0 })
        }
    } else {
        (current * 2).max(1)
    };
    let mut v = vec![current, best, other];
    v.dedup();
    let mut seen = Vec::new();
    v.retain(|c| {
        let new = !seen.contains(c);
        seen.push(*c);
        new
    });
    v
}

/// The knob is writable here: read it (root, debugfs mounted, no lockdown).
pub fn knob_here() -> Result<u64, String> {
    let v = std::fs::read_to_string(KNOB).map_err(|e| format!("{KNOB}: {e}"))?;
    v.trim()
        .parse()
        .map_err(|_| format!("{KNOB} reads {:?}, not a number", v.trim()))
}

/// What `run` is given for the A/B: the knob's values, runs, the kernel options, the workload.
pub struct RunPlan<'a> {
    pub db: &'a crate::store::Location,
    pub values: &'a [u64],
    pub runs: u32,
    pub kernel: &'a [String],
    pub workload: &'a [String],
}

/// Run the A/B with this binary's `run` (its report goes to standard error) and return the
/// new experiment's id.
pub fn run_ab(plan: &RunPlan) -> Result<i64> {
    let exe = std::env::current_exe().context("the path of this abperf binary")?;
    let values: Vec<String> = plan.values.iter().map(|v| v.to_string()).collect();
    let mut cmd = Command::new(exe);
    cmd.arg("run")
        .arg("--db")
        .arg(plan.db)
        .arg("-k")
        .arg(format!("{KNOB}={}", values.join(",")))
        .arg("-r")
        .arg(plan.runs.to_string())
        .args(plan.kernel)
        .arg("--")
        .arg(shell_words::join(plan.workload))
        .stdin(Stdio::null())
        .stdout(std::io::stderr());
    let before = Store::open_to_write(plan.db)?
        .resolve_id("latest")
        .unwrap_or(0);
    let status = cmd.status().context("running the A/B of the ceiling")?;
    if !status.success() {
        anyhow::bail!(
            "the A/B of {KNOB} at {} failed ({status}); its output is above",
            values.join(", ")
        );
    }
    let store = Store::open_to_write(plan.db)?;
    let after = store.resolve_id("latest")?;
    if after <= before {
        anyhow::bail!("the A/B of the ceiling stored no experiment");
    }
    Ok(after)
}

/// The ceiling each variant of `ds` sets, by position.
fn variant_ceilings(ds: &Dataset) -> Vec<Option<u64>> {
    ds.variants
        .iter()
        .map(|v| {
            v.knobs
                .iter()
                .find(|k| k.path == KNOB)
                .and_then(|k| k.value.trim().parse().ok())
        })
        .collect()
}

/// Percent less of B's mean than A's, with the BCa interval of the ratio of means.
fn percent_less(a: &[f64], b: &[f64]) -> Option<Estimate> {
    let bs = bootstrap(a, b, RESAMPLES, SEED, 0.95).ok()?;
    let r = bs.ratio_means.ok()?;
    Some(Estimate {
        value: 100.0 * (1.0 - r.estimate),
        low: 100.0 * (1.0 - r.high),
        high: 100.0 * (1.0 - r.low),
    })
}

fn overlap(a: &Estimate, b: &Estimate) -> bool {
    a.low <= b.high && b.low <= a.high
}

/// Under TCG (the measured experiment's CPU, as its environment recorded it, is QEMU's emulated
/// one, or its boots ran under TCG), in words.
fn accelerator_note(ds: &crate::model::Dataset) -> Option<String> {
    let model = ds.experiments[0].environment["cpu_model"]
        .as_str()
        .unwrap_or("");
    let cpu = if model.contains("TCG") {
        format!("The measured CPU is {model:?}")
    } else if ds.accelerators().iter().any(|a| a == "tcg") {
        "The measured boots ran under QEMU's TCG".to_string()
    } else {
        return None;
    };
    Some(format!(
        "{cpu}: under QEMU's TCG every cost (INVLPG, full flushes, refills, IPIs) is the emulator's. This validates the method on QEMU's costs (the model predicts a knob's effect from the micro's costs and the capture's flushes), not the advice for any hardware."
    ))
}

/// Compare the A/B experiment `id` with the advice: one row per ceiling other than the
/// baseline (the variant at `baseline`). `tsc_hz` converts the predicted cycles to time.
pub fn check(
    store: &Store,
    id: i64,
    advice: &CeilingAdvice,
    baseline: u64,
    tsc_hz: Option<f64>,
) -> Result<KnobCheck> {
    let ds = store.load(id)?;
    let e = &ds.experiments[0];
    if e.kind != Kind::Run {
        return Err(crate::error::usage(format!(
            "--validate-with {id}: experiment {id} is of kind {}, not run",
            e.kind.as_str()
        )));
    }
    let ceilings = variant_ceilings(&ds);
    let base = ceilings.iter().position(|c| *c == Some(baseline)).ok_or_else(|| {
        crate::error::usage(format!(
            "--validate-with {id}: no variant sets {KNOB} to {baseline} (the current value, the baseline)"
        ))
    })?;
    let wall = |p: usize| ds.values(p, "wall_ns");
    let sys = |p: usize| ds.values(p, "sys_ns");
    let (wa, sa) = (wall(base), sys(base));
    let mut rows = Vec::new();
    for (pos, c) in ceilings.iter().enumerate() {
        let Some(c) = *c else { continue };
        if pos == base {
            continue;
        }
        let change = advice
            .changes
            .iter()
            .find(|ch| ch.to == c)
            .with_context(|| format!("no prediction for ceiling {c}"))?;
        let predicted_wall_pct = tsc_hz.filter(|_| !wa.is_empty()).map(|hz| {
            // cycles saved per second of the captured run, times its length, over the wall
            let per_run = |x: f64| x * advice.mix.seconds / hz * 1e9;
            let scale = 100.0 / crate::model::describe::mean(&wa);
            Estimate {
                value: per_run(change.cycles_less.value) * scale,
                low: per_run(change.cycles_less.low) * scale,
                high: per_run(change.cycles_less.high) * scale,
            }
        });
        let (wb, sb) = (wall(pos), sys(pos));
        let measured_wall_pct = percent_less(&wa, &wb);
        let agrees = match (&predicted_wall_pct, &measured_wall_pct) {
            (Some(p), Some(m)) => Some(overlap(p, m)),
            _ => None,
        };
        rows.push(KnobCheckRow {
            ceiling: c,
            runs: wb.len(),
            predicted_flush_pct: change.percent_less,
            predicted_wall_pct,
            measured_wall_pct,
            measured_sys_pct: percent_less(&sa, &sb),
            agrees,
        });
    }
    if rows.is_empty() {
        return Err(crate::error::usage(format!(
            "experiment {id} has no variant with {KNOB} at another value than {baseline}"
        )));
    }
    let agreed = rows.iter().all(|r| r.agrees == Some(true));
    let mut notes = vec![format!(
        "Measured: experiment {id} ({} runs of the baseline at {baseline}, ABBA order, the knob written, read back and restored by abperf run); predicted: micro {}'s costs and capture {}'s flushes.",
        wa.len(),
        advice.micro_id,
        advice.capture_id
    )];
    notes.extend(accelerator_note(&ds));
    if tsc_hz.is_none() {
        notes.push("The capture has no TSC frequency: the predicted cycles cannot be turned into wall time, so nothing was compared.".into());
    }
    Ok(KnobCheck {
        experiment_id: id,
        baseline,
        rows,
        agreed,
        notes,
    })
}

#[cfg(test)]
mod tests {
    use super::ceilings;

    #[test]
    fn three_distinct_ceilings() {
        assert_eq!(ceilings(33, 64), [33, 64, 48]);
        assert_eq!(ceilings(33, 0), [33, 0, 16]);
        assert_eq!(ceilings(33, 33), [33, 66]);
        assert_eq!(ceilings(33, 34), [33, 34, 35]);
        assert_eq!(ceilings(33, 32), [33, 32, 31]);
        assert_eq!(ceilings(1, 0), [1, 0, 2]);
    }
}
