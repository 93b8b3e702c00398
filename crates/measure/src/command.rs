//! Turning a command string into something exec-able before any run: `sh -c CMD`, or the command
//! split into words and the program looked up in PATH (`-N/--no-shell`, and by default every
//! command without shell syntax: see [`super::shell`]).

use super::shell::{self, ShellMode};
use anyhow::Context;
use std::ffi::CString;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// A command resolved to a program path and argv, as C strings, so that the child needs no
/// allocation between fork and exec.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub text: String,
    pub program: CString,
    pub argv: Vec<CString>,
    /// Started as `sh -c TEXT` (false: exec'd directly).
    pub via_shell: bool,
}

fn cstring(s: &str, what: &str) -> anyhow::Result<CString> {
    CString::new(s).with_context(|| format!("{what} '{s}' contains a NUL byte"))
}

fn is_executable(p: &Path) -> bool {
    p.metadata()
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

/// Find `program` like execvp would: as given if it contains a slash, else in $PATH.
pub fn resolve_program(program: &str) -> anyhow::Result<PathBuf> {
    if program.contains('/') {
        let p = PathBuf::from(program);
        if is_executable(&p) {
            return Ok(p);
        }
        anyhow::bail!("cannot execute '{program}': no such executable file");
    }
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into());
    for dir in std::env::split_paths(&path) {
        let p = dir.join(program);
        if is_executable(&p) {
            return Ok(p);
        }
    }
    anyhow::bail!("cannot execute '{program}': not found in PATH")
}

impl Prepared {
    /// Prepare an argv for direct execution (no shell).
    pub fn from_argv(argv: &[String]) -> anyhow::Result<Prepared> {
        let first = argv
            .first()
            .ok_or_else(|| abperf_model::error::usage("empty command"))?;
        let program = resolve_program(first)?;
        Ok(Prepared {
            text: shell_words::join(argv),
            program: cstring(&program.to_string_lossy(), "program")?,
            argv: argv
                .iter()
                .map(|w| cstring(w, "argument"))
                .collect::<anyhow::Result<_>>()?,
            via_shell: false,
        })
    }

    /// How this command is started: [`shell::DIRECT`] or [`shell::SH_C`].
    pub fn way(&self) -> &'static str {
        if self.via_shell {
            shell::SH_C
        } else {
            shell::DIRECT
        }
    }

    /// Prepare `text` as `mode` says: with [`ShellMode::Auto`] directly when it has no shell
    /// syntax and its program is found in PATH and exec-able by the kernel (else through
    /// `sh -c`, which then reports a missing program itself).
    pub fn with_mode(text: &str, mode: ShellMode) -> anyhow::Result<Prepared> {
        match mode {
            ShellMode::Sh => Prepared::new(text, true),
            ShellMode::None => Prepared::new(text, false),
            ShellMode::Auto => {
                let direct = shell::plain_words(text).and_then(|words| {
                    let program = resolve_program(words[0]).ok()?;
                    shell::kernel_executable(&program).then_some((words, program))
                });
                match direct {
                    Some((words, program)) => Ok(Prepared {
                        text: text.into(),
                        program: cstring(&program.to_string_lossy(), "program")?,
                        argv: words
                            .iter()
                            .map(|w| cstring(w, "argument"))
                            .collect::<anyhow::Result<_>>()?,
                        via_shell: false,
                    }),
                    None => Prepared::new(text, true),
                }
            }
        }
    }

    /// Prepare `text` for execution through `sh -c` (shell) or directly (no shell).
    pub fn new(text: &str, shell: bool) -> anyhow::Result<Prepared> {
        let words: Vec<String> = if shell {
            vec!["sh".into(), "-c".into(), text.into()]
        } else {
            let w = shell_words::split(text).map_err(|e| {
                abperf_model::error::usage(format!(
                    "command '{text}': cannot split into words ({e})"
                ))
            })?;
            if w.is_empty() {
                return Err(abperf_model::error::usage("empty command"));
            }
            w
        };
        let program = if shell {
            PathBuf::from("/bin/sh")
        } else {
            resolve_program(&words[0])?
        };
        let program = cstring(&program.to_string_lossy(), "program")?;
        let argv = words
            .iter()
            .map(|w| cstring(w, "argument"))
            .collect::<anyhow::Result<_>>()?;
        Ok(Prepared {
            text: text.into(),
            program,
            argv,
            via_shell: shell,
        })
    }
}
