//! The experiment's environment snapshot completed after its runs: the findings sampled while
//! they ran (other processes' CPU use, load, pressure, steal) are added at the end.

use super::Store;
use rusqlite::{OptionalExtension, params};

impl Store {
    /// Set the top-level keys of `patch` in experiment `id`'s stored environment (an object key
    /// holding an object is merged one level down: `doctor.load_average` is added to `doctor`).
    pub fn merge_environment(&mut self, id: i64, patch: &serde_json::Value) -> anyhow::Result<()> {
        let text: Option<String> = self
            .conn()
            .query_row(
                "SELECT environment FROM experiment WHERE id = ?1",
                params![id],
                |r| r.get(0),
            )
            .optional()?;
        let Some(text) = text else {
            anyhow::bail!("no experiment {id}");
        };
        let mut env: serde_json::Value = serde_json::from_str(&text)?;
        if let (Some(env), Some(patch)) = (env.as_object_mut(), patch.as_object()) {
            for (k, v) in patch {
                match (env.get_mut(k), v) {
                    (Some(serde_json::Value::Object(old)), serde_json::Value::Object(new)) => {
                        old.extend(new.clone());
                    }
                    _ => {
                        env.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        // Synced by the status update that follows at the experiment's end.
        self.pace_sync(false)?;
        self.conn().execute(
            "UPDATE experiment SET environment = ?1 WHERE id = ?2",
            params![serde_json::to_string(&env)?, id],
        )?;
        self.mirror("experiment", "id = ?1", id)
    }
}
