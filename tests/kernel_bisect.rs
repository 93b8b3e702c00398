//! A kernel bisection under TCG (`abperf bisect --kernel-tree`): eight commits on `base` of the
//! Debian 6.1 repository (tests/common/debian_repo.rs), seven harmless (comments) and one,
//! the fifth, that makes getppid(2) sleep a millisecond (msleep: at least a jiffy, so 4-8 ms at
//! HZ 250). A guest command calls getppid a hundred times; the bisection builds the revisions it probes (cached by content, so a second
//! run of the test builds nothing), boots each probe interleaved with both ends, and names the
//! fifth commit, confirmed by an A/B against its parent. Skipped without QEMU, make, gcc or the
//! Debian source.

#![allow(clippy::disallowed_macros)] // tests print what they saw to stderr
mod common;
use common::{Lab, debian_repo};
use serde_json::Value;
use std::process::Command;
use std::time::Instant;

/// The branch `bisect` on `base`: (subject, file, line, its replacement).
const COMMITS: &[(&str, &str, &str, &str)] = &[
    (
        "kernel/fork: a comment",
        "kernel/fork.c",
        "#include <linux/futex.h>",
        "#include <linux/futex.h> /* abperf: a harmless change */",
    ),
    (
        "mm/mmap: a comment",
        "mm/mmap.c",
        "#include <linux/shmem_fs.h>",
        "#include <linux/shmem_fs.h> /* abperf: a harmless change */",
    ),
    (
        "fs/read_write: a comment",
        "fs/read_write.c",
        "#include <linux/splice.h>",
        "#include <linux/splice.h> /* abperf: a harmless change */",
    ),
    (
        "docs: a word in the howto",
        "Documentation/process/howto.rst",
        "HOWTO do Linux kernel development",
        "HOWTO do Linux kernel development (abperf: a harmless change)",
    ),
    (
        "kernel/sys: getppid sleeps a millisecond",
        "kernel/sys.c",
        "\trcu_read_lock();\n\tpid = task_tgid_vnr(rcu_dereference(current->real_parent));",
        "\tmsleep(1);\n\trcu_read_lock();\n\tpid = task_tgid_vnr(rcu_dereference(current->real_parent));",
    ),
    (
        "kernel/exit: a comment",
        "kernel/exit.c",
        "#include <linux/kthread.h>",
        "#include <linux/kthread.h> /* abperf: a harmless change */",
    ),
    (
        "fs/open: a comment",
        "fs/open.c",
        "#include <linux/falloc.h>",
        "#include <linux/falloc.h> /* abperf: a harmless change */",
    ),
    (
        "kernel/sys: a comment",
        "kernel/sys.c",
        "#include <linux/times.h>",
        "#include <linux/times.h> /* abperf: a harmless change */",
    ),
];

/// The planted commit's place on the branch (0-based).
const PLANTED: usize = 4;

/// The guest's command: getppid(2) this many times.
const CALLS: u32 = 100;

/// The planted commit needs msleep's header; the sleep itself is in COMMITS.
const DELAY_INCLUDE: (&str, &str, &str) = (
    "kernel/sys.c",
    "#include <linux/kernel.h>",
    "#include <linux/kernel.h>\n#include <linux/delay.h>",
);

/// A program calling getppid(2) `CALLS` times, built here for the guest (which sees the host's
/// root read-only).
fn getppid_loop(lab: &Lab) -> String {
    let src = lab.write(
        "getppid.c",
        format!(
            "#include <unistd.h>\n#include <sys/syscall.h>\nint main(void) {{ for (int i = 0; \
             i < {CALLS}; i++) syscall(SYS_getppid); return 0; }}\n"
        ),
    );
    let exe = lab.p("getppid");
    let o = Command::new("gcc")
        .args(["-O2", "-static", "-o", &exe, &src])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    exe
}

/// Lines of the cache's builds.log (one per real build).
fn builds() -> usize {
    std::fs::read_to_string(debian_repo::cache().join("ksrc/builds.log"))
        .map(|t| t.lines().count())
        .unwrap_or(0)
}

#[test]
fn a_kernel_bisection_under_tcg_names_the_commit_that_slows_getppid() {
    let Some(repo) = debian_repo::repository() else {
        return;
    };
    let edits: Vec<Vec<debian_repo::Edit>> = COMMITS
        .iter()
        .enumerate()
        .map(|(i, &(_, file, from, to))| {
            let mut e = vec![(file, from, to)];
            if i == PLANTED {
                e.insert(0, DELAY_INCLUDE);
            }
            e
        })
        .collect();
    let commits: Vec<(&str, &[debian_repo::Edit])> = COMMITS
        .iter()
        .zip(&edits)
        .map(|(c, e)| (c.0, e.as_slice()))
        .collect();
    let hashes = debian_repo::branch(repo, "slow-getppid", "base", &commits);
    let lab = Lab::new();
    let exe = getppid_loop(&lab);
    let repo_s = repo.display().to_string();
    let t = Instant::now();
    let before = builds();
    let o = lab.ok(&[
        "bisect",
        "--good",
        "base",
        "--bad",
        "slow-getppid",
        "--kernel-tree",
        &repo_s,
        "--accel",
        "tcg",
        // One vCPU: a guest of two under TCG took 6 ms or 600 ms for a busy-waiting delay
        // (mdelay) depending on the vCPU it ran on; one vCPU also boots faster.
        "--vm-cpus",
        "1",
        // The first run of a boot reads the program over 9p (10-20 times the next one).
        "--warmup",
        "1",
        "--seed",
        "5",
        "--looks",
        "1",
        // Four boots of each end and of the confirmation's pair: at load 12 a run of either
        // kernel can take a second longer (the guest's clock is the host's, its vCPU waits for
        // a host CPU), and Welch's test then has few degrees of freedom.
        "--ends-runs",
        "4",
        "--confirm-runs",
        "4",
        "--format",
        "json",
        "--",
        &exe,
    ]);
    eprintln!(
        "bisection: {:.0} s, {} build(s)\n{}",
        t.elapsed().as_secs_f64(),
        builds() - before,
        o.stderr
    );
    let r: Value = serde_json::from_str(&o.stdout).unwrap();
    let planted = &hashes[PLANTED];
    assert_eq!(r["result"], "culprit", "{}", o.stdout);
    assert_eq!(
        r["candidate"]["hash"].as_str(),
        Some(planted.as_str()),
        "{}",
        o.stdout
    );
    // Every step booted kernels: its experiment's variants are git revisions of the tree.
    let store = lab.store();
    let ds = store.load(1).unwrap();
    assert_eq!(ds.variants.len(), 2, "the ends' A/B");
    for v in &ds.variants {
        let b = v.boot.as_ref().expect("a kernel variant");
        assert!(b.source.is_some(), "{v:?}");
    }
    assert!(ds.boots.iter().all(|b| b.status == "complete"));
    // The text report names the culprit by abbreviated hash and subject.
    let id = r["bisection"].as_i64().unwrap().to_string();
    let text = lab.ok(&["bisect", "status", &id]);
    eprintln!("{}", text.stdout);
    let line = text
        .stdout
        .lines()
        .find(|l| l.starts_with("first bad commit:"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        line.contains(&planted[..12]) && line.contains(COMMITS[PLANTED].0),
        "{text}"
    );
}

#[test]
fn a_kernel_bisection_is_asked_for_with_kernel_tree_alone() {
    let lab = Lab::new();
    let dir = lab.p("tree");
    std::fs::create_dir_all(&dir).unwrap();
    let both = [
        "bisect",
        "--good",
        "a",
        "--bad",
        "b",
        "--build",
        "make",
        "--kernel-tree",
        &dir,
        "--",
        "true",
    ];
    lab.fails(&both, 2).err_has("--kernel-tree");
    let vm_alone = [
        "bisect", "--good", "a", "--bad", "b", "--build", "make", "--accel", "tcg", "--", "true",
    ];
    lab.fails(&vm_alone, 2)
        .err_has("--accel applies to a kernel bisection: give --kernel-tree DIR");
    let kconfig_alone = [
        "bisect",
        "--good",
        "a",
        "--bad",
        "b",
        "--build",
        "make",
        "--kconfig",
        "defconfig",
        "--",
        "true",
    ];
    lab.fails(&kconfig_alone, 2).err_has("--kernel-tree");
    let neither = ["bisect", "--good", "a", "--bad", "b", "--", "true"];
    lab.fails(&neither, 2).err_has("--build");
}
