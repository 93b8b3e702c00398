//! `kbuild` (seeds 000, 003): build a Linux tree out of tree (`make O=OUT`) with `tinyconfig` or
//! `defconfig`, `-j` = CPUs. The untimed `prepare` step configures, runs `make clean` and then
//! `make prepare` (generated headers and host tools), so the timed run is the compilation; it
//! leaves a marker that the timed run consumes, so a build that was not prepared (and would be
//! incremental, measuring nothing) is refused.
//!
//! The default tree is Debian's `linux-source-X.Y` package (`/usr/src/linux-source-X.Y.tar.xz`),
//! unpacked once into the cache directory.

use super::Workload;
use super::metrics::{Direction, Metric, MetricSpec, metric};
use super::params::{Kind, ParamSpec, Params, SEED};
use super::{Interrupted, sys};
use anyhow::{Context, Result, anyhow, bail};
use serde::{Deserialize, Serialize};
use sha2::Digest;
use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

fn check_dirs(s: &str) -> Result<(), String> {
    if s == "all" {
        return Ok(());
    }
    for d in s.split('+') {
        if d.is_empty()
            || d.starts_with('/')
            || d.split('/').any(|c| c == ".." || c == ".")
            || !d
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"_-/".contains(&b))
        {
            return Err(format!("{d:?} is not a relative directory of the tree"));
        }
    }
    Ok(())
}

pub const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "tree",
        default: "debian",
        kind: Kind::Path,
        help: "kernel source tree (left untouched: the build goes to out), or debian = the \
               linux-source package's tarball in /usr/src, unpacked once into the cache",
    },
    ParamSpec {
        name: "config",
        default: "tinyconfig",
        kind: Kind::Choice(&["tinyconfig", "defconfig"]),
        help: "configuration target run by prepare",
    },
    ParamSpec {
        name: "jobs",
        default: "0",
        kind: Kind::Int { min: 0, max: 4096 },
        help: "make -j; 0 = the number of CPUs this process may use",
    },
    ParamSpec {
        name: "dirs",
        default: "all",
        kind: Kind::Custom {
            check: check_dirs,
            allowed: "all, or relative directories of the tree joined by '+' (e.g. init or \
                      init+kernel)",
        },
        help: "what the timed run builds: all (the kernel image) or only these directories",
    },
    ParamSpec {
        name: "out",
        default: "auto",
        kind: Kind::Path,
        help: "build directory; auto = <cache>/kbuild/out-<tree>-<config>",
    },
    SEED,
];

pub const METRICS: &[MetricSpec] = &[
    MetricSpec {
        name: "build_ns",
        unit: "ns",
        direction: Direction::LowerIsBetter,
        help: "wall time of the make run",
    },
    MetricSpec {
        name: "cpu_user_ns",
        unit: "ns",
        direction: Direction::LowerIsBetter,
        help: "user CPU time of make and everything it ran",
    },
    MetricSpec {
        name: "cpu_sys_ns",
        unit: "ns",
        direction: Direction::LowerIsBetter,
        help: "system CPU time of make and everything it ran",
    },
    MetricSpec {
        name: "files_compiled",
        unit: "files",
        direction: Direction::Count,
        help: "`CC` lines of the build output",
    },
];

pub const WORKLOAD: Workload = Workload {
    name: "kbuild",
    version: 1,
    summary: "make -jCPUS of a Linux tree (tinyconfig or defconfig), prepared untimed",
    stresses: "a real mixed load: process creation (a compiler per file), exec, page faults, \
               page cache reads, short-lived mms and their TLB flushes, scheduler load balancing",
    kernel_paths: &[
        "fork/exec/exit of thousands of processes (copy_process, load_elf_binary, exit_mmap)",
        "anonymous and file page faults, filemap_read, the dentry cache (path lookups)",
        "flush_tlb_mm_range (seed 002's histogram is of a kernel compile), context switches",
    ],
    modelled_on: "seed 000 (Dave Hansen's INVPCID vs CR3 A/B over 12+12 kernel builds) and seed \
                  003 (Ingo Molnar's recipe: tree in tmpfs, caches dropped, make clean untimed, \
                  perf stat --null --repeat)",
    runtime: "tinyconfig of linux-source-6.1, -j2, after prepare: 68 s on a quiet machine, \
              155-393 s (3 runs) at load average 9-12 (user CPU 100-119 s, CV 8%); dirs=init: \
              median 5.7 s of 10 (1.8-8.5 s, CV 39%; user CPU CV 7%); prepare: about 35 s the \
              first time plus 10 s to unpack the tarball, 20 s after",
    params: PARAMS,
    metrics: METRICS,
    prepare: Some(
        "unpacks the linux-source tarball once (tree=debian), then make O=OUT CONFIG, make \
         clean, make prepare; leaves a marker the timed run consumes",
    ),
    exec,
    prepare_fn: Some(prepare),
    clean_up_fn: None,
};

const MARKER: &str = ".abperf-kbuild-prepared";

#[derive(Debug, Serialize, Deserialize, PartialEq)]
struct Marker {
    tree: PathBuf,
    config: String,
}

/// Where `scripts/test.sh` (or a user) unpacks Debian's `linux-source-X.Y` package without
/// installing it (`apt-get download` then `dpkg-deb -x` into this directory), for machines where
/// installing it would upgrade the installed kernel headers: `CACHE/debian-source`.
pub fn unpacked_package_dir() -> PathBuf {
    sys::cache_dir().join("debian-source")
}

/// Debian's source tarball: the newest linux-source-*.tar.{xz,bz2,gz} in /usr/src (the installed
/// package) or in [`unpacked_package_dir`]`/usr/src` (the package unpacked, not installed).
pub fn debian_tarball() -> Result<PathBuf> {
    let unpacked = unpacked_package_dir().join("usr/src");
    let mut found: Vec<PathBuf> = [Path::new("/usr/src"), unpacked.as_path()]
        .iter()
        .filter_map(|dir| std::fs::read_dir(dir).ok())
        .flat_map(|rd| rd.flatten().map(|e| e.path()))
        .filter(|p| {
            let n = p.file_name().unwrap_or_default().to_string_lossy();
            n.starts_with("linux-source-")
                && [".tar.xz", ".tar.bz2", ".tar.gz"]
                    .iter()
                    .any(|s| n.ends_with(s))
        })
        .collect();
    // natural order of the version numbers
    found.sort_by_key(|p| {
        p.file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .split(|c: char| !c.is_ascii_digit())
            .filter_map(|n| n.parse::<u64>().ok())
            .collect::<Vec<_>>()
    });
    found.pop().ok_or_else(|| {
        anyhow!(
            "kbuild: tree=debian needs Debian's kernel source: /usr/src/linux-source-X.Y.tar.xz \
             (apt-get install linux-source) or the package unpacked without installing it into \
             {} (apt-get download linux-source-X.Y; dpkg-deb -x linux-source-X.Y_*.deb {}); or \
             give tree=PATH of a kernel source tree",
            unpacked.display(),
            unpacked_package_dir().display()
        )
    })
}

fn tar_stem(tarball: &Path) -> String {
    let n = tarball.file_name().unwrap_or_default().to_string_lossy();
    n.split(".tar.").next().unwrap_or(&n).to_string()
}

/// Size and mtime of the tarball: the unpacked copy is redone when they change.
fn stamp_of(tarball: &Path) -> Result<String> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(tarball).with_context(|| format!("kbuild: {}", tarball.display()))?;
    Ok(format!("{} {}\n", m.size(), m.mtime()))
}

/// An exclusive lock on a file, released when the file is closed on drop.
struct Lock(#[allow(dead_code)] std::fs::File);

impl Lock {
    fn take(path: &Path) -> Result<Lock> {
        let f = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)
            .with_context(|| format!("kbuild: opening lock {}", path.display()))?;
        use std::os::fd::AsRawFd;
        // SAFETY: flock on our own fd.
        if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) } != 0 {
            return Err(std::io::Error::last_os_error())
                .with_context(|| format!("kbuild: locking {}", path.display()));
        }
        Ok(Lock(f))
    }
}

/// The source tree for `tree=`; `unpack`: unpack the Debian tarball when needed.
fn source_tree(tree: &str, unpack: bool) -> Result<PathBuf> {
    if tree != "debian" {
        let p = PathBuf::from(tree);
        if !p.join("Makefile").is_file() || !p.join("Kconfig").is_file() {
            bail!("kbuild: tree={tree}: not a Linux source tree (no Makefile and Kconfig there)");
        }
        if p.join(".config").exists() {
            bail!(
                "kbuild: tree={tree} is configured in place (it has a .config); builds go to \
                 out= (make O=...), which needs a clean tree: run `make mrproper` in it or give \
                 a clean copy"
            );
        }
        return p
            .canonicalize()
            .with_context(|| format!("kbuild: tree={tree}"));
    }
    let tarball = debian_tarball()?;
    let base = sys::cache_dir().join("kbuild");
    let stem = tar_stem(&tarball);
    let dir = base.join(&stem);
    let stamp = base.join(format!("{stem}.unpacked"));
    let want = stamp_of(&tarball)?;
    if std::fs::read_to_string(&stamp).ok().as_deref() == Some(want.as_str()) {
        return Ok(dir);
    }
    if !unpack {
        bail!(
            "kbuild: {} is not unpacked yet: run `abperf workload prepare kbuild` (untimed) \
             before the timed run",
            tarball.display()
        );
    }
    std::fs::create_dir_all(&base)
        .with_context(|| format!("kbuild: creating {}", base.display()))?;
    let _lock = Lock::take(&base.join(".lock"))?;
    if std::fs::read_to_string(&stamp).ok().as_deref() == Some(want.as_str()) {
        return Ok(dir); // unpacked by another run while we waited
    }
    abperf_model::error::stderr_line(&format!(
        "kbuild: unpacking {} into {} (once)",
        tarball.display(),
        base.display()
    ));
    let _ = std::fs::remove_file(&stamp);
    if dir.exists() {
        std::fs::remove_dir_all(&dir)
            .with_context(|| format!("kbuild: removing the old {}", dir.display()))?;
    }
    let tmp = base.join(format!(".unpack.{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp)?;
    let st = Command::new("tar")
        .arg("-xf")
        .arg(&tarball)
        .arg("-C")
        .arg(&tmp)
        .status()
        .context("kbuild: running tar (Debian package tar)")?;
    if !st.success() {
        let _ = std::fs::remove_dir_all(&tmp);
        bail!("kbuild: tar -xf {} failed: {st}", tarball.display());
    }
    let inner = tmp.join(&stem);
    let from = if inner.is_dir() { inner } else { tmp.clone() };
    std::fs::rename(&from, &dir)
        .with_context(|| format!("kbuild: moving {} to {}", from.display(), dir.display()))?;
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::write(&stamp, want)?;
    Ok(dir)
}

fn out_dir(p: &Params, src: &Path) -> PathBuf {
    match p.str("out") {
        "auto" => {
            let key = if p.str("tree") == "debian" {
                src.file_name()
                    .unwrap_or_default()
                    .to_string_lossy()
                    .into_owned()
            } else {
                let h = sha2::Sha256::digest(src.as_os_str().as_encoded_bytes());
                h[..6].iter().map(|b| format!("{b:02x}")).collect()
            };
            sys::cache_dir()
                .join("kbuild")
                .join(format!("out-{key}-{}", p.str("config")))
        }
        o => PathBuf::from(o),
    }
}

fn jobs(p: &Params) -> usize {
    match p.u64("jobs") as usize {
        0 => sys::allowed_cpus().len(),
        n => n,
    }
}

fn make(src: &Path, out: &Path) -> Command {
    let mut c = Command::new("make");
    c.arg("-C")
        .arg(src)
        .arg(format!("O={}", out.display()))
        // reproducible: no timestamps, user or host in the image
        .env("KBUILD_BUILD_TIMESTAMP", "Thu Jan  1 00:00:00 UTC 1970")
        .env("KBUILD_BUILD_USER", "abperf")
        .env("KBUILD_BUILD_HOST", "abperf")
        .env_remove("KBUILD_VERBOSE")
        .env_remove("V");
    // SAFETY: prctl in the forked child before exec: make dies with us (and stops its jobs)
    unsafe {
        c.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
            Ok(())
        });
    }
    c
}

/// Run an untimed make step, quietly; its stderr shown on failure.
fn step(mut c: Command, what: &str) -> Result<()> {
    let o = c
        .stdout(Stdio::null())
        .output()
        .with_context(|| format!("kbuild: running make {what} (is make installed?)"))?;
    if !o.status.success() {
        let e = String::from_utf8_lossy(&o.stderr);
        let tail: Vec<&str> = e.lines().rev().take(25).collect();
        bail!(
            "kbuild: make {what} failed ({}):\n{}\n(a kernel build needs the Debian packages \
             make gcc libc6-dev bc flex bison xz-utils; defconfig also libelf-dev libssl-dev)",
            o.status,
            tail.into_iter().rev().collect::<Vec<_>>().join("\n")
        );
    }
    Ok(())
}

fn prepare(p: &Params) -> Result<()> {
    let src = source_tree(p.str("tree"), true)?;
    let out = out_dir(p, &src);
    std::fs::create_dir_all(&out)
        .with_context(|| format!("kbuild: out={}: creating it", out.display()))?;
    let _ = std::fs::remove_file(out.join(MARKER));
    let config = p.str("config");
    let mut c = make(&src, &out);
    c.arg(config);
    step(c, config)?;
    let mut c = make(&src, &out);
    c.arg("clean");
    step(c, "clean")?;
    let mut c = make(&src, &out);
    c.arg(format!("-j{}", jobs(p))).arg("prepare");
    step(c, "prepare")?;
    let m = Marker {
        tree: src,
        config: config.to_string(),
    };
    std::fs::write(out.join(MARKER), serde_json::to_string(&m)?)
        .with_context(|| format!("kbuild: writing {}", out.join(MARKER).display()))?;
    Ok(())
}

fn exec(p: &Params) -> Result<Vec<Metric>> {
    let src = source_tree(p.str("tree"), false)?;
    let out = out_dir(p, &src);
    let marker_path = out.join(MARKER);
    let want = Marker {
        tree: src.clone(),
        config: p.str("config").to_string(),
    };
    let words: Vec<String> = p
        .words()
        .into_iter()
        .filter(|w| !w.starts_with("seed=") && !w.starts_with("jobs=") && !w.starts_with("dirs="))
        .collect();
    let dirs = p.str("dirs");
    if dirs != "all" {
        for d in dirs.split('+') {
            if !src.join(d).is_dir() {
                bail!(
                    "kbuild: dirs={dirs}: {} is not a directory",
                    src.join(d).display()
                );
            }
        }
    }
    let how = format!("`abperf workload prepare kbuild {}`", words.join(" "));
    match std::fs::read_to_string(&marker_path) {
        Ok(s) => {
            let got: Marker = serde_json::from_str(&s)
                .with_context(|| format!("kbuild: {} is not ours", marker_path.display()))?;
            if got != want {
                bail!(
                    "kbuild: {} was prepared for {} with {}, not for this run: run {how} first",
                    out.display(),
                    got.tree.display(),
                    got.config
                );
            }
        }
        Err(_) => bail!(
            "kbuild: {} is not prepared (each timed build needs its own prepare, which runs \
             make clean; without it the build would be incremental): run {how} before every \
             run, untimed",
            out.display()
        ),
    }
    // consumed: the next run needs a new prepare
    std::fs::remove_file(&marker_path)
        .with_context(|| format!("kbuild: removing {}", marker_path.display()))?;
    let mut c = make(&src, &out);
    c.arg(format!("-j{}", jobs(p)));
    if dirs != "all" {
        for d in dirs.split('+') {
            c.arg(format!("{}/", d.trim_end_matches('/')));
        }
    }
    c.stdout(Stdio::piped()).stderr(Stdio::piped());
    let signals = sys::Signals::catch()?;
    let t0 = Instant::now();
    let mut child = c
        .spawn()
        .context("kbuild: starting make (is make installed?)")?;
    let stdout = child.stdout.take().expect("piped");
    let stderr = child.stderr.take().expect("piped");
    let counter = std::thread::spawn(move || {
        BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .filter(|l| l.starts_with("  CC "))
            .count()
    });
    let errors = std::thread::spawn(move || {
        let mut tail = std::collections::VecDeque::new();
        for l in BufReader::new(stderr).lines().map_while(Result::ok) {
            if tail.len() == 30 {
                tail.pop_front();
            }
            tail.push_back(l);
        }
        tail
    });
    let exit = sys::wait_child(child.id() as i32, &signals, libc::SIGTERM)?;
    let ns = t0.elapsed().as_nanos() as f64;
    let compiled = counter.join().unwrap_or(0);
    let tail = errors.join().unwrap_or_default();
    if let Some(sig) = exit.interrupted {
        return Err(anyhow!(Interrupted(sig)));
    }
    if !exit.success() {
        bail!(
            "kbuild: make failed ({}):\n{}",
            exit.describe(),
            tail.into_iter().collect::<Vec<_>>().join("\n")
        );
    }
    Ok(vec![
        metric(METRICS, "build_ns", ns),
        metric(
            METRICS,
            "cpu_user_ns",
            sys::tv_ns(exit.rusage.ru_utime) as f64,
        ),
        metric(
            METRICS,
            "cpu_sys_ns",
            sys::tv_ns(exit.rusage.ru_stime) as f64,
        ),
        metric(METRICS, "files_compiled", compiled as f64),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dirs_are_relative() {
        assert!(check_dirs("all").is_ok());
        assert!(check_dirs("init+kernel/sched").is_ok());
        assert!(check_dirs("/etc").is_err());
        assert!(check_dirs("../x").is_err());
        assert!(check_dirs("a++b").is_err());
        assert!(check_dirs("a b").is_err());
    }

    #[test]
    fn tarball_names() {
        assert_eq!(
            tar_stem(Path::new("/usr/src/linux-source-6.1.tar.xz")),
            "linux-source-6.1"
        );
    }
}
