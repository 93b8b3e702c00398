//! The git side of a build: the repository of a tree, a revision's commit, one private worktree
//! per repository (checked out to each revision in turn, so that make rebuilds only what changed),
//! patches applied with `git am` or `git apply --index`, and the tree id of the result.

use abperf_model::PatchId;
use abperf_model::error::usage;
use anyhow::{Context, Result, bail};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// `git -C dir ARGS`, with a fixed identity (for `git am`) and no user hooks or pager.
fn git(dir: &Path) -> Command {
    let mut c = Command::new("git");
    c.arg("-C")
        .arg(dir)
        .args([
            "-c",
            "user.name=abperf",
            "-c",
            "user.email=abperf@localhost",
        ])
        .args([
            "-c",
            "core.hooksPath=/dev/null",
            "-c",
            "advice.detachedHead=false",
        ])
        .env("GIT_TERMINAL_PROMPT", "0")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .stdin(Stdio::null());
    c
}

/// Run `git -C dir args`; its trimmed stdout, or an error with its stderr.
fn run(dir: &Path, args: &[&str]) -> Result<String> {
    let out = git(dir)
        .args(args)
        .output()
        .with_context(|| format!("cannot run git (is it installed?) in {}", dir.display()))?;
    if !out.status.success() {
        bail!(
            "git {} in {}: {}",
            args.join(" "),
            dir.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Run `git -C dir args` with `input` on stdin; its trimmed stdout.
fn run_input(dir: &Path, args: &[&str], input: &[u8]) -> Result<String> {
    let mut child = git(dir)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot run git in {}", dir.display()))?;
    // git may stop reading early (an error): its status says so, not the pipe.
    let _ = child.stdin.take().map(|mut s| s.write_all(input));
    let out = child.wait_with_output()?;
    if !out.status.success() {
        bail!(
            "git {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The repository of `tree` (a work tree or a bare repository): its common git directory,
/// absolute. A usage error naming `flag` when it is no git repository.
pub fn repository(tree: &Path, flag: &str) -> Result<PathBuf> {
    let dir = run(
        tree,
        &["rev-parse", "--path-format=absolute", "--git-common-dir"],
    )
    .map_err(|e| {
        usage(format!(
            "{flag} {}: not a git repository ({e:#})",
            tree.display()
        ))
    })?;
    std::fs::canonicalize(&dir).with_context(|| format!("cannot resolve {dir}"))
}

/// Whether `dir` looks like a Linux kernel tree (its top Makefile, Kconfig and arch/x86).
pub fn is_kernel_tree(dir: &Path) -> bool {
    dir.join("Kconfig").is_file() && dir.join("Makefile").is_file() && dir.join("arch/x86").is_dir()
}

/// The commit `revision` names in `repo` (a usage error naming it otherwise).
pub fn commit(repo: &Path, revision: &str, given: &str) -> Result<String> {
    run(
        repo,
        &[
            "rev-parse",
            "--verify",
            "--quiet",
            "--end-of-options",
            &format!("{revision}^{{commit}}"),
        ],
    )
    .ok()
    .filter(|c| !c.is_empty())
    .ok_or_else(|| {
        usage(format!(
            "--kernel {given}: {revision:?} names no commit in {}",
            repo.display()
        ))
    })
}

/// The private worktree `dir` of `repo`, checked out (detached, forced, with any earlier
/// patch or half-applied mailbox undone) at `commit`. Made on first use.
pub fn checkout(repo: &Path, dir: &Path, commit: &str) -> Result<()> {
    let usable = dir.join(".git").exists() && run(dir, &["rev-parse", "--git-dir"]).is_ok();
    if !usable {
        if dir.exists() {
            std::fs::remove_dir_all(dir)
                .with_context(|| format!("cannot remove the broken worktree {}", dir.display()))?;
        }
        run(repo, &["worktree", "prune"])?;
        let d = dir.to_string_lossy();
        run(
            repo,
            &["worktree", "add", "--force", "--detach", &d, commit],
        )?;
        return Ok(());
    }
    let _ = run(dir, &["am", "--abort"]);
    run(dir, &["reset", "-q", "--hard"])?;
    run(dir, &["checkout", "-q", "--detach", "--force", commit])?;
    Ok(())
}

/// Whether `text` is a mailbox (`git format-patch` output, a mail): `git am` applies it.
fn is_mailbox(text: &str) -> bool {
    let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    first.starts_with("From ") || first.starts_with("From:") || first.starts_with("Subject:")
}

/// The stable patch id of a diff (`git patch-id --stable`).
fn patch_id(dir: &Path, diff: &[u8]) -> Result<String> {
    let out = run_input(dir, &["patch-id", "--stable"], diff)?;
    Ok(out
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_string())
}

/// Apply `patch` in the worktree `dir`: a mailbox with `git am` (one [`PatchId`] per commit it
/// makes, by subject), anything else with `git apply --index` (named by its file name). On
/// failure the worktree is put back and the error names the patch and git's message.
pub fn apply(dir: &Path, patch: &Path, given: &str) -> Result<Vec<PatchId>> {
    let bytes = std::fs::read(patch)
        .map_err(|e| usage(format!("--kernel {given}: patch {}: {e}", patch.display())))?;
    let abs = std::fs::canonicalize(patch)?;
    let abs = abs.to_string_lossy();
    let failed = |e: anyhow::Error| {
        let _ = run(dir, &["am", "--abort"]);
        let _ = run(dir, &["reset", "-q", "--hard"]);
        anyhow::anyhow!(
            "--kernel {given}: patch {} does not apply: {e:#}",
            patch.display()
        )
    };
    if is_mailbox(&String::from_utf8_lossy(&bytes)) {
        let before = run(dir, &["rev-parse", "HEAD"])?;
        run(dir, &["am", "-q", "--keep-cr", &abs]).map_err(failed)?;
        let log = run(
            dir,
            &[
                "log",
                "--reverse",
                "--format=%H %s",
                &format!("{before}..HEAD"),
            ],
        )?;
        let mut out = Vec::new();
        for line in log.lines() {
            let (c, subject) = line.split_once(' ').unwrap_or((line, ""));
            let diff = run(dir, &["diff-tree", "-p", "--root", c])?;
            out.push(PatchId {
                subject: subject.to_string(),
                id: patch_id(dir, diff.as_bytes())?,
            });
        }
        Ok(out)
    } else {
        run(dir, &["apply", "--index", &abs]).map_err(failed)?;
        let name = patch
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| patch.display().to_string());
        Ok(vec![PatchId {
            subject: name,
            id: patch_id(dir, &bytes)?,
        }])
    }
}

/// The tree id of `commit` in `repo` (the source of an unpatched checkout of it).
pub fn commit_tree(repo: &Path, commit: &str) -> Result<String> {
    run(
        repo,
        &["rev-parse", "--verify", &format!("{commit}^{{tree}}")],
    )
}

/// The tree id of the worktree's index (the patched source).
pub fn tree_id(dir: &Path) -> Result<String> {
    run(dir, &["write-tree"])
}

/// Run `git -C dir args`; its raw stdout, or an error with its stderr.
fn run_bytes(dir: &Path, args: &[&str]) -> Result<Vec<u8>> {
    let out = git(dir)
        .args(args)
        .output()
        .with_context(|| format!("cannot run git in {}", dir.display()))?;
    if !out.status.success() {
        bail!(
            "git {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(out.stdout)
}

/// Whether the object database of `dir` holds the tree `tree` (a hex object id).
pub fn has_tree(dir: &Path, tree: &str) -> bool {
    is_hex_id(tree) && run(dir, &["cat-file", "-e", &format!("{tree}^{{tree}}")]).is_ok()
}

fn is_hex_id(s: &str) -> bool {
    matches!(s.len(), 40 | 64) && s.bytes().all(|c| c.is_ascii_hexdigit())
}

/// One path that differs between two trees (`git diff-tree -r --no-renames`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub old_mode: String,
    pub new_mode: String,
    pub old_blob: String,
    pub new_blob: String,
    /// A (added), D (deleted), M (modified), T (type changed).
    pub status: char,
    pub path: String,
}

/// The paths that differ between the trees `from` and `to`, read in `dir`; None when more
/// than `max` differ.
pub fn changes(dir: &Path, from: &str, to: &str, max: usize) -> Result<Option<Vec<Change>>> {
    if !is_hex_id(from) || !is_hex_id(to) {
        bail!("not tree ids: {from:?} {to:?}");
    }
    let raw = run_bytes(dir, &["diff-tree", "-r", "-z", "--no-renames", from, to])?;
    let text = String::from_utf8_lossy(&raw);
    let mut fields = text.split('\0').filter(|f| !f.is_empty());
    let mut out = Vec::new();
    while let Some(meta) = fields.next() {
        let path = fields
            .next()
            .context("diff-tree: a change without a path")?;
        let m: Vec<&str> = meta.trim_start_matches(':').split(' ').collect();
        let [old_mode, new_mode, old_blob, new_blob, status] = m[..] else {
            bail!("diff-tree: unexpected line {meta:?}");
        };
        out.push(Change {
            old_mode: old_mode.into(),
            new_mode: new_mode.into(),
            old_blob: old_blob.into(),
            new_blob: new_blob.into(),
            status: status.chars().next().unwrap_or('?'),
            path: path.into(),
        });
        if out.len() > max {
            return Ok(None);
        }
    }
    Ok(Some(out))
}

/// The bytes of the blob `id` in `dir`'s object database.
pub fn blob(dir: &Path, id: &str) -> Result<Vec<u8>> {
    if !is_hex_id(id) {
        bail!("not a blob id: {id:?}");
    }
    run_bytes(dir, &["cat-file", "blob", id])
}

/// The files of the build system in `tree` (Makefiles, Kbuild files, scripts) that name the
/// file `name` outside a `#` comment line: such a file may be read by a script (as
/// arch/x86/kernel/cpu/mkcapflags.sh reads the comments of cpufeatures.h), not only compiled.
pub fn named_by_build_files(dir: &Path, tree: &str, name: &str) -> Result<Vec<String>> {
    if !is_hex_id(tree) {
        bail!("not a tree id: {tree:?}");
    }
    let out = git(dir)
        .args([
            "grep",
            "-z",
            "-n",
            "-I",
            "-F",
            "-e",
            name,
            tree,
            "--",
            "*Makefile*",
            "*Kbuild*",
            "*.sh",
            "*.bash",
            "*.pl",
            "*.py",
            "*.awk",
            "*.sed",
            "*.mk",
        ])
        .output()
        .with_context(|| format!("cannot run git grep in {}", dir.display()))?;
    // git grep exits 1 when nothing matches; anything else but 0 is an error.
    match out.status.code() {
        Some(0) => {}
        Some(1) => return Ok(Vec::new()),
        _ => bail!(
            "git grep in {}: {}",
            dir.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        ),
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut out = Vec::new();
    for line in text.split('\n').filter(|l| !l.is_empty()) {
        let mut f = line.splitn(3, '\0');
        let (Some(file), Some(_), Some(content)) = (f.next(), f.next(), f.next()) else {
            continue;
        };
        if content.trim_start().starts_with('#') {
            continue;
        }
        let whole = content.match_indices(name).any(|(i, _)| {
            !content[..i].ends_with(ident) && !content[i + name.len()..].starts_with(ident)
        });
        if whole {
            let file = file.strip_prefix(tree).unwrap_or(file);
            out.push(file.trim_start_matches(':').to_string());
        }
    }
    Ok(out)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// `sh -ec script` in `dir` with a git identity set; its trimmed stdout (the unit tests of
    /// this crate that make git repositories use it).
    pub(crate) fn sh(dir: &Path, script: &str) -> String {
        let out = Command::new("sh")
            .args(["-ec", script])
            .current_dir(dir)
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@t")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@t")
            .output()
            .unwrap();
        assert!(out.status.success(), "{script}: {out:?}");
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    }

    #[test]
    fn a_worktree_takes_patches_and_gives_the_patched_tree_id_back_after_a_reset() {
        if Command::new("git").arg("--version").output().is_err() {
            abperf_model::error::stderr_line("skipped: no git");
            return;
        }
        let t = tempfile::tempdir().unwrap();
        let repo = t.path().join("repo");
        std::fs::create_dir(&repo).unwrap();
        sh(
            &repo,
            "git init -q . && printf 'a\\nb\\n' > f && git add f && git commit -qm base && \
             sed -i s/b/c/ f && git commit -qam change && git format-patch -q -1 -o .. && \
             git diff HEAD~1 > ../plain.diff && git reset -q --hard HEAD~1",
        );
        let gitdir = repository(&repo, "--kernel-tree").unwrap();
        let base = commit(&gitdir, "HEAD", "git:HEAD").unwrap();
        let base_tree = run(&repo, &["rev-parse", "HEAD^{tree}"]).unwrap();
        let wt = t.path().join("wt");
        checkout(&gitdir, &wt, &base).unwrap();
        assert_eq!(tree_id(&wt).unwrap(), base_tree);
        let mbox = std::fs::read_dir(t.path())
            .unwrap()
            .flatten()
            .find(|e| e.file_name().to_string_lossy().ends_with(".patch"))
            .unwrap()
            .path();
        let ids = apply(&wt, &mbox, "git:HEAD").unwrap();
        assert_eq!(ids.len(), 1);
        assert_eq!(ids[0].subject, "change");
        let patched = tree_id(&wt).unwrap();
        assert_ne!(patched, base_tree);
        // The same change as a plain diff: the same tree and the same patch id.
        checkout(&gitdir, &wt, &base).unwrap();
        assert_eq!(
            tree_id(&wt).unwrap(),
            base_tree,
            "checkout undoes the patch"
        );
        let plain = apply(&wt, &t.path().join("plain.diff"), "git:HEAD").unwrap();
        assert_eq!(tree_id(&wt).unwrap(), patched);
        assert_eq!(plain[0].id, ids[0].id);
        // A patch that does not apply: named, and the worktree is clean again.
        let e = apply(&wt, &mbox, "git:HEAD").unwrap_err();
        assert!(e.to_string().contains("does not apply"), "{e:#}");
        assert_eq!(tree_id(&wt).unwrap(), base_tree);
        assert!(commit(&gitdir, "nope", "git:nope").is_err());
        // The user's checkout was never touched.
        assert_eq!(std::fs::read_to_string(repo.join("f")).unwrap(), "a\nb\n");
    }
}
