//! `abperf plan`: runs per variant needed to resolve an effect with the requested power
//! (non-central t), from a CV or from a stored pilot experiment, with the expected wall-clock
//! cost from the stored run durations.

use super::output::DEFAULT_METRIC;
use crate::error::usage;
use crate::model::describe::describe;
use crate::report::plan::{self, PilotVariant};
use crate::stats::levels::Target;
use crate::store::Store;

#[derive(Debug, clap::Args)]
pub struct PlanArgs {
    /// Smallest effect to resolve, in percent (e.g. 0.5)
    #[arg(long, value_name = "PCT")]
    pub effect: f64,
    /// Pilot: a stored experiment whose run-to-run variation (CV) and durations to use (or --cv)
    #[arg(long, value_name = "ID", conflicts_with = "cv")]
    pub from: Option<String>,
    /// Coefficient of variation (SD / mean) in percent, when there is no pilot (or --from)
    #[arg(long, value_name = "PCT")]
    pub cv: Option<f64>,
    /// Power to reach
    #[arg(long, default_value_t = 0.8, value_name = "P")]
    pub power: f64,
    /// Significance level (two-sided)
    #[arg(long, default_value_t = 0.05, value_name = "A")]
    pub alpha: f64,
    /// With --from: the metric whose CV is used (stored or short name: wall, user, sys, ...;
    /// default wall_ns)
    #[arg(long, value_name = "NAME")]
    pub metric: Option<String>,
    #[command(flatten)]
    pub db: crate::commands::DbArgs,
}

pub fn run(args: PlanArgs) -> anyhow::Result<i32> {
    if !(args.effect > 0.0 && args.effect < 100.0) {
        return Err(usage(format!(
            "--effect {}: expected a percentage between 0 and 100, e.g. 0.5",
            args.effect
        )));
    }
    if !(args.power > 0.0 && args.power < 1.0) {
        return Err(usage(format!(
            "--power {}: expected a probability between 0 and 1, e.g. 0.8",
            args.power
        )));
    }
    if !(args.alpha > 0.0 && args.alpha < 0.5) {
        return Err(usage(format!(
            "--alpha {}: expected a level between 0 and 0.5, e.g. 0.05",
            args.alpha
        )));
    }
    let target = Target {
        effect_pct: args.effect,
        alpha: args.alpha,
        power: args.power,
    };
    if let Some(cv) = args.cv {
        if !(cv > 0.0 && cv.is_finite()) {
            return Err(usage(format!(
                "--cv {cv}: expected a percentage above 0, e.g. 0.3"
            )));
        }
        print!("{}", plan::FromCv { target, cv }.text());
        return Ok(0);
    }
    let Some(reference) = args.from.as_deref() else {
        return Err(usage(
            "plan needs the run-to-run variation: --from ID (a stored pilot experiment, e.g. \
             --from latest) or --cv PCT (the coefficient of variation in percent, e.g. --cv 0.3)",
        ));
    };
    let store = Store::open_to_read(&args.db.location()?)?;
    let id = super::lookup::experiment_id(&store, reference)?;
    let ds = store.load(id)?;
    let metric = match &args.metric {
        Some(m) => super::metrics::resolve(&ds, m, "--metric")?,
        None => super::metrics::default_metric(&ds, DEFAULT_METRIC).ok_or_else(|| {
            usage(format!(
                "experiment {id}: no metric is stored for every variant; {}",
                super::metrics::per_variant(&ds)
            ))
        })?,
    };
    if ds.has_boots() {
        return super::plan_levels::run(&ds, id, &metric, target);
    }
    if ds.has_labels()
        && let Some(code) = super::plan_levels::run_replicated(&ds, id, &metric, target)?
    {
        return Ok(code);
    }
    let mut worst: Option<(f64, String)> = None;
    let mut per_variant = Vec::new();
    let mut cost_ns = 0.0;
    let mut durations_known = true;
    for (pos, v) in ds.variants.iter().enumerate() {
        let values = ds.values(pos, &metric);
        let Some(d) = describe(&values) else { continue };
        if d.n < 2 {
            per_variant.push(PilotVariant::TooFew {
                name: v.name.clone(),
                n: d.n,
            });
            continue;
        }
        let Some(cv) = d.cv.map(|c| 100.0 * c) else {
            continue;
        };
        per_variant.push(PilotVariant::Cv {
            name: v.name.clone(),
            cv,
            n: d.n,
        });
        if worst.as_ref().is_none_or(|w| cv > w.0) {
            worst = Some((cv, v.name.clone()));
        }
        let durs: Vec<f64> = ds.counted(pos).filter_map(|r| r.duration_ns()).collect();
        match describe(&durs) {
            Some(dd) => cost_ns += dd.mean,
            None => durations_known = false,
        }
    }
    let Some((cv, name)) = worst else {
        return Err(usage(format!(
            "experiment {id}: no variant has two or more values of {metric}; run more, or choose \
             another with --metric (metrics: {})",
            super::metrics::listing(&ds)
        )));
    };
    let pilot = plan::FromPilot {
        target,
        variants: per_variant,
        worst: (cv, name),
        n_variants: ds.variants.len(),
        run_cost_ns: (durations_known && cost_ns > 0.0).then_some(cost_ns),
        untimed_ns: ds.untimed_per_run_ns(),
    };
    print!("{}", pilot.text());
    Ok(0)
}
