//! Kernels built from a git tree as variants (`--kernel git:REV`): with tests/kernel_bisect.rs
//! the only tests that build a kernel. Over the repository of Debian's 6.1 source they share
//! (tests/common/debian_repo.rs) it makes branches of one commit on `base`: `ceiling` sets
//! tlb_single_page_flush_ceiling's default to 7, `comment` rewords a comment (same lines),
//! `broken` has a syntax error. The
//! repository and the built kernels stay in abperf's cache (`~/.cache/abperf`) between runs, so a
//! machine pays the cold build of the minimal configuration once; after that every build here is
//! incremental (a neighbouring commit: one file) or a cache hit.

#![allow(clippy::disallowed_macros)] // tests print what they saw to stderr
mod common;
use common::{Lab, debian_repo};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use std::time::Instant;

const FILE: &str = "arch/x86/mm/tlb.c";
const DEFAULT: &str = "unsigned long tlb_single_page_flush_ceiling __read_mostly = 33;";

/// The commits on top of `base`: (branch, subject, line replaced, its replacement).
const COMMITS: &[(&str, &str, &str, &str)] = &[
    (
        "ceiling",
        "x86/mm: tlb_single_page_flush_ceiling defaults to 7",
        DEFAULT,
        "unsigned long tlb_single_page_flush_ceiling __read_mostly = 7;",
    ),
    (
        "comment",
        "x86/mm: reword a comment",
        " * confident it will not cause too much overhead.  Each single",
        " * sure it will not cause too much overhead.  Each single",
    ),
    (
        "broken",
        "x86/mm: a syntax error",
        DEFAULT,
        "unsigned long tlb_single_page_flush_ceiling __read_mostly = 33 +;",
    ),
];

/// One test at a time builds (they share the worktree; abperf locks it too) and boots.
static LOCK: Mutex<()> = Mutex::new(());

fn one_at_a_time() -> MutexGuard<'static, ()> {
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

/// The Debian repository (tests/common/debian_repo.rs) with the branches ceiling, comment and
/// broken, each one commit on `base`.
fn repository() -> Option<&'static Path> {
    let repo = debian_repo::repository()?;
    for (branch, subject, from, to) in COMMITS {
        debian_repo::branch(repo, branch, "base", &[(subject, &[(FILE, from, to)])]);
    }
    Some(repo)
}

/// The lines of the cache's builds.log naming one of `givens` (the `--kernel` argument is its
/// second field): one per real build, and one per kernel taken from another's build ("no build:
/// equal to ... except comments in ..."). Other abperf processes (another test binary) may share
/// the cache: their lines are not counted.
fn builds_log(givens: &[&str]) -> Vec<String> {
    std::fs::read_to_string(debian_repo::cache().join("ksrc/builds.log"))
        .unwrap_or_default()
        .lines()
        .filter(|l| l.split(' ').nth(1).is_some_and(|g| givens.contains(&g)))
        .map(str::to_string)
        .collect()
}

/// The real builds of `givens` in builds.log.
fn builds(givens: &[&str]) -> usize {
    builds_log(givens)
        .iter()
        .filter(|l| !l.contains(" no build: "))
        .count()
}

/// Remove the cached kernels of the comment-only commit, so that every run of the test takes
/// it from base's build by the second lookup (comments only) rather than by its own key.
fn forget_comment_builds(lab: &Lab) {
    for e in cached(lab) {
        if e["record"]["source"]["revision"]
            .as_str()
            .is_some_and(|r| r.starts_with("comment ("))
        {
            let image = PathBuf::from(e["image"].as_str().unwrap());
            std::fs::remove_dir_all(image.parent().unwrap()).unwrap();
        }
    }
}

/// The cached kernels (`abperf kernel list --format json`).
fn cached(lab: &Lab) -> Vec<Value> {
    let o = lab.ok(&["kernel", "list", "--format", "json"]);
    serde_json::from_str::<Value>(&o.stdout)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

const READ: &str = "echo ceiling=$(cat /sys/kernel/debug/x86/tlb_single_page_flush_ceiling)";

#[test]
fn git_revisions_boot_as_variants_with_their_own_ceiling_and_the_cache_builds_each_once() {
    let Some(repo) = repository() else { return };
    let _g = one_at_a_time();
    let lab = Lab::new();
    let repo_s = repo.display().to_string();
    let console = lab.p("console");
    let args = [
        "run",
        "--kernel",
        "git:base",
        "--kernel",
        "git:ceiling",
        "--kernel",
        "git:comment",
        "--kernel-tree",
        &repo_s,
        "--boots",
        "2",
        "-r",
        "1",
        "--warmup",
        "0",
        "--seed",
        "3",
        "--accel",
        "tcg",
        "--show-output",
        "--vm-console",
        &console,
        READ,
    ];
    forget_comment_builds(&lab);
    let t = Instant::now();
    let ours = ["git:base", "git:ceiling", "git:comment"];
    let before = builds_log(&ours).len();
    let o = lab.ok(&args);
    let first = t.elapsed().as_secs_f64();
    let new_lines = builds_log(&ours)[before..].to_vec();
    let built = new_lines
        .iter()
        .filter(|l| !l.contains(" no build: "))
        .count();
    eprintln!(
        "first experiment: {first:.0} s, {built} build(s)\n{}",
        o.stderr
    );
    assert!(built <= 2, "{built} builds for two different sources\n{o}");
    // The comment-only commit is built zero times: base's build differs only in comments.
    assert!(
        o.stderr.contains(
            "--kernel git:comment: equal to cached git:base except comments in arch/x86/mm/tlb.c; no build"
        ),
        "{o}"
    );
    let comment_lines: Vec<&String> = new_lines
        .iter()
        .filter(|l| l.contains(" git:comment "))
        .collect();
    assert_eq!(comment_lines.len(), 1, "{new_lines:?}");
    assert!(
        comment_lines[0].contains(" no build: equal to ")
            && comment_lines[0].ends_with(" git:base except comments in arch/x86/mm/tlb.c"),
        "{new_lines:?}"
    );
    assert!(
        lab.ok(&["kernel", "list"])
            .stdout
            .contains("no build: equal to "),
        "kernel list names it"
    );
    // The comment-only commit boots base's bytes: named before any boot, and only that pair.
    let same: Vec<&str> = o
        .stderr
        .lines()
        .filter(|l| l.contains("SAME IMAGE"))
        .collect();
    assert_eq!(same.len(), 1, "{o}");
    assert!(
        same[0].contains("git:base") && same[0].contains("git:comment"),
        "{o}"
    );

    let store = lab.store();
    let ds = store.load(1).unwrap();
    assert_eq!(ds.variants.len(), 3);
    let names: Vec<&str> = ds.variants.iter().map(|v| v.name.as_str()).collect();
    assert_eq!(names, ["git:base", "git:ceiling", "git:comment"]);
    let source = |i: usize| {
        ds.variants[i]
            .boot
            .as_ref()
            .unwrap()
            .source
            .clone()
            .unwrap()
    };
    let (base, ceiling, comment) = (source(0), source(1), source(2));
    // The comment-only commit is another tree but the same image, byte for byte (the build is
    // reproducible); the ceiling commit is another image.
    assert_ne!(base.tree_id, comment.tree_id);
    assert_eq!(base.image_sha256, comment.image_sha256, "SAME IMAGE");
    assert_ne!(base.image_sha256, ceiling.image_sha256);
    assert_eq!(base.config_sha256, ceiling.config_sha256);
    assert!(
        base.config.contains("CONFIG_9P_FS=y"),
        "the final .config is kept"
    );
    assert!(base.revision.starts_with("base ("), "{}", base.revision);
    // The comment variant's provenance names its own commit and tree.
    assert!(
        comment.revision.starts_with("comment ("),
        "{}",
        comment.revision
    );
    // Boots in ABBA order over the three variants, each seeing its variant's default.
    assert_eq!(ds.boots.len(), 6);
    let order: Vec<usize> = ds.boots.iter().map(|b| b.variant).collect();
    let rev: Vec<usize> = order[3..].iter().rev().copied().collect();
    assert_eq!(order[..3], rev[..], "ABBA: {order:?}");
    for b in &ds.boots {
        assert_eq!(b.status, "complete", "{b:?}");
        let want = if b.variant == 1 {
            "ceiling=7"
        } else {
            "ceiling=33"
        };
        let log =
            std::fs::read_to_string(Path::new(&console).join(format!("exp1-boot{}.log", b.number)))
                .unwrap();
        assert!(
            log.lines().any(|l| l.trim_end_matches('\r') == want),
            "boot {} of {}: no line {want}:\n{log}",
            b.number,
            names[b.variant]
        );
    }
    // The same experiment again builds nothing.
    let t = Instant::now();
    let before = builds_log(&ours).len();
    let o = lab.ok(&args);
    assert_eq!(builds_log(&ours).len(), before, "{o}");
    assert_eq!(o.stderr.matches("found in the cache").count(), 3, "{o}");
    eprintln!(
        "second experiment: {:.0} s, no build",
        t.elapsed().as_secs_f64()
    );
    let again = store_source(&lab, 2);
    assert_eq!(again[0].image_sha256, base.image_sha256);
}

fn store_source(lab: &Lab, id: i64) -> Vec<abperf::model::KernelSource> {
    let ds = lab.store().load(id).unwrap();
    ds.variants
        .iter()
        .map(|v| v.boot.as_ref().unwrap().source.clone().unwrap())
        .collect()
}

#[test]
fn a_failing_patch_and_a_failing_build_are_named_and_store_nothing() {
    let Some(repo) = repository() else { return };
    let _g = one_at_a_time();
    let lab = Lab::new();
    let repo_s = repo.display().to_string();
    let broken = ["git:broken"];
    let before = builds(&broken);
    // A patch whose context is not in the tree.
    let patch = lab.write(
        "bad.diff",
        "--- a/arch/x86/mm/tlb.c\n+++ b/arch/x86/mm/tlb.c\n@@ -1,3 +1,3 @@\n no such line\n-in this\n+file at all\n tree\n",
    );
    let o = lab.run(&[
        "kernel",
        "build",
        &format!("git:base+{patch}"),
        "--kernel-tree",
        &repo_s,
    ]);
    assert_ne!(o.code, Some(0), "{o}");
    assert!(o.stderr.contains("bad.diff does not apply"), "{o}");
    // A commit that does not compile: the revision and the compiler's complaint are named, and
    // neither an experiment nor a cached kernel is left.
    let o = lab.run(&[
        "run",
        "--kernel",
        "git:broken",
        "--kernel-tree",
        &repo_s,
        "--boots",
        "1",
        "-r",
        "1",
        "--accel",
        "tcg",
        READ,
    ]);
    assert_eq!(o.code, Some(1), "{o}");
    assert!(o.stderr.contains("the build of broken ("), "{o}");
    assert!(o.stderr.contains("nothing stored"), "{o}");
    assert!(
        o.stderr.contains("tlb.c"),
        "the log's last lines name the file: {o}"
    );
    assert_eq!(builds(&broken), before);
    let given = |e: &Value| {
        e["record"]["given"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    assert!(
        !cached(&lab)
            .iter()
            .any(|e| given(e) == "git:broken" || given(e).ends_with("bad.diff")),
        "nothing cached"
    );
    assert!(
        !lab.db().exists() || lab.store().list().unwrap().is_empty(),
        "no experiment stored"
    );
}

/// `model ceiling --validate --kernel` takes the options of a kernel built from source as `run`
/// does (and hands them to it), refusing them without a `git:` kernel before anything runs.
#[test]
fn model_ceiling_takes_the_source_options_only_with_a_git_kernel() {
    let lab = Lab::new();
    let o = lab.fails(
        &[
            "model",
            "ceiling",
            "--trace",
            "1",
            "--micro",
            "2",
            "--validate",
            "--kernel",
            "linux-image-amd64",
            "--kconfig",
            "defconfig",
            "--",
            "true",
        ],
        2,
    );
    assert!(
        o.stderr
            .contains("--kconfig applies to kernels built from source: give --kernel git:REV"),
        "{o}"
    );
    // With a git: kernel the options parse and the command goes on to its inputs.
    let o = lab.run(&[
        "model",
        "ceiling",
        "--trace",
        "1",
        "--micro",
        "2",
        "--validate",
        "--kernel",
        "git:HEAD",
        "--kernel-tree",
        "/nonexistent",
        "--patch",
        "a.mbox",
        "--",
        "true",
    ]);
    assert!(
        !o.stderr.contains("applies to kernels built from source"),
        "{o}"
    );
    assert!(!o.stderr.contains("unexpected argument"), "{o}");
}
