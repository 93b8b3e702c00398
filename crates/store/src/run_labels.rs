//! The invocation, boot and host a run names ([`Labels`]; imported tables carry them): one row
//! per labelled run in `run_label` (migration 13), none for the runs abperf makes itself (their
//! boots are `boot_run`'s).

use abperf_model::{Labels, Run};
use rusqlite::{Connection, params};
use std::collections::BTreeMap;

/// Store the labels of run `run_id` (nothing when it names none).
pub(super) fn insert(conn: &Connection, run_id: i64, labels: &Labels) -> anyhow::Result<()> {
    if labels.is_empty() {
        return Ok(());
    }
    conn.prepare_cached(
        "INSERT INTO run_label (run_id, invocation, boot, host) VALUES (?1, ?2, ?3, ?4)",
    )?
    .execute(params![run_id, labels.invocation, labels.boot, labels.host])?;
    Ok(())
}

/// Fill in the labels of experiment `id`'s runs; `index` maps a run id to its place in `runs`.
pub(super) fn fill(
    conn: &Connection,
    id: i64,
    index: &BTreeMap<i64, usize>,
    runs: &mut [Run],
) -> anyhow::Result<()> {
    let mut stmt = conn.prepare(
        "SELECT l.run_id, l.invocation, l.boot, l.host FROM run_label l
         JOIN run r ON r.id = l.run_id WHERE r.experiment_id = ?1",
    )?;
    let rows = stmt.query_map([id], |r| {
        Ok((
            r.get::<_, i64>(0)?,
            Labels {
                invocation: r.get(1)?,
                boot: r.get(2)?,
                host: r.get(3)?,
            },
        ))
    })?;
    for row in rows {
        let (rid, labels) = row?;
        if let Some(&i) = index.get(&rid) {
            runs[i].labels = labels;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::{ImportTarget, Store};
    use abperf_model::{Kind, Labels, Metric, NewExperiment, Run, Variant};

    #[test]
    fn labels_round_trip_and_unlabelled_runs_store_none() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("x.db")).unwrap();
        let labelled = Run {
            labels: Labels {
                invocation: Some("p1".into()),
                boot: None,
                host: Some("lab-3".into()),
            },
            ..Run::ok(0, 0, vec![Metric::new("wall_ns", 5.0, "ns")])
        };
        let plain = Run::ok(1, 0, vec![Metric::new("wall_ns", 6.0, "ns")]);
        let target = ImportTarget::New(
            NewExperiment {
                name: "t".into(),
                kind: Kind::Import,
                command_line: vec![],
                design: serde_json::json!({}),
                seed: None,
                environment: serde_json::json!({}),
            },
            Default::default(),
        );
        let out = store
            .import_runs(&target, &[Variant::named("a")], &[labelled.clone(), plain])
            .unwrap();
        let runs = store.runs(out.experiment_id).unwrap();
        assert_eq!(runs[0].labels, labelled.labels);
        assert!(runs[1].labels.is_empty());
        let rows: i64 = store
            .conn()
            .query_row("SELECT count(*) FROM run_label", [], |r| r.get(0))
            .unwrap();
        assert_eq!(rows, 1);
    }
}
