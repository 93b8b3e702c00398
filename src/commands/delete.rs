//! `abperf delete ID`: remove an experiment and everything measured in it; refused while another
//! live process is running it, unless `--force`.

use crate::commands::DbArgs;
use crate::model::Liveness;
use crate::store::Store;

#[derive(Debug, clap::Args)]
pub struct DeleteArgs {
    /// Experiment id, or `latest`
    pub id: String,
    /// Delete it even while another process is running it (that process is not stopped: its
    /// next commit fails, and what it measured from then on is lost)
    #[arg(long)]
    pub force: bool,
    #[command(flatten)]
    pub db: DbArgs,
}

pub fn run(args: DeleteArgs) -> anyhow::Result<i32> {
    // On a PostgreSQL store: every experiment's row read into a working copy (for `latest` and
    // the name), the check and the delete made on the server in one transaction.
    let mut store = Store::open_to_take_over(&args.db.location()?)?;
    let id = super::lookup::experiment_id(&store, &args.id)?;
    let name = store.experiment(id)?.name;
    let force = args.force;
    let alive = |o: &crate::model::Owner| {
        !force && !matches!(crate::measure::process::liveness(o), Liveness::Dead(_))
    };
    if let Err(o) = store.delete_unless_running(id, &alive)? {
        let how = match crate::measure::process::liveness(&o) {
            Liveness::Unknown(why) => format!("it may still be running ({why})"),
            _ => format!(
                "it is still running in pid {} on {}; stop it first (kill -INT {})",
                o.pid, o.host, o.pid
            ),
        };
        return Err(anyhow::anyhow!(
            "experiment {id} ({}) not deleted: {how}, or delete it anyway with --force (which \
             does not stop that process)",
            crate::model::escape::control(&name)
        ));
    }
    crate::error::stdout_line(&format!(
        "deleted experiment {id} ({})",
        crate::model::escape::control(&name)
    ));
    Ok(0)
}
