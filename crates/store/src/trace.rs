//! Trace captures in the store. A capture is an experiment of kind `trace` with one variant
//! (`capture`) and one run whose metrics summarise it (events, lost events, wall time, flushes),
//! so `list`, `show` and `delete` see it; its metadata and aggregated tables live in three
//! tables of their own, created by migration 2 (`SCHEMA`, listed in `schema.rs`):
//!
//! - `trace_capture`: one row per capture (events, clock, TSC frequency, duration, lost events
//!   per CPU, command, raw file, ...), as JSON columns where lists are stored
//! - `trace_table`: the tables of a capture (kind tlb | pair | count, name, metadata JSON)
//! - `trace_bin`: histogram bins (group, key, count, timed, sum/min/max in clock ticks,
//!   flushes inside as JSON)

use super::Store;
use abperf_model::trace::{
    Bin, CaptureInfo, CountTable, Dist, EventCost, PairRow, PairTable, Tables, TlbRow, TlbTable,
};
use abperf_model::{Kind, Metric, NewExperiment, Run, RunStatus, Slot, Variant};
use anyhow::{Result, anyhow};
use rusqlite::{OptionalExtension, params};

fn u(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// A bin row as read: group, key, the bin without durations, flushes inside, durations blob.
type StoredBin = (i64, i64, Bin, Option<String>, Option<Vec<u8>>);

fn dist_blob(b: &Bin) -> Option<Vec<u8>> {
    (b.timed > 0 && b.knows_quantiles()).then(|| b.dist.encode())
}

impl Store {
    /// Store a capture and its tables; returns its id (an experiment id). `environment` is the
    /// snapshot of the machine it was recorded on (or says it was imported).
    pub fn save_capture(
        &mut self,
        name: &str,
        command_line: &[String],
        environment: serde_json::Value,
        info: &CaptureInfo,
        t: &Tables,
    ) -> Result<i64> {
        self.require(crate::Operation::Trace)?;
        let exp = NewExperiment {
            name: name.to_string(),
            kind: Kind::Trace,
            command_line: command_line.to_vec(),
            design: serde_json::json!({ "trace": info.source, "events": info.events }),
            seed: None,
            environment,
        };
        let var = Variant {
            command: (!info.command.is_empty()).then(|| shell_words::join(&info.command)),
            ..Variant::named("capture")
        };
        let id = self.create_experiment(
            &exp,
            &[var],
            &[Slot {
                seq: 0,
                variant: 0,
                block: 0,
                warmup: false,
            }],
        )?;
        self.commit_run(id, &capture_run(info, t))?;
        let tx = self.write_tx()?;
        insert_capture_row(&tx, id, info, t)?;
        insert_tables(&tx, id, t)?;
        tx.commit()?;
        self.set_status(id, abperf_model::Status::Complete)?;
        Ok(id)
    }

    /// The per-event tracing cost measured on `machine` (see [`EventCost`]), if any.
    pub fn event_cost(&self, machine: &str) -> Result<Option<EventCost>> {
        Ok(self
            .conn()
            .query_row(
                "SELECT ns_per_event, low, high, how FROM trace_event_cost WHERE machine = ?1",
                [machine],
                |r| {
                    Ok(EventCost {
                        ns_per_event: r.get(0)?,
                        low: r.get(1)?,
                        high: r.get(2)?,
                        how: r.get(3)?,
                    })
                },
            )
            .optional()?)
    }

    /// Store (replace) the per-event tracing cost of `machine`.
    pub fn set_event_cost(&mut self, machine: &str, c: &EventCost) -> Result<()> {
        self.require(crate::Operation::Trace)?;
        self.conn_mut().execute(
            "INSERT OR REPLACE INTO trace_event_cost (machine, ns_per_event, low, high, how) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![machine, c.ns_per_event, c.low, c.high, c.how],
        )?;
        Ok(())
    }

    /// Load a capture and its tables. A usage error when `id` is not a trace capture.
    pub fn load_capture(&self, id: i64) -> Result<(CaptureInfo, Tables)> {
        self.fill(id)?;
        let conn = self.conn();
        let (info, mut t) = self.load_capture_row(id)?;
        let bad = |what: &str| anyhow!("capture {id}: stored {what} is not valid JSON");
        let mut stmt = conn.prepare(
            "SELECT seq, kind, name, meta FROM trace_table WHERE experiment_id = ?1 ORDER BY seq",
        )?;
        let tables: Vec<(i64, String, String, String)> = stmt
            .query_map([id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?
            .collect::<rusqlite::Result<_>>()?;
        let mut bins = conn.prepare("SELECT grp, key, count, timed, sum_ticks, min_ticks, max_ticks, inner, dist FROM trace_bin WHERE experiment_id = ?1 AND table_seq = ?2 ORDER BY grp, key")?;
        for (seq, kind, name, meta) in tables {
            let meta: serde_json::Value =
                serde_json::from_str(&meta).map_err(|_| bad("table metadata"))?;
            let rows = load_bins(&mut bins, id, seq)?;
            match kind.as_str() {
                "tlb" => {
                    t.tlb = Some(TlbTable {
                        event: name,
                        reasons: serde_json::from_value(meta).map_err(|_| bad("reasons"))?,
                        rows: rows
                            .into_iter()
                            .map(|(g, k, b, _)| TlbRow {
                                reason: g,
                                pages: k,
                                bin: b,
                            })
                            .collect(),
                    })
                }
                "pair" => t.pairs.push(pair_table(id, name, &meta, rows)?),
                "count" => t.counts.push(CountTable {
                    event: name,
                    key: meta["key"].as_str().unwrap_or("").to_string(),
                    names: serde_json::from_value(meta["names"].clone()).unwrap_or_default(),
                    rows: rows.into_iter().map(|(_, k, b, _)| (k, b.count)).collect(),
                }),
                other => return Err(anyhow!("capture {id}: unknown stored table kind {other:?}")),
            }
        }
        Ok((info, t))
    }

    /// The `trace_capture` row of `id`: the capture's description, and its tables with only
    /// the bias and the event counts filled in.
    fn load_capture_row(&self, id: i64) -> Result<(CaptureInfo, Tables)> {
        let row = self
            .conn()
            .query_row(
                "SELECT source, events, clock, tsc_hz, wall_ns, span_ticks, event_count, lost, command, raw_path, text_path,
                        skipped_lines, exit_code, bias_ticks, event_counts, scope, stop, event_cost, cpu_ns FROM trace_capture WHERE experiment_id = ?1",
                [id],
                |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, String>(1)?,
                        r.get::<_, String>(2)?,
                        r.get::<_, Option<f64>>(3)?,
                        r.get::<_, Option<i64>>(4)?,
                        r.get::<_, i64>(5)?,
                        r.get::<_, i64>(6)?,
                        r.get::<_, String>(7)?,
                        r.get::<_, String>(8)?,
                        r.get::<_, Option<String>>(9)?,
                        r.get::<_, Option<String>>(10)?,
                        r.get::<_, i64>(11)?,
                        r.get::<_, Option<i32>>(12)?,
                        r.get::<_, Option<i64>>(13)?,
                        r.get::<_, String>(14)?,
                        r.get::<_, Option<String>>(15)?,
                        r.get::<_, Option<String>>(16)?,
                        r.get::<_, Option<String>>(17)?,
                        r.get::<_, Option<i64>>(18)?,
                    ))
                },
            )
            .optional()?
            .ok_or_else(|| abperf_model::error::usage(format!("{id} is not a trace capture in {} (see `abperf list`)", self.path().display())))?;
        let bad = |what: &str| anyhow!("capture {id}: stored {what} is not valid JSON");
        let info = CaptureInfo {
            id: Some(id),
            source: row.0,
            events: serde_json::from_str(&row.1).map_err(|_| bad("events"))?,
            clock: row.2,
            tsc_hz: row.3,
            wall_ns: row.4.map(|v| v as u64),
            span_ticks: row.5 as u64,
            event_count: row.6 as u64,
            lost: serde_json::from_str(&row.7).map_err(|_| bad("lost"))?,
            command: serde_json::from_str(&row.8).map_err(|_| bad("command"))?,
            raw_path: row.9,
            text_path: row.10,
            skipped_lines: row.11 as u64,
            exit_code: row.12,
            scope: match &row.15 {
                Some(j) => serde_json::from_str(j).map_err(|_| bad("scope"))?,
                None => Default::default(),
            },
            stop: row.16,
            cpu_ns: row.18.map(|v| v as u64),
            event_cost: match &row.17 {
                Some(j) => Some(serde_json::from_str(j).map_err(|_| bad("event cost"))?),
                None => None,
            },
        };
        let t = Tables {
            bias: row.13.map(|v| v as u64),
            events: serde_json::from_str(&row.14).map_err(|_| bad("event counts"))?,
            ..Default::default()
        };
        Ok((info, t))
    }
}

/// The run that summarises a capture: events, lost events, wall time and flushes, ending now.
fn capture_run(info: &CaptureInfo, t: &Tables) -> Run {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0);
    let started = now - info.wall_ns.map(u).unwrap_or(0);
    let mut metrics = vec![
        Metric::new("trace:events", info.event_count as f64, "count"),
        Metric::new("trace:lost_events", info.lost_total() as f64, "count"),
    ];
    if let Some(w) = info.wall_ns {
        metrics.push(Metric::new("wall_ns", w as f64, "ns"));
    }
    if let Some(tl) = &t.tlb {
        metrics.push(Metric::new(
            "tp:tlb:tlb_flush",
            tl.rows.iter().map(|r| r.bin.count).sum::<u64>() as f64,
            "count",
        ));
    }
    Run {
        variant: 0,
        seq: 0,
        warmup: false,
        block: 0,
        status: if info.exit_code.unwrap_or(0) == 0 {
            RunStatus::Ok
        } else {
            RunStatus::Failed
        },
        exit_code: info.exit_code,
        signal: None,
        started_ns: started,
        ended_ns: now,
        metrics,
        excluded: None,
        source: None,
        labels: Default::default(),
    }
}

/// The capture's `trace_capture` row.
fn insert_capture_row(
    tx: &rusqlite::Transaction,
    id: i64,
    info: &CaptureInfo,
    t: &Tables,
) -> Result<()> {
    tx.execute(
        "INSERT INTO trace_capture (experiment_id, source, events, clock, tsc_hz, wall_ns, span_ticks, event_count, lost_total, lost,
            command, raw_path, text_path, skipped_lines, exit_code, bias_ticks, event_counts, scope, stop, event_cost, cpu_ns)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21)",
        params![
            id,
            info.source,
            serde_json::to_string(&info.events)?,
            info.clock,
            info.tsc_hz,
            info.wall_ns.map(u),
            u(info.span_ticks),
            u(info.event_count),
            u(info.lost_total()),
            serde_json::to_string(&info.lost)?,
            serde_json::to_string(&info.command)?,
            info.raw_path,
            info.text_path,
            u(info.skipped_lines),
            info.exit_code,
            t.bias.map(u),
            serde_json::to_string(&t.events)?,
            serde_json::to_string(&info.scope)?,
            info.stop,
            info.event_cost
                .as_ref()
                .map(serde_json::to_string)
                .transpose()?,
            info.cpu_ns.map(u),
        ],
    )?;
    Ok(())
}

/// The capture's tables (`trace_table`, numbered in order: tlb, pairs, counts) and their bins
/// (`trace_bin`).
fn insert_tables(tx: &rusqlite::Transaction, id: i64, t: &Tables) -> Result<()> {
    let mut seq = 0i64;
    let bin_sql = "INSERT INTO trace_bin (experiment_id, table_seq, grp, key, count, timed, sum_ticks, min_ticks, max_ticks, inner, dist) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)";
    let table_sql = "INSERT INTO trace_table (experiment_id, seq, kind, name, meta) VALUES (?1, ?2, ?3, ?4, ?5)";
    if let Some(tl) = &t.tlb {
        tx.execute(
            table_sql,
            params![
                id,
                seq,
                "tlb",
                tl.event,
                serde_json::to_string(&tl.reasons)?
            ],
        )?;
        for r in &tl.rows {
            let b = &r.bin;
            tx.execute(
                bin_sql,
                params![
                    id,
                    seq,
                    r.reason,
                    r.pages,
                    u(b.count),
                    u(b.timed),
                    u(b.sum),
                    u(b.min),
                    u(b.max),
                    None::<String>,
                    dist_blob(b)
                ],
            )?;
        }
        seq += 1;
    }
    for p in &t.pairs {
        let meta = serde_json::json!({ "begin": p.begin, "end": p.end, "key": p.key, "unmatched": p.unmatched });
        tx.execute(
            table_sql,
            params![id, seq, "pair", p.name, meta.to_string()],
        )?;
        for r in &p.rows {
            let b = &r.bin;
            tx.execute(
                bin_sql,
                params![
                    id,
                    seq,
                    0,
                    r.key,
                    u(b.count),
                    u(b.timed),
                    u(b.sum),
                    u(b.min),
                    u(b.max),
                    Some(serde_json::to_string(&r.flushes)?),
                    dist_blob(b)
                ],
            )?;
        }
        seq += 1;
    }
    for c in &t.counts {
        let meta = serde_json::json!({ "key": c.key, "names": c.names });
        tx.execute(
            table_sql,
            params![id, seq, "count", c.event, meta.to_string()],
        )?;
        for (k, n) in &c.rows {
            tx.execute(
                bin_sql,
                params![
                    id,
                    seq,
                    0,
                    k,
                    u(*n),
                    0,
                    0,
                    0,
                    0,
                    None::<String>,
                    None::<Vec<u8>>
                ],
            )?;
        }
        seq += 1;
    }
    Ok(())
}

/// A bin row with its durations decoded: group, key, the bin, flushes inside (JSON).
type LoadedBin = (i64, i64, Bin, Option<String>);

/// The bins of table `seq` of capture `id`, in (group, key) order.
fn load_bins(bins: &mut rusqlite::Statement, id: i64, seq: i64) -> Result<Vec<LoadedBin>> {
    let raw: Vec<StoredBin> = bins
        .query_map(params![id, seq], |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                Bin {
                    count: r.get::<_, i64>(2)? as u64,
                    timed: r.get::<_, i64>(3)? as u64,
                    sum: r.get::<_, i64>(4)? as u64,
                    min: r.get::<_, i64>(5)? as u64,
                    max: r.get::<_, i64>(6)? as u64,
                    dist: Dist::default(),
                },
                r.get(7)?,
                r.get(8)?,
            ))
        })?
        .collect::<rusqlite::Result<_>>()?;
    let mut rows = Vec::with_capacity(raw.len());
    for (g, k, mut b, inner, dist) in raw {
        if let Some(blob) = dist {
            b.dist = Dist::decode(&blob).map_err(|e| {
                anyhow!("capture {id}: stored durations of table {seq} key {k}: {e}")
            })?;
        }
        rows.push((g, k, b, inner));
    }
    Ok(rows)
}

/// A pair table from its metadata (begin, end, key, unmatched) and bins (flushes inside).
fn pair_table(
    id: i64,
    name: String,
    meta: &serde_json::Value,
    rows: Vec<LoadedBin>,
) -> Result<PairTable> {
    let bad = |what: &str| anyhow!("capture {id}: stored {what} is not valid JSON");
    let strs = |k: &str| -> Vec<String> {
        meta[k]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|x| x.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut prs = Vec::new();
    for (_, k, b, inner) in rows {
        let flushes = match inner {
            Some(s) => serde_json::from_str(&s).map_err(|_| bad("flushes"))?,
            None => Vec::new(),
        };
        prs.push(PairRow {
            key: k,
            bin: b,
            flushes,
        });
    }
    Ok(PairTable {
        name,
        begin: strs("begin"),
        end: strs("end"),
        key: meta["key"].as_str().unwrap_or("").to_string(),
        rows: prs,
        unmatched: meta["unmatched"].as_u64().unwrap_or(0),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use abperf_model::trace::LostCpu;

    #[test]
    fn save_and_load_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let mut st = Store::open(&dir.path().join("t.db")).unwrap();
        let info = CaptureInfo {
            source: "record".into(),
            events: vec!["tlb:tlb_flush".into()],
            clock: "x86-tsc".into(),
            tsc_hz: Some(2.6e9),
            wall_ns: Some(5),
            span_ticks: 100,
            event_count: 7,
            lost: vec![LostCpu {
                cpu: 1,
                stats: Some(3),
                counted: 2,
                flagged: 0,
            }],
            command: vec!["true".into()],
            scope: abperf_model::trace::Scope {
                kind: "workload".into(),
                pids: vec![42],
                cgroup: None,
            },
            stop: Some("SIGINT".into()),
            cpu_ns: Some(7),
            event_cost: Some(EventCost {
                ns_per_event: 90.0,
                low: 80.0,
                high: 100.0,
                how: "test".into(),
            }),
            ..Default::default()
        };
        assert!(st.event_cost("m").unwrap().is_none());
        st.set_event_cost("m", info.event_cost.as_ref().unwrap())
            .unwrap();
        assert_eq!(st.event_cost("m").unwrap(), info.event_cost);
        let t = Tables {
            tlb: Some(TlbTable {
                event: "tlb:tlb_flush".into(),
                reasons: vec![(1, "remote shootdown".into())],
                rows: vec![TlbRow {
                    reason: 1,
                    pages: -1,
                    bin: Bin {
                        count: 4,
                        timed: 2,
                        sum: 900,
                        min: 400,
                        max: 500,
                        dist: Dist {
                            values: vec![400, 500],
                            sketch: vec![],
                        },
                    },
                }],
            }),
            pairs: vec![PairTable {
                name: "madvise".into(),
                begin: vec!["a".into()],
                end: vec!["b".into()],
                key: "requested pages".into(),
                rows: vec![PairRow {
                    key: 64,
                    bin: Bin {
                        count: 1,
                        timed: 1,
                        sum: 9,
                        min: 9,
                        max: 9,
                        // a sketch survives the round trip too
                        dist: Dist {
                            values: vec![],
                            sketch: vec![(-3, 1)],
                        },
                    },
                    flushes: vec![(-1, 1)],
                }],
                unmatched: 2,
            }],
            counts: vec![CountTable {
                event: "tlb:tlb_flush".into(),
                key: "reason".into(),
                names: vec![(1, "x".into())],
                rows: vec![(1, 4)],
            }],
            events: vec![("tlb:tlb_flush".into(), 7)],
            bias: Some(400),
        };
        let id = st
            .save_capture(
                "trace test",
                &["abperf".into()],
                serde_json::json!({}),
                &info,
                &t,
            )
            .unwrap();
        let (i2, t2) = st.load_capture(id).unwrap();
        assert_eq!(t2, t);
        assert_eq!(i2.scope, info.scope);
        assert_eq!(i2.lost_total(), 3);
        assert_eq!((i2.stop, i2.cpu_ns), (info.stop.clone(), Some(7)));
        assert_eq!(i2.event_cost, info.event_cost);
        assert_eq!(i2.id, Some(id));
        assert!(st.load_capture(id + 100).is_err());
        st.delete(id).unwrap();
        assert!(st.load_capture(id).is_err());
    }
}
