//! The results of `abperf vm`: the kernels in the cache ([`Cached`]), a kernel just fetched
//! ([`Fetched`], printed as each package is unpacked) and the KVM probe ([`Probe`]).

use super::plain::Plain;
use abperf_model::vm::{KernelImage, KvmProbe};
use std::fmt::Write;
use std::path::Path;

/// `vm kernels`: every kernel unpacked in the cache, one line each.
pub struct Cached<'a> {
    pub cache: &'a Path,
    pub kernels: &'a [KernelImage],
}

impl Plain for Cached<'_> {
    fn text(&self) -> String {
        let mut s = String::new();
        if self.kernels.is_empty() {
            let _ = writeln!(s, "no kernels in {}", self.cache.display());
        }
        for k in self.kernels {
            let _ = writeln!(
                s,
                "{}  {}  {}  {}",
                k.package,
                k.version,
                k.release,
                k.vmlinuz.display()
            );
        }
        s
    }

    fn json(&self) -> anyhow::Result<String> {
        Ok(serde_json::to_string_pretty(self.kernels)?)
    }
}

/// `vm fetch`: a kernel package unpacked, with the paths of its image and modules.
pub struct Fetched<'a>(pub &'a KernelImage);

impl Plain for Fetched<'_> {
    fn text(&self) -> String {
        let k = self.0;
        format!(
            "{}  {}  {}\n  vmlinuz {}\n  modules {}\n",
            k.package,
            k.version,
            k.release,
            k.vmlinuz.display(),
            k.modules.display()
        )
    }

    fn json(&self) -> anyhow::Result<String> {
        Ok(serde_json::to_string_pretty(self.0)?)
    }
}

/// `vm fetch`: every kernel fetched (the JSON document; the text is printed per kernel).
pub struct FetchedAll<'a>(pub &'a [KernelImage]);

impl Plain for FetchedAll<'_> {
    fn text(&self) -> String {
        self.0.iter().map(|k| Fetched(k).text()).collect()
    }

    fn json(&self) -> anyhow::Result<String> {
        Ok(serde_json::to_string_pretty(self.0)?)
    }
}

/// `vm probe`: whether KVM is usable, why, and the fix.
pub struct Probe<'a>(pub &'a KvmProbe);

impl Plain for Probe<'_> {
    fn text(&self) -> String {
        let p = self.0;
        let mut s = String::new();
        let verdict = serde_json::to_value(p.verdict).unwrap_or_default();
        let _ = writeln!(s, "kvm: {}", verdict.as_str().unwrap_or("?"));
        let _ = writeln!(s, "  finding: {}", p.finding);
        let _ = writeln!(s, "  why: {}", p.why);
        if let Some(f) = &p.fix {
            let _ = writeln!(s, "  fix: {f}");
        }
        s
    }

    fn json(&self) -> anyhow::Result<String> {
        Ok(serde_json::to_string_pretty(self.0)?)
    }
}
