//! The first hour with abperf: what a new user meets. Every mistake that used to be accepted
//! silently is an error with a message naming the flag and what was expected; follow-up commands
//! work as printed; completions, manual pages, `--version` with the build's commit, `--no-store`,
//! and the metric names people type.

mod common;
use common::{Lab, data};
use std::process::Command;

fn git_head() -> Option<String> {
    let out = Command::new("git")
        .args([
            "-C",
            env!("CARGO_MANIFEST_DIR"),
            "rev-parse",
            "--short=12",
            "HEAD",
        ])
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn experiment_count(lab: &Lab) -> usize {
    if !lab.db().exists() {
        return 0;
    }
    lab.store().list().expect("the store lists").len()
}

// ---------------------------------------------------------------- the silent mistakes

#[test]
fn tmpfs_copy_and_pre_read_of_a_missing_directory_are_usage_errors() {
    let lab = Lab::new();
    let o = lab.fails(
        &[
            "run",
            "-r",
            "2",
            "--tmpfs-copy",
            "/nonexistent/tree",
            "true",
        ],
        2,
    );
    assert!(o.stderr.contains("--tmpfs-copy /nonexistent/tree"), "{o}");
    let o = lab.fails(
        &["run", "-r", "2", "--pre-read", "/nonexistent/tree", "true"],
        2,
    );
    assert!(o.stderr.contains("--pre-read /nonexistent/tree"), "{o}");
    let file = lab.write("plain-file", "x");
    let o = lab.fails(&["run", "-r", "2", "--tmpfs-copy", &file, "true"], 2);
    assert!(o.stderr.contains("not a directory"), "{o}");
    assert_eq!(experiment_count(&lab), 0, "nothing stored");
}

#[test]
fn placeholders_and_parameter_lists_must_match() {
    let lab = Lab::new();
    let o = lab.fails(&["run", "-r", "2", "-L", "x=1,2", "echo {y}"], 2);
    assert!(
        o.stderr
            .contains("COMMAND 'echo {y}': {y} is not defined by any -L (defined: {x})"),
        "{o}"
    );
    let o = lab.fails(&["run", "-r", "2", "-L", "x=1,2", "echo hi"], 2);
    assert!(
        o.stderr.contains("-L x=1,2: {x} appears in no command"),
        "{o}"
    );
    let o = lab.fails(
        &[
            "run", "-r", "2", "-L", "x=1,2", "--pre", "echo {z}", "echo {x}",
        ],
        2,
    );
    assert!(o.stderr.contains("--pre 'echo {z}': {z}"), "{o}");
    // Without any -L a placeholder is an error too (docs/run.md).
    let o = lab.fails(&["run", "-r", "2", "echo {foo}"], 2);
    assert!(
        o.stderr
            .contains("COMMAND 'echo {foo}': {foo} is not defined by any -L (no -L given)"),
        "{o}"
    );
    assert_eq!(experiment_count(&lab), 0, "nothing stored");
    // Used in --setup only, and shell expansions are not placeholders: accepted.
    lab.ok(&[
        "run",
        "-r",
        "1",
        "--warmup",
        "0",
        "-L",
        "x=1,2",
        "--setup",
        "true {x}",
        "echo ${HOME}",
    ]);
    // Shell and awk braces without -L: no placeholders, accepted.
    lab.ok(&[
        "run",
        "-r",
        "1",
        "--warmup",
        "0",
        "echo a b | awk '{print $1}'; echo {} {a,b} ${HOME}",
    ]);
}

#[test]
fn a_knob_value_outside_the_files_choices_fails_before_anything_runs() {
    let lab = Lab::new();
    // The real THP file when this kernel has it (nothing is written: the check comes first),
    // else a file of the same form.
    let thp = "/sys/kernel/mm/transparent_hugepage/enabled";
    let knob = if std::path::Path::new(thp).exists() {
        thp.to_string()
    } else {
        lab.write("enabled", "always [madvise] never\n")
    };
    let before = std::fs::read_to_string(&knob).unwrap();
    let spec = format!("{knob}=always,bogus");
    let o = lab.fails(&["run", "-r", "2", "-k", &spec, "true"], 2);
    assert!(
        o.stderr
            .contains("'bogus' is not a value this knob accepts")
            && o.stderr.contains("always, madvise, never"),
        "{o}"
    );
    assert!(!o.stderr.contains("--resume"), "{o}");
    assert!(o.stdout.is_empty(), "no result blocks: {o}");
    assert_eq!(experiment_count(&lab), 0, "nothing stored");
    assert_eq!(std::fs::read_to_string(&knob).unwrap(), before);
}

#[test]
fn an_experiment_whose_every_run_failed_is_failed_with_exit_1() {
    let lab = Lab::new();
    let o = lab.fails(&["run", "-i", "-r", "2", "echo broken >&2; exit 3"], 1);
    assert!(o.stderr.contains("every run failed"), "{o}");
    let e = lab.ok(&["export", "latest", "--format", "json"]).json();
    assert_eq!(e["experiments"][0]["status"], "failed");
    // One variant of two failing every time: complete (-i asked for it), with a warning.
    let o = lab.ok(&[
        "run", "-i", "-r", "2", "-n", "ok", "-n", "bad", "true", "false",
    ]);
    assert!(
        o.stderr.contains("no successful run of variant 'bad'"),
        "{o}"
    );
    let e = lab.ok(&["export", "latest", "--format", "json"]).json();
    assert_eq!(e["experiments"][0]["status"], "complete");
}

#[test]
fn a_failing_run_shows_the_end_of_its_stderr_and_how_to_see_all() {
    let lab = Lab::new();
    let o = lab.fails(&["run", "-r", "2", "no_such_command_abperf"], 1);
    assert!(o.stderr.contains("exited with status 127"), "{o}");
    assert!(
        o.stderr
            .contains("| sh: 1: no_such_command_abperf: not found")
            || o.stderr
                .contains("no_such_command_abperf: command not found"),
        "{o}"
    );
    assert!(o.stderr.contains("--show-output"), "{o}");
    // Only the tail: the first of 30 lines is not shown.
    let o = lab.fails(
        &[
            "run",
            "-r",
            "2",
            "for i in $(seq 1 30); do echo err$i >&2; done; exit 1",
        ],
        1,
    );
    assert!(
        o.stderr.contains("| err30") && o.stderr.contains("| err21"),
        "{o}"
    );
    assert!(!o.stderr.contains("| err20\n"), "{o}");
    // A failing --pre says what it printed too.
    let o = lab.fails(
        &[
            "run",
            "-r",
            "2",
            "--pre",
            "echo pre-broke >&2; false",
            "true",
        ],
        1,
    );
    assert!(o.stderr.contains("| pre-broke"), "{o}");
}

#[test]
fn lookups_of_what_does_not_exist_exit_2() {
    let lab = Lab::new();
    lab.seed000("seed");
    for args in [
        &["show", "99"][..],
        &["compare", "99"],
        &["report", "99"],
        &["export", "99"],
        &["delete", "99"],
        &["plan", "--effect", "1", "--from", "99"],
        &["run", "--resume", "99"],
        &["show", "nonsense"],
    ] {
        let o = lab.fails(args, 2);
        assert!(o.stderr.contains("abperf: error:"), "{o}");
    }
    let o = lab.fails(&["show", "99"], 2);
    assert!(
        o.stderr.contains("no experiment 99") && o.stderr.contains("list"),
        "{o}"
    );
    let empty = Lab::new();
    let o = empty.fails(&["show", "latest"], 2);
    assert!(o.stderr.contains("holds no experiment yet"), "{o}");
}

#[test]
fn plan_without_a_variation_names_both_ways_to_give_one() {
    let lab = Lab::new();
    let o = lab.fails(&["plan", "--effect", "1"], 2);
    assert!(
        o.stderr.contains("--from ID") && o.stderr.contains("--cv PCT"),
        "{o}"
    );
    lab.ok(&["plan", "--effect", "1", "--cv", "0.5"]);
}

#[test]
fn compare_names_the_metrics_when_the_variants_share_none() {
    let lab = Lab::new();
    lab.ok(&[
        "import",
        "--new",
        "mixed",
        "--variant",
        "ps",
        "--format",
        "perf-stat",
        &data("perf-stat-single.csv"),
    ]);
    lab.import_variant("latest", "t", "time", &data("time-default.txt"));
    let o = lab.fails(&["compare", "latest"], 2);
    assert!(
        o.stderr.contains("no metric is stored for every variant")
            && o.stderr.contains("ps: task-clock")
            && o.stderr.contains("t: wall_ns, user_ns"),
        "{o}"
    );
    let o = lab.fails(&["compare", "latest", "--metric", "wall"], 2);
    assert!(o.stderr.contains("not stored for variant 'ps'"), "{o}");
}

// ---------------------------------------------------------------- metric names

#[test]
fn metric_aliases_work_wherever_a_metric_is_named() {
    let lab = Lab::new();
    lab.seed000("seed");
    let by_alias = lab.ok(&["compare", "latest", "--metric", "user"]).stdout;
    let by_name = lab.ok(&["compare", "latest", "--metric", "user_ns"]).stdout;
    assert_eq!(by_alias, by_name);
    assert!(by_alias.starts_with("user_ns:"), "{by_alias}");
    let j = lab
        .ok(&[
            "report", "latest", "--metric", "sys", "--metric", "wall", "--format", "json",
        ])
        .json();
    let judged: Vec<&str> = j["analysis"]["comparisons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["metric"].as_str().unwrap())
        .collect();
    assert!(
        judged.contains(&"sys_ns") && judged.contains(&"wall_ns"),
        "{j}"
    );
    for alias in ["maxrss", "minflt", "elapsed", "Max RSS"] {
        lab.ok(&["compare", "latest", "--metric", alias]);
    }
    let o = lab.ok(&[
        "plan", "--effect", "1", "--from", "latest", "--metric", "wall",
    ]);
    assert!(o.stdout.contains("runs per variant"), "{o}");
    let o = lab.fails(&["compare", "latest", "--metric", "bogus"], 2);
    assert!(
        o.stderr
            .contains("--metric bogus: no such metric in experiment 1; metrics: wall_ns (wall), user_ns (user), sys_ns (sys)"),
        "{o}"
    );
    let o = lab.fails(
        &[
            "plan", "--effect", "1", "--from", "latest", "--metric", "bogus",
        ],
        2,
    );
    assert!(o.stderr.contains("metrics: wall_ns (wall)"), "{o}");
}

// ---------------------------------------------------------------- stores and follow-ups

#[test]
fn no_store_keeps_nothing() {
    let lab = Lab::new();
    let o = lab.ok(&[
        "run",
        "--no-store",
        "-r",
        "2",
        "-n",
        "a",
        "-n",
        "b",
        "true",
        "true",
    ]);
    assert!(o.stdout.contains("not stored (--no-store)"), "{o}");
    assert!(
        !o.stdout.contains("compare:"),
        "no follow-up that cannot work: {o}"
    );
    assert!(!lab.db().exists(), "the default store was not even created");
    let o = lab.ok(&["run", "--db", ":memory:", "-r", "2", "true"]);
    assert!(o.stdout.contains("not stored"), "{o}");
    assert!(!lab.db().exists());
    assert!(!std::path::Path::new(":memory:").exists());
    lab.fails(&["run", "--no-store", "--db", "x.db", "true"], 2);
}

#[test]
fn follow_up_commands_work_as_printed() {
    let lab = Lab::new();
    let db = lab.p("elsewhere/my store.db");
    let o = lab.ok(&["run", "--db", &db, "-r", "2", "true"]);
    let line = o
        .stdout
        .lines()
        .find_map(|l| l.trim().strip_prefix("compare: "))
        .unwrap_or_else(|| panic!("a compare follow-up: {o}"))
        .to_string();
    assert!(line.contains("--db"), "{line}");
    // Pasted into a shell, without $ABPERF_DB, from another directory.
    let out = Command::new("sh")
        .args(["-c", &line.replace(" compare ", " show ")])
        .env_remove("ABPERF_DB")
        .current_dir("/")
        .output()
        .unwrap();
    assert!(out.status.success(), "{line}: {out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("experiment 1"));
}

// ---------------------------------------------------------------- identity, completions, man

#[test]
fn version_names_the_commit_and_every_experiment_stores_it() {
    let lab = Lab::new();
    let v = lab.ok(&["--version"]).stdout;
    let (_, rest) = v
        .trim()
        .split_once(" (commit ")
        .expect("a commit in --version");
    let (commit, date) = rest.split_once(", built ").expect("a build date");
    let date = date.trim_end_matches(')');
    assert_eq!(date.len(), 10, "{v}");
    assert!(date.starts_with("20") && date.as_bytes()[4] == b'-', "{v}");
    if let Some(head) = git_head() {
        assert!(
            commit.starts_with(&head),
            "--version {commit} vs git HEAD {head}"
        );
    }
    lab.ok(&["run", "-r", "1", "true"]);
    let e = lab.ok(&["export", "latest", "--format", "json"]).json();
    let stored = &e["experiments"][0]["environment"]["abperf"];
    assert_eq!(stored["commit"], commit, "{stored}");
    assert_eq!(stored["build_date"], date);
    assert_eq!(stored["version"], env!("CARGO_PKG_VERSION"));
    let show = lab.ok(&["show", "latest"]).stdout;
    assert!(
        show.contains(&format!("abperf_build       commit {commit}, built {date}")),
        "{show}"
    );
}

#[test]
fn completion_scripts_for_bash_zsh_and_fish() {
    let lab = Lab::new();
    let bash = lab.ok(&["completions", "bash"]).stdout;
    assert!(
        bash.contains("complete -F _abperf") && bash.contains("--no-store"),
        "{bash}"
    );
    let script = lab.write("abperf.bash", &bash);
    let check = Command::new("bash").args(["-n", &script]).output().unwrap();
    assert!(check.status.success(), "bash -n: {check:?}");
    // Loaded in bash, it completes subcommands.
    let probe = format!(
        "source {script}; COMP_WORDS=(abperf com); COMP_CWORD=1; _abperf abperf com abperf; \
         echo \"${{COMPREPLY[@]}}\""
    );
    let out = Command::new("bash").args(["-c", &probe]).output().unwrap();
    let words = String::from_utf8_lossy(&out.stdout);
    assert!(
        words.contains("compare") && words.contains("completions"),
        "{words} {out:?}"
    );
    let zsh = lab.ok(&["completions", "zsh"]).stdout;
    assert!(zsh.starts_with("#compdef abperf"), "{zsh}");
    let fish = lab.ok(&["completions", "fish"]).stdout;
    assert!(fish.contains("complete -c abperf"), "{fish}");
    lab.fails(&["completions", "tcsh"], 2);
}

#[test]
fn manual_pages_for_abperf_and_every_subcommand() {
    let lab = Lab::new();
    let page = lab.ok(&["man"]).stdout;
    assert!(page.contains(".TH abperf 1"), "{page}");
    assert!(page.contains(env!("CARGO_PKG_VERSION")));
    let run = lab.ok(&["man", "run"]).stdout;
    assert!(
        run.contains(".TH abperf-run 1") && run.contains("no\\-store"),
        "{run}"
    );
    let rec = lab.ok(&["man", "trace", "record"]).stdout;
    assert!(rec.contains(".TH abperf-trace-record 1"), "{rec}");
    let o = lab.fails(&["man", "nope"], 2);
    assert!(o.stderr.contains("subcommands: run, list"), "{o}");
    let dir = lab.p("man1");
    lab.ok(&["man", "--dir", &dir]);
    let mut pages: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    pages.sort();
    for p in [
        "abperf.1",
        "abperf-run.1",
        "abperf-compare.1",
        "abperf-trace-record.1",
    ] {
        assert!(pages.contains(&p.to_string()), "{p} in {pages:?}");
    }
    // groff, where installed, formats it without a warning.
    if Command::new("groff").arg("--version").output().is_ok() {
        let out = Command::new("groff")
            .args([
                "-man",
                "-Tascii",
                "-P-cbu",
                "-ww",
                &format!("{dir}/abperf-run.1"),
            ])
            .output()
            .unwrap();
        assert!(out.status.success() && out.stderr.is_empty(), "{out:?}");
        assert!(String::from_utf8_lossy(&out.stdout).contains("--no-store"));
    }
}

#[test]
fn every_option_and_subcommand_has_help_text() {
    use clap::CommandFactory;
    fn walk(cmd: &clap::Command, path: &str, missing: &mut Vec<String>) {
        for a in cmd.get_arguments() {
            let id = a.get_id().as_str();
            if id == "help" || id == "version" {
                continue;
            }
            if a.get_help().is_none() && a.get_long_help().is_none() {
                missing.push(format!("{path} {id}"));
            }
        }
        for s in cmd.get_subcommands() {
            let p = format!("{path} {}", s.get_name());
            if s.get_about().is_none() && s.get_name() != "help" {
                missing.push(format!("{p} (subcommand)"));
            }
            walk(s, &p, missing);
        }
    }
    let mut missing = Vec::new();
    walk(&abperf::cli::Cli::command(), "abperf", &mut missing);
    assert!(missing.is_empty(), "no help text: {missing:#?}");
}

#[test]
fn list_keeps_long_names_on_one_line() {
    let lab = Lab::new();
    let long = format!("start {} end", "variant-name vs ".repeat(12));
    lab.ok(&[
        "import",
        "--new",
        &long,
        "--format",
        "time",
        &data("time-default.txt"),
    ]);
    let out = lab.ok(&["list"]).stdout;
    let line = out.lines().nth(1).unwrap();
    assert!(line.ends_with("… end") || line.contains("…"), "{line}");
    assert!(line.contains("start variant-name"), "{line}");
    assert!(line.chars().count() <= 71 + 60, "{line}");
    // show has all of it.
    assert!(lab.ok(&["show", "1"]).stdout.contains(&long));
}

#[test]
fn show_runs_keeps_long_variant_names_apart_and_aligned() {
    let lab = Lab::new();
    let prefix = "a/very/long/sysfs/path/that/makes/names/wide/".repeat(2);
    for (i, v) in ["alpha", "beta"].iter().enumerate() {
        let name = format!("{prefix}knob={v}");
        let mut args = vec!["import", "--format", "time", "--variant", name.as_str()];
        if i == 0 {
            args.extend(["--new", "wide"]);
        } else {
            args.extend(["--experiment", "latest"]);
        }
        let f = data("time-default.txt");
        args.push(&f);
        lab.ok(&args);
    }
    let out = lab.ok(&["show", "latest", "--runs"]).stdout;
    let rows: Vec<&str> = out
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("seq"))
        .skip(1)
        .collect();
    assert!(rows.len() >= 8, "{out}");
    assert!(rows.iter().any(|r| r.contains("knob=alpha")), "{out}");
    assert!(rows.iter().any(|r| r.contains("knob=beta")), "{out}");
    let status_at: std::collections::BTreeSet<usize> = rows
        .iter()
        .filter_map(|r| r.find(" ok ").or_else(|| r.find(" failed ")))
        .collect();
    assert_eq!(status_at.len(), 1, "columns out of line:\n{out}");
}
