//! The connection a PostgreSQL store's URL opens (the URL itself is a [`crate::Location`]).

use crate::location::redacted;
use abperf_model::error::usage;
use std::time::Duration;

/// How long connecting may take before the store is reported unreachable (unless the DSN says).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

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
    fn a_dsn_that_does_not_parse_is_a_usage_error_without_its_password() {
        let e = connect("postgres://ann:pw@db:notaport/x").err().unwrap();
        assert_eq!(abperf_model::error::exit_code(&e), 2);
        let text = format!("{e:#}");
        assert!(text.contains("postgres://ann:***@db:notaport/x"), "{text}");
        assert!(!text.contains("pw"), "{text}");
    }
}
