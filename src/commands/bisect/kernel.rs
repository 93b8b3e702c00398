//! The kernel kind of bisection (`--kernel-tree DIR`): each revision built as `--kernel
//! git:HASH` would be (`resolve_kernel`: ksrc, untimed, cached by content, so a revision built
//! once is never built again), and each step's kernels booted in VMs, the boots the replicates
//! (`step::boot`). A revision whose kernel does not build is skipped like `git bisect skip`.

use super::builder::Builder;
use super::git::Commit;
use super::step::{self, End, Planned, Runs};
use crate::commands::kernel_git::SourceArgs;
use crate::commands::run::boots::{choose_accel, resolve_kernel};
use crate::commands::vm::{
    AccelArg, DEFAULT_BOOT_TIMEOUT_S, DEFAULT_VM_CPUS, DEFAULT_VM_MEMORY_MIB, VmSettings,
};
use crate::model::BootConfig;
use crate::runner::boots::VmDesign;
use crate::store::Store;
use std::cell::OnceCell;
use std::path::{Path, PathBuf};

/// Kernels built from the revisions of `source.kernel_tree`, booted with `vm`.
#[derive(Debug)]
pub struct KernelBuild {
    pub source: SourceArgs,
    pub accel: AccelArg,
    /// The VMs' design but for the boots (each step's rounds) and the accelerator (decided at
    /// the first boot, once for the whole bisection).
    pub vm: VmDesign,
    /// The accelerator and why, decided at the first step.
    chosen: OnceCell<(String, String)>,
}

impl KernelBuild {
    /// From the bisection's options: the tree, `--kconfig`/`--patch`, the VM settings and
    /// `--vm-console`.
    pub fn new(
        source: SourceArgs,
        vm: &VmSettings,
        console: Option<PathBuf>,
    ) -> anyhow::Result<KernelBuild> {
        Ok(KernelBuild {
            source,
            accel: vm.accel.unwrap_or(AccelArg::Auto),
            vm: VmDesign {
                boots: 1,
                accel: String::new(),
                accel_reason: String::new(),
                cpus: vm.vm_cpus.unwrap_or(DEFAULT_VM_CPUS),
                memory_mib: vm.vm_memory.unwrap_or(DEFAULT_VM_MEMORY_MIB),
                host_cpus: vm.host_cpus()?,
                boot_timeout_s: vm.boot_timeout.unwrap_or(DEFAULT_BOOT_TIMEOUT_S),
                console_dir: console,
                strict: false,
            },
            chosen: OnceCell::new(),
        })
    }

    /// How the bisection's head records this kind (compared on `--resume`): the kernels'
    /// configuration and patches, and the VMs.
    pub fn describe(&self) -> String {
        let mut s = format!(
            "kernel built from each revision (--kconfig {}",
            self.source.kconfig.as_deref().unwrap_or("tinyconfig")
        );
        for p in &self.source.patches {
            s.push_str(&format!(" --patch {}", p.display()));
        }
        s.push_str(&format!(
            "), booted in VMs (--accel {}, {} vCPU(s), {} MiB)",
            match self.accel {
                AccelArg::Auto => "auto",
                AccelArg::Kvm => "kvm",
                AccelArg::Tcg => "tcg",
            },
            self.vm.cpus,
            self.vm.memory_mib
        ));
        s
    }
}

impl Builder for KernelBuild {
    type Ready = BootConfig;

    fn build(
        &mut self,
        commit: &Commit,
        _dir: &Path,
    ) -> anyhow::Result<Result<BootConfig, String>> {
        // The full hash: a revision of the range, whatever the branch names say now.
        match resolve_kernel(&format!("git:{}", commit.hash), &[], &self.source) {
            Ok(k) => Ok(Ok(BootConfig {
                kernel: k.path,
                release: k.release,
                modules: k.modules,
                package: None,
                append: String::new(),
                source: k.source,
            })),
            Err(e) => Ok(Err(format!("its kernel does not build: {e:#}"))),
        }
    }

    fn release(&mut self, _kernel: BootConfig) {
        // The kernel stays in ksrc's cache (a later bisection of the range finds it there).
    }

    fn run(
        &self,
        store: &mut Store,
        runs: &Runs,
        planned: &Planned,
        kernels: &[BootConfig],
    ) -> anyhow::Result<(i64, End)> {
        let (accel, reason) = self
            .chosen
            .get_or_init(|| choose_accel(self.accel, Path::new(&kernels[0].kernel)));
        let vm = VmDesign {
            accel: accel.clone(),
            accel_reason: reason.clone(),
            ..self.vm.clone()
        };
        step::boot(store, runs, planned, kernels, &vm)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn build(kconfig: Option<&str>, cpus: Option<u32>) -> KernelBuild {
        let source = SourceArgs {
            kernel_tree: Some(PathBuf::from("/src/linux")),
            patches: vec![PathBuf::from("/p/fix.patch")],
            kconfig: kconfig.map(str::to_string),
        };
        let vm = VmSettings {
            accel: Some(AccelArg::Tcg),
            vm_cpus: cpus,
            ..Default::default()
        };
        KernelBuild::new(source, &vm, None).unwrap()
    }

    #[test]
    fn the_head_records_configuration_patches_and_vms_so_a_resume_with_others_is_refused() {
        let k = build(None, Some(1));
        assert_eq!(
            k.describe(),
            "kernel built from each revision (--kconfig tinyconfig --patch /p/fix.patch), \
             booted in VMs (--accel tcg, 1 vCPU(s), 1024 MiB)"
        );
        assert_ne!(k.describe(), build(Some("defconfig"), Some(1)).describe());
        assert_ne!(k.describe(), build(None, None).describe());
        assert_eq!(k.vm.cpus, 1);
        assert_eq!(build(None, None).vm.cpus, DEFAULT_VM_CPUS);
    }
}
