//! Profiled runs (issue 44, migration 16: `profile`): one row per run sampled under
//! `perf record`, with its symbols' shares as a JSON array of `[symbol, self, inclusive]`
//! (docs/profile.md). Written on SQLite; read from either backend (a PostgreSQL experiment is
//! first filled into the local copy, as every read is).

use super::Store;
use abperf_model::Variant;
use abperf_model::profile::{Profile, ProfiledRun, Stacks, SymbolShare};
use anyhow::{Context, bail};
use rusqlite::{OptionalExtension, params};

/// The stored symbols of `p`: `[[symbol, self, inclusive], ...]`.
fn symbols_json(p: &Profile) -> String {
    let rows: Vec<(&str, f64, f64)> = p
        .symbols
        .iter()
        .map(|s| (s.symbol.as_str(), s.self_share, s.inclusive_share))
        .collect();
    serde_json::to_string(&rows).expect("serialising plain data cannot fail")
}

/// A share read back: a finite fraction of samples.
fn share(x: f64, what: &str) -> anyhow::Result<f64> {
    if !(0.0..=1.0).contains(&x) {
        bail!("{what} is {x}, not a share of samples in 0..=1");
    }
    Ok(x)
}

/// The symbols stored as `text` (untrusted: every field checked).
fn parse_symbols(text: &str) -> anyhow::Result<Vec<SymbolShare>> {
    let rows: Vec<(String, f64, f64)> = serde_json::from_str(text)
        .context("symbols are not a JSON array of [name, self, inclusive]")?;
    rows.into_iter()
        .map(|(symbol, s, i)| {
            Ok(SymbolShare {
                self_share: share(s, &format!("{symbol}'s self share"))?,
                inclusive_share: share(i, &format!("{symbol}'s inclusive share"))?,
                symbol,
            })
        })
        .collect()
}

/// The stored stacks of `run` (NULL when it has none).
fn stacks_json(run: &ProfiledRun) -> Option<String> {
    run.stacks
        .as_ref()
        .map(|s| serde_json::to_string(s).expect("serialising plain data cannot fail"))
}

/// The stacks stored as `text` (untrusted: parsed into counts >= 0, then bounded and checked
/// against the run's `samples`).
fn parse_stacks(text: &str, samples: u64) -> anyhow::Result<Stacks> {
    let s: Stacks = serde_json::from_str(text).context(
        "stacks are not a JSON object {\"stacks\": [[stack, samples >= 0], ...], \"other\": samples}",
    )?;
    s.check(samples)
        .map_err(|e| anyhow::anyhow!("stacks: {e}"))?;
    Ok(s)
}

/// Insert profiled run `run` of experiment `id` as variant row `vid` at `seq`.
fn insert_profile(
    tx: &rusqlite::Transaction,
    id: i64,
    vid: i64,
    seq: i64,
    run: &ProfiledRun,
) -> anyhow::Result<()> {
    let p = &run.profile;
    tx.execute(
        "INSERT INTO profile (experiment_id, variant_id, seq, event, samples, wall_ns, other_self, symbols, stacks)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        params![
            id,
            vid,
            seq,
            p.event,
            p.samples as i64,
            run.wall_ns,
            p.other_self,
            symbols_json(p),
            stacks_json(run)
        ],
    )?;
    Ok(())
}

impl Store {
    /// Store profiled run `seq` of variant `variant` (by position) of experiment `id`.
    pub fn save_profile(&mut self, id: i64, run: &ProfiledRun) -> anyhow::Result<()> {
        self.require(crate::Operation::Profile)?;
        let tx = self.write_tx()?;
        let vid: i64 = tx
            .query_row(
                "SELECT id FROM variant WHERE experiment_id = ?1 AND position = ?2",
                params![id, run.variant as i64],
                |r| r.get(0),
            )
            .with_context(|| format!("experiment {id} has no variant {}", run.variant))?;
        insert_profile(&tx, id, vid, i64::from(run.seq), run)?;
        tx.commit()?;
        Ok(())
    }

    /// Profiled runs read from someone else's recordings (`abperf import --format
    /// perf-script`), into a new experiment or an existing one, in one transaction: the
    /// variants matched by name (new ones added, as `import` adds them), each run's `variant`
    /// indexing `variants`, numbered after the experiment's profiled runs in the given order.
    /// Every run must sample the event the experiment's profiled runs sampled.
    pub fn import_profiles(
        &mut self,
        target: &crate::ImportTarget,
        variants: &[Variant],
        runs: &[ProfiledRun],
    ) -> anyhow::Result<crate::ImportOutcome> {
        self.require(crate::Operation::Profile)?;
        let tx = self.write_tx()?;
        let out = crate::import::import_in(&tx, target, variants, &[])?;
        let id = out.experiment_id;
        let event: Option<String> = tx
            .query_row(
                "SELECT event FROM profile WHERE experiment_id = ?1 LIMIT 1",
                [id],
                |r| r.get(0),
            )
            .optional()?;
        if let (Some(e), Some(r)) = (event, runs.first())
            && e != r.profile.event
        {
            bail!(
                "experiment {id}'s profiled runs sampled {e}; these sampled {} (shares of different \
                 events are not compared)",
                r.profile.event
            );
        }
        let first: i64 = tx.query_row(
            "SELECT coalesce(max(seq) + 1, 0) FROM profile WHERE experiment_id = ?1",
            [id],
            |r| r.get(0),
        )?;
        for (i, run) in runs.iter().enumerate() {
            let name = &variants[run.variant].name;
            let vid: i64 = tx.query_row(
                "SELECT id FROM variant WHERE experiment_id = ?1 AND name = ?2",
                params![id, name],
                |r| r.get(0),
            )?;
            insert_profile(&tx, id, vid, first + i as i64, run)?;
        }
        tx.commit()?;
        Ok(out)
    }

    /// The profiled runs of experiment `id` in the order they ran (empty when it has none).
    pub fn profiles(&self, id: i64) -> anyhow::Result<Vec<ProfiledRun>> {
        self.fill_but_runs(id)?;
        let mut stmt = self.conn().prepare(
            "SELECT v.position, p.seq, p.wall_ns, p.event, p.samples, p.other_self, p.symbols,
                    p.stacks
             FROM profile p JOIN variant v ON v.id = p.variant_id
             WHERE p.experiment_id = ?1 ORDER BY p.seq",
        )?;
        let rows = stmt.query_map([id], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, i64>(2)?,
                r.get::<_, String>(3)?,
                r.get::<_, i64>(4)?,
                r.get::<_, f64>(5)?,
                r.get::<_, String>(6)?,
                r.get::<_, Option<String>>(7)?,
            ))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (variant, seq, wall_ns, event, samples, other, symbols, stacks) = row?;
            let at = || format!("experiment {id}, profiled run {seq}");
            let symbols = parse_symbols(&symbols).with_context(at)?;
            let samples = u64::try_from(samples).with_context(at)?;
            let stacks = stacks
                .map(|s| parse_stacks(&s, samples))
                .transpose()
                .with_context(at)?;
            out.push(ProfiledRun {
                variant: usize::try_from(variant).with_context(at)?,
                seq: u32::try_from(seq).with_context(at)?,
                wall_ns,
                profile: Profile {
                    event,
                    samples,
                    symbols,
                    other_self: share(other, "the other symbols' self share").with_context(at)?,
                },
                stacks,
            });
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use abperf_model::Variant;
    use abperf_model::profile::Counts;

    fn experiment(st: &mut Store) -> i64 {
        crate::test_fixtures::two_variant_experiment(st, "p")
    }

    fn run(seq: u32) -> ProfiledRun {
        let mut c = Counts::default();
        c.add_stack(["hot", "main"]);
        c.add_stack(["cold\u{1b}", "main"]);
        c.add_stack(["rare", "main"]);
        ProfiledRun {
            variant: 1,
            seq,
            wall_ns: 123,
            profile: c.profile("cpu-clock", 1),
            stacks: Some(c.stacks(2)),
        }
    }

    #[test]
    fn profiles_round_trip_and_go_with_their_experiment() {
        let dir = tempfile::tempdir().unwrap();
        let mut st = Store::open(&dir.path().join("p.db")).unwrap();
        let id = experiment(&mut st);
        assert!(st.profiles(id).unwrap().is_empty());
        st.save_profile(id, &run(0)).unwrap();
        st.save_profile(id, &run(1)).unwrap();
        let got = st.profiles(id).unwrap();
        assert_eq!(got, vec![run(0), run(1)]);
        assert!(got[0].profile.other_self > 0.0);
        // The same place twice, or a variant the experiment lacks, is refused.
        assert!(st.save_profile(id, &run(1)).is_err());
        let bad = ProfiledRun {
            variant: 5,
            ..run(2)
        };
        assert!(st.save_profile(id, &bad).is_err());
        st.delete(id).unwrap();
        assert!(st.profiles(id).unwrap().is_empty());
    }

    #[test]
    fn imported_profiles_follow_the_stored_ones_and_keep_their_event() {
        let dir = tempfile::tempdir().unwrap();
        let mut st = Store::open(&dir.path().join("p.db")).unwrap();
        let id = experiment(&mut st);
        st.save_profile(id, &run(4)).unwrap();
        let target = crate::ImportTarget::Existing(id);
        let variants = [Variant::named("b"), Variant::named("c")];
        let mut r = run(0);
        r.variant = 0;
        let mut r2 = run(0);
        r2.variant = 1;
        let out = st
            .import_profiles(&target, &variants, &[r.clone(), r2])
            .unwrap();
        assert_eq!(out.new_variants, ["c"]);
        let got = st.profiles(id).unwrap();
        let seqs: Vec<(u32, usize)> = got.iter().map(|p| (p.seq, p.variant)).collect();
        assert_eq!(seqs, [(4, 1), (5, 1), (6, 2)]);
        r.profile.event = "cycles".into();
        let e = st.import_profiles(&target, &variants, &[r]).unwrap_err();
        assert!(
            format!("{e:#}").contains("sampled cpu-clock; these sampled cycles"),
            "{e:#}"
        );
        assert_eq!(st.profiles(id).unwrap().len(), 3);
    }

    #[test]
    fn a_tampered_row_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let mut st = Store::open(&dir.path().join("p.db")).unwrap();
        let id = experiment(&mut st);
        st.save_profile(id, &run(0)).unwrap();
        for bad in ["[[\"x\", 2.0, 0.5]]", "{\"x\": 1}", "[[\"x\", 0.1]]"] {
            st.conn()
                .execute("UPDATE profile SET symbols = ?1", [bad])
                .unwrap();
            let e = format!("{:#}", st.profiles(id).unwrap_err());
            assert!(
                e.contains(&format!("experiment {id}, profiled run 0")),
                "{e}"
            );
        }
    }

    #[test]
    fn tampered_stacks_are_an_error_naming_run_and_field() {
        let dir = tempfile::tempdir().unwrap();
        let mut st = Store::open(&dir.path().join("p.db")).unwrap();
        let id = experiment(&mut st);
        let mut old = run(0);
        old.stacks = None;
        st.save_profile(id, &old).unwrap();
        st.save_profile(id, &run(1)).unwrap();
        let got = st.profiles(id).unwrap();
        assert_eq!(got[0].stacks, None, "a run stored without stacks has none");
        assert_eq!(got[1].stacks.as_ref().unwrap().other, 1);
        let deep = format!("[[\"{}\", 1]]", vec!["f"; 600].join(";"));
        for (bad, want) in [
            (
                "{\"stacks\": [[\"main;hot\", -1]], \"other\": 0}",
                "not a JSON object",
            ),
            (
                "{\"stacks\": [[\"main;hot\", 9]], \"other\": 0}",
                "more than the run's 3",
            ),
            (
                &format!("{{\"stacks\": {deep}, \"other\": 0}}")[..],
                "600 frames",
            ),
            ("[1, 2]", "not a JSON object"),
        ] {
            st.conn()
                .execute("UPDATE profile SET stacks = ?1 WHERE seq = 1", [bad])
                .unwrap();
            let e = format!("{:#}", st.profiles(id).unwrap_err());
            assert!(
                e.contains(&format!("experiment {id}, profiled run 1")) && e.contains(want),
                "{e}"
            );
        }
    }
}
