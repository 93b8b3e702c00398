//! The boot loop on a machine of its own (`abperf run --kernel ... --boot-on-host kexec`), tested
//! for real: the "machine" (tests/common/machine.rs) is a QEMU guest under TCG whose virtio disk
//! (an ext4 image made here with `mkfs.ext4 -d`) holds the store, two Debian kernels with their
//! initramfs images, and the script its init runs at every boot (tests/data/machine_init.sh,
//! standing in for the systemd unit abperf installs on a real machine; the unit itself is
//! checked with `systemd-analyze verify`). abperf inside kexecs between the kernels with the real
//! kexec (kexec-tools). The host waits for the machine to power off and reads the store out of
//! the disk image (`debugfs`). Skipped, never passed, without QEMU, busybox-static, kmod,
//! kexec-tools, e2fsprogs or the kernel packages. Reboot mode: tests/boot_loop_reboot.rs.

#![allow(clippy::disallowed_macros)] // tests print what they saw to stderr
mod common;
use common::BIN;
use common::kernels::Kernel;
use common::machine::{Machine, assert_complete, boot_script, read_store};
use serde_json::Value;
use std::process::Command;
use std::time::{Duration, Instant};

const PROGRAMS: &[&str] = &[
    "qemu-system-x86_64",
    "busybox",
    "depmod",
    "kexec",
    "mkfs.ext4",
    "e2fsck",
    "debugfs",
    "apt-get",
    "dpkg-deb",
];

/// The loop the machine starts: 2 kernels x 1 command line, `boots` boots each (ABBA), 1
/// warm-up and `runs` runs of `command` per boot.
fn loop_command(ks: &[Kernel], boots: u32, runs: u32, command: &str) -> String {
    format!(
        "{BIN} run --boot-on-host kexec --reboot-this-machine --boot-hook manual \
         --kernel /machine/boot/vmlinuz-{a} --kernel /machine/boot/vmlinuz-{b} \
         --append 'abperf_test=1' --boots {boots} -r {runs} --warmup 1 --seed 7 -n old -n new \
         '{command}'",
        a = ks[0].release,
        b = ks[1].release,
    )
}

/// The command line every loop boot has: the machine's own, then the variant's.
const LOOP_CMDLINE: &str = "console=ttyS0 panic=-1 abperf_test=1";

#[test]
fn kexec_loop_boots_every_planned_kernel_in_abba_order_and_stores_every_run() {
    let ks = match common::machine::kernels(PROGRAMS) {
        Ok(k) => k,
        Err(why) => return common::skip(&why),
    };
    // At its first loop boot the machine tries to start a second loop: refused.
    let start = loop_command(&ks, 2, 2, "true");
    let second = format!(
        "if [ ! -e /machine/second ]; then touch /machine/second; {start}; echo \"second loop: $?\"; fi"
    );
    let m = Machine::new(ks.clone(), &boot_script(&start, &second));
    let t = Instant::now();
    let q = m.power_on(0);
    m.wait_off(0, q, Duration::from_secs(400));
    eprintln!("the loop took {:?}", t.elapsed());
    let console = m.console(0);
    let db = m.store();
    let s = read_store(&db);
    assert_complete(&s, &ks, LOOP_CMDLINE);
    // Each boot's snapshot holds what the kernel's log said of its command line.
    let c = rusqlite::Connection::open(&db).unwrap();
    let mut st = c
        .prepare("SELECT environment FROM boot WHERE status = 'complete'")
        .unwrap();
    let envs: Vec<String> = st
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    for e in &envs {
        let v: Value = serde_json::from_str(e).unwrap();
        assert_eq!(
            v["guest"]["cmdline_unknown"],
            serde_json::json!(["abperf_test=1"]),
            "{v}"
        );
    }
    assert_eq!(
        s.boots.len(),
        4,
        "no boot lost or failed: {s:#?}\n{console}"
    );
    assert_eq!(
        console.matches("machine: up ").count(),
        5,
        "home, then four kexec boots:\n{console}"
    );
    assert!(
        console.contains("the boot loop is over; rebooting into this machine's default kernel"),
        "{console}"
    );
    assert!(
        console.contains("is a boot loop still running in this store"),
        "{console}"
    );
    assert!(console.contains("second loop: 1"), "{console}");
    let status = common::run_within(
        {
            let mut c = Command::new(BIN);
            c.args(["boot-loop", "status", "--db"]).arg(&db);
            c
        },
        Duration::from_secs(30),
        "boot-loop status",
    );
    assert!(
        status
            .stdout
            .contains("ended: complete: every planned boot ran"),
        "{}",
        status.stdout
    );
    assert!(
        status
            .stdout
            .contains("4 of 4 planned boots complete (4 boots made), 12 of 12 runs stored"),
        "{}",
        status.stdout
    );
    // Powered on again, the machine stays in its default kernel: no loop runs any more.
    let q = m.power_on(1);
    m.wait_off(1, q, Duration::from_secs(120));
    let again = m.console(1);
    assert!(
        again.contains(&format!("machine: up {}", ks[0].release)),
        "{again}"
    );
    assert!(again.contains("no boot loop is running"), "{again}");
    assert_eq!(again.matches("machine: up ").count(), 1, "{again}");
}

#[test]
fn power_cut_during_a_boot_then_the_loop_resumes_with_nothing_lost() {
    let ks = match common::machine::kernels(PROGRAMS) {
        Ok(k) => k,
        Err(why) => return common::skip(&why),
    };
    let m = Machine::new(
        ks.clone(),
        &boot_script(&loop_command(&ks, 2, 3, "sleep 1"), ""),
    );
    let t = Instant::now();
    let mut q = m.power_on(0);
    // The power goes during the second planned boot's runs.
    let cut = loop {
        let c = m.console(0);
        let up =
            |l: &str| l.starts_with("abperf: planned boot 2 of 4 (") && l.contains("): up in ");
        if c.lines().any(up) {
            std::thread::sleep(Duration::from_millis(2500));
            break true;
        }
        if q.try_wait().unwrap().is_some() || t.elapsed() > Duration::from_secs(300) {
            break false;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let _ = q.kill();
    let _ = q.wait();
    assert!(cut, "the second boot never came up:\n{}", m.console(0));
    let before = read_store(&m.store());
    assert!(
        before.boots.iter().any(|b| b.status == "running"),
        "the cut came during a boot: {before:#?}"
    );
    let q = m.power_on(1);
    m.wait_off(1, q, Duration::from_secs(400));
    eprintln!("cut and resumed in {:?}", t.elapsed());
    let console = m.console(1);
    let s = read_store(&m.store());
    assert_complete(&s, &ks, LOOP_CMDLINE);
    let lost: Vec<_> = s.boots.iter().filter(|b| b.status == "lost").collect();
    assert_eq!(lost.len(), 1, "{s:#?}\n{console}");
    assert!(
        console.contains("the machine restarted during this boot"),
        "{console}"
    );
    // A later boot of the same plan ran the rest of its runs.
    let again = s
        .boots
        .iter()
        .find(|b| b.status == "complete" && b.plan == lost[0].plan)
        .unwrap();
    assert!(again.number > lost[0].number, "{s:#?}");
}

/// The machine's software is the host's root, /tmp included: an abperf in a clone under /tmp
/// (the suite run from there) is found and runs in the guest. The test's own abperf is linked
/// (or copied) under the host's /tmp, wherever the clone is, and the machine runs that one.
#[test]
fn machine_runs_an_abperf_that_lives_under_the_hosts_tmp() {
    let ks = match common::machine::kernels(PROGRAMS) {
        Ok(k) => k,
        Err(why) => return common::skip(&why),
    };
    let dir = tempfile::Builder::new()
        .prefix("abperf-under-tmp")
        .tempdir_in("/tmp")
        .unwrap();
    let bin = dir.path().join("abperf");
    if std::fs::hard_link(BIN, &bin).is_err() {
        std::fs::copy(BIN, &bin).unwrap();
    }
    let m = Machine::new(
        ks,
        &format!(
            "{} --version; echo \"abperf under /tmp: $?\"\n",
            bin.display()
        ),
    );
    let q = m.power_on(0);
    m.wait_off(0, q, Duration::from_secs(180));
    let console = m.console(0);
    assert!(console.contains("abperf under /tmp: 0"), "{console}");
    assert!(
        console.contains(&format!("abperf {}", env!("CARGO_PKG_VERSION"))),
        "{console}"
    );
}

/// The unit abperf installs on a machine with systemd (the QEMU machine above has no systemd:
/// its init runs the same `abperf boot-loop resume`): systemd's own checker finds nothing to
/// say about it (it warns on stderr, and still exits 0, for a bad setting).
#[test]
fn the_systemd_unit_passes_systemd_analyze_verify() {
    if !common::on_path("systemd-analyze") {
        return common::skip("systemd-analyze not on $PATH (package systemd)");
    }
    let lab = common::Lab::new();
    let out = lab.run(&["boot-loop", "unit"]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let unit = lab.write("abperf-boot-loop.service", &out.stdout);
    assert!(out.stdout.contains("ExecStart="), "{}", out.stdout);
    let v = Command::new("systemd-analyze")
        .args(["verify", &unit])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&v.stderr);
    assert!(v.status.success() && err.trim().is_empty(), "{err}");
    // The checker does complain about a broken unit: the test can fail.
    let broken = lab.write(
        "abperf-broken.service",
        out.stdout.replace("Type=exec", "Type=bogus"),
    );
    let v = Command::new("systemd-analyze")
        .args(["verify", &broken])
        .output()
        .unwrap();
    assert!(!v.stderr.is_empty());
}

/// Without --reboot-this-machine the loop prints what it would do and stops there, naming the
/// flag: nothing is stored, nothing loaded. (This test never lets a loop start on this machine.)
#[test]
fn without_the_explicit_flag_the_plan_is_printed_and_nothing_happens() {
    let ks = match common::machine::kernels(PROGRAMS) {
        Ok(k) => k,
        Err(why) => return common::skip(&why),
    };
    let lab = common::Lab::new();
    let mut args: Vec<String> = Vec::new();
    for k in &ks {
        let image = lab.path(&format!("boot/vmlinuz-{}", k.release));
        std::fs::create_dir_all(image.parent().unwrap()).unwrap();
        std::fs::copy(&k.vmlinuz, &image).unwrap();
        lab.write(&format!("boot/initrd.img-{}", k.release), "initramfs");
        args.extend(["--kernel".into(), image.display().to_string()]);
    }
    let mut full: Vec<&str> = vec!["run", "--boot-on-host", "kexec", "--boot-hook", "manual"];
    full.extend(args.iter().map(String::as_str));
    full.extend(["--append", "pti=on", "--boots", "2", "-r", "1", "true"]);
    let out = lab.run(&full);
    assert_eq!(out.code, Some(2), "{}", out.stderr);
    assert!(
        out.stderr.contains("reboots THIS machine 4 times"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("add --reboot-this-machine"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains(" pti=on)"), "{}", out.stderr);
    assert!(!lab.db().exists() || lab.run(&["list"]).stdout.trim().lines().count() <= 1);
    // Reboot mode on a machine without a Boot Loader Interface loader (this one, unless its
    // efivarfs says otherwise) is refused, naming what it supports.
    let bli = "/sys/firmware/efi/efivars/LoaderInfo-4a67b082-0a4c-41cf-b6c7-440b29bb8c4f";
    let root = std::os::unix::fs::MetadataExt::uid(&std::fs::metadata("/proc/self").unwrap()) == 0;
    if root && !std::path::Path::new(bli).exists() {
        let reboot: Vec<&str> = full
            .iter()
            .map(|a| if *a == "kexec" { "reboot" } else { a })
            .collect();
        let out = lab.run(&reboot);
        assert_eq!(out.code, Some(1), "{}", out.stderr);
        assert!(
            out.stderr.contains("--boot-on-host reboot: ")
                && out
                    .stderr
                    .contains("Boot Loader Interface loaders with one-shot entries")
                && out.stderr.contains("GRUB (grub-reboot) is not supported"),
            "{}",
            out.stderr
        );
    }
    // VM-only options and kernel packages are refused by name.
    let mut vm = full.clone();
    vm.extend(["--accel", "tcg"]);
    let out = lab.run(&vm);
    assert_eq!(out.code, Some(2));
    assert!(
        out.stderr.contains("--accel is for kernels booted in VMs"),
        "{}",
        out.stderr
    );
    let out = lab.run(&[
        "run",
        "--boot-on-host",
        "kexec",
        "--kernel",
        "linux-image-amd64",
        "true",
    ]);
    assert_eq!(out.code, Some(2));
    assert!(
        out.stderr.contains("an installed kernel image"),
        "{}",
        out.stderr
    );
}

/// `boot-loop stop` in the first loop boot ends the loop there: the experiment is marked
/// stopped, nothing more is booted, and `resume` at the next boot has nothing to do.
#[test]
fn boot_loop_stop_ends_the_loop_in_the_boot_it_runs_in() {
    let ks = match common::machine::kernels(PROGRAMS) {
        Ok(k) => k,
        Err(why) => return common::skip(&why),
    };
    let stop = format!("{BIN} boot-loop status; {BIN} boot-loop stop; echo \"stop: $?\"");
    let m = Machine::new(
        ks.clone(),
        &boot_script(&loop_command(&ks, 1, 1, "true"), &stop),
    );
    let q = m.power_on(0);
    m.wait_off(0, q, Duration::from_secs(200));
    let console = m.console(0);
    assert!(
        console.contains("experiment 1: boot loop (kexec) running"),
        "{console}"
    );
    assert!(console.contains("boot loop stopped"), "{console}");
    assert!(console.contains("stop: 0"), "{console}");
    assert!(console.contains("no boot loop is running"), "{console}");
    assert_eq!(
        console.matches("machine: up ").count(),
        2,
        "home, then the first loop boot only:\n{console}"
    );
    let db = m.store();
    let s = read_store(&db);
    assert_eq!(s.status, "interrupted", "{s:#?}");
    // `run --resume` does not take a loop over (its boots are this machine's own).
    let mut c = Command::new(BIN);
    c.args(["run", "--resume", "1", "--db"]).arg(&db);
    let r = common::run_within(c, Duration::from_secs(30), "run --resume");
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(
        r.stderr.contains("is a boot loop on this machine"),
        "{}",
        r.stderr
    );
    assert_eq!(
        s.ended.as_deref(),
        Some("stopped by `abperf boot-loop stop`"),
        "{s:#?}"
    );
    assert_eq!(s.runs, 0, "{s:#?}");
}

/// A boot that reaches abperf later than --boot-timeout after its kexec ends the loop with the
/// reason stored, and the machine goes back to its default kernel.
#[test]
fn a_boot_slower_than_boot_timeout_ends_the_loop_and_the_machine_goes_home() {
    let ks = match common::machine::kernels(PROGRAMS) {
        Ok(k) => k,
        Err(why) => return common::skip(&why),
    };
    // A kernel takes seconds to boot under TCG: one second is too little.
    let start = loop_command(&ks, 1, 1, "true").replace(" --seed 7", " --seed 7 --boot-timeout 1");
    let m = Machine::new(ks.clone(), &boot_script(&start, ""));
    let q = m.power_on(0);
    m.wait_off(0, q, Duration::from_secs(200));
    let console = m.console(0);
    assert_eq!(
        console.matches("machine: up ").count(),
        2,
        "home, then the first loop boot only:\n{console}"
    );
    assert!(
        console.contains("the boot loop is over; rebooting into this machine's default kernel"),
        "{console}"
    );
    let s = read_store(&m.store());
    assert_eq!(s.status, "failed", "{s:#?}");
    let why = s.ended.clone().unwrap_or_default();
    assert!(
        why.contains("after the kexec, more than --boot-timeout 1 s"),
        "{s:#?}"
    );
    assert_eq!(s.boots.len(), 1, "{s:#?}");
    assert_eq!(s.boots[0].status, "failed", "{s:#?}");
    assert_eq!(s.runs, 0, "{s:#?}");
}
