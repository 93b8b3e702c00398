//! A fleet host's share of the experiment, and the host side that runs it:
//! `abperf run --fleet-share FILE --lines OUT` runs the share's slots exactly as a VM guest runs
//! its boot's (`runner::guest::run_slots_into`) and appends every line to OUT, flushed to disk
//! (fsync) before the next run starts ([`LinesFile`]), so a host that goes away keeps every
//! finished run for the coordinator to fetch later; when the share names the fleet's store, each
//! run is committed there too the moment it ends (`shared_store`). Slots whose runs OUT already
//! holds (an earlier dispatch that was cut off) are not run again.

use super::lines_file::LinesFile;
use crate::runner::experiment::RunConfig;
use crate::runner::guest::{LineSink, ShareVariant, Slots, end_line, run_slots_into};
use abperf_model::Slot;
use anyhow::Context;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// What one host runs in one dispatch.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FleetShare {
    pub experiment: i64,
    /// The host's name in the inventory, and its place in the plan.
    pub host: String,
    pub place: usize,
    pub variants: Vec<ShareVariant>,
    pub cfg: RunConfig,
    /// `--strict`: an event the host cannot count is an error.
    pub strict: bool,
    /// The store the host commits each finished run into itself, the moment it ends
    /// (`Store::location_for_hosts`: a PostgreSQL store); None: only the lines file.
    #[serde(default)]
    pub store: Option<abperf_store::Location>,
    /// The slots still to run, in schedule order (seqs of the whole experiment).
    pub slots: Vec<Slot>,
}

/// `abperf run --fleet-share FILE --lines OUT` on a fleet host: run the share's slots that OUT
/// does not hold yet (the share file is removed once read when it names a store), append a line
/// per finished run (and commit it into the share's store, if
/// it names one: `shared_store`), end with an end line. Exit status as
/// a guest's (`runner::guest::end_line`).
pub fn run(share: &Path, lines: &Path) -> anyhow::Result<i32> {
    let share_path = share;
    let text = std::fs::read_to_string(share)
        .with_context(|| format!("cannot read the share {}", share.display()))?;
    let share: FleetShare = serde_json::from_str(&text)
        .with_context(|| format!("{}: not a fleet share of this abperf", share.display()))?;
    if share.store.is_some() {
        // It names the store, perhaps with a password: read, it is not left on the host (the
        // playbook removes it too, but a dispatch stopped by a signal may not get that far).
        let _ = std::fs::remove_file(share_path);
    }
    let (lines, done) = LinesFile::open(lines)?;
    let mut out = super::shared_store::Committing::new(
        lines,
        share.store.as_ref(),
        share.experiment,
        &share.host,
        &share.slots,
    );
    let slots = Slots {
        variants: &share.variants,
        cfg: &share.cfg,
        strict: share.strict,
        slots: &share.slots,
        done,
    };
    let result = run_slots_into(&slots, &mut out);
    let (end, code) = end_line(&result);
    out.send_line(&end)?;
    Ok(code)
}
