//! Max RSS is the workload's own figure (issue 12, item 8): within 10% of GNU time's for a tiny C
//! program, with and without -e (the workload is forked from a small helper, as GNU time forks it
//! from itself; before, it was spawned from abperf's own address space and charged its peak).

mod common;
use common::Lab;
use std::process::Command;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[test]
fn max_rss_is_the_workloads_own_as_gnu_time_says() {
    let lab = Lab::new();
    let src = lab.write("tiny.c", "int main(void) { return 0; }\n");
    let exe = lab.p("tiny");
    if !Command::new("cc")
        .args(["-O2", "-o", &exe, &src])
        .status()
        .is_ok_and(|s| s.success())
    {
        common::skip("no C compiler (scripts/test.sh installs gcc)");
        return;
    }
    if !std::path::Path::new("/usr/bin/time").exists() {
        common::skip("no /usr/bin/time (scripts/test.sh installs the Debian package time)");
        return;
    }
    let time: Vec<f64> = (0..9)
        .map(|_| {
            let o = Command::new("/usr/bin/time")
                .args(["-f", "%M", &exe])
                .output()
                .unwrap();
            String::from_utf8_lossy(&o.stderr).trim().parse().unwrap()
        })
        .collect();
    let gnu = median(time);
    for extra in [&[][..], &["-e", "task-clock"][..], &["--pin", "0"][..]] {
        let mut args = vec!["run", "-r", "9", "--warmup", "0", "-N"];
        args.extend(extra);
        args.push(&exe);
        lab.ok(&args);
        let s = lab.store();
        let id = s.resolve_id("latest").unwrap();
        let ours = median(
            s.runs(id)
                .unwrap()
                .iter()
                .map(|r| r.value("maxrss_kib").unwrap())
                .collect(),
        );
        let rel = (ours - gnu).abs() / gnu;
        assert!(
            rel <= 0.10,
            "{extra:?}: abperf max RSS {ours} KiB vs /usr/bin/time {gnu} KiB ({:.0}% apart)",
            rel * 100.0
        );
    }
}

#[test]
fn a_large_workload_is_measured_in_full() {
    // The helper must not hide anything either: 64 MiB touched shows as at least 64 MiB.
    let lab = Lab::new();
    lab.ok(&[
        "run",
        "-r",
        "1",
        "--warmup",
        "0",
        "perl -e '$x = \"x\" x (64 << 20); print length $x'",
    ]);
    let s = lab.store();
    let r = &s.runs(1).unwrap()[0];
    assert!(r.value("maxrss_kib").unwrap() >= 65536.0, "{r:?}");
}
