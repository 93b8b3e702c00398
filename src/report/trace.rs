//! Output of capture tables: text in seed 002's layout (right-aligned
//! `size: % of flushes, cumulative %, avg cycles, cycles/page, samples`), JSON and CSV.

pub use super::Which;
use crate::model::trace::{Bin, CaptureInfo, CountTable, PairTable, Tables, TlbTable, Units};
use std::fmt::Write;

fn fmt_num(v: Option<f64>, width: usize) -> String {
    match v {
        Some(x) if x.is_finite() => format!("{:>width$.0}", x),
        _ => format!("{:>width$}", "-"),
    }
}

fn key_str(label: &str, k: i64) -> String {
    if label == "xfeatures" {
        format!("{k:#x}")
    } else {
        k.to_string()
    }
}

/// The capture summary: events, clock, TSC, duration, losses, bias.
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
        info.source, info.event_count, info.clock
    );
    if !info.command.is_empty() {
        let _ = writeln!(s, "  command: {}", shell_words::join(&info.command));
    }
    if let Some(p) = &info.text_path {
        let _ = writeln!(s, "  from: {p}");
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

/// Seed 002's table for one set of rows.
pub fn tlb_rows(title: &str, rows: &std::collections::BTreeMap<i64, Bin>, u: &Units) -> String {
    let mut s = String::new();
    let total: u64 = rows.values().map(|b| b.count).sum();
    let timed: u64 = rows.values().map(|b| b.timed).sum();
    let _ = writeln!(s, "{title}: {total} flushes, {timed} with a duration");
    s.push_str("Flush    % of     %<=\nin       flush    this\npages      es     size\n");
    s.push_str(&"-".repeat(78));
    s.push('\n');
    let mut cum = 0u64;
    for (pages, b) in rows {
        if b.count == 0 {
            continue;
        }
        cum += b.count;
        let pct = 100.0 * b.count as f64 / total as f64;
        let cpct = 100.0 * cum as f64 / total as f64;
        let avg = b.mean().and_then(|m| u.cycles(m));
        let cpp = if *pages > 0 {
            avg.map(|a| a / *pages as f64)
        } else {
            None
        };
        let cpp_s = if *pages > 0 {
            fmt_num(cpp, 4)
        } else {
            "xxxx".to_string()
        };
        let _ = write!(
            s,
            "{pages:>6}: {pct:>6.2}% {cpct:>6.2}% avg cycles: {} cycles/page: {cpp_s} samples: {}",
            fmt_num(avg, 5),
            b.count
        );
        if b.timed > 0 && b.timed < b.count {
            let _ = write!(s, " (timed: {})", b.timed);
        }
        s.push('\n');
    }
    s
}

pub fn tlb(t: &TlbTable, u: &Units) -> String {
    let mut s = tlb_rows(&format!("{} (all reasons)", t.event), &t.by_pages(None), u);
    let mut reasons: Vec<i64> = t.rows.iter().map(|r| r.reason).collect();
    reasons.dedup();
    for r in reasons {
        s.push('\n');
        s.push_str(&tlb_rows(
            &format!("{} reason {r} ({})", t.event, t.reason_name(r)),
            &t.by_pages(Some(r)),
            u,
        ));
    }
    s.push_str("\nDurations: remote shootdowns from call_function[_single]_entry..exit on the receiving CPU;\nother reasons from the enclosing madvise/munmap/mprotect call (syscall + zap + flush) when it\nholds one flush of that reason. -1 = full flush (cycles/page: xxxx).\n");
    s
}

pub fn pair(p: &PairTable, u: &Units) -> String {
    let mut s = String::new();
    let n: u64 = p.rows.iter().map(|r| r.bin.count).sum();
    let _ = writeln!(
        s,
        "{}: {} .. {}: {n} pairs{}",
        p.name,
        p.begin.join("|"),
        p.end.join("|"),
        if p.unmatched > 0 {
            format!(", {} unmatched", p.unmatched)
        } else {
            String::new()
        }
    );
    let label = if p.key.is_empty() {
        "all"
    } else {
        p.key.as_str()
    };
    let _ = writeln!(
        s,
        "{:>18}  {:>10} {:>10} {:>10} {:>10} {:>11} {:>9}  flushes inside (pages x count)",
        label, "avg cycles", "min", "max", "avg ns", "cycles/page", "samples"
    );
    for r in &p.rows {
        let avg = r.bin.mean().and_then(|m| u.cycles(m));
        let per_page = if p.key.contains("pages") && r.key > 0 {
            avg.map(|a| a / r.key as f64)
        } else {
            None
        };
        let fl: Vec<String> = r
            .flushes
            .iter()
            .map(|(pg, c)| format!("{pg}x{c}"))
            .collect();
        let _ = writeln!(
            s,
            "{:>18}: {} {} {} {} {} {:>9}  {}",
            if p.key.is_empty() {
                "-".to_string()
            } else {
                key_str(&p.key, r.key)
            },
            fmt_num(avg, 10),
            fmt_num(u.cycles(r.bin.min as f64), 10),
            fmt_num(u.cycles(r.bin.max as f64), 10),
            fmt_num(r.bin.mean().and_then(|m| u.ns(m)), 10),
            fmt_num(per_page, 11),
            r.bin.count,
            fl.join(" ")
        );
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
        let show = match which {
            Which::All => true,
            Which::Pair => true,
            Which::Fpu => is_fpu(p),
            Which::Tlb => !is_fpu(p) && p.rows.iter().any(|r| !r.flushes.is_empty()),
            Which::Count => false,
        };
        if show {
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

/// JSON: the capture and its tables, durations converted (cycles and ns) next to raw ticks.
pub fn json(info: &CaptureInfo, t: &Tables) -> serde_json::Value {
    let u = info.units();
    let conv = |b: &Bin| {
        serde_json::json!({
            "count": b.count, "timed": b.timed,
            "avg_cycles": b.mean().and_then(|m| u.cycles(m)),
            "min_cycles": if b.timed > 0 { u.cycles(b.min as f64) } else { None },
            "max_cycles": if b.timed > 0 { u.cycles(b.max as f64) } else { None },
            "avg_ns": b.mean().and_then(|m| u.ns(m)),
            "sum_ticks": b.sum,
        })
    };
    let tlb = t.tlb.as_ref().map(|tl| {
        let rows: Vec<_> = tl
            .rows
            .iter()
            .map(|r| {
                let mut v = conv(&r.bin);
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
                    let mut v = conv(&r.bin);
                    v["key"] = r.key.into();
                    v["flushes"] = serde_json::json!(r.flushes);
                    v
                })
                .collect();
            serde_json::json!({ "name": p.name, "begin": p.begin, "end": p.end, "key": p.key, "unmatched": p.unmatched, "rows": rows })
        })
        .collect();
    serde_json::json!({
        "capture": info,
        "lost_total": info.lost_total(),
        "bias_cycles": t.bias.and_then(|b| u.cycles(b as f64)),
        "tlb": tlb,
        "pairs": pairs,
        "counts": t.counts,
        "events": t.events,
    })
}

/// CSV: one row per bin: table,group,key,count,timed,avg_cycles,min_cycles,max_cycles,avg_ns.
pub fn csv(info: &CaptureInfo, t: &Tables) -> anyhow::Result<String> {
    let u = info.units();
    let f = |v: Option<f64>| v.map(|x| format!("{x:.1}")).unwrap_or_default();
    let mut w = ::csv::Writer::from_writer(Vec::new());
    w.write_record([
        "table",
        "group",
        "key",
        "count",
        "timed",
        "avg_cycles",
        "min_cycles",
        "max_cycles",
        "avg_ns",
    ])?;
    let mut line = |table: &str, group: &str, key: i64, b: &Bin| -> anyhow::Result<()> {
        let (mn, mx) = if b.timed > 0 {
            (u.cycles(b.min as f64), u.cycles(b.max as f64))
        } else {
            (None, None)
        };
        w.write_record([
            super::csv::neutral(table),
            super::csv::neutral(group),
            key.to_string(),
            b.count.to_string(),
            b.timed.to_string(),
            f(b.mean().and_then(|m| u.cycles(m))),
            f(mn),
            f(mx),
            f(b.mean().and_then(|m| u.ns(m))),
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
    super::csv::finish(w)
}

/// Two captures' TLB tables side by side (seed 000): per pages, % of flushes, avg cycles and
/// samples for A and B, and the change of avg cycles.
pub fn compare(a: (&CaptureInfo, &Tables), b: (&CaptureInfo, &Tables)) -> String {
    let mut s = String::new();
    let name = |i: &CaptureInfo| {
        i.id.map(|x| format!("capture {x}"))
            .unwrap_or_else(|| "capture".into())
    };
    let _ = writeln!(
        s,
        "A: {}  ({} events, {} lost)\nB: {}  ({} events, {} lost)",
        name(a.0),
        a.0.event_count,
        a.0.lost_total(),
        name(b.0),
        b.0.event_count,
        b.0.lost_total()
    );
    if a.0.has_losses() || b.0.has_losses() {
        s.push_str("WARNING: events were lost in at least one capture: the comparison is built on incomplete data\n");
    }
    let (ua, ub) = (a.0.units(), b.0.units());
    let ra =
        a.1.tlb
            .as_ref()
            .map(|t| t.by_pages(None))
            .unwrap_or_default();
    let rb =
        b.1.tlb
            .as_ref()
            .map(|t| t.by_pages(None))
            .unwrap_or_default();
    let ta: u64 = ra.values().map(|x| x.count).sum();
    let tb: u64 = rb.values().map(|x| x.count).sum();
    let _ = writeln!(s, "\ntlb_flush, all reasons (A: {ta} flushes, B: {tb})");
    let _ = writeln!(
        s,
        " pages  {:>8} {:>10} {:>9}   {:>8} {:>10} {:>9}   {:>8}",
        "A %", "A cycles", "A n", "B %", "B cycles", "B n", "B/A"
    );
    let _ = writeln!(s, "{}", "-".repeat(78));
    let mut keys: Vec<i64> = ra.keys().chain(rb.keys()).copied().collect();
    keys.sort();
    keys.dedup();
    for k in keys {
        let x = ra.get(&k).copied().unwrap_or_default();
        let y = rb.get(&k).copied().unwrap_or_default();
        let ca = x.mean().and_then(|m| ua.cycles(m));
        let cb = y.mean().and_then(|m| ub.cycles(m));
        let ratio = match (ca, cb) {
            (Some(p), Some(q)) if p > 0.0 => format!("{:>8.3}", q / p),
            _ => format!("{:>8}", "-"),
        };
        let pa = if ta > 0 {
            100.0 * x.count as f64 / ta as f64
        } else {
            0.0
        };
        let pb = if tb > 0 {
            100.0 * y.count as f64 / tb as f64
        } else {
            0.0
        };
        let _ = writeln!(
            s,
            "{k:>6}: {pa:>7.2}% {} {:>9}   {pb:>7.2}% {} {:>9}   {ratio}",
            fmt_num(ca, 10),
            x.count,
            fmt_num(cb, 10),
            y.count
        );
    }
    for pa in &a.1.pairs {
        let Some(pb) = b.1.pairs.iter().find(|p| p.name == pa.name) else {
            continue;
        };
        let _ = writeln!(
            s,
            "\n{} by {} (avg cycles, samples)",
            pa.name,
            if pa.key.is_empty() { "-" } else { &pa.key }
        );
        let mut keys: Vec<i64> = pa.rows.iter().chain(&pb.rows).map(|r| r.key).collect();
        keys.sort();
        keys.dedup();
        for k in keys {
            let x = pa
                .rows
                .iter()
                .find(|r| r.key == k)
                .map(|r| r.bin)
                .unwrap_or_default();
            let y = pb
                .rows
                .iter()
                .find(|r| r.key == k)
                .map(|r| r.bin)
                .unwrap_or_default();
            let ca = x.mean().and_then(|m| ua.cycles(m));
            let cb = y.mean().and_then(|m| ub.cycles(m));
            let ratio = match (ca, cb) {
                (Some(p), Some(q)) if p > 0.0 => format!("{:>8.3}", q / p),
                _ => format!("{:>8}", "-"),
            };
            let _ = writeln!(
                s,
                "{:>18}: A {} {:>9}   B {} {:>9}   B/A {ratio}",
                key_str(&pa.key, k),
                fmt_num(ca, 10),
                x.count,
                fmt_num(cb, 10),
                y.count
            );
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn seed_002_layout() {
        let u = Units::for_clock("x86-tsc", Some(2.6e9));
        let mut rows = BTreeMap::new();
        rows.insert(
            -1,
            Bin {
                count: 220,
                timed: 220,
                sum: 2283 * 220,
                min: 1,
                max: 9999,
            },
        );
        rows.insert(
            1,
            Bin {
                count: 5692,
                timed: 5692,
                sum: 1276 * 5692,
                min: 1,
                max: 9999,
            },
        );
        rows.insert(
            10,
            Bin {
                count: 4088,
                timed: 4088,
                sum: 3570 * 4088,
                min: 1,
                max: 9999,
            },
        );
        let s = tlb_rows("t", &rows, &u);
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(lines[1], "Flush    % of     %<=");
        assert_eq!(
            lines[5],
            "    -1:   2.20%   2.20% avg cycles:  2283 cycles/page: xxxx samples: 220"
        );
        assert_eq!(
            lines[6],
            "     1:  56.92%  59.12% avg cycles:  1276 cycles/page: 1276 samples: 5692"
        );
        assert_eq!(
            lines[7],
            "    10:  40.88% 100.00% avg cycles:  3570 cycles/page:  357 samples: 4088"
        );
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
            s.contains("     4: 100.00% 100.00% avg cycles:     - cycles/page:    - samples: 3"),
            "{s}"
        );
        assert!(!s.contains("NaN"));
    }
}
