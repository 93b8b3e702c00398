//! `trace compare A B`: two captures' tables side by side (seed 000), as a description. Per
//! size (or key): both captures' share, median, average and count; B's median over A's with a
//! BCa bootstrap interval and a bootstrap p-value, B's count over A's with its exact interval
//! and p-value (two Poisson counts given their sum); the p-values Holm-adjusted over the rows
//! of each table, one family for medians and one for counts. These treat the events of one
//! capture as independent, which they are not (they share the capture's system state: two
//! captures of one workload "differed" in 15 of 33 rows), so no row is called: the call is
//! withheld until several captures per side are compared over captures
//! ([`super::trace_captures`], issue 45).

use super::trace::{PULLED, Stats, fmt_num, grid, key_str, stats};
use abperf_model::trace::{Bin, CaptureInfo, PairTable, Tables, Units};
use abperf_stats::bootstrap::{MedianRatio, median_ratio};
use abperf_stats::counts::{CountRatio, count_ratio};
use abperf_stats::multiple::holm;
use std::fmt::Write;

/// Why a comparison of one capture per side calls nothing.
pub const ONE_CAPTURE: &str = "One capture per side: no difference is called. The intervals and p-values above take a capture's events as independent samples, but they share its system state (two captures of one workload minutes apart differ by more than these intervals allow), so they describe the two captures and not the workloads. The capture is the unit: record several per side (abperf trace record --captures N) and compare them as A1,A2,... B1,B2,....";

/// Bootstrap resamples per row, and its seed.
const RESAMPLES: usize = 2000;
const SEED: u64 = 29;
/// Durations per capture a row's bootstrap uses at most: above, evenly spaced order
/// statistics of them (an interval for a smaller sample: wider than the data allow, never
/// narrower).
const MAX_VALUES: usize = 2000;

/// Two captures' tables side by side (seed 000): per pages, % of flushes, median and avg
/// cycles and samples for A and B, and the changes of median and count (B/A) with intervals
/// and Holm-adjusted p-values.
pub fn compare(a: (&CaptureInfo, &Tables), b: (&CaptureInfo, &Tables)) -> String {
    let mut s = String::new();
    compare_header(&mut s, a.0, b.0);
    let (ua, ub) = (a.0.units(), b.0.units());
    let mut flagged = compare_tlb(&mut s, (a.1, &ua), (b.1, &ub));
    for pa in &a.1.pairs {
        let Some(pb) = b.1.pairs.iter().find(|p| p.name == pa.name) else {
            continue;
        };
        flagged |= compare_pair(&mut s, (pa, &ua), (pb, &ub));
    }
    s.push_str(&format!(
        "\nB/A median: B's median over A's, 95% BCa bootstrap interval ({RESAMPLES} resamples, seed {SEED}; rows with more than {MAX_VALUES} durations in a capture use {MAX_VALUES} evenly spaced order statistics of them, which widens the interval); p: twice the smaller share of resampled ratios on either side of 1. B/A n: B's count over A's, exact 95% interval and p-value of equal counts (two Poisson counts given their sum: binomial); counts compare when both captures ran the same work. p Holm: adjusted over the rows of the table, medians and counts each a family.\n{ONE_CAPTURE}\n"
    ));
    if flagged {
        s.push_str(PULLED);
    }
    s
}

/// Which captures are compared, their events and losses, and warnings when either lost events
/// or their scopes differ.
fn compare_header(s: &mut String, a: &CaptureInfo, b: &CaptureInfo) {
    let name = |i: &CaptureInfo| {
        i.id.map(|x| format!("capture {x}"))
            .unwrap_or_else(|| "capture".into())
    };
    let _ = writeln!(
        s,
        "A: {}  ({} events, {} lost; scope: {})\nB: {}  ({} events, {} lost; scope: {})",
        name(a),
        a.event_count,
        a.lost_total(),
        a.scope.text(),
        name(b),
        b.event_count,
        b.lost_total(),
        b.scope.text()
    );
    if a.has_losses() || b.has_losses() {
        s.push_str("WARNING: events were lost in at least one capture: the comparison is built on incomplete data\n");
    }
    if a.scope.kind != b.scope.kind && !a.scope.kind.is_empty() && !b.scope.kind.is_empty() {
        s.push_str(
            "WARNING: the captures have different scopes: their counts are not comparable\n",
        );
    }
}

/// `n` as a share of `t` ("-" when `t` is 0).
fn share(n: u64, t: u64) -> String {
    if t > 0 {
        format!("{:.2}%", 100.0 * n as f64 / t as f64)
    } else {
        "-".into()
    }
}

/// The average with the flag of a mean pulled outside p10..p90.
fn avg_flagged(st: &Stats) -> String {
    format!(
        "{}{}",
        fmt_num(st.avg, 0),
        if st.pulled { "!" } else { " " }
    )
}

/// A bin's durations in cycles for the bootstrap (at most [`MAX_VALUES`], evenly spaced order
/// statistics beyond); None when they are not kept one by one or not in cycles.
fn durations(b: &Bin, u: &Units) -> Option<Vec<f64>> {
    let v = &b.dist.values;
    if !b.dist.is_exact() || v.len() < 2 {
        return None;
    }
    let per = u.cycles(1.0)?;
    let n = v.len();
    if n <= MAX_VALUES {
        return Some(v.iter().map(|x| *x as f64 * per).collect());
    }
    // sealed values are sorted: the midpoints of MAX_VALUES equal-count groups
    Some(
        (0..MAX_VALUES)
            .map(|i| v[(2 * i + 1) * n / (2 * MAX_VALUES)] as f64 * per)
            .collect(),
    )
}

/// One row's comparisons: medians (bootstrap) and counts (exact).
struct RowCmp {
    median: Option<MedianRatio>,
    count: Option<CountRatio>,
}

fn row_cmp(x: (&Bin, &Units), y: (&Bin, &Units)) -> RowCmp {
    let median = match (durations(x.0, x.1), durations(y.0, y.1)) {
        (Some(a), Some(b)) => median_ratio(&a, &b, RESAMPLES, SEED, 0.95).ok(),
        _ => None,
    };
    RowCmp {
        median,
        count: count_ratio(x.0.count, y.0.count, 0.95).ok(),
    }
}

fn ratio(x: f64) -> String {
    if x.is_finite() {
        format!("{x:.3}")
    } else {
        "inf".into()
    }
}

fn ci(low: f64, high: f64) -> String {
    format!("{} .. {}", ratio(low), ratio(high))
}

fn p_cell(p: Option<f64>) -> String {
    match p {
        Some(p) if p < 0.001 => "<0.001".into(),
        Some(p) => format!("{p:.3}"),
        None => "-".into(),
    }
}

/// The comparison columns of every row: B/A median, its interval, its Holm p; B/A n, its
/// interval, its Holm p.
fn cmp_cells(rows: &[RowCmp]) -> Vec<Vec<String>> {
    let adjust = |ps: Vec<Option<f64>>| -> Vec<Option<f64>> {
        let present: Vec<f64> = ps.iter().flatten().copied().collect();
        let mut adj = holm(&present).into_iter();
        ps.iter().map(|p| p.and_then(|_| adj.next())).collect()
    };
    let pm = adjust(
        rows.iter()
            .map(|r| r.median.as_ref().map(|m| m.p))
            .collect(),
    );
    let pc = adjust(rows.iter().map(|r| r.count.as_ref().map(|c| c.p)).collect());
    rows.iter()
        .enumerate()
        .map(|(i, r)| {
            let (m, m_ci) = match &r.median {
                Some(m) => (ratio(m.ci.estimate), ci(m.ci.low, m.ci.high)),
                None => ("-".into(), "-".into()),
            };
            let (c, c_ci) = match &r.count {
                Some(c) => (ratio(c.ratio), ci(c.low, c.high)),
                None => ("-".into(), "-".into()),
            };
            vec![m, m_ci, p_cell(pm[i]), c, c_ci, p_cell(pc[i])]
        })
        .collect()
}

const CMP_HEADERS: [&str; 6] = [
    "B/A median",
    "95% CI",
    "p Holm",
    "B/A n",
    "95% CI",
    "p Holm",
];

/// The TLB flushes of both captures by pages; whether a row's mean is pulled.
fn compare_tlb(s: &mut String, a: (&Tables, &Units), b: (&Tables, &Units)) -> bool {
    let by_pages = |t: &Tables| t.tlb.as_ref().map(|t| t.by_pages(None)).unwrap_or_default();
    let (ra, rb) = (by_pages(a.0), by_pages(b.0));
    let ta: u64 = ra.values().map(|x| x.count).sum();
    let tb: u64 = rb.values().map(|x| x.count).sum();
    let _ = writeln!(
        s,
        "\ntlb_flush, every flush reason (A: {ta} flushes, B: {tb}); cycles"
    );
    let mut keys: Vec<i64> = ra.keys().chain(rb.keys()).copied().collect();
    keys.sort();
    keys.dedup();
    let empty = Bin::default();
    let mut flagged = false;
    let (mut rows, mut cmps) = (Vec::new(), Vec::new());
    for k in keys {
        let x = ra.get(&k).unwrap_or(&empty);
        let y = rb.get(&k).unwrap_or(&empty);
        let (sx, sy) = (stats(x, a.1), stats(y, b.1));
        flagged |= sx.pulled || sy.pulled;
        rows.push(vec![
            k.to_string(),
            share(x.count, ta),
            fmt_num(sx.median, 0),
            avg_flagged(&sx),
            x.count.to_string(),
            share(y.count, tb),
            fmt_num(sy.median, 0),
            avg_flagged(&sy),
            y.count.to_string(),
        ]);
        cmps.push(row_cmp((x, a.1), (y, b.1)));
    }
    for (r, c) in rows.iter_mut().zip(cmp_cells(&cmps)) {
        r.extend(c);
        r.push(String::new());
    }
    let mut headers = vec![
        "pages", "A %", "A median", "A avg ", "A n", "B %", "B median", "B avg ", "B n",
    ];
    headers.extend(CMP_HEADERS);
    headers.push("");
    s.push_str(&grid(&headers, &rows));
    flagged
}

/// The row of key `k` of a pair table (`empty` when it has none).
fn bin_at<'a>(p: &'a PairTable, k: i64, empty: &'a Bin) -> &'a Bin {
    p.rows
        .iter()
        .find(|r| r.key == k)
        .map(|r| &r.bin)
        .unwrap_or(empty)
}

/// One pair table present in both captures, by its key; whether a row's mean is pulled.
fn compare_pair(s: &mut String, a: (&PairTable, &Units), b: (&PairTable, &Units)) -> bool {
    let (pa, pb) = (a.0, b.0);
    let _ = writeln!(
        s,
        "\n{} by {} (cycles)",
        pa.name,
        if pa.key.is_empty() { "-" } else { &pa.key }
    );
    let mut keys: Vec<i64> = pa.rows.iter().chain(&pb.rows).map(|r| r.key).collect();
    keys.sort();
    keys.dedup();
    let empty = Bin::default();
    let (mut rows, mut cmps) = (Vec::new(), Vec::new());
    let mut flagged = false;
    for k in keys {
        let (x, y) = (bin_at(pa, k, &empty), bin_at(pb, k, &empty));
        let (sx, sy) = (stats(x, a.1), stats(y, b.1));
        flagged |= sx.pulled || sy.pulled;
        rows.push(vec![
            key_str(&pa.key, k),
            fmt_num(sx.median, 0),
            avg_flagged(&sx),
            x.count.to_string(),
            fmt_num(sy.median, 0),
            avg_flagged(&sy),
            y.count.to_string(),
        ]);
        cmps.push(row_cmp((x, a.1), (y, b.1)));
    }
    for (r, c) in rows.iter_mut().zip(cmp_cells(&cmps)) {
        r.extend(c);
        r.push(String::new());
    }
    let label = if pa.key.is_empty() { "all" } else { &pa.key };
    let mut headers = vec![
        label, "A median", "A avg ", "A n", "B median", "B avg ", "B n",
    ];
    headers.extend(CMP_HEADERS);
    headers.push("");
    s.push_str(&grid(&headers, &rows));
    flagged
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use abperf_model::trace::{Dist, TlbRow, TlbTable};

    fn bin(values: Vec<u64>) -> Bin {
        let mut b = Bin::default();
        for v in values {
            b.count += 1;
            b.add_time(v);
        }
        b.seal();
        b
    }

    /// A capture (id `id`) whose TLB table holds `rows` (pages, bin); shared with the
    /// capture-level tests.
    pub(crate) fn capture(id: i64, rows: Vec<(i64, Bin)>) -> (CaptureInfo, Tables) {
        let info = CaptureInfo {
            id: Some(id),
            clock: "x86-tsc".into(),
            tsc_hz: Some(2.6e9),
            ..Default::default()
        };
        let t = Tables {
            tlb: Some(TlbTable {
                event: "tlb:tlb_flush".into(),
                reasons: vec![(3, "local MM shootdown".into())],
                rows: rows
                    .into_iter()
                    .map(|(pages, bin)| TlbRow {
                        reason: 3,
                        pages,
                        bin,
                    })
                    .collect(),
            }),
            ..Default::default()
        };
        (info, t)
    }

    /// Issue 29: a size whose median moved by 20% and whose count doubled gets its ratios,
    /// intervals and small Holm p-values; issue 45: with one capture per side no row is starred
    /// (called), and the output says why.
    #[test]
    fn changes_get_intervals_and_holm_p_values() {
        let spread =
            |base: u64, n: u64| -> Vec<u64> { (0..n).map(|i| base + i * 7 % 97).collect() };
        let a = capture(
            1,
            vec![(1, bin(spread(4000, 300))), (33, bin(spread(9000, 200)))],
        );
        let b = capture(
            2,
            vec![(1, bin(spread(4000, 300))), (33, bin(spread(10_800, 400)))],
        );
        let s = compare((&a.0, &a.1), (&b.0, &b.1));
        let row = |k: &str| -> Vec<String> {
            s.lines()
                .find(|l| l.split_whitespace().next() == Some(k))
                .unwrap_or_else(|| panic!("no row {k}:\n{s}"))
                .split_whitespace()
                .map(String::from)
                .collect()
        };
        let one = row("1");
        assert!(one.contains(&"1.000".to_string()), "{one:?}");
        assert!(!one.iter().any(|c| c.ends_with('*')), "{one:?}\n{s}");
        let big = row("33");
        // pages, A %, A median, A avg, A n, B %, B median, B avg, B n, B/A median, ...
        let r: f64 = big[9].parse().unwrap();
        assert!((1.15..1.25).contains(&r), "{big:?}");
        // the two p Holm cells (median, count): small, yet not starred
        let small = |c: &String| c == "<0.001" || c.parse::<f64>().is_ok_and(|p| p < 0.01);
        assert!(small(&big[13]) && small(&big[18]), "{big:?}\n{s}");
        assert!(!s.lines().any(|l| l.contains('*')), "{s}");
        assert!(
            s.contains("One capture per side: no difference is called"),
            "{s}"
        );
        assert!(big.contains(&"2.000".to_string()), "{big:?}");
        assert!(s.contains("p Holm"), "{s}");
        // sketched durations give no interval, and say nothing wrong
        let mut sk = bin(spread(4000, 10));
        sk.dist = Dist {
            values: vec![],
            sketch: vec![(100, 10)],
        };
        assert!(durations(&sk, &Units::for_clock("x86-tsc", None)).is_none());
    }
}
