//! Originals of the settings `abperf doctor --fix` and `abperf run --tune` change, so that
//! `doctor --restore` (or the run itself, or `run --resume`) puts back exactly what was there.
//! A row is written *before* its file is touched (state `pending`), so even a crash mid-write
//! leaves the original on record.
//!
//! Own tables, created by migration 5 (`SCHEMA`, listed in `schema.rs`).

use super::Store;
use abperf_model::TuneRecord;
use rusqlite::params;

impl Store {
    /// Start a session (one `doctor --fix`, or the settings of one experiment).
    pub fn tune_session(&mut self, source: &str, experiment: Option<i64>) -> anyhow::Result<i64> {
        self.require(crate::Operation::Tune)?;
        self.conn().execute(
            "INSERT INTO tune_session (source, experiment_id, created)
             VALUES (?1, ?2, strftime('%Y-%m-%dT%H:%M:%SZ','now'))",
            params![source, experiment],
        )?;
        Ok(self.conn().last_insert_rowid())
    }

    /// Attach a session to the experiment it was made for (created after the settings were).
    pub fn tune_link(&mut self, session: i64, experiment: i64) -> anyhow::Result<()> {
        self.require(crate::Operation::Tune)?;
        self.conn().execute(
            "UPDATE tune_session SET experiment_id = ?1 WHERE id = ?2",
            params![experiment, session],
        )?;
        Ok(())
    }

    /// Record a setting before it is written (state `pending`); returns its row id.
    pub fn tune_record(
        &mut self,
        session: i64,
        path: &str,
        original: &str,
        value: &str,
    ) -> anyhow::Result<i64> {
        self.require(crate::Operation::Tune)?;
        self.conn().execute(
            "INSERT INTO tune_setting (session_id, path, original, value, state, changed)
             VALUES (?1, ?2, ?3, ?4, 'pending', strftime('%Y-%m-%dT%H:%M:%SZ','now'))",
            params![session, path, original, value],
        )?;
        Ok(self.conn().last_insert_rowid())
    }

    /// Move a setting to `applied`, `failed` or `restored`.
    pub fn tune_set_state(&mut self, row: i64, state: &str) -> anyhow::Result<()> {
        self.require(crate::Operation::Tune)?;
        anyhow::ensure!(
            ["pending", "applied", "failed", "restored"].contains(&state),
            "internal: unknown tune state '{state}'"
        );
        let restored = (state == "restored").then_some(());
        self.conn().execute(
            "UPDATE tune_setting SET state = ?1,
                 restored = CASE WHEN ?2 IS NOT NULL THEN strftime('%Y-%m-%dT%H:%M:%SZ','now') END
             WHERE id = ?3",
            params![state, restored.map(|_| 1), row],
        )?;
        Ok(())
    }

    /// Outstanding (pending or applied) settings of one session, newest first.
    pub fn tune_session_outstanding(&self, session: i64) -> anyhow::Result<Vec<TuneRecord>> {
        Ok(self
            .tune_outstanding(None, None)?
            .into_iter()
            .filter(|r| r.session_id == session)
            .collect())
    }

    /// Settings not yet put back (pending or applied), newest first, so that restoring them in
    /// this order leaves each file with its oldest original. `source` and `experiment` filter.
    pub fn tune_outstanding(
        &self,
        source: Option<&str>,
        experiment: Option<i64>,
    ) -> anyhow::Result<Vec<TuneRecord>> {
        let mut stmt = self.conn().prepare(
            "SELECT t.id, t.session_id, s.source, s.experiment_id, t.path, t.original, t.value,
                    t.state, t.changed
             FROM tune_setting t JOIN tune_session s ON s.id = t.session_id
             WHERE t.state IN ('pending', 'applied')
               AND (?1 IS NULL OR s.source = ?1)
               AND (?2 IS NULL OR s.experiment_id = ?2)
             ORDER BY t.id DESC",
        )?;
        let rows = stmt.query_map(params![source, experiment], |r| {
            Ok(TuneRecord {
                id: r.get(0)?,
                session_id: r.get(1)?,
                source: r.get(2)?,
                experiment_id: r.get(3)?,
                path: r.get(4)?,
                original: r.get(5)?,
                value: r.get(6)?,
                state: r.get(7)?,
                changed: r.get(8)?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use abperf_model::tune::{SOURCE_FIX, SOURCE_RUN};

    #[test]
    fn record_apply_restore_cycle() {
        let d = tempfile::tempdir().unwrap();
        let mut s = Store::open(&d.path().join("t.db")).unwrap();
        assert!(s.tune_outstanding(None, None).unwrap().is_empty());
        let a = s.tune_session(SOURCE_FIX, None).unwrap();
        let r1 = s.tune_record(a, "/k1", "old1", "new1").unwrap();
        let r2 = s.tune_record(a, "/k2", "old2", "new2").unwrap();
        s.tune_set_state(r1, "applied").unwrap();
        s.tune_set_state(r2, "failed").unwrap();
        let b = s.tune_session(SOURCE_RUN, None).unwrap();
        s.tune_link(b, 7).unwrap();
        let r3 = s.tune_record(b, "/k1", "new1", "x").unwrap();
        let all = s.tune_outstanding(None, None).unwrap();
        assert_eq!(
            all.iter().map(|r| r.id).collect::<Vec<_>>(),
            vec![r3, r1],
            "newest first, failed left out"
        );
        let fix = s.tune_outstanding(Some(SOURCE_FIX), None).unwrap();
        assert_eq!(fix.len(), 1);
        assert_eq!(fix[0].original, "old1");
        let run = s.tune_outstanding(None, Some(7)).unwrap();
        assert_eq!(run[0].path, "/k1");
        s.tune_set_state(r1, "restored").unwrap();
        s.tune_set_state(r3, "restored").unwrap();
        assert!(s.tune_outstanding(None, None).unwrap().is_empty());
        assert!(s.tune_set_state(r1, "bogus").is_err());
    }
}
