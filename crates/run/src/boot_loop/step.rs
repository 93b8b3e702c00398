//! One step of the loop, taken at every boot (and once when it starts): settle the boot that was
//! under way (this one, if it is the planned kernel and command line; else lost or wrong), run
//! this boot's share of the schedule exactly as a VM guest does (`runner::guest::run_share_into`,
//! committing every run the moment it ends), then arm the next planned boot (`kexec -l`, or its
//! one-shot boot-loader entry: [`mode::arm`]).
//! Starting it, concluding the experiment and going home are the caller's.

use super::design::{HOST_ACCEL, Loop, mark_ended};
use super::machine::{ThisBoot, is_planned_cmdline};
use super::mode;
use crate::runner::boots::{Boots, Clock, share_of, share_slots, take_run};
use crate::runner::experiment::{Ending, Progress};
use crate::runner::guest::{Line, LineSink, run_share_into};
use abperf_model::{Boot, BootPlan, Slot};
use abperf_store::Store;
use anyhow::Context;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

/// What the machine does next.
#[derive(Debug, Clone, PartialEq)]
pub enum Next {
    /// The next planned boot is armed (loaded for kexec, or its one-shot entry set; its row
    /// `starting`): start it.
    Boot {
        boot_id: i64,
        release: String,
        cmdline: String,
    },
    /// Every planned run is stored.
    Complete,
    /// The loop ended early, for this reason (stored with the experiment).
    Ended(String),
    /// This boot's runs were stopped by a signal (the machine is shutting down?): the loop
    /// goes on at the next boot.
    Interrupted(i32),
}

/// Seconds since the epoch (the kexec's or reboot's time, compared across boots of one machine).
fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// Take the loop's step in this boot.
pub fn at_boot(
    store: &mut Store,
    lp: &Loop,
    now: &ThisBoot,
    progress: &mut dyn Progress,
) -> anyhow::Result<Next> {
    if let Some(next) = settle_pending(store, lp, now, progress)? {
        return Ok(next);
    }
    next_boot(store, lp, now, progress)
}

/// End the loop for `why`: stored with the experiment, returned as the next step.
fn end(store: &mut Store, lp: &Loop, why: String) -> anyhow::Result<Next> {
    mark_ended(store, lp.id, &why)?;
    Ok(Next::Ended(why))
}

/// The boots left `starting` (a kexec or reboot under way) or `running` (the machine went down
/// during it) by an earlier boot: this boot runs the first if it is its planned kernel and
/// command line; the others are lost (their stored runs kept) or end the loop.
fn settle_pending(
    store: &mut Store,
    lp: &Loop,
    now: &ThisBoot,
    progress: &mut dyn Progress,
) -> anyhow::Result<Option<Next>> {
    let pending: Vec<Boot> = store
        .boots(lp.id)?
        .into_iter()
        .filter(|b| b.status == "starting" || b.status == "running")
        .collect();
    for bt in pending {
        if let Some(next) = settle(store, lp, &bt, now, progress)? {
            return Ok(Some(next));
        }
    }
    Ok(None)
}

/// Settle one boot left pending: run it (this is it), mark it lost, or end the loop.
fn settle(
    store: &mut Store,
    lp: &Loop,
    bt: &Boot,
    now: &ThisBoot,
    progress: &mut dyn Progress,
) -> anyhow::Result<Option<Next>> {
    let boot_id = store
        .boot_id(lp.id, bt.number)?
        .context("a stored boot without its row")?;
    let plan = plan_of(lp, bt.plan)?;
    let (release, cmdline, _) = lp.planned(plan)?;
    let left = &bt.environment[lp.design.key()];
    let lost = |what: &str| {
        format!(
            "{what}: {} of its runs are stored; the rest run again in a new boot",
            bt.runs.len()
        )
    };
    let why_lost = if bt.status == "running" {
        lost("the machine restarted during this boot (power cut, crash or reset)")
    } else if now.boot_id == left["from_boot_id"].as_str().unwrap_or("") {
        lost(&format!(
            "the {} into this boot did not happen",
            lp.design.key()
        ))
    } else if let Some(why) = wrong_entry(left, now) {
        lost(&why)
    } else if now.release == release && is_planned_cmdline(&now.cmdline, &cmdline) {
        return run_if_in_time(store, lp, plan, boot_id, bt, now, progress);
    } else if now.release == lp.design.home_release {
        lost(&format!(
            "the machine came back in its default kernel {} instead of {release} (the \
             planned kernel did not come up, or the power was cut)",
            now.release
        ))
    } else {
        let why = format!(
            "boot {} came up in {} ({}) where the plan has {release} ({cmdline})",
            bt.number, now.release, now.cmdline
        );
        store.end_boot(boot_id, "failed", &why, None, None, 0)?;
        return end(store, lp, why).map(Some);
    };
    progress.note(&format!("abperf: boot {}: {why_lost}", bt.number));
    let extra = if bt.status == "running" {
        bt.extra_warmups
    } else {
        0
    };
    store.end_boot(boot_id, "lost", &why_lost, None, None, extra)?;
    Ok(None)
}

/// Reboot mode: the boot loader says it booted another entry than the planned boot's one-shot
/// (the planned kernel failed and the machine was reset, or the loader could not start it or
/// did not take the one-shot): the machine fell back to the default entry.
fn wrong_entry(left: &serde_json::Value, now: &ThisBoot) -> Option<String> {
    let want = left["entry"].as_str()?;
    let got = now.loader_entry.as_deref()?;
    (got != want).then(|| {
        format!(
            "the boot loader booted entry {got}, not the one-shot entry {want}: the planned boot \
             did not come up (its kernel failed, or the loader could not start it) and the \
             machine fell back to its default entry"
        )
    })
}

/// This boot is the planned one: run it, unless it reached abperf after --boot-timeout.
fn run_if_in_time(
    store: &mut Store,
    lp: &Loop,
    plan: &BootPlan,
    boot_id: i64,
    bt: &Boot,
    now: &ThisBoot,
    progress: &mut dyn Progress,
) -> anyhow::Result<Option<Next>> {
    let at = bt.environment[lp.design.key()]["at_unix"]
        .as_f64()
        .unwrap_or(0.0);
    let took = unix_now() - at;
    if took > lp.design.boot_timeout_s {
        let why = format!(
            "boot {} reached abperf {took:.0} s after the {}, more than --boot-timeout {:.0} s",
            bt.number,
            lp.design.key(),
            lp.design.boot_timeout_s
        );
        store.end_boot(boot_id, "failed", &why, None, None, 0)?;
        return end(store, lp, why).map(Some);
    }
    run_this_boot(store, lp, plan, boot_id, bt, now, progress)
}

fn plan_of(lp: &Loop, number: u32) -> anyhow::Result<&BootPlan> {
    lp.plans
        .iter()
        .find(|p| p.number == number)
        .with_context(|| format!("experiment {}: no planned boot {number}", lp.id))
}

/// This boot is the planned one: run its share, commit every run, record how it ended.
fn run_this_boot(
    store: &mut Store,
    lp: &Loop,
    plan: &BootPlan,
    boot_id: i64,
    bt: &Boot,
    now: &ThisBoot,
    progress: &mut dyn Progress,
) -> anyhow::Result<Option<Next>> {
    let mut env = bt.environment.clone();
    env["this_boot"] = serde_json::to_value(now)?;
    store.boot_up(boot_id, &now.release, &now.cmdline, now.uptime, &env)?;
    let v = &lp.variants[plan.variant];
    progress.note(&format!(
        "abperf: planned boot {} of {} ('{}'): up in {:.1} s in {} ({})",
        plan.number + 1,
        lp.plans.len(),
        v.name,
        now.uptime,
        now.release,
        now.cmdline
    ));
    let done = store.done_seqs(lp.id)?;
    let (mine, remaining) = plan.slots(&lp.schedule, &done);
    let warm = |s: &[Slot]| s.iter().filter(|s| s.warmup).count();
    let extra = (warm(&mine) - warm(&remaining)) as u32;
    let b = lp.boots();
    let share = share_of(&b, v, bt.number, share_slots(&remaining, extra));
    let mut timed_done: BTreeMap<usize, u32> = BTreeMap::new();
    for s in lp
        .schedule
        .iter()
        .filter(|s| done.contains(&s.seq) && !s.warmup)
    {
        *timed_done.entry(s.variant).or_default() += 1;
    }
    let mut sink = HostLines {
        store,
        b: &b,
        plan,
        boot_id,
        env,
        wanted: remaining.iter().map(|s| (s.seq, *s)).collect(),
        got: BTreeSet::new(),
        clock: Clock {
            booted: Some(Instant::now()),
            ..Clock::default()
        },
        extra,
        timed_done,
        progress,
    };
    let result = run_share_into(&share, &mut sink);
    let (got, wanted) = (sink.got.len(), sink.wanted.len());
    let (run_seconds, extra_done) = (sink.clock.run_seconds(), sink.clock.extra_done);
    let (status, words, next) = match result {
        Ok(Ending::Complete | Ending::Decided(_)) if got == wanted => {
            ("complete", format!("ran its {got} run(s)"), None)
        }
        Ok(Ending::Interrupted(sig)) => (
            "interrupted",
            format!("interrupted by {}", crate::runner::signals::name(sig)),
            Some(Next::Interrupted(sig)),
        ),
        Ok(Ending::Failed(m)) => ("failed", m.clone(), Some(Next::Ended(m))),
        Ok(_) => {
            let m = format!("ended with {got} of its {wanted} run(s)");
            ("failed", m.clone(), Some(Next::Ended(m)))
        }
        Err(e) => {
            let m = format!("{e:#}");
            ("failed", m.clone(), Some(Next::Ended(m)))
        }
    };
    let seconds = super::machine::uptime().ok();
    store.end_boot(boot_id, status, &words, seconds, run_seconds, extra_done)?;
    match next {
        Some(Next::Ended(m)) => end(
            store,
            lp,
            format!("boot {} of '{}': {m}", bt.number, v.name),
        )
        .map(Some),
        other => Ok(other),
    }
}

/// The runs of a boot on the machine itself go straight into the store, checked against the
/// boot's share as the host checks a guest's (`runner::boots::take_run`).
struct HostLines<'a> {
    store: &'a mut Store,
    b: &'a Boots<'a>,
    plan: &'a BootPlan,
    boot_id: i64,
    env: serde_json::Value,
    wanted: BTreeMap<u32, Slot>,
    got: BTreeSet<u32>,
    clock: Clock,
    extra: u32,
    timed_done: BTreeMap<usize, u32>,
    progress: &'a mut dyn Progress,
}

impl LineSink for HostLines<'_> {
    fn send_line(&mut self, line: &Line) -> anyhow::Result<()> {
        match line {
            Line::Hello {
                abperf,
                environment,
                events_skipped,
            } => {
                self.env["guest"] = environment.clone();
                self.env["guest_abperf"] = serde_json::Value::String(abperf.clone());
                self.env["events_skipped"] = serde_json::to_value(events_skipped)?;
                self.store.set_boot_environment(self.boot_id, &self.env)
            }
            Line::Run { run } => take_run(
                self.store,
                self.b,
                self.boot_id,
                self.plan,
                &self.wanted,
                run.clone(),
                &mut self.got,
                &mut self.clock,
                self.extra,
                &mut self.timed_done,
                self.progress,
            ),
            Line::End { .. } => Ok(()),
            Line::Profile { .. } => {
                anyhow::bail!("a profiled run: boots of this machine take none (no --profile)")
            }
        }
    }
}

/// Arm the next planned boot that has runs to do, or say the loop is complete (or over: a
/// plan lost too often, a kernel gone, `kexec -l` or the one-shot entry refused).
fn next_boot(
    store: &mut Store,
    lp: &Loop,
    now: &ThisBoot,
    progress: &mut dyn Progress,
) -> anyhow::Result<Next> {
    let e = store.experiment(lp.id)?;
    if let Some(why) = e.environment["boot_loop"]["ended"].as_str() {
        return Ok(Next::Ended(why.to_string()));
    }
    let done = store.done_seqs(lp.id)?;
    let Some(plan) = lp
        .plans
        .iter()
        .find(|p| !p.slots(&lp.schedule, &done).1.is_empty())
    else {
        return Ok(Next::Complete);
    };
    let lost = store
        .boots(lp.id)?
        .iter()
        .filter(|b| b.plan == plan.number && (b.status == "lost" || b.status == "failed"))
        .count() as u32;
    let (release, cmdline, kernel) = lp.planned(plan)?;
    if lost >= lp.design.max_lost {
        let why = format!(
            "planned boot {} ({release}) was lost {lost} times; the loop stops here",
            plan.number + 1
        );
        return end(store, lp, why);
    }
    let initrd = lp.design.initrds.get(kernel).cloned().flatten();
    let env = boot_record(lp, plan, now, &cmdline, initrd.as_deref());
    let (boot_id, number) = store.start_boot(lp.id, plan.number, HOST_ACCEL, &env)?;
    if let Err(e) = mode::arm(lp, plan.variant, kernel, initrd.as_deref(), &cmdline, now) {
        let why = format!("{e:#}");
        store.end_boot(boot_id, "failed", &why, None, None, 0)?;
        return end(store, lp, why);
    }
    progress.note(&format!(
        "abperf: planned boot {} of {} ('{}', boot {number} made): {} into {release} ({cmdline})",
        plan.number + 1,
        lp.plans.len(),
        lp.variants[plan.variant].name,
        lp.design.key(),
    ));
    Ok(Next::Boot {
        boot_id,
        release,
        cmdline,
    })
}

/// What a boot row records of the boot it plans: the variant, and how and when the machine
/// leaves for it (kexec, or reboot through the one-shot `entry`).
fn boot_record(
    lp: &Loop,
    plan: &BootPlan,
    now: &ThisBoot,
    cmdline: &str,
    initrd: Option<&str>,
) -> serde_json::Value {
    let v = &lp.variants[plan.variant];
    let mut left = serde_json::json!({
        "from_boot_id": now.boot_id,
        "at_unix": unix_now(),
        "cmdline": cmdline,
        "initrd": initrd,
    });
    if let Some(id) = mode::entry_of(lp, plan.variant) {
        left["entry"] = serde_json::Value::String(id);
    }
    let mut env = serde_json::json!({
        "variant": v.name,
        "kernel": v.boot.as_ref().map(|b| b.kernel.clone()),
        "append": v.boot.as_ref().map(|b| b.append.clone()),
        "accel": HOST_ACCEL,
    });
    env[lp.design.key()] = left;
    env
}

#[cfg(test)]
mod tests {
    //! The settling of the boot under way, on a real store: never a kexec (the kernels named
    //! here do not exist, and the cases below end before one would be loaded).
    use super::*;
    use crate::boot_loop::design::LoopDesign;
    use crate::runner::boots::VmDesign;
    use crate::runner::experiment::NoProgress;
    use abperf_model::{BootConfig, Kind, NewExperiment, Variant};
    use std::path::Path;

    const HOME: &str = "6.1.0-home";
    const BASE: &str = "root=/dev/vda ro";

    fn new_loop(store: &mut Store, dir: &Path) -> Loop {
        new_loop_with(store, dir, None)
    }

    fn new_loop_with(
        store: &mut Store,
        dir: &Path,
        reboot: Option<crate::boot_loop::bli::RebootDesign>,
    ) -> Loop {
        let d = LoopDesign {
            mode: "kexec".into(),
            home_release: HOME.into(),
            home_cmdline: BASE.into(),
            base_cmdline: BASE.into(),
            initrds: BTreeMap::new(),
            systemd_unit: false,
            boot_timeout_s: 300.0,
            max_lost: 2,
            reboot,
        };
        let vm = VmDesign {
            boots: 1,
            accel: HOST_ACCEL.into(),
            accel_reason: "test".into(),
            cpus: 1,
            memory_mib: 0,
            host_cpus: None,
            boot_timeout_s: 300.0,
            console_dir: None,
            strict: false,
        };
        let (plans, schedule) =
            crate::design::build_boot_schedule(crate::design::Order::Abba, 2, 1, 1, 0, 7);
        let variants: Vec<Variant> = ["6.12.0-a", "6.13.0-b"]
            .iter()
            .map(|r| Variant {
                command: Some("true".into()),
                boot: Some(BootConfig {
                    kernel: dir.join(format!("vmlinuz-{r}")).display().to_string(),
                    release: r.to_string(),
                    modules: None,
                    package: None,
                    append: "pti=on".into(),
                    source: None,
                }),
                ..Variant::named(r)
            })
            .collect();
        let design = serde_json::json!({
            "order": "abba", "runs": 1, "warmup": 0, "seed": 7, "pre": null, "post": null,
            "setup": null, "cleanup": null, "shell": "auto", "pin": null, "timeout_s": null,
            "events": [], "counted_events": [], "ignore_failure": false, "show_output": false,
            "vm": vm, "boot_loop": d,
        });
        let exp = NewExperiment {
            name: "loop".into(),
            kind: Kind::Run,
            command_line: vec![],
            design,
            seed: Some(7),
            environment: serde_json::json!({}),
        };
        let id = store
            .create_boot_experiment(&exp, &variants, &schedule, &plans)
            .unwrap();
        Loop::load(store, id).unwrap()
    }

    /// The kexec of planned boot `plan`, issued `ago` seconds ago from boot `from`.
    fn issued(store: &mut Store, lp: &Loop, plan: u32, from: &str, ago: f64) -> i64 {
        let env = serde_json::json!({"kexec": {"from_boot_id": from, "at_unix": unix_now() - ago}});
        store.start_boot(lp.id, plan, HOST_ACCEL, &env).unwrap().0
    }

    fn this(release: &str, cmdline: &str, boot_id: &str) -> ThisBoot {
        ThisBoot {
            release: release.into(),
            cmdline: cmdline.into(),
            boot_id: boot_id.into(),
            uptime: 5.0,
            loader_entry: None,
        }
    }

    fn setup() -> (tempfile::TempDir, Store, Loop) {
        let d = tempfile::tempdir().unwrap();
        let mut store = Store::open(&d.path().join("s.db")).unwrap();
        let lp = new_loop(&mut store, d.path());
        (d, store, lp)
    }

    fn status(store: &Store, lp: &Loop) -> Vec<String> {
        store
            .boots(lp.id)
            .unwrap()
            .into_iter()
            .map(|b| format!("{} {}", b.status, b.outcome.unwrap_or_default()))
            .collect()
    }

    #[test]
    fn back_in_the_default_kernel_the_boot_is_lost_and_the_loop_goes_on() {
        let (_d, mut store, lp) = setup();
        let first = lp.planned(&lp.plans[0]).unwrap().0;
        issued(&mut store, &lp, 0, "boot-a", 10.0);
        let r = settle_pending(
            &mut store,
            &lp,
            &this(HOME, BASE, "boot-b"),
            &mut NoProgress,
        );
        assert_eq!(r.unwrap(), None);
        let s = status(&store, &lp);
        assert!(
            s[0].starts_with("lost the machine came back in its default kernel 6.1.0-home"),
            "{s:?}"
        );
        assert!(s[0].contains(&format!("instead of {first}")), "{s:?}");
    }

    #[test]
    fn a_kernel_the_plan_does_not_have_ends_the_loop_with_the_reason_stored() {
        let (_d, mut store, lp) = setup();
        issued(&mut store, &lp, 0, "boot-a", 10.0);
        let now = this("6.99.0-other", BASE, "boot-b");
        let r = settle_pending(&mut store, &lp, &now, &mut NoProgress).unwrap();
        let Some(Next::Ended(why)) = r else {
            panic!("{r:?}")
        };
        assert!(why.contains("came up in 6.99.0-other"), "{why}");
        assert!(status(&store, &lp)[0].starts_with("failed "));
        assert_eq!(Loop::load(&store, lp.id).unwrap().ended, Some(why));
    }

    #[test]
    fn the_planned_kernel_with_another_command_line_ends_the_loop() {
        let (_d, mut store, lp) = setup();
        let (release, _, _) = lp.planned(&lp.plans[0]).unwrap();
        issued(&mut store, &lp, 0, "boot-a", 10.0);
        let now = this(&release, BASE, "boot-b"); // without the variant's pti=on
        let r = settle_pending(&mut store, &lp, &now, &mut NoProgress).unwrap();
        assert!(
            matches!(r, Some(Next::Ended(ref w)) if w.contains("where the plan has")),
            "{r:?}"
        );
    }

    #[test]
    fn a_boot_later_than_the_timeout_ends_the_loop() {
        let (_d, mut store, lp) = setup();
        let (release, cmdline, _) = lp.planned(&lp.plans[0]).unwrap();
        issued(&mut store, &lp, 0, "boot-a", 1000.0);
        let now = this(&release, &cmdline, "boot-b");
        let r = settle_pending(&mut store, &lp, &now, &mut NoProgress).unwrap();
        assert!(
            matches!(r, Some(Next::Ended(ref w)) if w.contains("more than --boot-timeout 300 s")),
            "{r:?}"
        );
    }

    #[test]
    fn a_kexec_that_did_not_happen_and_a_restart_during_a_boot_are_lost() {
        let (_d, mut store, lp) = setup();
        issued(&mut store, &lp, 0, "boot-a", 10.0);
        let same = this(HOME, BASE, "boot-a");
        assert_eq!(
            settle_pending(&mut store, &lp, &same, &mut NoProgress).unwrap(),
            None
        );
        assert!(status(&store, &lp)[0].contains("did not happen"));
        let row = issued(&mut store, &lp, 0, "boot-a", 10.0);
        store
            .boot_up(row, "6.12.0-a", BASE, 3.0, &serde_json::json!({}))
            .unwrap();
        let later = this(HOME, BASE, "boot-c");
        assert_eq!(
            settle_pending(&mut store, &lp, &later, &mut NoProgress).unwrap(),
            None
        );
        assert!(status(&store, &lp)[1].contains("restarted during this boot"));
        // Lost twice: the loop stops before loading that plan a third time.
        let next = next_boot(&mut store, &lp, &later, &mut NoProgress).unwrap();
        assert!(
            matches!(next, Next::Ended(ref w) if w.contains("was lost 2 times")),
            "{next:?}"
        );
    }

    /// Reboot mode: the loader booted its default entry instead of the planned one-shot: the
    /// boot is lost (and retried), named as such, even where the kernel and command line
    /// could not tell (the planned kernel is the default one).
    #[test]
    fn a_one_shot_that_did_not_boot_is_lost_by_the_loaders_word() {
        let d = tempfile::tempdir().unwrap();
        let mut store = Store::open(&d.path().join("s.db")).unwrap();
        let r = crate::boot_loop::bli::RebootDesign {
            loader: "systemd-boot 252".into(),
            esp: "/efi".into(),
            xbootldr: None,
            files: BTreeMap::new(),
            started_boot_id: "boot-a".into(),
        };
        let lp = new_loop_with(&mut store, d.path(), Some(r));
        let (release, cmdline, _) = lp.planned(&lp.plans[0]).unwrap();
        let env = serde_json::json!({"reboot": {
            "from_boot_id": "boot-a", "at_unix": unix_now() - 10.0,
            "entry": crate::boot_loop::bli::entry_id(lp.id, lp.plans[0].variant),
        }});
        store.start_boot(lp.id, 0, HOST_ACCEL, &env).unwrap();
        let mut now = this(&release, &format!("initrd=\\x {cmdline}"), "boot-b");
        now.loader_entry = Some("home.conf".into());
        let r = settle_pending(&mut store, &lp, &now, &mut NoProgress).unwrap();
        assert_eq!(r, None);
        let s = status(&store, &lp);
        assert!(
            s[0].starts_with(
                "lost the boot loader booted entry home.conf, not the one-shot entry abperf-1-v"
            ),
            "{s:?}"
        );
        assert!(s[0].contains("fell back to its default entry"), "{s:?}");
    }
}
