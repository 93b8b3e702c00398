//! A boot loop as the store keeps it: a kernel-variant experiment (variants, seeded ABBA boot
//! plans and schedule, `design.vm` with accel `host`) whose `design.boot_loop` says how this
//! machine boots ([`LoopDesign`]). Its state is the store's: the boot rows (a boot `starting` is
//! the kexec under way), the runs, and `environment.boot_loop.ended` once it has ended.

use crate::runner::boots::{Boots, VmDesign};
use crate::runner::experiment::RunConfig;
use abperf_model::{BootPlan, Slot, Status, Variant};
use abperf_store::Store;
use anyhow::Context;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The accelerator recorded for boots on the machine itself.
pub const HOST_ACCEL: &str = "host";

/// How the machine boots the loop's kernels.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoopDesign {
    /// `kexec` or `reboot` (one-shot boot-loader entries).
    pub mode: String,
    /// The machine's own kernel and command line when the loop started (where it returns).
    pub home_release: String,
    pub home_cmdline: String,
    /// The parameters every boot keeps (home's, without BOOT_IMAGE=/initrd=).
    pub base_cmdline: String,
    /// Kernel image -> its initramfs (none for a kernel that needs none).
    pub initrds: BTreeMap<String, Option<String>>,
    /// A systemd unit continues the loop at boot (else something else runs `boot-loop resume`).
    pub systemd_unit: bool,
    /// Seconds from the kexec to abperf running in the new kernel.
    pub boot_timeout_s: f64,
    /// Boots of one plan that may be lost (power cut, crash) before the loop gives up.
    pub max_lost: u32,
    /// Reboot mode: the loader, its partitions and the kernels' files on them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reboot: Option<super::bli::RebootDesign>,
}

impl LoopDesign {
    /// How a boot row records the way the machine left for it (`kexec` or `reboot`).
    pub fn key(&self) -> &'static str {
        if self.reboot.is_some() {
            "reboot"
        } else {
            "kexec"
        }
    }
}

/// A loop loaded from the store.
pub struct Loop {
    pub id: i64,
    pub status: Status,
    pub cfg: RunConfig,
    pub vm: VmDesign,
    pub design: LoopDesign,
    pub variants: Vec<Variant>,
    pub schedule: Vec<Slot>,
    pub plans: Vec<BootPlan>,
    /// Why it ended (None: it has not).
    pub ended: Option<String>,
}

impl Loop {
    /// Experiment `id`, which must be a boot loop.
    pub fn load(store: &Store, id: i64) -> anyhow::Result<Loop> {
        let e = store.experiment(id)?;
        let design: LoopDesign = serde_json::from_value(
            e.design
                .get("boot_loop")
                .cloned()
                .with_context(|| format!("experiment {id} is not a boot loop"))?,
        )
        .with_context(|| format!("experiment {id}: its boot loop cannot be read by this abperf"))?;
        let cfg: RunConfig = serde_json::from_value(e.design.clone())
            .with_context(|| format!("experiment {id}: its design cannot be read"))?;
        let vm: VmDesign = serde_json::from_value(e.design["vm"].clone())
            .with_context(|| format!("experiment {id}: its boot design cannot be read"))?;
        Ok(Loop {
            id,
            status: e.status,
            cfg,
            vm,
            design,
            variants: store.variants(id)?,
            schedule: store.schedule(id)?,
            plans: store.boot_plans(id)?,
            ended: e.environment["boot_loop"]["ended"]
                .as_str()
                .map(str::to_string),
        })
    }

    /// The experiment's boots, as the runner walks them.
    pub fn boots(&self) -> Boots<'_> {
        Boots {
            exp_id: self.id,
            cfg: &self.cfg,
            vm: &self.vm,
            variants: &self.variants,
            schedule: &self.schedule,
            plans: &self.plans,
        }
    }

    /// Is it still going (not ended, status running)?
    pub fn active(&self) -> bool {
        self.ended.is_none() && self.status == Status::Running
    }

    /// The kernel release and command line plan `plan` boots.
    pub fn planned(&self, plan: &BootPlan) -> anyhow::Result<(String, String, &str)> {
        let v = &self.variants[plan.variant];
        let bc = v
            .boot
            .as_ref()
            .with_context(|| format!("variant '{}' boots no kernel", v.name))?;
        Ok((
            bc.release.clone(),
            super::machine::planned_cmdline(&self.design.base_cmdline, &bc.append),
            bc.kernel.as_str(),
        ))
    }
}

/// The boot loops of a store, newest first.
pub fn loops(store: &Store) -> anyhow::Result<Vec<Loop>> {
    let mut out = Vec::new();
    for s in store.list()?.iter().rev() {
        let e = store.experiment(s.id)?;
        if e.design.get("boot_loop").is_some() {
            out.push(Loop::load(store, s.id)?);
        }
    }
    Ok(out)
}

/// The store's loop that is still going, if any.
pub fn active_loop(store: &Store) -> anyhow::Result<Option<Loop>> {
    Ok(loops(store)?.into_iter().find(Loop::active))
}

/// Record that the loop ended, and why (kept in the experiment's environment).
pub fn mark_ended(store: &mut Store, id: i64, why: &str) -> anyhow::Result<()> {
    store.merge_environment(id, &serde_json::json!({ "boot_loop": { "ended": why } }))
}
