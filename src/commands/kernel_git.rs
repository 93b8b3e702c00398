//! `--kernel git:REV[+PATCH...]`: a kernel built from a git tree (abperf_ksrc), resolved to the
//! image the VM engine or the boot loop boots, with its provenance. The options shared by every
//! command that takes `--kernel` (`--kernel-tree`, `--patch`, `--kconfig`) live here.

use crate::error::usage;
use crate::ksrc::{self, GitSpec, Kconfig, Request};
use std::path::PathBuf;

/// The options of kernels built from source (with `--kernel git:REV`).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct SourceArgs {
    /// The git tree of --kernel git:REV: a work tree or a bare repository, never modified (the
    /// build has its own worktree in abperf's cache) [default: the current directory, when it
    /// is a kernel tree]
    #[arg(long, value_name = "DIR")]
    pub kernel_tree: Option<PathBuf>,
    /// A patch applied on top of every --kernel git:REV, after its own +FILE patches (git am
    /// for a mailbox, else git apply); repeatable, applied in order
    #[arg(long = "patch", value_name = "FILE")]
    pub patches: Vec<PathBuf>,
    /// The base configuration of --kernel git:REV: defconfig, tinyconfig, running (this
    /// machine's) or a .config file; abperf's fragment (virtio, 9p, overlayfs, tracepoints,
    /// debugfs, THP, ...) is merged in with olddefconfig [default: tinyconfig]
    #[arg(long, value_name = "BASE")]
    pub kconfig: Option<String>,
}

impl SourceArgs {
    /// The options given, by name.
    pub fn given(&self) -> Vec<&'static str> {
        [
            ("--kernel-tree", self.kernel_tree.is_some()),
            ("--patch", !self.patches.is_empty()),
            ("--kconfig", self.kconfig.is_some()),
        ]
        .into_iter()
        .filter_map(|(n, g)| g.then_some(n))
        .collect()
    }

    /// These options as command-line arguments, for a command that hands them to another
    /// abperf (`model ceiling --validate` to `run`).
    pub fn forwarded(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(t) = &self.kernel_tree {
            out.extend(["--kernel-tree".to_string(), t.display().to_string()]);
        }
        for p in &self.patches {
            out.extend(["--patch".to_string(), p.display().to_string()]);
        }
        if let Some(k) = &self.kconfig {
            out.extend(["--kconfig".to_string(), k.clone()]);
        }
        out
    }

    /// A usage error when these options are given without any `git:` kernel among `kernels`.
    pub fn check_used(&self, kernels: &[String]) -> anyhow::Result<()> {
        if let Some(flag) = self.given().first()
            && !kernels.iter().any(|k| k.starts_with("git:"))
        {
            return Err(usage(format!(
                "{flag} applies to kernels built from source: give --kernel git:REV"
            )));
        }
        Ok(())
    }
}

/// Build (or find in the cache) the kernel of `arg` (`git:...`), showing make's progress on
/// stderr. None when `arg` is not a `git:` argument.
pub fn resolve(arg: &str, src: &SourceArgs) -> Option<anyhow::Result<ksrc::Built>> {
    let spec = GitSpec::parse(arg)?;
    Some(spec.and_then(|spec| {
        let kconfig = match &src.kconfig {
            Some(k) => Kconfig::parse(k)?,
            None => Kconfig::default(),
        };
        let req = Request {
            given: arg.to_string(),
            tree: ksrc::tree_dir(src.kernel_tree.as_deref())?,
            spec,
            patches: src.patches.clone(),
            kconfig,
        };
        build_shown(&req)
    }))
}

/// [`ksrc::build`] with a spinner on stderr (the make step and the line count) and a line when
/// it starts building and when it is done.
pub fn build_shown(req: &Request) -> anyhow::Result<ksrc::Built> {
    let bar = indicatif::ProgressBar::new_spinner();
    bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
    let mut lines = 0usize;
    let started = std::time::Instant::now();
    let mut announced = false;
    let given = req.given.clone();
    let mut progress = |line: &str| {
        if !announced {
            announced = true;
            bar.suspend(|| {
                crate::error::stderr_line(&format!(
                    "abperf: --kernel {given}: not in the cache of built kernels; building it (untimed)"
                ))
            });
        }
        lines += 1;
        let step: String = line.trim().chars().take(70).collect();
        bar.set_message(format!(
            "building {given}: {lines} lines of make output; {step}"
        ));
        bar.tick();
    };
    let built = ksrc::build(req, &mut progress);
    bar.finish_and_clear();
    let built = built?;
    if let Some(same) = &built.comments_only {
        crate::error::stderr_line(&format!(
            "abperf: --kernel {}: equal to cached {} except comments in {}; no build (image sha256 {}, key {})",
            req.given,
            crate::model::escape::control(&same.given),
            crate::model::escape::control(&same.files.join(", ")),
            &built.source.image_sha256[..16],
            &built.key[..16]
        ));
        return Ok(built);
    }
    crate::error::stderr_line(&format!(
        "abperf: --kernel {}: {} {} (image sha256 {}, key {})",
        req.given,
        if built.built {
            "built in"
        } else {
            "found in the cache:"
        },
        if built.built {
            format!("{:.0} s", started.elapsed().as_secs_f64())
        } else {
            built.image.display().to_string()
        },
        &built.source.image_sha256[..16],
        &built.key[..16]
    ));
    Ok(built)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, clap::Parser)]
    struct Cli {
        #[command(flatten)]
        source: SourceArgs,
    }

    #[test]
    fn the_options_forwarded_parse_back_to_themselves() {
        let given = [
            "x",
            "--kernel-tree",
            "/src/linux",
            "--patch",
            "a.mbox",
            "--patch",
            "b diff",
            "--kconfig",
            "defconfig",
        ];
        let a = Cli::try_parse_from(given).unwrap().source;
        assert_eq!(a.forwarded(), given[1..]);
        let back = Cli::try_parse_from(std::iter::once("x".to_string()).chain(a.forwarded()))
            .unwrap()
            .source;
        assert_eq!(back.forwarded(), a.forwarded());
        assert!(SourceArgs::default().forwarded().is_empty());
        // Given without a git: kernel: refused, naming the option.
        let e = a.check_used(&["linux-image-amd64".into()]).unwrap_err();
        assert!(e.to_string().contains("--kernel-tree"), "{e}");
        assert!(a.check_used(&["git:v6.1".into()]).is_ok());
    }
}
