//! Integration tests of `abperf doctor` and the noise controls of `abperf run`: the real binary
//! against the real kernel files (THP, perf_event_paranoid, drop_caches, memfd, tmpfs mounts).

mod common;
use abperf::store::Store;
use common::{BIN, Lab};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

const THP: &str = "/sys/kernel/mm/transparent_hugepage/enabled";
const PARANOID: &str = "/proc/sys/kernel/perf_event_paranoid";

/// Tests that change kernel settings (THP, --fix/--tune) must not overlap.
static KNOB_LOCK: Mutex<()> = Mutex::new(());

fn selected(content: &str) -> String {
    abperf::measure::env::selected_choice(content)
}

/// Puts THP and perf_event_paranoid back as they were when the test started, even on panic.
struct PutBack(Vec<(&'static str, String)>);

impl PutBack {
    fn save(paths: &[&'static str]) -> PutBack {
        PutBack(
            paths
                .iter()
                .filter(|p| Path::new(p).exists())
                .map(|p| (*p, std::fs::read_to_string(p).unwrap()))
                .collect(),
        )
    }
}

impl Drop for PutBack {
    fn drop(&mut self) {
        for (p, content) in &self.0 {
            let _ = std::fs::write(p, selected(content));
        }
    }
}

#[test]
fn doctor_reports_this_machine_and_exits_0() {
    // It reads THP, which the --fix test changes: not while that test runs.
    let _g = KNOB_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let lab = Lab::new();
    let dir = &lab.dir;
    let db = dir.path().join("d.db");
    let db = db.to_str().unwrap();
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap();
    let vm = cpuinfo
        .lines()
        .find(|l| l.starts_with("flags"))
        .unwrap()
        .split_whitespace()
        .any(|f| f == "hypervisor");
    let governors = std::fs::read_dir("/sys/devices/system/cpu")
        .unwrap()
        .flatten()
        .any(|e| e.path().join("cpufreq/scaling_governor").exists());
    let thp_mode = std::fs::read_to_string(THP).ok().map(|s| selected(&s));

    let o = lab.run(&["doctor", "--db", db, "--sample", "0.3"]);
    assert_eq!(o.code, Some(0), "{}", o.all());
    let out = &o.stdout;
    let line = |name: &str| -> String {
        out.lines()
            .find(|l| l.split_whitespace().any(|w| w == name) && !l.starts_with(' '))
            .unwrap_or_else(|| panic!("no line for {name} in:\n{out}"))
            .to_string()
    };
    if vm {
        assert!(line("virtualization").contains("virtual machine"), "{out}");
    } else {
        assert!(line("virtualization").contains("bare metal"), "{out}");
    }
    if !governors {
        assert!(
            line("cpufreq_governor").starts_with("not available"),
            "{out}"
        );
    }
    if let Some(mode) = &thp_mode {
        assert!(line("thp").contains(&format!("enabled: {mode}")), "{out}");
    }
    assert!(out.contains("21 checks:"), "{out}");

    let o = lab.run(&["doctor", "--db", db, "--format", "json", "--sample", "0.2"]);
    assert_eq!(o.code, Some(0), "{}", o.all());
    let doc = o.json();
    let checks = doc["checks"].as_array().unwrap();
    assert_eq!(checks.len(), 21);
    let mut names = Vec::new();
    for c in checks {
        let status = c["status"].as_str().unwrap();
        assert!(
            ["ok", "warn", "bad", "info", "not available"].contains(&status),
            "{c}"
        );
        assert!(!c["finding"].as_str().unwrap().is_empty(), "{c}");
        assert!(!c["why"].as_str().unwrap().is_empty(), "{c}");
        names.push(c["name"].as_str().unwrap().to_string());
    }
    names.sort();
    names.dedup();
    assert_eq!(names.len(), 21);
    let by = |n: &str| checks.iter().find(|c| c["name"] == n).unwrap().clone();
    if !governors {
        assert_eq!(by("cpufreq_governor")["status"], "not available");
    }
    // KVM for kernel variants: without /dev/kvm it cannot be usable, and the check says why and
    // what to do; whatever the verdict, a fix is given unless KVM works.
    let kvm = by("kvm");
    if !Path::new("/dev/kvm").exists() {
        assert_eq!(kvm["status"], "warn", "{kvm}");
        assert!(
            kvm["finding"].as_str().unwrap().contains("/dev/kvm"),
            "{kvm}"
        );
    }
    if kvm["status"] != "ok" {
        assert!(!kvm["fix"].as_str().unwrap_or("").is_empty(), "{kvm}");
    }
    // The boot loop on this machine: a kernel without kexec has no kexec_load_disabled sysctl,
    // and the check says so with the fix.
    let boot_loop = by("boot_loop");
    if !Path::new("/proc/sys/kernel/kexec_load_disabled").exists() {
        assert_eq!(boot_loop["status"], "warn", "{boot_loop}");
        assert!(
            boot_loop["finding"]
                .as_str()
                .unwrap()
                .contains("this kernel has no kexec"),
            "{boot_loop}"
        );
        assert!(
            boot_loop["fix"].as_str().unwrap().contains("CONFIG_KEXEC"),
            "{boot_loop}"
        );
    }
    // Reboot mode needs UEFI and a Boot Loader Interface loader: without efivarfs it says why.
    if !Path::new("/sys/firmware/efi/efivars").exists() {
        assert!(
            boot_loop["finding"]
                .as_str()
                .unwrap()
                .contains("--boot-on-host reboot: not possible: no EFI variables"),
            "{boot_loop}"
        );
    }
    if vm {
        assert!(
            by("virtualization")["finding"]
                .as_str()
                .unwrap()
                .contains("virtual machine")
        );
    }
    let o = lab.run(&["doctor", "--format", "yaml"]);
    assert_eq!(o.code, Some(2), "{}", o.all());
}

/// A test that writes THP or the other tuned files: it holds [`KNOB_LOCK`], starts from THP
/// 'always' (what --fix changes, to madvise), and puts THP and perf_event_paranoid back as they
/// were when it ends, even on panic. Its lab's store is the --db `db`.
struct KnobTest {
    lab: Lab,
    db: String,
    thp_before: String,
    paranoid_before: String,
    // Dropped in this order: the files are put back before the lock is released.
    _put_back: PutBack,
    _g: std::sync::MutexGuard<'static, ()>,
}

impl KnobTest {
    fn start() -> KnobTest {
        let g = KNOB_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        if !Path::new(THP).exists() {
            panic!("{THP} is absent: this kernel has no THP; the THP tests cannot run here");
        }
        let put_back = PutBack::save(&[THP, PARANOID]);
        let lab = Lab::new();
        let db = lab.p("f.db");
        std::fs::write(THP, "always").unwrap();
        let thp_before = std::fs::read_to_string(THP).unwrap();
        let paranoid_before = std::fs::read_to_string(PARANOID).unwrap();
        assert!(thp_before.contains("[always]"));
        KnobTest {
            lab,
            db,
            thp_before,
            paranoid_before,
            _put_back: put_back,
            _g: g,
        }
    }

    /// `abperf COMMAND --db DB ARGS...` (`args` is COMMAND and ARGS).
    fn run(&self, args: &[&str]) -> common::Out {
        self.lab
            .run(&[&args[..1], &["--db", &self.db], &args[1..]].concat())
    }

    /// THP and perf_event_paranoid are exactly as they were when the test started.
    #[track_caller]
    fn assert_put_back(&self) {
        assert_eq!(std::fs::read_to_string(THP).unwrap(), self.thp_before);
        assert_eq!(
            std::fs::read_to_string(PARANOID).unwrap(),
            self.paranoid_before
        );
    }

    /// The selected THP mode now.
    fn thp(&self) -> String {
        selected(&std::fs::read_to_string(THP).unwrap())
    }

    /// A workload that appends the THP mode it sees to the file `seen`.
    fn thp_recorder(&self) -> String {
        format!("grep -o '\\[[a-z]*\\]' {THP} >> {}", self.lab.p("seen"))
    }

    /// What the [`thp_recorder`](Self::thp_recorder) runs saw.
    fn seen(&self) -> String {
        std::fs::read_to_string(self.lab.path("seen")).unwrap()
    }

    /// `doctor --fix`, which must succeed.
    fn fix(&self) -> common::Out {
        let o = self.run(&["doctor", "--fix"]);
        assert_eq!(o.code, Some(0), "{}", o.all());
        o
    }

    /// `doctor --restore`, which must succeed.
    fn restore(&self) -> common::Out {
        let o = self.run(&["doctor", "--restore"]);
        assert_eq!(o.code, Some(0), "{}", o.all());
        o
    }

    /// `run -r RUNS --warmup 0 --tune` of the THP recorder; it must succeed.
    fn tuned_run(&self, runs: &str) {
        let cmd = self.thp_recorder();
        let o = self.run(&["run", "-r", runs, "--warmup", "0", "--tune", &cmd]);
        assert_eq!(o.code, Some(0), "{}", o.all());
    }

    /// `abperf run --tune ... COMMAND` started in the background, once experiment 1 has `runs`
    /// runs stored.
    fn tuned_run_until(&self, args: &[&str], stderr: Stdio, runs: usize) -> std::process::Child {
        // Through the lab, as the resume is: its approvals are in the lab's config directory.
        let child = self
            .lab
            .cmd(&[&["run", "--db", &self.db], args].concat())
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .unwrap();
        let t = Instant::now();
        loop {
            let store = Store::open(Path::new(&self.db)).unwrap();
            if store.runs(1).map(|r| r.len()).unwrap_or(0) >= runs {
                break;
            }
            assert!(t.elapsed() < Duration::from_secs(30), "no runs in 30 s");
            std::thread::sleep(Duration::from_millis(50));
        }
        child
    }

    /// The lab's store, opened in this process.
    fn store(&self) -> Store {
        Store::open(Path::new(&self.db)).unwrap()
    }
}

#[test]
fn fix_changes_thp_always_to_madvise() {
    let t = KnobTest::start();
    t.fix()
        .all_has(&format!("changed {THP}: 'always' -> 'madvise'"));
    assert_eq!(t.thp(), "madvise");
}

// doctor (check mode) after --fix tells that settings are outstanding.
#[test]
fn doctor_after_fix_says_not_restored_yet() {
    let t = KnobTest::start();
    t.fix();
    t.run(&["doctor", "--sample", "0.1"])
        .all_has("not restored yet");
}

#[test]
fn restore_after_fix_puts_back_exactly_what_was_there() {
    let t = KnobTest::start();
    t.fix();
    t.restore().all_has(&format!("restored {THP}: 'always'"));
    t.assert_put_back();
}

#[test]
fn a_second_restore_has_nothing_to_restore() {
    let t = KnobTest::start();
    t.fix();
    t.restore();
    t.restore().all_has("nothing to restore");
}

// run --tune: applied for the experiment (the workload sees madvise), restored at the end, and
// the environment snapshot shows the tuned state.
#[test]
fn run_tune_applies_for_the_experiment_only_and_records_it() {
    let t = KnobTest::start();
    t.tuned_run("2");
    assert_eq!(t.seen(), "[madvise]\n[madvise]\n");
    t.assert_put_back();
    let store = t.store();
    let exp = store.experiment(1).unwrap();
    assert!(
        exp.environment["doctor"]["thp"]
            .as_str()
            .unwrap()
            .contains("enabled: madvise"),
        "{}",
        exp.environment["doctor"]
    );
    let tune = exp.design["noise"]["tune"].as_array().unwrap();
    assert!(
        tune.iter()
            .any(|s| s["path"] == THP && s["value"] == "madvise")
    );
    assert!(store.tune_outstanding(None, None).unwrap().is_empty());
}

#[test]
fn a_variant_knob_on_the_same_file_wins_over_tune() {
    let t = KnobTest::start();
    let (k, cmd) = (format!("{THP}=never"), t.thp_recorder());
    let o = t.run(&["run", "-r", "1", "--warmup", "0", "--tune", "-k", &k, &cmd]);
    assert_eq!(o.code, Some(0), "{}", o.all());
    o.all_has("it is a variant knob");
    assert!(t.seen().ends_with("[never]\n"));
    assert_eq!(std::fs::read_to_string(THP).unwrap(), t.thp_before);
}

// SIGINT in the middle of a tuned experiment: everything comes back.
#[test]
fn sigint_in_a_tuned_experiment_puts_everything_back() {
    let t = KnobTest::start();
    let args = ["-r", "100", "--warmup", "0", "--tune", "sleep 0.1"];
    let mut child = t.tuned_run_until(&args, Stdio::piped(), 2);
    assert_eq!(t.thp(), "madvise");
    // SAFETY: plain kill(2) of our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    t.assert_put_back();
    let store = t.store();
    assert!(store.tune_outstanding(None, None).unwrap().is_empty());
    assert_eq!(
        store.experiment(1).unwrap().status,
        abperf::model::Status::Interrupted
    );
}

// kill -9 leaves the tuned values; --resume restores the recorded originals at the end.
#[test]
fn kill_9_leaves_the_tuned_values_and_resume_restores_them() {
    let t = KnobTest::start();
    let args = ["-r", "4", "--warmup", "0", "--tune", "sleep 0.2"];
    let mut child = t.tuned_run_until(&args, Stdio::null(), 1);
    // SAFETY: plain kill(2) of our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    child.wait().unwrap();
    assert_eq!(t.thp(), "madvise");
    let o = t.run(&["run", "--resume", "1"]);
    assert_eq!(o.code, Some(0), "{}", o.all());
    t.assert_put_back();
    assert!(t.store().tune_outstanding(None, None).unwrap().is_empty());
}

// Comparing the tuned experiment with an untuned one lists the doctor differences.
#[test]
fn compare_of_a_tuned_and_an_untuned_experiment_lists_the_doctor_differences() {
    let t = KnobTest::start();
    t.tuned_run("2");
    let cmd = t.thp_recorder();
    let o = t.run(&["run", "-r", "2", "--warmup", "0", &cmd]);
    assert_eq!(o.code, Some(0), "{}", o.all());
    let o = t.run(&["compare", "1", "2"]);
    let out = o.all();
    assert!(out.contains("doctor.thp"), "{out}");
    assert!(out.contains("enabled: always"), "{out}");
    assert!(!out.contains("doctor_sampled"), "{out}");
}

fn export_runs(db: &str, id: i64) -> Vec<abperf::model::Run> {
    Store::open(Path::new(db)).unwrap().runs(id).unwrap()
}

#[test]
fn noise_controls_are_not_timed() {
    let lab = Lab::new();
    let dir = &lab.dir;
    let db = dir.path().join("n.db");
    let db = db.to_str().unwrap();
    let tree = dir.path().join("tree");
    std::fs::create_dir_all(tree.join("a")).unwrap();
    std::fs::write(tree.join("a/f"), vec![7u8; 1 << 20]).unwrap();
    let t = Instant::now();
    let o = lab.run(&[
        "run",
        "--db",
        db,
        "-N",
        "-r",
        "3",
        "--warmup",
        "0",
        "--pre",
        "sleep 0.5",
        "--drop-caches",
        "--pre-read",
        tree.to_str().unwrap(),
        "--perturb-layout",
        "32",
        "true",
    ]);
    assert_eq!(o.code, Some(0), "{}", o.all());
    // The pre steps really ran ...
    assert!(t.elapsed() >= Duration::from_millis(1500));
    // ... and none of them is in the timed region.
    let runs = export_runs(db, 1);
    assert_eq!(runs.len(), 3);
    for r in &runs {
        let wall = r.value("wall_ns").unwrap();
        // `--pre` sleeps 0.5 s: a run under that cannot hold it. (`true` itself can take
        // 0.2 s here: --drop-caches makes its exec read the binary back from a busy disk.)
        assert!(
            wall < 450e6,
            "wall time of `true` {wall} ns includes the pre steps"
        );
    }
    let store = Store::open(Path::new(db)).unwrap();
    let noise = &store.experiment(1).unwrap().design["noise"];
    assert_eq!(noise["drop_caches"], true);
    assert_eq!(noise["perturb_layout_mib"], 32);
    assert_eq!(
        noise["pre_read"],
        tree.canonicalize().unwrap().to_str().unwrap()
    );

    // Bad input: clear usage errors, nothing run.
    let o = lab.run(&["run", "--db", db, "--perturb-layout", "0", "true"]);
    assert_eq!(o.code, Some(2), "{}", o.all());
    assert!(o.all().contains("--perturb-layout 0"), "{}", o.all());
    let o = lab.run(&["run", "--db", db, "--pre-read", "/nonexistent/dir", "true"]);
    assert_eq!(o.code, Some(2), "{}", o.all());
    assert!(
        o.all().contains("--pre-read /nonexistent/dir"),
        "{}",
        o.all()
    );
}

/// Every ballast memfd open in any process.
fn ballast_fds() -> Vec<String> {
    let mut out = Vec::new();
    for p in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(fds) = std::fs::read_dir(p.path().join("fd")) {
            for fd in fds.flatten() {
                if let Ok(l) = std::fs::read_link(fd.path())
                    && l.to_string_lossy().contains("abperf-ballast")
                {
                    out.push(fd.path().display().to_string());
                }
            }
        }
    }
    out
}

#[test]
fn ballast_changes_size_each_run_and_is_gone_after() {
    let lab = Lab::new();
    let dir = &lab.dir;
    let db = dir.path().join("b.db");
    let db = db.to_str().unwrap();
    let log = dir.path().join("sizes");
    // The workload's parent is abperf: list its ballast memfds and their sizes.
    let cmd = format!(
        "for f in /proc/$PPID/fd/*; do case $(readlink $f) in *abperf-ballast*) stat -L -c %s $f;; esac; done >> {}; echo --- >> {}",
        log.display(),
        log.display()
    );
    let o = lab.run(&[
        "run",
        "--db",
        db,
        "-r",
        "6",
        "--warmup",
        "0",
        "--seed",
        "7",
        "--perturb-layout",
        "16",
        &cmd,
    ]);
    assert_eq!(o.code, Some(0), "{}", o.all());
    let s = std::fs::read_to_string(&log).unwrap();
    let runs: Vec<Vec<u64>> = s
        .split("---\n")
        .filter(|b| !b.is_empty())
        .map(|b| b.lines().map(|l| l.parse().unwrap()).collect())
        .collect();
    assert_eq!(runs.len(), 6, "{s}");
    let mut sizes = Vec::new();
    for r in &runs {
        assert_eq!(r.len(), 1, "exactly one ballast block during a run: {s}");
        assert!(r[0] >= 4096 && r[0] <= 16 << 20, "{s}");
        sizes.push(r[0]);
    }
    sizes.sort();
    sizes.dedup();
    assert!(
        sizes.len() >= 4,
        "ballast size should change run to run: {s}"
    );
    // The sizes follow the seed.
    let expect: Vec<u64> = (0..6)
        .map(|seq| abperf::runner::noise::ballast_size(16 << 20, 7, seq))
        .collect();
    let mut got: Vec<u64> = runs.iter().map(|r| r[0]).collect();
    let mut want = expect.clone();
    got.sort();
    want.sort();
    assert_eq!(got, want);
    assert!(ballast_fds().is_empty(), "{:?}", ballast_fds());
}

fn mounted(path: &Path) -> bool {
    std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap()
        .lines()
        .any(|l| l.split_whitespace().nth(4) == Some(path.to_str().unwrap()))
}

#[test]
fn tmpfs_copy_runs_in_a_private_tmpfs_and_is_removed_also_on_sigint() {
    let lab = Lab::new();
    let dir = &lab.dir;
    let db = dir.path().join("t.db");
    let db = db.to_str().unwrap();
    let tree = dir.path().join("linux");
    std::fs::create_dir_all(tree.join("kernel")).unwrap();
    std::fs::write(tree.join("kernel/fork.c"), "int x;\n").unwrap();
    let log = dir.path().join("log");
    let cmd = format!(
        "pwd >> {l}; stat -f -c %T . >> {l}; cat kernel/fork.c >> {l}; echo x > new-file",
        l = log.display()
    );
    let o = lab.run(&[
        "run",
        "--db",
        db,
        "-r",
        "2",
        "--warmup",
        "0",
        "--tmpfs-copy",
        tree.to_str().unwrap(),
        "--pre-read",
        "kernel",
        &cmd,
    ]);
    assert_eq!(o.code, Some(0), "{}", o.all());
    let store = Store::open(Path::new(db)).unwrap();
    let noise = &store.experiment(1).unwrap().design["noise"];
    assert_eq!(noise["pre_read"], "kernel", "relative to the copy");
    assert_eq!(
        noise["tmpfs_copy"],
        tree.canonicalize().unwrap().to_str().unwrap()
    );
    drop(store);
    let s = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = s.lines().collect();
    assert_eq!(lines.len(), 6, "{s}");
    let workdir = PathBuf::from(lines[0]);
    assert!(workdir.ends_with("linux"), "{s}");
    assert_ne!(workdir, tree);
    assert_eq!(lines[1], "tmpfs");
    assert_eq!(lines[2], "int x;");
    // The copy is gone, the original untouched.
    let mountpoint = workdir.parent().unwrap().to_path_buf();
    assert!(!mountpoint.exists(), "{}", mountpoint.display());
    assert!(!mounted(&mountpoint));
    assert!(!tree.join("new-file").exists());

    // While it runs, the mount is invisible outside abperf; after SIGINT it is gone.
    let log2 = dir.path().join("log2");
    let cmd = format!("pwd >> {}; sleep 0.2", log2.display());
    let mut child = Command::new(BIN)
        .args([
            "run",
            "--db",
            db,
            "-r",
            "100",
            "--warmup",
            "0",
            "--tmpfs-copy",
            tree.to_str().unwrap(),
            &cmd,
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let t = Instant::now();
    let workdir = loop {
        if let Ok(s) = std::fs::read_to_string(&log2)
            && let Some(l) = s.lines().next()
        {
            break PathBuf::from(l);
        }
        assert!(t.elapsed() < Duration::from_secs(30), "no run in 30 s");
        std::thread::sleep(Duration::from_millis(20));
    };
    let mountpoint = workdir.parent().unwrap().to_path_buf();
    assert!(mountpoint.exists());
    assert!(
        !mounted(&mountpoint),
        "the tmpfs should be private to abperf"
    );
    let their = std::fs::read_to_string(format!("/proc/{}/mountinfo", child.id())).unwrap();
    assert!(their.contains(mountpoint.to_str().unwrap()));
    // SAFETY: plain kill(2) of our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    assert_eq!(child.wait().unwrap().code(), Some(130));
    assert!(!mountpoint.exists(), "{}", mountpoint.display());
}
