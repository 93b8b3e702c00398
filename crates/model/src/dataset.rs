//! [`Dataset`]: the data of one output, as every reader gets it: a stored experiment (report,
//! show, export, compare ID), two stored experiments' variants side by side (compare A B), or
//! files of numbers (ministat mode). One rule for which runs count ([`Run::counts`]), one way to
//! get a metric's values, and one data hash.

use super::boot::Boot;
use super::experiment::Experiment;
use super::metric::{MetricInfo, display_rank};
use super::run::Run;
use super::variant::Variant;
use crate::describe::{Description, describe};
use sha2::{Digest, Sha256};

/// Variants with their runs, and where they came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Dataset {
    /// The stored experiments the data come from: one for a stored experiment, two for
    /// `compare A B`, none for files of numbers.
    pub experiments: Vec<Experiment>,
    /// Variants by position.
    pub variants: Vec<Variant>,
    /// Every run (counted or not) in schedule order; `Run::variant` indexes `variants`.
    pub runs: Vec<Run>,
    /// Metrics present in the runs, well-known ones first (wall, user, sys, ...), then in order
    /// of first appearance.
    pub metrics: Vec<MetricInfo>,
    /// Where the data came from, in words (for provenance footers).
    pub source: String,
    /// Whether the runs' sequence numbers are one real run order (drift tests apply).
    pub ordered: bool,
    /// Runs planned (the stored schedule); equals the runs stored when nothing is planned.
    pub planned: usize,
    /// The boots of a kernel-variant experiment (empty otherwise): see [`super::boot`].
    pub boots: Vec<Boot>,
}

impl Dataset {
    /// A dataset of `runs`; its metric list is built from the runs' units.
    pub fn new(
        experiments: Vec<Experiment>,
        variants: Vec<Variant>,
        runs: Vec<Run>,
        source: String,
    ) -> Dataset {
        let ordered = experiments.len() == 1 && experiments[0].has_run_order();
        let mut metrics: Vec<MetricInfo> = Vec::new();
        // Metrics whose direction a run declared (a workload's): that wins over a derived one.
        let mut declared = std::collections::BTreeSet::new();
        for r in &runs {
            for m in &r.metrics {
                match metrics.iter_mut().find(|x| x.name == m.name) {
                    None => metrics.push(MetricInfo::of(m)),
                    Some(x) => {
                        if let Some(d) = m.direction
                            && !declared.contains(&m.name)
                        {
                            x.direction = d;
                        }
                    }
                }
                if m.direction.is_some() {
                    declared.insert(m.name.clone());
                }
            }
        }
        metrics.sort_by_key(|m| display_rank(&m.name));
        let planned = runs.len();
        Dataset {
            planned,
            experiments,
            variants,
            runs,
            metrics,
            source,
            ordered,
            boots: Vec::new(),
        }
    }

    /// The experiment, when the data are one stored experiment.
    pub fn experiment(&self) -> Option<&Experiment> {
        match self.experiments.as_slice() {
            [e] => Some(e),
            _ => None,
        }
    }

    /// Position of the variant called `name`.
    pub fn position(&self, name: &str) -> Option<usize> {
        self.variants.iter().position(|v| v.name == name)
    }

    /// Variant names, comma-separated (for error messages).
    pub fn variant_names(&self) -> String {
        let names: Vec<&str> = self.variants.iter().map(|v| v.name.as_str()).collect();
        names.join(", ")
    }

    pub fn metric(&self, name: &str) -> Option<&MetricInfo> {
        self.metrics.iter().find(|m| m.name == name)
    }

    /// Which way is better for `name`: as the runs declared it, else derived from its name and
    /// unit.
    pub fn direction(&self, name: &str) -> super::metric::Direction {
        match self.metric(name) {
            Some(m) => m.direction,
            None => super::metric::Direction::of(name, ""),
        }
    }

    /// The unit of `name` ("" when unknown).
    pub fn unit(&self, name: &str) -> &str {
        self.metric(name).map(|m| m.unit.as_str()).unwrap_or("")
    }

    /// Metrics that are not figures about other metrics, in display order.
    pub fn main_metrics(&self) -> impl Iterator<Item = &MetricInfo> {
        self.metrics.iter().filter(|m| !m.auxiliary)
    }

    /// Runs of variant `pos` that count ([`Run::counts`]), in run order.
    pub fn counted(&self, pos: usize) -> impl Iterator<Item = &Run> {
        self.runs
            .iter()
            .filter(move |r| r.variant == pos && r.counts())
    }

    /// Values of `metric` over the counted runs of variant `pos`, in run order.
    pub fn values(&self, pos: usize, metric: &str) -> Vec<f64> {
        self.counted(pos).filter_map(|r| r.value(metric)).collect()
    }

    /// Values of `metric` with each run's sequence number, over the counted runs of `pos`.
    pub fn values_with_seq(&self, pos: usize, metric: &str) -> Vec<(f64, u32)> {
        self.counted(pos)
            .filter_map(|r| r.value(metric).map(|v| (v, r.seq)))
            .collect()
    }

    /// Description of `metric` for variant `pos` over its counted runs.
    pub fn describe(&self, pos: usize, metric: &str) -> Option<Description> {
        describe(&self.values(pos, metric))
    }

    /// How many runs count, over all variants.
    pub fn counted_total(&self) -> usize {
        self.runs.iter().filter(|r| r.counts()).count()
    }

    /// The untimed work per run (setup, `--pre`, re-warm, dropping caches, boots: whatever runs
    /// between two timed runs), measured as the median gap from a run's end to the next run's
    /// start over every run with both timestamps, in order of start, and how many gaps it is
    /// taken over. The median, so that a pause between sessions does not count as every run's.
    /// None without two such runs, or when runs overlap (hosts side by side: no gap to read).
    pub fn untimed_per_run_ns(&self) -> Option<(f64, usize)> {
        let mut spans: Vec<(i64, i64)> = self
            .runs
            .iter()
            .filter(|r| r.started_ns > 0 && r.ended_ns > r.started_ns)
            .map(|r| (r.started_ns, r.ended_ns))
            .collect();
        spans.sort_unstable();
        let gaps: Vec<f64> = spans
            .windows(2)
            .map(|w| (w[1].0 - w[0].1) as f64)
            .collect::<Vec<_>>();
        if gaps.is_empty() || gaps.iter().any(|&g| g < 0.0) {
            return None;
        }
        Some((crate::describe::median(&gaps), gaps.len()))
    }

    /// Runs left out of the analysis (warm-ups, failed, timed out, excluded).
    pub fn left_out(&self) -> usize {
        self.runs.len() - self.counted_total()
    }

    /// "12+12": counted runs per variant in position order.
    pub fn n_text(&self) -> String {
        (0..self.variants.len())
            .map(|p| self.counted(p).count().to_string())
            .collect::<Vec<_>>()
            .join("+")
    }

    /// Files imported runs came from, in order of first appearance.
    pub fn files(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for r in &self.runs {
            if let Some(s) = &r.source
                && !out.contains(&s.file)
            {
                out.push(s.file.clone());
            }
        }
        out
    }

    /// The data hash (`docs/data-hash.md`): SHA-256, lower-case hex, over every run in the order
    /// of [`Dataset::runs`]:
    ///
    /// ```text
    /// variant name (UTF-8) 0x00  seq (u32 LE)  status ("ok"|"failed"|"timeout") 0x00
    /// warm-up (0x00|0x01)  excluded (0x00|0x01)
    /// for each metric in byte order of its name: name (UTF-8) 0x00  value (f64 bits, LE)
    /// 0x01
    /// ```
    ///
    /// It covers what a comparison reads (which variant, which runs count, every value), so the
    /// same data give the same hash in `compare`, `report` and `export`, and anyone can recompute
    /// it from an export.
    pub fn data_hash(&self) -> String {
        let mut h = Sha256::new();
        for r in &self.runs {
            let name = self
                .variants
                .get(r.variant)
                .map(|v| v.name.as_str())
                .unwrap_or("");
            h.update(name.as_bytes());
            h.update([0]);
            h.update(r.seq.to_le_bytes());
            h.update(r.status.as_str().as_bytes());
            h.update([0]);
            h.update([u8::from(r.warmup), u8::from(r.excluded.is_some())]);
            let mut ms: Vec<&super::metric::Metric> = r.metrics.iter().collect();
            ms.sort_by(|a, b| a.name.as_bytes().cmp(b.name.as_bytes()));
            for m in ms {
                h.update(m.name.as_bytes());
                h.update([0]);
                h.update(m.value.to_bits().to_le_bytes());
            }
            h.update([1]);
        }
        h.finalize().iter().map(|b| format!("{b:02x}")).collect()
    }
}

#[cfg(any(test, feature = "testdata"))]
pub mod testdata {
    //! Small in-memory datasets for unit tests across the crate.
    use super::*;
    use crate::{Kind, Metric, Source, Status};

    /// Seed 000's shape: two variants of 8 imported runs each, user time, max RSS, minor faults
    /// and one auxiliary metric.
    pub fn two_variants(a: &str, b: &str) -> Dataset {
        let experiment = Experiment {
            id: 7,
            name: "tlb <flush> & co".into(),
            kind: Kind::Import,
            created: "2026-11-22T05:00:00Z".into(),
            command_line: vec!["abperf".into(), "import".into()],
            design: serde_json::json!({"order": "imported"}),
            seed: None,
            environment: serde_json::json!({}),
            status: Status::Complete,
            labels: Default::default(),
        };
        let variant = |name: &str| Variant {
            command: Some(format!("make -j8 # {name}")),
            ..Variant::named(name)
        };
        let mut runs = Vec::new();
        for i in 0..16u32 {
            let pos = (i % 2) as usize;
            let base = if pos == 0 { 880.0 } else { 875.0 };
            let wiggle = ((i * 7919) % 13) as f64 / 10.0;
            let metrics = vec![
                Metric::new("user_ns", (base + wiggle) * 1e9, "ns"),
                Metric::new("maxrss_kib", 798_000.0 + wiggle * 100.0, "KiB"),
                Metric::new("minflt", 58_366_597.0 + wiggle * 1000.0, "count"),
                Metric::new("user_ns.stderr_pct", 0.5, "%"),
            ];
            runs.push(Run {
                exit_code: Some(0),
                source: Some(Source {
                    format: "time".into(),
                    file: "seed000-time.txt".into(),
                    line: i + 1,
                    summary: false,
                    repeats: None,
                }),
                ..Run::ok(i, pos, metrics)
            });
        }
        Dataset::new(
            vec![experiment],
            vec![variant(a), variant(b)],
            runs,
            "experiment 7".into(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::testdata::two_variants;
    use crate::RunStatus;

    #[test]
    fn counting_values_and_text() {
        let mut d = two_variants("A", "B");
        assert_eq!(d.n_text(), "8+8");
        assert_eq!(d.values(0, "user_ns").len(), 8);
        assert_eq!(d.metrics[0].name, "user_ns");
        assert_eq!(d.unit("maxrss_kib"), "KiB");
        assert_eq!(d.main_metrics().count(), 3);
        d.runs[0].warmup = true;
        d.runs[1].status = RunStatus::Failed;
        assert_eq!((d.n_text().as_str(), d.left_out()), ("7+7", 2));
        assert_eq!(d.files(), ["seed000-time.txt"]);
        assert!(!d.ordered, "imported lines carry no run order");
        assert_eq!(d.position("B"), Some(1));
    }

    #[test]
    fn untimed_work_is_the_median_gap_between_runs() {
        let mut d = two_variants("A", "B");
        assert_eq!(d.untimed_per_run_ns(), None, "no timestamps");
        // Runs of 10 s, each started 12 s after the last one ended but one (a 1000 s pause).
        let mut t = 1_000_000_000_000;
        for (i, r) in d.runs.iter_mut().enumerate() {
            r.started_ns = t;
            r.ended_ns = t + 10_000_000_000;
            t = r.ended_ns
                + if i == 3 {
                    1_000_000_000_000
                } else {
                    12_000_000_000
                };
        }
        let n = d.runs.len();
        assert_eq!(d.untimed_per_run_ns(), Some((12e9, n - 1)));
        // Overlapping runs (machines side by side) leave no gap to read.
        d.runs[1].started_ns = d.runs[0].started_ns + 1;
        assert_eq!(d.untimed_per_run_ns(), None);
    }

    #[test]
    fn hash_covers_values_names_and_flags() {
        let d = two_variants("A", "B");
        let h0 = d.data_hash();
        assert_eq!(h0.len(), 64);
        assert_eq!(h0, two_variants("A", "B").data_hash());
        let mut x = d.clone();
        x.runs[3].metrics[0].value += 1.0;
        assert_ne!(x.data_hash(), h0);
        let mut x = d.clone();
        x.runs[3].excluded = Some("why".into());
        assert_ne!(x.data_hash(), h0);
        assert_ne!(two_variants("A", "C").data_hash(), h0);
        // Metric order within a run does not matter.
        let mut x = d.clone();
        x.runs[3].metrics.reverse();
        assert_eq!(x.data_hash(), h0);
    }
}
