//! Kernels built from source as variants (`--kernel git:REV[+PATCH...]`): a revision of a git
//! tree, patches on top, built in a private worktree under abperf's cache (never the user's
//! checkout) with a base configuration plus abperf's fragment, and kept in a content-addressed
//! cache (see [`cache`]) so that the same patched source, .config and compiler are built once.
//!
//! Layout under [`cache::root`] (0700): `trees/<repo>/src` (one persistent worktree per
//! repository, checked out to each revision in turn: git rewrites only changed files, so make
//! rebuilds little), `trees/<repo>/cfg-<base>` (scratch O= directory where the .config is made),
//! `trees/<repo>/out-<base>` (the persistent O= build directory, one per base configuration),
//! `images/<key>/` (built kernels), `configured/` (which .config a tree's configuration gave: see
//! [`configured`]), `ccache/`, `logs/`, `builds.log` (one line per real build).

pub mod cache;
pub mod comments;
pub mod configured;
pub mod git;
pub mod kconfig;
pub mod make;
pub mod same_code;
pub mod spec;

pub use spec::{GitSpec, Kconfig};

use abperf_model::error::usage;
use abperf_model::{KernelSource, PatchId};
use anyhow::{Context, Result};
use make::Make;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// What to build.
#[derive(Debug, Clone)]
pub struct Request {
    /// The `--kernel` argument as given (for messages and the cache record).
    pub given: String,
    /// The git tree: `--kernel-tree DIR`, else the current directory.
    pub tree: PathBuf,
    pub spec: GitSpec,
    /// `--patch FILE`s, applied after the spec's own.
    pub patches: Vec<PathBuf>,
    pub kconfig: Kconfig,
}

/// A kernel ready to boot.
#[derive(Debug, Clone)]
pub struct Built {
    pub image: PathBuf,
    pub modules: Option<PathBuf>,
    pub release: String,
    pub key: String,
    pub source: KernelSource,
    /// False when the cache had it (no make ran).
    pub built: bool,
    /// Set when this lookup found no entry of its own key but one whose source differs only in
    /// comments (then `built` is false and the entry is made for next time).
    pub comments_only: Option<cache::CommentsOnly>,
}

/// The tree of `--kernel-tree` (None: the current directory, which must be a kernel tree).
pub fn tree_dir(given: Option<&Path>) -> Result<PathBuf> {
    match given {
        Some(d) => Ok(d.to_path_buf()),
        None => {
            let cwd = std::env::current_dir()?;
            if git::is_kernel_tree(&cwd) {
                Ok(cwd)
            } else {
                Err(usage(format!(
                    "--kernel git:REV: the current directory {} is not a kernel tree; give --kernel-tree DIR",
                    cwd.display()
                )))
            }
        }
    }
}

/// Hold an exclusive lock on `path` while the value lives.
struct Lock(#[allow(dead_code)] std::fs::File);

fn lock(path: &Path) -> Result<Lock> {
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .with_context(|| format!("cannot open {}", path.display()))?;
    // SAFETY: flock on an fd we own; released when the file is closed.
    if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) } != 0 {
        anyhow::bail!(
            "cannot lock {}: {}",
            path.display(),
            std::io::Error::last_os_error()
        );
    }
    Ok(Lock(f))
}

/// Build `req` (or find it in the cache). `progress` sees every line make prints. A failed
/// patch or build stores nothing: its error names the revision, the patch and the log's last
/// lines (the log stays under `logs/`).
pub fn build(req: &Request, progress: &mut dyn FnMut(&str)) -> Result<Built> {
    let root = cache::root()?;
    let repo = git::repository(&req.tree, "--kernel-tree")?;
    let commit = git::commit(&repo, &req.spec.revision, &req.given)?;
    check_patches(req)?;
    let repo_id = &kconfig::sha256_hex(repo.to_string_lossy().as_bytes())[..16];
    let trees = root.join("trees").join(repo_id);
    cache::private_dir(&trees)?;
    let _held = lock(&trees.join(".lock"))?;
    let compiler = make::compiler_version()?;
    let base = kconfig::label(&req.kconfig)?;
    if let Some(b) = configured_before(&root, &repo, &commit, req, &base, &compiler)? {
        return Ok(b);
    }
    let src = trees.join("src");
    git::checkout(&repo, &src, &commit)?;
    let mut patches: Vec<PatchId> = Vec::new();
    for p in req.spec.patches.iter().chain(&req.patches) {
        patches.extend(git::apply(&src, p, &req.given)?);
    }
    let tree_id = git::tree_id(&src)?;
    let jobs = std::thread::available_parallelism().map_or(1, |n| n.get());
    let ccache = make::on_path("ccache").then(|| root.join("ccache"));
    let maker = |out: PathBuf| Make {
        src: src.clone(),
        out,
        ccache: ccache.clone(),
        basedir: root.clone(),
        jobs,
    };
    let cfg = maker(trees.join(format!("cfg-{base}")));
    let (config, config_sha256) = configure_tree(&root, &cfg, req, &base, &tree_id, &compiler)?;
    let own = Own {
        key: cache::key(&tree_id, &config_sha256, &compiler),
        repository: repo.display().to_string(),
        revision: format!("{} ({commit})", req.spec.revision),
        tree_id,
        patches,
    };
    if let Some(b) = from_cache(&root, &src, req, (&config, &config_sha256, &compiler), &own)? {
        return Ok(b);
    }
    let Own {
        key,
        revision,
        tree_id,
        patches,
        ..
    } = own;
    let out = trees.join(format!("out-{base}"));
    cache::private_dir(&out)?;
    // The build directory's .config is rewritten only when it changes (make rebuilds by time).
    if std::fs::read_to_string(out.join(".config")).ok().as_deref() != Some(config.as_str()) {
        std::fs::write(out.join(".config"), &config)?;
    }
    let logs = root.join("logs");
    cache::private_dir(&logs)?;
    let log = logs.join(format!("{}.log", &key[..16]));
    let _ = std::fs::remove_file(&log);
    let m = maker(out.clone());
    let mut targets = vec!["bzImage"];
    if kconfig::has_modules(&config) {
        targets.push("modules");
    }
    let t0 = Instant::now();
    m.logged(&targets, &log, progress)
        .with_context(|| build_failed(req, &revision, &patches))?;
    let seconds = t0.elapsed().as_secs_f64();
    let staged = cache::staging(&root, &key)?;
    let stored = stage(
        &m,
        &out,
        &staged,
        &log,
        kconfig::has_modules(&config),
        progress,
    )
    .and_then(|(release, image_sha256, modules_sha256)| {
        let record = cache::Record {
            key: key.clone(),
            given: req.given.clone(),
            repository: repo.display().to_string(),
            build_seconds: seconds,
            release,
            source: KernelSource {
                revision,
                tree_id,
                patches,
                config_sha256,
                config,
                compiler,
                image_sha256,
                modules_sha256,
            },
            comments_only: None,
        };
        cache::store(&root, &staged, &record)
    });
    let entry = match stored {
        Ok(e) => e,
        Err(e) => {
            let _ = std::fs::remove_dir_all(&staged);
            return Err(e);
        }
    };
    cache::log_build(
        &root,
        &format!(
            "{} {} {:.1}s {}",
            &key[..16],
            req.given,
            seconds,
            entry.record.source.image_sha256
        ),
    )?;
    let _ = cache::gc(&root, cache::DEFAULT_MAX_BYTES);
    Ok(built(entry, true))
}

/// The final .config of the checked-out tree (made in `m`'s O=) and its hash, remembered for
/// [`configured_before`].
fn configure_tree(
    root: &Path,
    m: &Make,
    req: &Request,
    base: &str,
    tree_id: &str,
    compiler: &str,
) -> Result<(String, String)> {
    let config = kconfig::configure(m, &req.kconfig)
        .with_context(|| format!("--kernel {}: configuring {base}", req.given))?;
    let sha = kconfig::sha256_hex(config.as_bytes());
    configured::remember(root, &configured::key(tree_id, base, compiler), &sha)?;
    Ok((config, sha))
}

/// An unpatched revision whose tree was configured before (the same base, fragment and tools)
/// and whose kernel is in the cache under that configuration: found from the commit alone,
/// without a checkout or a configuration (None: go the whole way).
fn configured_before(
    root: &Path,
    repo: &Path,
    commit: &str,
    req: &Request,
    base: &str,
    compiler: &str,
) -> Result<Option<Built>> {
    if !(req.spec.patches.is_empty() && req.patches.is_empty()) {
        return Ok(None);
    }
    let tree_id = git::commit_tree(repo, commit)?;
    let Some(config_sha256) = configured::recall(root, &configured::key(&tree_id, base, compiler))
    else {
        return Ok(None);
    };
    let key = cache::key(&tree_id, &config_sha256, compiler);
    Ok(cache::lookup(root, &key).map(|e| {
        let mut b = built(e, false);
        b.source.revision = format!("{} ({commit})", req.spec.revision);
        b.source.tree_id = tree_id;
        b.source.patches = Vec::new();
        b
    }))
}

/// What a failed build says: the argument, the revision and the patches.
fn build_failed(req: &Request, revision: &str, patches: &[PatchId]) -> String {
    let names: Vec<&str> = patches.iter().map(|p| p.subject.as_str()).collect();
    format!(
        "--kernel {}: the build of {revision}{} failed (nothing stored)",
        req.given,
        if names.is_empty() {
            String::new()
        } else {
            format!(" with the patches {}", names.join("; "))
        }
    )
}

/// The kernel `own` names from the cache: its own key's entry, else one whose source differs
/// only in comments (`cfg` = the .config, its hash and the compiler); None: build it.
fn from_cache(
    root: &Path,
    src: &Path,
    req: &Request,
    cfg: (&str, &str, &str),
    own: &Own,
) -> Result<Option<Built>> {
    let (config, config_sha256, compiler) = cfg;
    if let Some(e) = cache::lookup(root, &own.key) {
        // The same content under this revision and these patches: said as asked.
        let mut b = built(e, false);
        b.source.revision = own.revision.clone();
        b.source.patches = own.patches.clone();
        return Ok(Some(b));
    }
    match same_code::find(root, src, &own.tree_id, config, config_sha256, compiler) {
        Some((e, files)) => same_as(root, req, e, files, own.clone()).map(Some),
        None => Ok(None),
    }
}

/// What names a kernel taken from another's build: its own key, repository, revision, tree and
/// patches.
#[derive(Clone)]
struct Own {
    key: String,
    repository: String,
    revision: String,
    tree_id: String,
    patches: Vec<PatchId>,
}

/// The kernel of `req` taken from the cached entry `e`, whose source differs from it only in
/// the comments of `files`: a new entry under `key` shares its files, names this revision,
/// tree and patches, and a line in builds.log says so ("no build").
fn same_as(
    root: &Path,
    req: &Request,
    e: cache::Entry,
    files: Vec<String>,
    own: Own,
) -> Result<Built> {
    let same = cache::CommentsOnly {
        key: e.record.key.clone(),
        given: e.record.given.clone(),
        files,
    };
    let record = cache::Record {
        key: own.key,
        given: req.given.clone(),
        repository: own.repository,
        build_seconds: 0.0,
        release: e.record.release.clone(),
        source: KernelSource {
            revision: own.revision,
            tree_id: own.tree_id,
            patches: own.patches,
            ..e.record.source.clone()
        },
        comments_only: Some(same.clone()),
    };
    let entry = cache::store_same_as(root, &e, &record)?;
    cache::log_build(
        root,
        &format!(
            "{} {} 0.0s {} no build: equal to {} {} except comments in {}",
            &record.key[..16],
            req.given,
            record.source.image_sha256,
            &same.key[..16.min(same.key.len())],
            same.given,
            same.files.join(" ")
        ),
    )?;
    let mut b = built(entry, false);
    b.comments_only = Some(same);
    Ok(b)
}

/// Every patch file exists (a usage error naming the first that does not).
fn check_patches(req: &Request) -> Result<()> {
    match req
        .spec
        .patches
        .iter()
        .chain(&req.patches)
        .find(|p| !p.is_file())
    {
        Some(p) => Err(usage(format!(
            "--kernel {}: patch {}: no such file",
            req.given,
            p.display()
        ))),
        None => Ok(()),
    }
}

fn built(e: cache::Entry, built: bool) -> Built {
    Built {
        image: e.image(),
        modules: e.modules(),
        release: e.record.release.clone(),
        key: e.record.key.clone(),
        source: e.record.source,
        built,
        comments_only: None,
    }
}

/// Copy the build's results into `staged`: bzImage, config, build.log, and the modules
/// installed under lib/modules. Returns the release and the image's and modules' hashes.
fn stage(
    m: &Make,
    out: &Path,
    staged: &Path,
    log: &Path,
    modules: bool,
    progress: &mut dyn FnMut(&str),
) -> Result<(String, String, Option<String>)> {
    let release = std::fs::read_to_string(out.join("include/config/kernel.release"))
        .context("the build left no include/config/kernel.release")?
        .trim()
        .to_string();
    let image = std::fs::read(out.join("arch/x86/boot/bzImage"))
        .context("the build left no arch/x86/boot/bzImage")?;
    std::fs::write(staged.join("bzImage"), &image)?;
    std::fs::copy(out.join(".config"), staged.join("config"))?;
    std::fs::copy(log, staged.join("build.log"))?;
    let modules_sha256 = if modules {
        let target = format!("INSTALL_MOD_PATH={}", staged.display());
        m.logged(&["modules_install", &target], log, progress)?;
        Some(tree_hash(&staged.join("lib/modules").join(&release))?)
    } else {
        None
    };
    Ok((release, kconfig::sha256_hex(&image), modules_sha256))
}

/// SHA-256 over the relative path and bytes of every regular file under `dir` (sorted; symlinks
/// by their target).
fn tree_hash(dir: &Path) -> Result<String> {
    fn walk(base: &Path, dir: &Path, out: &mut Vec<(String, Vec<u8>)>) -> Result<()> {
        for e in std::fs::read_dir(dir)?.flatten() {
            let p = e.path();
            let rel = p.strip_prefix(base)?.to_string_lossy().into_owned();
            let m = p.symlink_metadata()?;
            if m.is_dir() {
                walk(base, &p, out)?;
            } else if m.file_type().is_symlink() {
                out.push((
                    rel,
                    std::fs::read_link(&p)?
                        .to_string_lossy()
                        .into_owned()
                        .into_bytes(),
                ));
            } else {
                out.push((rel, std::fs::read(&p)?));
            }
        }
        Ok(())
    }
    let mut files = Vec::new();
    walk(dir, dir, &mut files)?;
    files.sort();
    let mut all = Vec::new();
    for (rel, bytes) in files {
        all.extend(format!("{rel}\0{}\0", bytes.len()).into_bytes());
        all.extend(bytes);
    }
    Ok(kconfig::sha256_hex(&all))
}
