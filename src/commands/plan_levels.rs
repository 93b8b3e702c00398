//! `abperf plan --from ID` of an experiment with boots (kernel variants), or whose runs name
//! their host, boot or invocation: how many units of each level reach the effect with the least
//! wall time, from the experiment's variance components and its measured costs of each level
//! (Kalibera and Jones 2013).

use crate::error::usage;
use crate::model::Dataset;
use crate::stats::levels::{self, Target};

pub fn run(ds: &Dataset, id: i64, metric: &str, target: Target) -> anyhow::Result<i32> {
    if ds.metric(metric).is_none() {
        return Err(usage(format!(
            "--metric {metric}: experiment {id} has no such metric"
        )));
    }
    let l = levels::analyse(ds, metric, 0, target).expect("the dataset has boots");
    let answer = crate::report::plan::FromBoots {
        target,
        experiment: id,
        levels: &l,
    };
    print!("{}", answer.text());
    if l.plan.is_none() {
        return Err(anyhow::anyhow!(
            "experiment {id}: no two-level plan (see above)"
        ));
    }
    Ok(0)
}

/// `plan --from ID` of runs that name replication levels; Ok(None) when no level above the runs
/// is replicated (the one-level plan applies).
pub fn run_replicated(
    ds: &Dataset,
    id: i64,
    metric: &str,
    target: Target,
) -> anyhow::Result<Option<i32>> {
    let Some(l) = crate::stats::replicated::analyse(ds, metric, 0, target) else {
        return Ok(None);
    };
    print!("{}", crate::report::replication::plan_advice(&l, id));
    if l.plan.is_none() {
        return Err(anyhow::anyhow!(
            "experiment {id}: no plan over replication levels (see above)"
        ));
    }
    Ok(Some(0))
}
