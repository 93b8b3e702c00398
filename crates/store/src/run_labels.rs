//! The invocation, boot and host a run names ([`Labels`]; imported tables carry them): one row
//! per labelled run in `run_label` (migration 13), none for the runs abperf makes itself (their
//! boots are `boot_run`'s).

use crate::run_rows::{Cells, Listed};
use abperf_model::Labels;
use rusqlite::{Connection, params};

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

/// What [`read_labels`] reads of a labelled run.
pub(crate) const SELECT_LABELS: &str = "l.run_id, l.invocation, l.boot, l.host";

/// Where [`SELECT_LABELS`] reads the labelled runs of experiment `?1` from.
pub(crate) const LABELS_FROM: &str =
    "FROM run_label l JOIN run r ON r.id = l.run_id WHERE r.experiment_id = ?1";

/// A run's id and labels, read from a row of [`SELECT_LABELS`].
pub(crate) fn read_labels<C: Cells + ?Sized>(r: &C) -> rusqlite::Result<(i64, Labels)> {
    Ok((
        r.get::<i64>(0)?,
        Labels {
            invocation: r.get(1)?,
            boot: r.get(2)?,
            host: r.get(3)?,
        },
    ))
}

/// Fill in the labels of experiment `id`'s runs as they are read.
pub(super) fn fill(conn: &Connection, id: i64, runs: &mut Listed) -> anyhow::Result<()> {
    let mut stmt = conn.prepare(&format!("SELECT {SELECT_LABELS} {LABELS_FROM}"))?;
    for row in stmt.query_map([id], |r| read_labels(r))? {
        let (rid, labels) = row?;
        runs.labels(rid, labels);
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
