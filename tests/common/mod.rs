//! The one helper every integration test uses: a [`Lab`] is a temporary directory with its own
//! store (`$ABPERF_DB`), in which the real abperf binary runs; [`Out`] is what a finished
//! command printed. Fixtures live in tests/data ([`data`]).
//!
//! One scenario per test, in three parts: a line of setup, the command, the assertion.
//! [`abtest!`] declares such a test with a fresh lab:
//!
//! ```ignore
//! abtest!(report_of_nothing_is_a_lookup_error, |lab| {
//!     lab.fails(&["report", "latest"], 2).err_has("no experiment");
//! });
//! ```
//!
//! A scenario whose setup is expensive (a benchmark suite, a browser) shares it with the other
//! scenarios of its file: the first test to ask makes it in a `static` [`std::sync::OnceLock`],
//! in a lab of [`Lab::shared`], and each test then checks one thing of it.
#![allow(dead_code)]
#![allow(clippy::disallowed_macros)] // tests print what they saw to stderr

pub mod debian_repo;
pub mod esp;
pub mod fleet;
pub mod kernels;
pub mod machine;
pub mod planted;
pub mod postgres;
pub mod seeded;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Run to completion within `limit`, else kill it and fail. Output is drained as it comes (a
/// full pipe would stall the child).
pub fn run_within(mut c: Command, limit: Duration, what: &str) -> Out {
    use std::io::Read;
    let mut child = c
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            let _ = r.read_to_end(&mut v);
            v
        })
    };
    let out = drain(Box::new(child.stdout.take().unwrap()));
    let err = drain(Box::new(child.stderr.take().unwrap()));
    let status = wait_within(&mut child, limit, what);
    Out::from(
        std::process::Output {
            status,
            stdout: out.join().unwrap(),
            stderr: err.join().unwrap(),
        },
        &[what],
    )
}

/// Wait for `child` to end within `limit`, else kill it and fail naming `what`.
pub fn wait_within(
    child: &mut std::process::Child,
    limit: Duration,
    what: &str,
) -> std::process::ExitStatus {
    let t = Instant::now();
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s;
        }
        if t.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: still running after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `abtest!(name, |lab| { ... })`: a `#[test]` named `name` whose body runs with `lab`, a fresh
/// [`Lab`]. Doc comments and attributes before the name go on the test.
#[macro_export]
macro_rules! abtest {
    ($(#[$attr:meta])* $name:ident, |$lab:ident| $body:block) => {
        $(#[$attr])*
        #[test]
        fn $name() {
            let $lab = $crate::common::Lab::new();
            $body
        }
    };
}

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_abperf");

/// The path of fixture `name` in tests/data.
pub fn data(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
        .display()
        .to_string()
}

/// A lab's directory: temporary (removed when the lab is dropped) or, for a lab that lives in a
/// `static` and so is never dropped, a fixed directory under target/tmp ([`Lab::shared`]).
pub struct Dir {
    path: PathBuf,
    _temp: Option<tempfile::TempDir>,
}

impl Dir {
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// A temporary directory with its own store.
pub struct Lab {
    pub dir: Dir,
    /// Extra environment for every command (see [`Lab::env`]).
    pub env: Vec<(String, String)>,
}

impl Default for Lab {
    fn default() -> Self {
        Lab::new()
    }
}

impl Lab {
    pub fn new() -> Lab {
        let temp = tempfile::tempdir().expect("a temporary directory");
        Lab {
            dir: Dir {
                path: temp.path().to_path_buf(),
                _temp: Some(temp),
            },
            env: Vec::new(),
        }
    }

    /// A lab for a fixture that several tests of one file share (kept in a `static`, which is
    /// never dropped): the directory target/tmp/lab-`name`, emptied here and left after the
    /// tests, so that each run reuses it instead of leaving a temporary directory behind.
    pub fn shared(name: &str) -> Lab {
        let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("lab-{name}"));
        match std::fs::remove_dir_all(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => panic!("{}: {e}", path.display()),
        }
        std::fs::create_dir_all(&path).unwrap();
        Lab {
            dir: Dir { path, _temp: None },
            env: Vec::new(),
        }
    }

    /// Set `key` to `value` for every command of this lab.
    pub fn env(mut self, key: &str, value: &str) -> Lab {
        self.env.push((key.to_string(), value.to_string()));
        self
    }

    /// A lab whose knob locks live in its own directory (`$ABPERF_LOCK_DIR`), so that knob
    /// claims and `doctor`'s view of them are this test's alone.
    pub fn with_own_locks() -> Lab {
        let lab = Lab::new();
        let locks = lab.p("locks");
        lab.env("ABPERF_LOCK_DIR", &locks)
    }

    /// The store every command of this lab uses (through `$ABPERF_DB`).
    pub fn db(&self) -> PathBuf {
        self.dir.path().join("abperf.db")
    }

    /// `rel` inside the lab's directory.
    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// `rel` as a string, for argument lists.
    pub fn p(&self, rel: &str) -> String {
        self.path(rel).display().to_string()
    }

    /// Write `contents` to `rel`; returns its path as a string.
    pub fn write(&self, rel: &str, contents: impl AsRef<[u8]>) -> String {
        let p = self.path(rel);
        if let Some(d) = p.parent() {
            std::fs::create_dir_all(d).unwrap();
        }
        std::fs::write(&p, contents).unwrap();
        p.display().to_string()
    }

    /// The abperf command with `args`, this lab's store, no standard input, and no
    /// `$ABPERF_METRICS_FILE` inherited (a workload's metrics go where the test says).
    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(BIN);
        c.args(args)
            .env("ABPERF_DB", self.db())
            // The designs a run approves are recorded in the lab's own config directory, not
            // in the user's (docs/security.md); a test may name another one.
            .env("XDG_CONFIG_HOME", self.path("config"))
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .env_remove("ABPERF_METRICS_FILE")
            // The tests' knobs are ordinary files in the temporary directory: accepted only
            // through this variable (a tmpfs or TMPDIR is never a kernel filesystem).
            .env("ABPERF_TEST_KNOB_DIR", std::env::temp_dir())
            .stdin(Stdio::null());
        c
    }

    /// Run to completion, whatever the exit code.
    pub fn run(&self, args: &[&str]) -> Out {
        Out::from(self.cmd(args).output().expect("abperf runs"), args)
    }

    /// Run; it must succeed.
    #[track_caller]
    pub fn ok(&self, args: &[&str]) -> Out {
        let o = self.run(args);
        assert_eq!(o.code, Some(0), "{o}");
        o
    }

    /// Run; it must exit with `code`.
    #[track_caller]
    pub fn fails(&self, args: &[&str], code: i32) -> Out {
        let o = self.run(args);
        assert_eq!(o.code, Some(code), "{o}");
        o
    }

    /// Start `abperf ARGS` in the background, its output discarded.
    pub fn start(&self, args: &[&str]) -> std::process::Child {
        self.cmd(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("abperf starts")
    }

    /// Wait (at most 60 s) until the latest experiment, newer than `after`, has at least `n`
    /// runs stored; its id.
    pub fn wait_for_runs_after(&self, after: i64, n: i64) -> i64 {
        let t = Instant::now();
        loop {
            if self.db().exists()
                && let Ok(list) = abperf::store::Store::open(&self.db()).and_then(|s| s.list())
                && let Some(e) = list.last()
                && e.id > after
                && e.runs_done >= n
            {
                return e.id;
            }
            assert!(
                t.elapsed() < Duration::from_secs(60),
                "no run stored in 60 s"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The lab's store, opened in this process.
    pub fn store(&self) -> abperf::store::Store {
        abperf::store::Store::open(&self.db()).expect("the lab's store opens")
    }

    /// Import `file` (in `format`) into stored experiment `id` as variant `variant`.
    pub fn import_variant(&self, id: &str, variant: &str, format: &str, file: &str) -> Out {
        self.ok(&[
            "import",
            "--experiment",
            id,
            "--format",
            format,
            "--variant",
            variant,
            file,
        ])
    }

    /// Import seed 000's `/usr/bin/time` lines as experiment `name`.
    pub fn seed000(&self, name: &str) -> Out {
        self.ok(&[
            "import",
            "--format",
            "time",
            "--new",
            name,
            &data("seed000-time.txt"),
        ])
    }
}

/// What a finished command did.
pub struct Out {
    pub args: Vec<String>,
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Out {
    pub fn from(o: Output, args: &[&str]) -> Out {
        Out {
            args: args.iter().map(|s| s.to_string()).collect(),
            code: o.status.code(),
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        }
    }

    /// Standard output as JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {self}"))
    }

    /// (exit code, standard output, standard error); -1 for a death by signal.
    pub fn parts(self) -> (i32, String, String) {
        (self.code.unwrap_or(-1), self.stdout, self.stderr)
    }

    /// Standard output and error together.
    pub fn all(&self) -> String {
        format!("{}{}", self.stdout, self.stderr)
    }

    /// Asserts that standard output contains `needle` (the failure shows the whole command).
    #[track_caller]
    pub fn has(&self, needle: &str) -> &Out {
        assert!(
            self.stdout.contains(needle),
            "no {needle:?} in stdout of {self}"
        );
        self
    }

    /// Asserts that standard output does not contain `needle`.
    #[track_caller]
    pub fn lacks(&self, needle: &str) -> &Out {
        assert!(
            !self.stdout.contains(needle),
            "{needle:?} in stdout of {self}"
        );
        self
    }

    /// Asserts that standard error contains `needle`.
    #[track_caller]
    pub fn err_has(&self, needle: &str) -> &Out {
        assert!(
            self.stderr.contains(needle),
            "no {needle:?} in stderr of {self}"
        );
        self
    }

    /// Asserts that standard output and error together contain `needle`.
    #[track_caller]
    pub fn all_has(&self, needle: &str) -> &Out {
        assert!(
            self.all().contains(needle),
            "no {needle:?} in the output of {self}"
        );
        self
    }
}

impl std::fmt::Display for Out {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "abperf {:?} exited {:?}\n--- stdout\n{}\n--- stderr\n{}",
            self.args, self.code, self.stdout, self.stderr
        )
    }
}

/// Check `doc` against docs/abperf-report.schema.json (the report JSON schema), panicking with
/// every violation.
pub fn assert_schema(doc: &serde_json::Value) {
    let errors = schema_errors(doc);
    assert!(errors.is_empty(), "not an abperf-report: {errors:#?}");
}

/// Every way `doc` breaks docs/abperf-report.schema.json.
pub fn schema_errors(doc: &serde_json::Value) -> Vec<String> {
    use std::sync::OnceLock;
    static V: OnceLock<jsonschema::Validator> = OnceLock::new();
    let v = V.get_or_init(|| {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/abperf-report.schema.json");
        let schema: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        jsonschema::validator_for(&schema).expect("the schema compiles")
    });
    v.iter_errors(doc)
        .map(|e| {
            // The message quotes the whole failing value: keep its start.
            let m: String = e.to_string().chars().take(300).collect();
            format!("at {} (schema {}): {m}", e.instance_path(), e.schema_path())
        })
        .collect()
}

/// Reports the calling test as skipped for `reason`, which an independent probe of this machine
/// (a file in /sys, a program on $PATH, CPUID) established; the caller then returns. libtest
/// has no "skipped" state, so the test still shows as `ok`: the reason goes to stderr and is
/// appended to the skip log (`$ABPERF_TEST_SKIP_LOG`, else `target/test-skips.log`), which
/// scripts/test.sh prints and counts after the suite.
pub fn skip(reason: &str) {
    use std::io::Write;
    let thread = std::thread::current();
    let test = thread.name().unwrap_or("?");
    let line = format!("{test}: {reason}\n");
    eprint!("skipped {line}");
    let log = std::env::var_os("ABPERF_TEST_SKIP_LOG")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target/test-skips.log"));
    // One write of one short line with O_APPEND: lines of concurrent tests do not interleave.
    let written = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log)
        .and_then(|mut f| f.write_all(line.as_bytes()));
    if let Err(e) = written {
        eprintln!("(cannot append to the skip log {}: {e})", log.display());
    }
}

/// Whether `program` is an executable file in a directory of `$PATH`.
pub fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(program).is_file()))
}

/// The `programs` not on `$PATH` ([`on_path`]), in their order.
pub fn not_on_path<'a>(programs: &[&'a str]) -> Vec<&'a str> {
    programs.iter().copied().filter(|p| !on_path(p)).collect()
}

/// What a flag's value is, as a user would tell kinds apart (tests/flags.rs, tests/flag_extremes.rs):
/// "switch", "one of a list", "whole number", "number" or "text"; panics on a value parser it
/// does not know, so a new kind is a decision made here.
pub fn value_kind(arg: &clap::Arg) -> &'static str {
    if !arg.get_action().takes_values() {
        return "switch";
    }
    if !arg.get_possible_values().is_empty() {
        return "one of a list";
    }
    let t = arg.get_value_parser().type_id();
    let is = |ids: &[std::any::TypeId]| ids.iter().any(|id| t == *id);
    if is(&[
        std::any::TypeId::of::<u8>(),
        std::any::TypeId::of::<u16>(),
        std::any::TypeId::of::<u32>(),
        std::any::TypeId::of::<u64>(),
        std::any::TypeId::of::<usize>(),
        std::any::TypeId::of::<i32>(),
        std::any::TypeId::of::<i64>(),
    ]) {
        "whole number"
    } else if is(&[std::any::TypeId::of::<f32>(), std::any::TypeId::of::<f64>()]) {
        "number"
    } else if is(&[
        std::any::TypeId::of::<String>(),
        std::any::TypeId::of::<std::path::PathBuf>(),
        std::any::TypeId::of::<std::ffi::OsString>(),
        std::any::TypeId::of::<abperf::store::Location>(),
    ]) {
        "text"
    } else {
        panic!(
            "--{:?}: a value parser this test does not know",
            arg.get_long()
        )
    }
}

/// `perf script` text of one recording with call chains: `n` samples in each `(symbol, n)`,
/// each called from `main` (what `perf script -F comm,tid,time,period,event,ip,sym,dso` prints).
pub fn perf_script_text(samples: &[(&str, u32)]) -> String {
    let mut out = String::new();
    let mut t = 0u64;
    for (symbol, n) in samples {
        for _ in 0..*n {
            t += 250;
            out.push_str(&format!(
                "hc 4242 {}.{:06}:     250000 cpu-clock: \n\t    1161 {symbol}+0x28 (/tmp/hc)\n\t    11a0 main+0x40 (/tmp/hc)\n\n",
                100 + t / 1_000_000,
                t % 1_000_000
            ));
        }
    }
    out
}
