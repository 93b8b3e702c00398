//! The profile section of a stored experiment's report (docs/profile.md): its profiled runs and
//! each variant's differential against the baseline, when it has profiled runs.

use crate::error::usage;
use crate::model::profile::Profile;
use crate::report::profile::{ProfileSection, VariantDiff};
use crate::stats::profile_diff::{Options, differential};
use crate::store::Store;

/// The profile section of experiment `id` (`None` without profiled runs): its runs and, unless
/// `raw` (`export`), each variant's differential against `baseline` (else the first variant).
pub fn section(
    store: &Store,
    id: i64,
    baseline: Option<&str>,
    raw: bool,
) -> anyhow::Result<Option<ProfileSection>> {
    let runs = store.profiles(id)?;
    if runs.is_empty() {
        return Ok(None);
    }
    let names: Vec<String> = store.variants(id)?.into_iter().map(|v| v.name).collect();
    let base = match baseline {
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
    let mut diffs = Vec::new();
    if !raw {
        let a = of(base);
        for (v, name) in names.iter().enumerate().filter(|(v, _)| *v != base) {
            let d = differential(&a, &of(v), Options::default());
            diffs.push(VariantDiff {
                baseline: names[base].clone(),
                variant: name.clone(),
                error: d.as_ref().err().map(|e| e.to_string()),
                differential: d.ok(),
            });
        }
    }
    Ok(Some(ProfileSection { runs, diffs }))
}
