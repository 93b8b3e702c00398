//! The boot loop's reboot mode (`abperf run --kernel ... --boot-on-host reboot`), tested for
//! real: the machine (tests/common/machine.rs) powers on through OVMF firmware, whose variables
//! persist in the machine's own varstore, and systemd-boot on a GPT disk's EFI system partition
//! (tests/common/esp.rs), whose `loader.conf` makes the home kernel's entry the default. abperf
//! inside writes its entry files on the ESP, sets the one-shot entry (`bootctl set-oneshot`, the
//! host's bootctl over 9p) and reboots: QEMU resets (no -no-reboot, no -kernel), and the
//! firmware and the loader boot the one-shot entry. The host waits for the machine to power off
//! and reads the store out of the ext4 disk, and the ESP with mtools. Skipped, never passed,
//! without QEMU, OVMF, busybox-static, kmod, e2fsprogs, fdisk, dosfstools, mtools, the kernel
//! packages or systemd-boot-efi (downloaded into abperf's cache, never installed).

#![allow(clippy::disallowed_macros)] // tests print what they saw to stderr
mod common;
use common::BIN;
use common::esp::{self, ESP_PROGRAMS};
use common::kernels::Kernel;
use common::machine::{Boot, FIRMWARE_MODULES, Machine, assert_complete, boot_script, read_store};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const PROGRAMS: &[&str] = &[
    "qemu-system-x86_64",
    "busybox",
    "depmod",
    "mkfs.ext4",
    "e2fsck",
    "debugfs",
    "apt-get",
    "dpkg-deb",
];

/// The loader's configuration: the home kernel's entry is the default, no menu.
const LOADER_CONF: &str = "default home.conf\ntimeout 0\neditor no\n";

/// The command line of the home entry, kept by every loop boot.
const HOME_OPTIONS: &str = "console=ttyS0 panic=-1";

/// The command line every loop boot has: the machine's own, then the variant's.
const LOOP_CMDLINE: &str = "console=ttyS0 panic=-1 abperf_test=1";

/// The kernels, OVMF and systemd-boot, or why the test cannot run here.
fn prerequisites() -> Result<(Vec<Kernel>, PathBuf), String> {
    let missing = common::not_on_path(ESP_PROGRAMS);
    if !missing.is_empty() {
        return Err(format!(
            "{missing:?} not on $PATH (scripts/test.sh installs fdisk, dosfstools, mtools)"
        ));
    }
    esp::ovmf()?;
    let ks = common::machine::kernels(PROGRAMS)?;
    Ok((ks, esp::systemd_boot()?))
}

/// A machine whose home kernel is the first, booting through OVMF and systemd-boot; its ESP
/// holds both kernels and their initramfs images, the second's made garbage when `break_second`
/// (that kernel then panics at boot, and panic=-1 resets the machine).
fn machine(ks: Vec<Kernel>, sd_boot: &Path, boot_sh: &str, break_second: bool) -> Machine {
    let mut m = Machine::stage(ks, boot_sh, FIRMWARE_MODULES);
    std::fs::write(m.path("stage/esp"), "the ESP is /dev/vdb1\n").unwrap();
    m.format();
    let home = &m.kernels[0];
    let texts = m.path("esp-texts");
    std::fs::create_dir_all(&texts).unwrap();
    std::fs::write(texts.join("loader.conf"), LOADER_CONF).unwrap();
    std::fs::write(
        texts.join("home.conf"),
        format!(
            "title home\nlinux /vmlinuz-{r}\ninitrd /initrd.img-{r}\noptions {HOME_OPTIONS}\n",
            r = home.release
        ),
    )
    .unwrap();
    std::fs::write(texts.join("garbage"), vec![0xa5u8; 4096]).unwrap();
    let mut files: Vec<(String, PathBuf)> = vec![
        ("/EFI/BOOT/BOOTX64.EFI".into(), sd_boot.to_path_buf()),
        ("/loader/loader.conf".into(), texts.join("loader.conf")),
        ("/loader/entries/home.conf".into(), texts.join("home.conf")),
    ];
    for (i, k) in m.kernels.iter().enumerate() {
        let initrd = if break_second && i == 1 {
            texts.join("garbage")
        } else {
            m.staged("initrd.img", k)
        };
        files.push((format!("/vmlinuz-{}", k.release), m.staged("vmlinuz", k)));
        files.push((format!("/initrd.img-{}", k.release), initrd));
    }
    let refs: Vec<(&str, &Path)> = files
        .iter()
        .map(|(d, s)| (d.as_str(), s.as_path()))
        .collect();
    let esp_image = m.path("esp.img");
    esp::make_esp_disk(&esp_image, &refs);
    let (code, vars) = esp::ovmf().unwrap();
    std::fs::copy(&vars, m.path("vars.fd")).unwrap();
    m.boot = Boot::Firmware {
        code,
        vars: m.path("vars.fd"),
        esp: esp_image,
    };
    m
}

/// The loop: the two kernels from the ESP, `boots` boots each (ABBA), 1 warm-up and `runs`
/// runs of `true` per boot (no quotes: it goes inside `sh -c '...'`).
fn loop_command(ks: &[Kernel], boots: u32, runs: u32, go: bool) -> String {
    format!(
        "{BIN} run --boot-on-host reboot {}--boot-hook manual --kernel /efi/vmlinuz-{a} \
         --kernel /efi/vmlinuz-{b} --append abperf_test=1 --boots {boots} -r {runs} --warmup 1 \
         --seed 7 -n old -n new true",
        if go { "--reboot-this-machine " } else { "" },
        a = ks[0].release,
        b = ks[1].release,
    )
}

/// At the first boot: the plan printed without --reboot-this-machine (and its exit status),
/// then the loop started. `every_boot` runs first (as at every later boot).
fn start_script(ks: &[Kernel], boots: u32, runs: u32, every_boot: &str) -> String {
    format!(
        "/bin/sh -c '{every_boot}; {} 2>&1; echo \"plan exit: $?\"; exec {}'",
        loop_command(ks, boots, runs, false),
        loop_command(ks, boots, runs, true)
    )
}

/// The machine's own setting, whatever the host's (the guest's root is the host's under an
/// overlay): kexec-tools' LOAD_KEXEC=true, which reboot mode refuses, does nothing in this
/// machine, whose init kexecs nothing on reboot.
const NO_LOAD_KEXEC: &str =
    "sed -i s/^LOAD_KEXEC=true/LOAD_KEXEC=false/ /etc/default/kexec 2>/dev/null";

/// Takes bootctl away in the guest (its root is an overlay: the host's stays), so that abperf
/// finds the ESP at its mount point and sets the one-shot through efivarfs itself.
const WITHOUT_BOOTCTL: &str = "sed -i s/^LOAD_KEXEC=true/LOAD_KEXEC=false/ /etc/default/kexec \
     2>/dev/null; rm -f /usr/bin/bootctl /bin/bootctl; \
     command -v bootctl || echo \"no bootctl here\"";

/// The lines the machine's init wrote about the boot loader, one per boot through it.
fn loader_lines(console: &str) -> Vec<&str> {
    console
        .lines()
        .filter(|l| l.starts_with("machine: loader: "))
        .collect()
}

/// What a loop leaves behind on the ESP and in the loader's variables: nothing of abperf's, the
/// default untouched.
fn assert_nothing_left(m: &Machine, console: &str) {
    for l in console
        .lines()
        .filter(|l| l.starts_with("machine: ") || l.starts_with("abperf: "))
    {
        eprintln!("{l}");
    }
    let Boot::Firmware { esp: image, .. } = &m.boot else {
        unreachable!()
    };
    assert_eq!(
        esp::esp_list(image, "/loader/entries"),
        vec!["home.conf".to_string()],
        "abperf's entry files removed"
    );
    assert_eq!(esp::esp_read(image, "/loader/loader.conf"), LOADER_CONF);
    let last = *loader_lines(console).last().unwrap();
    assert!(
        last.starts_with("machine: loader: selected home.conf; one-shot -; default -;"),
        "the last boot is the default entry:\n{console}"
    );
    let off: Vec<&str> = console
        .lines()
        .filter(|l| l.starts_with("machine: at power-off: "))
        .collect();
    assert_eq!(
        off.last().copied(),
        Some("machine: at power-off: one-shot -; default -; entries on the ESP: home.conf "),
        "no one-shot or default set, abperf's entries gone:\n{console}"
    );
}

/// 2 kernels x 2 boots (ABBA), each through its one-shot entry; a second loop refused; nothing
/// of abperf's left on the ESP or in the loader's variables, the default untouched.
#[test]
fn reboot_loop_boots_every_planned_kernel_through_one_shot_entries() {
    let (ks, sd_boot) = match prerequisites() {
        Ok(p) => p,
        Err(why) => return common::skip(&why),
    };
    let start = start_script(&ks, 2, 2, NO_LOAD_KEXEC);
    let second = format!(
        "{NO_LOAD_KEXEC}; if [ ! -e /machine/second ]; then touch /machine/second; \
         {BIN} boot-loop status; {}; echo \"second loop: $?\"; fi",
        loop_command(&ks, 2, 2, true)
    );
    let m = machine(ks.clone(), &sd_boot, &boot_script(&start, &second), false);
    let t = Instant::now();
    let q = m.power_on(0);
    m.wait_off(0, q, Duration::from_secs(600));
    eprintln!("the reboot loop took {:?}", t.elapsed());
    let console = m.console(0);
    // The plan said what reboot mode writes, and that the default is never changed.
    assert!(console.contains("plan exit: 2"), "{console}");
    for words in [
        "through its firmware and boot loader (one-shot entries)",
        "boot loader systemd-boot 252",
        "entry file(s) abperf-EXP-vN.conf",
        "in /efi/loader/entries",
        "sets the EFI variable LoaderEntryOneShot-4a67b082-0a4c-41cf-b6c7-440b29bb8c4f",
        "The default boot entry is never changed",
    ] {
        assert!(console.contains(words), "{words}:\n{console}");
    }
    let s = read_store(&m.store());
    assert_complete(&s, &ks, LOOP_CMDLINE);
    assert_eq!(s.boots.len(), 4, "no boot lost: {s:#?}\n{console}");
    // Home, the four planned boots each through its one-shot entry, home again.
    let loader = loader_lines(&console);
    assert_eq!(loader.len(), 6, "{console}");
    for (i, b) in s.boots.iter().enumerate() {
        // Variant 1 ('old') boots the first kernel, variant 2 ('new') the second.
        let v = if s.plans[b.plan as usize].1 == ks[1].release {
            2
        } else {
            1
        };
        let entry = format!("abperf-1-v{v}.conf");
        assert!(
            loader[i + 1].starts_with(&format!("machine: loader: selected {entry}; one-shot -;")),
            "planned boot {} through {entry}:\n{console}",
            b.plan
        );
    }
    assert!(console.contains("second loop: 1"), "{console}");
    assert!(
        console.contains("experiment 1: boot loop (reboot) running")
            && console.contains("  boot loader: systemd-boot 252")
            && console.contains(
                "abperf's entries: /efi/loader/entries/abperf-1-v*.conf; one-shot now: none"
            ),
        "{console}"
    );
    assert!(
        console.contains("the boot loop is over; rebooting into this machine's default kernel"),
        "{console}"
    );
    assert!(console.contains("no boot loop is running"), "{console}");
    assert_nothing_left(&m, &console);
}

/// The second kernel panics at boot (a garbage initramfs; panic=-1 resets the machine): the
/// loader's fallback is the default entry, and the loop records why, twice, then ends. abperf
/// runs without bootctl here.
#[test]
fn a_failed_one_shot_falls_back_to_the_default_kernel_and_the_loop_says_why() {
    let (ks, sd_boot) = match prerequisites() {
        Ok(p) => p,
        Err(why) => return common::skip(&why),
    };
    // Without bootctl: the efivarfs path (and the ESP found at its mount point).
    let start = start_script(&ks, 1, 1, WITHOUT_BOOTCTL);
    let m = machine(
        ks.clone(),
        &sd_boot,
        &boot_script(&start, WITHOUT_BOOTCTL),
        true,
    );
    let t = Instant::now();
    let q = m.power_on(0);
    m.wait_off(0, q, Duration::from_secs(600));
    eprintln!("the failing reboot loop took {:?}", t.elapsed());
    let console = m.console(0);
    let s = read_store(&m.store());
    assert_eq!(s.status, "failed", "{s:#?}\n{console}");
    let ended = s.ended.clone().unwrap_or_default();
    assert!(ended.contains("was lost 2 times"), "{s:#?}");
    let lost: Vec<_> = s.boots.iter().filter(|b| b.status == "lost").collect();
    assert_eq!(lost.len(), 2, "{s:#?}");
    for b in &lost {
        assert_eq!(s.plans[b.plan as usize].1, ks[1].release, "{s:#?}");
        let why = b.outcome.as_deref().unwrap_or("");
        assert!(
            why.contains(
                "the boot loader booted entry home.conf, not the one-shot entry abperf-1-v2.conf"
            ),
            "{why}"
        );
    }
    assert!(
        console.contains("Kernel panic"),
        "the broken kernel panicked:\n{console}"
    );
    assert!(console.contains("no bootctl here"), "{console}");
    // The working kernel's planned boot ran, if the plan put it first.
    let first = &s.plans[0].1;
    if *first == ks[0].release {
        assert!(s.boots.iter().any(|b| b.status == "complete"), "{s:#?}");
    }
    assert_nothing_left(&m, &console);
}
