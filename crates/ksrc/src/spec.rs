//! What the user asked for: `--kernel git:REV[+PATCH...]` and `--kconfig BASE`.

use abperf_model::error::usage;
use std::path::PathBuf;

/// A `git:REV[+FILE...]` argument: a revision git understands and patches applied on top, in
/// order (`git am` for a mailbox, `git apply` otherwise).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitSpec {
    pub revision: String,
    pub patches: Vec<PathBuf>,
}

impl GitSpec {
    /// `Some` when `arg` starts with `git:` (then checked: a revision and no empty patch name).
    pub fn parse(arg: &str) -> Option<anyhow::Result<GitSpec>> {
        let rest = arg.strip_prefix("git:")?;
        let mut parts = rest.split('+');
        let revision = parts.next().unwrap_or_default().trim().to_string();
        if revision.is_empty() || revision.starts_with('-') || revision.contains(['\n', '\0']) {
            return Some(Err(usage(format!(
                "--kernel {arg}: expected git:REV[+PATCH...] with a revision git understands"
            ))));
        }
        let mut patches = Vec::new();
        for p in parts {
            if p.is_empty() {
                return Some(Err(usage(format!(
                    "--kernel {arg}: an empty patch file name after '+'"
                ))));
            }
            patches.push(PathBuf::from(p));
        }
        Some(Ok(GitSpec { revision, patches }))
    }
}

/// The base configuration abperf's fragment is merged into.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kconfig {
    Defconfig,
    Tinyconfig,
    /// A .config file of the user's.
    File(PathBuf),
    /// This machine's: /proc/config.gz, else /boot/config-$(uname -r).
    Running,
}

impl Kconfig {
    /// `defconfig`, `tinyconfig`, `running`, or a file.
    pub fn parse(s: &str) -> anyhow::Result<Kconfig> {
        Ok(match s {
            "defconfig" => Kconfig::Defconfig,
            "tinyconfig" => Kconfig::Tinyconfig,
            "running" => Kconfig::Running,
            "" => {
                return Err(usage(
                    "--kconfig: expected defconfig, tinyconfig, running or a file",
                ));
            }
            f => {
                let p = PathBuf::from(f);
                if !p.is_file() {
                    return Err(usage(format!(
                        "--kconfig {f}: not defconfig, tinyconfig or running, and no such file"
                    )));
                }
                Kconfig::File(p)
            }
        })
    }
}

impl Default for Kconfig {
    /// The minimal configuration: tinyconfig plus abperf's fragment.
    fn default() -> Self {
        Kconfig::Tinyconfig
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn git_specs_parse_with_their_patches() {
        assert!(GitSpec::parse("/boot/vmlinuz").is_none());
        let s = GitSpec::parse("git:v6.1").unwrap().unwrap();
        assert_eq!(s.revision, "v6.1");
        assert!(s.patches.is_empty());
        let s = GitSpec::parse("git:HEAD~2+a.mbox+b.diff").unwrap().unwrap();
        assert_eq!(s.revision, "HEAD~2");
        assert_eq!(
            s.patches,
            [PathBuf::from("a.mbox"), PathBuf::from("b.diff")]
        );
        for bad in ["git:", "git:+a.mbox", "git:v1++b", "git:-x", "git:v1+"] {
            let e = GitSpec::parse(bad).unwrap().unwrap_err();
            assert!(e.to_string().contains(bad), "{bad}: {e}");
        }
    }

    #[test]
    fn kconfig_bases_parse_and_a_missing_file_is_named() {
        assert_eq!(Kconfig::parse("defconfig").unwrap(), Kconfig::Defconfig);
        assert_eq!(Kconfig::parse("running").unwrap(), Kconfig::Running);
        let e = Kconfig::parse("/nonexistent/.config").unwrap_err();
        assert!(e.to_string().contains("/nonexistent/.config"), "{e}");
    }
}
