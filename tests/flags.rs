//! One meaning per flag (issue 39). The command line's clap definition is walked: a long name
//! (or alias) takes one kind of value wherever it appears; `fleet run` lists only flags it
//! takes (each one, given alone, gets the real binary as far as reading the inventory); the VM
//! settings are one group with the same names in `run` and `vm run`.

mod common;
use common::Lab;
use std::collections::BTreeMap;

/// Every long name and alias (hidden ones too) -> (subcommand path, kind) wherever it appears.
fn long_names() -> BTreeMap<String, Vec<(String, &'static str)>> {
    long_uses()
        .into_iter()
        .map(|(n, uses)| (n, uses.into_iter().map(|(p, k, _)| (p, k)).collect()))
        .collect()
}

/// Every long name and alias -> (subcommand path, kind, whether it is an alias there).
fn long_uses() -> BTreeMap<String, Vec<(String, &'static str, bool)>> {
    fn walk(
        c: &clap::Command,
        path: &str,
        out: &mut BTreeMap<String, Vec<(String, &'static str, bool)>>,
    ) {
        for a in c.get_arguments() {
            let names = a.get_long().into_iter().map(|n| (n, false)).chain(
                a.get_all_aliases()
                    .unwrap_or_default()
                    .into_iter()
                    .map(|n| (n, true)),
            );
            for (n, alias) in names {
                out.entry(n.to_string()).or_default().push((
                    path.to_string(),
                    common::value_kind(a),
                    alias,
                ));
            }
        }
        for s in c.get_subcommands() {
            walk(s, format!("{path} {}", s.get_name()).trim(), out);
        }
    }
    let mut out = BTreeMap::new();
    walk(&abperf::cli::parser(), "", &mut out);
    out
}

/// Old spellings kept as hidden aliases for one release after a rename, each with the flag that
/// replaced it: the only names that may take another kind of value, and only as such an alias.
const OLD_SPELLINGS: &[(&str, &str)] = &[("runs", "show --each-run (run --runs N counts runs)")];

#[test]
fn no_long_flag_takes_two_kinds_of_value() {
    let mut clashes = Vec::new();
    for (name, uses) in long_uses() {
        let kinds_of = |aliases: bool| {
            let mut k: Vec<&str> = uses
                .iter()
                .filter(|u| aliases || !u.2)
                .map(|u| u.1)
                .collect();
            k.sort();
            k.dedup();
            k
        };
        let old_spelling = OLD_SPELLINGS.iter().any(|(n, _)| *n == name);
        let limit = if old_spelling {
            kinds_of(false)
        } else {
            kinds_of(true)
        };
        if limit.len() > 1 {
            clashes.push(format!("--{name}: {uses:?}"));
        }
    }
    assert!(
        clashes.is_empty(),
        "one name, two kinds of value:\n{}",
        clashes.join("\n")
    );
}

#[test]
fn the_walk_tells_a_cpu_number_from_a_cpu_model() {
    // The check above can fail: micro's --cpu is a number, vm run's model is text.
    let names = long_names();
    assert_eq!(names["cpu"], vec![("micro".to_string(), "whole number")]);
    assert_eq!(names["cpu-model"], vec![("vm run".to_string(), "text")]);
}

fn subcommand(path: &[&str]) -> clap::Command {
    let mut c = abperf::cli::parser();
    for p in path {
        c = c.find_subcommand(p).expect("the subcommand exists").clone();
    }
    c
}

/// The visible long flags of a subcommand.
fn visible_longs(path: &[&str]) -> Vec<(String, &'static str)> {
    subcommand(path)
        .get_arguments()
        .filter(|a| !a.is_hide_set())
        .filter_map(|a| a.get_long().map(|l| (l.to_string(), common::value_kind(a))))
        .collect()
}

/// A value of the right kind for each of fleet run's flags, for a lab whose knob file is `knob`.
fn sample_value(flag: &str, kind: &str, lab: &Lab, knob: &str) -> Option<String> {
    let text = match flag {
        "parameter-list" => "n=1".to_string(),
        "label" => "commit=abc".into(),
        "knob" => format!("{knob}=1"),
        "event" => "task-clock".into(),
        "pin" => "0".into(),
        "resume" => "1".into(),
        "db" => lab.db().display().to_string(),
        "limit" => "somehost".into(),
        "remote-abperf" => "/usr/local/bin/abperf".into(),
        "inventory" => return None, // given to every invocation
        _ => "true".into(),
    };
    match kind {
        "switch" => None,
        "one of a list" => {
            let a = subcommand(&["fleet", "run"])
                .get_arguments()
                .find(|a| a.get_long() == Some(flag))
                .cloned()
                .unwrap();
            Some(a.get_possible_values()[0].get_name().to_string())
        }
        "whole number" | "number" => Some("4".into()),
        _ => Some(text),
    }
}

#[test]
fn every_flag_fleet_run_lists_is_taken() {
    let lab = Lab::new();
    let knob = lab.write("knob", "0\n");
    let inventory = lab.path("no-such-inventory").display().to_string();
    for (flag, kind) in visible_longs(&["fleet", "run"]) {
        if flag == "inventory" {
            continue;
        }
        let mut argv = vec![
            "fleet".to_string(),
            "run".into(),
            "-i".into(),
            inventory.clone(),
        ];
        argv.push(format!("--{flag}"));
        argv.extend(sample_value(&flag, kind, &lab, &knob));
        // --resume takes the experiment's own commands; the others need one.
        if flag != "resume" {
            argv.push("true".into());
        }
        let args: Vec<&str> = argv.iter().map(String::as_str).collect();
        let o = lab.run(&args);
        // Each option was interpreted and the command went on to the inventory (or, for
        // --resume, to the store it looks the experiment up in): nothing refused the flag.
        let reached = if flag == "resume" {
            o.stderr.contains("no experiment")
        } else {
            o.stderr.contains("no-such-inventory")
        };
        assert!(
            reached,
            "fleet run --{flag} did not get to the inventory:\n{o}"
        );
    }
}

#[test]
fn run_only_flags_are_not_fleet_run_flags() {
    // Given to fleet run, each is an unknown argument to clap, not a run-time refusal.
    for flag in [
        "--tune",
        "--until-decided",
        "--no-store",
        "--wait",
        "--kernel",
        "--vm-cpus",
    ] {
        let e = abperf::cli::parser()
            .try_get_matches_from(["abperf", "fleet", "run", "-i", "inv", flag, "1", "true"])
            .expect_err(flag);
        assert_eq!(
            e.kind(),
            clap::error::ErrorKind::UnknownArgument,
            "{flag}: {e}"
        );
    }
    // Its other flags are run's, with the same kinds of value.
    let run = visible_longs(&["run"]);
    for f in visible_longs(&["fleet", "run"]) {
        let own = ["inventory", "limit", "remote-abperf"].contains(&f.0.as_str());
        assert!(own || run.contains(&f), "fleet run --{} is not run's", f.0);
    }
}

#[test]
fn the_vm_settings_have_one_set_of_names() {
    let group = ["accel", "vm-cpus", "vm-memory", "vm-pin", "boot-timeout"];
    let of = |path: &[&str]| -> Vec<(String, &'static str)> {
        let all = visible_longs(path);
        group
            .iter()
            .map(|g| {
                all.iter()
                    .find(|(l, _)| l == g)
                    .cloned()
                    .unwrap_or_else(|| panic!("{path:?} --{g}"))
            })
            .collect()
    };
    assert_eq!(of(&["run"]), of(&["vm", "run"]));
}

#[test]
fn vm_run_takes_its_old_spellings_but_not_cpu() {
    let parse = |extra: &[&str]| {
        let mut argv = vec!["abperf", "vm", "run", "--kernel", "bzImage"];
        argv.extend(extra);
        argv.push("true");
        abperf::cli::parser().try_get_matches_from(argv)
    };
    let m = parse(&["--cpus", "4", "--memory", "512"]).unwrap();
    let (_, vm) = m.subcommand().unwrap();
    let (_, run) = vm.subcommand().unwrap();
    assert_eq!(run.get_one::<u32>("vm_cpus"), Some(&4));
    assert_eq!(run.get_one::<u64>("vm_memory"), Some(&512));
    let help = subcommand(&["vm", "run"]).render_long_help().to_string();
    assert!(
        !help.contains("--cpus") && !help.contains("--memory "),
        "{help}"
    );
}

#[test]
fn vm_run_cpu_names_its_new_name() {
    let lab = Lab::new();
    lab.fails(
        &["vm", "run", "--kernel", "bzImage", "--cpu", "host", "true"],
        2,
    )
    .err_has("abperf vm run --cpu is now --cpu-model MODEL");
}
