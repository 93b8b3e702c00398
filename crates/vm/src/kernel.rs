//! Kernel images: Debian kernel packages fetched into a cache (`apt-get download`, `dpkg-deb -x`,
//! `depmod -b`; nothing is installed), the release string of a bzImage, the modules directory that
//! belongs to a kernel, and the modules a guest needs, in load order, from `modules.dep`.

use abperf_model::vm::KernelImage;
use anyhow::{Context, Result, bail};
use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::Command;

/// File in a cached package's directory describing it (paths relative to the directory).
const READY: &str = "abperf-kernel.json";

/// Where fetched kernels are kept: `$ABPERF_KERNEL_CACHE`, else `$XDG_CACHE_HOME/abperf/kernels`,
/// else `~/.cache/abperf/kernels`.
pub fn cache_dir() -> Result<PathBuf> {
    let nonempty = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
    if let Some(p) = nonempty("ABPERF_KERNEL_CACHE") {
        return Ok(PathBuf::from(p));
    }
    if let Some(p) = nonempty("XDG_CACHE_HOME") {
        return Ok(PathBuf::from(p).join("abperf/kernels"));
    }
    match nonempty("HOME") {
        Some(h) => Ok(PathBuf::from(h).join(".cache/abperf/kernels")),
        None => bail!(
            "cannot place the kernel cache: none of $ABPERF_KERNEL_CACHE, $XDG_CACHE_HOME, $HOME is set"
        ),
    }
}

/// Debian package names: lower-case letters, digits, `+ - .`, starting with a letter or digit.
fn valid_package(name: &str) -> bool {
    name.len() >= 2
        && name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "+-.".contains(c))
}

/// Fetch `package` into [`cache_dir`] (see [`fetch_kernel_in`]).
pub fn fetch_kernel(package: &str) -> Result<KernelImage> {
    fetch_kernel_in(&cache_dir()?, package)
}

/// The kernel of Debian package `package` (e.g. `linux-image-6.1.0-56-amd64-unsigned`), unpacked
/// under `cache/package/`. The first call downloads it with `apt-get download` (no install),
/// unpacks it with `dpkg-deb -x` and runs `depmod -b`; later calls only read the cache. Concurrent
/// callers for one package wait for each other (a lock file beside the directory).
pub fn fetch_kernel_in(cache: &Path, package: &str) -> Result<KernelImage> {
    fetch_depth(cache, package, 0)
}

fn fetch_depth(cache: &Path, package: &str, depth: u32) -> Result<KernelImage> {
    if !valid_package(package) {
        return Err(abperf_model::error::usage(format!(
            "{package:?}: not a Debian package name (expected e.g. linux-image-6.1.0-56-amd64-unsigned)"
        )));
    }
    std::fs::create_dir_all(cache)
        .with_context(|| format!("cannot create the kernel cache {}", cache.display()))?;
    let lock_path = cache.join(format!(".{package}.lock"));
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .with_context(|| format!("cannot open {}", lock_path.display()))?;
    // SAFETY: flock on an fd we own; released when `lock` is closed.
    if unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX) } != 0 {
        bail!(
            "cannot lock {}: {}",
            lock_path.display(),
            std::io::Error::last_os_error()
        );
    }
    let dir = cache.join(package);
    if let Some(k) = load_cached(&dir)? {
        return Ok(k);
    }
    remove_dead_partials(cache, package);
    let partial = cache.join(format!(".partial-{package}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&partial);
    std::fs::create_dir_all(&partial)
        .with_context(|| format!("cannot create {}", partial.display()))?;
    match unpack(&partial, package) {
        Err(e) => {
            let _ = std::fs::remove_dir_all(&partial);
            return Err(e);
        }
        Ok(Unpacked::Kernel) => {}
        Ok(Unpacked::Meta(target)) => {
            // A metapackage (linux-image-amd64): fetch what it depends on, and remember the
            // answer under the metapackage's name too.
            let _ = std::fs::remove_dir_all(&partial);
            if depth >= 2 {
                bail!("package {package}: metapackages nested too deeply (at {target})");
            }
            let k = fetch_depth(cache, &target, depth + 1)?;
            std::fs::create_dir_all(&partial)?;
            std::fs::write(
                partial.join(READY),
                serde_json::to_string_pretty(&k)? + "\n",
            )?;
        }
    }
    if dir.exists() {
        // An incomplete directory left by an older layout or a crash between rename and READY.
        std::fs::remove_dir_all(&dir)
            .with_context(|| format!("cannot remove the stale {}", dir.display()))?;
    }
    std::fs::rename(&partial, &dir)
        .with_context(|| format!("cannot move {} to {}", partial.display(), dir.display()))?;
    load_cached(&dir)?.with_context(|| format!("{} vanished after unpacking", dir.display()))
}

/// Remove `.partial-PACKAGE-PID` directories of fetches whose process is gone (killed while
/// unpacking). Called with the package's lock held, so no live fetch owns them.
fn remove_dead_partials(cache: &Path, package: &str) {
    let prefix = format!(".partial-{package}-");
    let Ok(rd) = std::fs::read_dir(cache) else {
        return;
    };
    for e in rd.filter_map(|e| e.ok()) {
        let name = e.file_name().to_string_lossy().into_owned();
        if let Some(pid) = name
            .strip_prefix(&prefix)
            .and_then(|p| p.parse::<u32>().ok())
            && !Path::new(&format!("/proc/{pid}")).exists()
        {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

/// The record of a completely unpacked package, with absolute paths, if there is one.
fn load_cached(dir: &Path) -> Result<Option<KernelImage>> {
    let ready = dir.join(READY);
    let text = match std::fs::read_to_string(&ready) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", ready.display())),
    };
    let mut k: KernelImage = serde_json::from_str(&text)
        .with_context(|| format!("{}: not a kernel record", ready.display()))?;
    // Relative paths: this directory's own unpacked package; absolute: a metapackage's record
    // pointing at the package it depends on.
    if k.root.is_relative() {
        k.root = dir.to_path_buf();
    }
    k.vmlinuz = dir.join(&k.vmlinuz);
    k.modules = dir.join(&k.modules);
    if !k.vmlinuz.is_file() || !k.modules.join("modules.dep").is_file() {
        return Ok(None);
    }
    Ok(Some(k))
}

/// A program on `$PATH` or in the sbin directories (depmod lives in /usr/sbin, often not on a
/// user's PATH).
pub fn find_program(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin", "/usr/bin", "/bin"].map(PathBuf::from))
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// Run a tool to its end; its stdout, or an error naming `what` with the tool's exit status and
/// stderr.
pub fn run_tool(cmd: &mut Command, what: &str) -> Result<String> {
    let out = cmd.output().with_context(|| format!("cannot run {what}"))?;
    if !out.status.success() {
        bail!(
            "{what} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Every kernel in the cache (unreadable or incomplete entries are skipped), by package name.
pub fn cached_kernels(cache: &Path) -> Vec<KernelImage> {
    let mut out: Vec<KernelImage> = std::fs::read_dir(cache)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
                .filter_map(|e| load_cached(&e.path()).ok().flatten())
                .collect()
        })
        .unwrap_or_default();
    out.sort_by(|a, b| a.package.cmp(&b.package));
    out
}

enum Unpacked {
    Kernel,
    /// A metapackage; the kernel package it depends on.
    Meta(String),
}

/// Download, unpack and index `package` inside `partial`, then write its READY record.
fn unpack(partial: &Path, package: &str) -> Result<Unpacked> {
    let apt = find_program("apt-get").context(
        "apt-get not found: fetching kernel packages needs a Debian-family system; \
         give the path of a kernel image you built instead",
    )?;
    let dpkg_deb = find_program("dpkg-deb").context("dpkg-deb not found (Debian package dpkg)")?;
    let depmod = find_program("depmod")
        .context("depmod not found: install it with `apt-get install kmod`")?;
    run_tool(
        Command::new(&apt)
            .args(["download", "-q", package])
            .current_dir(partial),
        &format!("apt-get download {package}"),
    )?;
    let deb = std::fs::read_dir(partial)?
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "deb"))
        .with_context(|| format!("apt-get download {package} left no .deb file"))?;
    let version = run_tool(
        Command::new(&dpkg_deb).arg("-f").arg(&deb).arg("Version"),
        "dpkg-deb -f",
    )?
    .trim()
    .to_string();
    let root = partial.join("root");
    run_tool(
        Command::new(&dpkg_deb).arg("-x").arg(&deb).arg(&root),
        &format!("dpkg-deb -x {}", deb.display()),
    )?;
    let boot = root.join("boot");
    let releases: Vec<String> = std::fs::read_dir(&boot)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .filter_map(|e| {
                    e.file_name()
                        .to_str()
                        .and_then(|n| n.strip_prefix("vmlinuz-"))
                        .map(str::to_string)
                })
                .collect()
        })
        .unwrap_or_default();
    let release = match releases.as_slice() {
        [one] => one.clone(),
        [] => {
            let depends = run_tool(
                Command::new(&dpkg_deb).arg("-f").arg(&deb).arg("Depends"),
                "dpkg-deb -f",
            )
            .unwrap_or_default();
            let target = depends
                .split(',')
                .filter_map(|d| d.split('|').next())
                .filter_map(|d| d.split_whitespace().next())
                .find(|d| d.starts_with("linux-image-") && valid_package(d));
            if let Some(t) = target {
                return Ok(Unpacked::Meta(t.to_string()));
            }
            bail!(
                "package {package} contains no boot/vmlinuz-* (a metapackage? it depends on: {})",
                depends.trim()
            );
        }
        many => bail!("package {package} contains several kernels: {many:?}"),
    };
    std::fs::remove_file(&deb).with_context(|| format!("cannot remove {}", deb.display()))?;
    let modules = root.join("lib/modules").join(&release);
    if !modules.is_dir() {
        bail!(
            "package {package} has no lib/modules/{release}: a kernel without modules cannot \
             mount the host's root in the guest"
        );
    }
    run_tool(
        Command::new(&depmod).arg("-b").arg(&root).arg(&release),
        &format!("depmod -b {} {release}", root.display()),
    )?;
    let record = KernelImage {
        package: package.to_string(),
        version,
        release: release.clone(),
        root: PathBuf::from("."),
        vmlinuz: PathBuf::from(format!("root/boot/vmlinuz-{release}")),
        modules: PathBuf::from(format!("root/lib/modules/{release}")),
    };
    let ready = partial.join(READY);
    std::fs::write(&ready, serde_json::to_string_pretty(&record)? + "\n")
        .with_context(|| format!("cannot write {}", ready.display()))?;
    Ok(Unpacked::Kernel)
}

/// What kind of kernel image a file is.
#[derive(Debug, Clone, PartialEq)]
pub enum ImageKind {
    /// x86 bzImage; the release string from its setup header (first word of the version).
    BzImage { release: Option<String> },
    /// An ELF vmlinux (QEMU boots it through its PVH note).
    Elf,
}

/// Identify a kernel image by its header; an error names the file and what was expected.
pub fn image_kind(path: &Path) -> Result<ImageKind> {
    let data = std::fs::read(path)
        .with_context(|| format!("cannot read the kernel image {}", path.display()))?;
    if data.starts_with(b"\x7fELF") {
        return Ok(ImageKind::Elf);
    }
    if data.len() > 0x210 && &data[0x202..0x206] == b"HdrS" {
        let proto = u16::from_le_bytes([data[0x206], data[0x207]]);
        let off = u16::from_le_bytes([data[0x20e], data[0x20f]]) as usize;
        let release = (proto >= 0x200 && off != 0)
            .then(|| data.get(off + 0x200..))
            .flatten()
            .and_then(|s| {
                let end = s.iter().position(|&b| b == 0 || b == b' ')?;
                std::str::from_utf8(&s[..end]).ok().map(str::to_string)
            })
            .filter(|r| !r.is_empty());
        return Ok(ImageKind::BzImage { release });
    }
    bail!(
        "{}: not a Linux kernel image (expected a bzImage with a \"HdrS\" setup header, or an ELF vmlinux)",
        path.display()
    )
}

/// The modules directory of a kernel image: `KERNELDIR/../lib/modules/RELEASE` (an unpacked
/// package), `KERNELDIR/lib/modules/RELEASE` (`make modules_install INSTALL_MOD_PATH=`), then
/// `/lib/modules/RELEASE` (installed on the host).
pub fn find_modules_dir(kernel: &Path, release: &str) -> Option<PathBuf> {
    modules_candidates(kernel, release)
        .find(|d| d.join("modules.dep").is_file())
        .map(|d| d.canonicalize().unwrap_or(d))
}

fn modules_candidates(kernel: &Path, release: &str) -> impl Iterator<Item = PathBuf> {
    let kdir = kernel.parent().unwrap_or(Path::new(".")).to_path_buf();
    [
        kdir.join("..").join("lib/modules").join(release),
        kdir.join("lib/modules").join(release),
        PathBuf::from("/lib/modules").join(release),
    ]
    .into_iter()
}

/// A modules directory of the kernel that holds modules but no `modules.dep` (a package unpacked
/// by hand: `dpkg-deb -x` leaves the index to the package's postinst), with the command that
/// builds its index. Booting without the index would leave the guest without virtio_console.
pub fn unindexed_modules_dir(kernel: &Path, release: &str) -> Option<(PathBuf, String)> {
    let dir = modules_candidates(kernel, release)
        .find(|d| d.join("kernel").is_dir() && !d.join("modules.dep").is_file())?;
    let dir = dir.canonicalize().unwrap_or(dir);
    // ROOT/lib/modules/RELEASE
    let root = dir.parent()?.parent()?.parent()?.to_path_buf();
    let fix = format!("depmod -b {} {release}", root.display());
    Some((dir, fix))
}

/// A module's name from its path in `modules.dep`: file stem without `.ko[.xz|.gz|.zst]`, with
/// `-` spelled `_` (modprobe treats them alike).
fn module_name(path: &str) -> String {
    let file = path.rsplit('/').next().unwrap_or(path);
    let stem = file.split(".ko").next().unwrap_or(file);
    stem.replace('-', "_")
}

/// The module files (paths relative to the modules directory) to load, dependencies first, for
/// the `wanted` modules that are not built into the kernel. An error names a module that is
/// neither in `modules.dep` nor in `modules.builtin`.
pub fn modules_to_load(modules_dir: &Path, wanted: &[&str]) -> Result<Vec<String>> {
    let dep_path = modules_dir.join("modules.dep");
    let dep_text = std::fs::read_to_string(&dep_path).with_context(|| {
        format!(
            "cannot read {} (run `depmod -b ROOT RELEASE` for the kernel's modules)",
            dep_path.display()
        )
    })?;
    let mut deps: BTreeMap<String, (String, Vec<String>)> = BTreeMap::new();
    for (i, line) in dep_text.lines().enumerate() {
        let Some((path, rest)) = line.split_once(':') else {
            if line.trim().is_empty() {
                continue;
            }
            bail!(
                "{}:{}: expected \"module: dependencies\"",
                dep_path.display(),
                i + 1
            );
        };
        deps.insert(
            module_name(path),
            (
                path.to_string(),
                rest.split_whitespace().map(str::to_string).collect(),
            ),
        );
    }
    let builtin: BTreeSet<String> = std::fs::read_to_string(modules_dir.join("modules.builtin"))
        .unwrap_or_default()
        .lines()
        .map(module_name)
        .collect();
    let mut order = Vec::new();
    let mut seen = BTreeSet::new();
    fn visit(
        path: &str,
        deps: &BTreeMap<String, (String, Vec<String>)>,
        seen: &mut BTreeSet<String>,
        order: &mut Vec<String>,
    ) {
        if !seen.insert(path.to_string()) {
            return;
        }
        if let Some((_, ds)) = deps.get(&module_name(path)) {
            for d in ds {
                visit(d, deps, seen, order);
            }
        }
        order.push(path.to_string());
    }
    for w in wanted {
        let name = w.replace('-', "_");
        if builtin.contains(&name) {
            continue;
        }
        match deps.get(&name) {
            Some((path, _)) => visit(path, &deps, &mut seen, &mut order),
            None => bail!(
                "the kernel of {} has no module {w} (not in modules.dep, not in modules.builtin); \
                 a guest needs 9p, virtio console and overlayfs (Debian's cloud kernels lack 9p: \
                 use linux-image-*-amd64)",
                modules_dir.display()
            ),
        }
    }
    Ok(order)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_modules_directory_without_its_index_is_named_with_the_fix() {
        let root = tempfile::tempdir().unwrap();
        let release = "6.1.0-99-amd64";
        let boot = root.path().join("boot");
        let modules = root.path().join("lib/modules").join(release);
        std::fs::create_dir_all(&boot).unwrap();
        std::fs::create_dir_all(modules.join("kernel/drivers")).unwrap();
        let kernel = boot.join(format!("vmlinuz-{release}"));
        std::fs::write(&kernel, b"").unwrap();
        assert_eq!(find_modules_dir(&kernel, release), None);
        let (dir, fix) = unindexed_modules_dir(&kernel, release).unwrap();
        assert_eq!(dir, modules.canonicalize().unwrap());
        let root_shown = root.path().canonicalize().unwrap();
        assert_eq!(fix, format!("depmod -b {} {release}", root_shown.display()));
        std::fs::write(modules.join("modules.dep"), b"").unwrap();
        assert!(unindexed_modules_dir(&kernel, release).is_none());
        assert_eq!(find_modules_dir(&kernel, release), Some(dir));
    }

    #[test]
    fn module_names_and_load_order() {
        assert_eq!(module_name("kernel/fs/9p/9p.ko.xz"), "9p");
        assert_eq!(
            module_name("kernel/drivers/virtio/virtio-foo.ko"),
            "virtio_foo"
        );
        let d = tempfile::tempdir().unwrap();
        std::fs::write(
            d.path().join("modules.dep"),
            "kernel/fs/9p/9p.ko: kernel/net/9p/9pnet.ko kernel/fs/netfs/netfs.ko\n\
             kernel/net/9p/9pnet.ko:\n\
             kernel/fs/netfs/netfs.ko:\n\
             kernel/net/9p/9pnet_virtio.ko: kernel/net/9p/9pnet.ko kernel/drivers/virtio/virtio_ring.ko\n\
             kernel/drivers/virtio/virtio_ring.ko:\n",
        )
        .unwrap();
        std::fs::write(
            d.path().join("modules.builtin"),
            "kernel/drivers/char/virtio_console.ko\n",
        )
        .unwrap();
        let order = modules_to_load(d.path(), &["9pnet_virtio", "virtio_console", "9p"]).unwrap();
        assert_eq!(
            order,
            vec![
                "kernel/net/9p/9pnet.ko",
                "kernel/drivers/virtio/virtio_ring.ko",
                "kernel/net/9p/9pnet_virtio.ko",
                "kernel/fs/netfs/netfs.ko",
                "kernel/fs/9p/9p.ko",
            ]
        );
        let err = modules_to_load(d.path(), &["overlay"])
            .unwrap_err()
            .to_string();
        assert!(err.contains("no module overlay"), "{err}");
    }

    #[test]
    fn bzimage_release_from_the_setup_header() {
        let d = tempfile::tempdir().unwrap();
        let mut img = vec![0u8; 0x400];
        img[0x202..0x206].copy_from_slice(b"HdrS");
        img[0x206..0x208].copy_from_slice(&0x020fu16.to_le_bytes());
        img[0x20e..0x210].copy_from_slice(&0x100u16.to_le_bytes());
        let v = b"6.1.0-56-amd64 (debian-kernel@lists.debian.org) #1 SMP\0";
        img[0x300..0x300 + v.len()].copy_from_slice(v);
        let p = d.path().join("vmlinuz");
        std::fs::write(&p, &img).unwrap();
        assert_eq!(
            image_kind(&p).unwrap(),
            ImageKind::BzImage {
                release: Some("6.1.0-56-amd64".into())
            }
        );
        std::fs::write(&p, b"not a kernel").unwrap();
        let err = image_kind(&p).unwrap_err().to_string();
        assert!(err.contains("not a Linux kernel image"), "{err}");
    }

    #[test]
    fn package_names_are_checked() {
        assert!(valid_package("linux-image-6.12.111+deb12-amd64-unsigned"));
        assert!(!valid_package("../etc"));
        assert!(!valid_package("Linux"));
        let d = tempfile::tempdir().unwrap();
        let err = fetch_kernel_in(d.path(), "-o=x").unwrap_err().to_string();
        assert!(err.contains("not a Debian package name"), "{err}");
    }
}
