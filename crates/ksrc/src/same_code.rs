//! The second cache lookup: when no entry has this exact key, a cached kernel built with the
//! same .config, compiler and make variables from a source tree that differs from this one only
//! in comments of C, assembler and header files (`.c`, `.h`, `.S`) is this kernel too, and
//! nothing is built. The trees are compared with git (`diff-tree` between the entry's tree id and
//! this one, both in the object database of the private worktree); every changed file must keep
//! its mode, and its code with comments removed ([`crate::comments`]) must be equal, byte for byte
//! and line for line. Anything else (a Makefile, Kconfig or script changed, a file added, removed
//! or renamed, a file the build system's scripts name, a configuration that embeds headers or
//! turns warnings into errors, a lexer in doubt) is a miss, and make runs.

use crate::cache::{self, Entry};
use crate::comments;
use crate::git;
use std::path::Path;

/// At most this many changed files are compared (more: build).
const MAX_CHANGED: usize = 64;

/// Why a configuration never takes the second lookup: headers embedded in the image
/// (CONFIG_IKHEADERS keeps their comments), or warnings that fail the build (-Wcomment).
pub fn config_excludes(config: &str) -> Option<&'static str> {
    config.lines().find_map(|l| match l.trim() {
        "CONFIG_IKHEADERS=y" | "CONFIG_IKHEADERS=m" => {
            Some("CONFIG_IKHEADERS embeds the headers, comments included")
        }
        "CONFIG_WERROR=y" => Some("CONFIG_WERROR=y: a comment can fail the build (-Wcomment)"),
        _ => None,
    })
}

/// A cached entry of this configuration and compiler whose source differs from `tree_id` only in
/// the comments of the returned files (in the worktree `src`'s object database); None when
/// there is none (any error is a miss too).
pub fn find(
    root: &Path,
    src: &Path,
    tree_id: &str,
    config: &str,
    config_sha256: &str,
    compiler: &str,
) -> Option<(Entry, Vec<String>)> {
    if config_excludes(config).is_some() {
        return None;
    }
    cache::list(root).into_iter().find_map(|e| {
        let s = &e.record.source;
        let usable = s.config_sha256 == config_sha256
            && s.compiler == compiler
            // The entry's key recomputed: made with today's make and reproducibility variables.
            && cache::key(&s.tree_id, config_sha256, compiler) == e.record.key
            && s.tree_id != tree_id
            && git::has_tree(src, &s.tree_id);
        if !usable {
            return None;
        }
        let files = comments_only(src, &s.tree_id, tree_id)?;
        Some((e, files))
    })
}

/// The files that differ between the trees `from` and `to` when every difference is in
/// comments of a `.c`, `.h` or `.S` file that no build file names; None otherwise.
fn comments_only(src: &Path, from: &str, to: &str) -> Option<Vec<String>> {
    let changes = git::changes(src, from, to, MAX_CHANGED).ok()??;
    if changes.is_empty() {
        return None;
    }
    let mut files = Vec::new();
    for c in changes {
        let regular = matches!(c.new_mode.as_str(), "100644" | "100755");
        if c.status != 'M' || c.old_mode != c.new_mode || !regular {
            return None;
        }
        let strip = match c.path.rsplit_once('.').map(|(_, ext)| ext) {
            Some("c" | "h") => comments::code,
            Some("S") => comments::code_asm,
            _ => return None,
        };
        let old = strip(&git::blob(src, &c.old_blob).ok()?)?;
        let new = strip(&git::blob(src, &c.new_blob).ok()?)?;
        if old != new {
            return None;
        }
        files.push(c.path);
    }
    // The build files are the same in both trees (any other change is a miss above): one look.
    for path in &files {
        let name = path.rsplit('/').next().unwrap_or(path);
        if !git::named_by_build_files(src, to, name).ok()?.is_empty() {
            return None;
        }
    }
    Some(files)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::tests::sh;
    use std::process::Command;

    #[test]
    fn only_comment_changes_in_sources_that_no_build_file_names_are_equal() {
        if Command::new("git").arg("--version").output().is_err() {
            abperf_model::error::stderr_line("skipped: no git");
            return;
        }
        let t = tempfile::tempdir().unwrap();
        let d = t.path();
        sh(
            d,
            "git init -q . && mkdir -p mm tools && \
             printf 'int a; /* one */\\nint b;\\n' > mm/tlb.c && \
             printf '#define X 1 /* x */\\n' > mm/feat.h && \
             printf 'obj-y += tlb.o\\n# feat.h is only named in a comment here\\n' > mm/Makefile && \
             printf 'sed -n p feat.h\\n' > tools/gen.sh && \
             printf 'nop /* a */\\n' > mm/entry.S && git add -A && git commit -qm base",
        );
        let tree = |rev: &str| sh(d, &format!("git rev-parse {rev}^{{tree}}"));
        let base = tree("HEAD");
        let variant = |script: &str| {
            sh(
                d,
                &format!(
                    "git checkout -q --detach {base_c} && {script} && git add -A && git commit -qm v",
                    base_c = sh(d, "git rev-list --max-parents=0 HEAD")
                ),
            );
            tree("HEAD")
        };
        let comment = variant("sed -i 's/one/uno/' mm/tlb.c && sed -i 's/a \\*/b */' mm/entry.S");
        assert_eq!(
            comments_only(d, &base, &comment),
            Some(vec!["mm/entry.S".to_string(), "mm/tlb.c".to_string()])
        );
        // Code changed, a header a script reads, a Makefile, a new file, a mode: all misses.
        let code = variant("sed -i 's/int b/int c/' mm/tlb.c");
        assert_eq!(comments_only(d, &base, &code), None);
        let feat = variant("sed -i 's/x \\*/y */' mm/feat.h");
        assert_eq!(comments_only(d, &base, &feat), None);
        let make = variant("echo '# c' >> mm/Makefile");
        assert_eq!(comments_only(d, &base, &make), None);
        let added = variant("echo '/* c */' > mm/new.h");
        assert_eq!(comments_only(d, &base, &added), None);
        let mode = variant("chmod +x mm/tlb.c");
        assert_eq!(comments_only(d, &base, &mode), None);
        assert_eq!(
            comments_only(d, &base, &base),
            None,
            "no change is no match"
        );
    }

    #[test]
    fn configurations_that_embed_headers_or_fail_on_warnings_never_match() {
        assert!(config_excludes("CONFIG_X=y\nCONFIG_IKHEADERS=m\n").is_some());
        assert!(config_excludes("CONFIG_WERROR=y\n").is_some());
        assert!(config_excludes("# CONFIG_WERROR is not set\nCONFIG_IKHEADERS=n\n").is_none());
    }
}
