//! The results of `abperf vm`: a kernel unpacked in the cache ([`KernelImage`]) and the answer
//! of the KVM probe ([`KvmProbe`]). `abperf-vm` fetches and probes; `abperf-report` prints them
//! (`report::vm`) without depending on the VM machinery.

use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// A kernel unpacked in the cache, ready to boot.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct KernelImage {
    /// Debian package it came from.
    pub package: String,
    /// Debian version of that package.
    pub version: String,
    /// Kernel release (`uname -r` inside the guest).
    pub release: String,
    /// The unpacked package.
    pub root: PathBuf,
    /// `ROOT/boot/vmlinuz-RELEASE`.
    pub vmlinuz: PathBuf,
    /// `ROOT/lib/modules/RELEASE`, with `modules.dep`.
    pub modules: PathBuf,
}

/// Whether KVM can run kernel variants here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// A Linux guest booted under KVM.
    Usable,
    /// KVM is missing, inaccessible, or a guest does not boot under it.
    Unusable,
    /// The ioctls work but no boot could be tried (no kernel at hand, or the test kernel could
    /// not set up its guest for another reason).
    Untested,
}

/// The probe's answer, in the shape of a doctor check.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct KvmProbe {
    pub verdict: Verdict,
    pub finding: String,
    #[serde(skip_deserializing, default = "why")]
    pub why: &'static str,
    pub fix: Option<String>,
    /// The kernel the test boot used.
    pub kernel: Option<PathBuf>,
    /// Seconds from QEMU's start to the test command's start under KVM.
    pub boot_seconds: Option<f64>,
}

impl KvmProbe {
    pub fn usable(&self) -> bool {
        self.verdict == Verdict::Usable
    }
}

fn why() -> &'static str {
    WHY
}

/// Why KVM matters for kernel variants (the probe's `why`, not stored: each build says it anew).
pub const WHY: &str = "kernel variants boot in virtual machines: under KVM their timings reflect \
                       the hardware; under TCG (QEMU's binary translator, the fallback) the TLB, \
                       caches and MSRs are emulated, so timings test the machinery, not the kernel";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stored_probe_reads_back_with_the_why_of_this_build() {
        let text =
            r#"{"verdict":"untested","finding":"f","fix":null,"kernel":null,"boot_seconds":null}"#;
        let p: KvmProbe = serde_json::from_str(text).unwrap();
        assert_eq!(p.verdict, Verdict::Untested);
        assert_eq!(p.why, WHY);
        assert!(!p.usable());
    }
}
