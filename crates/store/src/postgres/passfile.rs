//! Passwords and connection settings kept out of the URL, read by libpq's rules (rust-postgres
//! reads neither file; both formats are a few lines, so they are read here rather than through
//! a crate): the password file (`passfile=`, else `$PGPASSFILE`, else `~/.pgpass`; lines
//! `host:port:database:user:password`, `*` matching anything, `\:` and `\\` escaped; ignored,
//! with a warning, when group or others may read it) and the service file (`service=NAME`:
//! `$PGSERVICEFILE`, else `~/.pg_service.conf`, then `$PGSYSCONFDIR/pg_service.conf`, else
//! `/etc/postgresql-common/pg_service.conf`; INI sections of key=value lines).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// The password file's password for this connection, if it has one.
pub(crate) fn password(
    passfile: Option<&str>,
    host: &str,
    port: u16,
    database: &str,
    user: &str,
) -> Option<String> {
    let file = match passfile {
        Some(f) => PathBuf::from(f),
        None => match std::env::var_os("PGPASSFILE").filter(|f| !f.is_empty()) {
            Some(f) => PathBuf::from(f),
            None => home()?.join(".pgpass"),
        },
    };
    let meta = std::fs::metadata(&file).ok()?;
    if !meta.is_file() {
        return None;
    }
    if meta.permissions().mode() & 0o077 != 0 {
        abperf_model::error::stderr_line(&format!(
            "abperf: warning: password file {} is readable by group or others: ignored (chmod \
             0600 it)",
            file.display()
        ));
        return None;
    }
    let text = std::fs::read_to_string(&file).ok()?;
    let port = port.to_string();
    let wanted = [host, &port, database, user];
    text.lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .map(fields)
        .find(|f| f.len() == 5 && f.iter().zip(wanted).all(|(f, w)| f == "*" || f == w))
        .map(|mut f| f.remove(4))
}

/// A password file line's fields: split at unescaped `:`, `\x` read as `x`.
fn fields(line: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => out.last_mut().unwrap().extend(chars.next()),
            ':' if out.len() < 5 => out.push(String::new()),
            c => out.last_mut().unwrap().push(c),
        }
    }
    out
}

/// The settings of service `name` (key, value), from the first service file that has it.
pub(crate) fn service(name: &str) -> anyhow::Result<Vec<(String, String)>> {
    let mut files = Vec::new();
    match std::env::var_os("PGSERVICEFILE").filter(|f| !f.is_empty()) {
        Some(f) => files.push(PathBuf::from(f)),
        None => files.extend(home().map(|h| h.join(".pg_service.conf"))),
    }
    match std::env::var_os("PGSYSCONFDIR").filter(|f| !f.is_empty()) {
        Some(d) => files.push(PathBuf::from(d).join("pg_service.conf")),
        None => files.push("/etc/postgresql-common/pg_service.conf".into()),
    }
    for file in &files {
        if let Some(found) = section(file, name)? {
            return Ok(found);
        }
    }
    let looked: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    anyhow::bail!(
        "service={name}: no section [{name}] in {}",
        looked.join(" or ")
    )
}

/// Section `name` of the service file `file` (None: no such file or section).
fn section(file: &Path, name: &str) -> anyhow::Result<Option<Vec<(String, String)>>> {
    let Ok(text) = std::fs::read_to_string(file) else {
        return Ok(None);
    };
    let mut found: Option<Vec<(String, String)>> = None;
    let mut inside = false;
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(head) = line.strip_prefix('[') {
            if found.is_some() {
                break;
            }
            inside = head.strip_suffix(']') == Some(name);
            if inside {
                found = Some(Vec::new());
            }
            continue;
        }
        if !inside {
            continue;
        }
        let (k, v) = line
            .split_once('=')
            .ok_or_else(|| anyhow::anyhow!("{}:{}: not a key=value line", file.display(), n + 1))?;
        if let Some(pairs) = found.as_mut() {
            pairs.push((k.trim().to_string(), v.trim().to_string()));
        }
    }
    Ok(found)
}

fn home() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_password_file_is_read_as_libpq_reads_it() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("pgpass");
        std::fs::write(
            &file,
            "# comment\nother:5432:*:ann:no\ndb\\:x:*:abperf:ann:p\\:w\\\\d\n*:*:*:*:any\n",
        )
        .unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        let f = file.to_str();
        assert_eq!(password(f, "db:x", 5, "abperf", "ann").unwrap(), "p:w\\d");
        assert_eq!(password(f, "h", 1, "d", "u").unwrap(), "any");
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(
            password(f, "h", 1, "d", "u"),
            None,
            "a readable file is ignored"
        );
    }

    #[test]
    fn a_service_is_one_section() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("s.conf");
        std::fs::write(
            &file,
            "[a]\nhost=x\n[lab]\n# c\nhost = db\nport=5433\n[b]\nhost=y\n",
        )
        .unwrap();
        let lab = section(&file, "lab").unwrap().unwrap();
        assert_eq!(
            lab,
            [("host".into(), "db".into()), ("port".into(), "5433".into())]
        );
        assert!(section(&file, "none").unwrap().is_none());
    }
}
