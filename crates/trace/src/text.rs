//! ftrace text import: the output of `cat trace`, `trace_pipe` and `trace-cmd report`.
//!
//! A line is `COMM-PID [(TGID)] [CPU] [FLAGS] TIMESTAMP: EVENT: FIELDS`. Fields are read as
//! `name:value`, `name=value` or `name: value`; a value such as `local MM shootdown (3)` gives
//! both the number and the symbolic name. System-call events print as `sys_X(arg: v, ...)` and
//! `sys_X -> ret` and become `sys_enter_X` / `sys_exit_X`. Timestamps with a decimal point are
//! seconds (converted to ns); integers are raw counter ticks (x86-tsc).

use super::event::{ABSENT, Ev, Schema};
use std::collections::{BTreeMap, HashMap, HashSet};
use thiserror::Error;

#[derive(Debug, Error, PartialEq)]
#[error("{file}: line {line}: {msg}")]
pub struct TextError {
    pub file: String,
    pub line: u64,
    pub msg: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum TextClock {
    /// `123.456789`: seconds, stored as ns.
    Seconds,
    /// `863443460867`: raw counter ticks.
    Counter,
}

#[derive(Debug, Clone, Copy)]
struct TEv {
    cpu: u32,
    ts: u64,
    ty: u32,
    pid: i32,
    start: u32,
    len: u16,
}

/// A parsed text capture, kept in memory for analysis.
#[derive(Debug, Default)]
pub struct TextCapture {
    pub schema: Schema,
    events: Vec<TEv>,
    values: Vec<i64>,
    /// Events the kernel reported lost, per CPU (`[LOST N EVENTS]` lines).
    pub lost: BTreeMap<u32, u64>,
    /// Lines that did not parse (only with `lenient`).
    pub skipped: u64,
    pub first_bad_line: Option<(u64, String)>,
    pub lines: u64,
    pub clock: Option<TextClock>,
    /// Events parsed (kept in `events` by [`parse`], only counted by [`stream`]).
    count: u64,
    /// Highest CPU number + 1.
    cpus: u32,
    /// Smallest and largest timestamp.
    ts_range: Option<(u64, u64)>,
}

#[derive(Debug, Clone, Default)]
pub struct TextOptions {
    pub lenient: bool,
    /// Fields printed as bare hex, by event name (from the local format files when available).
    pub hex: HashMap<String, HashSet<String>>,
    /// System of an event name (`tlb_flush` -> `tlb`), to name events as the binary path does.
    pub systems: HashMap<String, String>,
}

impl TextCapture {
    /// Events parsed.
    pub fn len(&self) -> usize {
        self.count as usize
    }
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }
    /// Call `f` for every event in file order.
    pub fn for_each(&self, mut f: impl FnMut(&Ev)) {
        for e in &self.events {
            let slots = &self.values[e.start as usize..e.start as usize + e.len as usize];
            f(&Ev {
                cpu: e.cpu,
                ts: e.ts,
                ty: e.ty,
                pid: e.pid,
                raw: &[],
                slots,
            });
        }
    }
    pub fn cpus(&self) -> u32 {
        self.cpus
    }
    pub fn span(&self) -> u64 {
        self.ts_range.map_or(0, |(a, b)| b - a)
    }

    /// Count one parsed event.
    fn counted(&mut self, h: &Head) {
        self.count += 1;
        self.cpus = self.cpus.max(h.cpu + 1);
        self.ts_range = Some(match self.ts_range {
            None => (h.ts, h.ts),
            Some((a, b)) => (a.min(h.ts), b.max(h.ts)),
        });
    }

    /// Forget what was parsed but keep the schema (for a second pass over the same file).
    fn restart(&mut self) {
        let schema = std::mem::take(&mut self.schema);
        *self = TextCapture {
            schema,
            ..Default::default()
        };
    }
}

/// The fixed part of an event line (its field values are in the parser's slots).
struct Head {
    cpu: u32,
    ts: u64,
    ty: u32,
    pid: i32,
}

/// Parse a whole text trace held in memory, keeping every event. `file` only labels errors.
pub fn parse(file: &str, text: &[u8], opts: &TextOptions) -> Result<TextCapture, TextError> {
    let mut cap = TextCapture::default();
    let mut events = Vec::new();
    let mut values = Vec::new();
    let mut p = LineParser::new(opts);
    for (i, line) in text.split(|b| *b == b'\n').enumerate() {
        p.one(file, &mut cap, i as u64 + 1, line, |h, slots| {
            events.push(TEv {
                cpu: h.cpu,
                ts: h.ts,
                ty: h.ty,
                pid: h.pid,
                start: values.len() as u32,
                len: slots.len() as u16,
            });
            values.extend_from_slice(slots);
        })?;
    }
    cap.events = events;
    cap.values = values;
    Ok(cap)
}

/// Why streaming a text trace failed.
#[derive(Debug, Error)]
pub enum StreamError {
    #[error(transparent)]
    Text(#[from] TextError),
    #[error("cannot read {0}: {1}")]
    Io(String, std::io::Error),
    /// The caller's `start` refused the schema.
    #[error("{0}")]
    Start(String),
}

/// Stream the text trace at `path` in two passes, with memory independent of its size: the
/// first learns the event types, fields and symbolic values (the schema an analysis needs
/// before its first event) and hands it to `start`; the second gives every event to `each`
/// with what `start` made. The capture returned holds the schema and the counts, no events.
/// An empty capture makes no second pass.
pub fn stream<A>(
    path: &std::path::Path,
    opts: &TextOptions,
    start: impl FnOnce(&Schema) -> Result<A, String>,
    mut each: impl FnMut(&mut A, &Ev),
) -> Result<(TextCapture, A), StreamError> {
    let file = path.display().to_string();
    let io = |e| StreamError::Io(file.clone(), e);
    let mut cap = TextCapture::default();
    // The first pass parses an event body (what follows the timestamp) only the first time it
    // is seen: only the body adds to the schema, and most bodies repeat. The second pass parses
    // every line in full and finds every error.
    const DISTINCT: usize = 1 << 16;
    let pass = |cap: &mut TextCapture, first: bool, f: &mut dyn FnMut(&Head, &[i64])| {
        let mut p = LineParser::new(opts);
        let mut seen: HashSet<Vec<u8>, foldhash::fast::FixedState> = HashSet::default();
        for_each_line(path, &io, |lineno, line| {
            if first && let Some(body) = event_body_of(line) {
                if seen.contains(body) {
                    return Ok(());
                }
                if seen.len() < DISTINCT {
                    seen.insert(body.to_vec());
                }
            }
            p.one(&file, cap, lineno, line, &mut *f)?;
            Ok(())
        })
    };
    pass(&mut cap, true, &mut |_, _| {})?;
    let mut a = start(&cap.schema).map_err(StreamError::Start)?;
    if cap.is_empty() {
        return Ok((cap, a));
    }
    cap.restart();
    pass(&mut cap, false, &mut |h, slots| {
        each(
            &mut a,
            &Ev {
                cpu: h.cpu,
                ts: h.ts,
                ty: h.ty,
                pid: h.pid,
                raw: &[],
                slots,
            },
        )
    })?;
    Ok((cap, a))
}

/// Call `f` with every line of the file at `path` (without its newline) and its number, read
/// in large blocks and handed out in place (no copy of each line).
fn for_each_line(
    path: &std::path::Path,
    io: &dyn Fn(std::io::Error) -> StreamError,
    mut f: impl FnMut(u64, &[u8]) -> Result<(), StreamError>,
) -> Result<(), StreamError> {
    use std::io::Read;
    let mut file = std::fs::File::open(path).map_err(io)?;
    let mut buf = vec![0u8; 1 << 20];
    let (mut have, mut lineno) = (0, 0);
    loop {
        let n = match file.read(&mut buf[have..]) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(io(e)),
        };
        if n == 0 {
            if have > 0 {
                f(lineno + 1, &buf[..have])?;
            }
            return Ok(());
        }
        let from = have;
        have += n;
        let mut start = 0;
        // Newlines can only be in what was just read (the carried part holds none).
        let mut at = from;
        while let Some(nl) = memchr::memchr(b'\n', &buf[at..have]) {
            lineno += 1;
            f(lineno, &buf[start..at + nl])?;
            start = at + nl + 1;
            at = start;
        }
        buf.copy_within(start..have, 0);
        have -= start;
        if have == buf.len() {
            // One line longer than the buffer.
            buf.resize(buf.len() * 2, 0);
        }
    }
}

struct LineParser<'o> {
    opts: &'o TextOptions,
    slots: Vec<i64>,
    /// Event name -> type (a handful of names: a linear search beats hashing).
    type_cache: Vec<(Vec<u8>, u32)>,
    /// Per type: field name -> (slot, printed as bare hex).
    field_cache: Vec<Vec<(Vec<u8>, usize, bool)>>,
}

fn trim(mut s: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', r @ ..] = s {
        s = r;
    }
    while let [r @ .., b' ' | b'\t'] = s {
        s = r;
    }
    s
}

fn parse_u64(s: &[u8]) -> Option<u64> {
    if s.is_empty() || s.len() > 20 {
        return None;
    }
    let mut v: u64 = 0;
    for &c in s {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add((c - b'0') as u64)?;
    }
    Some(v)
}

fn parse_hex(s: &[u8]) -> Option<u64> {
    if s.is_empty() || s.len() > 16 {
        return None;
    }
    let mut v: u64 = 0;
    for &c in s {
        let d = match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            b'A'..=b'F' => c - b'A' + 10,
            _ => return None,
        };
        v = (v << 4) | d as u64;
    }
    Some(v)
}

/// A number as ftrace prints it: `-1`, `42`, `0x1f`; bare hex when `hex` (or when it has a-f).
fn parse_num(s: &[u8], hex: bool) -> Option<i64> {
    if let Some(h) = s.strip_prefix(b"0x").or_else(|| s.strip_prefix(b"0X")) {
        return parse_hex(h).map(|v| v as i64);
    }
    if hex {
        return parse_hex(s).map(|v| v as i64);
    }
    if let Some(d) = s.strip_prefix(b"-") {
        return parse_u64(d).map(|v| (v as i64).wrapping_neg());
    }
    parse_u64(s).map(|v| v as i64).or_else(|| {
        if s.iter().any(|c| c.is_ascii_alphabetic()) && s.len() >= 4 {
            parse_hex(s).map(|v| v as i64)
        } else {
            None
        }
    })
}

fn is_ident_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_'
}
fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

impl<'o> LineParser<'o> {
    fn new(opts: &'o TextOptions) -> LineParser<'o> {
        LineParser {
            opts,
            slots: Vec::new(),
            type_cache: Vec::new(),
            field_cache: Vec::new(),
        }
    }

    /// Parse line `lineno` (without its newline): an event goes to `f` with its field values;
    /// a bad line is an error, or counted and skipped when lenient.
    fn one(
        &mut self,
        file: &str,
        cap: &mut TextCapture,
        lineno: u64,
        line: &[u8],
        mut f: impl FnMut(&Head, &[i64]),
    ) -> Result<(), TextError> {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            return Ok(());
        }
        cap.lines = lineno;
        match self.line(cap, line) {
            Ok(Some(h)) => {
                cap.counted(&h);
                f(&h, &self.slots);
                Ok(())
            }
            Ok(None) => Ok(()),
            Err(msg) if self.opts.lenient => {
                cap.skipped += 1;
                if cap.first_bad_line.is_none() {
                    cap.first_bad_line = Some((lineno, msg));
                }
                Ok(())
            }
            Err(msg) => Err(TextError {
                file: file.to_string(),
                line: lineno,
                msg,
            }),
        }
    }

    fn line(&mut self, cap: &mut TextCapture, line: &[u8]) -> Result<Option<Head>, String> {
        let t = trim(line);
        if t.is_empty() || t[0] == b'#' || t.starts_with(b"cpus=") || t.starts_with(b"version =") {
            return Ok(None);
        }
        if t.starts_with(b"CPU") {
            if let Some(lost) = lost_line(t) {
                if let Some((cpu, n)) = lost {
                    *cap.lost.entry(cpu).or_default() += n;
                }
                return Ok(None);
            }
            if t.starts_with(b"CPU ") && t.ends_with(b"is empty") {
                return Ok(None);
            }
        }
        // [CPU]: the first "[digits]"
        let (lb, rb) = find_cpu(line)
            .ok_or("expected `TASK-PID [CPU] TIMESTAMP: EVENT: ...` (no [CPU] field)")?;
        let cpu = parse_u64(&line[lb + 1..rb])
            .filter(|&c| c < u64::from(super::tables::MAX_CPUS))
            .ok_or("CPU number in [...] is not a number below 8192")? as u32;
        let head = trim(&line[..lb]);
        // optional "( tgid)" before [CPU]
        let head = if head.ends_with(b")") {
            trim(&head[..head.iter().rposition(|c| *c == b'(').unwrap_or(0)])
        } else {
            head
        };
        let dash = head
            .iter()
            .rposition(|c| *c == b'-')
            .ok_or("expected TASK-PID before [CPU]")?;
        let pid = parse_u64(&head[dash + 1..]).ok_or("PID after `TASK-` is not a number")? as i32;
        // after ]: [flags] timestamp: rest
        let mut rest = trim(&line[rb + 1..]);
        let mut ts = None;
        for _ in 0..2 {
            let end = rest.iter().position(|c| *c == b' ').unwrap_or(rest.len());
            let tok = &rest[..end];
            if let Some(tsb) = tok.strip_suffix(b":") {
                ts = Some(self.timestamp(cap, tsb)?);
                rest = trim(&rest[end..]);
                break;
            }
            rest = trim(&rest[end..]);
        }
        let ts = ts.ok_or("expected a TIMESTAMP: after [CPU] (and the optional flags column)")?;
        self.slots.clear();
        let ty = self.event_body(cap, rest)?;
        Ok(Some(Head { cpu, ts, ty, pid }))
    }

    fn timestamp(&self, cap: &mut TextCapture, s: &[u8]) -> Result<u64, String> {
        let bad = || format!("timestamp {:?} is not a number", String::from_utf8_lossy(s));
        let (clock, v) = match s.iter().position(|c| *c == b'.') {
            Some(dot) => {
                let secs = parse_u64(&s[..dot]).ok_or_else(bad)?;
                let frac = &s[dot + 1..];
                let f = parse_u64(frac).ok_or_else(bad)?;
                if frac.len() > 9 {
                    return Err(bad());
                }
                // Seconds beyond 584 years do not fit in nanoseconds: not a timestamp.
                let ns = secs
                    .checked_mul(1_000_000_000)
                    .and_then(|n| n.checked_add(f * 10u64.pow(9 - frac.len() as u32)))
                    .ok_or_else(bad)?;
                (TextClock::Seconds, ns)
            }
            None => (TextClock::Counter, parse_u64(s).ok_or_else(bad)?),
        };
        match cap.clock {
            None => cap.clock = Some(clock),
            Some(c) if c != clock => {
                return Err("timestamp format changes within the file (seconds vs counter)".into());
            }
            _ => {}
        }
        Ok(v)
    }

    fn ty(&mut self, cap: &mut TextCapture, name: &[u8]) -> u32 {
        if let Some((_, t)) = self.type_cache.iter().find(|(n, _)| n == name) {
            return *t;
        }
        let n = String::from_utf8_lossy(name);
        let t = cap.schema.intern_type(&n);
        if let Some(sys) = self.opts.systems.get(n.as_ref()) {
            cap.schema.types[t as usize].system = Some(sys.clone());
        }
        self.type_cache.push((name.to_vec(), t));
        if self.field_cache.len() <= t as usize {
            self.field_cache.resize(t as usize + 1, Vec::new());
        }
        t
    }

    /// Slot of a field, and whether it prints as bare hex.
    fn field(&mut self, cap: &mut TextCapture, ty: u32, name: &[u8]) -> (usize, bool) {
        let fc = &mut self.field_cache[ty as usize];
        if let Some((_, slot, hex)) = fc.iter().find(|(n, _, _)| n == name) {
            return (*slot, *hex);
        }
        let n = std::str::from_utf8(name).unwrap_or("?");
        let slot = cap.schema.intern_field(ty, n);
        let hex = self
            .opts
            .hex
            .get(&cap.schema.types[ty as usize].name)
            .is_some_and(|h| h.contains(n));
        fc.push((name.to_vec(), slot, hex));
        (slot, hex)
    }

    fn set_slot(&mut self, slot: usize, v: i64) {
        if self.slots.len() <= slot {
            self.slots.resize(slot + 1, ABSENT);
        }
        self.slots[slot] = v;
    }

    fn set(&mut self, cap: &mut TextCapture, ty: u32, name: &[u8], v: i64) {
        let (slot, _) = self.field(cap, ty, name);
        self.set_slot(slot, v);
    }

    fn event_body(&mut self, cap: &mut TextCapture, rest: &[u8]) -> Result<u32, String> {
        let id_end = rest
            .iter()
            .position(|c| !is_ident(*c))
            .unwrap_or(rest.len());
        if id_end == 0 || !is_ident_start(rest[0]) {
            return Err("expected an event name after the timestamp".into());
        }
        let name = &rest[..id_end];
        let after = &rest[id_end..];
        if let Some(args) = after.strip_prefix(b"(") {
            // sys_X(arg: v, ...)
            let sc = name
                .strip_prefix(b"sys_")
                .ok_or("expected `sys_NAME(` for a system-call entry")?;
            let mut n = b"sys_enter_".to_vec();
            n.extend_from_slice(sc);
            let ty = self.ty(cap, &n);
            let args = args.strip_suffix(b")").unwrap_or(args);
            self.fields(cap, ty, args)?;
            return Ok(ty);
        }
        if let Some(ret) = after.strip_prefix(b" -> ") {
            let sc = name
                .strip_prefix(b"sys_")
                .ok_or("expected `sys_NAME -> RET` for a system-call exit")?;
            let mut n = b"sys_exit_".to_vec();
            n.extend_from_slice(sc);
            let ty = self.ty(cap, &n);
            let v =
                parse_num(trim(ret), false).ok_or("system-call return value is not a number")?;
            self.set(cap, ty, b"ret", v);
            return Ok(ty);
        }
        let body = after
            .strip_prefix(b":")
            .ok_or("expected `EVENT:` after the timestamp")?;
        let ty = self.ty(cap, name);
        self.fields(cap, ty, body)?;
        Ok(ty)
    }

    fn fields(&mut self, cap: &mut TextCapture, ty: u32, s: &[u8]) -> Result<(), String> {
        let mut i = 0;
        let n = s.len();
        while i < n {
            while i < n && matches!(s[i], b' ' | b',' | b'\t') {
                i += 1;
            }
            if i >= n {
                break;
            }
            if !is_ident_start(s[i]) {
                // not a field: skip the word
                while i < n && s[i] != b' ' {
                    i += 1;
                }
                continue;
            }
            let ks = i;
            while i < n && is_ident(s[i]) {
                i += 1;
            }
            let key = &s[ks..i];
            if i >= n || !(s[i] == b':' || s[i] == b'=') {
                while i < n && s[i] != b' ' {
                    i += 1;
                }
                continue;
            }
            i += 1;
            while i < n && s[i] == b' ' {
                i += 1;
            }
            let vs = i;
            while i < n && !matches!(s[i], b' ' | b',' | b')') {
                i += 1;
            }
            let val = &s[vs..i];
            let (slot, hex) = self.field(cap, ty, key);
            if let Some(v) = parse_num(val, hex) {
                self.set_slot(slot, v);
                continue;
            }
            // symbolic value: "local MM shootdown (3)"
            let tail = &s[vs..];
            if let Some(open) = tail.windows(2).position(|w| w == b" (") {
                let after = &tail[open + 2..];
                if let Some(close) = after.iter().position(|c| *c == b')')
                    && let Some(v) = parse_num(&after[..close], false)
                {
                    self.set_slot(slot, v);
                    let field = std::str::from_utf8(key).unwrap_or("?");
                    let known = cap.schema.types[ty as usize]
                        .symbols
                        .get(field)
                        .is_some_and(|s| s.iter().any(|(k, _)| *k == v));
                    if !known {
                        let sym = String::from_utf8_lossy(&tail[..open]).into_owned();
                        let syms = cap.schema.types[ty as usize]
                            .symbols
                            .entry(field.to_string())
                            .or_default();
                        syms.push((v, sym));
                        syms.sort();
                    }
                    i = vs + open + 2 + close + 1;
                    continue;
                }
            }
            // a string value (comm=..., name=...): not numeric, not stored
        }
        Ok(())
    }
}

/// `CPU:1 [LOST 12 EVENTS]` -> Some(Some((1, 12))); not a lost line -> None.
fn lost_line(t: &[u8]) -> Option<Option<(u32, u64)>> {
    let s = std::str::from_utf8(t).ok()?;
    let lost = s.contains("LOST") && s.contains("EVENTS");
    if !lost && !s.contains("EVENTS DROPPED") {
        return None;
    }
    let cpu = s
        .strip_prefix("CPU")
        .map(|r| r.trim_start_matches([':', ' ']))
        .and_then(|r| r.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok());
    let n = s
        .split(|c: char| !c.is_ascii_digit())
        .filter(|w| !w.is_empty())
        .nth(if cpu.is_some() { 1 } else { 0 })
        .and_then(|w| w.parse().ok());
    Some(match (cpu, n) {
        (Some(c), Some(n)) => Some((c, n)),
        (None, Some(n)) => Some((0, n)),
        _ => None,
    })
}

/// What follows `TIMESTAMP: ` of an event line (`tlb_flush: pages:1 reason:...`), if it looks
/// like one (a `[CPU]` field, then `: ` after it).
fn event_body_of(line: &[u8]) -> Option<&[u8]> {
    let (_, rb) = find_cpu(line)?;
    let after = &line[rb + 1..];
    memchr::memmem::find(after, b": ").map(|colon| &after[colon + 2..])
}

/// Position of `[` and `]` around the CPU number: the first bracketed run of digits.
fn find_cpu(line: &[u8]) -> Option<(usize, usize)> {
    let mut from = 0;
    while let Some(k) = memchr::memchr(b'[', &line[from..]) {
        let i = from + k;
        let mut j = i + 1;
        while j < line.len() && line[j].is_ascii_digit() {
            j += 1;
        }
        if j > i + 1 && j < line.len() && line[j] == b']' {
            return Some((i, j));
        }
        from = i + 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "# tracer: nop
#
#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION
            bash-8660    [000] d..1. 863443460867: tlb_flush: pages:-1 reason:flush on task switch (0)
         flushes-8665    [000] ..... 863460750191: sys_madvise(start: 0x7f2ac405b000, len_in: 0x1000, behavior: 4)
         flushes-8665    [000] ...1. 863460763763: tlb_flush: pages:1 reason:remote IPI send (4)
         flushes-8666    [001] d.h.. 863460806975: tlb_flush: pages:1 reason:remote shootdown (1)
         flushes-8665    [000] ..... 863460811135: sys_madvise -> 0x0
 kworker/u4:1-12     [001] d.h.. 863460906000: call_function_single_entry: vector=251
CPU:1 [LOST 17 EVENTS]
   <...>-77  (   77) [001] 863460906100: x86_fpu_before_save: x86/fpu: 00000000deadbeef load: 0 xfeatures: 2e7 xcomp_bv: 8000000000000000
";

    #[test]
    fn parses_cat_trace_lines() {
        let mut opts = TextOptions::default();
        opts.hex.insert(
            "x86_fpu_before_save".into(),
            ["xfeatures".to_string(), "xcomp_bv".to_string()]
                .into_iter()
                .collect(),
        );
        let c = parse("t", SAMPLE.as_bytes(), &opts).unwrap();
        assert_eq!(c.len(), 7);
        assert_eq!(c.clock, Some(TextClock::Counter));
        assert_eq!(c.lost.get(&1), Some(&17));
        let s = &c.schema;
        let tlb = s.find("tlb:tlb_flush").unwrap();
        assert_eq!(s.symbol(tlb, "reason", 1), Some("remote shootdown"));
        let enter = s.find("syscalls:sys_enter_madvise").unwrap();
        let mut seen = Vec::new();
        c.for_each(|e| {
            if e.ty == enter {
                seen.push(s.field(enter, "len_in").unwrap().get(e).unwrap());
                seen.push(s.field(enter, "behavior").unwrap().get(e).unwrap());
            }
            if e.ty == tlb {
                seen.push(s.field(tlb, "pages").unwrap().get(e).unwrap());
            }
            if s.types[e.ty as usize].name == "x86_fpu_before_save" {
                seen.push(s.field(e.ty, "xfeatures").unwrap().get(e).unwrap());
                assert_eq!(e.pid, 77);
            }
            if s.types[e.ty as usize].name == "call_function_single_entry" {
                assert_eq!(e.pid, 12);
            }
        });
        assert_eq!(seen, vec![-1, 4096, 4, 1, 1, 0x2e7]);
    }

    /// An event as (cpu, ts, type name, pid, values by field name).
    type Named = (u32, u64, String, i32, Vec<(String, i64)>);

    /// Every event `each` gives, named by `schema`.
    fn events_of(schema: &Schema, each: impl FnOnce(&mut dyn FnMut(&Ev))) -> Vec<Named> {
        let mut out = Vec::new();
        each(&mut |e: &Ev| {
            let t = &schema.types[e.ty as usize];
            let vals = t
                .fields
                .iter()
                .filter_map(|(n, _)| Some((n.clone(), schema.field(e.ty, n)?.get(e)?)))
                .collect();
            out.push((e.cpu, e.ts, t.full_name(), e.pid, vals));
        });
        out
    }

    #[test]
    fn streaming_gives_what_parsing_in_memory_gives() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("t.txt");
        // The sample three times over, with the timestamps of later copies advanced, and a
        // new symbolic value late in the file (the schema must know it before the 2nd pass).
        let mut text = String::new();
        for k in 0..3u64 {
            for l in SAMPLE.lines() {
                text.push_str(&l.replace(" 8634", &format!(" {}", 8634 + k)));
                text.push('\n');
            }
        }
        text.push_str(
            "  late-9 [001] d.h.. 963460906000: tlb_flush: pages:2 reason:late reason (9)\n",
        );
        std::fs::write(&path, &text).unwrap();
        let mut opts = TextOptions::default();
        opts.hex.insert(
            "x86_fpu_before_save".into(),
            ["xfeatures".to_string()].into_iter().collect(),
        );
        let mem = parse("t", text.as_bytes(), &opts).unwrap();
        let want = events_of(&mem.schema, |f| mem.for_each(f));
        let mut got = Vec::new();
        let (cap, types) = stream(
            &path,
            &opts,
            |schema| Ok(schema.types.len()),
            |_, e| got.push((e.cpu, e.ts, e.ty, e.pid, e.slots.to_vec())),
        )
        .unwrap();
        assert_eq!(
            types,
            cap.schema.types.len(),
            "the schema is complete after pass 1"
        );
        let got = events_of(&cap.schema, |f| {
            for (cpu, ts, ty, pid, slots) in &got {
                f(&Ev {
                    cpu: *cpu,
                    ts: *ts,
                    ty: *ty,
                    pid: *pid,
                    raw: &[],
                    slots,
                })
            }
        });
        assert_eq!(got.len(), 22);
        assert_eq!(got, want);
        assert_eq!(
            (cap.len(), cap.cpus(), cap.span(), cap.lines, cap.clock),
            (mem.len(), mem.cpus(), mem.span(), mem.lines, mem.clock)
        );
        assert_eq!(cap.lost, mem.lost);
        let tlb = cap.schema.find("tlb:tlb_flush").unwrap();
        assert_eq!(cap.schema.symbol(tlb, "reason", 9), Some("late reason"));
        // Errors name the line in the file, as in memory.
        std::fs::write(&path, format!("{text}not a line\n")).unwrap();
        let e = stream(&path, &opts, |_| Ok(()), |_, _| {}).unwrap_err();
        assert!(
            e.to_string()
                .contains(&format!("line {}", 3 * SAMPLE.lines().count() + 2)),
            "{e}"
        );
        let missing = d.path().join("none.txt");
        let e = stream(&missing, &opts, |_| Ok(()), |_, _| {}).unwrap_err();
        assert!(matches!(e, StreamError::Io(..)), "{e}");
    }

    #[test]
    fn seconds_and_trace_cmd_lines() {
        let t = "cpus=2\n          <idle>-0     [001]  1234.567890: tlb_flush:            pages:33 reason:local shootdown (2)\nCPU 0 is empty\n";
        let c = parse("t", t.as_bytes(), &TextOptions::default()).unwrap();
        assert_eq!(c.clock, Some(TextClock::Seconds));
        c.for_each(|e| assert_eq!(e.ts, 1_234_567_890_000));
    }

    #[test]
    fn out_of_range_cpu_and_seconds_are_errors_not_panics() {
        // Found by the fuzzer: 99999999999 s overflowed the nanoseconds (a panic in debug
        // builds, a wrong timestamp in release ones); CPU numbers index per-CPU state.
        for (line, want) in [
            (
                "x-1 [000] 99999999999.000000: tlb_flush: pages:1 reason:x (2)\n",
                "timestamp",
            ),
            (
                "x-1 [9999] 1.000000: tlb_flush: pages:1 reason:x (2)\n",
                "CPU number",
            ),
        ] {
            let e = parse("f.txt", line.as_bytes(), &TextOptions::default()).unwrap_err();
            assert!(e.to_string().starts_with("f.txt: line 1:"), "{e}");
            assert!(e.to_string().contains(want), "{e}");
        }
    }

    #[test]
    fn errors_name_the_line() {
        let t = "            bash-1    [000] d..1. 100: tlb_flush: pages:1 reason:x (2)\nthis is not a trace line\n";
        let e = parse("f.txt", t.as_bytes(), &TextOptions::default()).unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.to_string().starts_with("f.txt: line 2:"), "{e}");
        let c = parse(
            "f.txt",
            t.as_bytes(),
            &TextOptions {
                lenient: true,
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!((c.len(), c.skipped), (1, 1));
        let e = parse(
            "f",
            b"  a-1 [000] 12x: tlb_flush: pages:1\n",
            &TextOptions::default(),
        )
        .unwrap_err();
        assert!(e.msg.contains("timestamp"), "{e}");
    }
}
