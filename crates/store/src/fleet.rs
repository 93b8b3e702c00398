//! The hosts of a fleet experiment (`abperf fleet run`): which host owns which slots of the
//! schedule (a contiguous range of seqs per host), and what each host's abperf reported of its
//! machine (its hello). Migration 15.

use super::Store;
use anyhow::Context;
use rusqlite::params;

/// One host of a fleet experiment and its slots.
#[derive(Debug, Clone, PartialEq)]
pub struct FleetHost {
    pub name: String,
    pub first_seq: u32,
    pub end_seq: u32,
    pub abperf: Option<String>,
    pub environment: Option<serde_json::Value>,
}

impl FleetHost {
    pub fn owns(&self, seq: u32) -> bool {
        (self.first_seq..self.end_seq).contains(&seq)
    }
}

impl Store {
    /// Record the hosts of fleet experiment `id` (in plan order), all or none.
    pub fn set_fleet_hosts(&mut self, id: i64, hosts: &[FleetHost]) -> anyhow::Result<()> {
        let tx = self.write_tx()?;
        for (pos, h) in hosts.iter().enumerate() {
            tx.execute(
                "INSERT INTO fleet_host (experiment_id, pos, name, first_seq, end_seq) \
                 VALUES (?1, ?2, ?3, ?4, ?5)",
                params![id, pos as i64, h.name, h.first_seq, h.end_seq],
            )?;
        }
        tx.commit()?;
        self.mirror_added(id, "fleet_host", "experiment_id = ?1", "pos")
    }

    /// The hosts of experiment `id` in plan order (none: not a fleet experiment).
    pub fn fleet_hosts(&self, id: i64) -> anyhow::Result<Vec<FleetHost>> {
        self.fill(id)?;
        let mut stmt = self.conn().prepare(
            "SELECT name, first_seq, end_seq, abperf, environment FROM fleet_host \
             WHERE experiment_id = ?1 ORDER BY pos",
        )?;
        let rows = stmt.query_map([id], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, u32>(1)?,
                r.get::<_, u32>(2)?,
                r.get::<_, Option<String>>(3)?,
                r.get::<_, Option<String>>(4)?,
            ))
        })?;
        let mut hosts = Vec::new();
        for row in rows {
            let (name, first_seq, end_seq, abperf, env) = row?;
            let environment = env
                .map(|e| serde_json::from_str(&e))
                .transpose()
                .with_context(|| format!("stored environment of fleet host {name}"))?;
            hosts.push(FleetHost {
                name,
                first_seq,
                end_seq,
                abperf,
                environment,
            });
        }
        Ok(hosts)
    }

    /// Keep what host `name` of experiment `id` said of itself in its hello.
    pub fn set_fleet_host_hello(
        &mut self,
        id: i64,
        name: &str,
        abperf: &str,
        environment: &serde_json::Value,
    ) -> anyhow::Result<()> {
        let n = self.conn().execute(
            "UPDATE fleet_host SET abperf = ?1, environment = ?2 \
             WHERE experiment_id = ?3 AND name = ?4",
            params![abperf, environment.to_string(), id, name],
        )?;
        if n == 0 {
            anyhow::bail!("experiment {id} has no fleet host {name}");
        }
        let key = ["experiment_id", "pos"];
        self.mirror_by("fleet_host", "experiment_id = ?1", id, &key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use abperf_model::{Kind, NewExperiment, Slot, Variant};

    #[test]
    fn hosts_round_trip_with_their_hello() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("f.db")).unwrap();
        let exp = NewExperiment {
            name: "f".into(),
            kind: Kind::Run,
            command_line: vec![],
            design: serde_json::json!({}),
            seed: Some(1),
            environment: serde_json::json!({}),
        };
        let slots: Vec<Slot> = (0..4)
            .map(|seq| Slot {
                seq,
                variant: 0,
                warmup: false,
                block: 0,
            })
            .collect();
        let id = store
            .create_experiment(&exp, &[Variant::named("a")], &slots)
            .unwrap();
        let hosts = vec![
            FleetHost {
                name: "a".into(),
                first_seq: 0,
                end_seq: 2,
                abperf: None,
                environment: None,
            },
            FleetHost {
                name: "b".into(),
                first_seq: 2,
                end_seq: 4,
                abperf: None,
                environment: None,
            },
        ];
        store.set_fleet_hosts(id, &hosts).unwrap();
        assert_eq!(store.fleet_hosts(id).unwrap(), hosts);
        let env = serde_json::json!({"cpu": "x"});
        store.set_fleet_host_hello(id, "b", "1.0", &env).unwrap();
        let got = store.fleet_hosts(id).unwrap();
        assert_eq!(got[1].environment.as_ref(), Some(&env));
        assert!(got[1].owns(3) && !got[1].owns(1));
        assert!(store.set_fleet_host_hello(id, "c", "1.0", &env).is_err());
    }
}
