//! The boot-level view of a [`Dataset`] of a two-level experiment (boots, and runs inside each
//! boot; see `boot`): [`Dataset::boot_groups`] gives the values of a metric per boot (the input
//! of `stats::levels`), [`Dataset::boot_level`] the dataset of boot means that verdicts are
//! computed from (Kalibera and Jones 2013).

use super::boot::Boot;
use super::dataset::Dataset;

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
    /// are the means over that boot's counted runs, in boot order with the boots' ABBA blocks
    /// (so a drift test sees the boot order). Verdicts of a two-level experiment are computed
    /// from it: the boots are the independent replicates, the runs inside a boot are not.
    pub fn boot_level(&self) -> Dataset {
        self.level_means(crate::Level::Boot)
    }
}

#[cfg(test)]
mod tests {
    use crate::boot::testdata::four_boots;
    use crate::dataset::testdata::two_variants;
    use crate::describe::mean;

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
