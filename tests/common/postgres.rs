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

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}
