//! What the CPU says about its caches and TLBs (CPUID), to size the `tlb-miss` chases against the
//! caches and to report the documented TLB capacities beside the measured reach.
//!
//! Caches: deterministic cache parameters, leaf 4 (Intel) or 0x8000001D (AMD with topology
//! extensions). TLBs: leaf 0x18 (Intel, deterministic address translation parameters), else the
//! TLB descriptors of leaf 2 (older Intel); AMD: 0x80000005 (L1), 0x80000006 (L2) and 0x80000019
//! (1 GiB pages). A hypervisor may hide any of them (Firecracker here: leaf 2 points to leaf 0x18,
//! which is all zeros); then the lists are empty and a note says why.

use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Data,
    Instruction,
    Unified,
    /// A data TLB that serves loads only (Intel splits the first-level DTLB).
    Load,
    /// A data TLB that serves stores only.
    Store,
}

impl Kind {
    /// Serves data loads (what a pointer chase does).
    pub fn loads(self) -> bool {
        matches!(self, Kind::Data | Kind::Unified | Kind::Load)
    }

    fn name(self) -> &'static str {
        match self {
            Kind::Data => "data",
            Kind::Instruction => "instruction",
            Kind::Unified => "unified",
            Kind::Load => "load",
            Kind::Store => "store",
        }
    }
}

/// One cache level as CPUID describes it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Cache {
    pub level: u8,
    pub kind: Kind,
    pub bytes: u64,
    pub ways: u32,
    pub sets: u32,
    pub line: u32,
}

/// Page sizes a TLB holds (bit set).
pub const P4K: u8 = 1;
pub const P2M: u8 = 2;
pub const P4M: u8 = 4;
pub const P1G: u8 = 8;

/// One TLB as CPUID describes it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Tlb {
    pub level: u8,
    pub kind: Kind,
    /// Page sizes held: [`P4K`] | [`P2M`] | [`P4M`] | [`P1G`].
    pub pages: u8,
    pub entries: u32,
    /// Ways; 0 = fully associative.
    pub ways: u32,
    /// The CPUID leaf it came from.
    pub source: String,
}

impl Tlb {
    pub fn describe(&self) -> String {
        let sizes: Vec<&str> = [(P4K, "4K"), (P2M, "2M"), (P4M, "4M"), (P1G, "1G")]
            .iter()
            .filter(|(b, _)| self.pages & b != 0)
            .map(|(_, n)| *n)
            .collect();
        format!(
            "L{} {} TLB {} entries ({}, {})",
            self.level,
            self.kind.name(),
            self.entries,
            sizes.join("/"),
            if self.ways == 0 {
                "fully associative".to_string()
            } else {
                format!("{}-way", self.ways)
            }
        )
    }
}

/// Caches and TLBs of the CPU this runs on, with notes on what CPUID did not say.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Topology {
    pub caches: Vec<Cache>,
    pub tlbs: Vec<Tlb>,
    pub notes: Vec<String>,
}

impl Topology {
    /// Size of the level-`level` data (or unified) cache, bytes.
    pub fn data_cache(&self, level: u8) -> Option<&Cache> {
        self.caches
            .iter()
            .find(|c| c.level == level && c.kind != Kind::Instruction)
    }

    /// Entries of the level-`level` TLB that serves loads of pages of size `page` ([`P4K`] ...):
    /// the largest such TLB at that level (Intel lists a load and a store DTLB; older CPUs a
    /// small DTLB0 beside the DTLB).
    pub fn dtlb(&self, level: u8, page: u8) -> Option<u32> {
        self.tlbs
            .iter()
            .filter(|t| t.level == level && t.kind.loads() && t.pages & page != 0)
            .map(|t| t.entries)
            .max()
    }

    /// One line: the caches and data TLBs.
    pub fn describe(&self) -> String {
        let caches: Vec<String> = self
            .caches
            .iter()
            .filter(|c| c.kind != Kind::Instruction)
            .map(|c| format!("L{} {} KiB {}-way", c.level, c.bytes / 1024, c.ways))
            .collect();
        let tlbs: Vec<String> = self
            .tlbs
            .iter()
            .filter(|t| t.kind != Kind::Instruction)
            .map(|t| t.describe())
            .collect();
        format!(
            "caches (CPUID): {}; data TLBs (CPUID): {}",
            if caches.is_empty() {
                "not reported".into()
            } else {
                caches.join(", ")
            },
            if tlbs.is_empty() {
                "not reported".into()
            } else {
                tlbs.join(", ")
            }
        )
    }

    #[cfg(target_arch = "x86_64")]
    pub fn detect() -> Topology {
        use super::cpu::cpuid;
        let (max, b, c, d) = cpuid(0, 0);
        let mut vendor = Vec::new();
        for r in [b, d, c] {
            vendor.extend_from_slice(&r.to_le_bytes());
        }
        let amd = vendor == b"AuthenticAMD" || vendor == b"HygonGenuine";
        let ext_max = cpuid(0x8000_0000, 0).0;
        let mut t = Topology::default();
        // Caches.
        let topoext = ext_max >= 0x8000_001D && cpuid(0x8000_0001, 0).2 & (1 << 22) != 0;
        let cache_leaf = if amd && topoext {
            Some(0x8000_001D)
        } else if !amd && max >= 4 {
            Some(4)
        } else {
            None
        };
        if let Some(leaf) = cache_leaf {
            for sub in 0..16 {
                let (a, b, c, _) = cpuid(leaf, sub);
                match decode_cache(a, b, c) {
                    Some(cache) => t.caches.push(cache),
                    None => break,
                }
            }
        }
        if t.caches.is_empty() {
            t.notes
                .push("CPUID reports no cache parameters (leaf 4 / 0x8000001D)".into());
        }
        // TLBs.
        if amd {
            if ext_max >= 0x8000_0005 {
                let (a, b, _, _) = cpuid(0x8000_0005, 0);
                t.tlbs.extend(decode_amd_l1_tlb(a, b));
            }
            if ext_max >= 0x8000_0006 {
                let (a, b, _, _) = cpuid(0x8000_0006, 0);
                t.tlbs.extend(decode_amd_l2_tlb(a, b));
            }
            if ext_max >= 0x8000_0019 {
                let (a, b, _, _) = cpuid(0x8000_0019, 0);
                t.tlbs.extend(decode_amd_1g_tlb(a, b));
            }
            if t.tlbs.is_empty() {
                t.notes.push(
                    "CPUID 0x80000005/0x80000006/0x80000019 report no TLBs (hidden by a hypervisor?)"
                        .into(),
                );
            }
        } else {
            let mut pointed_to_18 = false;
            if max >= 2 {
                let (a, b, c, d) = cpuid(2, 0);
                let (tlbs, to18) = decode_leaf2([a, b, c, d]);
                pointed_to_18 = to18;
                t.tlbs.extend(tlbs);
            }
            if max >= 0x18 {
                let subs = cpuid(0x18, 0).0;
                for sub in 0..=subs.min(63) {
                    let (_, b, c, d) = cpuid(0x18, sub);
                    t.tlbs.extend(decode_leaf18(b, c, d));
                }
            }
            if t.tlbs.is_empty() {
                t.notes.push(format!(
                    "CPUID reports no TLBs: {} (hidden by a hypervisor?)",
                    if pointed_to_18 && max >= 0x18 {
                        "leaf 2 says 'see leaf 0x18' and leaf 0x18 is empty"
                    } else if pointed_to_18 {
                        "leaf 2 says 'see leaf 0x18', which this CPU does not have"
                    } else {
                        "no TLB descriptor in leaf 2 and no leaf 0x18"
                    }
                ));
            }
        }
        t
    }

    #[cfg(not(target_arch = "x86_64"))]
    pub fn detect() -> Topology {
        Topology {
            notes: vec!["cache and TLB sizes come from CPUID (x86 only)".into()],
            ..Default::default()
        }
    }
}

/// Leaf 4 / 0x8000001D, one subleaf (same layout); None for the end of the list.
pub fn decode_cache(eax: u32, ebx: u32, ecx: u32) -> Option<Cache> {
    let kind = match eax & 0x1f {
        1 => Kind::Data,
        2 => Kind::Instruction,
        3 => Kind::Unified,
        _ => return None,
    };
    let line = (ebx & 0xfff) + 1;
    let partitions = ((ebx >> 12) & 0x3ff) + 1;
    let ways = (ebx >> 22) + 1;
    let sets = ecx.wrapping_add(1);
    Some(Cache {
        level: ((eax >> 5) & 7) as u8,
        kind,
        bytes: ways as u64 * partitions as u64 * line as u64 * sets as u64,
        ways,
        sets,
        line,
    })
}

/// Leaf 0x18, one subleaf: EBX (page sizes, ways), ECX (sets), EDX (type, level, fully assoc.).
pub fn decode_leaf18(ebx: u32, ecx: u32, edx: u32) -> Option<Tlb> {
    let kind = match edx & 0x1f {
        1 => Kind::Data,
        2 => Kind::Instruction,
        3 => Kind::Unified,
        4 => Kind::Load,
        5 => Kind::Store,
        _ => return None,
    };
    let ways = ebx >> 16;
    let fully = edx & (1 << 8) != 0;
    let entries = ways * ecx.max(1);
    (entries > 0).then(|| Tlb {
        level: ((edx >> 5) & 7) as u8,
        kind,
        pages: (ebx & 0xf) as u8,
        entries,
        ways: if fully { 0 } else { ways },
        source: "cpuid 0x18".into(),
    })
}

/// Leaf 2 (Intel): the data and shared TLB descriptors among the 15 descriptor bytes (SDM vol. 2A
/// table 3-12), and whether descriptor 0xFE ("see leaf 0x18") is present.
pub fn decode_leaf2(regs: [u32; 4]) -> (Vec<Tlb>, bool) {
    let mut out = Vec::new();
    let mut to18 = false;
    for (i, r) in regs.iter().enumerate() {
        if r & (1 << 31) != 0 {
            continue; // register holds no descriptors
        }
        for (j, byte) in r.to_le_bytes().iter().enumerate() {
            if i == 0 && j == 0 {
                continue; // AL: iteration count
            }
            if *byte == 0xFE {
                to18 = true;
            }
            // (level, kind, pages, ways, entries); ways 0 = fully associative.
            let d: &[(u8, Kind, u8, u32, u32)] = match byte {
                0x03 => &[(1, Kind::Data, P4K, 4, 64)],
                0x04 => &[(1, Kind::Data, P4M, 4, 8)],
                0x05 => &[(1, Kind::Data, P4M, 4, 32)],
                0x56 => &[(1, Kind::Data, P4M, 4, 16)],
                0x57 => &[(1, Kind::Data, P4K, 4, 16)],
                0x59 => &[(1, Kind::Data, P4K, 0, 16)],
                0x5A => &[(1, Kind::Data, P2M | P4M, 4, 32)],
                0x5B => &[(1, Kind::Data, P4K | P4M, 0, 64)],
                0x5C => &[(1, Kind::Data, P4K | P4M, 0, 128)],
                0x5D => &[(1, Kind::Data, P4K | P4M, 0, 256)],
                0x63 => &[
                    (1, Kind::Data, P2M | P4M, 4, 32),
                    (1, Kind::Data, P1G, 4, 4),
                ],
                0x64 => &[(1, Kind::Data, P4K, 4, 512)],
                0x6A => &[(1, Kind::Data, P4K, 8, 64)],
                0x6B => &[(1, Kind::Data, P4K, 8, 256)],
                0x6C => &[(1, Kind::Data, P2M | P4M, 8, 128)],
                0x6D => &[(1, Kind::Data, P1G, 0, 16)],
                0xA0 => &[(1, Kind::Data, P4K, 0, 32)],
                0xB3 => &[(1, Kind::Data, P4K, 4, 128)],
                0xB4 => &[(1, Kind::Data, P4K, 4, 256)],
                0xBA => &[(1, Kind::Data, P4K, 4, 64)],
                0xC0 => &[(1, Kind::Data, P4K | P4M, 4, 8)],
                0xC1 => &[(2, Kind::Unified, P4K | P2M, 8, 1024)],
                0xC2 => &[(1, Kind::Data, P4K | P2M, 4, 16)],
                0xC3 => &[
                    (2, Kind::Unified, P4K | P2M, 6, 1536),
                    (2, Kind::Unified, P1G, 4, 16),
                ],
                0xC4 => &[(1, Kind::Data, P2M | P4M, 4, 32)],
                0xCA => &[(2, Kind::Unified, P4K, 4, 512)],
                _ => &[],
            };
            for &(level, kind, pages, ways, entries) in d {
                out.push(Tlb {
                    level,
                    kind,
                    pages,
                    entries,
                    ways,
                    source: format!("cpuid 2 descriptor 0x{byte:02x}"),
                });
            }
        }
    }
    (out, to18)
}

/// AMD associativity of the L1 fields (8 bits): 0xFF fully, else the ways.
fn amd_l1_ways(a: u32) -> u32 {
    if a == 0xff { 0 } else { a }
}

/// AMD associativity of the L2 fields (4-bit code, 0 = absent).
fn amd_l2_ways(code: u32) -> Option<u32> {
    Some(match code {
        0 => return None,
        1 => 1,
        2 => 2,
        3 => 3,
        4 => 4,
        5 => 6,
        6 => 8,
        8 => 16,
        0xA => 32,
        0xB => 48,
        0xC => 64,
        0xD => 96,
        0xE => 128,
        0xF => 0,
        _ => return None,
    })
}

fn amd_tlb(level: u8, pages: u8, entries: u32, ways: u32, leaf: &str) -> Tlb {
    Tlb {
        level,
        kind: Kind::Data,
        pages,
        entries,
        ways,
        source: format!("cpuid {leaf}"),
    }
}

/// 0x80000005: EAX = L1 TLB for 2M/4M pages, EBX = L1 TLB for 4K pages (data in bits 31:16).
pub fn decode_amd_l1_tlb(eax: u32, ebx: u32) -> Vec<Tlb> {
    let mut v = Vec::new();
    for (reg, pages) in [(ebx, P4K), (eax, P2M | P4M)] {
        let entries = (reg >> 16) & 0xff;
        if entries > 0 {
            v.push(amd_tlb(
                1,
                pages,
                entries,
                amd_l1_ways(reg >> 24),
                "0x80000005",
            ));
        }
    }
    v
}

/// 0x80000006: EAX = L2 TLB for 2M/4M pages, EBX = L2 TLB for 4K pages (data: 31:28 assoc.,
/// 27:16 entries).
pub fn decode_amd_l2_tlb(eax: u32, ebx: u32) -> Vec<Tlb> {
    let mut v = Vec::new();
    for (reg, pages) in [(ebx, P4K), (eax, P2M | P4M)] {
        let entries = (reg >> 16) & 0xfff;
        if let Some(ways) = amd_l2_ways(reg >> 28)
            && entries > 0
        {
            v.push(amd_tlb(2, pages, entries, ways, "0x80000006"));
        }
    }
    v
}

/// 0x80000019: EAX = L1 TLB for 1G pages, EBX = L2 TLB for 1G pages (data: 31:28 assoc.,
/// 27:16 entries).
pub fn decode_amd_1g_tlb(eax: u32, ebx: u32) -> Vec<Tlb> {
    let mut v = Vec::new();
    for (level, reg) in [(1u8, eax), (2u8, ebx)] {
        let entries = (reg >> 16) & 0xfff;
        if let Some(ways) = amd_l2_ways(reg >> 28)
            && entries > 0
        {
            v.push(amd_tlb(level, P1G, entries, ways, "0x80000019"));
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leaf4_of_this_vm() {
        // Firecracker guest on a Xeon (2026-12): L1d 48 KiB 12-way, L2 2 MiB 16-way.
        let l1 = decode_cache(0x0400_0121, 0x02c0_003f, 0x3f).unwrap();
        assert_eq!(
            (l1.level, l1.kind, l1.bytes, l1.ways),
            (1, Kind::Data, 48 << 10, 12)
        );
        let l2 = decode_cache(0x0400_0143, 0x03c0_003f, 0x7ff).unwrap();
        assert_eq!((l2.level, l2.kind, l2.bytes), (2, Kind::Unified, 2 << 20));
        assert_eq!(decode_cache(0, 0, 0), None);
        let t = Topology {
            caches: vec![l1, l2],
            ..Default::default()
        };
        assert_eq!(t.data_cache(2).unwrap().bytes, 2 << 20);
    }

    #[test]
    fn amd_zen4_tlbs() {
        // Zen 4: L1 DTLB 72 entries fully associative for all page sizes; L2 DTLB 3072 entries
        // (4K and 2M), 1G: 72 in L1, 64 in L2.
        let mut t = Topology::default();
        t.tlbs.extend(decode_amd_l1_tlb(0xff48_ff40, 0xff48_ff40));
        t.tlbs.extend(decode_amd_l2_tlb(0x6c00_2200, 0xcc00_4200));
        t.tlbs.extend(decode_amd_1g_tlb(0xf048_f040, 0x6040_0000));
        assert_eq!(t.dtlb(1, P4K), Some(72));
        assert_eq!(t.dtlb(1, P2M), Some(72));
        assert_eq!(t.dtlb(2, P4K), Some(3072));
        assert_eq!(t.dtlb(2, P2M), Some(3072));
        assert_eq!(t.dtlb(2, P1G), Some(64));
        let l1 = &t.tlbs[0];
        assert_eq!(l1.ways, 0, "0xff = fully associative");
        assert!(
            t.describe()
                .contains("L2 data TLB 3072 entries (4K, 64-way)")
        );
    }

    #[test]
    fn intel_leaf18_and_leaf2() {
        // A load-only L1 DTLB of 16 sets x 6 ways for 4K, a store DTLB, an STLB of 128 sets x
        // 16 ways for 4K/2M.
        let load = decode_leaf18(6 << 16 | 1, 16, 4 | 1 << 5).unwrap();
        assert_eq!(
            (load.level, load.kind, load.entries, load.pages),
            (1, Kind::Load, 96, P4K)
        );
        let store = decode_leaf18(16 << 16 | 0xf, 1, 5 | 1 << 5 | 1 << 8).unwrap();
        assert_eq!(
            (store.kind, store.ways, store.entries),
            (Kind::Store, 0, 16)
        );
        let stlb = decode_leaf18(16 << 16 | 3, 128, 3 | 2 << 5).unwrap();
        let t = Topology {
            tlbs: vec![load, store, stlb],
            ..Default::default()
        };
        assert_eq!(
            t.dtlb(1, P4K),
            Some(96),
            "the store-only DTLB is not for loads"
        );
        assert_eq!(t.dtlb(2, P2M), Some(2048));
        assert_eq!(decode_leaf18(0, 0, 0), None);
        // This VM: 0x00feff01 -> 0xFE ("see leaf 0x18"), 0xFF (caches: leaf 4), no TLB bytes.
        let (tlbs, to18) = decode_leaf2([0x00fe_ff01, 0xf0, 0, 0]);
        assert!(tlbs.is_empty() && to18);
        // Skylake-like: 0x63 (DTLB 2M/4M 32 + 1G 4), 0x03 (DTLB 4K 64), 0xC3 (STLB 1536).
        let (tlbs, _) = decode_leaf2([0x0063_0301, 0xc3, 0, 0]);
        let t = Topology {
            tlbs,
            ..Default::default()
        };
        assert_eq!(t.dtlb(1, P4K), Some(64));
        assert_eq!(t.dtlb(1, P2M), Some(32));
        assert_eq!(t.dtlb(2, P4K), Some(1536));
        assert_eq!(t.dtlb(2, P1G), Some(16));
    }

    #[test]
    fn detect_is_consistent() {
        let t = Topology::detect();
        for c in &t.caches {
            assert!(c.bytes >= 1024 && c.line >= 16, "{c:?}");
        }
        for tl in &t.tlbs {
            assert!(tl.entries > 0 && tl.level >= 1, "{tl:?}");
        }
        assert!(!t.describe().is_empty());
    }
}
