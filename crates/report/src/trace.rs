//! Output of capture tables: text in seed 002's layout (right-aligned
//! `size: % of flushes, cumulative %, avg cycles, median, p90, cycles/page, samples`), JSON,
//! CSV and Markdown, all with the same columns: the average, median and 90th percentile of the
//! durations of every row, and a flag (`!`) on rows whose mean a few outliers pull outside the
//! 10th..90th percentile.

pub use super::Which;
use super::section::Section;
use super::svg::esc;
use super::{Report, TraceSection, View};
use abperf_model::trace::{Bin, CaptureInfo, CountTable, PairTable, Tables, TlbTable, Units};
use std::fmt::Write;

pub(crate) fn fmt_num(v: Option<f64>, width: usize) -> String {
    match v {
        Some(x) if x.is_finite() => format!("{:>width$.0}", x),
        _ => format!("{:>width$}", "-"),
    }
}

pub(crate) fn key_str(label: &str, k: i64) -> String {
    if label == "xfeatures" {
        format!("{k:#x}")
    } else {
        k.to_string()
    }
}

/// `1234567` -> `1,234,567`.
fn thousands(n: u64) -> String {
    super::fmt::thousands(n as f64)
}

/// The statistics of one row, converted to cycles and ns.
pub(crate) struct Stats {
    pub(crate) avg: Option<f64>,
    pub(crate) median: Option<f64>,
    pub(crate) p90: Option<f64>,
    pub(crate) min: Option<f64>,
    pub(crate) max: Option<f64>,
    pub(crate) avg_ns: Option<f64>,
    pub(crate) median_ns: Option<f64>,
    pub(crate) pulled: bool,
    pub(crate) qerr: Option<f64>,
}

pub(crate) fn stats(b: &Bin, u: &Units) -> Stats {
    let c = |t: Option<f64>| t.and_then(|x| u.cycles(x));
    let timed = b.timed > 0;
    Stats {
        avg: c(b.mean()),
        median: c(b.median()),
        p90: c(b.p90()),
        min: c(timed.then_some(b.min as f64)),
        max: c(timed.then_some(b.max as f64)),
        avg_ns: b.mean().and_then(|m| u.ns(m)),
        median_ns: b.median().and_then(|m| u.ns(m)),
        pulled: b.mean_pulled(),
        qerr: b.quantile_error(),
    }
}

/// Shootdown IPIs of a filtered capture: sent by the traced tasks against received on CPUs
/// while they ran traced tasks. None for system-wide captures or without such events.
pub fn ipi_note(info: &CaptureInfo, t: &Tables) -> Option<String> {
    let tl = t.tlb.as_ref()?;
    if !info.scope.is_filtered() {
        return None;
    }
    let sent = tl.reason_count("remote IPI send");
    let got = tl.reason_count("remote shootdown");
    if sent == 0 && got == 0 {
        return None;
    }
    Some(format!(
        "shootdown IPIs: {} flush(es) of the traced tasks asked other CPUs to flush (tlb_flush \
         'remote IPI send'; the kernel lists it even when no CPU needs the IPI); {} remote \
         shootdown(s) received on CPUs while they ran traced tasks are recorded; receipts on CPUs \
         running other tasks (idle or a kernel thread in lazy TLB mode) are outside the scope and \
         left out (--system-wide records them, with every other task's)",
        thousands(sent),
        thousands(got)
    ))
}

/// The tracing cost in words: events per second of the traced tasks, and the time the
/// recorded events added at the machine's measured per-event cost.
pub fn cost_note(info: &CaptureInfo) -> Option<String> {
    let w = info.wall_ns.filter(|w| *w > 0)? as f64 / 1e9;
    let rate = info.event_count as f64 / w;
    let mut s = format!(
        "tracing cost: {} events in {w:.3} s, {} events/s",
        thousands(info.event_count),
        thousands(rate.round() as u64)
    );
    if let Some(c) = &info.event_cost {
        let added = info.event_count as f64 * c.ns_per_event / 1e9;
        let (lo, hi) = (
            info.event_count as f64 * c.low / 1e9,
            info.event_count as f64 * c.high / 1e9,
        );
        let whom = if info.scope.is_filtered() {
            "the traced tasks"
        } else {
            "the whole machine (all tasks)"
        };
        let _ = write!(
            s,
            "; at {:.0} ns per event ({:.0}..{:.0}; {}), the tracing added about {} ({}..{}) to {whom}",
            c.ns_per_event,
            c.low,
            c.high,
            c.how,
            secs(added),
            secs(lo),
            secs(hi)
        );
        if !info.scope.is_filtered() {
            // spread over every task: no share of the workload's time to give
        } else if let Some(cpu) = info.cpu_ns.filter(|c| *c > 0) {
            let cpu = cpu as f64 / 1e9;
            let base = (cpu - added).max(f64::MIN_POSITIVE);
            let _ = write!(
                s,
                ", {:.1}% of the {} CPU time they would have used untraced",
                100.0 * added / base,
                secs(base)
            );
        } else {
            let base = (w - added).max(f64::MIN_POSITIVE);
            let _ = write!(s, ", {:.1}% of the wall time", 100.0 * added / base);
        }
    } else {
        s.push_str("; the per-event cost of this machine is not measured (recorded elsewhere)");
    }
    Some(s)
}

fn secs(s: f64) -> String {
    if s >= 1.0 {
        format!("{s:.2} s")
    } else if s >= 1e-3 {
        format!("{:.2} ms", s * 1e3)
    } else {
        format!("{:.1} us", s * 1e6)
    }
}

/// The capture summary: events, scope, clock, TSC, duration, tracing cost, losses, bias.
pub fn header(info: &CaptureInfo, t: &Tables) -> String {
    let u = info.units();
    let mut s = String::new();
    let id = info
        .id
        .map(|i| format!("capture {i}"))
        .unwrap_or_else(|| "capture".into());
    let _ = writeln!(
        s,
        "{id} ({}): {} events, clock {}",
        info.source,
        thousands(info.event_count),
        info.clock
    );
    if !info.command.is_empty() {
        let _ = writeln!(s, "  command: {}", shell_words::join(&info.command));
    }
    if let Some(p) = &info.text_path {
        let _ = writeln!(s, "  from: {p}");
    }
    let _ = writeln!(s, "  scope: {}", info.scope.text());
    if let Some(n) = ipi_note(info, t) {
        let _ = writeln!(s, "  {n}");
    }
    if let Some(stop) = &info.stop {
        let _ = writeln!(s, "  stopped by: {stop}");
    }
    match info.tsc_hz {
        Some(h) => {
            let _ = writeln!(
                s,
                "  TSC: {:.3} MHz (calibrated against CLOCK_MONOTONIC_RAW)",
                h / 1e6
            );
        }
        None => {
            let _ = writeln!(s, "  TSC: unknown (cycles cannot be converted to ns)");
        }
    }
    if let Some(w) = info.wall_ns {
        let _ = writeln!(s, "  duration: {:.3} s", w as f64 / 1e9);
    }
    if let Some(c) = cost_note(info) {
        let _ = writeln!(s, "  {c}");
    }
    if let Some(b) = t.bias {
        let _ = writeln!(
            s,
            "  tracing bias (shortest begin-end delta): {} cycles{}",
            fmt_num(u.cycles(b as f64), 0),
            u.ns(b as f64)
                .map(|n| format!(" ({n:.0} ns)"))
                .unwrap_or_default()
        );
    }
    if info.skipped_lines > 0 {
        let _ = writeln!(
            s,
            "  WARNING: {} lines did not parse and were skipped (--lenient)",
            info.skipped_lines
        );
    }
    if info.has_losses() {
        let per: Vec<String> = info
            .lost
            .iter()
            .filter(|l| l.stats.unwrap_or(0) > 0 || l.counted > 0 || l.flagged > 0)
            .map(|l| {
                let n = l.stats.unwrap_or(0).max(l.counted);
                if l.flagged > 0 && n == 0 {
                    format!("CPU {}: some (uncounted)", l.cpu)
                } else {
                    format!("CPU {}: {n}", l.cpu)
                }
            })
            .collect();
        let _ = writeln!(
            s,
            "  WARNING: events were lost ({}); every table below is built on an incomplete capture (raise --buffer-kib or filter)",
            per.join(", ")
        );
    } else {
        let _ = writeln!(s, "  lost events: none");
    }
    s
}

/// Right-aligned width of the widest cell (at least `min`).
fn width(cells: impl Iterator<Item = usize>, min: usize) -> usize {
    cells.fold(min, usize::max)
}

/// Seed 002's table for one set of rows, with the median and 90th percentile beside the
/// average: `pages: %, cum %, avg cycles, median, p90, cycles/page, samples`.
pub fn tlb_rows(title: &str, rows: &std::collections::BTreeMap<i64, Bin>, u: &Units) -> String {
    let mut s = String::new();
    let total: u64 = rows.values().map(|b| b.count).sum();
    let timed: u64 = rows.values().map(|b| b.timed).sum();
    let _ = writeln!(s, "{title}: {total} flushes, {timed} with a duration");
    let shown: Vec<(i64, &Bin, Stats)> = rows
        .iter()
        .filter(|(_, b)| b.count > 0)
        .map(|(p, b)| (*p, b, stats(b, u)))
        .collect();
    let len = |v: Option<f64>| fmt_num(v, 0).len();
    let wa = width(shown.iter().map(|r| len(r.2.avg)), 5);
    let wm = width(shown.iter().map(|r| len(r.2.median)), 5);
    let wp = width(shown.iter().map(|r| len(r.2.p90)), 5);
    let _ = writeln!(s, " pages:  flush%    cum%");
    s.push_str(&"-".repeat(78));
    s.push('\n');
    let mut cum = 0u64;
    let mut flagged = false;
    for (pages, b, st) in &shown {
        cum += b.count;
        let pct = 100.0 * b.count as f64 / total as f64;
        let cpct = 100.0 * cum as f64 / total as f64;
        let cpp_s = if *pages > 0 {
            fmt_num(st.avg.map(|a| a / *pages as f64), 4)
        } else {
            "xxxx".to_string()
        };
        flagged |= st.pulled;
        let _ = write!(
            s,
            "{pages:>6}: {pct:>6.2}% {cpct:>6.2}% avg cycles: {}{} median: {} p90: {} cycles/page: {cpp_s} samples: {}",
            fmt_num(st.avg, wa),
            if st.pulled { "!" } else { " " },
            fmt_num(st.median, wm),
            fmt_num(st.p90, wp),
            b.count
        );
        if b.timed > 0 && b.timed < b.count {
            let _ = write!(s, " (timed: {})", b.timed);
        }
        s.push('\n');
    }
    if flagged {
        s.push_str(PULLED);
    }
    s
}

pub(crate) const PULLED: &str = "! = the average lies outside the 10th..90th percentile: a few long (or short) samples pull it; read the median\n";

/// The TLB tables: every flush reason together, then each reason (seed 002's layout).
pub fn tlb(t: &TlbTable, u: &Units) -> String {
    let mut s = tlb_rows(
        &format!("{}, every flush reason", t.event),
        &t.by_pages(None),
        u,
    );
    let mut reasons: Vec<i64> = t.rows.iter().map(|r| r.reason).collect();
    reasons.dedup();
    for r in reasons {
        s.push('\n');
        let name = t.reason_name(r);
        let note = if t.is_flush(r) {
            String::new()
        } else {
            " (requests, not flushes: the sender's own flush is a local MM shootdown)".to_string()
        };
        s.push_str(&tlb_rows(
            &format!("{}, reason {r} ({name}){note}", t.event),
            &t.by_pages(Some(r)),
            u,
        ));
    }
    s.push_str("\nDurations in cycles: remote shootdowns from call_function[_single]_entry..exit on the receiving\nCPU; other reasons from the enclosing madvise/munmap/mprotect call (syscall + zap + flush) when it\nholds one flush of that reason. Pages -1 = full flush (cycles/page: xxxx).\n");
    s
}

/// Short event name (`syscalls:sys_enter_madvise` -> `sys_enter_madvise`).
fn short(e: &str) -> &str {
    e.rsplit_once(':').map(|(_, n)| n).unwrap_or(e)
}

/// The title of a pair table, without repeating the pair's own name.
pub fn pair_title(p: &PairTable) -> String {
    let b = p
        .begin
        .iter()
        .map(|e| short(e))
        .collect::<Vec<_>>()
        .join("|");
    let e = p.end.iter().map(|e| short(e)).collect::<Vec<_>>().join("|");
    let n: u64 = p.rows.iter().map(|r| r.bin.count).sum();
    let mut t = if p.name == format!("{}..{}", p.begin.join("|"), p.end.join("|")) {
        format!("{} .. {}", p.begin.join("|"), p.end.join("|"))
    } else {
        format!("{} ({b} .. {e})", p.name)
    };
    let _ = write!(t, ": {n} pairs");
    if !p.key.is_empty() {
        let _ = write!(t, " by {}", p.key);
    }
    if p.unmatched > 0 {
        let _ = write!(t, ", {} unmatched", p.unmatched);
    }
    t
}

/// Cells right-aligned under one-line headers, two spaces apart; the last column left-aligned.
pub(crate) fn grid(headers: &[&str], rows: &[Vec<String>]) -> String {
    let n = headers.len();
    let mut w: Vec<usize> = headers.iter().map(|h| h.len()).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate().take(n - 1) {
            w[i] = w[i].max(c.len());
        }
    }
    let mut s = String::new();
    let line = |cells: &[String], s: &mut String| {
        let mut l = String::new();
        for (i, c) in cells.iter().enumerate() {
            if i + 1 == n {
                let _ = write!(l, "  {c}");
            } else if i == 0 {
                let _ = write!(l, "{c:>w$}", w = w[i]);
            } else {
                let _ = write!(l, "  {c:>w$}", w = w[i]);
            }
        }
        s.push_str(l.trim_end());
        s.push('\n');
    };
    line(
        &headers.iter().map(|h| h.to_string()).collect::<Vec<_>>(),
        &mut s,
    );
    for r in rows {
        line(r, &mut s);
    }
    s
}

/// A begin/end pair table: per key, avg (flagged), median, p90, min, max in cycles, avg ns,
/// cycles per page, samples and the flushes inside.
pub fn pair(p: &PairTable, u: &Units) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "{} (durations in cycles)", pair_title(p));
    if p.rows.is_empty() {
        return s;
    }
    let label = if p.key.is_empty() {
        "all"
    } else {
        p.key.as_str()
    };
    let mut rows = Vec::new();
    let mut flagged = false;
    for r in &p.rows {
        let st = stats(&r.bin, u);
        flagged |= st.pulled;
        let per_page = if p.key.contains("pages") && r.key > 0 {
            st.avg.map(|a| a / r.key as f64)
        } else {
            None
        };
        let fl: Vec<String> = r
            .flushes
            .iter()
            .map(|(pg, c)| format!("{pg}x{c}"))
            .collect();
        rows.push(vec![
            if p.key.is_empty() {
                "-".to_string()
            } else {
                key_str(&p.key, r.key)
            },
            format!(
                "{}{}",
                fmt_num(st.avg, 0),
                if st.pulled { "!" } else { " " }
            ),
            fmt_num(st.median, 0),
            fmt_num(st.p90, 0),
            fmt_num(st.min, 0),
            fmt_num(st.max, 0),
            fmt_num(st.avg_ns, 0),
            fmt_num(per_page, 0),
            r.bin.count.to_string(),
            fl.join(" "),
        ]);
    }
    s.push_str(&grid(
        &[
            label,
            "avg ",
            "median",
            "p90",
            "min",
            "max",
            "avg ns",
            "avg/page",
            "samples",
            "flushes inside (pages x count)",
        ],
        &rows,
    ));
    if flagged {
        s.push_str(PULLED);
    }
    s
}

pub fn count(c: &CountTable) -> String {
    let mut s = String::new();
    let total: u64 = c.rows.iter().map(|r| r.1).sum();
    let _ = writeln!(s, "{} by {}: {total} events", c.event, c.key);
    for (k, n) in &c.rows {
        let name = c
            .names
            .iter()
            .find(|(v, _)| v == k)
            .map(|(_, n)| n.as_str())
            .unwrap_or("");
        let _ = writeln!(
            s,
            "{:>12} {name:<24}: {n:>10} {:>6.2}%",
            key_str(&c.key, *k),
            100.0 * *n as f64 / total.max(1) as f64
        );
    }
    s
}

fn is_fpu(p: &PairTable) -> bool {
    p.begin.iter().any(|b| b.contains("x86_fpu"))
}

/// Whether pair table `p` is shown for `which`.
fn shows(p: &PairTable, which: Which) -> bool {
    match which {
        Which::All | Which::Pair => true,
        Which::Fpu => is_fpu(p),
        Which::Tlb => !is_fpu(p) && p.rows.iter().any(|r| !r.flushes.is_empty()),
        Which::Count => false,
    }
}

/// The whole report in text.
pub fn text(info: &CaptureInfo, t: &Tables, which: Which) -> String {
    let u = info.units();
    let mut parts = vec![header(info, t)];
    if matches!(which, Which::All | Which::Tlb) {
        match &t.tlb {
            Some(tl) => parts.push(tlb(tl, &u)),
            None if which == Which::Tlb => {
                parts.push("no tlb:tlb_flush events in this capture\n".into())
            }
            None => {}
        }
    }
    for p in &t.pairs {
        if is_fpu(p) && p.rows.is_empty() && which == Which::Fpu {
            parts.push(format!(
                "{}: no pairs. On recent kernels (6.18 here) x86_fpu_before_save/after_save fire only on\nsome save paths (not on every context switch: that save has no tracepoint), so a workload\nmay show none.\n",
                p.name
            ));
            continue;
        }
        if shows(p, which) {
            parts.push(pair(p, &u));
        }
    }
    if which == Which::Fpu && !t.pairs.iter().any(is_fpu) {
        parts.push("no x86_fpu:x86_fpu_before_save/after_save pairs in this capture\n".into());
    }
    if matches!(which, Which::All | Which::Count) {
        for c in &t.counts {
            parts.push(count(c));
        }
        if which == Which::All || t.counts.is_empty() {
            let mut s = String::from("events:\n");
            for (n, c) in &t.events {
                let _ = writeln!(s, "{n:>40}: {c:>10}");
            }
            parts.push(s);
        }
    }
    parts.join("\n")
}

/// One row's statistics as JSON: counts, the durations' avg, median, p90, min, max in cycles
/// and ns, the outlier flag and the quantiles' relative error (0 = exact).
fn bin_json(b: &Bin, u: &Units) -> serde_json::Value {
    let st = stats(b, u);
    serde_json::json!({
        "count": b.count, "timed": b.timed,
        "avg_cycles": st.avg,
        "median_cycles": st.median,
        "p90_cycles": st.p90,
        "min_cycles": st.min,
        "max_cycles": st.max,
        "avg_ns": st.avg_ns,
        "median_ns": st.median_ns,
        "mean_pulled_by_outliers": st.pulled,
        "quantile_error": st.qerr,
        "sum_ticks": b.sum,
    })
}

/// JSON: the capture and its tables, durations converted (cycles and ns) next to raw ticks.
pub fn json(info: &CaptureInfo, t: &Tables) -> serde_json::Value {
    let u = info.units();
    let tlb = t.tlb.as_ref().map(|tl| {
        let rows: Vec<_> = tl
            .rows
            .iter()
            .map(|r| {
                let mut v = bin_json(&r.bin, &u);
                v["reason"] = r.reason.into();
                v["reason_name"] = tl.reason_name(r.reason).into();
                v["pages"] = r.pages.into();
                v
            })
            .collect();
        serde_json::json!({ "event": tl.event, "rows": rows })
    });
    let pairs: Vec<_> = t
        .pairs
        .iter()
        .map(|p| {
            let rows: Vec<_> = p
                .rows
                .iter()
                .map(|r| {
                    let mut v = bin_json(&r.bin, &u);
                    v["key"] = r.key.into();
                    v["flushes"] = serde_json::json!(r.flushes);
                    v
                })
                .collect();
            serde_json::json!({ "name": p.name, "title": pair_title(p), "begin": p.begin, "end": p.end, "key": p.key, "unmatched": p.unmatched, "rows": rows })
        })
        .collect();
    serde_json::json!({
        "capture": info,
        "scope_text": info.scope.text(),
        "ipi_note": ipi_note(info, t),
        "cost_note": cost_note(info),
        "lost_total": info.lost_total(),
        "bias_cycles": t.bias.and_then(|b| u.cycles(b as f64)),
        "tlb": tlb,
        "pairs": pairs,
        "counts": t.counts,
        "events": t.events,
    })
}

/// The CSV columns of `trace report --format csv`.
pub const CSV_COLUMNS: &[&str] = &[
    "table",
    "group",
    "key",
    "count",
    "timed",
    "avg_cycles",
    "median_cycles",
    "p90_cycles",
    "min_cycles",
    "max_cycles",
    "avg_ns",
    "median_ns",
    "mean_pulled_by_outliers",
    "quantile_error",
];

/// CSV: one row per bin, [`CSV_COLUMNS`].
pub fn csv(info: &CaptureInfo, t: &Tables) -> anyhow::Result<String> {
    let u = info.units();
    let f = |v: Option<f64>| v.map(|x| format!("{x:.1}")).unwrap_or_default();
    let mut w = ::csv::Writer::from_writer(Vec::new());
    w.write_record(CSV_COLUMNS)?;
    let mut line = |table: &str, group: &str, key: i64, b: &Bin| -> anyhow::Result<()> {
        let st = stats(b, &u);
        w.write_record([
            super::table::neutral(table),
            super::table::neutral(group),
            key.to_string(),
            b.count.to_string(),
            b.timed.to_string(),
            f(st.avg),
            f(st.median),
            f(st.p90),
            f(st.min),
            f(st.max),
            f(st.avg_ns),
            f(st.median_ns),
            if b.timed > 0 {
                u8::from(st.pulled).to_string()
            } else {
                String::new()
            },
            st.qerr.map(|e| e.to_string()).unwrap_or_default(),
        ])?;
        Ok(())
    };
    if let Some(tl) = &t.tlb {
        for r in &tl.rows {
            line("tlb", &tl.reason_name(r.reason), r.pages, &r.bin)?;
        }
    }
    for p in &t.pairs {
        for r in &p.rows {
            line(&p.name, &p.key, r.key, &r.bin)?;
        }
    }
    for c in &t.counts {
        for (k, n) in &c.rows {
            line(
                &format!("count {}", c.event),
                &c.key,
                *k,
                &Bin {
                    count: *n,
                    ..Default::default()
                },
            )?;
        }
    }
    super::table::finish(w)
}

/// Markdown: the header as a list, then every table as a GitHub table with the same columns
/// as text (avg with the outlier flag, median, p90, ...).
pub fn markdown(info: &CaptureInfo, t: &Tables) -> String {
    use super::table::cell;
    let u = info.units();
    let mut s = String::new();
    for l in header(info, t).lines() {
        let l = l.trim();
        if !l.is_empty() {
            let _ = writeln!(s, "- {}", cell(l));
        }
    }
    let num = |v: Option<f64>| fmt_num(v, 0).trim().to_string();
    let mut any_flag = false;
    if let Some(tl) = &t.tlb {
        let rows = tl.by_pages(None);
        let total: u64 = rows.values().map(|b| b.count).sum();
        let _ = writeln!(
            s,
            "\n**{}**, every flush reason: {total} flushes\n\n| pages | % of flushes | cum % | avg cycles | median | p90 | cycles/page | samples | timed |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
            cell(&tl.event)
        );
        let mut cum = 0;
        for (pages, b) in rows.iter().filter(|(_, b)| b.count > 0) {
            cum += b.count;
            let st = stats(b, &u);
            any_flag |= st.pulled;
            let _ = writeln!(
                s,
                "| {pages} | {:.2}% | {:.2}% | {}{} | {} | {} | {} | {} | {} |",
                100.0 * b.count as f64 / total as f64,
                100.0 * cum as f64 / total as f64,
                num(st.avg),
                if st.pulled { " !" } else { "" },
                num(st.median),
                num(st.p90),
                if *pages > 0 {
                    num(st.avg.map(|a| a / *pages as f64))
                } else {
                    "xxxx".into()
                },
                b.count,
                b.timed
            );
        }
    }
    for p in &t.pairs {
        if p.rows.is_empty() {
            continue;
        }
        let _ = writeln!(
            s,
            "\n**{}** (durations in cycles)\n\n| {} | avg | median | p90 | min | max | avg ns | samples | flushes inside |\n|---:|---:|---:|---:|---:|---:|---:|---:|---|",
            cell(&pair_title(p)),
            cell(if p.key.is_empty() { "all" } else { &p.key })
        );
        for r in &p.rows {
            let st = stats(&r.bin, &u);
            any_flag |= st.pulled;
            let fl: Vec<String> = r
                .flushes
                .iter()
                .map(|(pg, c)| format!("{pg}x{c}"))
                .collect();
            let _ = writeln!(
                s,
                "| {} | {}{} | {} | {} | {} | {} | {} | {} | {} |",
                key_str(&p.key, r.key),
                num(st.avg),
                if st.pulled { " !" } else { "" },
                num(st.median),
                num(st.p90),
                num(st.min),
                num(st.max),
                num(st.avg_ns),
                r.bin.count,
                fl.join(" ")
            );
        }
    }
    for c in &t.counts {
        let _ = writeln!(
            s,
            "\n**{} by {}**\n\n| {} | name | events |\n|---:|---|---:|",
            cell(&c.event),
            cell(&c.key),
            cell(&c.key)
        );
        for (k, n) in &c.rows {
            let name = c
                .names
                .iter()
                .find(|(v, _)| v == k)
                .map(|(_, n)| n.as_str())
                .unwrap_or("");
            let _ = writeln!(s, "| {} | {} | {n} |", key_str(&c.key, *k), cell(name));
        }
    }
    if any_flag {
        let _ = write!(s, "\n{}", PULLED.replace('!', "`!`"));
    }
    s
}

impl Section for TraceSection {
    /// The tables `trace report` asks for (`--only`); every table inside another view.
    fn text(&self, r: &Report) -> String {
        let which = match r.view {
            View::Trace(which) => which,
            _ => Which::All,
        };
        text(&self.info, &self.tables, which)
    }

    fn markdown(&self, _r: &Report) -> Option<String> {
        Some(markdown(&self.info, &self.tables))
    }

    fn csv(&self, _r: &Report) -> Option<anyhow::Result<String>> {
        Some(csv(&self.info, &self.tables))
    }

    fn json(&self, _r: &Report) -> Option<anyhow::Result<serde_json::Value>> {
        Some(Ok(json(&self.info, &self.tables)))
    }

    /// Every table, as the text shows it.
    fn html(&self, _r: &Report) -> Option<String> {
        Some(format!(
            "<h2>Trace tables</h2><pre class=\"trace\">{}</pre>\n",
            esc(&text(&self.info, &self.tables, Which::All))
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn bin(values: &[u64]) -> Bin {
        let mut b = Bin::default();
        for v in values {
            b.count += 1;
            b.add_time(*v);
        }
        b.seal();
        b
    }

    #[test]
    fn seed_002_layout() {
        let u = Units::for_clock("x86-tsc", Some(2.6e9));
        let mut rows = BTreeMap::new();
        rows.insert(-1, bin(&[2283; 220]));
        rows.insert(1, bin(&[1276; 5692]));
        rows.insert(10, bin(&[3570; 4088]));
        let s = tlb_rows("t", &rows, &u);
        let lines: Vec<&str> = s.lines().collect();
        // one header line, nothing wraps
        assert_eq!(lines[1], " pages:  flush%    cum%");
        assert_eq!(
            lines[3],
            "    -1:   2.20%   2.20% avg cycles:  2283  median:  2283 p90:  2283 cycles/page: xxxx samples: 220"
        );
        assert_eq!(
            lines[4],
            "     1:  56.92%  59.12% avg cycles:  1276  median:  1276 p90:  1276 cycles/page: 1276 samples: 5692"
        );
        assert_eq!(
            lines[5],
            "    10:  40.88% 100.00% avg cycles:  3570  median:  3570 p90:  3570 cycles/page:  357 samples: 4088"
        );
        assert!(!s.contains("! ="), "{s}");
        // no durations: dashes, never NaN
        let mut rows = BTreeMap::new();
        rows.insert(
            4,
            Bin {
                count: 3,
                ..Default::default()
            },
        );
        let s = tlb_rows("t", &rows, &u);
        assert!(
            s.contains("     4: 100.00% 100.00% avg cycles:     -  median:     - p90:     - cycles/page:    - samples: 3"),
            "{s}"
        );
        assert!(!s.contains("NaN"));
    }

    /// Issue 18's example: 300 one-page madvise calls of ~4,000 cycles and three one-page
    /// flushes inside munmap calls of millions of cycles. The mean is pulled to ~50,000; the
    /// median stays near 4,000 and the row is flagged, in text, CSV, JSON and Markdown.
    #[test]
    fn a_few_long_calls_do_not_fool_the_median() {
        let u = Units::for_clock("x86-tsc", Some(2.6e9));
        let mut v: Vec<u64> = (0..300).map(|i| 3900 + (i * 7) % 250).collect();
        v.extend([4_800_000, 5_100_000, 6_300_000]);
        let b = bin(&v);
        let mean = b.mean().unwrap();
        let median = b.median().unwrap();
        assert!(mean > 50_000.0, "{mean}");
        assert!((3900.0..4200.0).contains(&median), "{median}");
        assert!(b.mean_pulled());
        assert_eq!(b.quantile_error(), Some(0.0));
        let mut rows = BTreeMap::new();
        rows.insert(1, b.clone());
        let s = tlb_rows("t", &rows, &u);
        let row = s.lines().find(|l| l.starts_with("     1:")).unwrap();
        assert!(row.contains("avg cycles: 57446!"), "{row}");
        assert!(row.contains("! median:  40"), "{row}");
        assert!(s.contains("! = the average lies outside"), "{s}");

        let t = Tables {
            tlb: Some(TlbTable {
                event: "tlb:tlb_flush".into(),
                reasons: vec![(3, "local MM shootdown".into())],
                rows: vec![abperf_model::trace::TlbRow {
                    reason: 3,
                    pages: 1,
                    bin: b.clone(),
                }],
            }),
            ..Default::default()
        };
        let info = CaptureInfo {
            clock: "x86-tsc".into(),
            tsc_hz: Some(2.6e9),
            ..Default::default()
        };
        let j = json(&info, &t);
        let r = &j["tlb"]["rows"][0];
        assert_eq!(r["mean_pulled_by_outliers"], true);
        assert!((3900.0..4200.0).contains(&r["median_cycles"].as_f64().unwrap()));
        let c = csv(&info, &t).unwrap();
        let header = c.lines().next().unwrap();
        assert_eq!(header, CSV_COLUMNS.join(","));
        let line = c.lines().nth(1).unwrap();
        let cells: Vec<&str> = line.split(',').collect();
        assert_eq!(cells[12], "1", "{line}");
        let md = markdown(&info, &t);
        assert!(
            md.contains("| 1 | 100.00% | 100.00% | 57446 ! | 40"),
            "{md}"
        );
        assert!(md.contains(" ! | 40"), "{md}");
    }

    #[test]
    fn sketch_quantiles_are_within_their_error() {
        // beyond the exact limit a bin keeps a sketch: quantiles within 0.5%
        let mut d = abperf_model::trace::Dist::default();
        let n = abperf_model::trace::EXACT_LIMIT as u64 + 1000;
        d.values = (0..n).map(|i| 1000 + i % 100_000).collect();
        d.seal();
        assert!(!d.is_exact());
        assert_eq!(d.len(), n);
        let med = d.quantile(0.5).unwrap();
        // true median of 1000 + (i mod 100000): about 51000
        assert!((med - 50_999.5).abs() / 50_999.5 < 0.006, "{med}");
        let back = abperf_model::trace::Dist::decode(&d.encode()).unwrap();
        assert_eq!(back, d);
        // exact round trip, and corrupt blobs are errors
        let b = bin(&[5, 3, 1_000_000_000_000, 3]);
        let back = abperf_model::trace::Dist::decode(&b.dist.encode()).unwrap();
        assert_eq!(back.values, vec![3, 3, 5, 1_000_000_000_000]);
        assert!(abperf_model::trace::Dist::decode(&[]).is_err());
        assert!(abperf_model::trace::Dist::decode(&[1, 0x80]).is_err());
        assert!(abperf_model::trace::Dist::decode(&[9]).is_err());
    }

    #[test]
    fn pair_titles_do_not_repeat() {
        let p = PairTable {
            name: "syscalls:sys_enter_mprotect..syscalls:sys_exit_mprotect".into(),
            begin: vec!["syscalls:sys_enter_mprotect".into()],
            end: vec!["syscalls:sys_exit_mprotect".into()],
            key: String::new(),
            rows: vec![],
            unmatched: 0,
        };
        assert_eq!(
            pair_title(&p),
            "syscalls:sys_enter_mprotect .. syscalls:sys_exit_mprotect: 0 pairs"
        );
        let p = PairTable {
            name: "madvise".into(),
            begin: vec!["syscalls:sys_enter_madvise".into()],
            end: vec!["syscalls:sys_exit_madvise".into()],
            key: "requested pages".into(),
            rows: vec![],
            unmatched: 2,
        };
        assert_eq!(
            pair_title(&p),
            "madvise (sys_enter_madvise .. sys_exit_madvise): 0 pairs by requested pages, 2 unmatched"
        );
    }
}
