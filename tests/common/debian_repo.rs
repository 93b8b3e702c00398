//! The git repository over Debian's 6.1 kernel source (the tarball scripts/test.sh downloads for
//! the kbuild workload) that the kernel-building tests share, kept in abperf's cache
//! (`~/.cache/abperf/kbuild/linux-source-6.1.git`) between runs so that its kernels stay built:
//! `base` (the source as Debian ships it) and small commits on top of it, each on a branch. It
//! is made and extended under an exclusive lock (test binaries run in parallel); a branch is
//! written last, so its ref marks its commits complete.

use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Instant;

/// What building and booting these kernels needs on $PATH.
pub const PROGRAMS: &[&str] = &[
    "git",
    "make",
    "gcc",
    "flex",
    "bison",
    "bc",
    "tar",
    "xz",
    "qemu-system-x86_64",
    "busybox",
];

/// One file of a commit: (path, whole lines replaced, their replacement); the lines must occur
/// once.
pub type Edit<'a> = (&'a str, &'a str, &'a str);

/// abperf's cache directory (where the repository and the built kernels live).
pub fn cache() -> PathBuf {
    abperf::workload::sys::cache_dir()
}

/// The repository with `base` (None, the test reported skipped, when a tool or the source is
/// missing).
pub fn repository() -> Option<&'static Path> {
    static REPO: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let r = REPO.get_or_init(|| {
        let missing = super::not_on_path(PROGRAMS);
        if !missing.is_empty() {
            return Err(format!(
                "{missing:?} not on $PATH (scripts/test.sh installs them)"
            ));
        }
        let tarball = abperf::workload::kbuild::debian_tarball().map_err(|e| {
            format!("no Debian kernel source (scripts/test.sh downloads it): {e:#}")
        })?;
        let stem = tarball
            .file_name()
            .unwrap()
            .to_string_lossy()
            .split(".tar")
            .next()
            .unwrap()
            .to_string();
        let repo = cache().join("kbuild").join(format!("{stem}.git"));
        let _held = locked(&repo);
        if !repo.join("refs/heads/base").exists() {
            make_base(&tarball, &stem, &repo);
        }
        Ok(repo)
    });
    match r {
        Ok(p) => Some(p.as_path()),
        Err(why) => {
            super::skip(why);
            None
        }
    }
}

/// Branch `branch` (made once): one commit per `(subject, edits)`, each on the last, from
/// `from`. Returns the commits' hashes, oldest first.
pub fn branch(repo: &Path, branch: &str, from: &str, commits: &[(&str, &[Edit])]) -> Vec<String> {
    let _held = locked(repo);
    let marker = repo.join("refs/heads").join(branch);
    if !marker.exists() {
        let index = repo.with_extension(format!("{branch}.index"));
        let mut parent = rev_parse(repo, from);
        let mut made = Vec::new();
        for (subject, edits) in commits {
            parent = commit(repo, &index, &parent, subject, edits);
            made.push(parent.clone());
        }
        let _ = std::fs::remove_file(&index);
        update_ref(repo, branch, &parent);
        eprintln!("made branch {branch} of {} commits", made.len());
        return made;
    }
    let log = out(
        {
            let mut c = git(repo, None, Path::new("/nonexistent"));
            c.args(["rev-list", "--first-parent", "--reverse"])
                .arg(format!("{from}..{branch}"));
            c
        },
        None,
    );
    let made: Vec<String> = log.lines().map(str::to_string).collect();
    assert_eq!(made.len(), commits.len(), "branch {branch} in {repo:?}");
    made
}

/// `git rev-parse REV`.
pub fn rev_parse(repo: &Path, rev: &str) -> String {
    let mut c = git(repo, None, Path::new("/nonexistent"));
    c.args(["rev-parse", "--verify", &format!("{rev}^{{commit}}")]);
    out(c, None)
}

/// Hold an exclusive lock beside `repo` while the value lives.
fn locked(repo: &Path) -> std::fs::File {
    std::fs::create_dir_all(repo.parent().unwrap()).unwrap();
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(repo.with_extension("lock"))
        .unwrap();
    // SAFETY: flock on a descriptor we own; released when the file is closed.
    assert_eq!(unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) }, 0);
    f
}

fn git(repo: &Path, work: Option<&Path>, index: &Path) -> Command {
    let mut c = Command::new("git");
    c.env("GIT_DIR", repo)
        .env("GIT_INDEX_FILE", index)
        .env("GIT_AUTHOR_NAME", "abperf")
        .env("GIT_AUTHOR_EMAIL", "abperf@localhost")
        .env("GIT_COMMITTER_NAME", "abperf")
        .env("GIT_COMMITTER_EMAIL", "abperf@localhost")
        .env("GIT_AUTHOR_DATE", "2026-01-01T00:00:00Z")
        .env("GIT_COMMITTER_DATE", "2026-01-01T00:00:00Z");
    if let Some(w) = work {
        c.env("GIT_WORK_TREE", w).current_dir(w);
    }
    c
}

#[track_caller]
fn out(c: Command, input: Option<&[u8]>) -> String {
    String::from_utf8_lossy(&raw(c, input)).trim().to_string()
}

/// What `c` printed, as it printed it.
#[track_caller]
fn raw(mut c: Command, input: Option<&[u8]>) -> Vec<u8> {
    use std::io::Write;
    c.stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = c.spawn().unwrap();
    if let Some(i) = input {
        child.stdin.take().unwrap().write_all(i).unwrap();
    }
    drop(child.stdin.take());
    let o = child.wait_with_output().unwrap();
    assert!(
        o.status.success(),
        "{c:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    o.stdout
}

fn update_ref(repo: &Path, branch: &str, commit: &str) {
    let mut c = git(repo, None, Path::new("/nonexistent"));
    c.args(["update-ref", &format!("refs/heads/{branch}"), commit]);
    out(c, None);
}

/// A commit on `parent` with `edits` applied to its files.
fn commit(repo: &Path, index: &Path, parent: &str, subject: &str, edits: &[Edit]) -> String {
    let run = |args: &[&str], input: Option<&[u8]>| {
        let mut c = git(repo, None, index);
        c.args(args);
        out(c, input)
    };
    run(&["read-tree", parent], None);
    // Each file's text with the edits so far (several edits may change one file).
    let mut texts: std::collections::BTreeMap<&str, String> = Default::default();
    for (file, from, to) in edits {
        let text = texts.entry(file).or_insert_with(|| {
            let mut c = git(repo, None, index);
            c.args(["cat-file", "blob", &format!("{parent}:{file}")]);
            String::from_utf8(raw(c, None)).unwrap()
        });
        assert_eq!(
            text.matches(&format!("\n{from}\n")).count(),
            1,
            "{file} has no line(s) {from:?} (or several)"
        );
        *text = text.replacen(from, to, 1);
    }
    for (file, text) in &texts {
        let blob = run(&["hash-object", "-w", "--stdin"], Some(text.as_bytes()));
        run(
            &[
                "update-index",
                "--cacheinfo",
                &format!("100644,{blob},{file}"),
            ],
            None,
        );
    }
    let tree = run(&["write-tree"], None);
    run(&["commit-tree", "-p", parent, "-m", subject, &tree], None)
}

/// The repository with `base` alone: the source as Debian ships it (about 2.5 minutes).
fn make_base(tarball: &Path, stem: &str, repo: &Path) {
    let t = Instant::now();
    let _ = std::fs::remove_dir_all(repo);
    let kbuild = cache().join("kbuild");
    std::fs::create_dir_all(&kbuild).unwrap();
    // The kbuild workload's unpacked tree when it is there, else the tarball unpacked here.
    let unpacked = kbuild.join(stem);
    let scratch = kbuild.join(format!(".{stem}.unpack"));
    let src = if unpacked.join("Makefile").is_file() {
        unpacked
    } else {
        let _ = std::fs::remove_dir_all(&scratch);
        std::fs::create_dir_all(&scratch).unwrap();
        let mut c = Command::new("tar");
        c.arg("-xf").arg(tarball).arg("-C").arg(&scratch);
        out(c, None);
        scratch.join(stem)
    };
    let index = kbuild.join(format!(".{stem}.index"));
    let _ = std::fs::remove_file(&index);
    let mut init = Command::new("git");
    init.args(["init", "-q", "--bare"]).arg(repo);
    out(init, None);
    let mut add = git(repo, Some(&src), &index);
    add.args(["add", "-f", "-A", "."]);
    out(add, None);
    let run = |args: &[&str]| {
        let mut c = git(repo, None, &index);
        c.args(args);
        out(c, None)
    };
    let tree = run(&["write-tree"]);
    let base = run(&["commit-tree", "-m", "Debian linux-source", &tree]);
    update_ref(repo, "base", &base);
    let _ = std::fs::remove_file(&index);
    let _ = std::fs::remove_dir_all(&scratch);
    eprintln!(
        "made {} in {:.0} s",
        repo.display(),
        t.elapsed().as_secs_f64()
    );
}
