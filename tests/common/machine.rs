//! The "machine" of the boot-loop tests (tests/boot_loop.rs, tests/boot_loop_reboot.rs): a QEMU
//! guest under TCG whose first virtio disk (an ext4 image made with `mkfs.ext4 -d`) is its
//! persistent state: the store, the kernels with their initramfs images, and the script its init
//! (tests/data/machine_init.sh) runs at every boot. It powers on in its home kernel either as a
//! boot loader would (QEMU's -kernel), or through real firmware: OVMF, whose variables persist in
//! the machine's own copy of its varstore, booting systemd-boot from a second disk with a GPT
//! ESP ([`super::esp`]); a guest reboot is then a QEMU reset that goes through the firmware and
//! the loader again. The host waits for the machine to power off and reads the store out of the
//! disk image (`debugfs`).

use super::kernels::{Kernel, choose_packages, fetch};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Modules the machine's init loads (with their dependencies) unless built in: abperf's guest
/// set (virtio, 9p, overlay) and the disk's (virtio_blk, ext4).
pub const MACHINE_MODULES: &[&str] = &[
    "virtio_pci",
    "virtio_blk",
    "crc32c_generic",
    "ext4",
    "9pnet_virtio",
    "9p",
    "overlay",
];

/// What a machine booted through firmware loads besides: the ESP's FAT (its code page and
/// character set) and efivarfs.
pub const FIRMWARE_MODULES: &[&str] = &["vfat", "nls_cp437", "nls_ascii", "efivarfs"];

/// The two kernels (fetched into abperf's cache as tests/vm.rs fetches them), or why the test
/// cannot run here: `programs` missing from $PATH, or one kernel series only.
pub fn kernels(programs: &[&str]) -> Result<Vec<Kernel>, String> {
    let missing = super::not_on_path(programs);
    if !missing.is_empty() {
        return Err(format!(
            "{missing:?} not on $PATH (scripts/test.sh installs qemu-system-x86, busybox-static, \
             kmod, kexec-tools, e2fsprogs, fdisk, dosfstools, mtools)"
        ));
    }
    let pkgs = choose_packages()?;
    let ks: Vec<Kernel> = pkgs.iter().map(|p| fetch(p)).collect();
    if ks[0].release == ks[1].release {
        return Err(format!(
            "one kernel series in the archive ({}): the loop needs two kernels",
            ks[0].release
        ));
    }
    Ok(ks)
}

/// How the machine starts its home kernel.
pub enum Boot {
    /// QEMU loads the home kernel (-kernel), as a boot loader would; a reboot powers it off.
    Direct,
    /// OVMF boots the loader on the ESP disk `esp`; `code` and the machine's own `vars` are the
    /// firmware's flash.
    Firmware {
        code: PathBuf,
        vars: PathBuf,
        esp: PathBuf,
    },
}

/// The machine: a directory with its disk image, the kernels' initramfs images, its console logs.
pub struct Machine {
    pub dir: tempfile::TempDir,
    pub kernels: Vec<Kernel>,
    pub boot: Boot,
}

impl Machine {
    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// Stage the disk's contents (kernels, initramfs images, boot.sh) and format the image; the
    /// machine boots directly.
    pub fn new(kernels: Vec<Kernel>, boot_sh: &str) -> Machine {
        let m = Machine::stage(kernels, boot_sh, &[]);
        m.format();
        m
    }

    /// Stage the disk's contents (not formatted yet: [`Machine::format`]), the initramfs images
    /// loading `MACHINE_MODULES` and `extra_modules`.
    pub fn stage(kernels: Vec<Kernel>, boot_sh: &str, extra_modules: &[&str]) -> Machine {
        let m = Machine {
            dir: tempfile::tempdir().unwrap(),
            kernels,
            boot: Boot::Direct,
        };
        let stage = m.path("stage");
        std::fs::create_dir_all(stage.join("boot")).unwrap();
        std::fs::create_dir_all(stage.join("store")).unwrap();
        let busybox = abperf::vm::initramfs::find_busybox().unwrap();
        let init = std::fs::read_to_string(super::data("machine_init.sh")).unwrap();
        let modules: Vec<&str> = MACHINE_MODULES
            .iter()
            .chain(extra_modules)
            .copied()
            .collect();
        for k in &m.kernels {
            let initrd = abperf::vm::initramfs::build(&abperf::vm::initramfs::Contents {
                busybox: &busybox,
                init: &init,
                wanted_modules: &modules,
                modules: Some(&k.modules),
                config: "",
                cmd_sh: "",
                inputs: &[],
            })
            .unwrap();
            std::fs::write(stage.join(format!("boot/initrd.img-{}", k.release)), initrd).unwrap();
            std::fs::copy(
                &k.vmlinuz,
                stage.join(format!("boot/vmlinuz-{}", k.release)),
            )
            .unwrap();
        }
        std::fs::write(stage.join("boot.sh"), boot_sh).unwrap();
        m
    }

    /// The staged kernel image or initramfs of kernel `k` ("vmlinuz" or "initrd.img").
    pub fn staged(&self, what: &str, k: &Kernel) -> PathBuf {
        self.path(&format!("stage/boot/{what}-{}", k.release))
    }

    /// Make the ext4 disk image from the stage.
    pub fn format(&self) {
        let st = Command::new("mkfs.ext4")
            .args(["-q", "-F", "-O", "^metadata_csum", "-d"])
            .arg(self.path("stage"))
            .arg(self.path("disk.img"))
            .arg("512M")
            .stdout(Stdio::null())
            .status()
            .unwrap();
        assert!(st.success(), "mkfs.ext4 failed");
    }

    /// Power the machine on in its home kernel (the first); its console goes to
    /// console-`n`.log.
    pub fn power_on(&self, n: u32) -> Child {
        let mut c = Command::new("qemu-system-x86_64");
        c.args([
            "-nodefaults",
            "-no-user-config",
            "-display",
            "none",
            "-machine",
            "pc",
            "-accel",
            "tcg,thread=single",
            "-cpu",
            "max",
            "-smp",
            "1",
            "-m",
            "1024M",
            "-monitor",
            "none",
        ]);
        self.boot_args(&mut c);
        // The machine's disk first (/dev/vda), then the ESP's (/dev/vdb): devices in this order.
        c.arg("-drive")
            .arg(format!(
                "file={},format=raw,if=none,id=disk",
                self.path("disk.img").display()
            ))
            .args(["-device", "virtio-blk-pci,drive=disk"])
            .args([
                "-fsdev",
                "local,id=abperfroot,path=/,security_model=none,readonly=on,multidevs=remap",
                "-device",
                "virtio-9p-pci,fsdev=abperfroot,mount_tag=abperfroot",
            ]);
        if let Boot::Firmware { esp, .. } = &self.boot {
            c.arg("-drive")
                .arg(format!("file={},format=raw,if=none,id=esp", esp.display()))
                .args(["-device", "virtio-blk-pci,drive=esp,bootindex=0"]);
        }
        c.arg("-serial")
            .arg(format!(
                "file:{}",
                self.path(&format!("console-{n}.log")).display()
            ))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap()
    }

    fn boot_args(&self, c: &mut Command) {
        match &self.boot {
            Boot::Direct => {
                let home = &self.kernels[0];
                c.arg("-no-reboot")
                    .arg("-kernel")
                    .arg(&home.vmlinuz)
                    .arg("-initrd")
                    .arg(self.staged("initrd.img", home))
                    .args(["-append", "console=ttyS0 panic=-1"]);
            }
            Boot::Firmware { code, vars, .. } => {
                c.arg("-drive")
                    .arg(format!(
                        "if=pflash,format=raw,unit=0,readonly=on,file={}",
                        code.display()
                    ))
                    .arg("-drive")
                    .arg(format!(
                        "if=pflash,format=raw,unit=1,file={}",
                        vars.display()
                    ));
            }
        }
    }

    /// The console of power-on `n`.
    pub fn console(&self, n: u32) -> String {
        std::fs::read_to_string(self.path(&format!("console-{n}.log"))).unwrap_or_default()
    }

    /// Wait for power-on `n` to end (QEMU exits), within `limit`.
    pub fn wait_off(&self, n: u32, mut qemu: Child, limit: Duration) {
        let t = Instant::now();
        while qemu.try_wait().unwrap().is_none() {
            if t.elapsed() > limit {
                let _ = qemu.kill();
                let _ = qemu.wait();
                panic!(
                    "the machine still ran after {limit:?}; console:\n{}",
                    self.console(n)
                );
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// The store as the disk holds it, copied out with debugfs (the image is not mounted) after
    /// e2fsck has replayed the ext4 journal, as the next mount would (debugfs reads the
    /// metadata where it stands: a file's last fsynced growth may still be in the journal).
    pub fn store(&self) -> PathBuf {
        let st = Command::new("e2fsck")
            .arg("-fy")
            .arg(self.path("disk.img"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .unwrap();
        assert!(
            st.code().is_some_and(|c| c < 4),
            "e2fsck found errors it could not fix: {st}"
        );
        let out = self.path("out");
        let _ = std::fs::remove_dir_all(&out);
        std::fs::create_dir_all(&out).unwrap();
        let st = Command::new("debugfs")
            .arg("-R")
            .arg(format!("rdump /store {}", out.display()))
            .arg(self.path("disk.img"))
            .stderr(Stdio::null())
            .status()
            .unwrap();
        assert!(st.success(), "debugfs rdump");
        out.join("store/abperf.db")
    }
}

/// The script the machine runs at every boot: the first time it starts the loop, afterwards it
/// runs `every_boot` (shell) and continues the loop, as abperf's unit would.
pub fn boot_script(start: &str, every_boot: &str) -> String {
    format!(
        "export ABPERF_DB=/machine/store/abperf.db\n\
         if [ ! -e /machine/started ]; then\n\
         \x20   touch /machine/started\n\
         \x20   sync\n\
         \x20   exec {start}\n\
         fi\n\
         {every_boot}\n\
         exec {} boot-loop resume\n",
        super::BIN
    )
}

/// What the store on the disk holds about experiment 1.
#[derive(Debug)]
pub struct Stored {
    /// (plan number, planned release), in plan order.
    pub plans: Vec<(u32, String)>,
    /// In boot order.
    pub boots: Vec<StoredBoot>,
    pub slots: usize,
    pub runs: usize,
    pub status: String,
    pub ended: Option<String>,
}

/// A boot row.
#[derive(Debug)]
pub struct StoredBoot {
    pub number: u32,
    pub plan: u32,
    pub status: String,
    pub outcome: Option<String>,
    pub release: Option<String>,
    pub cmdline: Option<String>,
}

pub fn read_store(path: &Path) -> Stored {
    let c = rusqlite::Connection::open(path).unwrap();
    let q = |sql: &str| -> usize { c.query_row(sql, [], |r| r.get::<_, i64>(0)).unwrap() as usize };
    let mut st = c
        .prepare(
            "SELECT p.number, v.boot FROM boot_plan p JOIN variant v ON v.id = p.variant_id \
             WHERE p.experiment_id = 1 ORDER BY p.number",
        )
        .unwrap();
    let plans = st
        .query_map([], |r| Ok((r.get::<_, u32>(0)?, r.get::<_, String>(1)?)))
        .unwrap()
        .map(|r| {
            let (n, boot) = r.unwrap();
            let b: Value = serde_json::from_str(&boot).unwrap();
            (n, b["release"].as_str().unwrap().to_string())
        })
        .collect();
    let mut st = c
        .prepare(
            "SELECT number, plan, status, outcome, release, cmdline FROM boot \
             WHERE experiment_id = 1 ORDER BY number",
        )
        .unwrap();
    let boots = st
        .query_map([], |r| {
            Ok(StoredBoot {
                number: r.get(0)?,
                plan: r.get(1)?,
                status: r.get(2)?,
                outcome: r.get(3)?,
                release: r.get(4)?,
                cmdline: r.get(5)?,
            })
        })
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let (status, env): (String, String) = c
        .query_row(
            "SELECT status, environment FROM experiment WHERE id = 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    let env: Value = serde_json::from_str(&env).unwrap();
    Stored {
        plans,
        boots,
        slots: q("SELECT count(*) FROM slot WHERE experiment_id = 1"),
        runs: q("SELECT count(*) FROM run WHERE experiment_id = 1"),
        status,
        ended: env["boot_loop"]["ended"].as_str().map(str::to_string),
    }
}

/// Every planned boot ran once to completion, in plan order, in its planned kernel and command
/// line (`cmdline`); the plans are ABBA over the two kernels; every slot has its run; the loop
/// ended complete.
pub fn assert_complete(s: &Stored, ks: &[Kernel], cmdline: &str) {
    assert_eq!(s.status, "complete", "{s:#?}");
    assert!(
        s.ended
            .as_deref()
            .is_some_and(|e| e.starts_with("complete")),
        "{s:#?}"
    );
    assert_eq!(s.runs, s.slots, "every planned run stored: {s:#?}");
    let releases: Vec<&str> = s.plans.iter().map(|p| p.1.as_str()).collect();
    assert_eq!(releases.len(), 4, "{s:#?}");
    assert!(
        releases[0] != releases[1] && releases[1] == releases[2] && releases[3] == releases[0],
        "ABBA over the two kernels: {releases:?}"
    );
    assert!(ks.iter().all(|k| releases.contains(&k.release.as_str())));
    let complete: Vec<_> = s.boots.iter().filter(|b| b.status == "complete").collect();
    let plan_order: Vec<u32> = complete.iter().map(|b| b.plan).collect();
    assert_eq!(plan_order, vec![0, 1, 2, 3], "{s:#?}");
    for b in &complete {
        assert_eq!(
            b.release.as_deref(),
            Some(s.plans[b.plan as usize].1.as_str()),
            "planned kernel: {b:?}"
        );
        // The boot loader's own words (systemd-boot's initrd=PATH) are not the plan's.
        let seen: Vec<&str> = b
            .cmdline
            .as_deref()
            .unwrap_or("")
            .split_whitespace()
            .filter(|w| !w.starts_with("initrd="))
            .collect();
        assert_eq!(seen.join(" "), cmdline, "planned command line: {b:?}");
    }
}
