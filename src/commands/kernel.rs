//! `abperf kernel list|build|gc`: the cache of kernels built from source (`--kernel git:REV`).

use super::kernel_git::{SourceArgs, build_shown};
use crate::error::usage;
use crate::ksrc::{self, GitSpec, Kconfig, Request, cache};
use std::time::SystemTime;

#[derive(Debug, clap::Args)]
pub struct KernelCmdArgs {
    #[command(subcommand)]
    pub command: KernelCommand,
}

#[derive(Debug, clap::Subcommand)]
pub enum KernelCommand {
    /// The built kernels in the cache, most recently used first (key, revision, tree id,
    /// patches, image hash, size, last use)
    List {
        /// text, or json (every entry with its provenance, .config included)
        #[arg(long, value_name = "FORMAT", value_parser = ["text", "json"], default_value = "text")]
        format: String,
    },
    /// Build a kernel from source into the cache (untimed), or find it there: git:REV[+PATCH...]
    Build {
        /// git:REV[+PATCH...]
        #[arg(value_name = "git:REV")]
        kernel: String,
        #[command(flatten)]
        source: SourceArgs,
    },
    /// Remove the least recently used built kernels until the rest fit in --max-size
    Gc {
        /// Size limit, e.g. 10G, 500M or bytes [default: 10G]
        #[arg(long, value_name = "SIZE", value_parser = cache::parse_size)]
        max_size: Option<u64>,
    },
}

pub fn run(a: KernelCmdArgs) -> anyhow::Result<i32> {
    let root = cache::root()?;
    match a.command {
        KernelCommand::List { format } => {
            let entries = cache::list(&root);
            if format == "json" {
                let v: Vec<_> = entries
                    .iter()
                    .map(|e| {
                        serde_json::json!({
                            "image": e.image(),
                            "modules": e.modules(),
                            "bytes": e.bytes,
                            "record": e.record,
                        })
                    })
                    .collect();
                println!("{}", serde_json::to_string_pretty(&v)?);
                return Ok(0);
            }
            if entries.is_empty() {
                println!("no built kernels in {}", root.display());
                return Ok(0);
            }
            println!(
                "{:<16}  {:<12}  {:<16}  {:>7}  {:>8}  {:>10}  revision (patches)",
                "key", "tree", "image sha256", "build", "size", "used"
            );
            for e in &entries {
                let s = &e.record.source;
                let patches: Vec<&str> = s.patches.iter().map(|p| p.subject.as_str()).collect();
                let ago = SystemTime::now()
                    .duration_since(e.used)
                    .map(|d| format!("{} min ago", d.as_secs() / 60))
                    .unwrap_or_else(|_| "now".into());
                println!(
                    "{:<16}  {:<12}  {:<16}  {:>6.0}s  {:>7.1}M  {:>10}  {}{}{}",
                    &e.record.key[..16],
                    s.tree_id.get(..12).unwrap_or(&s.tree_id),
                    s.image_sha256.get(..16).unwrap_or(&s.image_sha256),
                    e.record.build_seconds,
                    e.bytes as f64 / (1 << 20) as f64,
                    ago,
                    crate::model::escape::control(&s.revision),
                    if patches.is_empty() {
                        String::new()
                    } else {
                        crate::model::escape::control(&format!(" ({})", patches.join("; ")))
                            .into_owned()
                    },
                    match &e.record.comments_only {
                        Some(c) => crate::model::escape::control(&format!(
                            ", no build: equal to {} {} except comments in {}",
                            c.key.get(..16).unwrap_or(&c.key),
                            c.given,
                            c.files.join(", ")
                        ))
                        .into_owned(),
                        None => String::new(),
                    }
                );
            }
            Ok(0)
        }
        KernelCommand::Build { kernel, source } => {
            let spec = GitSpec::parse(&kernel).ok_or_else(|| {
                usage(format!(
                    "kernel build {kernel}: expected git:REV[+PATCH...]"
                ))
            })??;
            let kconfig = match &source.kconfig {
                Some(k) => Kconfig::parse(k)?,
                None => Kconfig::default(),
            };
            let req = Request {
                given: kernel.clone(),
                tree: ksrc::tree_dir(source.kernel_tree.as_deref())?,
                spec,
                patches: source.patches.clone(),
                kconfig,
            };
            let b = build_shown(&req)?;
            println!("{}", b.image.display());
            Ok(0)
        }
        KernelCommand::Gc { max_size } => {
            let removed = cache::gc(&root, max_size.unwrap_or(cache::DEFAULT_MAX_BYTES))?;
            for e in &removed {
                println!(
                    "removed {} ({})",
                    &e.record.key[..16],
                    crate::model::escape::control(&e.record.source.revision)
                );
            }
            let left = cache::list(&root);
            println!(
                "{} built kernel(s) left, {:.1} MiB",
                left.len(),
                left.iter().map(|e| e.bytes).sum::<u64>() as f64 / (1 << 20) as f64
            );
            Ok(0)
        }
    }
}
