//! The workload's flushes by size for the ceiling advisor, local and remote apart.
//!
//! A `tlb_flush` event fires on every CPU that flushes: once on the CPU that asked (`local
//! shootdown`, `local MM shootdown`), once more there when it sends IPIs (`remote IPI send`),
//! and once on each CPU that receives one (`remote shootdown`). On a 16-CPU machine a flush of
//! an mm running everywhere is one local flush, one send and 15 receipts. The ceiling acts on
//! all of them (the receivers flush the range the sender chose, page by page or in full), but
//! at different prices: the local flush pays zap and flush in the call, each receiver pays its
//! flush (and refill) inside an IPI handler, the sender waits for the receivers. So they are
//! counted apart, never a receipt as a local flush.

use abperf_model::trace::Tables;
use std::collections::BTreeMap;

/// Flushes of one kind by size (pages), and the full ones whose size is unknown.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Sized {
    pub by_size: BTreeMap<u64, f64>,
    pub always_full: f64,
    /// Full flushes (size unknown before recovery).
    full: u64,
    /// Events counted.
    pub events: u64,
}

/// Flush counts by kind, before dividing by time.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Counts {
    pub local: Sized,
    pub received: Sized,
    pub sent: Sized,
    /// Local full flushes whose size was recovered from the enclosing call.
    pub recovered: u64,
}

fn reason_is(name: &str, r: i64, want: &[(&str, i64)]) -> bool {
    want.iter()
        .any(|(n, v)| name.eq_ignore_ascii_case(n) || (name.starts_with("reason ") && r == *v))
}

/// The workload's flushes by kind and size. Sizes above `ceiling_then` (the ceiling of the
/// kernel that recorded it) were flushed in full; their size is recovered from the enclosing
/// madvise/munmap/mprotect's requested length, and receipts and sends of full flushes take the
/// sizes of the local ones.
pub(crate) fn counts(t: &Tables, ceiling_then: u64) -> Result<Counts, String> {
    let tl = t
        .tlb
        .as_ref()
        .ok_or("the capture has no tlb:tlb_flush events (record with the default events)")?;
    let local = [("local MM shootdown", 3), ("local shootdown", 2)];
    let remote = [("remote shootdown", 1)];
    let send = [("remote IPI send", 4)];
    let mut c = Counts::default();
    for r in &tl.rows {
        let name = tl.reason_name(r.reason);
        let kind = if reason_is(&name, r.reason, &local) {
            &mut c.local
        } else if reason_is(&name, r.reason, &remote) {
            &mut c.received
        } else if reason_is(&name, r.reason, &send) {
            &mut c.sent
        } else {
            continue;
        };
        let n = r.bin.count;
        kind.events += n;
        if r.pages >= 1 {
            *kind.by_size.entry(r.pages as u64).or_default() += n as f64;
        } else if r.pages < 0 {
            kind.full += n;
        }
    }
    // full flushes inside calls that asked for more pages than the ceiling then
    let mut recovered: BTreeMap<u64, u64> = BTreeMap::new();
    for p in &t.pairs {
        if !matches!(p.name.as_str(), "madvise" | "munmap" | "mprotect") {
            continue;
        }
        for row in &p.rows {
            if row.key <= 0 || row.key as u64 <= ceiling_then {
                continue;
            }
            for (pages, n) in &row.flushes {
                if *pages < 0 {
                    *recovered.entry(row.key as u64).or_default() += n;
                }
            }
        }
    }
    // the calls' full flushes hold sends too: their shape, scaled to the local full flushes
    let found: u64 = recovered.values().sum();
    let rec_total = found.min(c.local.full);
    c.recovered = rec_total;
    let share = |full: u64| {
        if c.local.full > 0 {
            full as f64 * rec_total as f64 / c.local.full as f64
        } else {
            0.0
        }
    };
    let (rec_local, rec_received, rec_sent) =
        (rec_total as f64, share(c.received.full), share(c.sent.full));
    for (kind, total) in [
        (&mut c.local, rec_local),
        (&mut c.received, rec_received),
        (&mut c.sent, rec_sent),
    ] {
        if found > 0 {
            for (k, n) in &recovered {
                *kind.by_size.entry(*k).or_default() += total * *n as f64 / found as f64;
            }
        }
        kind.always_full = kind.full as f64 - total;
    }
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;
    use abperf_model::trace::{Bin, PairRow, PairTable, TlbRow, TlbTable};

    fn row(reason: i64, pages: i64, count: u64) -> TlbRow {
        TlbRow {
            reason,
            pages,
            bin: Bin {
                count,
                ..Default::default()
            },
        }
    }

    /// Seed-002-like storm on 16 CPUs: every flush of the workload sends IPIs to 15 others.
    #[test]
    fn remote_receipts_are_not_local_flushes() {
        let t = Tables {
            tlb: Some(TlbTable {
                event: "tlb:tlb_flush".into(),
                reasons: vec![
                    (1, "remote shootdown".into()),
                    (3, "local MM shootdown".into()),
                    (4, "remote IPI send".into()),
                ],
                rows: vec![
                    row(3, 1, 1000),
                    row(4, 1, 1000),
                    row(1, 1, 15_000),
                    row(3, -1, 100),
                    row(4, -1, 100),
                    row(1, -1, 1500),
                ],
            }),
            pairs: vec![PairTable {
                name: "madvise".into(),
                begin: vec![],
                end: vec![],
                key: "requested pages".into(),
                rows: vec![PairRow {
                    key: 64,
                    bin: Bin::default(),
                    // the local full flush and the send's, both inside the call
                    flushes: vec![(-1, 200)],
                }],
                unmatched: 0,
            }],
            ..Default::default()
        };
        let c = counts(&t, 33).unwrap();
        assert_eq!(c.local.events, 1100);
        assert_eq!(c.received.events, 16_500);
        assert_eq!(c.sent.events, 1100);
        assert_eq!(c.local.by_size[&1], 1000.0);
        assert_eq!(c.local.by_size[&64], 100.0);
        assert_eq!(c.received.by_size[&1], 15_000.0);
        assert_eq!(c.received.by_size[&64], 1500.0);
        assert_eq!(c.sent.by_size[&64], 100.0);
        assert_eq!(c.recovered, 100);
        for k in [&c.local, &c.received, &c.sent] {
            assert!(k.always_full.abs() < 1e-9, "{k:?}");
        }
    }
}
