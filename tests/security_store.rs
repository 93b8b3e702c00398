//! A store a team shares over a network (issue 40, the store's side), each test on its own
//! private PostgreSQL server (`common::postgres`): no password leaves the user in any output,
//! stored row, copy, file or child environment, whatever form it was given in; TLS with
//! verify-full succeeds with the right CA and host name and fails clearly otherwise; a stalled
//! (SIGSTOPped) server is said within seconds and given up at `--db-timeout`; the team setup of
//! docs/store.md works as written.

mod common;
use common::postgres::{Server, certificates};
use common::{Lab, Out};
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// A password with every character a URL treats specially, as given and %-encoded.
const PW: &str = "p/w?x@y%z";
const PW_URL: &str = "p%2Fw%3Fx%40y%25z";

/// Any piece of the password found in `text` (what the old redaction printed, among others).
fn leak(text: &str) -> Option<&'static str> {
    [PW, PW_URL, "w?x", "x@y", "y%z", "%3Fx%40", "Fw%3F"]
        .into_iter()
        .find(|p| text.contains(p))
}

#[track_caller]
fn clean(what: &str, out: &Out) {
    if let Some(piece) = leak(&out.all()) {
        panic!("{what} shows the password ({piece}):\n{out}");
    }
}

/// Every file under `dir` (this lab's store, its copies, what the workload wrote).
fn files_clean(dir: &Path) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let path = e.path();
        if path.is_dir() {
            files_clean(&path);
        } else {
            let bytes = std::fs::read(&path).unwrap_or_default();
            let text = String::from_utf8_lossy(&bytes);
            assert!(
                leak(&text).is_none(),
                "{} holds the password",
                path.display()
            );
        }
    }
}

/// A server where `ann` logs in with [`PW`] (scram) into her database `abperf`.
fn with_ann() -> Option<Server> {
    let pg = Server::start()?;
    pg.psql(
        "postgres",
        &format!("CREATE ROLE ann LOGIN PASSWORD '{PW}'"),
    );
    pg.psql("postgres", "CREATE DATABASE abperf OWNER ann");
    pg.set_hba("host all postgres 127.0.0.1/32 trust\nhost all ann 127.0.0.1/32 scram-sha-256\n");
    Some(pg)
}

#[test]
fn no_password_leaves_the_user_in_any_form_output_file_or_child() {
    let Some(pg) = with_ann() else { return };
    let lab = Lab::new();
    let port = pg.port;
    let url = format!("postgres://ann:{PW_URL}@127.0.0.1:{port}/abperf");
    let plain = format!("postgres://ann@127.0.0.1:{port}/abperf");
    let env_file = lab.p("child.env");
    let dump = format!("env > {env_file}");
    // Given in the URL (--db), in $ABPERF_DB, as key=value, as a password= parameter.
    clean(
        "run --db URL",
        &lab.ok(&["run", "--db", &url, "-r", "2", &dump]),
    );
    let mut c = lab.cmd(&["run", "-r", "2", &dump]);
    c.env("ABPERF_DB", &url);
    let o = Out::from(c.output().unwrap(), &["run"]);
    assert_eq!(o.code, Some(0), "{o}");
    clean("run with $ABPERF_DB", &o);
    let child_env = std::fs::read_to_string(&env_file).unwrap();
    assert!(
        leak(&child_env).is_none(),
        "the workload inherits the password:\n{child_env}"
    );
    let pairs = format!("host=127.0.0.1 port={port} user=ann dbname=abperf password='{PW}'");
    clean(
        "run --db key=value",
        &lab.ok(&["run", "--db", &pairs, "-r", "2", "true"]),
    );
    let param = format!("{plain}?password={PW_URL}");
    clean("list ?password=", &lab.ok(&["list", "--db", &param]));
    // A password file and a service file: nothing in the URL at all.
    let private = tempfile::tempdir().unwrap();
    let pgpass = private.path().join("pgpass");
    std::fs::write(&pgpass, format!("127.0.0.1:{port}:abperf:ann:{PW}\n")).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&pgpass, std::fs::Permissions::from_mode(0o600)).unwrap();
    let service = private.path().join("pg_service.conf");
    std::fs::write(
        &service,
        format!("[lab]\nhost=127.0.0.1\nport={port}\ndbname=abperf\nuser=ann\n"),
    )
    .unwrap();
    let lab = lab
        .env("PGPASSFILE", pgpass.to_str().unwrap())
        .env("PGSERVICEFILE", service.to_str().unwrap());
    lab.ok(&["list", "--db", &plain]).has("complete");
    lab.ok(&["list", "--db", "service=lab"]).has("complete");
    // Every output of every experiment, with the password in the flag itself.
    for id in ["1", "2"] {
        clean("show", &lab.ok(&["show", id, "--db", &url]));
        for f in ["json", "csv"] {
            clean(
                "export",
                &lab.ok(&["export", id, "--db", &url, "--format", f]),
            );
        }
        for f in ["text", "mail", "md", "json", "csv", "html"] {
            clean(
                "report",
                &lab.ok(&["report", id, "--db", &url, "--format", f]),
            );
        }
    }
    let stored = pg.psql("abperf", "SELECT command_line FROM experiment");
    assert!(leak(&stored).is_none(), "stored: {stored}");
    assert!(stored.contains("ann:***@"), "{stored}");
    clean(
        "store copy",
        &lab.ok(&["store", "copy", &url, &lab.p("copy.db")]),
    );
    // Errors: a wrong password, an unencoded one the URL cannot hold, a bad port.
    for bad in [
        format!("postgres://ann:{PW}@127.0.0.1:{port}/abperf"),
        format!("postgres://ann:{PW_URL}@127.0.0.1:notaport/abperf"),
        format!("host=127.0.0.1 port={port} user=ann password='{PW}x' dbname=abperf"),
    ] {
        let o = lab.run(&["list", "--db", &bad]);
        assert_ne!(o.code, Some(0), "{o}");
        clean("an error", &o);
    }
    files_clean(lab.dir.path());
}

/// A server serving TLS for `localhost` with a CA of the test, only over TLS; the CA's file.
fn with_tls(dir: &Path) -> Option<(Server, std::path::PathBuf)> {
    let (ca, cert, key) = certificates(dir, &["localhost"])?;
    let pg = Server::start()?;
    pg.enable_tls(&cert, &key);
    pg.set_hba("hostssl all all 127.0.0.1/32 trust\nhostssl all all ::1/128 trust\n");
    Some((pg, ca))
}

#[test]
fn verify_full_connects_with_the_right_ca_and_name_and_refuses_otherwise() {
    let certs = tempfile::tempdir().unwrap();
    let Some((pg, ca)) = with_tls(certs.path()) else {
        return;
    };
    let other = tempfile::tempdir().unwrap();
    let Some((wrong_ca, _, _)) = certificates(other.path(), &["localhost"]) else {
        return;
    };
    let lab = Lab::new();
    let port = pg.port;
    let url = |host: &str, mode: &str, root: &Path| {
        format!(
            "postgres://postgres@{host}:{port}/postgres?sslmode={mode}&sslrootcert={}",
            root.display()
        )
    };
    lab.ok(&["list", "--db", &url("localhost", "verify-full", &ca)]);
    lab.ok(&["list", "--db", &url("127.0.0.1", "verify-ca", &ca)]);
    lab.ok(&["list", "--db", &url("127.0.0.1", "require", &ca)]);
    let o = lab.run(&["list", "--db", &url("localhost", "verify-full", &wrong_ca)]);
    assert_eq!(o.code, Some(1), "{o}");
    o.err_has("cannot connect to the PostgreSQL store")
        .err_has("certificate");
    let o = lab.run(&["list", "--db", &url("127.0.0.1", "verify-full", &ca)]);
    assert_eq!(o.code, Some(1), "{o}");
    o.err_has("certificate").err_has("127.0.0.1");
    // The server takes TLS only: without it the login is refused.
    let plain = format!("postgres://postgres@127.0.0.1:{port}/postgres?sslmode=disable");
    lab.fails(&["list", "--db", &plain], 1)
        .err_has("no encryption");
    // What abperf does not support is named.
    let allow = format!("postgres://postgres@127.0.0.1:{port}/postgres?sslmode=allow");
    lab.fails(&["list", "--db", &allow], 2)
        .err_has("sslmode=allow is not supported");
    let cert = format!("{}&sslcert=c.pem", url("localhost", "verify-full", &ca));
    lab.fails(&["list", "--db", &cert], 2)
        .err_has("does not support the connection parameter sslcert");
}

#[test]
fn prefer_says_when_the_server_offers_no_tls() {
    let Some(pg) = Server::start() else { return };
    let lab = Lab::new();
    let dsn = format!("{}?sslmode=prefer", pg.dsn("postgres"));
    lab.ok(&["list", "--db", &dsn])
        .err_has("does not offer TLS: connected without encryption");
}

#[test]
fn a_stalled_server_is_said_within_seconds_and_given_up_at_the_limit() {
    let Some(pg) = Server::start() else { return };
    let lab = Lab::new();
    let dsn = pg.create_db("abperf");
    lab.ok(&["run", "--db", &dsn, "-r", "1", "true"]);
    // A new connection to a stopped server: the kernel accepts it, nobody answers.
    let paused = pg.pause();
    let t = Instant::now();
    let list = lab.cmd(&["list", "--db", &dsn, "--db-timeout", "4"]);
    let o = common::run_within(list, Duration::from_secs(10), "list on a stopped server");
    let took = t.elapsed();
    assert_eq!(o.code, Some(1), "{o}");
    o.err_has("waiting for the PostgreSQL store")
        .err_has("--db-timeout");
    assert!(took < Duration::from_secs(10), "took {took:?}: {o}");
    drop(paused);
    // A run whose server stops under it: the statement in flight is given up, the run stops as a
    // failed commit does, its knob put back and the resume command printed.
    let knob = lab.write("knob", "2000\n");
    let spec = format!("{knob}=111,222");
    let file = |name: &str| std::fs::File::create(lab.path(name)).unwrap();
    let mut child = lab
        .cmd(&[
            "run",
            "--db",
            &dsn,
            "--db-timeout",
            "4",
            "-r",
            "5000",
            "-k",
            &spec,
            "sleep 0.01",
        ])
        .stdout(Stdio::from(file("run.out")))
        .stderr(Stdio::from(file("run.err")))
        .spawn()
        .unwrap();
    let runs = || {
        pg.psql("abperf", "SELECT count(*) FROM run")
            .parse::<i64>()
            .unwrap_or(0)
    };
    let t = Instant::now();
    while runs() < 3 {
        assert!(t.elapsed() < Duration::from_secs(60), "no runs stored");
        std::thread::sleep(Duration::from_millis(100));
    }
    let paused = pg.pause();
    let status = common::wait_within(
        &mut child,
        Duration::from_secs(20),
        "abperf after its server stopped",
    );
    drop(paused);
    let err = std::fs::read_to_string(lab.path("run.err")).unwrap();
    assert_eq!(status.code(), Some(1), "{err}");
    assert!(err.contains("has not answered for"), "{err}");
    // A commit lost with its connection is checked on the server before it is called failed.
    if err.contains("error: committing run") {
        assert!(
            err.contains("the connection was lost while committing; "),
            "{err}"
        );
    }
    assert!(err.contains("--resume"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(std::fs::read_to_string(&knob).unwrap().trim(), "2000");
}

/// The block of docs/store.md after `<!-- team-setup:NAME -->`, with the docs' server name and
/// port replaced by this test's.
fn team_setup(name: &str, port: u16) -> String {
    let doc =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/store.md")).unwrap();
    let marker = format!("<!-- team-setup:{name} -->");
    let after = &doc[doc.find(&marker).unwrap_or_else(|| panic!("{marker}")) + marker.len()..];
    let body = after.split_once("\n```").unwrap().1;
    let body = body.split_once('\n').unwrap().1;
    let body = &body[..body.find("```").unwrap()];
    body.replace("db.lab.example/", &format!("localhost:{port}/"))
        .replace("db.lab.example:5432:", &format!("localhost:{port}:"))
        .replace("db.lab.example", "localhost")
        .replace("10.0.0.0/8", "127.0.0.1/32")
}

#[test]
fn the_team_setup_of_the_docs_works_as_written() {
    let certs = tempfile::tempdir().unwrap();
    if !common::on_path("openssl") {
        return common::skip("no openssl program here to make certificates");
    }
    let Some(pg) = Server::start() else { return };
    let port = pg.port;
    let sh = std::process::Command::new("sh")
        .args(["-ec", &team_setup("certs", port)])
        .current_dir(certs.path())
        .output()
        .unwrap();
    assert!(
        sh.status.success(),
        "{}",
        String::from_utf8_lossy(&sh.stderr)
    );
    pg.enable_tls(
        &certs.path().join("server.crt"),
        &certs.path().join("server.key"),
    );
    pg.psql_script("postgres", &team_setup("sql", port));
    // The test's own superuser login over TCP (the docs' admin uses the local socket).
    let hba = team_setup("hba", port);
    pg.set_hba(&format!("host all postgres 127.0.0.1/32 trust\n{hba}"));
    // Each user's home: the CA, the password file, the URL.
    let user = |name: &str| {
        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir(home.path().join(".postgresql")).unwrap();
        std::fs::copy(
            certs.path().join("ca.crt"),
            home.path().join(".postgresql/root.crt"),
        )
        .unwrap();
        let pgpass = home.path().join(".pgpass");
        let line = team_setup("pgpass", port).replace("ann", name);
        std::fs::write(
            &pgpass,
            line.replace("change-me-ann", &format!("change-me-{name}")),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&pgpass, std::fs::Permissions::from_mode(0o600)).unwrap();
        let url = team_setup("url", port);
        let url = url
            .trim()
            .trim_start_matches("export ABPERF_DB=")
            .trim_matches('\'');
        (home, url.replace("ann", name))
    };
    let (ann_home, ann_url) = user("ann");
    let (bob_home, bob_url) = user("bob");
    let ann = Lab::new().env("HOME", ann_home.path().to_str().unwrap());
    let bob = Lab::new().env("HOME", bob_home.path().to_str().unwrap());
    assert!(ann_url.contains("sslmode=verify-full") && !ann_url.contains("change-me"));
    ann.ok(&["run", "--db", &ann_url, "-r", "2", "true"]);
    bob.ok(&["list", "--db", &bob_url]).has("complete");
    bob.ok(&["show", "1", "--db", &bob_url]);
    let o = bob.run(&["run", "--db", &bob_url, "-r", "1", "true"]);
    assert_eq!(o.code, Some(1), "{o}");
    o.err_has("permission denied");
    let plain = ann_url.replace("verify-full", "disable");
    ann.fails(&["list", "--db", &plain], 1)
        .err_has("rejects connection");
}
