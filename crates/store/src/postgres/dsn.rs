//! A PostgreSQL store's name: a `postgres://` or `postgresql://` URL, shown with its password
//! replaced by `***`, and the connection it opens.

use abperf_model::error::usage;
use std::time::Duration;

/// How long connecting may take before the store is reported unreachable (unless the DSN says).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Whether `name` (a `--db` value, `$ABPERF_DB`, a `store copy` argument) names a PostgreSQL
/// store rather than an SQLite file.
pub fn is_dsn(name: &str) -> bool {
    ["postgres://", "postgresql://"]
        .iter()
        .any(|scheme| name.starts_with(scheme))
}

/// `dsn` with any password replaced by `***` (in the user part and in `password=` parameters).
pub fn redacted(dsn: &str) -> String {
    let Some(start) = dsn.find("://").map(|i| i + 3) else {
        return dsn.to_string();
    };
    let rest = &dsn[start..];
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let mut out = dsn[..start].to_string();
    let authority = &rest[..end];
    match authority.rfind('@') {
        Some(at) => {
            let user = &authority[..at];
            match user.find(':') {
                Some(colon) => out.push_str(&format!("{}:***", &user[..colon])),
                None => out.push_str(user),
            }
            out.push_str(&authority[at..]);
        }
        None => out.push_str(authority),
    }
    out.push_str(&redacted_params(&rest[end..]));
    out
}

/// The path and query of a URL with the value of every `password=` parameter replaced.
fn redacted_params(tail: &str) -> String {
    let Some(q) = tail.find('?') else {
        return tail.to_string();
    };
    let params: Vec<String> = tail[q + 1..]
        .split('&')
        .map(|p| match p.split_once('=') {
            Some((k, _)) if k.eq_ignore_ascii_case("password") => format!("{k}=***"),
            _ => p.to_string(),
        })
        .collect();
    format!("{}?{}", &tail[..q], params.join("&"))
}

/// A connection to the store `dsn`: a DSN that does not parse is a usage error, a server that
/// cannot be reached or refuses the login an error naming the DSN (password hidden) and why.
pub fn connect(dsn: &str) -> anyhow::Result<postgres::Client> {
    let shown = redacted(dsn);
    let mut config: postgres::Config = dsn.parse().map_err(|e| {
        usage(format!(
            "store {shown} is not a PostgreSQL URL that can be used ({e}); write \
             postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE"
        ))
    })?;
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(CONNECT_TIMEOUT);
    }
    config.connect(postgres::NoTls).map_err(|e| {
        anyhow::anyhow!(
            "cannot connect to the PostgreSQL store {shown}: {}",
            why(&e)
        )
    })
}

/// What went wrong, with its causes ("error connecting to server: Connection refused ...").
fn why(e: &postgres::Error) -> String {
    let mut out = e.to_string();
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        out.push_str(&format!(": {c}"));
        cause = c.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_hidden() {
        assert_eq!(
            redacted("postgres://ann:s3cr@t@db.lab:5433/abperf?sslmode=disable&password=x"),
            "postgres://ann:***@db.lab:5433/abperf?sslmode=disable&password=***"
        );
        assert_eq!(redacted("postgresql://ann@db/x"), "postgresql://ann@db/x");
        assert_eq!(redacted("postgres://db"), "postgres://db");
        assert!(is_dsn("postgresql://x") && is_dsn("postgres://x"));
        assert!(!is_dsn("postgres:x") && !is_dsn("/tmp/postgres://x"));
    }

    #[test]
    fn a_dsn_that_does_not_parse_is_a_usage_error_without_its_password() {
        let e = connect("postgres://ann:pw@db:notaport/x").err().unwrap();
        assert_eq!(abperf_model::error::exit_code(&e), 2);
        let text = format!("{e:#}");
        assert!(text.contains("postgres://ann:***@db:notaport/x"), "{text}");
        assert!(!text.contains("pw"), "{text}");
    }
}
