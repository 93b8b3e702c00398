//! Replication levels: a run belongs to a block (its round in the schedule), an invocation (the
//! process that made it), a boot and a host. Runs that share an invocation, a boot or a host are
//! correlated; only units of the highest level that is replicated are independent replicates
//! (docs/statistics.md#levels).
//!
//! [`Labels`](super::run::Labels) are the invocation, boot and host a run names (imported
//! tables carry them; a run of a booted kernel finds its boot among the dataset's
//! [`Boot`](super::Boot)s instead). [`Dataset::unit_at`] names a run's unit at a level,
//! [`Dataset::level_means`] makes the dataset of unit means that verdicts are computed from.

use super::dataset::Dataset;
use super::describe::mean;
use super::metric::Metric;
use super::run::Run;
use serde::Serialize;
use std::collections::BTreeMap;

/// A replication level above the run, from the top down.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    Host,
    Boot,
    Invocation,
}

impl Level {
    /// Every level, top down.
    pub const ALL: [Level; 3] = [Level::Host, Level::Boot, Level::Invocation];

    pub fn name(self) -> &'static str {
        match self {
            Level::Host => "host",
            Level::Boot => "boot",
            Level::Invocation => "invocation",
        }
    }

    /// The plural, for "n=4+4 hosts".
    pub fn plural(self) -> &'static str {
        match self {
            Level::Host => "hosts",
            Level::Boot => "boots",
            Level::Invocation => "invocations",
        }
    }
}

impl Dataset {
    /// The unit of `run` at `level`, made unique within the run's variant by the levels above it
    /// ("host1/boot3": boot 3 of host 1 is not boot 3 of host 2). A run of a booted kernel is in
    /// the boot that made it. None when the run does not say.
    pub fn unit_at(&self, run: &Run, level: Level) -> Option<String> {
        let own = match level {
            Level::Host => run.labels.host.clone(),
            Level::Boot => run.labels.boot.clone().or_else(|| {
                self.boot_of(run.variant, run.seq)
                    .map(|b| format!("#{}", b.number))
            }),
            Level::Invocation => run.labels.invocation.clone(),
        }?;
        // The nearest level above that the run names carries the path of the ones above it.
        let above = Level::ALL
            .iter()
            .rev()
            .filter(|&&l| l < level)
            .find_map(|&l| self.unit_at(run, l));
        Some(match above {
            Some(a) => format!("{a}/{own}"),
            None => own,
        })
    }

    /// The levels at which some counted runs name a unit and others none (runs imported with
    /// `--host` into an experiment whose own runs name no host): each with how many counted runs
    /// name one and how many do not. Empty when every level is named by all counted runs or by
    /// none.
    pub fn mixed_labels(&self) -> Vec<(Level, usize, usize)> {
        Level::ALL
            .iter()
            .filter_map(|&level| {
                let counted = self.runs.iter().filter(|r| r.counts());
                let (named, unnamed) = counted.fold((0, 0), |(n, u), r| {
                    if self.unit_at(r, level).is_some() {
                        (n + 1, u)
                    } else {
                        (n, u + 1)
                    }
                });
                (named > 0 && unnamed > 0).then_some((level, named, unnamed))
            })
            .collect()
    }

    /// Whether any run names an invocation, boot or host.
    pub fn has_labels(&self) -> bool {
        self.runs.iter().any(|r| !r.labels.is_empty())
    }

    /// The dataset of `level` means: one row per unit of a variant at `level` with at least one
    /// counted run, whose metrics are the means over the unit's counted runs (a run without a
    /// unit at the level is left out), in order of the units' first runs (a booted kernel's boots
    /// in boot order). A unit's block is its first run's, or for a booted kernel's boot the boot's
    /// own ABBA block; with `level` boot and booted kernels this is [`Dataset::boot_level`].
    pub fn level_means(&self, level: Level) -> Dataset {
        let mut units: BTreeMap<(usize, String), Vec<&Run>> = BTreeMap::new();
        let mut first: Vec<(usize, String)> = Vec::new();
        for r in self.runs.iter().filter(|r| r.counts()) {
            let Some(u) = self.unit_at(r, level) else {
                continue;
            };
            let key = (r.variant, u);
            if !units.contains_key(&key) {
                first.push(key.clone());
            }
            units.entry(key).or_default().push(r);
        }
        // A booted kernel's boot, found from a run of it (its number and ABBA block).
        let booted = |run: &Run| {
            (level == Level::Boot && run.labels.boot.is_none())
                .then(|| self.boot_of(run.variant, run.seq))
                .flatten()
        };
        // A booted kernel's boots in boot order; labelled units as they first appear.
        first.sort_by_key(|key| booted(units[key][0]).map(|b| b.number));
        let mut runs = Vec::new();
        for (number, key) in first.iter().enumerate() {
            let members = &units[key];
            let mut metrics = Vec::new();
            for m in &self.metrics {
                let v: Vec<f64> = members.iter().filter_map(|r| r.value(&m.name)).collect();
                if !v.is_empty() {
                    metrics.push(Metric::new(&m.name, mean(&v), &m.unit));
                }
            }
            runs.push(Run {
                block: booted(members[0]).map_or(members[0].block, |b| b.block),
                started_ns: members.iter().map(|r| r.started_ns).min().unwrap_or(0),
                ended_ns: members.iter().map(|r| r.ended_ns).max().unwrap_or(0),
                exit_code: Some(0),
                ..Run::ok(number as u32, key.0, metrics)
            });
        }
        let mut ds = Dataset::new(
            self.experiments.clone(),
            self.variants.clone(),
            runs,
            format!("{} ({} means)", self.source, level.name()),
        );
        ds.ordered = self.ordered;
        ds
    }
}

impl Dataset {
    /// The (variant, host) pairs in order of first appearance, and each run's pair (None for an
    /// uncounted run without a host).
    #[allow(clippy::type_complexity)]
    fn host_keys(&self) -> Result<(Vec<(usize, String)>, Vec<Option<usize>>), String> {
        let mut keys: Vec<(usize, String)> = Vec::new();
        let mut of_run: Vec<Option<usize>> = Vec::with_capacity(self.runs.len());
        for r in &self.runs {
            let Some(h) = &r.labels.host else {
                if r.counts() {
                    return Err(format!(
                        "variant '{}' has runs that name no host",
                        self.variants[r.variant].name
                    ));
                }
                of_run.push(None);
                continue;
            };
            let key = (r.variant, h.clone());
            let pos = keys.iter().position(|k| *k == key).unwrap_or_else(|| {
                keys.push(key);
                keys.len() - 1
            });
            of_run.push(Some(pos));
        }
        Ok((keys, of_run))
    }

    /// Each machine alone (`compare --by host`): one variant per variant and host, named
    /// "NAME host=HOST" with the parameters host=HOST and variant=NAME (unless it has one)
    /// beside its own, holding that host's runs
    /// with the host label taken off (the levels below it stay). Variants keep their order, and
    /// each one's hosts follow in order of first appearance. An error naming the first variant
    /// with a counted run that names no host.
    pub fn per_host(&self) -> Result<Dataset, String> {
        let (keys, of_run) = self.host_keys()?;
        // Variant order first, then hosts as they appeared.
        let mut order: Vec<usize> = (0..keys.len()).collect();
        order.sort_by_key(|&i| (keys[i].0, i));
        let mut new_pos = vec![0; keys.len()];
        for (n, &i) in order.iter().enumerate() {
            new_pos[i] = n;
        }
        let variants = order
            .iter()
            .map(|&i| {
                let (v, host) = &keys[i];
                let mut variant = self.variants[*v].clone();
                // Its own name as a parameter too, so that the baseline of each machine's
                // family is the chosen baseline's variant on it.
                let own = variant.name.clone();
                variant.parameters.entry("variant".into()).or_insert(own);
                variant.name = format!("{} host={host}", variant.name);
                variant.parameters.insert("host".into(), host.clone());
                variant
            })
            .collect();
        let runs = self
            .runs
            .iter()
            .zip(&of_run)
            .filter_map(|(r, k)| {
                let mut r = r.clone();
                r.variant = new_pos[(*k)?];
                r.labels.host = None;
                Some(r)
            })
            .collect();
        let mut ds = Dataset::new(
            self.experiments.clone(),
            variants,
            runs,
            self.source.clone(),
        );
        ds.ordered = self.ordered;
        Ok(ds)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataset::testdata::two_variants;
    use crate::run::Labels;

    #[test]
    fn units_are_nested_and_means_per_unit() {
        let mut d = two_variants("A", "B");
        for (i, r) in d.runs.iter_mut().enumerate() {
            r.labels = Labels {
                invocation: Some(format!("i{}", i % 4)),
                boot: Some(format!("b{}", i % 4)),
                host: Some(format!("h{}", i % 2)),
            };
        }
        let r = &d.runs[5];
        assert_eq!(d.unit_at(r, Level::Host).unwrap(), "h1");
        assert_eq!(d.unit_at(r, Level::Boot).unwrap(), "h1/b1");
        assert_eq!(d.unit_at(r, Level::Invocation).unwrap(), "h1/b1/i1");
        assert!(d.has_labels());
        let hosts = d.level_means(Level::Host);
        // two_variants: even seqs variant 0, odd variant 1; host = i % 2 = variant.
        assert_eq!(hosts.runs.len(), 2);
        let boots = d.level_means(Level::Boot);
        assert_eq!(boots.runs.len(), 4);
        let v0: Vec<f64> = d
            .runs
            .iter()
            .filter(|r| r.variant == 0 && r.seq % 4 == 0 && r.counts())
            .filter_map(|r| r.value("user_ns"))
            .collect();
        let got = boots.runs[0].value("user_ns").unwrap();
        assert!((got - mean(&v0)).abs() < 1e-6, "{got} {v0:?}");
        // Each machine alone: one variant per variant and host, the host a parameter.
        let split = d.per_host().unwrap();
        let names: Vec<&str> = split.variants.iter().map(|v| v.name.as_str()).collect();
        assert_eq!(names, ["A host=h0", "B host=h1"]);
        assert_eq!(split.variants[1].parameters["host"], "h1");
        assert_eq!(split.variants[1].parameters["variant"], "B");
        assert_eq!(split.runs.len(), d.runs.len());
        assert!(split.runs.iter().all(|r| r.labels.host.is_none()));
        assert_eq!(split.unit_at(&split.runs[5], Level::Boot).unwrap(), "b1");
        let mut unnamed = d.clone();
        unnamed.runs[0].labels.host = None;
        assert_eq!(
            unnamed.per_host().unwrap_err(),
            "variant 'A' has runs that name no host"
        );
        // Every run names all three levels: nothing mixed; one run without its host is.
        assert!(d.mixed_labels().is_empty());
        let counted = d.runs.iter().filter(|r| r.counts()).count();
        let first = d.runs.iter().position(|r| r.counts()).unwrap();
        let mut mixed = d.clone();
        mixed.runs[first].labels.host = None;
        assert_eq!(mixed.mixed_labels(), [(Level::Host, counted - 1, 1)]);
        assert!(two_variants("A", "B").mixed_labels().is_empty());
        let j = serde_json::to_value(&d.runs[0].labels).unwrap();
        assert_eq!(j["host"], "h0");
        assert!(serde_json::to_value(Labels::default()).unwrap() == serde_json::json!({}));
    }
}
