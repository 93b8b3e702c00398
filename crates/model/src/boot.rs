//! Kernels as variants: a variant that boots its own kernel (or kernel command line) in a
//! virtual machine, the planned boots of an experiment, and the boots that really happened.
//!
//! An experiment with boots has two levels: each boot lands on its own page layout and cache
//! placement, and the runs inside one boot are correlated. Every run belongs to exactly one boot
//! (of its variant), found by ([`Run::variant`], [`Run::seq`]), which is unique even when two
//! experiments are compared side by side. [`Dataset::boot_groups`] gives the values of a metric
//! per boot (the input of `stats::levels`), [`Dataset::boot_level`] the dataset of boot means
//! that verdicts are computed from (Kalibera and Jones 2013).

use super::dataset::Dataset;
use super::describe::mean;
use super::metric::Metric;
use super::run::Run;
use serde::{Deserialize, Serialize};

/// What a variant boots: a kernel image with its modules, and the parameters appended to its
/// command line. Stored with the variant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BootConfig {
    /// The kernel image (bzImage/vmlinuz), an absolute path.
    pub kernel: String,
    /// Its release (`uname -r` in the guest), read from the image.
    pub release: String,
    /// The modules directory (None: found next to the kernel or in /lib/modules at boot).
    #[serde(default)]
    pub modules: Option<String>,
    /// The Debian package it was fetched from, when it was given as a package name.
    #[serde(default)]
    pub package: Option<String>,
    /// Kernel parameters after abperf's own (`console=ttyS0 panic=-1`, and `no_timer_check`
    /// under TCG).
    #[serde(default)]
    pub append: String,
}

/// One planned boot: which variant boots, its ABBA block among the boots, and the schedule
/// slots (`first_seq..=last_seq`: warm-ups first, then timed runs) it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct BootPlan {
    /// Position in the boot order, from 0.
    pub number: u32,
    pub variant: usize,
    /// ABBA block of boots.
    pub block: i32,
    pub first_seq: u32,
    pub last_seq: u32,
}

impl BootPlan {
    pub fn contains(&self, seq: u32) -> bool {
        (self.first_seq..=self.last_seq).contains(&seq)
    }
}

/// A boot that happened (or was attempted): the VM, what the guest reported, and the runs it
/// produced. A planned boot interrupted by a crash is continued by another boot on `--resume`,
/// so one plan can have several boots.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Boot {
    /// Position among the experiment's boots, from 0 (the order they happened in).
    pub number: u32,
    /// The planned boot it ran ([`BootPlan::number`]).
    pub plan: u32,
    pub variant: usize,
    /// ABBA block of its plan.
    pub block: i32,
    /// starting | running | complete | failed | interrupted | lost (the host died meanwhile)
    pub status: String,
    /// kvm | tcg
    pub accel: String,
    /// `uname -r` and `/proc/cmdline` as the guest saw them (None before the guest came up).
    pub release: Option<String>,
    pub cmdline: Option<String>,
    /// Host seconds from QEMU's start to the guest's command, and to QEMU's end.
    pub boot_seconds: Option<f64>,
    pub seconds: Option<f64>,
    /// Host seconds spent on the boot's timed runs (from the end of its warm-ups to its last
    /// run's result), for the cost of a run as against the cost of a boot.
    pub run_seconds: Option<f64>,
    /// Warm-up runs made in this boot that the schedule did not hold (a continued boot warms up
    /// again; these are not stored as runs).
    pub extra_warmups: u32,
    /// UTC, RFC 3339.
    pub started: String,
    /// The boot record: accelerator, VM size, host pinning, QEMU, the guest's machine snapshot.
    pub environment: serde_json::Value,
    /// How the VM ended, in words (None while it runs).
    pub outcome: Option<String>,
    /// Sequence numbers of the runs it produced, ascending.
    pub runs: Vec<u32>,
}

impl Boot {
    /// Its timed runs that count (see [`Run::counts`]) among `runs`.
    fn counted<'a>(&'a self, runs: &'a [Run]) -> impl Iterator<Item = &'a Run> + 'a {
        runs.iter().filter(move |r| {
            r.variant == self.variant && r.counts() && self.runs.binary_search(&r.seq).is_ok()
        })
    }
}

impl Dataset {
    /// Whether the data come from booted kernels (a two-level experiment).
    pub fn has_boots(&self) -> bool {
        !self.boots.is_empty()
    }

    /// The boot of a run of variant `variant` with sequence number `seq`.
    pub fn boot_of(&self, variant: usize, seq: u32) -> Option<&Boot> {
        self.boots
            .iter()
            .find(|b| b.variant == variant && b.runs.binary_search(&seq).is_ok())
    }

    /// Values of `metric` over the counted runs of variant `pos`, one group per boot (in boot
    /// order; boots without a counted value are left out).
    pub fn boot_groups(&self, pos: usize, metric: &str) -> Vec<Vec<f64>> {
        self.boots
            .iter()
            .filter(|b| b.variant == pos)
            .map(|b| {
                b.counted(&self.runs)
                    .filter_map(|r| r.value(metric))
                    .collect::<Vec<f64>>()
            })
            .filter(|g| !g.is_empty())
            .collect()
    }

    /// The accelerators the boots ran under ("tcg", "kvm"), without repeats.
    pub fn accelerators(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for b in &self.boots {
            if !out.contains(&b.accel) {
                out.push(b.accel.clone());
            }
        }
        out
    }

    /// The boot-level dataset: one row per boot with at least one counted run, whose metrics
    /// are the means over that boot's counted runs, numbered by boot (so a drift test sees the
    /// boot order). Verdicts of a two-level experiment are computed from it: the boots are the
    /// independent replicates, the runs inside a boot are not.
    pub fn boot_level(&self) -> Dataset {
        let mut runs = Vec::new();
        for b in &self.boots {
            let counted: Vec<&Run> = b.counted(&self.runs).collect();
            if counted.is_empty() {
                continue;
            }
            let mut metrics: Vec<Metric> = Vec::new();
            for m in &self.metrics {
                let v: Vec<f64> = counted.iter().filter_map(|r| r.value(&m.name)).collect();
                if !v.is_empty() {
                    metrics.push(Metric::new(&m.name, mean(&v), &m.unit));
                }
            }
            let started = counted.iter().map(|r| r.started_ns).min().unwrap_or(0);
            let ended = counted.iter().map(|r| r.ended_ns).max().unwrap_or(0);
            runs.push(Run {
                block: b.block,
                started_ns: started,
                ended_ns: ended,
                exit_code: Some(0),
                ..Run::ok(b.number, b.variant, metrics)
            });
        }
        let mut ds = Dataset::new(
            self.experiments.clone(),
            self.variants.clone(),
            runs,
            format!("{} (boot means)", self.source),
        );
        ds.ordered = self.ordered;
        ds
    }
}

/// Boots for tests elsewhere in the crate.
#[cfg(any(test, feature = "testdata"))]
pub mod testdata {
    use super::Boot;

    /// A complete TCG boot `number` of `variant` that made the runs `runs`.
    pub fn boot(number: u32, variant: usize, runs: Vec<u32>) -> Boot {
        Boot {
            number,
            plan: number,
            variant,
            block: 0,
            status: "complete".into(),
            accel: "tcg".into(),
            release: Some("6.1.0-56-amd64".into()),
            cmdline: Some("console=ttyS0 panic=-1".into()),
            boot_seconds: Some(10.0),
            seconds: Some(14.0),
            run_seconds: Some(2.0),
            extra_warmups: 0,
            started: String::new(),
            environment: serde_json::json!({}),
            outcome: None,
            runs,
        }
    }

    /// Four boots of the 16 runs of `dataset::testdata::two_variants` (even seqs variant 0, odd
    /// seqs variant 1), two per variant, in ABBA order.
    pub fn four_boots() -> Vec<Boot> {
        vec![
            boot(0, 0, vec![0, 2, 4, 6]),
            boot(1, 1, vec![1, 3, 5, 7]),
            boot(2, 1, vec![9, 11, 13, 15]),
            boot(3, 0, vec![8, 10, 12, 14]),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::testdata::four_boots;
    use super::*;
    use crate::dataset::testdata::two_variants;

    #[test]
    fn groups_and_boot_means() {
        // two_variants: 16 runs, even seqs variant 0, odd seqs variant 1.
        let mut d = two_variants("A", "B");
        d.boots = four_boots();
        d.runs[2].warmup = true; // left out of its boot's group
        assert!(d.has_boots());
        assert_eq!(d.boot_of(1, 9).unwrap().number, 2);
        assert!(d.boot_of(0, 9).is_none(), "seq 9 is variant 1's");
        let g = d.boot_groups(0, "user_ns");
        assert_eq!(g.iter().map(Vec::len).collect::<Vec<_>>(), [3, 4]);
        let bl = d.boot_level();
        assert_eq!(bl.runs.len(), 4);
        assert!(bl.boots.is_empty());
        assert_eq!(bl.n_text(), "2+2");
        assert_eq!(
            bl.runs
                .iter()
                .map(|r| (r.seq, r.variant))
                .collect::<Vec<_>>(),
            [(0, 0), (1, 1), (2, 1), (3, 0)]
        );
        let want = mean(&g[0]);
        assert!((bl.runs[0].value("user_ns").unwrap() - want).abs() < 1e-6);
        assert_eq!(d.accelerators(), ["tcg"]);
    }
}
