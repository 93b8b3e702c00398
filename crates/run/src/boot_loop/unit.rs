//! The systemd unit that continues a boot loop at every boot: `abperf boot-loop resume --db
//! STORE`, started once the machine is up, enabled for multi-user.target while the loop runs and
//! removed when it ends. Its presence is also the machine-wide mark of a running loop (a second
//! one is refused).

use anyhow::Context;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The unit's file name.
pub const UNIT_NAME: &str = "abperf-boot-loop.service";

/// Where units are installed.
pub fn unit_dir() -> PathBuf {
    PathBuf::from("/etc/systemd/system")
}

/// The installed unit's path.
pub fn unit_path() -> PathBuf {
    unit_dir().join(UNIT_NAME)
}

/// The `WantedBy=` link that enables it.
fn wants_link() -> PathBuf {
    unit_dir().join("multi-user.target.wants").join(UNIT_NAME)
}

/// The unit's text for the loop of experiment `id` (None: whichever loop `store` runs), run by
/// the abperf binary `exe`.
pub fn unit_text(exe: &Path, store: &Path, id: Option<i64>) -> String {
    let of = match id {
        Some(id) => format!(" of experiment {id}"),
        None => String::new(),
    };
    let q = quote;
    format!(
        "# Installed by abperf for the boot loop{of}; removed when the loop ends.\n\
         # Stop the loop with: abperf boot-loop stop --db {store}\n\
         [Unit]\n\
         Description=abperf boot loop{of}: this boot's runs, then the next kernel\n\
         After=multi-user.target\n\
         \n\
         [Service]\n\
         Type=exec\n\
         {config}\
         ExecStart={exe} boot-loop resume --db {store_q}\n\
         StandardOutput=journal+console\n\
         StandardError=journal+console\n\
         \n\
         [Install]\n\
         WantedBy=multi-user.target\n",
        exe = q(exe),
        // The resume at boot checks the design against the approvals of the user who made the
        // loop (docs/security.md): a system service has no $HOME of its own.
        config = crate::design::trust::config_dir()
            .ok()
            .and_then(|d| d
                .parent()
                .map(|p| format!("XDG_CONFIG_HOME={}", p.display())))
            .map(|e| format!("Environment={}\n", q(Path::new(&e))))
            .unwrap_or_default(),
        store = store.display(),
        store_q = q(store),
    )
}

/// Write the unit and enable it (the link `systemctl enable` makes, made here so that no
/// running systemd is needed), then let a running systemd read it.
pub fn install(text: &str) -> anyhow::Result<()> {
    let path = unit_path();
    std::fs::create_dir_all(unit_dir())
        .with_context(|| format!("cannot create {}", unit_dir().display()))?;
    std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
    let link = wants_link();
    if let Some(d) = link.parent() {
        std::fs::create_dir_all(d).with_context(|| format!("cannot create {}", d.display()))?;
    }
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(&path, &link)
        .with_context(|| format!("cannot enable the unit ({})", link.display()))?;
    daemon_reload();
    Ok(())
}

/// Remove the unit and its link (whatever of them exists).
pub fn remove() -> anyhow::Result<()> {
    for p in [wants_link(), unit_path()] {
        match std::fs::remove_file(&p) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e).with_context(|| format!("cannot remove {}", p.display())),
        }
    }
    daemon_reload();
    Ok(())
}

/// The experiment a unit installed on this machine continues, if one is installed.
pub fn installed() -> Option<(PathBuf, String)> {
    let path = unit_path();
    let text = std::fs::read_to_string(&path).ok()?;
    Some((path, text))
}

/// Does the installed unit continue a loop of this store?
pub fn is_for_store(text: &str, store: &Path) -> bool {
    text.lines()
        .any(|l| l.starts_with("ExecStart=") && l.ends_with(&format!("--db {}", quote(store))))
}

/// systemd's own quoting: double quotes, backslash and double quote escaped.
fn quote(p: &Path) -> String {
    format!(
        "\"{}\"",
        p.to_string_lossy()
            .replace('\\', "\\\\")
            .replace('"', "\\\"")
    )
}

fn daemon_reload() {
    if super::machine::systemd_running() {
        let _ = Command::new("systemctl").arg("daemon-reload").status();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_unit_runs_resume_on_the_store_and_is_wanted_by_multi_user() {
        let t = unit_text(
            Path::new("/usr/local/bin/abperf"),
            Path::new("/var/lib/my \"store\"/abperf.db"),
            Some(7),
        );
        assert!(
            t.contains(
                "ExecStart=\"/usr/local/bin/abperf\" boot-loop resume --db \
                 \"/var/lib/my \\\"store\\\"/abperf.db\"\n"
            ),
            "{t}"
        );
        assert!(t.contains("WantedBy=multi-user.target\n"));
        assert!(t.contains("Type=exec\n"));
        assert!(t.contains("boot loop of experiment 7:"));
        assert!(is_for_store(
            &t,
            Path::new("/var/lib/my \"store\"/abperf.db")
        ));
        assert!(!is_for_store(&t, Path::new("/var/lib/abperf.db")));
    }
}
