//! CPU feature detection: CPUID, XCR0 (xgetbv 0), XINUSE (xgetbv 1) on x86_64; on other
//! architectures only what /proc/cpuinfo says.

use serde::Serialize;

#[derive(Debug, Clone, Default, Serialize, serde::Deserialize)]
pub struct CpuInfo {
    pub vendor: String,
    pub brand: String,
    pub family: u32,
    pub model: u32,
    pub hypervisor: bool,
    pub invariant_tsc: bool,
    pub rdtscp: bool,
    pub pcid: bool,
    pub invpcid: bool,
    /// AMD broadcast TLB invalidation (CPUID 0x80000008 EBX bit 3).
    pub invlpgb: bool,
    pub xsave: bool,
    pub osxsave: bool,
    pub xsaveopt: bool,
    pub xsavec: bool,
    /// XGETBV with ECX=1 (XINUSE) is supported.
    pub xgetbv1: bool,
    pub avx: bool,
    pub avx2: bool,
    pub avx512f: bool,
    /// XCR0: the state components the OS enabled.
    pub xcr0: u64,
    /// XSAVE area size (standard form) for the components in XCR0.
    pub xsave_size: u32,
    /// Size of the compacted area for XCR0 | IA32_XSS (upper bound for XSAVEC).
    pub xsavec_size: u32,
    pub logical_cpus: usize,
}

impl CpuInfo {
    /// AVX-512 state can be made dirty: the CPU has AVX-512F and the OS enabled its components.
    pub fn avx512_usable(&self) -> bool {
        self.avx512f && self.osxsave && self.xcr0 & 0xE6 == 0xE6
    }

    pub fn avx_usable(&self) -> bool {
        self.avx && self.osxsave && self.xcr0 & 0x6 == 0x6
    }

    /// Why AVX-512 dirty-state variants cannot run, if they cannot.
    pub fn avx512_missing(&self) -> Option<String> {
        if cfg!(not(target_arch = "x86_64")) {
            return Some("x86 only (AVX-512)".into());
        }
        if !self.avx512f {
            return Some("CPU has no AVX-512F".into());
        }
        if !self.osxsave || self.xcr0 & 0xE6 != 0xE6 {
            return Some(format!(
                "OS has not enabled AVX-512 state in XCR0 (0x{:x})",
                self.xcr0
            ));
        }
        None
    }

    #[cfg(target_arch = "x86_64")]
    pub fn detect() -> CpuInfo {
        let max = cpuid(0, 0).0;
        let (_, b, c, d) = cpuid(0, 0);
        let mut vendor = Vec::new();
        for r in [b, d, c] {
            vendor.extend_from_slice(&r.to_le_bytes());
        }
        let (eax1, _, ecx1, _) = cpuid(1, 0);
        let base_family = (eax1 >> 8) & 0xf;
        let family = if base_family == 0xf {
            base_family + ((eax1 >> 20) & 0xff)
        } else {
            base_family
        };
        let model = ((eax1 >> 4) & 0xf) | (((eax1 >> 16) & 0xf) << 4);
        let ext_max = cpuid(0x8000_0000, 0).0;
        let mut brand = Vec::new();
        if ext_max >= 0x8000_0004 {
            for leaf in 0x8000_0002u32..=0x8000_0004 {
                let (a, b, c, d) = cpuid(leaf, 0);
                for r in [a, b, c, d] {
                    brand.extend_from_slice(&r.to_le_bytes());
                }
            }
        }
        let leaf7 = if max >= 7 { cpuid(7, 0) } else { (0, 0, 0, 0) };
        let leaf_d1 = if max >= 0xd {
            cpuid(0xd, 1)
        } else {
            (0, 0, 0, 0)
        };
        let osxsave = ecx1 & (1 << 27) != 0;
        let xcr0 = if osxsave { xgetbv(0) } else { 0 };
        CpuInfo {
            vendor: String::from_utf8_lossy(&vendor)
                .trim_matches('\0')
                .to_string(),
            brand: String::from_utf8_lossy(&brand)
                .trim_matches(['\0', ' '])
                .to_string(),
            family,
            model,
            hypervisor: ecx1 & (1 << 31) != 0,
            invariant_tsc: ext_max >= 0x8000_0007 && cpuid(0x8000_0007, 0).3 & (1 << 8) != 0,
            rdtscp: ext_max >= 0x8000_0001 && cpuid(0x8000_0001, 0).3 & (1 << 27) != 0,
            pcid: ecx1 & (1 << 17) != 0,
            invpcid: leaf7.1 & (1 << 10) != 0,
            invlpgb: ext_max >= 0x8000_0008 && cpuid(0x8000_0008, 0).1 & (1 << 3) != 0,
            xsave: ecx1 & (1 << 26) != 0,
            osxsave,
            xsaveopt: leaf_d1.0 & 1 != 0,
            xsavec: leaf_d1.0 & 2 != 0,
            xgetbv1: leaf_d1.0 & 4 != 0,
            avx: ecx1 & (1 << 28) != 0,
            avx2: leaf7.1 & (1 << 5) != 0,
            avx512f: leaf7.1 & (1 << 16) != 0,
            xcr0,
            xsave_size: if max >= 0xd { cpuid(0xd, 0).1 } else { 0 },
            xsavec_size: leaf_d1.1,
            logical_cpus: online_cpus(),
        }
    }

    #[cfg(not(target_arch = "x86_64"))]
    pub fn detect() -> CpuInfo {
        let text = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let field = |k: &str| {
            text.lines()
                .find(|l| l.starts_with(k))
                .and_then(|l| l.split(':').nth(1))
                .map(|v| v.trim().to_string())
                .unwrap_or_default()
        };
        CpuInfo {
            vendor: field("CPU implementer"),
            brand: field("model name"),
            logical_cpus: online_cpus(),
            ..Default::default()
        }
    }

    /// One line for output headers.
    pub fn describe(&self) -> String {
        let mut f = Vec::new();
        for (on, name) in [
            (self.invariant_tsc, "invariant-tsc"),
            (self.pcid, "pcid"),
            (self.invpcid, "invpcid"),
            (self.invlpgb, "invlpgb"),
            (self.xsaveopt, "xsaveopt"),
            (self.xsavec, "xsavec"),
            (self.avx2, "avx2"),
            (self.avx512f, "avx512f"),
            (self.hypervisor, "hypervisor"),
        ] {
            if on {
                f.push(name);
            }
        }
        format!(
            "{} (family {} model {}), {} CPUs; {}; XCR0=0x{:x}, XSAVE area {} bytes",
            if self.brand.is_empty() {
                &self.vendor
            } else {
                &self.brand
            },
            self.family,
            self.model,
            self.logical_cpus,
            f.join(" "),
            self.xcr0,
            self.xsave_size
        )
    }
}

fn online_cpus() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}

/// CPUID leaf/subleaf: (eax, ebx, ecx, edx).
#[cfg(target_arch = "x86_64")]
pub fn cpuid(leaf: u32, sub: u32) -> (u32, u32, u32, u32) {
    let r = core::arch::x86_64::__cpuid_count(leaf, sub);
    (r.eax, r.ebx, r.ecx, r.edx)
}

/// XGETBV: extended control register `n` (0 = XCR0, 1 = XINUSE). Caller checks support.
#[cfg(target_arch = "x86_64")]
pub fn xgetbv(n: u32) -> u64 {
    let (lo, hi): (u32, u32);
    // SAFETY: caller checked OSXSAVE (and XGETBV1 for n=1); xgetbv reads a register.
    unsafe {
        core::arch::asm!("xgetbv", in("ecx") n, out("eax") lo, out("edx") hi, options(nostack, nomem));
    }
    ((hi as u64) << 32) | lo as u64
}

/// State components in use now (XINUSE), if the CPU reports it.
pub fn xinuse(cpu: &CpuInfo) -> Option<u64> {
    #[cfg(target_arch = "x86_64")]
    {
        cpu.xgetbv1.then(|| xgetbv(1))
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = cpu;
        None
    }
}

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::*;

    #[test]
    fn detects_basic_features() {
        let c = CpuInfo::detect();
        assert!(!c.vendor.is_empty());
        assert!(c.logical_cpus >= 1);
        if c.osxsave {
            // x87 and SSE are always enabled when XSAVE is.
            assert_eq!(c.xcr0 & 3, 3, "xcr0 {:x}", c.xcr0);
            assert!(c.xsave_size >= 576);
        }
    }
}
