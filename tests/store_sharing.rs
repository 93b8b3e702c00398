//! One store, many abperf processes, odd media (issue 12, items 1, 9 and the store parts of 10):
//! concurrent writers and readers never fail, ids are never reused, a read-only store can be
//! read, and a full disk stops an experiment as interrupted with a message that says what to do.

mod common;
use common::{Lab, Out, data};
use std::process::Command;

#[test]
fn eight_processes_share_one_store() {
    let lab = Lab::new();
    lab.seed000("first");
    let seed = data("seed000-time.txt");
    let jobs: Vec<Vec<String>> = vec![
        // Three experiments committing a run at a time...
        vec!["run", "-r", "40", "--warmup", "0", "-N", "true"],
        vec!["run", "-r", "40", "--warmup", "0", "-N", "true", "false"],
        vec!["run", "-r", "40", "--warmup", "0", "true"],
        // ...two importers writing whole experiments...
        vec!["import", "--format", "time", "--new", "a", &seed],
        vec!["import", "--format", "time", "--experiment", "1", &seed],
        // ...and three readers.
        vec!["report", "1", "--resamples", "0"],
        vec!["list"],
        vec!["show", "1", "--each-run"],
    ]
    .into_iter()
    .map(|v| v.into_iter().map(String::from).collect())
    .collect();
    let mut children = Vec::new();
    for (i, job) in jobs.iter().enumerate() {
        let lab_db = lab.db();
        let job = job.clone();
        children.push(std::thread::spawn(move || {
            let mut outs = Vec::new();
            // Each process repeats its job, so that writers overlap with writers and readers.
            let repeat = if i < 3 { 2 } else { 6 };
            for _ in 0..repeat {
                let args: Vec<&str> = job.iter().map(String::as_str).collect();
                let mut c = Command::new(common::BIN);
                c.args(&args).env("ABPERF_DB", &lab_db);
                // A failing `false` variant stops that run: ignore failures there.
                if args.contains(&"false") {
                    c.arg("-i");
                }
                outs.push(Out::from(c.output().unwrap(), &args));
            }
            outs
        }));
    }
    let mut failures = Vec::new();
    let mut n = 0;
    for c in children {
        for o in c.join().unwrap() {
            n += 1;
            if o.code != Some(0) {
                failures.push(o.to_string());
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {n} failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    let list = lab.store().list().unwrap();
    // 1 seed + 6 runs + 6 new imports; experiment 1 got 6 appended imports of 24 runs.
    assert_eq!(list.len(), 1 + 6 + 6, "{list:#?}");
    assert_eq!(lab.store().runs(1).unwrap().len(), 24 * 7);
    assert!(
        list.iter()
            .all(|e| e.status == abperf::model::Status::Complete)
    );
}

#[test]
fn ids_are_never_reused_after_delete() {
    let lab = Lab::new();
    lab.seed000("a");
    lab.seed000("b");
    lab.ok(&["delete", "2"]);
    lab.seed000("c");
    let ids: Vec<i64> = lab.store().list().unwrap().iter().map(|e| e.id).collect();
    assert_eq!(ids, [1, 3]);
    lab.ok(&["delete", "3"]);
    lab.ok(&["delete", "1"]);
    lab.seed000("d");
    let ids: Vec<i64> = lab.store().list().unwrap().iter().map(|e| e.id).collect();
    assert_eq!(ids, [4]);
    let o = lab.fails(&["show", "2"], 2);
    assert!(o.stderr.contains("no experiment 2"), "{o}");
}

/// Whether this machine lets us mount in a private mount namespace.
fn can_mount() -> bool {
    Command::new("unshare")
        .args(["-m", "sh", "-c", "mount -t tmpfs none /mnt"])
        .status()
        .is_ok_and(|s| s.success())
}

/// Run `script` in a private mount namespace with `$D` a fresh mount point; returns its output.
fn in_namespace(lab: &Lab, script: &str) -> Out {
    let d = lab.path("mnt");
    std::fs::create_dir_all(&d).unwrap();
    let o = Command::new("unshare")
        .args(["-m", "sh", "-c", script])
        .env("D", &d)
        .env("B", common::BIN)
        .env_remove("ABPERF_DB")
        .output()
        .unwrap();
    Out::from(o, &["unshare -m sh -c", script])
}

#[test]
fn a_store_on_read_only_media_can_be_read() {
    if !can_mount() {
        common::skip("cannot mount a tmpfs in a private mount namespace here");
        return;
    }
    let lab = Lab::new();
    lab.seed000("on a CD");
    let src = lab.db();
    let script = format!(
        "set -e; mount -t tmpfs none \"$D\"; cp {src} \"$D/s.db\"; mount -o remount,ro \"$D\"; \
         echo '== list'; \"$B\" list --db \"$D/s.db\"; \
         echo '== show'; \"$B\" show 1 --db \"$D/s.db\"; \
         echo '== report'; \"$B\" report 1 --resamples 0 --format json --db \"$D/s.db\" >/dev/null; \
         echo '== export'; \"$B\" export 1 --format csv --db \"$D/s.db\" | head -2; \
         echo '== compare'; \"$B\" compare 1 --resamples 0 --db \"$D/s.db\" >/dev/null; \
         echo '== compare two'; \"$B\" compare 1 1 --resamples 0 --db \"$D/s.db\" >/dev/null; \
         echo '== delete'; \"$B\" delete 1 --db \"$D/s.db\" || echo \"delete refused: $?\"",
        src = src.display()
    );
    let o = in_namespace(&lab, &script);
    assert_eq!(o.code, Some(0), "{o}");
    assert!(o.stdout.contains("on a CD"), "{o}");
    assert!(o.stdout.contains("experiment,variant"), "{o}");
    assert!(o.stdout.contains("delete refused: 1"), "{o}");
}

#[test]
fn a_full_disk_interrupts_the_experiment_and_says_how_to_resume() {
    if !can_mount() {
        common::skip("cannot mount a tmpfs in a private mount namespace here");
        return;
    }
    let lab = Lab::new();
    // A 1 MiB disk that the workload fills on its first run: the commit of that run fails.
    let script = "mount -t tmpfs -o size=1m none \"$D\"; \
         \"$B\" run --db \"$D/s.db\" -r 20 --warmup 0 'cat /dev/zero > \"$D/fill\" 2>/dev/null; true'; \
         echo \"rc=$?\"; rm -f \"$D/fill\"; \"$B\" list --db \"$D/s.db\"";
    let o = in_namespace(&lab, script);
    assert!(o.stdout.contains("rc=1"), "{o}");
    assert!(
        o.stderr.contains("/s.db: the disk is full") && o.stderr.contains("abperf run --resume 1"),
        "{o}"
    );
    assert!(
        o.stdout.contains("interrupted") && !o.stdout.contains("running"),
        "{o}"
    );
}
