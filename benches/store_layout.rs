//! `cargo bench --bench store_layout [-- RUNS]`: the compact run layout (migration 12) against the
//! one before it (a `run` row and one `metric` row per metric, ~580 bytes per run):
//!
//! 1. Migration: how long opening an old store of RUNS plain runs (default 100,000; 10 metrics
//!    each, over 10 experiments) takes to convert it, with its size before and after (VACUUMed
//!    copies).
//! 2. Commit cost: a run committed the way `Store::commit_run` did before (look up the variant,
//!    insert the run, insert a metric row per metric, in one transaction; the same synchronous
//!    pacing) against `Store::commit_run` now, in interleaved rounds of 1,000 commits each into
//!    stores in the same directory; the median over rounds of the per-commit times and of their
//!    ratio. Plain runs (wall and rusage), and runs with 4 counters besides.
//!
//! `cargo test --all-targets` runs it once with 2,000 runs and 2 rounds as a smoke test.

use abperf::model::{Kind, Metric, NewExperiment, Run, Slot, Variant};
use abperf::store::{FIXED, MIGRATIONS, Store};
use rusqlite::{Connection, params};
use std::time::{Duration, Instant};

fn vacuumed_bytes(db: &std::path::Path) -> i64 {
    let copy = db.with_extension("vacuumed");
    let _ = std::fs::remove_file(&copy);
    let conn = Connection::open(db).unwrap();
    conn.execute("VACUUM INTO ?1", [copy.to_str().unwrap()])
        .unwrap();
    let conn = Connection::open(&copy).unwrap();
    conn.query_row(
        "SELECT page_count * page_size FROM pragma_page_count, pragma_page_size",
        [],
        |r| r.get(0),
    )
    .unwrap()
}

fn main() {
    let timed = std::env::args().any(|a| a == "--bench");
    let runs: i64 = std::env::args()
        .filter_map(|a| a.parse().ok())
        .next()
        .unwrap_or(if timed { 100_000 } else { 2_000 });
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("old.db");
    // The schema before migration 12 (the first one that builds `run_compact`).
    let before = MIGRATIONS
        .iter()
        .position(|m| m.contains("CREATE TABLE run_compact"))
        .expect("the compact migration");
    let mut conn = Connection::open(&db).unwrap();
    conn.pragma_update(None, "journal_mode", "WAL").unwrap();
    for sql in &MIGRATIONS[..before] {
        conn.execute_batch(sql).unwrap();
    }
    conn.pragma_update(None, "user_version", before as i64)
        .unwrap();
    let experiments = 10;
    let tx = conn.transaction().unwrap();
    for e in 1..=experiments {
        tx.execute(
            "INSERT INTO experiment (id, name, kind, created, command_line, design, seed, environment, status)
             VALUES (?1, 'old', 'run', '2026-01-01T00:00:00Z', '[]', '{}', '7', '{}', 'complete')",
            [e],
        )
        .unwrap();
        for pos in 0..2 {
            tx.execute(
                "INSERT INTO variant (experiment_id, position, name, command, parameters, knobs)
                 VALUES (?1, ?2, ?3, 'true', '{}', '[]')",
                params![e, pos, format!("v{pos}")],
            )
            .unwrap();
        }
    }
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for i in 0..runs {
        let (e, seq) = (1 + i % experiments, i / experiments);
        let vid = 1 + (e - 1) * 2 + seq % 2;
        tx.prepare_cached(
            "INSERT INTO slot (experiment_id, seq, variant_id, block, warmup) VALUES (?1, ?2, ?3, ?4, 0)",
        )
        .unwrap()
        .execute(params![e, seq, vid, seq / 4])
        .unwrap();
        let started = 1_795_398_146_673_754_225 + i * 1_000_000;
        tx.prepare_cached(
            "INSERT INTO run (experiment_id, variant_id, seq, warmup, status, exit_code, signal, started_ns, ended_ns, excluded)
             VALUES (?1, ?2, ?3, 0, 'ok', 0, NULL, ?4, ?5, NULL)",
        )
        .unwrap()
        .execute(params![e, vid, seq, started, started + 700_000 + (next() % 100_000) as i64])
        .unwrap();
        let id = tx.last_insert_rowid();
        for (k, (name, unit)) in FIXED.iter().enumerate() {
            let v = match k {
                0 => 500_000 + next() % 200_000,
                1 | 2 => (next() % 1000) * 1000,
                3 => 900 + next() % 300,
                4 => 60 + next() % 10,
                _ => next() % 3,
            };
            tx.prepare_cached(
                "INSERT INTO metric (run_id, name, value, unit) VALUES (?1, ?2, ?3, ?4)",
            )
            .unwrap()
            .execute(params![id, name, v as f64, unit])
            .unwrap();
        }
    }
    tx.commit().unwrap();
    drop(conn);
    let old = vacuumed_bytes(&db);
    let t = Instant::now();
    let store = Store::open(&db).unwrap();
    let took = t.elapsed();
    let loaded = store.load(1).unwrap();
    assert_eq!(loaded.runs.len() as i64, runs / experiments);
    drop(store);
    let new = vacuumed_bytes(&db);
    println!(
        "{runs} runs: migrated in {:.2} s ({:.1} us per run); store {old} -> {new} bytes ({:.0} -> {:.0} bytes per run)",
        took.as_secs_f64(),
        took.as_secs_f64() * 1e6 / runs as f64,
        old as f64 / runs as f64,
        new as f64 / runs as f64,
    );
    let rounds = if timed { 15 } else { 2 };
    for counters in [0, 4] {
        commit_cost(dir.path(), rounds, if timed { 1000 } else { 100 }, counters);
    }
}

/// A plain run as the runner makes it, with `counters` counter metrics after its rusage.
fn plain(seq: u32, counters: usize, x: &mut impl FnMut() -> u64) -> Run {
    let mut metrics: Vec<Metric> = FIXED
        .iter()
        .enumerate()
        .map(|(k, (name, unit))| {
            let v = match k {
                0 => 500_000 + x() % 200_000,
                1 | 2 => (x() % 1000) * 1000,
                3 => 900 + x() % 300,
                4 => 60 + x() % 10,
                _ => x() % 3,
            };
            Metric::new(*name, v as f64, *unit)
        })
        .collect();
    for (name, unit) in [
        ("task-clock", "msec"),
        ("page-faults", "count"),
        ("cycles", "count"),
        ("instructions", "count"),
    ]
    .iter()
    .take(counters)
    {
        metrics.push(Metric::new(*name, (x() % 10_000_000) as f64 / 7.0, *unit));
    }
    let started = 1_795_398_146_673_754_225 + seq as i64 * 1_000_000;
    Run {
        exit_code: Some(0),
        started_ns: started,
        ended_ns: started + 700_000,
        ..Run::ok(seq, (seq % 2) as usize, metrics)
    }
}

/// The commit of the layout before migration 12, statement for statement.
struct OldCommit {
    conn: Connection,
    last_sync: Instant,
}

impl OldCommit {
    fn commit(&mut self, exp: i64, run: &Run) {
        let full = self.last_sync.elapsed() >= Duration::from_secs(1);
        self.conn
            .pragma_update(None, "synchronous", if full { "FULL" } else { "NORMAL" })
            .unwrap();
        if full {
            self.last_sync = Instant::now();
        }
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .unwrap();
        let vid: i64 = tx
            .prepare_cached("SELECT id FROM variant WHERE experiment_id = ?1 AND position = ?2")
            .unwrap()
            .query_row(params![exp, run.variant as i64], |r| r.get(0))
            .unwrap();
        tx.prepare_cached(
            "INSERT INTO run (experiment_id, variant_id, seq, warmup, status, exit_code, signal, started_ns, ended_ns, excluded)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
        )
        .unwrap()
        .execute(params![
            exp,
            vid,
            run.seq,
            run.warmup,
            run.status.as_str(),
            run.exit_code,
            run.signal,
            run.started_ns,
            run.ended_ns,
            run.excluded
        ])
        .unwrap();
        let run_id = tx.last_insert_rowid();
        let mut stmt = tx
            .prepare_cached(
                "INSERT INTO metric (run_id, name, value, unit, direction) VALUES (?1, ?2, ?3, ?4, ?5)",
            )
            .unwrap();
        for m in &run.metrics {
            stmt.execute(params![run_id, m.name, m.value, m.unit, None::<String>])
                .unwrap();
        }
        drop(stmt);
        tx.commit().unwrap();
    }
}

fn commit_cost(dir: &std::path::Path, rounds: usize, per_round: u32, counters: usize) {
    let before = MIGRATIONS
        .iter()
        .position(|m| m.contains("CREATE TABLE run_compact"))
        .unwrap();
    let old_db = dir.join(format!("commit-old-{counters}.db"));
    let conn = Connection::open(&old_db).unwrap();
    conn.pragma_update(None, "journal_mode", "WAL").unwrap();
    conn.pragma_update(None, "foreign_keys", true).unwrap();
    for sql in &MIGRATIONS[..before] {
        conn.execute_batch(sql).unwrap();
    }
    conn.execute_batch(
        "INSERT INTO experiment (id, name, kind, created, command_line, design, environment, status)
             VALUES (1, 'old', 'run', '', '[]', '{}', '{}', 'running');
         INSERT INTO variant (experiment_id, position, name, parameters, knobs) VALUES (1, 0, 'a', '{}', '[]');
         INSERT INTO variant (experiment_id, position, name, parameters, knobs) VALUES (1, 1, 'b', '{}', '[]');",
    )
    .unwrap();
    let mut old = OldCommit {
        conn,
        last_sync: Instant::now(),
    };
    let mut new = Store::open(&dir.join(format!("commit-new-{counters}.db"))).unwrap();
    let total = rounds as u32 * per_round;
    let slots: Vec<Slot> = (0..total)
        .map(|seq| Slot {
            seq,
            variant: (seq % 2) as usize,
            block: 0,
            warmup: false,
        })
        .collect();
    let exp = NewExperiment {
        name: "new".into(),
        kind: Kind::Run,
        command_line: vec![],
        design: serde_json::json!({}),
        seed: None,
        environment: serde_json::json!({}),
    };
    let id = new
        .create_experiment(&exp, &[Variant::named("a"), Variant::named("b")], &slots)
        .unwrap();
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let (mut olds, mut news, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..rounds as u32 {
        let runs: Vec<Run> = (round * per_round..(round + 1) * per_round)
            .map(|s| plain(s, counters, &mut next))
            .collect();
        let t = Instant::now();
        for r in &runs {
            old.commit(1, r);
        }
        let o = t.elapsed().as_secs_f64() * 1e6 / per_round as f64;
        let t = Instant::now();
        for r in &runs {
            new.commit_run(id, r).unwrap();
        }
        let n = t.elapsed().as_secs_f64() * 1e6 / per_round as f64;
        olds.push(o);
        news.push(n);
        ratios.push(n / o);
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    println!(
        "commit of a run with wall, rusage and {counters} counters ({rounds} interleaved rounds of {per_round}): before {:.1} us, now {:.1} us, median ratio now/before {:.2}",
        median(&mut olds),
        median(&mut news),
        median(&mut ratios)
    );
}
