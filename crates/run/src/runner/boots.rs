//! The host side of a kernel-variant experiment: walk the planned boots in their seeded order,
//! boot each one's kernel in a VM (`abperf_vm`), hand the guest its share of the schedule
//! ([`super::guest::Share`]), commit every run the moment its line arrives, and record the boot
//! (what the guest reported, its cost, how it ended).
//!
//! Crash safety: runs are committed one by one as they arrive, so a crash of the guest or of the
//! host loses no finished run; a kill -9 of abperf kills QEMU through its parent-death signal.
//! `--resume` marks boots left running as lost and continues with the first planned boot that is
//! not done; a boot cut short is continued by a new boot that warms up again (the extra warm-ups
//! are not stored) and runs the rest of its slots.

use super::experiment::{Ending, Progress, RunConfig};
use super::guest::{EXTRA_SEQ, Line, SHARE_FILE, Share, ShareVariant, WireRun};
use super::signals;
use abperf_model::{BootConfig, BootPlan, Slot, Variant};
use abperf_store::Store;
use abperf_vm::{self as vm, Accel, BootInfo, Event, Exit, Outcome, Vm, VmSpec};
use anyhow::Context;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// How the boots of an experiment are made (stored in its design as `vm`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VmDesign {
    /// Boots per variant.
    pub boots: u32,
    /// kvm | tcg, decided once for the whole experiment.
    pub accel: String,
    /// Why that accelerator (the KVM probe's finding, or "asked for").
    pub accel_reason: String,
    /// vCPUs and memory of each guest.
    pub cpus: u32,
    pub memory_mib: u64,
    /// Host CPUs QEMU runs on (None: any).
    pub host_cpus: Option<Vec<usize>>,
    /// Seconds a boot may take to start the guest's abperf.
    pub boot_timeout_s: f64,
    /// Directory for each boot's console log (kernel messages, and the workload's output with
    /// --show-output).
    #[serde(default)]
    pub console_dir: Option<PathBuf>,
    /// `--strict`: an event the guest cannot count is an error.
    #[serde(default)]
    pub strict: bool,
}

impl VmDesign {
    pub fn accel(&self) -> Accel {
        if self.accel == "kvm" {
            Accel::Kvm
        } else {
            Accel::Tcg
        }
    }
}

/// An experiment's boots to run.
pub struct Boots<'a> {
    pub exp_id: i64,
    pub cfg: &'a RunConfig,
    pub vm: &'a VmDesign,
    pub variants: &'a [Variant],
    pub schedule: &'a [Slot],
    pub plans: &'a [BootPlan],
}

/// The guest's command: this very abperf binary (the guest sees the host's root).
fn guest_command() -> anyhow::Result<String> {
    let exe = std::env::current_exe().context("cannot find abperf's own executable")?;
    Ok(format!(
        "exec {} run --guest-share {}/{SHARE_FILE}",
        shell_words::quote(&exe.to_string_lossy()),
        vm::INPUT_DIR
    ))
}

pub(crate) fn tail(lines: &[String]) -> String {
    if lines.is_empty() {
        return "  (the console stayed empty)".to_string();
    }
    lines
        .iter()
        .rev()
        .take(15)
        .rev()
        .map(|l| format!("  | {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Execute every boot that is not done yet.
pub fn execute_boots(
    store: &mut Store,
    b: &Boots,
    progress: &mut dyn Progress,
) -> anyhow::Result<Ending> {
    signals::install()?;
    let lost = store.mark_lost_boots(b.exp_id)?;
    if lost > 0 {
        progress.note(&format!(
            "abperf: {lost} boot(s) were still running when the last session ended; their runs stored so far are kept"
        ));
    }
    let done = store.done_seqs(b.exp_id)?;
    let todo = b.schedule.iter().filter(|s| !done.contains(&s.seq)).count();
    let mut timed_done: BTreeMap<usize, u32> = BTreeMap::new();
    for s in b
        .schedule
        .iter()
        .filter(|s| done.contains(&s.seq) && !s.warmup)
    {
        *timed_done.entry(s.variant).or_default() += 1;
    }
    let command = guest_command()?;
    progress.start(todo as u64);
    let mut ending = Ending::Complete;
    for plan in b.plans {
        if let Some(sig) = signals::received() {
            ending = Ending::Interrupted(sig);
            break;
        }
        let (mine, remaining) = plan.slots(b.schedule, &done);
        if remaining.is_empty() {
            continue;
        }
        let planned_warm = mine.iter().filter(|s| s.warmup).count();
        let remaining_warm = remaining.iter().filter(|s| s.warmup).count();
        let extra = (planned_warm - remaining_warm) as u32;
        let mut again = true;
        let stop = loop {
            let done_before = store.done_seqs(b.exp_id)?;
            let remaining: Vec<Slot> = remaining
                .iter()
                .filter(|s| !done_before.contains(&s.seq))
                .copied()
                .collect();
            let r = one_boot(
                store,
                b,
                plan,
                &remaining,
                extra,
                &command,
                &mut timed_done,
                progress,
            )?;
            match r.ending {
                Some(_) if r.before_abperf && again && signals::received().is_none() => {
                    // A kernel that dies or hangs while booting (under TCG, SMP guests
                    // occasionally panic in early boot) gave no measurement: boot it once more.
                    again = false;
                    progress.note(
                        "abperf:   the guest died before abperf started in it; booting it once more \
                         (the failed boot is recorded with its console)",
                    );
                }
                e => break e,
            }
        };
        if let Some(e) = stop {
            ending = e;
            break;
        }
    }
    progress.finish();
    if let Some(sig) = signals::received() {
        ending = Ending::Interrupted(sig);
    }
    Ok(ending)
}

/// Times and counts of one boot, on the host's clock.
#[derive(Default)]
pub(crate) struct Clock {
    pub(crate) booted: Option<Instant>,
    /// When the last warm-up's line arrived (the timed runs start after it).
    pub(crate) warm_end: Option<Instant>,
    pub(crate) last_timed: Option<Instant>,
    pub(crate) timed: u32,
    pub(crate) extra_done: u32,
}

impl Clock {
    pub(crate) fn run_seconds(&self) -> Option<f64> {
        let from = self.warm_end.or(self.booted)?;
        self.last_timed
            .map(|t| t.saturating_duration_since(from).as_secs_f64())
    }
}

/// How one boot went.
struct BootResult {
    /// None: it ran its whole share; else how the experiment ends.
    ending: Option<Ending>,
    /// The VM ended (panic, hang) before the guest's abperf said hello: nothing was measured.
    before_abperf: bool,
}

/// One boot of `plan` running `remaining` after `extra` unstored warm-ups: the boot is recorded,
/// the VM started with the guest's share, each event the guest reports taken (runs committed as
/// they arrive), and the boot recorded as it ended.
#[allow(clippy::too_many_arguments)]
fn one_boot(
    store: &mut Store,
    b: &Boots,
    plan: &BootPlan,
    remaining: &[Slot],
    extra: u32,
    command: &str,
    timed_done: &mut BTreeMap<usize, u32>,
    progress: &mut dyn Progress,
) -> anyhow::Result<BootResult> {
    let v = &b.variants[plan.variant];
    let bc = v
        .boot
        .as_ref()
        .with_context(|| format!("variant '{}' boots no kernel", v.name))?;
    let slots = share_slots(remaining, extra);
    let base_env = serde_json::json!({
        "variant": v.name,
        "kernel": bc.kernel,
        "append": bc.append,
        "accel": b.vm.accel,
        "cpus": b.vm.cpus,
        "memory_mib": b.vm.memory_mib,
        "host_cpus": b.vm.host_cpus,
    });
    let (boot_id, number) = store.start_boot(b.exp_id, plan.number, &b.vm.accel, &base_env)?;
    let spec = vm_spec(b, v, bc, command, number, slots)?;
    announce(progress, b, plan, bc, remaining, extra);
    let mut vm = match Vm::start(&spec) {
        Ok(vm) => vm,
        Err(e) => {
            store.end_boot(boot_id, "failed", &format!("{e:#}"), None, None, 0)?;
            return Err(e.context(format!("boot of '{}'", v.name)));
        }
    };
    let mut watch = BootWatch {
        b,
        plan,
        bc,
        boot_id,
        number,
        wanted: remaining.iter().map(|s| (s.seq, *s)).collect(),
        extra,
        clock: Clock {
            booted: None,
            warm_end: None,
            last_timed: None,
            timed: 0,
            extra_done: 0,
        },
        env: base_env,
        hello: false,
        end: None,
        got: BTreeSet::new(),
        profiled: BTreeSet::new(),
        protocol_error: None,
    };
    let mut outcome = None;
    while let Some(ev) = vm.next_event() {
        match ev {
            Event::Booted(info) => watch.booted(store, &mut vm, progress, info)?,
            Event::Line(text) => watch.line(store, &mut vm, progress, timed_done, &text)?,
            Event::Console(_) => {}
            Event::Finished(o) => outcome = Some(o),
        }
    }
    let o = outcome.context("the VM's events ended without its outcome")?;
    watch.finish(store, progress, &o)
}

/// The slots a boot's guest runs: `extra` unstored warm-ups first (continuing a boot cut short),
/// then the `remaining` slots of the plan (all of one variant: the guest's only one).
pub(crate) fn share_slots(remaining: &[Slot], extra: u32) -> Vec<Slot> {
    let mut slots: Vec<Slot> = (0..extra)
        .map(|i| Slot {
            seq: EXTRA_SEQ + i,
            variant: 0,
            block: -1,
            warmup: true,
        })
        .collect();
    slots.extend(remaining.iter().map(|s| Slot { variant: 0, ..*s }));
    slots
}

/// What boot `number` of variant `v` runs: its `slots`, as the guest (or the machine itself, in
/// a boot loop) gets them.
pub(crate) fn share_of(b: &Boots, v: &Variant, number: u32, slots: Vec<Slot>) -> Share {
    let mut cfg = b.cfg.clone();
    // `--profile`: the host picks the timed runs profiled runs follow over the whole schedule
    // (the guest sees only its boot's part of it).
    if let Some(p) = &mut cfg.profile {
        let picked = p.picked_seqs(b.schedule);
        p.after = Some(
            slots
                .iter()
                .filter(|s| picked.contains(&s.seq))
                .map(|s| s.seq)
                .collect(),
        );
    }
    Share {
        experiment: b.exp_id,
        boot: number,
        variant: ShareVariant::of(v),
        cfg,
        strict: b.vm.strict,
        slots,
    }
}

/// The VM of boot `number` of variant `v`: its kernel and command line, the experiment's VM
/// design, a timeout that grows with the share, and the share as the guest's input file.
fn vm_spec(
    b: &Boots,
    v: &Variant,
    bc: &BootConfig,
    command: &str,
    number: u32,
    slots: Vec<Slot>,
) -> anyhow::Result<VmSpec> {
    let share = share_of(b, v, number, slots.clone());
    let mut spec = VmSpec::new(&bc.kernel, command);
    spec.modules = bc.modules.as_ref().map(PathBuf::from);
    spec.append = bc.append.clone();
    spec.cpus = b.vm.cpus;
    spec.memory_mib = b.vm.memory_mib;
    spec.accel = b.vm.accel();
    spec.host_cpus = b.vm.host_cpus.clone();
    spec.boot_timeout = Duration::from_secs_f64(b.vm.boot_timeout_s);
    // A profiled run is the run again under perf, then perf script in the guest.
    let profiled = share
        .cfg
        .profile
        .as_ref()
        .and_then(|p| p.after.as_ref())
        .map_or(0, |a| a.len());
    spec.timeout = b.cfg.timeout_s.map(|t| {
        let runs = slots.len() as f64 + 2.0 * profiled as f64;
        spec.boot_timeout + Duration::from_secs_f64((t + 30.0) * runs + 60.0)
    });
    spec.inputs = vec![(SHARE_FILE.to_string(), serde_json::to_vec(&share)?)];
    if let Some(d) = &b.vm.console_dir {
        std::fs::create_dir_all(d)
            .with_context(|| format!("--vm-console {}: cannot create it", d.display()))?;
        spec.console_log = Some(d.join(format!("exp{}-boot{number}.log", b.exp_id)));
    }
    Ok(spec)
}

/// Say which boot starts: its variant, kernel and command line, and how many runs it has.
fn announce(
    progress: &mut dyn Progress,
    b: &Boots,
    plan: &BootPlan,
    bc: &BootConfig,
    remaining: &[Slot],
    extra: u32,
) {
    let v = &b.variants[plan.variant];
    let timed_here = remaining.iter().filter(|s| !s.warmup).count();
    progress.note(&format!(
        "abperf: boot {} of {} ('{}': {}{}), {} run(s){}",
        plan.number + 1,
        b.plans.len(),
        v.name,
        bc.release,
        if bc.append.is_empty() {
            String::new()
        } else {
            format!(", {}", bc.append)
        },
        timed_here,
        match (remaining.len() - timed_here, extra) {
            (0, 0) => String::new(),
            (w, 0) => format!(" after {w} warm-up(s)"),
            (w, e) => format!(
                " after {} warm-up(s), continuing an interrupted boot",
                w + e as usize
            ),
        }
    ));
}

/// One boot under way: which boot it is, and what its guest has reported so far.
struct BootWatch<'a> {
    b: &'a Boots<'a>,
    plan: &'a BootPlan,
    bc: &'a BootConfig,
    boot_id: i64,
    number: u32,
    /// The stored slots this boot runs, by seq.
    wanted: BTreeMap<u32, Slot>,
    extra: u32,
    clock: Clock,
    /// The boot's environment as stored (the host's view, then the guest's).
    env: serde_json::Value,
    /// The guest's abperf said hello: it started.
    hello: bool,
    /// The guest's last line: how its abperf ended, and why.
    end: Option<(String, Option<String>)>,
    /// The seqs committed so far.
    got: BTreeSet<u32>,
    /// The seqs whose profiled runs are stored.
    profiled: BTreeSet<u32>,
    /// What the guest reported wrong (the VM is killed at the first).
    protocol_error: Option<String>,
}

impl BootWatch<'_> {
    fn variant(&self) -> &Variant {
        &self.b.variants[self.plan.variant]
    }

    /// The kernel is up: store what it is, and stop at once if it is not the variant's release.
    fn booted(
        &mut self,
        store: &mut Store,
        vm: &mut Vm,
        progress: &mut dyn Progress,
        info: BootInfo,
    ) -> anyhow::Result<()> {
        self.clock.booted = Some(Instant::now());
        self.env["boot"] = serde_json::to_value(&info)?;
        store.boot_up(
            self.boot_id,
            &info.release,
            &info.cmdline,
            info.boot_seconds,
            &self.env,
        )?;
        progress.note(&format!(
            "abperf:   up in {:.1} s under {}: {} ({})",
            info.boot_seconds,
            info.accel.as_str(),
            info.release,
            info.cmdline
        ));
        if info.release != self.bc.release {
            self.protocol_error = Some(format!(
                "the guest runs release {} but variant '{}' boots {} ({})",
                info.release,
                self.variant().name,
                self.bc.release,
                self.bc.kernel
            ));
            vm.kill();
        }
        Ok(())
    }

    /// A line from the guest's abperf: its hello, a run (committed now) or its end. A line that
    /// does not parse or a run that does not fit the share is a protocol error: the VM is killed.
    fn line(
        &mut self,
        store: &mut Store,
        vm: &mut Vm,
        progress: &mut dyn Progress,
        timed_done: &mut BTreeMap<usize, u32>,
        text: &str,
    ) -> anyhow::Result<()> {
        let line = match Line::parse(text) {
            Ok(l) => l,
            Err(e) => {
                self.protocol_error = Some(format!("{e:#}"));
                vm.kill();
                return Ok(());
            }
        };
        match line {
            Line::Hello {
                environment,
                events_skipped,
                abperf,
            } => {
                self.hello = true;
                self.env["guest"] = environment;
                self.env["guest_abperf"] = serde_json::Value::String(abperf);
                self.env["events_skipped"] = serde_json::to_value(&events_skipped)?;
                store.set_boot_environment(self.boot_id, &self.env)?;
                for (name, why) in &events_skipped {
                    progress.note(&format!(
                        "abperf: event {name} in the guest: {why}; the experiment goes on without it"
                    ));
                }
            }
            Line::Run { run } => {
                if let Err(e) = take_run(
                    store,
                    self.b,
                    self.boot_id,
                    self.plan,
                    &self.wanted,
                    run,
                    &mut self.got,
                    &mut self.clock,
                    self.extra,
                    timed_done,
                    progress,
                ) {
                    self.protocol_error = Some(format!("{e:#}"));
                    vm.kill();
                }
            }
            Line::End { ending, message } => self.end = Some((ending, message)),
            Line::Profile { run } => {
                if let Err(e) = self.take_profile(store, run) {
                    self.protocol_error = Some(format!("{e:#}"));
                    vm.kill();
                }
            }
        }
        Ok(())
    }

    /// A profiled run from the guest (untrusted), checked by
    /// [`ProfilePlan::check_reported`](super::profiled::ProfilePlan::check_reported) and stored
    /// as the boot's variant.
    fn take_profile(
        &mut self,
        store: &mut Store,
        mut run: abperf_model::profile::ProfiledRun,
    ) -> anyhow::Result<()> {
        let Some(plan) = &self.b.cfg.profile else {
            anyhow::bail!("the guest sent a profiled run, and none was planned");
        };
        plan.check_reported(self.b.schedule, &run, &self.got, &self.profiled)?;
        self.profiled.insert(run.seq);
        run.variant = self.plan.variant;
        store.save_profile(self.b.exp_id, &run)
    }

    /// The boot's stored status and, unless it ran its whole share, how the experiment ends.
    fn verdict(&self, o: &Outcome) -> (&'static str, Option<Ending>) {
        let number = self.number;
        let name = &self.variant().name;
        let all_done = self.got.len() == self.wanted.len();
        if let Some(err) = &self.protocol_error {
            return (
                "failed",
                Some(Ending::Failed(format!("boot {number} of '{name}': {err}"))),
            );
        }
        if let Some(sig) = signals::received().or(match o.exit {
            Exit::Interrupted(s) => Some(s),
            _ => None,
        }) {
            return ("interrupted", Some(Ending::Interrupted(sig)));
        }
        match (&o.exit, &self.end) {
            (Exit::Command(0), Some((e, _))) if e == "complete" && all_done => ("complete", None),
            (Exit::Command(_), Some((e, msg))) if e == "failed" => (
                "failed",
                Some(Ending::Failed(msg.clone().unwrap_or_default())),
            ),
            (Exit::Command(_), Some((e, msg))) => (
                "failed",
                Some(Ending::Failed(format!(
                    "boot {number} of '{name}': the guest's abperf ended '{e}': {}",
                    msg.clone().unwrap_or_default()
                ))),
            ),
            (Exit::Command(rc), None) => (
                "failed",
                Some(Ending::Failed(format!(
                    "boot {number} of '{name}': the guest's abperf exited with {rc} without reporting its end; console:\n{}",
                    tail(&o.console_tail)
                ))),
            ),
            (exit, _) => (
                "failed",
                Some(Ending::Failed(format!(
                    "boot {number} of '{name}' after {} of its {} run(s): {}; console:\n{}",
                    self.got.len(),
                    self.wanted.len(),
                    exit_words(exit),
                    tail(&o.console_tail)
                ))),
            ),
        }
    }

    /// The VM is gone: record how the boot ended (with the console's tail unless it completed).
    fn finish(
        self,
        store: &mut Store,
        progress: &mut dyn Progress,
        o: &Outcome,
    ) -> anyhow::Result<BootResult> {
        let (status, result) = self.verdict(o);
        let mut words = match &o.exit {
            Exit::Command(rc) => format!("the guest's abperf exited with {rc}"),
            other => exit_words(other),
        };
        if status != "complete" {
            words += &format!("; console:\n{}", tail(&o.console_tail));
        }
        let before_abperf = !self.hello
            && self.protocol_error.is_none()
            && matches!(o.exit, Exit::GuestDied | Exit::BootTimeout(_));
        store.end_boot(
            self.boot_id,
            status,
            &words,
            Some(o.seconds),
            self.clock.run_seconds(),
            self.clock.extra_done,
        )?;
        if status == "complete" {
            progress.note(&format!(
                "abperf:   boot done in {:.1} s ({} run(s) stored)",
                o.seconds,
                self.got.len()
            ));
        }
        Ok(BootResult {
            ending: result,
            before_abperf,
        })
    }
}

fn exit_words(exit: &Exit) -> String {
    match exit {
        Exit::Command(rc) => format!("the guest's command exited with {rc}"),
        Exit::GuestError(m) => format!("the guest could not set up: {m}"),
        Exit::GuestDied => {
            "the guest ended without the command's exit status (kernel panic or crash)".into()
        }
        Exit::QemuFailed(m) => format!("QEMU failed: {m}"),
        Exit::BootTimeout(t) => {
            format!("the guest had not started abperf {t:.0} s after QEMU started")
        }
        Exit::Timeout(t) => format!("the VM ran longer than {t:.0} s and was killed"),
        Exit::Interrupted(s) => format!("interrupted by {}", signals::name(*s)),
        Exit::Killed => "the VM was killed".into(),
    }
}

/// The slot of run `w` that `who` reported: one of the slots it was given (`wanted`), with the
/// same warm-up flag, not reported before (`got`, which gains it).
pub(crate) fn check_wire<'a>(
    wanted: &'a BTreeMap<u32, Slot>,
    got: &mut BTreeSet<u32>,
    w: &WireRun,
    who: &str,
) -> anyhow::Result<&'a Slot> {
    let slot = wanted
        .get(&w.seq)
        .with_context(|| format!("{who} reported run {} that is not in its share", w.seq))?;
    if slot.warmup != w.warmup {
        anyhow::bail!("{who} reported run {} with the wrong warm-up flag", w.seq);
    }
    if !got.insert(w.seq) {
        anyhow::bail!("{who} reported run {} twice", w.seq);
    }
    Ok(slot)
}

/// Check a run the guest reported against the boot's share and commit it (extra warm-ups are
/// only counted).
#[allow(clippy::too_many_arguments)]
pub(crate) fn take_run(
    store: &mut Store,
    b: &Boots,
    boot_id: i64,
    plan: &BootPlan,
    wanted: &BTreeMap<u32, Slot>,
    w: WireRun,
    got: &mut BTreeSet<u32>,
    clock: &mut Clock,
    extra: u32,
    timed_done: &mut BTreeMap<usize, u32>,
    progress: &mut dyn Progress,
) -> anyhow::Result<()> {
    let now = Instant::now();
    if w.seq >= EXTRA_SEQ {
        if w.seq - EXTRA_SEQ >= extra {
            anyhow::bail!(
                "the guest reported an extra warm-up {} it was not given",
                w.seq - EXTRA_SEQ
            );
        }
        clock.extra_done += 1;
        clock.warm_end = Some(now);
        return Ok(());
    }
    let slot = check_wire(wanted, got, &w, "the guest")?;
    let wall = w
        .metrics
        .iter()
        .find(|m| m.name == "wall_ns")
        .map(|m| m.value);
    let run = w.into_run(slot, plan.variant);
    store.commit_boot_run(b.exp_id, boot_id, &run)?;
    if slot.warmup {
        clock.warm_end = Some(now);
    } else {
        clock.timed += 1;
        clock.last_timed = Some(now);
        let n = timed_done.entry(plan.variant).or_default();
        *n += 1;
        progress.ran(
            &b.variants[plan.variant].name,
            *n,
            b.cfg.runs * b.vm.boots,
            wall.unwrap_or(0.0) as u64,
        );
    }
    Ok(())
}
