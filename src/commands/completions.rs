//! `abperf completions SHELL` (clap_complete) and `abperf man` (clap_mangen): both are generated
//! from the same clap definitions as `--help`, so they cannot drift from the options.

use crate::error::usage;
use std::io::Write;
use std::path::PathBuf;

#[derive(Debug, clap::Args)]
#[command(after_help = "Install, e.g.:
  bash: abperf completions bash > ~/.local/share/bash-completion/completions/abperf
  zsh:  abperf completions zsh > ~/.zfunc/_abperf   (with fpath+=(~/.zfunc) before compinit)
  fish: abperf completions fish > ~/.config/fish/completions/abperf.fish")]
pub struct CompletionsArgs {
    /// The shell to complete for
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(Debug, clap::Args)]
#[command(after_help = "Read it with: abperf man | man -l -
Install every page: abperf man --dir ~/.local/share/man/man1   (then: man abperf-run)")]
pub struct ManArgs {
    /// The page of one subcommand (e.g. run, or 'trace record'); default: abperf(1)
    #[arg(value_name = "SUBCOMMAND", num_args = 0..)]
    pub subcommand: Vec<String>,
    /// Write every page (abperf.1, abperf-run.1, ...) into DIR instead of printing one
    #[arg(long, value_name = "DIR", conflicts_with = "subcommand")]
    pub dir: Option<PathBuf>,
}

fn write_stdout(bytes: &[u8]) -> anyhow::Result<i32> {
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|_| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(anyhow::Error::new(e).context("cannot write to standard output"))
        }
        _ => Ok(0),
    }
}

/// Print the completion script for `args.shell`; `cmd` is the whole command line definition.
pub fn completions(args: CompletionsArgs, mut cmd: clap::Command) -> anyhow::Result<i32> {
    let mut buf = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "abperf", &mut buf);
    write_stdout(&buf)
}

/// Print one manual page (roff), or write all of them into `--dir`.
pub fn man(args: ManArgs, cmd: clap::Command) -> anyhow::Result<i32> {
    let mut cmd = cmd.disable_help_subcommand(true);
    cmd.build();
    if let Some(dir) = &args.dir {
        std::fs::create_dir_all(dir)
            .map_err(|e| usage(format!("--dir {}: cannot create ({e})", dir.display())))?;
        clap_mangen::generate_to(cmd, dir)
            .map_err(|e| usage(format!("--dir {}: cannot write ({e})", dir.display())))?;
        crate::error::stderr_line(&format!(
            "abperf: manual pages written to {} (man abperf, man abperf-run, ...)",
            dir.display()
        ));
        return Ok(0);
    }
    let mut page = cmd;
    for (i, name) in args
        .subcommand
        .iter()
        .flat_map(|s| s.split_whitespace())
        .enumerate()
    {
        let names: Vec<String> = page
            .get_subcommands()
            .map(|s| s.get_name().to_string())
            .collect();
        page = page.find_subcommand(name).cloned().ok_or_else(|| {
            usage(format!(
                "man: no subcommand '{name}'{} (subcommands: {})",
                if i > 0 { " there" } else { "" },
                names.join(", ")
            ))
        })?;
    }
    let mut buf = Vec::new();
    clap_mangen::Man::new(page).render(&mut buf)?;
    write_stdout(&buf)
}
