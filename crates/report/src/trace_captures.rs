//! `trace compare A1,A2,... B1,B2,...`: captures as the unit (issue 45). The events of one
//! capture share its system state (its page cache, its neighbours' load, its frequency), so they
//! are not independent samples of the workload: two captures of one workload minutes apart
//! "differed" in 15 of 33 rows when each event counted as a sample. Here each capture gives one
//! value per row (its median duration, its count of events), and the rows are compared across
//! captures: Welch's t on the per-capture values, Fieller's 95% interval of B's mean over A's,
//! Holm over the rows of each table (medians and counts each a family).

use super::trace::{fmt_num, key_str, stats};
use abperf_model::trace::{Bin, CaptureInfo, Tables, Units};
use abperf_stats::multiple::holm;
use abperf_stats::welch::{fieller, welch};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

/// One side: its captures.
type Side = [(CaptureInfo, Tables)];

/// The captures of each side side by side, compared over captures (at least 2 per side).
pub fn compare_captures(a: &Side, b: &Side) -> String {
    let mut s = String::new();
    for (label, side) in [("A", a), ("B", b)] {
        let ids: Vec<String> = side
            .iter()
            .map(|(i, _)| i.id.map(|x| x.to_string()).unwrap_or_else(|| "?".into()))
            .collect();
        let events: u64 = side.iter().map(|(i, _)| i.event_count).sum();
        let lost: u64 = side.iter().map(|(i, _)| i.lost_total()).sum();
        let _ = writeln!(
            s,
            "{label}: captures {} ({} captures, {events} events, {lost} lost)",
            ids.join(","),
            side.len()
        );
    }
    if a.iter().chain(b).any(|(i, _)| i.has_losses()) {
        s.push_str("WARNING: events were lost in at least one capture: the comparison is built on incomplete data\n");
    }
    let tlb = |side: &Side| -> Vec<BTreeMap<i64, Bin>> {
        side.iter()
            .map(|(_, t)| t.tlb.as_ref().map(|t| t.by_pages(None)).unwrap_or_default())
            .collect()
    };
    let units = |side: &Side| -> Vec<Units> { side.iter().map(|(i, _)| i.units()).collect() };
    let (ua, ub) = (units(a), units(b));
    table(
        &mut s,
        "tlb_flush by pages, every flush reason",
        "pages",
        "",
        (&tlb(a), &ua),
        (&tlb(b), &ub),
    );
    for p in &a[0].1.pairs {
        let pair = |side: &Side| -> Option<Vec<BTreeMap<i64, Bin>>> {
            side.iter()
                .map(|(_, t)| {
                    let pt = t.pairs.iter().find(|q| q.name == p.name)?;
                    Some(pt.rows.iter().map(|r| (r.key, r.bin.clone())).collect())
                })
                .collect()
        };
        let (Some(pa), Some(pb)) = (pair(a), pair(b)) else {
            continue;
        };
        let label = if p.key.is_empty() { "all" } else { &p.key };
        table(
            &mut s,
            &format!("{} by {label}", p.name),
            label,
            &p.key,
            (&pa, &ua),
            (&pb, &ub),
        );
    }
    if a.len() < 2 || b.len() < 2 {
        let _ = writeln!(
            s,
            "\nOne capture on a side: no difference is called (Welch's t over captures needs \
             at least 2 per side; the events of one capture are not independent samples)."
        );
    }
    let _ = writeln!(
        s,
        "\nThe unit is the capture: each capture gives a row its median duration (cycles) and its \
         count of events; A and B are the means of those over the captures. B/A: B's mean over \
         A's with Fieller's 95% interval, p: Welch's t over captures ({} + {}), Holm-adjusted over \
         the rows of the table, medians and counts each a family; * = below 0.05 and the interval \
         excludes 1. A row needs 2 captures with events on each side for its medians.",
        a.len(),
        b.len()
    );
    s
}

/// A row's comparison over captures: B's mean over A's with its 95% interval, and Welch's p.
struct Cmp {
    ratio: f64,
    ci: Option<(f64, f64)>,
    p: f64,
}

fn cmp(a: &[f64], b: &[f64]) -> Option<Cmp> {
    if a.len() < 2 || b.len() < 2 {
        return None;
    }
    let w = welch(a, b).ok()?;
    let ma = a.iter().sum::<f64>() / a.len() as f64;
    let mb = b.iter().sum::<f64>() / b.len() as f64;
    Some(Cmp {
        ratio: mb / ma,
        ci: fieller(a, b, 0.95).ok().map(|f| (f.low, f.high)),
        p: w.p,
    })
}

fn mean_cell(v: &[f64]) -> String {
    if v.is_empty() {
        "-".into()
    } else {
        fmt_num(Some(v.iter().sum::<f64>() / v.len() as f64), 0)
    }
}

/// The B/A cell, its interval and its Holm p with the star of a call.
fn cells(c: Option<&Cmp>, p_holm: Option<f64>) -> [String; 3] {
    let Some(c) = c else {
        return ["-".into(), "-".into(), "-".into()];
    };
    let ci =
        c.ci.map(|(l, h)| format!("{l:.3} .. {h:.3}"))
            .unwrap_or_else(|| "unbounded".into());
    let p = p_holm.unwrap_or(c.p);
    let excludes = c.ci.is_some_and(|(l, h)| l > 1.0 || h < 1.0);
    let star = if p < 0.05 && excludes { "*" } else { " " };
    let pc = if p < 0.001 {
        format!("<0.001{star}")
    } else {
        format!("{p:.3}{star}")
    };
    [format!("{:.3}", c.ratio), ci, pc]
}

/// Holm over the rows that have a comparison, in row order.
fn adjusted(cs: &[Option<Cmp>]) -> Vec<Option<f64>> {
    let ps: Vec<f64> = cs.iter().flatten().map(|c| c.p).collect();
    let mut adj = holm(&ps).into_iter();
    cs.iter()
        .map(|c| c.as_ref().and_then(|_| adj.next()))
        .collect()
}

/// One table over the captures of both sides: per key, the per-capture medians and counts.
fn table(
    s: &mut String,
    title: &str,
    label: &str,
    key: &str,
    a: (&[BTreeMap<i64, Bin>], &[Units]),
    b: (&[BTreeMap<i64, Bin>], &[Units]),
) {
    let keys: BTreeSet<i64> =
        a.0.iter()
            .chain(b.0)
            .flat_map(|m| m.keys().copied())
            .collect();
    if keys.is_empty() {
        return;
    }
    // Per capture: the median (captures with timed events in the row) and the count (0 when
    // the capture has no event in the row).
    let values = |side: (&[BTreeMap<i64, Bin>], &[Units]), k: i64| -> (Vec<f64>, Vec<f64>) {
        let mut medians = Vec::new();
        let mut counts = Vec::new();
        for (m, u) in side.0.iter().zip(side.1) {
            let bin = m.get(&k);
            counts.push(bin.map_or(0.0, |b| b.count as f64));
            if let Some(md) = bin.and_then(|b| stats(b, u).median) {
                medians.push(md);
            }
        }
        (medians, counts)
    };
    let mut rows = Vec::new();
    let (mut med, mut cnt) = (Vec::new(), Vec::new());
    for &k in &keys {
        let (ma, ca) = values(a, k);
        let (mb, cb) = values(b, k);
        med.push(cmp(&ma, &mb));
        cnt.push(cmp(&ca, &cb));
        rows.push(vec![
            key_str(key, k),
            mean_cell(&ma),
            mean_cell(&mb),
            mean_cell(&ca),
            mean_cell(&cb),
        ]);
    }
    let (pm, pc) = (adjusted(&med), adjusted(&cnt));
    for (i, r) in rows.iter_mut().enumerate() {
        let [m, mci, mp] = cells(med[i].as_ref(), pm[i]);
        let [c, cci, cp] = cells(cnt[i].as_ref(), pc[i]);
        // columns: key, A median, B median, B/A, CI, p, A n, B n, B/A, CI, p
        let (na, nb) = (r.remove(3), r.remove(3));
        r.extend([m, mci, mp, na, nb, c, cci, cp]);
    }
    let _ = writeln!(s, "\n{title} (cycles; per capture)");
    let headers = [
        label, "A median", "B median", "B/A", "95% CI", "p Holm", "A n", "B n", "B/A n", "95% CI",
        "p Holm",
    ];
    s.push_str(&super::trace::grid(&headers, &rows));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn capture(id: i64, rows: &[(i64, u64, u64)]) -> (CaptureInfo, Tables) {
        let rows = rows
            .iter()
            .map(|&(pages, base, n)| {
                let mut bin = Bin::default();
                for i in 0..n {
                    bin.count += 1;
                    bin.add_time(base + i * 7 % 97);
                }
                bin.seal();
                (pages, bin)
            })
            .collect();
        crate::trace_compare::tests::capture(id, rows)
    }

    fn row(s: &str, k: &str) -> Vec<String> {
        s.lines()
            .find(|l| l.split_whitespace().next() == Some(k))
            .unwrap_or_else(|| panic!("no row {k}:\n{s}"))
            .split_whitespace()
            .map(String::from)
            .collect()
    }

    /// Captures whose level wanders from capture to capture (a shared system state): a shift
    /// of B inside that scatter is not called; a shift well outside it is.
    #[test]
    fn captures_are_the_unit() {
        let side = |id0: i64, shift: u64| -> Vec<(CaptureInfo, Tables)> {
            [0u64, 300, 150, 450]
                .iter()
                .enumerate()
                .map(|(i, w)| {
                    capture(
                        id0 + i as i64,
                        &[(1, 4000 + w + shift, 300), (33, 9000 + w, 200)],
                    )
                })
                .collect()
        };
        let (a, b) = (side(1, 0), side(5, 100));
        let s = compare_captures(&a, &b);
        assert!(s.contains("A: captures 1,2,3,4 (4 captures"), "{s}");
        // +100 cycles on 1 page inside a capture-to-capture scatter of 0..450: not called
        let one = row(&s, "1");
        assert!(!one.iter().any(|c| c.ends_with('*')), "{one:?}\n{s}");
        // +2,000 cycles on 33 pages: called, median and not count
        let c = side(9, 0);
        let d: Vec<(CaptureInfo, Tables)> = [0u64, 300, 150, 450]
            .iter()
            .enumerate()
            .map(|(i, w)| capture(20 + i as i64, &[(1, 4000 + w, 300), (33, 11_000 + w, 200)]))
            .collect();
        let s = compare_captures(&c, &d);
        let big = row(&s, "33");
        assert_eq!(
            big.iter().filter(|x| x.ends_with('*')).count(),
            1,
            "{big:?}\n{s}"
        );
        assert!(!row(&s, "1").iter().any(|x| x.ends_with('*')), "{s}");
    }
}
