//! What a trace capture is, as stored and shown: its metadata ([`CaptureInfo`]) and the tables
//! computed from it ([`Tables`]: seed 002's TLB flush histogram, begin/end pair durations,
//! counts). `trace/` computes them from events; `store/` keeps them; `report/` renders them.

use std::collections::BTreeMap;

/// Accumulated durations, in trace clock ticks (cycles with x86-tsc, ns with mono).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct Bin {
    /// Events (flushes, pairs, occurrences).
    pub count: u64,
    /// How many of them have a duration.
    pub timed: u64,
    pub sum: u64,
    pub min: u64,
    pub max: u64,
}

impl Bin {
    #[inline]
    pub fn add_time(&mut self, d: u64) {
        if self.timed == 0 || d < self.min {
            self.min = d;
        }
        if d > self.max {
            self.max = d;
        }
        self.timed += 1;
        self.sum += d;
    }
    pub fn merge(&mut self, o: &Bin) {
        if o.timed > 0 {
            if self.timed == 0 || o.min < self.min {
                self.min = o.min;
            }
            self.max = self.max.max(o.max);
        }
        self.count += o.count;
        self.timed += o.timed;
        self.sum += o.sum;
    }
    pub fn mean(&self) -> Option<f64> {
        (self.timed > 0).then(|| self.sum as f64 / self.timed as f64)
    }
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TlbRow {
    pub reason: i64,
    pub pages: i64,
    pub bin: Bin,
}

#[derive(Debug, Clone, PartialEq, Default, serde::Serialize, serde::Deserialize)]
pub struct TlbTable {
    pub event: String,
    /// Reason names from the format file (or text), by value.
    pub reasons: Vec<(i64, String)>,
    pub rows: Vec<TlbRow>,
}

impl TlbTable {
    pub fn reason_name(&self, r: i64) -> String {
        self.reasons
            .iter()
            .find(|(k, _)| *k == r)
            .map(|(_, n)| n.clone())
            .unwrap_or_else(|| format!("reason {r}"))
    }
    /// Rows summed over the reasons in `filter` (all when None), by pages.
    pub fn by_pages(&self, filter: Option<i64>) -> BTreeMap<i64, Bin> {
        let mut m: BTreeMap<i64, Bin> = BTreeMap::new();
        for r in &self.rows {
            if filter.is_none_or(|f| f == r.reason) {
                m.entry(r.pages).or_default().merge(&r.bin);
            }
        }
        m
    }
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PairRow {
    pub key: i64,
    pub bin: Bin,
    /// tlb_flush events inside the pairs of this row: (pages, count).
    pub flushes: Vec<(i64, u64)>,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PairTable {
    pub name: String,
    pub begin: Vec<String>,
    pub end: Vec<String>,
    /// What the key is (`pages`, `requested pages`, `xfeatures`, a field name, or empty).
    pub key: String,
    pub rows: Vec<PairRow>,
    /// Ends without a begin on the CPU, begins replaced before their end, pid mismatches.
    pub unmatched: u64,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CountTable {
    pub event: String,
    pub key: String,
    pub names: Vec<(i64, String)>,
    pub rows: Vec<(i64, u64)>,
}

/// Everything computed from one capture.
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize, serde::Deserialize)]
pub struct Tables {
    pub tlb: Option<TlbTable>,
    pub pairs: Vec<PairTable>,
    pub counts: Vec<CountTable>,
    /// Events seen per type name.
    pub events: Vec<(String, u64)>,
    /// Smallest begin-end delta over all pairs (ticks): the cost of the tracing itself.
    pub bias: Option<u64>,
}

/// Convert clock ticks to cycles and ns.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Units {
    /// Ticks are TSC cycles (x86-tsc, counter clocks); else ns.
    pub ticks_are_cycles: bool,
    pub tsc_hz: Option<f64>,
}

impl Units {
    pub fn for_clock(clock: &str, tsc_hz: Option<f64>) -> Units {
        Units {
            ticks_are_cycles: matches!(clock, "x86-tsc" | "counter"),
            tsc_hz,
        }
    }
    pub fn cycles(&self, ticks: f64) -> Option<f64> {
        if self.ticks_are_cycles {
            Some(ticks)
        } else {
            self.tsc_hz.map(|h| ticks * h / 1e9)
        }
    }
    pub fn ns(&self, ticks: f64) -> Option<f64> {
        if self.ticks_are_cycles {
            self.tsc_hz.map(|h| ticks * 1e9 / h)
        } else {
            Some(ticks)
        }
    }
}

/// Lost events of one CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct LostCpu {
    pub cpu: u32,
    /// From the kernel's per-CPU stats (overrun + dropped), when recorded here.
    pub stats: Option<u64>,
    /// Sum of counts stored in page headers or `[LOST N EVENTS]` lines.
    pub counted: u64,
    /// Pages flagged as following a loss without a count.
    pub flagged: u64,
}

/// Metadata of a capture, as stored and shown.
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize, serde::Deserialize)]
pub struct CaptureInfo {
    pub id: Option<i64>,
    /// `record` or `import`
    pub source: String,
    pub events: Vec<String>,
    pub clock: String,
    pub tsc_hz: Option<f64>,
    pub wall_ns: Option<u64>,
    /// First to last event, in clock ticks.
    pub span_ticks: u64,
    pub event_count: u64,
    pub lost: Vec<LostCpu>,
    pub command: Vec<String>,
    pub raw_path: Option<String>,
    pub text_path: Option<String>,
    pub skipped_lines: u64,
    pub exit_code: Option<i32>,
}

impl CaptureInfo {
    pub fn units(&self) -> Units {
        Units::for_clock(&self.clock, self.tsc_hz)
    }
    /// Best estimate of lost events: the larger of the kernel's stats and the page counts.
    pub fn lost_total(&self) -> u64 {
        self.lost
            .iter()
            .map(|l| l.stats.unwrap_or(0).max(l.counted))
            .sum()
    }
    pub fn has_losses(&self) -> bool {
        self.lost_total() > 0 || self.lost.iter().any(|l| l.flagged > 0)
    }
}
