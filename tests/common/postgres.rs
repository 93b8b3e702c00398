//! A private PostgreSQL server for one test: a cluster made by `initdb` (the highest version in
//! /usr/lib/postgresql/*/bin) in a fresh temporary directory, listening only on 127.0.0.1 at a
//! free port with `trust` for 127.0.0.1 alone and its socket in that directory. PostgreSQL
//! refuses to run as root: as root every server command runs as the `postgres` user
//! (`runuser`), which owns the directory. Dropping the [`Server`] stops it (`pg_ctl stop -m
//! immediate`) and removes the directory, also when the test fails.
//!
//! ```ignore
//! let Some(pg) = Server::start() else { return }; // skipped, with the reason, when it cannot
//! lab.ok(&["store", "copy", &lab.p("abperf.db"), &pg.dsn("abperf")]);
//! ```

use super::skip;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A running private server; stopped and removed when dropped.
pub struct Server {
    bin: PathBuf,
    dir: tempfile::TempDir,
    pub port: u16,
    /// Whether server commands run as the `postgres` user (this process is root).
    as_postgres: bool,
}

/// The bin directory of the highest PostgreSQL installed, with its `initdb`.
fn installed() -> Option<PathBuf> {
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .flatten()
        .filter_map(|e| {
            let version = e.file_name().to_str()?.parse::<u32>().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").is_file().then_some((version, bin))
        })
        .collect();
    found.sort();
    found.pop().map(|(_, bin)| bin)
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// A port nobody listens on at this moment.
fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    l.local_addr().unwrap().port()
}

impl Server {
    /// Make and start a server, or None (the test reported skipped, with the reason) when this
    /// machine has no PostgreSQL, or no `postgres` user to run it as root.
    pub fn start() -> Option<Server> {
        let Some(bin) = installed() else {
            skip("no PostgreSQL server here (no /usr/lib/postgresql/*/bin/initdb)");
            return None;
        };
        let as_postgres = is_root();
        let has_user = Command::new("id").args(["-u", "postgres"]).output();
        if as_postgres && !has_user.is_ok_and(|o| o.status.success()) {
            skip("running as root and there is no `postgres` user to run PostgreSQL as");
            return None;
        }
        let dir = tempfile::tempdir().expect("a temporary directory");
        let mut server = Server {
            bin,
            dir,
            port: 0,
            as_postgres,
        };
        server.init();
        server.listen();
        Some(server)
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// PostgreSQL's program `name`, run as the `postgres` user when this process is root.
    fn tool(&self, name: &str) -> Command {
        let program = self.bin.join(name);
        let mut c = match self.as_postgres {
            true => {
                let mut c = Command::new("runuser");
                c.args(["-u", "postgres", "--"]).arg(program);
                c
            }
            false => Command::new(program),
        };
        // Where the postgres user may be (it may not enter this process's directory).
        c.current_dir(self.dir.path());
        c
    }

    fn must(&self, mut c: Command, what: &str) {
        let o = c.output().unwrap_or_else(|e| panic!("{what}: {e}"));
        assert!(
            o.status.success(),
            "{what}: {}{}\n{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr),
            std::fs::read_to_string(self.dir.path().join("log")).unwrap_or_default()
        );
    }

    /// initdb, and `trust` for 127.0.0.1 only.
    fn init(&self) {
        if self.as_postgres {
            let mut chown = Command::new("chown");
            chown.arg("postgres:").arg(self.dir.path());
            self.must(chown, "chown the server's directory to postgres");
        }
        let mut c = self.tool("initdb");
        c.arg("-D").arg(self.data()).args([
            "-U",
            "postgres",
            "-A",
            "trust",
            "-E",
            "UTF8",
            "--locale=C",
            "--no-sync",
        ]);
        self.must(c, "initdb");
        // Root may write the postgres-owned file; it keeps its owner and mode.
        std::fs::write(
            self.data().join("pg_hba.conf"),
            "host all all 127.0.0.1/32 trust\n",
        )
        .unwrap();
    }

    /// Start it on 127.0.0.1 at a free port (another one when that port was taken meanwhile).
    fn listen(&mut self) {
        for attempt in 0.. {
            self.port = free_port();
            let options = format!(
                "-c listen_addresses=127.0.0.1 -p {} -k {} -c fsync=off",
                self.port,
                self.dir.path().display()
            );
            let mut c = self.tool("pg_ctl");
            c.arg("-D").arg(self.data()).arg("-l");
            c.arg(self.dir.path().join("log"));
            c.args(["-w", "-t", "60", "-o", &options, "start"]);
            let started = c.output().is_ok_and(|o| o.status.success());
            if started {
                return;
            }
            let log = std::fs::read_to_string(self.dir.path().join("log")).unwrap_or_default();
            assert!(attempt < 3, "pg_ctl start failed:\n{log}");
        }
    }

    /// The URL of database `db` on this server (made by [`Server::create_db`], or `postgres`).
    pub fn dsn(&self, db: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{db}", self.port)
    }

    /// A new empty database `name`; its URL.
    pub fn create_db(&self, name: &str) -> String {
        let mut c = Command::new(self.bin.join("createdb"));
        c.args(["-h", "127.0.0.1", "-U", "postgres", "-p"])
            .arg(self.port.to_string())
            .arg(name);
        self.must(c, "createdb");
        self.dsn(name)
    }

    /// What `psql` prints for `sql` in database `db` (unaligned, tuples only).
    pub fn psql(&self, db: &str, sql: &str) -> String {
        let mut c = Command::new(self.bin.join("psql"));
        c.args([
            "-X",
            "-q",
            "-A",
            "-t",
            "-v",
            "ON_ERROR_STOP=1",
            "-d",
            &self.dsn(db),
            "-c",
            sql,
        ]);
        let o = c.output().expect("psql runs");
        assert!(
            o.status.success(),
            "psql {sql}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8_lossy(&o.stdout).trim().to_string()
    }

    /// Run `script` (SQL and psql's meta-commands) with psql as the superuser in `db`; psql's
    /// output.
    pub fn psql_script(&self, db: &str, script: &str) -> String {
        use std::io::Write;
        let mut c = Command::new(self.bin.join("psql"));
        c.args([
            "-X",
            "-q",
            "-v",
            "ON_ERROR_STOP=1",
            "-d",
            &self.dsn(db),
            "-f",
            "-",
        ]);
        c.stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let mut child = c.spawn().expect("psql runs");
        child
            .stdin
            .take()
            .unwrap()
            .write_all(script.as_bytes())
            .unwrap();
        let o = child.wait_with_output().unwrap();
        assert!(
            o.status.success(),
            "psql {script}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8_lossy(&o.stdout).to_string()
    }

    /// Where the server keeps its files (removed when it is dropped).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

impl Server {
    /// Stop it at once (`pg_ctl stop -m immediate`: as a crash of the server), as dropping it
    /// does; the directory stays until it is dropped.
    pub fn stop(&self) {
        let mut c = self.tool("pg_ctl");
        c.arg("-D")
            .arg(self.data())
            .args(["-m", "immediate", "-w", "stop"]);
        let _ = c.output(); // the directory goes with the TempDir either way
    }
}

impl Server {
    /// Replace pg_hba.conf with `lines` and have the server read it again.
    pub fn set_hba(&self, lines: &str) {
        std::fs::write(self.data().join("pg_hba.conf"), lines).unwrap();
        self.reload();
    }

    /// Serve TLS with this certificate and key (PEM files, copied into the cluster).
    pub fn enable_tls(&self, cert: &Path, key: &Path) {
        for (from, name) in [(cert, "server.crt"), (key, "server.key")] {
            let to = self.data().join(name);
            std::fs::copy(from, &to).unwrap();
            if self.as_postgres {
                let mut chown = Command::new("chown");
                chown.arg("postgres:").arg(&to);
                self.must(chown, "chown a certificate file to postgres");
            }
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&to, std::fs::Permissions::from_mode(0o600)).unwrap();
        }
        self.psql("postgres", "ALTER SYSTEM SET ssl = on");
        self.reload();
        for _ in 0..100 {
            if self.psql("postgres", "SHOW ssl") == "on" {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        panic!("the server did not turn TLS on");
    }

    fn reload(&self) {
        let mut c = self.tool("pg_ctl");
        c.arg("-D").arg(self.data()).arg("reload");
        self.must(c, "pg_ctl reload");
        // The postmaster reads its files on SIGHUP, a moment later.
        std::thread::sleep(std::time::Duration::from_millis(300));
    }

    /// The server's processes: the postmaster and its children.
    pub fn pids(&self) -> Vec<i32> {
        let head = std::fs::read_to_string(self.data().join("postmaster.pid")).unwrap();
        let main: i32 = head.lines().next().unwrap().trim().parse().unwrap();
        let mut pids = vec![main];
        for e in std::fs::read_dir("/proc").unwrap().flatten() {
            let Some(pid) = e.file_name().to_str().and_then(|p| p.parse::<i32>().ok()) else {
                continue;
            };
            let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
            // pid (comm) state ppid ...: the comm may hold spaces, so read after its ')'.
            let after = stat.rsplit_once(')').map(|(_, a)| a).unwrap_or("");
            if after.split_whitespace().nth(1) == Some(&main.to_string()) {
                pids.push(pid);
            }
        }
        pids
    }

    /// Stop every process of the server (SIGSTOP) until the guard is dropped (SIGCONT).
    pub fn pause(&self) -> Paused {
        let pids = self.pids();
        for &p in &pids {
            // SAFETY: kill has no memory preconditions; these are this test's server's pids.
            unsafe { libc::kill(p, libc::SIGSTOP) };
        }
        Paused(pids)
    }
}

/// A paused server's processes, continued when dropped.
pub struct Paused(Vec<i32>);

impl Drop for Paused {
    fn drop(&mut self) {
        for &p in &self.0 {
            // SAFETY: as in `Server::pause`.
            unsafe { libc::kill(p, libc::SIGCONT) };
        }
    }
}

/// A certificate authority and a server certificate for `names` (DNS names) it signed, made
/// with the openssl program in `dir`: (ca.crt, server.crt, server.key); None (the test
/// reported skipped) without openssl.
pub fn certificates(dir: &Path, names: &[&str]) -> Option<(PathBuf, PathBuf, PathBuf)> {
    if !super::on_path("openssl") {
        skip("no openssl program here to make certificates");
        return None;
    }
    let run = |args: &[&str]| {
        let o = Command::new("openssl")
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "openssl {args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    };
    let subject_alt = names
        .iter()
        .map(|n| format!("DNS:{n}"))
        .collect::<Vec<_>>()
        .join(",");
    run(&[
        "req",
        "-x509",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-nodes",
        "-days",
        "2",
        "-subj",
        "/CN=test CA",
        "-keyout",
        "ca.key",
        "-out",
        "ca.crt",
    ]);
    run(&[
        "req",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-nodes",
        "-subj",
        &format!("/CN={}", names[0]),
        "-keyout",
        "server.key",
        "-out",
        "server.csr",
    ]);
    std::fs::write(
        dir.join("san.ext"),
        format!("subjectAltName={subject_alt}\n"),
    )
    .unwrap();
    run(&[
        "x509",
        "-req",
        "-in",
        "server.csr",
        "-CA",
        "ca.crt",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-days",
        "2",
        "-extfile",
        "san.ext",
        "-out",
        "server.crt",
    ]);
    Some((
        dir.join("ca.crt"),
        dir.join("server.crt"),
        dir.join("server.key"),
    ))
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}
