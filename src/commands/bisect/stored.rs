//! How a bisection lives in the store: every step is a run experiment whose design carries a
//! `bisect` object. The first (the ends' A/B) holds the bisection itself ([`Head`]: the range
//! with every commit, the commands, the settings, the seed) and its id is the bisection's id;
//! each later step names that id, its number, the revisions it measured and the revisions found
//! unbuildable before it. Everything read back is checked: a store row is untrusted.

use super::git::Commit;
use crate::stats::bisect::Settings;
use crate::store::Store;
use serde::{Deserialize, Serialize};

/// The bisection, as its first step stores it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Head {
    pub repo: String,
    /// Revisions 0 (good) ..= n (bad), first-parent order.
    pub commits: Vec<Commit>,
    pub build: String,
    pub command: String,
    pub metric: String,
    pub settings: Settings,
    pub seed: u64,
}

/// Stored settings, when they are in the ranges `bisect` takes (a store row is untrusted).
pub fn checked(s: &Settings) -> Option<Settings> {
    let unit = |v: f64| v.is_finite() && v > 0.0 && v < 0.5;
    let count = |v: usize| (1..=10_000).contains(&v);
    (unit(s.delta)
        && unit(s.alpha)
        && count(s.ends_runs)
        && count(s.probe_runs)
        && count(s.max_rounds)
        && count(s.confirm_runs)
        && (1..=20).contains(&s.looks)
        && s.looks <= s.ends_runs.min(s.confirm_runs))
    .then_some(*s)
}

/// The `bisect` object of one step's design.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Mark {
    /// The bisection's id (its first step's experiment); absent on the first step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub of: Option<i64>,
    pub step: usize,
    /// The revisions measured, by index (variant i is revision `revisions[i]`).
    pub revisions: Vec<usize>,
    /// Revisions found unbuildable before this step.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unbuildable: Vec<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head: Option<Head>,
}

/// One stored step: its experiment and mark.
#[derive(Debug, Clone)]
pub struct StoredStep {
    pub experiment: i64,
    pub mark: Mark,
}

/// A stored bisection: its head and its steps in order (the first is the head's own).
#[derive(Debug, Clone)]
pub struct Stored {
    pub id: i64,
    pub head: Head,
    pub settings: Settings,
    pub steps: Vec<StoredStep>,
}

fn mark_of(store: &Store, id: i64) -> anyhow::Result<Option<Mark>> {
    let exp = store.experiment(id)?;
    let Some(v) = exp.design.get("bisect") else {
        return Ok(None);
    };
    let mark: Mark = serde_json::from_value(v.clone())
        .map_err(|e| anyhow::anyhow!("experiment {id}: its design's bisect object: {e}"))?;
    Ok(Some(mark))
}

/// The ids of the bisections in the store (the experiments that hold a head).
pub fn heads(store: &Store) -> anyhow::Result<Vec<(i64, Head)>> {
    let mut out = Vec::new();
    for e in store.list()? {
        if e.kind != "run" {
            continue;
        }
        if let Ok(Some(Mark {
            head: Some(head), ..
        })) = mark_of(store, e.id)
        {
            out.push((e.id, head));
        }
    }
    Ok(out)
}

/// Bisection `id` read back and checked.
pub fn load(store: &Store, id: i64) -> anyhow::Result<Stored> {
    let not = || anyhow::anyhow!("experiment {id} is not the first step of a bisection");
    let first = mark_of(store, id)?.ok_or_else(not)?;
    let head = first.head.clone().ok_or_else(not)?;
    let n = head.commits.len().saturating_sub(1);
    let settings = checked(&head.settings)
        .ok_or_else(|| anyhow::anyhow!("bisection {id}: its stored settings are out of range"))?;
    let hashes = |c: &Commit| is_hash(&c.hash) && c.merged.iter().all(|m| is_hash(m));
    if n < 1 || !head.commits.iter().all(hashes) {
        anyhow::bail!("bisection {id}: its stored range is malformed");
    }
    let mut steps = vec![StoredStep {
        experiment: id,
        mark: first,
    }];
    for e in store.list()? {
        if e.id <= id || e.kind != "run" {
            continue;
        }
        if let Ok(Some(mark)) = mark_of(store, e.id)
            && mark.of == Some(id)
        {
            steps.push(StoredStep {
                experiment: e.id,
                mark,
            });
        }
    }
    for (i, s) in steps.iter().enumerate() {
        let m = &s.mark;
        let in_range = |r: &usize| *r <= n;
        if m.step != i
            || m.revisions.is_empty()
            || !m.revisions.iter().all(in_range)
            || !m.unbuildable.iter().all(in_range)
            || (i > 0 && m.head.is_some())
        {
            anyhow::bail!(
                "bisection {id}: experiment {} is not its step {i} as stored",
                s.experiment
            );
        }
    }
    Ok(Stored {
        id,
        head,
        settings,
        steps,
    })
}

fn is_hash(s: &str) -> bool {
    (40..=64).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_hexdigit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_settings_out_of_range_are_refused() {
        let good = Settings::default();
        assert_eq!(checked(&good), Some(Settings::default()));
        for bad in [
            Settings { delta: 0.0, ..good },
            Settings {
                alpha: f64::NAN,
                ..good
            },
            Settings {
                ends_runs: 0,
                ..good
            },
            Settings {
                max_rounds: 1 << 40,
                ..good
            },
            Settings { looks: 0, ..good },
            Settings { looks: 50, ..good },
        ] {
            assert_eq!(checked(&bad), None, "{bad:?}");
        }
    }

    #[test]
    fn a_mark_reads_back_and_a_foreign_one_is_an_error() {
        let m = Mark {
            of: Some(4),
            step: 2,
            revisions: vec![0, 7, 12],
            unbuildable: vec![6],
            head: None,
        };
        let v = serde_json::to_value(&m).unwrap();
        assert_eq!(serde_json::from_value::<Mark>(v).unwrap(), m);
        let foreign = serde_json::json!({"step": "two", "revisions": []});
        assert!(serde_json::from_value::<Mark>(foreign).is_err());
        assert!(is_hash(&"a".repeat(40)) && !is_hash("../../etc") && !is_hash("abc"));
    }
}
