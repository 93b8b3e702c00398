//! Text output of a [`SuiteReport`]: a header, one table per benchmark family, findings, skips.

use super::{Measurement, SuiteReport};
use std::fmt::Write;

fn f0(x: f64) -> String {
    if x.is_finite() {
        format!("{x:.0}")
    } else {
        "-".into()
    }
}

fn f1(x: f64) -> String {
    if x.is_finite() {
        format!("{x:.1}")
    } else {
        "-".into()
    }
}

fn by<'a>(r: &'a SuiteReport, name: &str) -> Option<&'a Measurement> {
    r.measurements.iter().find(|m| m.name == name)
}

/// Generic table: one row per configuration.
fn generic(out: &mut String, ms: &[&Measurement]) {
    let w = ms.iter().map(|m| m.name.len()).max().unwrap_or(10).max(10);
    let _ = writeln!(
        out,
        "  {:w$}  {:>9} {:>9} {:>9} {:>9} {:>9} {:>10}  {:>8}  per",
        "config", "min", "p10", "median", "p90", "ns(med)", "core(med)", "samples"
    );
    for m in ms {
        let _ = writeln!(
            out,
            "  {:w$}  {:>9} {:>9} {:>9} {:>9} {:>9} {:>10}  {:>8}  {}",
            m.name,
            f0(m.cycles.min),
            f0(m.cycles.p10),
            f0(m.cycles.median),
            f0(m.cycles.p90),
            f1(m.ns.median),
            f0(m.core_cycles.median),
            m.cycles.n,
            m.per
        );
    }
}

/// Flush table in the seeds' spirit: per-call and per-page cycles by pages, knee marked.
fn flush_table(out: &mut String, r: &SuiteReport, prefix: &str, knee: Option<usize>) {
    let ops = ["madvise", "mprotect"];
    let sizes: Vec<u64> = {
        let mut v: Vec<u64> = r
            .measurements
            .iter()
            .filter(|m| m.name.starts_with(&format!("{prefix}/")) && m.name.contains("/touched/"))
            .map(|m| m.pages)
            .collect();
        v.sort();
        v.dedup();
        v
    };
    if sizes.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "  {prefix}: median cycles per call (touched minus empty range) and per page"
    );
    let _ = writeln!(
        out,
        "  {:>5}  {:>9} {:>8} {:>9}   {:>9} {:>8} {:>9}",
        "pages", "madvise", "/page", "empty", "mprotect", "/page", "empty"
    );
    for n in sizes {
        let mut line = format!("  {n:>5} ");
        for op in ops {
            let t = by(r, &format!("{prefix}/{op}/touched/n={n}"));
            let e = by(r, &format!("{prefix}/{op}/empty/n={n}"));
            match (t, e) {
                (Some(t), Some(e)) => {
                    let net = t.cycles.median - e.cycles.median;
                    let _ = write!(
                        line,
                        " {:>9} {:>8} {:>9}  ",
                        f0(net),
                        f0(net / n as f64),
                        f0(e.cycles.median)
                    );
                }
                _ => line.push_str(&format!(" {:>9} {:>8} {:>9}  ", "-", "-", "-")),
            }
        }
        if knee == Some(n as usize) {
            line.push_str(" <- knee (last per-page flush)");
        }
        let _ = writeln!(out, "{}", line.trim_end());
    }
}

pub fn text(r: &SuiteReport) -> String {
    let mut out = String::new();
    let t = &r.timer;
    let _ = writeln!(
        out,
        "abperf micro{}  ({})",
        if r.quick { " --quick" } else { "" },
        r.arch
    );
    let _ = writeln!(out, "cpu: {}", r.cpu_info.describe());
    let _ = writeln!(
        out,
        "pinned to CPU {}, remote CPU {}",
        r.cpu,
        r.remote_cpu
            .map(|c| c.to_string())
            .unwrap_or_else(|| "none".into())
    );
    let _ = writeln!(
        out,
        "cycles are counter ticks; core(med) = median in core clock cycles (core clock measured after each \
         configuration)"
    );
    let _ = writeln!(
        out,
        "timer: {} at {:.3} MHz ({}); overhead {:.0} cycles subtracted, resolution {} cycles; \
         core clock {:.2} GHz",
        t.counter,
        t.hz / 1e6,
        t.hz_source,
        t.overhead,
        t.resolution,
        t.core_ghz
    );
    for n in &r.notes {
        let _ = writeln!(out, "note: {n}");
    }
    for b in &r.benches {
        let ms: Vec<&Measurement> = r.measurements.iter().filter(|m| &m.bench == b).collect();
        let _ = writeln!(out, "\n== {b} ==");
        let knee_of = |op: &str| {
            r.findings
                .iter()
                .find(|f| f.bench == *b && f.key == format!("{op}-knee"))
                .and_then(|f| f.value)
                .map(|v| v as usize)
        };
        match b.as_str() {
            "tlb-flush" => flush_table(
                &mut out,
                r,
                "tlb-flush",
                knee_of("madvise").or(knee_of("mprotect")),
            ),
            "tlb-shootdown" => {
                let mut modes: Vec<String> = ms
                    .iter()
                    .filter_map(|m| m.name.split('/').nth(1).map(str::to_string))
                    .collect();
                modes.dedup();
                for mode in modes {
                    flush_table(&mut out, r, &format!("tlb-shootdown/{mode}"), None);
                }
            }
            "tlb-miss" => {
                let mut ns: Vec<u64> = ms
                    .iter()
                    .filter_map(|m| m.params.get("nodes")?.parse().ok())
                    .collect();
                ns.sort();
                ns.dedup();
                let _ = writeln!(
                    out,
                    "  median cycles per access; miss = page-strided minus dense (same lines)"
                );
                let _ = writeln!(
                    out,
                    "  {:>6} {:>9} {:>9} {:>9} {:>9} {:>9}",
                    "pages", "dense", "4K", "4K miss", "2M", "2M miss"
                );
                for n in ns {
                    let g =
                        |k: &str| by(r, &format!("tlb-miss/{k}/n={n}")).map(|m| m.cycles.median);
                    let d = g("dense").unwrap_or(f64::NAN);
                    let s = g("4k").unwrap_or(f64::NAN);
                    let h = g("2m").unwrap_or(f64::NAN);
                    let _ = writeln!(
                        out,
                        "  {:>6} {:>9} {:>9} {:>9} {:>9} {:>9}",
                        n,
                        f1(d),
                        f1(s),
                        f1(s - d),
                        f1(h),
                        f1(h - d)
                    );
                }
            }
            _ => generic(&mut out, &ms),
        }
        for f in r.findings.iter().filter(|f| &f.bench == b) {
            let _ = writeln!(out, "  * {}", f.text);
        }
        for s in r.skips.iter().filter(|s| &s.bench == b) {
            let _ = writeln!(
                out,
                "  skipped{}: {}",
                s.config
                    .as_ref()
                    .map(|c| format!(" {c}"))
                    .unwrap_or_default(),
                s.reason
            );
        }
    }
    let _ = writeln!(
        out,
        "\n{} configurations in {:.1} s",
        r.measurements.len(),
        r.elapsed_s
    );
    out
}
