//! Designs cannot be swapped: `run --resume` and `fleet run --resume` execute only a design the
//! user on this machine approved. A store is shared and its rows are not trusted (see
//! docs/security.md): anyone who can write the database could otherwise edit a variant's command
//! or knob and have a teammate's root resume run it.
//!
//! When abperf makes an experiment it approves its design: the SHA-256 of everything a resume
//! executes or writes (the stored design with its setup, pre and post commands, noise settings
//! and kernels; each variant's name, command, parameters, knob paths and values, workload and
//! boot) is recorded as an empty file `approved/<hash>` in the user's config directory
//! (`$XDG_CONFIG_HOME/abperf`, else `~/.config/abperf`; the directory 0700, each file 0600,
//! both checked to be the user's and closed to others). A resume recomputes the hash from the
//! store and finds the file, or prints the stored design and refuses unless the user passes
//! `--trust-stored-design` after reading it. A record on this machine, not a signature in the
//! store: the approval belongs to this user here, needs no key to keep secret, and no store
//! schema (a design resumed elsewhere is shown and confirmed once there).

use abperf_model::Variant;
use anyhow::Context;
use sha2::{Digest, Sha256};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// The flag that runs a stored design this machine did not approve.
pub const TRUST_FLAG: &str = "--trust-stored-design";

/// What a resume executes or writes, in a canonical form (maps sorted; knob originals left out:
/// they are filled in as runs are made and never written back from a store).
fn canonical(design: &serde_json::Value, variants: &[Variant]) -> serde_json::Value {
    let vs: Vec<serde_json::Value> = variants
        .iter()
        .map(|v| {
            let knobs: Vec<[&str; 2]> = v
                .knobs
                .iter()
                .map(|k| [k.path.as_str(), k.value.as_str()])
                .collect();
            serde_json::json!({
                "name": v.name,
                "command": v.command,
                "parameters": v.parameters,
                "knobs": knobs,
                "boot": v.boot,
                "workload": v.workload,
            })
        })
        .collect();
    serde_json::json!({ "design": design, "variants": vs })
}

/// The SHA-256 (hex) of the design's canonical form.
pub fn fingerprint(design: &serde_json::Value, variants: &[Variant]) -> String {
    let text = canonical(design, variants).to_string();
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The user's config directory for abperf: `$XDG_CONFIG_HOME/abperf`, else
/// `$HOME/.config/abperf`.
pub fn config_dir() -> anyhow::Result<PathBuf> {
    if let Some(x) = std::env::var_os("XDG_CONFIG_HOME").filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(x).join("abperf"));
    }
    let home = std::env::var_os("HOME")
        .filter(|d| !d.is_empty())
        .context("neither $XDG_CONFIG_HOME nor $HOME is set: no config directory")?;
    Ok(PathBuf::from(home).join(".config/abperf"))
}

/// `DIR/approved`, created 0700, checked to be the user's and closed to others (it and its
/// parent).
fn approvals_dir() -> anyhow::Result<PathBuf> {
    let d = config_dir()?.join("approved");
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&d)
        .with_context(|| format!("cannot create {}", d.display()))?;
    // SAFETY: geteuid has no preconditions.
    let uid = unsafe { libc::geteuid() };
    for dir in [d.as_path(), d.parent().unwrap_or(&d)] {
        let m = std::fs::symlink_metadata(dir)
            .with_context(|| format!("cannot stat {}", dir.display()))?;
        if !m.is_dir() || m.uid() != uid || m.mode() & 0o077 != 0 {
            anyhow::bail!(
                "{} is not a directory of uid {uid} closed to others (chmod 700 it): approved \
                 designs cannot be recorded there",
                dir.display()
            );
        }
    }
    Ok(d)
}

/// Record that the user on this machine approved this design (called when abperf makes the
/// experiment from the user's own command line).
pub fn approve(design: &serde_json::Value, variants: &[Variant]) -> anyhow::Result<()> {
    let f = approvals_dir()?.join(fingerprint(design, variants));
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(&f)
        .with_context(|| format!("cannot record the design's approval in {}", f.display()))?;
    Ok(())
}

fn approved(dir: &Path, hash: &str) -> bool {
    // SAFETY: geteuid has no preconditions.
    let uid = unsafe { libc::geteuid() };
    std::fs::symlink_metadata(dir.join(hash))
        .is_ok_and(|m| m.is_file() && m.uid() == uid && m.mode() & 0o022 == 0)
}

/// The stored design as the user reads it before trusting it: every command, knob and setting.
pub fn describe(id: i64, design: &serde_json::Value, variants: &[Variant]) -> String {
    let mut s = format!("experiment {id}: the design stored in the store:\n");
    for v in variants {
        s.push_str(&format!("  variant {}:\n", v.name));
        if let Some(c) = &v.command {
            s.push_str(&format!("    command: {c}\n"));
        }
        for k in &v.knobs {
            s.push_str(&format!("    knob: {} = {}\n", k.path, k.value));
        }
        if let Some(w) = &v.workload {
            s.push_str(&format!("    workload: {}\n", serde_json::json!(w)));
        }
        if let Some(b) = &v.boot {
            s.push_str(&format!("    boot: {}\n", serde_json::json!(b)));
        }
    }
    s.push_str(&format!("  design: {design}\n"));
    s
}

/// Check, before a resume executes anything, that the stored design (`design` and `variants`
/// of experiment `id`, as read from the store) is one the user on this machine approved. When
/// it is not, the design is returned in the error for the user to read, and the resume is
/// refused unless `trust_stored` (the user passed [`TRUST_FLAG`]): then it is approved here from
/// now on and a note says so.
pub fn verify(
    id: i64,
    design: &serde_json::Value,
    variants: &[Variant],
    trust_stored: bool,
) -> anyhow::Result<()> {
    let dir = approvals_dir()?;
    if approved(&dir, &fingerprint(design, variants)) {
        return Ok(());
    }
    if trust_stored {
        abperf_model::error::stderr_line(&format!(
            "abperf: note: experiment {id}: running its stored design, not approved on this \
             machine before, as {TRUST_FLAG} says"
        ));
        return approve(design, variants);
    }
    anyhow::bail!(
        "{}experiment {id}: this design was not approved on this machine: it was changed in the \
         store since it was made, or made by another user or machine (or by an abperf before \
         designs were approved). Nothing was run. Read it above; if you trust every command and \
         knob in it, resume with {TRUST_FLAG}",
        describe(id, design, variants)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn variant(cmd: &str) -> Variant {
        let mut v = Variant::named("a");
        v.command = Some(cmd.into());
        v
    }

    #[test]
    fn the_fingerprint_covers_commands_and_knobs_but_not_originals() {
        let d = serde_json::json!({"runs": 3});
        let a = fingerprint(&d, &[variant("true")]);
        assert_ne!(a, fingerprint(&d, &[variant("touch PWNED")]));
        assert_ne!(
            a,
            fingerprint(&serde_json::json!({"runs": 4}), &[variant("true")])
        );
        let mut k = variant("true");
        k.knobs.push(abperf_model::KnobSetting {
            path: "/p".into(),
            value: "1".into(),
            original: None,
        });
        let with_knob = fingerprint(&d, std::slice::from_ref(&k));
        assert_ne!(a, with_knob);
        k.knobs[0].original = Some("evil".into());
        assert_eq!(with_knob, fingerprint(&d, &[k.clone()]));
        k.knobs[0].value = "2".into();
        assert_ne!(with_knob, fingerprint(&d, &[k]));
    }
}
