//! A PostgreSQL key=value connection string (`host=db dbname=abperf service=lab`), read by
//! libpq's rules: pairs separated by white space, `=` with optional blanks around it, a value
//! bare or single-quoted with `\'` and `\\` escapes. Only libpq's own keywords make one, so a
//! file named `x=y.db` stays a file.

/// The keywords libpq knows (a string with any other key is not a connection string).
const KEYWORDS: &[&str] = &[
    "host",
    "hostaddr",
    "port",
    "dbname",
    "user",
    "password",
    "passfile",
    "service",
    "connect_timeout",
    "options",
    "application_name",
    "sslmode",
    "sslrootcert",
    "sslcert",
    "sslkey",
    "sslcrl",
    "sslpassword",
    "sslnegotiation",
    "channel_binding",
    "keepalives",
    "keepalives_idle",
    "keepalives_interval",
    "keepalives_count",
    "tcp_user_timeout",
    "target_session_attrs",
    "load_balance_hosts",
    "requiressl",
    "gssencmode",
    "krbsrvname",
    "client_encoding",
    "fallback_application_name",
    "sslcompression",
    "sslsni",
    "require_auth",
    "ssl_min_protocol_version",
    "ssl_max_protocol_version",
];

/// The pairs of `text` when it is a key=value connection string (at least one pair, every key
/// one of libpq's), else None.
pub(crate) fn pairs(text: &str) -> Option<Vec<(String, String)>> {
    let mut out = Vec::new();
    let mut rest = text.trim_start();
    while !rest.is_empty() {
        let eq = rest.find('=')?;
        let key = rest[..eq].trim_end();
        if !KEYWORDS.contains(&key) {
            return None;
        }
        let mut value = String::new();
        let mut chars = rest[eq + 1..].trim_start().chars().peekable();
        let mut used = 0;
        if chars.peek() == Some(&'\'') {
            chars.next();
            used += 1;
            let mut closed = false;
            while let Some(c) = chars.next() {
                used += c.len_utf8();
                match c {
                    '\\' => {
                        let escaped = chars.next()?;
                        used += escaped.len_utf8();
                        value.push(escaped);
                    }
                    '\'' => {
                        closed = true;
                        break;
                    }
                    c => value.push(c),
                }
            }
            if !closed {
                return None;
            }
        } else {
            for c in chars.by_ref() {
                if c.is_whitespace() {
                    break;
                }
                used += c.len_utf8();
                value.push(c);
            }
        }
        let after = rest[eq + 1..].trim_start();
        rest = after[used..].trim_start();
        out.push((key.to_string(), value));
    }
    (!out.is_empty()).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_connection_string_is_read_as_libpq_reads_it() {
        let p = pairs("host=db  port = 5433 password='a b\\'c' service=lab").unwrap();
        let want = [
            ("host", "db"),
            ("port", "5433"),
            ("password", "a b'c"),
            ("service", "lab"),
        ];
        assert_eq!(p.len(), want.len());
        for ((k, v), (wk, wv)) in p.iter().zip(want) {
            assert_eq!((k.as_str(), v.as_str()), (wk, wv));
        }
        for not in ["x.db", "a=b", "host='open", "", "/tmp/host=x"] {
            assert!(pairs(not).is_none(), "{not}");
        }
    }
}
