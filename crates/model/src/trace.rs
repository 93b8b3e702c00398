//! What a trace capture is, as stored and shown: its metadata ([`CaptureInfo`]) and the tables
//! computed from it ([`Tables`]: seed 002's TLB flush histogram, begin/end pair durations,
//! counts). `trace/` computes them from events; `store/` keeps them; `report/` renders them.

use std::collections::BTreeMap;

/// Bins with more durations than this keep a sketch instead of every value.
pub const EXACT_LIMIT: usize = 2_000_000;
/// Relative error of a quantile read from a sketch: the value returned is within this fraction
/// of a duration at the requested rank.
pub const SKETCH_REL_ERROR: f64 = 0.005;
/// Bucket growth factor of the sketch: `(1 + e) / (1 - e)`, so that a bucket's midpoint (in the
/// sense of [`Dist`]) is within `e` of every value in it.
const GAMMA: f64 = (1.0 + SKETCH_REL_ERROR) / (1.0 - SKETCH_REL_ERROR);
/// The sketch bucket of 0.
const ZERO_BUCKET: i32 = i32::MIN;

/// The durations of a bin, so that medians and percentiles can be read: every value (sorted
/// ascending) while there are at most [`EXACT_LIMIT`], beyond that a log-bucket sketch whose
/// quantiles are within [`SKETCH_REL_ERROR`] of a true duration at that rank.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct Dist {
    /// Every duration (ticks). Unsorted while a table is being built; [`Dist::seal`] sorts.
    pub values: Vec<u64>,
    /// (bucket, count), ascending, when the bin holds a sketch (then `values` is empty).
    pub sketch: Vec<(i32, u64)>,
}

fn bucket(v: u64) -> i32 {
    if v == 0 {
        ZERO_BUCKET
    } else {
        ((v as f64).ln() / GAMMA.ln()).ceil() as i32
    }
}

fn bucket_value(b: i32) -> f64 {
    if b == ZERO_BUCKET {
        0.0
    } else {
        2.0 * GAMMA.powi(b) / (GAMMA + 1.0)
    }
}

impl Dist {
    /// Durations held (exact or in the sketch).
    pub fn len(&self) -> u64 {
        if self.sketch.is_empty() {
            self.values.len() as u64
        } else {
            self.sketch.iter().map(|(_, n)| n).sum()
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// True when every duration is kept (quantiles are exact).
    pub fn is_exact(&self) -> bool {
        self.sketch.is_empty()
    }
    /// Sort the values; beyond [`EXACT_LIMIT`] turn them into a sketch.
    pub fn seal(&mut self) {
        if !self.sketch.is_empty() {
            return;
        }
        self.values.sort_unstable();
        if self.values.len() > EXACT_LIMIT {
            self.make_sketch();
        }
    }
    fn make_sketch(&mut self) {
        let mut m: std::collections::BTreeMap<i32, u64> = self.sketch.iter().copied().collect();
        for v in self.values.drain(..) {
            *m.entry(bucket(v)).or_default() += 1;
        }
        self.values.shrink_to_fit();
        self.sketch = m.into_iter().collect();
    }
    /// Add another sealed distribution (the result is sealed).
    pub fn merge(&mut self, o: &Dist) {
        if self.is_exact() && o.is_exact() && self.values.len() + o.values.len() <= EXACT_LIMIT {
            self.values.extend_from_slice(&o.values);
            self.values.sort_unstable();
            return;
        }
        self.make_sketch();
        let mut m: std::collections::BTreeMap<i32, u64> = self.sketch.iter().copied().collect();
        for v in &o.values {
            *m.entry(bucket(*v)).or_default() += 1;
        }
        for (b, n) in &o.sketch {
            *m.entry(*b).or_default() += n;
        }
        self.sketch = m.into_iter().collect();
    }
    /// The `q` quantile in ticks (type 7 on exact values, as `model::describe`; on a sketch the
    /// bucket holding rank `(n-1) q`). None when empty. Requires a sealed distribution.
    pub fn quantile(&self, q: f64) -> Option<f64> {
        let n = self.len();
        if n == 0 {
            return None;
        }
        let h = (n - 1) as f64 * q.clamp(0.0, 1.0);
        if self.is_exact() {
            let s = &self.values;
            let lo = h.floor() as usize;
            let hi = h.ceil() as usize;
            return Some(s[lo] as f64 + (h - lo as f64) * (s[hi] as f64 - s[lo] as f64));
        }
        let rank = h.round() as u64;
        let mut seen = 0;
        for (b, c) in &self.sketch {
            seen += c;
            if seen > rank {
                return Some(bucket_value(*b));
            }
        }
        self.sketch.last().map(|(b, _)| bucket_value(*b))
    }
    /// Encode for the store: sealed values as ascending deltas in LEB128 (tag 1), or the
    /// sketch as (zigzag bucket, count) pairs (tag 2).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(1 + 2 * self.values.len());
        if self.is_exact() {
            out.push(1);
            let mut prev = 0u64;
            for v in &self.values {
                leb(&mut out, v - prev);
                prev = *v;
            }
        } else {
            out.push(2);
            for (b, n) in &self.sketch {
                leb(&mut out, ((*b as i64) << 1 ^ ((*b as i64) >> 63)) as u64);
                leb(&mut out, *n);
            }
        }
        out
    }
    /// Decode what [`Dist::encode`] wrote. The error says what is wrong.
    pub fn decode(b: &[u8]) -> Result<Dist, String> {
        let mut it = b.iter().copied();
        let tag = it.next().ok_or("empty duration blob")?;
        let rest = &b[1..];
        let mut pos = 0;
        let mut next = |what: &str| -> Result<Option<u64>, String> {
            if pos == rest.len() {
                return Ok(None);
            }
            let mut v = 0u64;
            let mut shift = 0;
            loop {
                let Some(byte) = rest.get(pos).copied() else {
                    return Err(format!("truncated {what} at byte {pos}"));
                };
                pos += 1;
                if shift >= 64 {
                    return Err(format!("{what} at byte {pos} overflows 64 bits"));
                }
                v |= ((byte & 0x7f) as u64) << shift;
                shift += 7;
                if byte & 0x80 == 0 {
                    return Ok(Some(v));
                }
            }
        };
        let mut d = Dist::default();
        match tag {
            1 => {
                let mut acc = 0u64;
                while let Some(delta) = next("duration")? {
                    acc = acc.checked_add(delta).ok_or("duration overflows 64 bits")?;
                    d.values.push(acc);
                }
            }
            2 => {
                while let Some(z) = next("bucket")? {
                    let b = ((z >> 1) as i64 ^ -((z & 1) as i64)) as i32;
                    let n = next("bucket count")?.ok_or("bucket without a count")?;
                    d.sketch.push((b, n));
                }
            }
            t => return Err(format!("unknown duration blob tag {t}")),
        }
        Ok(d)
    }
}

fn leb(out: &mut Vec<u8>, mut v: u64) {
    loop {
        let b = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(b);
            return;
        }
        out.push(b | 0x80);
    }
}

/// Accumulated durations, in trace clock ticks (cycles with x86-tsc, ns with mono).
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct Bin {
    /// Events (flushes, pairs, occurrences).
    pub count: u64,
    /// How many of them have a duration.
    pub timed: u64,
    pub sum: u64,
    pub min: u64,
    pub max: u64,
    /// The durations themselves (empty for captures stored before they were kept).
    pub dist: Dist,
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
        self.dist.values.push(d);
    }
    /// Add another bin (both sealed).
    pub fn merge(&mut self, o: &Bin) {
        let known = self.knows_quantiles() && o.knows_quantiles();
        if o.timed > 0 {
            if self.timed == 0 || o.min < self.min {
                self.min = o.min;
            }
            self.max = self.max.max(o.max);
        }
        self.count += o.count;
        self.timed += o.timed;
        self.sum += o.sum;
        if known {
            self.dist.merge(&o.dist);
        } else {
            self.dist = Dist::default();
        }
    }
    pub fn mean(&self) -> Option<f64> {
        (self.timed > 0).then(|| self.sum as f64 / self.timed as f64)
    }
    /// Whether the durations are kept (every one, or a sketch of them).
    pub fn knows_quantiles(&self) -> bool {
        self.dist.len() == self.timed
    }
    /// The `q` quantile of the durations (ticks); None without durations or when they were
    /// not kept.
    pub fn quantile(&self, q: f64) -> Option<f64> {
        if !self.knows_quantiles() {
            return None;
        }
        self.dist.quantile(q)
    }
    pub fn median(&self) -> Option<f64> {
        self.quantile(0.5)
    }
    pub fn p90(&self) -> Option<f64> {
        self.quantile(0.9)
    }
    /// A few long (or short) durations pull the mean: it lies outside the 10th..90th
    /// percentile of the durations, i.e. fewer than a tenth of them decide it. Needs 5 timed.
    pub fn mean_pulled(&self) -> bool {
        if self.timed < 5 {
            return false;
        }
        match (self.mean(), self.quantile(0.1), self.quantile(0.9)) {
            (Some(m), Some(lo), Some(hi)) => m > hi || m < lo,
            _ => false,
        }
    }
    /// 0 when quantiles are exact, [`SKETCH_REL_ERROR`] from a sketch, None when unknown.
    pub fn quantile_error(&self) -> Option<f64> {
        if !self.knows_quantiles() || self.timed == 0 {
            None
        } else if self.dist.is_exact() {
            Some(0.0)
        } else {
            Some(SKETCH_REL_ERROR)
        }
    }
    /// Sort the durations (after a table is built).
    pub fn seal(&mut self) {
        self.dist.seal();
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
    /// Reasons that are not flushes: `remote IPI send` marks the sending CPU's request (its
    /// own flush is a `local MM shootdown` event, each receiver's a `remote shootdown`).
    pub fn is_flush(&self, reason: i64) -> bool {
        self.reason_name(reason) != "remote IPI send"
    }
    /// Rows summed over the reasons in `filter` (every flush reason when None), by pages.
    pub fn by_pages(&self, filter: Option<i64>) -> BTreeMap<i64, Bin> {
        let mut m: BTreeMap<i64, Bin> = BTreeMap::new();
        for r in &self.rows {
            let take = match filter {
                Some(f) => f == r.reason,
                None => self.is_flush(r.reason),
            };
            if take {
                m.entry(r.pages).or_default().merge(&r.bin);
            }
        }
        m
    }
    /// Events of the reason named `name` (all sizes).
    pub fn reason_count(&self, name: &str) -> u64 {
        self.rows
            .iter()
            .filter(|r| self.reason_name(r.reason) == name)
            .map(|r| r.bin.count)
            .sum()
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
    /// Whose events were recorded.
    pub scope: Scope,
    /// What ended the recording (`the workload exited`, `--duration 10 s`, `SIGINT`, ...).
    pub stop: Option<String>,
    /// CPU time (user + system, ns) of the workload and its reaped children, when abperf ran it.
    pub cpu_ns: Option<u64>,
    /// What one recorded event costs the traced task on this machine (ns), measured once per
    /// machine ([`EventCost`]).
    pub event_cost: Option<EventCost>,
}

/// Whose events a capture holds.
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize, serde::Deserialize)]
pub struct Scope {
    /// `workload` (the command's process tree), `pid` (given processes and their descendants),
    /// `cgroup`, `system-wide`, or empty when not known (imports).
    pub kind: String,
    /// Processes whose trees were followed (the workload, `--pid`), as first listed.
    pub pids: Vec<i32>,
    /// `--cgroup` directory.
    pub cgroup: Option<String>,
}

impl Scope {
    pub fn system_wide() -> Scope {
        Scope {
            kind: "system-wide".into(),
            ..Default::default()
        }
    }
    /// Only some tasks' events are in the capture.
    pub fn is_filtered(&self) -> bool {
        matches!(self.kind.as_str(), "workload" | "pid" | "cgroup")
    }
    /// In words, for report headers.
    pub fn text(&self) -> String {
        let pids = self
            .pids
            .iter()
            .map(|p| p.to_string())
            .collect::<Vec<_>>()
            .join(", ");
        match self.kind.as_str() {
            "workload" => format!(
                "the workload's process tree (pid {pids} and every task it starts; tracefs set_event_pid with event-fork)"
            ),
            "pid" => format!(
                "pid {pids}, their threads and descendants (tracefs set_event_pid with event-fork)"
            ),
            "cgroup" => format!(
                "the tasks of cgroup {} (set_event_pid, refreshed every 100 ms, with event-fork)",
                self.cgroup.as_deref().unwrap_or("?")
            ),
            "system-wide" => "system-wide (every task on every CPU)".into(),
            "" => "not recorded (imported capture)".into(),
            other => other.to_string(),
        }
    }
}

/// The cost of one recorded event, measured on this machine: the CPU time a thread that
/// touches a page and drops it with `madvise` (fault, syscall, zap, TLB flush) gains per
/// recorded event when the default events are on (`trace::cost`).
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize, serde::Deserialize)]
pub struct EventCost {
    pub ns_per_event: f64,
    /// Spread over the measurement blocks (10th and 90th percentile of the per-block figure).
    pub low: f64,
    pub high: f64,
    /// When and how (`2025-11-22T20:00:00Z, 15 x 2000 madvise calls`).
    pub how: String,
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
