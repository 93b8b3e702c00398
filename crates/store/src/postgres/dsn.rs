//! The connection a PostgreSQL store's location opens (the location itself is a
//! [`crate::Location`]): a URL or a key=value string, with what rust-postgres does not read
//! itself taken here: `sslmode` and `sslrootcert` (TLS, `tls`), `service=` (the service file)
//! and the password file (`passfile`). Every wait is bounded (`deadline`).

use super::deadline::{self, Watch};
use super::passfile;
use super::tls::{self, Mode};
use crate::redact::redacted;
use abperf_model::error::usage;
use postgres::config::Host;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// How long the TCP connect may take (unless the DSN says; never beyond `--db-timeout`).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Parameters read here rather than by rust-postgres.
const OURS: &[&str] = &["sslmode", "sslrootcert", "service", "passfile"];

/// libpq parameters abperf does not support: named as such rather than ignored.
const UNSUPPORTED: &[&str] = &[
    "sslcert",
    "sslkey",
    "sslcrl",
    "sslcrldir",
    "sslpassword",
    "sslsni",
    "sslcompression",
    "gssencmode",
    "gsslib",
    "krbsrvname",
    "requiressl",
    "require_auth",
    "client_encoding",
    "fallback_application_name",
    "ssl_min_protocol_version",
    "ssl_max_protocol_version",
    "replication",
    "hostaddr",
];

/// A connection to the store `dsn` and its watcher: a DSN that does not parse is a usage error,
/// a server that cannot be reached or refuses the login an error naming the DSN (password
/// hidden) and why.
pub fn connect(dsn: &str) -> anyhow::Result<(postgres::Client, Watch)> {
    let shown = redacted(dsn);
    let bad = |why: String| {
        usage(format!(
            "store {shown} is not a PostgreSQL URL that can be used ({why}); write \
             postgres://USER@HOST[:PORT]/DATABASE?sslmode=verify-full&sslrootcert=FILE (the \
             password in ~/.pgpass)"
        ))
    };
    let (rest, ours) = split(dsn).map_err(bad)?;
    let mut config: postgres::Config = rest.parse().map_err(|e| bad(format!("{e}")))?;
    let mut ours = ours;
    if let Some(name) = find(&ours, "service") {
        let pairs = passfile::service(&name).map_err(|e| bad(format!("{e:#}")))?;
        apply_service(&mut config, &mut ours, pairs).map_err(bad)?;
    }
    fill_defaults(&mut config, find(&ours, "passfile").as_deref());
    let mode = match find(&ours, "sslmode") {
        Some(m) => Mode::parse(&m).map_err(bad)?,
        None if on_this_machine(&config) => Mode::Disable,
        None => Mode::Prefer,
    };
    config.ssl_mode(mode.negotiated());
    let root = find(&ours, "sslrootcert").map(PathBuf::from);
    let (tls, used) = tls::connector(mode, root.as_deref()).map_err(|e| bad(format!("{e:#}")))?;
    let (client, fd) = deadline::connect_bounded(&shown, move || config.connect(tls))?;
    if mode == Mode::Prefer && !used.load(Ordering::SeqCst) {
        abperf_model::error::stderr_line(&format!(
            "abperf: warning: the PostgreSQL store {shown} does not offer TLS: connected without \
             encryption (sslmode=prefer; sslmode=verify-full refuses that)"
        ));
    }
    Ok((client, deadline::watch(fd, &shown)))
}

/// The DSN without the parameters read here, and those (key, value).
fn split(dsn: &str) -> Result<(String, Vec<(String, String)>), String> {
    let mut ours = Vec::new();
    let mut take = |k: &str, v: &str| -> Result<bool, String> {
        if UNSUPPORTED.contains(&k) {
            return Err(format!(
                "abperf does not support the connection parameter {k}"
            ));
        }
        let mine = OURS.contains(&k);
        if mine {
            ours.push((k.to_string(), v.to_string()));
        }
        Ok(mine)
    };
    if let Some(pairs) = crate::conninfo::pairs(dsn) {
        let mut rest = Vec::new();
        for (k, v) in pairs {
            if !take(&k, &v)? {
                rest.push((k, v));
            }
        }
        return Ok((joined(&rest), ours));
    }
    let Some((base, query)) = dsn.split_once('?') else {
        return Ok((dsn.to_string(), ours));
    };
    let mut kept = Vec::new();
    for p in query.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = p.split_once('=').unwrap_or((p, ""));
        if !take(k, &decode(v))? {
            kept.push(p);
        }
    }
    Ok(match kept.is_empty() {
        true => (base.to_string(), ours),
        false => (format!("{base}?{}", kept.join("&")), ours),
    })
}

/// `pairs` written back as a connection string (every value quoted).
fn joined(pairs: &[(String, String)]) -> String {
    pairs
        .iter()
        .map(|(k, v)| format!("{k}='{}'", v.replace('\\', "\\\\").replace('\'', "\\'")))
        .collect::<Vec<_>>()
        .join(" ")
}

/// A %-encoded URL value decoded.
fn decode(v: &str) -> String {
    let mut out = Vec::new();
    let b = v.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match v.get(i + 1..i + 3).map(|h| u8::from_str_radix(h, 16)) {
            Some(Ok(x)) if b[i] == b'%' => {
                out.push(x);
                i += 3;
            }
            _ => {
                out.push(b[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn find(pairs: &[(String, String)], key: &str) -> Option<String> {
    pairs
        .iter()
        .rev()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.clone())
}

/// A service's settings, for what the DSN does not say itself.
fn apply_service(
    config: &mut postgres::Config,
    ours: &mut Vec<(String, String)>,
    pairs: Vec<(String, String)>,
) -> Result<(), String> {
    for (k, v) in pairs {
        match k.as_str() {
            "host" if config.get_hosts().is_empty() => {
                v.split(',').for_each(|h| {
                    config.host(h);
                });
            }
            "port" if config.get_ports().is_empty() => {
                let port = v.parse().map_err(|_| format!("service port={v}"))?;
                config.port(port);
            }
            "dbname" if config.get_dbname().is_none() => {
                config.dbname(&v);
            }
            "user" if config.get_user().is_none() => {
                config.user(&v);
            }
            "password" if config.get_password().is_none() => {
                config.password(&v);
            }
            "application_name" if config.get_application_name().is_none() => {
                config.application_name(&v);
            }
            "sslmode" | "sslrootcert" | "passfile" => {
                if find(ours, &k).is_none() {
                    ours.push((k, v));
                }
            }
            "host" | "port" | "dbname" | "user" | "password" | "application_name" => {}
            other => {
                return Err(format!(
                    "the service's parameter {other} is not supported by abperf"
                ));
            }
        }
    }
    Ok(())
}

/// The user (libpq's default: `$PGUSER`, else this user), the password from the password
/// file, and the bounds of every wait.
fn fill_defaults(config: &mut postgres::Config, passfile: Option<&str>) {
    if config.get_user().is_none() {
        let user = std::env::var("PGUSER")
            .or_else(|_| std::env::var("USER"))
            .unwrap_or_else(|_| "postgres".into());
        config.user(&user);
    }
    if config.get_password().is_none() {
        let host = match config.get_hosts().first() {
            Some(Host::Tcp(h)) => h.clone(),
            _ => "localhost".to_string(),
        };
        let port = config.get_ports().first().copied().unwrap_or(5432);
        let user = config.get_user().unwrap_or_default().to_string();
        let db = config.get_dbname().unwrap_or(&user).to_string();
        if let Some(pw) = passfile::password(passfile, &host, port, &db, &user) {
            config.password(pw);
        }
    }
    // What the server's statement_timeout and the socket's option take: at most i32::MAX ms.
    let limit = crate::wait_limit::wait_limit().min(Duration::from_millis(i32::MAX as u64));
    let connect = config
        .get_connect_timeout()
        .copied()
        .unwrap_or(CONNECT_TIMEOUT);
    config.connect_timeout(connect.min(limit));
    config.keepalives(true);
    config.keepalives_idle(Duration::from_secs(10));
    config.keepalives_interval(Duration::from_secs(5));
    config.keepalives_retries(3);
    config.tcp_user_timeout(limit);
    let timeout = format!("-c statement_timeout={}", limit.as_millis());
    let options = match config.get_options() {
        Some(o) if o.contains("statement_timeout") => o.to_string(),
        Some(o) => format!("{o} {timeout}"),
        None => timeout,
    };
    config.options(&options);
}

/// Whether every host is this machine (loopback or a Unix socket): no network to protect.
fn on_this_machine(config: &postgres::Config) -> bool {
    config.get_hosts().iter().all(|h| match h {
        Host::Tcp(name) => {
            name == "localhost"
                || name
                    .parse::<std::net::IpAddr>()
                    .is_ok_and(|ip| ip.is_loopback())
        }
        Host::Unix(_) => true,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dsn_that_does_not_parse_is_a_usage_error_without_its_password() {
        for dsn in [
            "postgres://ann:pw@db:notaport/x",
            "postgres://ann:pw@db/x?sslmode=allow",
            "postgres://ann:pw@db/x?sslcert=c.pem",
            "host=db password=pw sslmode=verify-full",
        ] {
            let e = connect(dsn).err().unwrap();
            assert_eq!(abperf_model::error::exit_code(&e), 2, "{dsn}");
            let text = format!("{e:#}");
            assert!(text.contains("***") || !dsn.contains("pw@"), "{text}");
            assert!(!text.contains("pw@") && !text.contains("=pw"), "{text}");
        }
    }

    #[test]
    fn the_parameters_rust_postgres_does_not_read_are_taken_out() {
        let (rest, ours) =
            split("postgres://a@h/d?sslmode=verify-full&sslrootcert=%2Fx%2Fca.pem&x=1").unwrap();
        assert_eq!(rest, "postgres://a@h/d?x=1");
        assert_eq!(find(&ours, "sslrootcert").unwrap(), "/x/ca.pem");
        let (rest, ours) = split("host=h service=lab").unwrap();
        assert_eq!(
            (rest.as_str(), find(&ours, "service").unwrap().as_str()),
            ("host='h'", "lab")
        );
        assert!(
            split("postgres://h/d?sslkey=k")
                .unwrap_err()
                .contains("sslkey")
        );
    }
}
