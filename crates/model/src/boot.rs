//! Kernels as variants: a variant that boots its own kernel (or kernel command line) in a
//! virtual machine, the planned boots of an experiment, and the boots that really happened.
//!
//! An experiment with boots has two levels: each boot lands on its own page layout and cache
//! placement, and the runs inside one boot are correlated. Every run belongs to exactly one boot
//! (of its variant), found by ([`Run::variant`], [`Run::seq`]), which is unique even when two
//! experiments are compared side by side. The boot-level view of a dataset is `boot_level`'s.

use super::run::{Run, Slot};
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
    /// Where the image came from when abperf built it from a git tree (`--kernel git:REV`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<KernelSource>,
}

/// The provenance of a kernel built from source: what was built (revision, the tree id of the
/// patched source, the patches), how (the final .config and the compiler) and what came out
/// (the hashes of the image and of the modules).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelSource {
    /// The revision as given (`git:REV`'s REV) and the commit it named: `REV (COMMIT)`.
    pub revision: String,
    /// `git write-tree` of the source after the patches: the cache key's source part.
    pub tree_id: String,
    /// The patches applied on top, in order.
    #[serde(default)]
    pub patches: Vec<PatchId>,
    /// SHA-256 of the final .config.
    pub config_sha256: String,
    /// The final .config (after the base, abperf's fragment and olddefconfig).
    pub config: String,
    /// The compiler's version line (`gcc --version`, first line).
    pub compiler: String,
    /// SHA-256 of the bzImage.
    pub image_sha256: String,
    /// SHA-256 over the installed modules (relative path and bytes of every file, sorted), or
    /// None when the configuration builds no modules.
    #[serde(default)]
    pub modules_sha256: Option<String>,
}

impl KernelSource {
    /// The provenance stored for the variant that boots this build (the `kernel_provenance`
    /// row): the commit of `REV (COMMIT)` as the revision, the rest as built.
    pub fn provenance(&self) -> super::KernelProvenance {
        let commit = self
            .revision
            .rsplit_once(" (")
            .and_then(|(_, c)| c.strip_suffix(')'))
            .filter(|c| super::provenance::is_object_id(c));
        super::KernelProvenance {
            revision: commit.map(str::to_string),
            tree_id: Some(self.tree_id.clone()),
            patches: self
                .patches
                .iter()
                .map(|p| super::PatchRef {
                    subject: p.subject.clone(),
                    id: p.id.clone(),
                })
                .collect(),
            config_sha256: Some(self.config_sha256.clone()),
            config: Some(self.config.clone()),
            compiler: Some(self.compiler.clone()),
            ..super::KernelProvenance::of_image(
                self.image_sha256.clone(),
                self.modules_sha256.clone(),
            )
        }
    }
}

/// One patch of a kernel built from source: its subject (mbox) or file name, and its stable
/// `git patch-id`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PatchId {
    pub subject: String,
    pub id: String,
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

    /// The slots of `schedule` this boot runs, and those of them whose seq is not in `done`.
    pub fn slots(
        &self,
        schedule: &[Slot],
        done: &std::collections::BTreeSet<u32>,
    ) -> (Vec<Slot>, Vec<Slot>) {
        let mine: Vec<Slot> = schedule
            .iter()
            .filter(|s| self.contains(s.seq))
            .copied()
            .collect();
        let remaining = mine
            .iter()
            .filter(|s| !done.contains(&s.seq))
            .copied()
            .collect();
        (mine, remaining)
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
    pub(crate) fn counted<'a>(&'a self, runs: &'a [Run]) -> impl Iterator<Item = &'a Run> + 'a {
        runs.iter().filter(move |r| {
            r.variant == self.variant && r.counts() && self.runs.binary_search(&r.seq).is_ok()
        })
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
    use super::*;

    fn built(revision: &str) -> KernelSource {
        KernelSource {
            revision: revision.into(),
            tree_id: "c".repeat(40),
            patches: vec![PatchId {
                subject: "x86/mm: ceiling 33".into(),
                id: "d".repeat(40),
            }],
            config_sha256: "e".repeat(64),
            config: "CONFIG_SMP=y\n".into(),
            compiler: "gcc (Debian 12.2.0-14) 12.2.0".into(),
            image_sha256: "f".repeat(64),
            modules_sha256: None,
        }
    }

    #[test]
    fn a_build_becomes_a_provenance_that_passes_its_checks() {
        let commit = "a".repeat(40);
        let p = built(&format!("v6.1 ({commit})")).provenance();
        assert_eq!(p.revision.as_deref(), Some(commit.as_str()));
        assert_eq!(p.patches[0].subject, "x86/mm: ceiling 33");
        assert_eq!(p.config.as_deref(), Some("CONFIG_SMP=y\n"));
        assert_eq!(p.image_sha256, "f".repeat(64));
        assert!(p.check().is_ok(), "{:?}", p.check());
        // A revision without a commit object id in parentheses stores none (git log gets none).
        assert_eq!(built("v6.1 (--all)").provenance().revision, None);
        assert_eq!(built("HEAD").provenance().revision, None);
    }
}
