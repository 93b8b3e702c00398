//! A built-in workload as `abperf workload list/show` print it ([`Description`], with its
//! parameters and the metrics it declares, [`MetricSpec`]), and the words of the workload metric
//! protocol for a [`Direction`] ([`direction_word`]). `abperf-workload` describes its workloads
//! in these types; `abperf-report` prints them (`report::workloads`) without depending on the
//! workloads themselves.

use crate::Direction;
use serde::Serialize;

/// The protocol's word for `d`: `higher_is_better`, `lower_is_better` or `count` (snake_case,
/// where the store and the reports write kebab-case: [`Direction::as_str`]).
pub fn direction_word(d: Direction) -> &'static str {
    match d {
        Direction::HigherIsBetter => "higher_is_better",
        Direction::LowerIsBetter => "lower_is_better",
        Direction::Count => "count",
    }
}

/// Serde of a [`Direction`] in the protocol's words ([`direction_word`]), for
/// `#[serde(with = "abperf_model::workload::direction_words")]`.
pub mod direction_words {
    use super::{Direction, direction_word};
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Direction, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(direction_word(*d))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Direction, D::Error> {
        let word = String::deserialize(d)?;
        [
            Direction::HigherIsBetter,
            Direction::LowerIsBetter,
            Direction::Count,
        ]
        .into_iter()
        .find(|&x| direction_word(x) == word)
        .ok_or_else(|| {
            serde::de::Error::unknown_variant(
                &word,
                &["higher_is_better", "lower_is_better", "count"],
            )
        })
    }
}

/// What a workload declares it may report (shown by `workload show`, known before any run).
#[derive(Debug, Clone, Copy, Serialize)]
pub struct MetricSpec {
    pub name: &'static str,
    pub unit: &'static str,
    #[serde(with = "direction_words")]
    pub direction: Direction,
    pub help: &'static str,
}

/// A workload as `workload show --format json` prints it.
#[derive(Debug, Serialize)]
pub struct Description {
    pub name: &'static str,
    pub version: u32,
    pub summary: &'static str,
    pub stresses: &'static str,
    pub kernel_paths: &'static [&'static str],
    pub modelled_on: &'static str,
    pub runtime: &'static str,
    pub prepare: Option<&'static str>,
    pub params: Vec<ParamDescription>,
    pub metrics: &'static [MetricSpec],
}

/// One parameter of a workload: `NAME=DEFAULT`, the values it allows, and what it sets.
#[derive(Debug, Serialize)]
pub struct ParamDescription {
    pub name: &'static str,
    pub default: &'static str,
    pub allowed: String,
    pub help: &'static str,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize, serde::Deserialize)]
    struct D(#[serde(with = "direction_words")] Direction);

    #[test]
    fn every_direction_reads_back_from_its_protocol_word() {
        for d in [
            Direction::HigherIsBetter,
            Direction::LowerIsBetter,
            Direction::Count,
        ] {
            let text = serde_json::to_string(&D(d)).unwrap();
            assert_eq!(text, format!("\"{}\"", direction_word(d)));
            assert_eq!(serde_json::from_str::<D>(&text).unwrap().0, d);
        }
        assert!(serde_json::from_str::<D>("\"higher-is-better\"").is_err());
    }
}
