//! Which store backends this abperf was built with: a `postgres://` store is the PostgreSQL
//! backend's (cargo feature `postgres`, on by default); an abperf built without it
//! (`cargo build --no-default-features`) refuses one, saying how to get it, and makes nothing.
//! scripts/test.sh runs this file in both builds.

mod common;
use common::{Lab, Out};

/// Nothing listens on port 1: the PostgreSQL backend fails to connect, naming the store.
const NOWHERE: &str = "postgres://ann:hunter2@127.0.0.1:1/abperf";
const SHOWN: &str = "postgres://ann:***@127.0.0.1:1/abperf";

/// `abperf ARGS` against the unreachable server, in a directory of the lab.
fn against_nowhere(lab: &Lab, args: &[&str]) -> Out {
    let cwd = lab.path("cwd");
    std::fs::create_dir_all(&cwd).unwrap();
    let o = lab
        .cmd(args)
        .env("ABPERF_DB", NOWHERE)
        .current_dir(&cwd)
        .output()
        .unwrap();
    let out = Out::from(o, args);
    assert!(!out.all().contains("hunter2"), "{out}");
    assert_eq!(
        std::fs::read_dir(&cwd).unwrap().count(),
        0,
        "nothing made on disk: {out}"
    );
    out
}

#[cfg(not(feature = "postgres"))]
#[test]
fn a_build_without_postgres_refuses_a_postgres_store_saying_how_to_get_it() {
    let lab = Lab::new();
    for args in [
        vec!["list"],
        vec!["run", "-r", "1", "true"],
        vec!["run", "--resume", "1"],
        vec!["delete", "1"],
        vec!["store", "copy", NOWHERE, "x.db"],
    ] {
        let out = against_nowhere(&lab, &args);
        assert_eq!(out.code, Some(2), "{out}");
        out.err_has(&format!(
            "store {SHOWN}: this abperf was built without PostgreSQL support"
        ))
        .err_has("--features postgres");
    }
}

#[cfg(feature = "postgres")]
#[test]
fn a_build_with_postgres_connects_to_a_postgres_store() {
    let lab = Lab::new();
    for args in [vec!["list"], vec!["store", "copy", NOWHERE, "x.db"]] {
        let out = against_nowhere(&lab, &args);
        assert_eq!(out.code, Some(1), "{out}");
        out.err_has(&format!("cannot connect to the PostgreSQL store {SHOWN}"));
        assert!(!out.all().contains("built without"), "{out}");
    }
}
