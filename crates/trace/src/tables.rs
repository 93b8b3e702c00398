//! Aggregation of a stream of events into the tables of seed 002: the TLB flush histogram per
//! `pages` value (with durations from enclosing begin/end pairs), begin/end pair durations
//! matched per CPU, and counts by any field. Pure computation: events in, [`Tables`] out.
//!
//! Durations for the TLB table: a `tlb_flush` with reason "remote shootdown" is timed by the
//! `call_function[_single]_entry`..`_exit` pair around it on the same CPU (the cost on the
//! receiving CPU); any other flush is timed by the `sys_enter_X`..`sys_exit_X` pair (madvise,
//! munmap, mprotect) around it on the same CPU and task, when that call holds exactly one flush
//! of that reason. The syscall time includes the syscall and the page zap, not the flush alone;
//! the smallest begin-end delta seen (the tracing bias) bounds what is not flush work.

use super::event::{Ev, FieldLoc, Schema};
use std::collections::BTreeMap;

pub use abperf_model::trace::{Bin, CountTable, PairRow, PairTable, Tables, TlbRow, TlbTable};

#[derive(Debug, Clone, PartialEq)]
pub enum Spec {
    /// The standard set: TLB table, remote shootdown pairs, syscall pairs, x86_fpu pairs,
    /// tlb_flush counts by reason.
    Standard,
    /// A begin/end pair with an optional key field of the begin event.
    Pair {
        begin: String,
        end: String,
        key: Option<String>,
    },
    /// Counts of one event by one field.
    Count { event: String, key: String },
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum KeyOf {
    None,
    /// A field of the begin event.
    Field(FieldLoc),
    /// A length field in bytes, shown as pages (rounded up).
    LenPages(FieldLoc, u64),
    /// `pages` of the remote-shootdown flush inside.
    InnerRemotePages,
}

#[derive(Debug, Clone)]
struct PairDef {
    name: String,
    begin_names: Vec<String>,
    end_names: Vec<String>,
    key_label: String,
    /// Per begin type: how to get the key.
    keys: Vec<(u32, KeyOf)>,
    /// Which flushes to attach: Some(true) only remote shootdowns, Some(false) all but remote
    /// shootdowns, None every flush.
    flush_remote: Option<bool>,
    /// Require the same pid at begin and end (syscalls).
    same_pid: bool,
    /// Keep only pairs that contain a flush (remote shootdown pairs).
    need_flush: bool,
    /// Use the durations of single flushes for the TLB table.
    times_flushes: bool,
    /// The key is the pages of the first flush inside (remote shootdowns).
    key_inner: bool,
}

#[derive(Debug, Clone, Copy)]
enum Role {
    /// A TLB flush; with the count by reason that reads the same field, done here.
    Flush(Option<usize>),
    /// A pair's begin, with how its key is read from this event type (resolved once).
    Begin(usize, KeyOf),
    End(usize),
    Count(usize),
}

#[derive(Debug, Clone, Default)]
struct Open {
    ts: u64,
    key: i64,
    pid: i32,
    active: bool,
    flushes: Vec<(i64, i64)>,
}

/// One row of a pair table being built: key, durations, flushes inside (pages -> count).
type AccRow = (i64, Bin, PagesCount);

/// Counts by pages of the flushes inside a pair row: a short vector searched linearly (a row
/// usually sees a handful of sizes; hashing each flush cost more), a map beyond
/// [`PagesCount::FEW`] sizes (so that a pair with many flushes of many sizes stays linear).
#[derive(Debug, Clone, Default)]
struct PagesCount {
    few: Vec<(i64, u64)>,
    many: IntMap<u64>,
}

impl PagesCount {
    const FEW: usize = 16;
    #[inline]
    fn add(&mut self, pages: i64) {
        if let Some(e) = self.few.iter_mut().find(|e| e.0 == pages) {
            e.1 += 1;
        } else if self.few.len() < Self::FEW {
            self.few.push((pages, 1));
        } else {
            *self.many.entry(pages).or_insert(0) += 1;
        }
    }
    fn sorted(self) -> Vec<(i64, u64)> {
        let mut v = self.few;
        v.extend(self.many);
        v.sort();
        v
    }
}

/// A map keyed by a trace value (reason, pages, a key field) with foldhash's fast hash (the
/// standard SipHash was a tenth of a raw import); the tables sort what they take from it.
type IntMap<V> = std::collections::HashMap<i64, V, foldhash::fast::FixedState>;

/// Rows of a pair table: a vector with an index, and the last row used cached (workloads
/// repeat the same key many times in a row).
#[derive(Debug, Clone, Default)]
struct PairAcc {
    rows: Vec<AccRow>,
    /// Row by key, searched once there are more than a few rows (linearly before).
    index: IntMap<usize>,
    last: usize,
    unmatched: u64,
}

impl PairAcc {
    #[inline]
    fn row(&mut self, key: i64) -> &mut AccRow {
        if self.rows.get(self.last).is_some_and(|r| r.0 == key) {
            return &mut self.rows[self.last];
        }
        let found = if self.rows.len() <= 16 {
            self.rows.iter().position(|r| r.0 == key)
        } else {
            self.index.get(&key).copied()
        };
        let i = match found {
            Some(i) => i,
            None => {
                self.rows.push((key, Bin::default(), Default::default()));
                self.index.insert(key, self.rows.len() - 1);
                self.rows.len() - 1
            }
        };
        self.last = i;
        &mut self.rows[i]
    }
}

/// Counts by value: dense for -1..=1024 (reasons, pages), a map beyond.
#[derive(Debug, Clone)]
struct Counter {
    dense: Vec<u64>,
    sparse: BTreeMap<i64, u64>,
}

impl Default for Counter {
    fn default() -> Self {
        Counter {
            dense: vec![0; 1026],
            sparse: BTreeMap::new(),
        }
    }
}

impl Counter {
    #[inline]
    fn add(&mut self, v: i64) {
        if (-1..=1024).contains(&v) {
            self.dense[(v + 1) as usize] += 1;
        } else {
            *self.sparse.entry(v).or_default() += 1;
        }
    }
    fn rows(&self) -> Vec<(i64, u64)> {
        let mut m = self.sparse.clone();
        for (i, n) in self.dense.iter().enumerate() {
            if *n > 0 {
                m.insert(i as i64 - 1, *n);
            }
        }
        m.into_iter().collect()
    }
}

/// The highest CPU number a capture may name plus one (Linux's largest NR_CPUS): per-CPU state is
/// indexed by it, so a corrupt number must be refused where it is read, not allocated for.
pub const MAX_CPUS: u32 = 8192;

const DENSE_REASONS: usize = 8;
const DENSE_PAGES: usize = 1026; // pages -1..=1024

/// Streaming aggregator. Feed events of each CPU in time order (CPUs may interleave).
#[derive(Debug)]
pub struct Analyzer {
    flush_ty: Option<u32>,
    flush_reason: Option<FieldLoc>,
    flush_pages: Option<FieldLoc>,
    remote_reason: Option<i64>,
    switch_reason: Option<i64>,
    /// `remote IPI send`: a request marker, not a flush; kept out of the pairs.
    send_reason: Option<i64>,
    roles: Vec<Vec<Role>>,
    pairs: Vec<PairDef>,
    acc: Vec<PairAcc>,
    counts: Vec<(String, String, u32, FieldLoc, Counter)>,
    /// Open pairs: `[cpu * pairs + pair]`.
    open: Vec<Open>,
    /// Per CPU: which pairs are open (bit p; used when there are at most 64 pairs).
    active: Vec<u64>,
    /// Per type: its roles, a range of `role_list` (one lookup per event, no nested vectors).
    role_at: Vec<(u32, u32)>,
    role_list: Vec<Role>,
    tlb_dense: Vec<Bin>,
    tlb_sparse: BTreeMap<(i64, i64), Bin>,
    events: Vec<u64>,
    bias: Option<u64>,
    want_tlb: bool,
}

/// The value of the tlb_flush reason named `name` (from the event's symbol table), if the
/// capture has the event and the name.
fn reason_value(schema: &Schema, flush_ty: Option<u32>, name: &str) -> Option<i64> {
    flush_ty.and_then(|t| {
        schema.types[t as usize]
            .symbols
            .get("reason")
            .and_then(|s| s.iter().find(|(_, n)| n == name).map(|(v, _)| *v))
    })
}

impl Analyzer {
    /// Resolve the specs against the schema. Errors name the missing event or field.
    pub fn new(schema: &Schema, specs: &[Spec]) -> Result<Analyzer, String> {
        let flush_ty = schema.find("tlb:tlb_flush");
        let flush_reason = flush_ty.and_then(|t| schema.field(t, "reason"));
        let flush_pages = flush_ty.and_then(|t| schema.field(t, "pages"));
        let mut a = Analyzer {
            switch_reason: reason_value(schema, flush_ty, "flush on task switch"),
            send_reason: reason_value(schema, flush_ty, "remote IPI send"),
            flush_ty,
            flush_reason,
            flush_pages,
            remote_reason: reason_value(schema, flush_ty, "remote shootdown"),
            roles: vec![Vec::new(); schema.types.len()],
            pairs: Vec::new(),
            acc: Vec::new(),
            counts: Vec::new(),
            open: Vec::new(),
            active: Vec::new(),
            role_at: Vec::new(),
            role_list: Vec::new(),
            tlb_dense: vec![Bin::default(); DENSE_REASONS * DENSE_PAGES],
            tlb_sparse: BTreeMap::new(),
            events: vec![0; schema.types.len()],
            bias: None,
            want_tlb: false,
        };
        for spec in specs {
            match spec {
                Spec::Standard => a.add_standard(schema),
                Spec::Pair { begin, end, key } => a.add_spec_pair(schema, begin, end, key)?,
                Spec::Count { event, key } => a.add_count(schema, event, key)?,
            }
        }
        a.settle_roles();
        Ok(a)
    }

    /// `--begin/--end[/--key]`: a pair of two events, its durations keyed by a field of the
    /// begin event.
    fn add_spec_pair(
        &mut self,
        schema: &Schema,
        begin: &str,
        end: &str,
        key: &Option<String>,
    ) -> Result<(), String> {
        let b = schema
            .find(begin)
            .ok_or_else(|| format!("event {begin:?} (--begin) is not in the capture"))?;
        let e = schema
            .find(end)
            .ok_or_else(|| format!("event {end:?} (--end) is not in the capture"))?;
        let k = match key {
            Some(k) => KeyOf::Field(schema.field(b, k).ok_or_else(|| {
                format!(
                    "event {begin:?} has no numeric field {k:?} (--key); fields: {}",
                    field_list(schema, b)
                )
            })?),
            None => KeyOf::None,
        };
        self.add_pair(
            PairDef {
                name: format!("{begin}..{end}"),
                begin_names: vec![begin.to_string()],
                end_names: vec![end.to_string()],
                key_label: key.clone().unwrap_or_default(),
                keys: vec![(b, k)],
                flush_remote: None,
                same_pid: false,
                need_flush: false,
                times_flushes: false,
                key_inner: false,
            },
            &[b],
            &[e],
        );
        Ok(())
    }

    /// `--event/--key`: counts of an event by the value of one of its fields.
    fn add_count(&mut self, schema: &Schema, event: &str, key: &str) -> Result<(), String> {
        let t = schema
            .find(event)
            .ok_or_else(|| format!("event {event:?} (--event) is not in the capture"))?;
        let f = schema.field(t, key).ok_or_else(|| {
            format!(
                "event {event:?} has no numeric field {key:?} (--key); fields: {}",
                field_list(schema, t)
            )
        })?;
        self.roles[t as usize].push(Role::Count(self.counts.len()));
        self.counts.push((
            schema.types[t as usize].full_name(),
            key.to_string(),
            t,
            f,
            Counter::default(),
        ));
        Ok(())
    }

    /// After every spec: the flush gets its role where anything needs it (first, so that pairs
    /// see it), the count of flushes by reason merges into it, and the roles are laid out flat
    /// (`role_at`, `role_list`).
    fn settle_roles(&mut self) {
        let a = self;
        let (flush_ty, flush_reason) = (a.flush_ty, a.flush_reason);
        if (a.want_tlb
            || a.pairs
                .iter()
                .any(|p| p.need_flush || p.flush_remote.is_some() || !p.keys.is_empty()))
            && let Some(t) = flush_ty
            && !a.roles[t as usize]
                .iter()
                .any(|r| matches!(r, Role::Flush(_)))
        {
            a.roles[t as usize].insert(0, Role::Flush(None));
        }
        // the flush's count by reason is done with the flush (one role per event, the field
        // read once)
        if let (Some(t), Some(loc)) = (flush_ty, flush_reason) {
            let roles = &mut a.roles[t as usize];
            let count = roles.iter().enumerate().find_map(|(i, r)| match r {
                Role::Count(c) if a.counts[*c].3 == loc => Some((i, *c)),
                _ => None,
            });
            if let Some(f) = roles.iter().position(|r| matches!(r, Role::Flush(None)))
                && let Some((i, c)) = count
            {
                roles[f] = Role::Flush(Some(c));
                roles.remove(i);
            }
        }
        for r in &a.roles {
            let start = a.role_list.len() as u32;
            a.role_list.extend_from_slice(r);
            a.role_at.push((start, a.role_list.len() as u32));
        }
    }

    fn add_pair(&mut self, mut def: PairDef, begins: &[u32], ends: &[u32]) {
        def.key_inner = def
            .keys
            .iter()
            .any(|(_, k)| matches!(k, KeyOf::InnerRemotePages));
        let i = self.pairs.len();
        for b in begins {
            let k = def
                .keys
                .iter()
                .find(|(t, _)| t == b)
                .map(|(_, k)| *k)
                .unwrap_or(KeyOf::None);
            self.roles[*b as usize].push(Role::Begin(i, k));
        }
        for e in ends {
            self.roles[*e as usize].push(Role::End(i));
        }
        self.pairs.push(def);
        self.acc.push(PairAcc::default());
    }

    fn add_standard(&mut self, schema: &Schema) {
        self.want_tlb = self.flush_ty.is_some();
        // remote shootdown on the receiving CPU
        let begins: Vec<u32> = [
            "irq_vectors:call_function_entry",
            "irq_vectors:call_function_single_entry",
        ]
        .iter()
        .filter_map(|n| schema.find(n))
        .collect();
        let ends: Vec<u32> = [
            "irq_vectors:call_function_exit",
            "irq_vectors:call_function_single_exit",
        ]
        .iter()
        .filter_map(|n| schema.find(n))
        .collect();
        if !begins.is_empty() && !ends.is_empty() && self.flush_ty.is_some() {
            self.add_pair(
                PairDef {
                    name: "remote shootdown".into(),
                    begin_names: begins
                        .iter()
                        .map(|t| schema.types[*t as usize].full_name())
                        .collect(),
                    end_names: ends
                        .iter()
                        .map(|t| schema.types[*t as usize].full_name())
                        .collect(),
                    key_label: "pages".into(),
                    keys: begins
                        .iter()
                        .map(|b| (*b, KeyOf::InnerRemotePages))
                        .collect(),
                    flush_remote: Some(true),
                    same_pid: false,
                    need_flush: true,
                    times_flushes: true,
                    key_inner: false,
                },
                &begins,
                &ends,
            );
        }
        let page = page_size();
        for sc in ["madvise", "munmap", "mprotect"] {
            let (Some(b), Some(e)) = (
                schema.find(&format!("syscalls:sys_enter_{sc}")),
                schema.find(&format!("syscalls:sys_exit_{sc}")),
            ) else {
                continue;
            };
            let key = ["len_in", "len"]
                .iter()
                .find_map(|f| schema.field(b, f))
                .map(|l| KeyOf::LenPages(l, page))
                .unwrap_or(KeyOf::None);
            self.add_pair(
                PairDef {
                    name: sc.into(),
                    begin_names: vec![schema.types[b as usize].full_name()],
                    end_names: vec![schema.types[e as usize].full_name()],
                    key_label: "requested pages".into(),
                    keys: vec![(b, key)],
                    flush_remote: Some(false),
                    same_pid: true,
                    need_flush: false,
                    times_flushes: true,
                    key_inner: false,
                },
                &[b],
                &[e],
            );
        }
        if let (Some(b), Some(e)) = (
            schema.find("x86_fpu:x86_fpu_before_save"),
            schema.find("x86_fpu:x86_fpu_after_save"),
        ) {
            let key = schema
                .field(b, "xfeatures")
                .map(KeyOf::Field)
                .unwrap_or(KeyOf::None);
            self.add_pair(
                PairDef {
                    name: "xsave".into(),
                    begin_names: vec![schema.types[b as usize].full_name()],
                    end_names: vec![schema.types[e as usize].full_name()],
                    key_label: "xfeatures".into(),
                    keys: vec![(b, key)],
                    flush_remote: None,
                    same_pid: false,
                    need_flush: false,
                    times_flushes: false,
                    key_inner: false,
                },
                &[b],
                &[e],
            );
        }
        if let (Some(t), Some(r)) = (self.flush_ty, self.flush_reason) {
            self.roles[t as usize].push(Role::Count(self.counts.len()));
            self.counts.push((
                schema.types[t as usize].full_name(),
                "reason".into(),
                t,
                r,
                Counter::default(),
            ));
        }
    }

    #[inline]
    fn tlb_bin(&mut self, reason: i64, pages: i64) -> &mut Bin {
        if (0..DENSE_REASONS as i64).contains(&reason) && (-1..=1024).contains(&pages) {
            &mut self.tlb_dense[reason as usize * DENSE_PAGES + (pages + 1) as usize]
        } else {
            self.tlb_sparse.entry((reason, pages)).or_default()
        }
    }

    /// Feed one event.
    #[inline]
    pub fn event(&mut self, ev: &Ev) {
        let ty = ev.ty as usize;
        let Some(&(r0, r1)) = self.role_at.get(ty) else {
            return;
        };
        self.events[ty] += 1;
        if r0 == r1 {
            return;
        }
        let cpu = ev.cpu as usize;
        let np = self.pairs.len();
        if self.active.len() <= cpu {
            self.active.resize(cpu + 1, 0);
            self.open.resize((cpu + 1) * np, Open::default());
        }
        for ri in r0 as usize..r1 as usize {
            match self.role_list[ri] {
                Role::Flush(count) => {
                    let r = self.flush_reason.and_then(|l| l.get(ev));
                    if let (Some(c), Some(v)) = (count, r) {
                        self.counts[c].4.add(v);
                    }
                    self.on_flush(ev, cpu, r);
                }
                Role::Begin(p, k) => {
                    let key = pair_key(k, ev);
                    let o = &mut self.open[cpu * np + p];
                    if o.active {
                        self.acc[p].unmatched += 1;
                    }
                    o.active = true;
                    o.ts = ev.ts;
                    o.key = key;
                    o.pid = ev.pid;
                    o.flushes.clear();
                    if p < 64 {
                        self.active[cpu] |= 1 << p;
                    }
                }
                Role::End(p) => self.on_end(ev, cpu, p),
                Role::Count(c) => {
                    let (loc, counter) = (self.counts[c].3, &mut self.counts[c].4);
                    if let Some(v) = loc.get(ev) {
                        counter.add(v);
                    }
                }
            }
        }
    }

    #[inline]
    fn on_flush(&mut self, ev: &Ev, cpu: usize, reason: Option<i64>) {
        let reason = reason.unwrap_or(-1);
        let pages = self.flush_pages.and_then(|l| l.get(ev)).unwrap_or(0);
        if self.want_tlb {
            self.tlb_bin(reason, pages).count += 1;
        }
        let remote = Some(reason) == self.remote_reason;
        if Some(reason) == self.send_reason {
            // the sender's own flush is its own event; this one only marks the IPIs
            return;
        }
        let np = self.pairs.len();
        if np > 64 {
            for p in 0..np {
                self.take_flush(cpu * np + p, p, reason, pages, remote, ev.pid);
            }
            return;
        }
        // only the open pairs of this CPU
        let mut mask = self.active[cpu];
        while mask != 0 {
            let p = mask.trailing_zeros() as usize;
            mask &= mask - 1;
            self.take_flush(cpu * np + p, p, reason, pages, remote, ev.pid);
        }
    }

    /// Attach a flush to the open pair `p` (at `open[at]`) when the pair takes it.
    #[inline]
    fn take_flush(&mut self, at: usize, p: usize, reason: i64, pages: i64, remote: bool, pid: i32) {
        let o = &mut self.open[at];
        if !o.active {
            return;
        }
        let take = match self.pairs[p].flush_remote {
            Some(true) => remote,
            // a flush on task switch inside a syscall belongs to the switch, not the call
            Some(false) => !remote && Some(reason) != self.switch_reason && pid == o.pid,
            None => true,
        };
        if take {
            o.flushes.push((reason, pages));
        }
    }

    #[inline]
    fn on_end(&mut self, ev: &Ev, cpu: usize, p: usize) {
        let at = cpu * self.pairs.len() + p;
        let o = &mut self.open[at];
        if !o.active {
            self.acc[p].unmatched += 1;
            return;
        }
        o.active = false;
        if p < 64 {
            self.active[cpu] &= !(1 << p);
        }
        let def = &self.pairs[p];
        if def.same_pid && o.pid != ev.pid {
            self.acc[p].unmatched += 1;
            return;
        }
        let d = ev.ts.saturating_sub(o.ts);
        // the shortest pair, also one with nothing inside, is the cost of tracing itself
        self.bias = Some(self.bias.map_or(d, |b| b.min(d)));
        if def.need_flush && o.flushes.is_empty() {
            return;
        }
        let key = if def.key_inner { o.flushes[0].1 } else { o.key };
        let flushes = std::mem::take(&mut o.flushes);
        let times = def.times_flushes;
        let (_, bin, inner) = self.acc[p].row(key);
        bin.count += 1;
        bin.add_time(d);
        for (_, pages) in &flushes {
            inner.add(*pages);
        }
        if times && self.want_tlb {
            // a flush is timed by the pair when it is the only one of its reason inside
            // (counted by a map when there are many: 200k flushes in one pair took minutes)
            let many = flushes.len() > 16;
            let per_reason: IntMap<usize> = if many {
                let mut m = IntMap::default();
                for (r, _) in &flushes {
                    *m.entry(*r).or_insert(0) += 1;
                }
                m
            } else {
                Default::default()
            };
            for (r, pg) in &flushes {
                let n = if many {
                    per_reason[r]
                } else {
                    flushes.iter().filter(|(r2, _)| r2 == r).count()
                };
                if n == 1 {
                    self.tlb_bin(*r, *pg).add_time(d);
                }
            }
        }
        self.open[at].flushes = flushes;
        self.open[at].flushes.clear();
    }

    /// Finish: open pairs at the end count as unmatched.
    pub fn finish(mut self, schema: &Schema) -> Tables {
        let np = self.pairs.len().max(1);
        for (i, o) in self.open.iter().enumerate() {
            if o.active {
                self.acc[i % np].unmatched += 1;
            }
        }
        let tlb = if self.want_tlb {
            let t = self.flush_ty.unwrap();
            let mut rows = Vec::new();
            for (i, b) in self.tlb_dense.iter_mut().enumerate() {
                if b.count > 0 || b.timed > 0 {
                    let mut bin = std::mem::take(b);
                    bin.seal();
                    rows.push(TlbRow {
                        reason: (i / DENSE_PAGES) as i64,
                        pages: (i % DENSE_PAGES) as i64 - 1,
                        bin,
                    });
                }
            }
            for ((r, p), mut bin) in std::mem::take(&mut self.tlb_sparse) {
                bin.seal();
                rows.push(TlbRow {
                    reason: r,
                    pages: p,
                    bin,
                });
            }
            rows.sort_by_key(|r| (r.reason, r.pages));
            let reasons = schema.types[t as usize]
                .symbols
                .get("reason")
                .cloned()
                .unwrap_or_default();
            Some(TlbTable {
                event: schema.types[t as usize].full_name(),
                reasons,
                rows,
            })
        } else {
            None
        };
        let pairs = self
            .pairs
            .iter()
            .zip(self.acc)
            .map(|(d, a)| PairTable {
                name: d.name.clone(),
                begin: d.begin_names.clone(),
                end: d.end_names.clone(),
                key: d.key_label.clone(),
                rows: {
                    let mut rows: Vec<PairRow> = a
                        .rows
                        .into_iter()
                        .map(|(key, mut bin, flushes)| {
                            let flushes = flushes.sorted();
                            bin.seal();
                            PairRow { key, bin, flushes }
                        })
                        .collect();
                    rows.sort_by_key(|r| r.key);
                    rows
                },
                unmatched: a.unmatched,
            })
            .collect();
        let counts = self
            .counts
            .into_iter()
            .map(|(event, key, t, _, m)| CountTable {
                event,
                names: schema.types[t as usize]
                    .symbols
                    .get(&key)
                    .cloned()
                    .unwrap_or_default(),
                key,
                rows: m.rows(),
            })
            .collect();
        let events = schema
            .types
            .iter()
            .zip(&self.events)
            .filter(|(_, n)| **n > 0)
            .map(|(t, n)| (t.full_name(), *n))
            .collect();
        Tables {
            tlb,
            pairs,
            counts,
            events,
            bias: self.bias,
        }
    }
}

#[inline]
fn pair_key(k: KeyOf, ev: &Ev) -> i64 {
    match k {
        KeyOf::None | KeyOf::InnerRemotePages => 0,
        KeyOf::Field(l) => l.get(ev).unwrap_or(0),
        KeyOf::LenPages(l, page) => l.get(ev).map(|v| len_pages(v as u64, page)).unwrap_or(0),
    }
}

/// A length in bytes as pages of `page` bytes, rounded up: a shift, not a division, for a
/// power-of-two page (every call of a traced syscall pays it).
#[inline]
fn len_pages(len: u64, page: u64) -> i64 {
    if page.is_power_of_two() {
        ((len >> page.trailing_zeros()) + (len & (page - 1) != 0) as u64) as i64
    } else {
        len.div_ceil(page) as i64
    }
}

fn field_list(schema: &Schema, ty: u32) -> String {
    schema.types[ty as usize]
        .fields
        .iter()
        .map(|(n, _)| n.as_str())
        .filter(|n| !n.starts_with("common_"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The system page size (lengths in syscall arguments are shown in pages of this size).
pub fn page_size() -> u64 {
    // SAFETY: sysconf has no memory-safety preconditions.
    let v = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if v > 0 { v as u64 } else { 4096 }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{ABSENT, Schema};

    /// A text-style schema: tlb_flush(reason, pages), call_function_single entry/exit,
    /// sys_enter_madvise(len_in) / sys_exit_madvise.
    fn schema() -> Schema {
        let mut s = Schema::default();
        let t = s.intern_type("tlb_flush");
        s.intern_field(t, "pages");
        s.intern_field(t, "reason");
        s.types[t as usize].symbols.insert(
            "reason".into(),
            vec![
                (1, "remote shootdown".into()),
                (3, "local MM shootdown".into()),
            ],
        );
        s.intern_type("call_function_single_entry");
        s.intern_type("call_function_single_exit");
        let m = s.intern_type("sys_enter_madvise");
        s.intern_field(m, "len_in");
        s.intern_type("sys_exit_madvise");
        s
    }

    fn ev<'a>(cpu: u32, ts: u64, ty: u32, pid: i32, slots: &'a [i64]) -> Ev<'a> {
        Ev {
            cpu,
            ts,
            ty,
            pid,
            raw: &[],
            slots,
        }
    }

    #[test]
    fn tlb_pairs_and_bias() {
        let s = schema();
        let mut a = Analyzer::new(&s, &[Spec::Standard]).unwrap();
        // cpu 0: madvise of 8 pages with one local flush of 8 pages, 1000 ticks
        a.event(&ev(0, 100, 3, 10, &[8 * 4096]));
        a.event(&ev(0, 400, 0, 10, &[8, 3]));
        a.event(&ev(0, 1100, 4, 10, &[]));
        // cpu 1: remote shootdown of 8 pages inside call_function_single, 300 ticks
        a.event(&ev(1, 500, 1, 11, &[]));
        a.event(&ev(1, 600, 0, 11, &[8, 1]));
        a.event(&ev(1, 800, 2, 11, &[]));
        // cpu 1: call function without a flush: not a shootdown pair
        a.event(&ev(1, 900, 1, 11, &[]));
        a.event(&ev(1, 950, 2, 11, &[]));
        // a flush outside any pair, full flush, and a stray exit
        a.event(&ev(0, 2000, 0, 10, &[-1, 3]));
        a.event(&ev(0, 2100, 4, 10, &[]));
        a.event(&ev(0, 2200, 0, 10, &[ABSENT, 3]));
        let t = a.finish(&s);
        let tlb = t.tlb.unwrap();
        let all = tlb.by_pages(None);
        assert_eq!(all[&8].count, 2);
        assert_eq!(all[&8].timed, 2);
        assert_eq!(all[&-1].count, 1);
        assert_eq!(all[&-1].timed, 0);
        let local = tlb.by_pages(Some(3));
        assert_eq!(local[&8].sum, 1000);
        let remote = tlb.by_pages(Some(1));
        assert_eq!(remote[&8].sum, 300);
        assert_eq!(tlb.reason_name(1), "remote shootdown");
        let rs = t
            .pairs
            .iter()
            .find(|p| p.name == "remote shootdown")
            .unwrap();
        assert_eq!(rs.rows.len(), 1);
        assert_eq!((rs.rows[0].key, rs.rows[0].bin.min), (8, 300));
        let md = t.pairs.iter().find(|p| p.name == "madvise").unwrap();
        assert_eq!(md.rows[0].key, 8);
        assert_eq!(md.rows[0].flushes, vec![(8, 1)]);
        assert_eq!(md.unmatched, 1);
        assert_eq!(t.bias, Some(50));
        let c = &t.counts[0];
        assert_eq!(c.rows, vec![(1, 1), (3, 3)]);
    }

    /// The madvise enter..exit pair keyed by its length in bytes.
    fn madvise_pair(s: &Schema) -> Analyzer {
        let pair = Spec::Pair {
            begin: "sys_enter_madvise".into(),
            end: "sys_exit_madvise".into(),
            key: Some("len_in".into()),
        };
        Analyzer::new(s, &[pair]).unwrap()
    }

    #[test]
    fn lengths_round_up_to_pages() {
        for page in [4096u64, 16384, 12288, 1] {
            for len in [0u64, 1, page - 1, page, page + 1, 33 * page, u64::MAX] {
                assert_eq!(
                    len_pages(len, page),
                    len.div_ceil(page) as i64,
                    "{len} {page}"
                );
            }
        }
    }

    /// The count by reason is done by the flush role when both are wanted (the field read
    /// once): the same counts as a count spec alone; and a pair with more than 16 keys (the
    /// rows' short list, then the index) keeps every key apart.
    #[test]
    fn reason_counts_and_many_keys() {
        let s = schema();
        let flushes = [(0, 1, 3), (0, 2, 3), (1, 8, 1), (0, -1, 3), (1, 1, 1)];
        let feed = |a: &mut Analyzer| {
            for (i, (cpu, pages, reason)) in flushes.iter().enumerate() {
                a.event(&ev(*cpu, 10 * i as u64, 0, 1, &[*pages, *reason]));
            }
        };
        let count = Spec::Count {
            event: "tlb_flush".into(),
            key: "reason".into(),
        };
        let mut both = Analyzer::new(&s, &[Spec::Standard, count.clone()]).unwrap();
        feed(&mut both);
        let mut alone = Analyzer::new(&s, std::slice::from_ref(&count)).unwrap();
        feed(&mut alone);
        let (both, alone) = (both.finish(&s), alone.finish(&s));
        assert_eq!(alone.counts[0].rows, vec![(1, 2), (3, 3)]);
        assert_eq!(both.counts.len(), 2);
        assert!(both.counts.iter().all(|c| c.rows == alone.counts[0].rows));

        let mut a = madvise_pair(&s);
        let mut ts = 0;
        for round in 0..3u64 {
            for key in 0..40i64 {
                a.event(&ev(0, ts, 3, 1, &[key]));
                a.event(&ev(0, ts + 1 + key as u64 + round, 4, 1, &[]));
                ts += 100;
            }
        }
        let t = a.finish(&s);
        let rows = &t.pairs[0].rows;
        assert_eq!(rows.len(), 40);
        for (k, r) in rows.iter().enumerate() {
            assert_eq!(
                (r.key, r.bin.count, r.bin.min, r.bin.max),
                (k as i64, 3, k as u64 + 1, k as u64 + 3)
            );
        }
    }

    #[test]
    fn custom_specs_and_errors() {
        let s = schema();
        assert!(
            Analyzer::new(
                &s,
                &[Spec::Count {
                    event: "tlb_flush".into(),
                    key: "nope".into()
                }]
            )
            .unwrap_err()
            .contains("pages, reason")
        );
        assert!(
            Analyzer::new(
                &s,
                &[Spec::Pair {
                    begin: "x".into(),
                    end: "y".into(),
                    key: None
                }]
            )
            .unwrap_err()
            .contains("--begin")
        );
        let mut a = madvise_pair(&s);
        a.event(&ev(0, 10, 3, 1, &[4096]));
        a.event(&ev(0, 15, 0, 1, &[1, 3]));
        a.event(&ev(0, 30, 4, 1, &[]));
        let t = a.finish(&s);
        assert!(t.tlb.is_none());
        assert_eq!(t.pairs[0].rows[0].key, 4096);
        assert_eq!(t.pairs[0].rows[0].bin.sum, 20);
        assert_eq!(t.pairs[0].rows[0].flushes, vec![(1, 1)]);
    }
}
