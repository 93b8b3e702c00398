//! Whether a command needs `sh -c`: by default (`--shell auto`) a command whose text has no shell
//! syntax is split on blanks and exec'd directly, as with `-N`. dash forks again for an external
//! command (`sh -c 'sleep 0.001'` is a vfork+exec of sleep under sh), and that second process
//! start, ~1-2 ms here, would be timed as part of the workload.
//!
//! The test is conservative: any character outside a small safe set means "shell".

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// How commands are started: `auto` (direct unless they need a shell), `sh` (always `sh -c`),
/// `none` (`-N`: always split into words and exec'd, quotes honoured).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ShellMode {
    /// Directly when the command has no shell syntax, else `sh -c`
    #[default]
    Auto,
    /// Always `sh -c` (the shell's own start is timed too)
    Sh,
    /// Never a shell: split into words (quotes honoured) and exec'd (-N)
    None,
}

impl ShellMode {
    pub fn as_str(self) -> &'static str {
        match self {
            ShellMode::Auto => "auto",
            ShellMode::Sh => "sh",
            ShellMode::None => "none",
        }
    }
}

impl Serialize for ShellMode {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// Designs stored before `--shell` hold a bool: true (`sh -c`, the old default) or false (`-N`).
impl<'de> Deserialize<'de> for ShellMode {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Stored {
            Old(bool),
            New(String),
        }
        match Stored::deserialize(d)? {
            Stored::Old(true) => Ok(ShellMode::Sh),
            Stored::Old(false) => Ok(ShellMode::None),
            Stored::New(s) => match s.as_str() {
                "auto" => Ok(ShellMode::Auto),
                "sh" => Ok(ShellMode::Sh),
                "none" => Ok(ShellMode::None),
                other => Err(serde::de::Error::custom(format!(
                    "shell '{other}': expected auto, sh or none"
                ))),
            },
        }
    }
}

/// How one command was started, as stored in the design and printed.
pub const DIRECT: &str = "direct";
pub const SH_C: &str = "sh -c";

/// Characters that mean nothing to sh anywhere in a word (besides blanks, which separate words,
/// and `=`, which is plain outside the first word).
fn safe(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/' | ',' | ':' | '+' | '%' | '@')
}

/// Words a shell treats itself (keywords, builtins with no program of the same effect) : a
/// command starting with one of these runs through sh.
const SHELL_WORDS: &[&str] = &[
    "if", "then", "else", "elif", "fi", "case", "esac", "for", "while", "until", "do", "done",
    "in", "function", "select", "time", "exit", "cd", "export", "set", "unset", "shift", "eval",
    "exec", ".", "source", "read", "wait", "trap", "ulimit", "umask", "alias", "unalias", "return",
    "break", "continue", "readonly", "local", "times", "type", "command", "hash", "jobs", "fg",
    "bg", "getopts", "builtin", "let", "declare", "typeset", "pushd", "popd", "dirs", "disown",
    "suspend", "logout", "history", "fc", "shopt", "enable", "caller", "mapfile", "coproc",
];

/// The words of `text` when it has no shell syntax (safe characters, blanks between words, a
/// first word that is no shell keyword, builtin or assignment), else `None`.
pub fn plain_words(text: &str) -> Option<Vec<&str>> {
    let words: Vec<&str> = text.split([' ', '\t']).filter(|w| !w.is_empty()).collect();
    let first = words.first()?;
    // `=` only in arguments: in the first word it would be an assignment (`X=1 prog`).
    if !text
        .chars()
        .all(|c| c == ' ' || c == '\t' || c == '=' || safe(c))
        || first.contains('=')
    {
        return None;
    }
    if SHELL_WORDS.contains(first) {
        return None;
    }
    Some(words)
}

/// Whether the file at `path` can be exec'd by the kernel itself: an ELF binary or a `#!`
/// script (execve fails with ENOEXEC on anything else, which sh would run as a script).
pub fn kernel_executable(path: &std::path::Path) -> bool {
    use std::io::Read;
    let mut head = [0u8; 4];
    match std::fs::File::open(path).and_then(|mut f| f.read_exact(&mut head)) {
        Ok(()) => &head == b"\x7fELF" || head.starts_with(b"#!"),
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_commands_split_on_blanks() {
        for (text, words) in [
            ("sleep 0.001", vec!["sleep", "0.001"]),
            ("  true  ", vec!["true"]),
            ("./bench-old", vec!["./bench-old"]),
            ("/usr/bin/env", vec!["/usr/bin/env"]),
            ("make -j2 vmlinux", vec!["make", "-j2", "vmlinux"]),
            (
                "dd if=/dev/zero of=/dev/null bs=1M count=10",
                vec!["dd", "if=/dev/zero", "of=/dev/null", "bs=1M", "count=10"],
            ),
            (
                "stress-ng --cpu 1 -t 1s",
                vec!["stress-ng", "--cpu", "1", "-t", "1s"],
            ),
            ("taskset -c 0,1 ./x", vec!["taskset", "-c", "0,1", "./x"]),
            ("date +%s", vec!["date", "+%s"]),
            ("a\tb", vec!["a", "b"]),
            ("echo user@host:path", vec!["echo", "user@host:path"]),
            ("prog --opt=value", vec!["prog", "--opt=value"]),
            ("truest 1", vec!["truest", "1"]),
        ] {
            assert_eq!(plain_words(text), Some(words), "{text:?}");
        }
    }

    #[test]
    fn shell_syntax_needs_sh() {
        for text in [
            "",
            "   ",
            "sleep 1 | cat",
            "a && b",
            "a || b",
            "a; b",
            "a &",
            "a > out",
            "a < in",
            "a 2>&1",
            "echo $HOME",
            "echo ${X}",
            "echo `date`",
            "echo $(date)",
            "echo 'a b'",
            "echo \"a b\"",
            "echo a\\ b",
            "ls *.c",
            "ls ?.c",
            "ls [ab].c",
            "ls ~",
            "ls ~/x",
            "echo a # comment",
            "FOO=1 ./prog",
            "X=1",
            "(cd /tmp)",
            "{ a; }",
            "! false",
            "a\nb",
            "a\r",
            "exit 3",
            "cd /tmp",
            "export X",
            "exec ./prog",
            "time ./prog",
            "if",
            ". ./env.sh",
            "source env.sh",
            "wait",
            "echo \u{e9}",
            "echo a^b",
            "echo {a,b}",
            "=x",
            "a=b c",
        ] {
            assert_eq!(plain_words(text), None, "{text:?}");
        }
    }

    #[test]
    fn stored_modes_read_old_and_new() {
        let read = |j: &str| serde_json::from_str::<ShellMode>(j).unwrap();
        assert_eq!(read("true"), ShellMode::Sh);
        assert_eq!(read("false"), ShellMode::None);
        for m in [ShellMode::Auto, ShellMode::Sh, ShellMode::None] {
            assert_eq!(read(&serde_json::to_string(&m).unwrap()), m);
        }
        assert!(serde_json::from_str::<ShellMode>("\"bash\"").is_err());
    }

    #[test]
    fn only_elf_and_scripts_are_exec_ready() {
        assert!(kernel_executable(std::path::Path::new("/bin/sh")));
        let dir = std::env::temp_dir().join(format!("abperf-shell-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let script = dir.join("s");
        std::fs::write(&script, "#!/bin/sh\ntrue\n").unwrap();
        let bare = dir.join("b");
        std::fs::write(&bare, "true\n").unwrap();
        assert!(kernel_executable(&script));
        assert!(!kernel_executable(&bare));
        assert!(!kernel_executable(&dir.join("missing")));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
