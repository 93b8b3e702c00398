//! Issue 13, the store item: a plain wall/rusage run takes under 120 bytes of store.
//!
//! Measured as benches/store_size.sh does: the store of 2N runs minus the store of N runs, each
//! counted as `page_count * page_size` of a VACUUMed copy (free pages and the WAL do not count),
//! divided by N. N is large enough that the page granularity (4 KiB) moves the figure by less
//! than 10 bytes.

#![allow(clippy::disallowed_macros)] // test and fuzz harnesses print what they saw to stderr
mod common;
use common::Lab;

/// Bytes of a VACUUMed copy of the store at `db`.
fn vacuumed_bytes(lab: &Lab, db: &str) -> i64 {
    let copy = lab.p(&format!("{db}.vacuumed"));
    let conn = rusqlite::Connection::open(lab.path(db)).unwrap();
    conn.execute("VACUUM INTO ?1", [&copy]).unwrap();
    let conn = rusqlite::Connection::open(&copy).unwrap();
    conn.query_row(
        "SELECT page_count * page_size FROM pragma_page_count, pragma_page_size",
        [],
        |r| r.get(0),
    )
    .unwrap()
}

#[test]
fn a_plain_run_takes_under_120_bytes() {
    let lab = Lab::new();
    const N: usize = 500;
    let mut bytes = Vec::new();
    for (db, runs) in [("n.db", N), ("2n.db", 2 * N)] {
        let runs = runs.to_string();
        lab.ok(&[
            "run",
            "--db",
            &lab.p(db),
            "-N",
            "-r",
            &runs,
            "--warmup",
            "0",
            "true",
        ]);
        let ds = abperf::store::Store::open(&lab.path(db))
            .unwrap()
            .load(1)
            .unwrap();
        assert_eq!(ds.runs.len().to_string(), runs);
        // Every run has its wall time and full rusage (what "plain" means here).
        assert!(
            ds.runs.iter().all(|r| r.metrics.len() == 10),
            "{:?}",
            ds.runs[0]
        );
        bytes.push(vacuumed_bytes(&lab, db));
    }
    let per_run = (bytes[1] - bytes[0]) as f64 / N as f64;
    eprintln!(
        "store: {} and {} bytes, {per_run:.1} bytes per run",
        bytes[0], bytes[1]
    );
    assert!(per_run > 0.0, "{bytes:?}");
    assert!(
        per_run < 120.0,
        "{per_run:.1} bytes per run (stores of {bytes:?} bytes)"
    );
}
