//! What each kernel variant's kernel was made from (issue 41, migration 18:
//! `kernel_provenance`), one row per variant: [`KernelProvenance`]. Written with a kernel
//! experiment (on SQLite, as its boots are; a copy takes it to PostgreSQL), read back with the
//! variants (`Store::variants`). Rows are untrusted: every field is bounded and the hashes
//! checked ([`KernelProvenance::check`]), an error names the experiment, variant and field.

use super::Store;
pub use abperf_model::provenance::{KernelProvenance, PatchRef};
use anyhow::{Context, bail};
use rusqlite::{Connection, OptionalExtension, params};

/// The columns read, in [`from_row`]'s order.
const COLUMNS: &str = "p.revision, p.tree_id, p.patches, p.config_sha256, p.config, p.compiler, \
                       p.image_sha256, p.modules_sha256";

/// Largest patch list accepted from a row, as JSON text.
const MAX_PATCHES_JSON: usize = 32 << 20;

/// A row's record, checked.
fn from_row(r: &rusqlite::Row, at: usize) -> anyhow::Result<KernelProvenance> {
    let patches: String = r.get(at + 2)?;
    if patches.len() > MAX_PATCHES_JSON {
        bail!("patches is {} bytes", patches.len());
    }
    let p = KernelProvenance {
        revision: r.get(at)?,
        tree_id: r.get(at + 1)?,
        patches: serde_json::from_str(&patches)
            .context("patches is not a JSON array of {subject, id}")?,
        config_sha256: r.get(at + 3)?,
        config: r.get(at + 4)?,
        compiler: r.get(at + 5)?,
        image_sha256: r.get(at + 6)?,
        modules_sha256: r.get(at + 7)?,
    };
    p.check().map_err(anyhow::Error::msg)?;
    Ok(p)
}

/// Fill the provenance of experiment `id`'s `variants` (in position order) from its rows.
pub(super) fn fill_variants(
    conn: &Connection,
    id: i64,
    variants: &mut [abperf_model::Variant],
) -> anyhow::Result<()> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT v.position, {COLUMNS} FROM kernel_provenance p
         JOIN variant v ON v.id = p.variant_id WHERE v.experiment_id = ?1 ORDER BY v.position"
    ))?;
    let mut rows = stmt.query([id])?;
    while let Some(r) = rows.next()? {
        let pos: i64 = r.get(0)?;
        let at = || format!("experiment {id}, kernel provenance of variant {}", pos + 1);
        let p = from_row(r, 1).with_context(at)?;
        let v = usize::try_from(pos)
            .ok()
            .and_then(|p| variants.get_mut(p))
            .with_context(at)?;
        v.provenance = Some(p);
    }
    Ok(())
}

/// Store (or replace) `p` as the provenance of variant row `vid`, checked first.
pub(super) fn insert(conn: &Connection, vid: i64, p: &KernelProvenance) -> anyhow::Result<()> {
    p.check().map_err(anyhow::Error::msg)?;
    conn.prepare_cached(
        "INSERT OR REPLACE INTO kernel_provenance (variant_id, revision, tree_id, patches,
         config_sha256, config, compiler, image_sha256, modules_sha256)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    )?
    .execute(params![
        vid,
        p.revision,
        p.tree_id,
        serde_json::to_string(&p.patches)?,
        p.config_sha256,
        p.config,
        p.compiler,
        p.image_sha256,
        p.modules_sha256
    ])?;
    Ok(())
}

impl Store {
    /// Store (or replace) the provenance of variant `position` of experiment `id` (a variant
    /// whose `provenance` is set when its experiment is created gets its row then).
    pub fn put_kernel_provenance(
        &mut self,
        id: i64,
        position: usize,
        p: &KernelProvenance,
    ) -> anyhow::Result<()> {
        self.require(crate::Operation::Boots)?;
        let tx = self.write_tx()?;
        let vid: i64 = tx
            .query_row(
                "SELECT id FROM variant WHERE experiment_id = ?1 AND position = ?2",
                params![id, position as i64],
                |r| r.get(0),
            )
            .with_context(|| format!("experiment {id} has no variant {}", position + 1))?;
        insert(&tx, vid, p)
            .with_context(|| format!("kernel provenance of variant {}", position + 1))?;
        tx.commit()?;
        Ok(())
    }

    /// The provenance of variant `position` of experiment `id` (None: none stored).
    pub fn kernel_provenance(
        &self,
        id: i64,
        position: usize,
    ) -> anyhow::Result<Option<KernelProvenance>> {
        self.fill_but_runs(id)?;
        let at = || {
            format!(
                "experiment {id}, kernel provenance of variant {}",
                position + 1
            )
        };
        self.conn()
            .query_row(
                &format!(
                    "SELECT {COLUMNS} FROM kernel_provenance p JOIN variant v ON v.id = p.variant_id
                     WHERE v.experiment_id = ?1 AND v.position = ?2"
                ),
                params![id, position as i64],
                |r| Ok(from_row(r, 0)),
            )
            .optional()?
            .transpose()
            .with_context(at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use abperf_model::{Kind, NewExperiment, Variant};

    const H: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    fn experiment(st: &mut Store) -> i64 {
        crate::test_fixtures::two_variant_experiment(st, "k")
    }

    fn built() -> KernelProvenance {
        KernelProvenance {
            revision: Some("a".repeat(40)),
            tree_id: Some("b".repeat(40)),
            patches: vec![PatchRef {
                subject: "x86/mm: ceiling 33".into(),
                id: "c".repeat(40),
            }],
            config_sha256: Some(H.into()),
            config: Some("CONFIG_X86=y\n".into()),
            compiler: Some("gcc (Debian 12.2.0-14) 12.2.0".into()),
            image_sha256: H.into(),
            modules_sha256: None,
        }
    }

    #[test]
    fn provenance_round_trips_with_the_variants_and_goes_with_its_experiment() {
        let dir = tempfile::tempdir().unwrap();
        let mut st = Store::open(&dir.path().join("k.db")).unwrap();
        let id = experiment(&mut st);
        assert_eq!(st.kernel_provenance(id, 1).unwrap(), None);
        st.put_kernel_provenance(id, 1, &built()).unwrap();
        assert_eq!(st.kernel_provenance(id, 1).unwrap(), Some(built()));
        let vs = st.variants(id).unwrap();
        assert_eq!(vs[0].provenance, None);
        assert_eq!(vs[1].provenance, Some(built()));
        // Replaced, not doubled.
        let only = KernelProvenance::of_image(H.into(), Some(H.into()));
        st.put_kernel_provenance(id, 1, &only).unwrap();
        assert_eq!(st.kernel_provenance(id, 1).unwrap(), Some(only));
        assert!(st.put_kernel_provenance(id, 5, &built()).is_err());
        let bad = KernelProvenance::of_image("x".into(), None);
        assert!(st.put_kernel_provenance(id, 0, &bad).is_err());
        st.delete(id).unwrap();
        let n: i64 = st
            .conn()
            .query_row("SELECT count(*) FROM kernel_provenance", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 0);
    }

    #[test]
    fn a_variant_made_with_its_provenance_stores_it() {
        let dir = tempfile::tempdir().unwrap();
        let mut st = Store::open(&dir.path().join("k.db")).unwrap();
        let exp = NewExperiment {
            name: "k".into(),
            kind: Kind::Run,
            command_line: vec!["abperf".into()],
            design: serde_json::json!({}),
            seed: Some(1),
            environment: serde_json::json!({}),
        };
        let v = Variant {
            provenance: Some(built()),
            ..Variant::named("a")
        };
        let id = st.create_experiment(&exp, &[v], &[]).unwrap();
        assert_eq!(st.variants(id).unwrap()[0].provenance, Some(built()));
    }

    #[test]
    fn a_tampered_row_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let mut st = Store::open(&dir.path().join("k.db")).unwrap();
        let id = experiment(&mut st);
        st.put_kernel_provenance(id, 0, &built()).unwrap();
        for (col, bad) in [
            ("image_sha256", "--output=/etc/passwd"),
            ("patches", "{\"subject\": 1}"),
            ("compiler", &"x".repeat(5000)),
        ] {
            st.conn()
                .execute(&format!("UPDATE kernel_provenance SET {col} = ?1"), [bad])
                .unwrap();
            let e = format!("{:#}", st.variants(id).unwrap_err());
            assert!(
                e.contains(&format!("experiment {id}, kernel provenance of variant 1")),
                "{e}"
            );
            st.put_kernel_provenance(id, 0, &built()).unwrap();
        }
    }
}
