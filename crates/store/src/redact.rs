//! Passwords hidden from everything abperf shows or stores: a PostgreSQL URL's user part
//! (`postgres://USER:PASSWORD@...`, the password ending at the last `@`, so a `/`, `?`, `@` or
//! `%XX` in it is hidden whole), a `password=` parameter in a URL's query, and a `password=`
//! pair of a key=value connection string (quoted or not). A command line is redacted argument
//! by argument ([`redacted_args`]) before it is stored, so no row, output or copy holds one.

/// `dsn` (a URL or key=value connection string) with every password replaced by `***`.
pub(crate) fn redacted(dsn: &str) -> String {
    match url_start(dsn) {
        Some(at) => format!("{}{}", &dsn[..at], redacted_url(&dsn[at..])),
        None => redacted_pairs(dsn),
    }
}

/// Each argument of a command line with any password it carries hidden (`--db URL`,
/// `--db=URL`, a key=value connection string, `store copy` arguments).
pub fn redacted_args(args: impl IntoIterator<Item = String>) -> Vec<String> {
    args.into_iter().map(|a| redacted(&a)).collect()
}

/// Where a `postgres://` or `postgresql://` URL starts in `text`.
fn url_start(text: &str) -> Option<usize> {
    let lower = text.to_ascii_lowercase();
    ["postgresql://", "postgres://"]
        .iter()
        .filter_map(|s| lower.find(s))
        .min()
}

/// A URL (from its scheme on) with the user part's password and `password=` parameters hidden.
fn redacted_url(url: &str) -> String {
    let start = url.find("://").map_or(0, |i| i + 3);
    let rest = &url[start..];
    let mut out = url[..start].to_string();
    // The password runs to the last `@`: whatever it holds, nothing of it is shown.
    let tail = match rest.rfind('@') {
        Some(at) => {
            let user = &rest[..at];
            match user.find(':') {
                Some(colon) => out.push_str(&format!("{}:***", &user[..colon])),
                None => out.push_str(user),
            }
            out.push('@');
            &rest[at + 1..]
        }
        None => rest,
    };
    match tail.find('?') {
        Some(q) => {
            let params: Vec<String> = tail[q + 1..]
                .split('&')
                .map(|p| match p.split_once('=') {
                    Some((k, _)) if is_password_key(k) => format!("{k}=***"),
                    _ => p.to_string(),
                })
                .collect();
            out.push_str(&format!("{}?{}", &tail[..q], params.join("&")));
        }
        None => out.push_str(tail),
    }
    out
}

/// Whether a parameter's name (possibly %-encoded) is `password`.
fn is_password_key(key: &str) -> bool {
    let mut decoded = Vec::new();
    let bytes = key.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let hex = key
            .get(i + 1..i + 3)
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(b)) => {
                decoded.push(b);
                i += 3;
            }
            (b, _) => {
                decoded.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&decoded)
        .to_ascii_lowercase()
        .contains("password")
}

/// Text with the value of every `password = VALUE` pair hidden (VALUE bare up to white space,
/// or single-quoted with backslash escapes, as libpq reads it).
fn redacted_pairs(text: &str) -> String {
    let lower = text.to_ascii_lowercase();
    let mut out = String::new();
    let mut from = 0;
    while let Some(found) = lower[from..].find("password") {
        let key_end = from + found + "password".len();
        let after = &text[key_end..];
        let eq = after.len() - after.trim_start().len();
        if !after[eq..].starts_with('=') {
            out.push_str(&text[from..key_end]);
            from = key_end;
            continue;
        }
        let value_at = key_end + eq + 1;
        let value = &text[value_at..];
        let blank = value.len() - value.trim_start().len();
        let end = value_at + blank + value_len(&value[blank..]);
        out.push_str(&text[from..value_at + blank]);
        out.push_str("***");
        from = end;
    }
    out.push_str(&text[from..]);
    out
}

/// The length of a key=value string's value at the start of `v`.
fn value_len(v: &str) -> usize {
    let mut chars = v.char_indices();
    if v.starts_with('\'') {
        chars.next();
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => {
                    chars.next();
                }
                '\'' => return i + 1,
                _ => {}
            }
        }
        return v.len();
    }
    v.find(char::is_whitespace).unwrap_or(v.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_form_of_password_is_hidden() {
        let cases = [
            (
                "postgres://ann:s3cr@t@db.lab:5433/abperf?sslmode=disable&password=x",
                "postgres://ann:***@db.lab:5433/abperf?sslmode=disable&password=***",
            ),
            ("postgres://ann:a/b?c@db/x", "postgres://ann:***@db/x"),
            ("postgres://ann:p%2Fw%40d@db/x", "postgres://ann:***@db/x"),
            ("postgresql://ann@db/x", "postgresql://ann@db/x"),
            ("postgres://db", "postgres://db"),
            ("--db=postgres://a:pw@h/x", "--db=postgres://a:***@h/x"),
            (
                "host=db user=ann password=pw dbname=x",
                "host=db user=ann password=*** dbname=x",
            ),
            (
                "host=db password = 'p w\\' x' dbname=x",
                "host=db password = *** dbname=x",
            ),
            ("PASSWORD=pw", "PASSWORD=***"),
            (
                "postgres://h/d?pass%77ord=pw",
                "postgres://h/d?pass%77ord=***",
            ),
            ("plain", "plain"),
        ];
        for (given, shown) in cases {
            assert_eq!(redacted(given), shown, "{given}");
        }
        let args = redacted_args(["abperf".into(), "postgres://u:pw@h/d".into()]);
        assert_eq!(args, ["abperf", "postgres://u:***@h/d"]);
    }
}
