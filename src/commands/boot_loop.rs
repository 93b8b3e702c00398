//! `abperf boot-loop status|stop|resume|unit`: the boot loop on this machine
//! (`abperf run --kernel ... --boot-on-host kexec|reboot`, `crate::boot_loop`): what it has done
//! and where it stands, ending it, the step its systemd unit runs at every boot, and that unit's
//! text.

use crate::boot_loop::design::{Loop, active_loop, loops, mark_ended};
use crate::boot_loop::machine::ThisBoot;
use crate::boot_loop::{mode, unit};
use crate::commands::DbArgs;
use crate::model::Status;
use crate::store::Store;

#[derive(Debug, clap::Args)]
pub struct BootLoopArgs {
    #[command(subcommand)]
    pub command: BootLoopCommand,
}

#[derive(Debug, clap::Subcommand)]
pub enum BootLoopCommand {
    /// Where the store's boot loop stands: its boots, runs, the boot under way, the unit
    Status(DbArgs),
    /// End the running loop: its unit removed, any loaded kernel unloaded (reboot mode: its
    /// entry files and one-shot entry removed), the experiment marked; the machine stays in the
    /// kernel it runs
    Stop(DbArgs),
    /// The step taken at every boot (the systemd unit runs it): run this boot's planned runs,
    /// then boot the next planned kernel, or end the loop
    Resume(DbArgs),
    /// Print the systemd unit the loop installs for this store
    Unit(DbArgs),
}

pub fn run(args: BootLoopArgs) -> anyhow::Result<i32> {
    match args.command {
        BootLoopCommand::Status(db) => status(&db),
        BootLoopCommand::Stop(db) => stop(&db),
        BootLoopCommand::Resume(db) => resume(&db),
        BootLoopCommand::Unit(db) => {
            let store = Store::open_to_write(&db.location()?)?;
            let id = active_loop(&store)?.map(|l| l.id);
            let exe = std::env::current_exe()?;
            let path = std::path::absolute(store.path())?;
            crate::error::stdout_line(unit::unit_text(&exe, &path, id).trim_end());
            Ok(0)
        }
    }
}

fn say(s: &str) {
    crate::error::stdout_line(s);
}

fn status(db: &DbArgs) -> anyhow::Result<i32> {
    let store = Store::open_to_read(&db.location()?)?;
    let unit = unit::installed().map(|(p, _)| p);
    let Some(lp) = loops(&store)?.into_iter().next() else {
        say(&format!(
            "no boot loop in {}{}",
            store.path().display(),
            match &unit {
                Some(p) => format!("; but {} is installed (another store's loop?)", p.display()),
                None => String::new(),
            }
        ));
        return Ok(0);
    };
    describe(&store, &lp)?;
    say(&format!(
        "unit: {}",
        match unit {
            Some(p) => format!("{} installed", p.display()),
            None => "none installed".into(),
        }
    ));
    Ok(0)
}

/// A loop's state in a few lines.
fn describe(store: &Store, lp: &Loop) -> anyhow::Result<()> {
    let boots = store.boots(lp.id)?;
    let done = store.done_seqs(lp.id)?.len();
    let complete = boots.iter().filter(|b| b.status == "complete").count();
    say(&format!(
        "experiment {}: boot loop ({}) {}",
        lp.id,
        lp.design.mode,
        match &lp.ended {
            Some(why) => format!("ended: {why}"),
            None if lp.active() => "running".into(),
            None => format!("{} without an end recorded", lp.status.as_str()),
        }
    ));
    say(&format!(
        "  {complete} of {} planned boots complete ({} boots made), {done} of {} runs stored",
        lp.plans.len(),
        boots.len(),
        lp.schedule.len()
    ));
    say(&format!(
        "  default kernel: {} ({})",
        lp.design.home_release, lp.design.home_cmdline
    ));
    if let Some(r) = &lp.design.reboot {
        describe_reboot(lp.id, r);
    }
    for b in boots
        .iter()
        .filter(|b| b.status == "starting" || b.status == "running")
    {
        say(&format!(
            "  boot {} (planned boot {}, '{}'): {} {}",
            b.number,
            b.plan + 1,
            lp.variants[b.variant].name,
            b.status,
            b.environment[lp.design.key()]["cmdline"]
                .as_str()
                .unwrap_or("")
        ));
    }
    for b in boots
        .iter()
        .filter(|b| b.status == "lost" || b.status == "failed")
    {
        say(&format!(
            "  boot {} {}: {}",
            b.number,
            b.status,
            b.outcome.as_deref().unwrap_or("")
        ));
    }
    Ok(())
}

/// Reboot mode: the loader, where abperf's entries are, and the one-shot set now.
fn describe_reboot(id: i64, r: &crate::boot_loop::bli::RebootDesign) {
    use crate::boot_loop::{bli, efivar::Efivars};
    let mut roots: Vec<&str> = r.files.values().map(|f| f.root.as_str()).collect();
    roots.sort();
    roots.dedup();
    let entries: Vec<String> = roots
        .iter()
        .map(|root| format!("{root}/loader/entries/abperf-{id}-v*.conf"))
        .collect();
    say(&format!(
        "  boot loader: {}; abperf's entries: {}; one-shot now: {}",
        r.loader,
        entries.join(", "),
        Efivars::system()
            .read_string(bli::ONESHOT)
            .unwrap_or_else(|| "none".into())
    ));
}

fn stop(db: &DbArgs) -> anyhow::Result<i32> {
    let mut store = Store::open_to_write(&db.location()?)?;
    let removed = remove_unit_of(&store)?;
    // The newest loop's boot-loader state goes whether or not it still runs (a stop after a
    // crash of abperf between writing an entry and ending the loop leaves nothing behind).
    let newest = loops(&store)?.into_iter().next();
    let cleaned = newest.as_ref().map_or(Ok(()), mode::clean_up);
    let Some(lp) = newest.filter(Loop::active) else {
        say(&format!(
            "no boot loop running in {}{}",
            store.path().display(),
            if removed { "; its unit is removed" } else { "" }
        ));
        return cleaned.map(|()| 0);
    };
    mark_ended(&mut store, lp.id, "stopped by `abperf boot-loop stop`")?;
    for b in store.boots(lp.id)? {
        if (b.status == "starting" || b.status == "running")
            && let Some(row) = store.boot_id(lp.id, b.number)?
        {
            let why = "the loop was stopped (abperf boot-loop stop)";
            store.end_boot(row, "interrupted", why, None, None, b.extra_warmups)?;
        }
    }
    store.set_status(lp.id, Status::Interrupted)?;
    cleaned?;
    let now = ThisBoot::read()?;
    say(&format!(
        "experiment {}: boot loop stopped ({}); every run made so far is stored",
        lp.id,
        match lp.design.reboot {
            None => "unit removed, no kernel loaded",
            Some(_) => "unit removed, its boot-loader entries and one-shot removed",
        }
    ));
    if now.release != lp.design.home_release {
        say(&format!(
            "this machine runs {}, not its default kernel {}: reboot to return to it",
            now.release, lp.design.home_release
        ));
    }
    Ok(0)
}

/// Remove the installed unit if it continues a loop of this store; returns whether it did.
fn remove_unit_of(store: &Store) -> anyhow::Result<bool> {
    let path = std::path::absolute(store.path())?;
    match unit::installed() {
        Some((_, text)) if unit::is_for_store(&text, &path) => {
            unit::remove()?;
            Ok(true)
        }
        _ => Ok(false),
    }
}

fn resume(db: &DbArgs) -> anyhow::Result<i32> {
    let mut store = Store::open_to_write(&db.location()?)?;
    match active_loop(&store)? {
        Some(lp) => super::run::boot_loop::continue_loop(&mut store, lp.id),
        None => {
            crate::error::stderr_line(&format!(
                "abperf: no boot loop is running in {}; nothing to do",
                store.path().display()
            ));
            // A unit without a loop would run at every boot for nothing.
            if remove_unit_of(&store)? {
                crate::error::stderr_line("abperf: its leftover systemd unit is removed");
            }
            Ok(0)
        }
    }
}
