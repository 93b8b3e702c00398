//! The boot loop on a machine of its own (`abperf run --kernel ... --boot-on-host kexec`), tested
//! for real: the "machine" is a QEMU guest under TCG whose virtio disk (an ext4 image made here
//! with `mkfs.ext4 -d`) holds the store, two Debian kernels with their initramfs images, and the
//! script its init runs at every boot (tests/data/machine_init.sh, standing in for the systemd
//! unit abperf installs on a real machine; the unit itself is checked with
//! `systemd-analyze verify`). abperf inside kexecs between the kernels with the real kexec
//! (kexec-tools). The host waits for the machine to power off and reads the store out of the
//! disk image (`debugfs`). Skipped, never passed, without QEMU, busybox-static, kmod, kexec-tools,
//! e2fsprogs or the kernel packages.

#![allow(clippy::disallowed_macros)] // tests print what they saw to stderr
mod common;
use common::BIN;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const PROGRAMS: &[&str] = &[
    "qemu-system-x86_64",
    "busybox",
    "depmod",
    "kexec",
    "mkfs.ext4",
    "debugfs",
];

/// Modules the machine's init loads (with their dependencies) unless built in: abperf's guest
/// set (virtio, 9p, overlay) and the disk's (virtio_blk, ext4).
const MACHINE_MODULES: &[&str] = &[
    "virtio_pci",
    "virtio_blk",
    "crc32c_generic",
    "ext4",
    "9pnet_virtio",
    "9p",
    "overlay",
];

#[derive(Debug, Clone)]
struct Kernel {
    release: String,
    vmlinuz: PathBuf,
    modules: PathBuf,
}

/// Two cached kernel packages (fetched into abperf's cache by tests/vm.rs or `abperf vm
/// fetch-kernel`), or why the test cannot run here.
fn kernels() -> Result<Vec<Kernel>, String> {
    let missing: Vec<&str> = PROGRAMS
        .iter()
        .copied()
        .filter(|p| !common::on_path(p) && !Path::new("/usr/sbin").join(p).is_file())
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "{missing:?} not on $PATH (scripts/test.sh installs qemu-system-x86, busybox-static, \
             kmod, kexec-tools, e2fsprogs)"
        ));
    }
    let o = Command::new(BIN)
        .args(["vm", "kernels", "--format", "json"])
        .output()
        .map_err(|e| e.to_string())?;
    let v: Value = serde_json::from_slice(&o.stdout).unwrap_or(Value::Null);
    let mut ks: Vec<Kernel> = v
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|k| {
            Some(Kernel {
                release: k["release"].as_str()?.to_string(),
                vmlinuz: PathBuf::from(k["vmlinuz"].as_str()?),
                modules: PathBuf::from(k["modules"].as_str()?),
            })
        })
        .filter(|k| k.vmlinuz.is_file() && k.modules.join("modules.dep").is_file())
        .collect();
    ks.sort_by(|a, b| a.release.cmp(&b.release));
    ks.dedup_by(|a, b| a.release == b.release);
    if ks.len() < 2 {
        return Err(format!(
            "{} kernel(s) in abperf's cache, 2 needed (`abperf vm fetch-kernel` two \
             linux-image-*-amd64-unsigned packages; tests/vm.rs fetches them)",
            ks.len()
        ));
    }
    ks.truncate(2);
    Ok(ks)
}

/// The machine: a directory with its disk image, the home kernel's initramfs, its console log.
struct Machine {
    dir: tempfile::TempDir,
    kernels: Vec<Kernel>,
}

impl Machine {
    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// Stage the disk's contents (kernels, initramfs images, boot.sh) and format the image.
    fn new(kernels: Vec<Kernel>, boot_sh: &str) -> Machine {
        let m = Machine {
            dir: tempfile::tempdir().unwrap(),
            kernels,
        };
        let stage = m.path("stage");
        std::fs::create_dir_all(stage.join("boot")).unwrap();
        std::fs::create_dir_all(stage.join("store")).unwrap();
        let busybox = abperf::vm::initramfs::find_busybox().unwrap();
        let init = std::fs::read_to_string(common::data("machine_init.sh")).unwrap();
        for k in &m.kernels {
            let initrd = abperf::vm::initramfs::build(&abperf::vm::initramfs::Contents {
                busybox: &busybox,
                init: &init,
                wanted_modules: MACHINE_MODULES,
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
        let st = Command::new("mkfs.ext4")
            .args(["-q", "-F", "-O", "^metadata_csum", "-d"])
            .arg(&stage)
            .arg(m.path("disk.img"))
            .arg("512M")
            .status()
            .unwrap();
        assert!(st.success(), "mkfs.ext4 failed");
        m
    }

    /// Power the machine on in its home kernel (the first), as its boot loader would.
    fn power_on(&self) -> Child {
        let home = &self.kernels[0];
        let stage = self.path("stage");
        Command::new("qemu-system-x86_64")
            .args([
                "-nodefaults",
                "-no-user-config",
                "-display",
                "none",
                "-no-reboot",
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
            ])
            .arg("-kernel")
            .arg(&home.vmlinuz)
            .arg("-initrd")
            .arg(stage.join(format!("boot/initrd.img-{}", home.release)))
            .args(["-append", "console=ttyS0 panic=-1"])
            .arg("-drive")
            .arg(format!(
                "file={},format=raw,if=virtio",
                self.path("disk.img").display()
            ))
            .args([
                "-fsdev",
                "local,id=abperfroot,path=/,security_model=none,readonly=on,multidevs=remap",
                "-device",
                "virtio-9p-pci,fsdev=abperfroot,mount_tag=abperfroot",
            ])
            .arg("-serial")
            .arg(format!("file:{}", self.path("console.log").display()))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap()
    }

    /// The console so far (all power-ons: QEMU's file backend is reopened, so it is copied).
    fn console(&self) -> String {
        std::fs::read_to_string(self.path("console.log")).unwrap_or_default()
    }

    /// Wait for the machine to power off (QEMU exits), within `limit`.
    fn wait_off(&self, mut qemu: Child, limit: Duration) {
        let t = Instant::now();
        while qemu.try_wait().unwrap().is_none() {
            if t.elapsed() > limit {
                let _ = qemu.kill();
                let _ = qemu.wait();
                panic!(
                    "the machine still ran after {limit:?}; console:\n{}",
                    self.console()
                );
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// A file of the disk, read with debugfs (the image is not mounted).
    fn read(&self, rel: &str) -> Option<Vec<u8>> {
        let out = self.path("dumped");
        let _ = std::fs::remove_file(&out);
        let st = Command::new("debugfs")
            .arg("-R")
            .arg(format!("dump /{rel} {}", out.display()))
            .arg(self.path("disk.img"))
            .stderr(Stdio::null())
            .status()
            .unwrap();
        if !st.success() {
            return None;
        }
        std::fs::read(&out).ok()
    }
}

#[test]
fn spike_kexec_between_the_two_kernels() {
    let ks = match kernels() {
        Ok(k) => k,
        Err(why) => return common::skip(&why),
    };
    let other = &ks[1].release;
    let boot_sh = format!(
        "n=$(cat /machine/count 2>/dev/null || echo 0)\n\
         echo $((n+1)) > /machine/count\n\
         echo \"$(uname -r) $(cat /proc/cmdline)\" >> /machine/seen\n\
         sync\n\
         if [ $n -lt 1 ]; then kexec -l /machine/boot/vmlinuz-{other} --initrd /machine/boot/initrd.img-{other} --append \"$(cat /proc/cmdline) abperf.spike=1\" && sync && kexec -e; fi\n"
    );
    let m = Machine::new(ks, &boot_sh);
    let t = Instant::now();
    let q = m.power_on();
    m.wait_off(q, Duration::from_secs(300));
    eprintln!("{:?}\n{}", t.elapsed(), m.console());
    let seen = String::from_utf8(m.read("seen").unwrap()).unwrap();
    eprintln!("{seen}");
    assert_eq!(seen.lines().count(), 2);
}
