//! What configuring a tree gave, remembered: `configured/<memo>` holds the SHA-256 of the .config
//! that `make <base>` + abperf's fragment + `olddefconfig` made for a source tree, so a revision
//! built before is found in the cache from its commit alone, without checking it out or
//! configuring it again (seconds: a bisection resolves every measured revision at every step).
//!
//! The memo's key covers everything the configuration is made from: the tree id, the base (its
//! content for a file or this machine's configuration), the fragment, and the tools Kconfig asks
//! (`$(cc-option)`, `$(as-instr)`, `$(ld-option)`, pahole's and rustc's versions): the compiler's,
//! the assembler's and the linker's version lines, and which of pahole, rustc and bindgen are on
//! `$PATH` with their versions. Any of them changing is a miss: configured again, as before.

use crate::kconfig::{FRAGMENT, sha256_hex};
use anyhow::Result;
use std::path::Path;
use std::process::Command;

/// The tools whose versions Kconfig reads (first line of `TOOL --version`; "absent" if not on
/// `$PATH`).
const TOOLS: &[&str] = &["as", "ld", "pahole", "rustc", "bindgen"];

/// The memo's key for tree `tree_id`, base `label` ([`crate::kconfig::label`]) and `compiler`.
pub fn key(tree_id: &str, label: &str, compiler: &str) -> String {
    let mut s = format!(
        "tree {tree_id}\nbase {label}\nfragment {}\ncompiler {compiler}\n",
        sha256_hex(FRAGMENT.as_bytes())
    );
    for t in TOOLS {
        s += &format!("{t} {}\n", version(t));
    }
    sha256_hex(s.as_bytes())
}

fn version(tool: &str) -> String {
    match Command::new(tool).arg("--version").output() {
        Ok(o) => String::from_utf8_lossy(&o.stdout)
            .lines()
            .next()
            .unwrap_or("")
            .to_string(),
        Err(_) => "absent".into(),
    }
}

/// The .config hash remembered under `key`, if any (a file that is not one is ignored).
pub fn recall(root: &Path, key: &str) -> Option<String> {
    let text = std::fs::read_to_string(root.join("configured").join(key)).ok()?;
    let sha = text.trim();
    (sha.len() == 64 && sha.bytes().all(|c| c.is_ascii_hexdigit())).then(|| sha.to_string())
}

/// Remember `config_sha256` under `key` (written to a temporary file, then renamed).
pub fn remember(root: &Path, key: &str, config_sha256: &str) -> Result<()> {
    let dir = root.join("configured");
    crate::cache::private_dir(&dir)?;
    let tmp = dir.join(format!(".{key}.{}", std::process::id()));
    std::fs::write(&tmp, format!("{config_sha256}\n"))?;
    std::fs::rename(&tmp, dir.join(key))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_remembered_hash_is_recalled_and_anything_else_is_not() {
        let d = tempfile::tempdir().unwrap();
        let k = key("a".repeat(40).as_str(), "tinyconfig", "gcc 12");
        assert_eq!(recall(d.path(), &k), None);
        let sha = "0123456789abcdef".repeat(4);
        remember(d.path(), &k, &sha).unwrap();
        assert_eq!(recall(d.path(), &k), Some(sha));
        std::fs::write(d.path().join("configured").join(&k), "not a hash\n").unwrap();
        assert_eq!(recall(d.path(), &k), None);
    }

    #[test]
    fn the_key_changes_with_the_tree_the_base_and_the_compiler() {
        let t = "a".repeat(40);
        let k = key(&t, "tinyconfig", "gcc 12");
        assert_eq!(k, key(&t, "tinyconfig", "gcc 12"));
        assert_ne!(k, key(&"b".repeat(40), "tinyconfig", "gcc 12"));
        assert_ne!(k, key(&t, "defconfig", "gcc 12"));
        assert_ne!(k, key(&t, "tinyconfig", "gcc 13"));
    }
}
