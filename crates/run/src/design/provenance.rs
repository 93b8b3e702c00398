//! The provenance of a prebuilt kernel variant (issue 41): the SHA-256 of the image it boots
//! and of its modules directory, taken when the experiment is made, so that two variants that
//! boot the same bytes are named before anything is measured (`SAME IMAGE`). A kernel built
//! from git fills the rest of [`KernelProvenance`] where it is built.

use abperf_model::{BootConfig, KernelProvenance, Variant};
use anyhow::Context;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

/// Deepest directory level of a modules tree that is hashed (a real one has about six).
const MAX_DEPTH: usize = 32;

fn hex(d: impl AsRef<[u8]>) -> String {
    d.as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

/// Feed the content of the file at `path` into `h`.
fn feed_file(h: &mut Sha256, path: &Path) -> anyhow::Result<()> {
    let mut f =
        std::fs::File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f
            .read(&mut buf)
            .with_context(|| format!("cannot read {}", path.display()))?;
        if n == 0 {
            return Ok(());
        }
        h.update(&buf[..n]);
    }
}

/// The SHA-256 (hex) of a file's content.
pub fn hash_file(path: &Path) -> anyhow::Result<String> {
    let mut h = Sha256::new();
    feed_file(&mut h, path)?;
    Ok(hex(h.finalize()))
}

/// Feed directory `dir` (at `rel` under the root) into `h`: every entry in name order, a
/// directory by name, a symbolic link by its target (never followed), a file by name, size and
/// content.
fn feed_dir(h: &mut Sha256, dir: &Path, rel: &str, depth: usize) -> anyhow::Result<()> {
    if depth > MAX_DEPTH {
        anyhow::bail!(
            "{} is nested more than {MAX_DEPTH} levels deep",
            dir.display()
        );
    }
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .with_context(|| format!("cannot list {}", dir.display()))?
        .collect::<Result<_, _>>()
        .with_context(|| format!("cannot list {}", dir.display()))?;
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let name = e.file_name();
        let name = name.to_string_lossy();
        let path = e.path();
        let r = format!("{rel}/{name}");
        let m = std::fs::symlink_metadata(&path)
            .with_context(|| format!("cannot stat {}", path.display()))?;
        if m.file_type().is_symlink() {
            let t = std::fs::read_link(&path)?;
            h.update(format!("L\0{r}\0{}\0", t.to_string_lossy()).as_bytes());
        } else if m.is_dir() {
            h.update(format!("D\0{r}\0").as_bytes());
            feed_dir(h, &path, &r, depth + 1)?;
        } else if m.is_file() {
            h.update(format!("F\0{r}\0{}\0", m.len()).as_bytes());
            feed_file(h, &path)?;
        }
    }
    Ok(())
}

/// The SHA-256 (hex) of a directory tree: names, link targets and file contents.
pub fn hash_tree(dir: &Path) -> anyhow::Result<String> {
    let mut h = Sha256::new();
    feed_dir(&mut h, dir, "", 0)?;
    Ok(hex(h.finalize()))
}

/// The provenance of what `b` boots: its image's hash and its modules directory's.
pub fn of_boot(b: &BootConfig) -> anyhow::Result<KernelProvenance> {
    let image = hash_file(Path::new(&b.kernel)).context("hashing the kernel image")?;
    let modules = b
        .modules
        .as_deref()
        .map(|m| hash_tree(Path::new(m)).context("hashing the modules"))
        .transpose()?;
    Ok(KernelProvenance::of_image(image, modules))
}

/// The provenance of a kernel variant's kernel: a build from git hands over its own record,
/// anything else has its image (and modules) hashed now.
pub fn of_kernel(k: &super::KernelChoice) -> anyhow::Result<KernelProvenance> {
    if let Some(built) = &k.source {
        return Ok(built.provenance());
    }
    of_boot(&BootConfig {
        kernel: k.path.clone(),
        release: k.release.clone(),
        modules: k.modules.clone(),
        package: k.package.clone(),
        append: String::new(),
        source: None,
    })
}

/// Give every kernel variant of `variants` that has none its image's provenance (each distinct
/// image and modules directory hashed once).
pub fn fill(variants: &mut [Variant]) -> anyhow::Result<()> {
    let mut seen: BTreeMap<(String, Option<String>), KernelProvenance> = BTreeMap::new();
    for v in variants.iter_mut() {
        let Some(b) = &v.boot else { continue };
        if v.provenance.is_some() {
            continue;
        }
        if let Some(built) = &b.source {
            // Built here from git: the build's own record (hashed when it was built).
            v.provenance = Some(built.provenance());
            continue;
        }
        let key = (b.kernel.clone(), b.modules.clone());
        let p = match seen.get(&key) {
            Some(p) => p.clone(),
            None => {
                let p = of_boot(b).with_context(|| format!("variant '{}'", v.name))?;
                seen.insert(key, p.clone());
                p
            }
        };
        v.provenance = Some(p);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn boot(kernel: &Path, modules: Option<&Path>) -> BootConfig {
        BootConfig {
            kernel: kernel.display().to_string(),
            release: "6.1.0".into(),
            modules: modules.map(|m| m.display().to_string()),
            package: None,
            append: String::new(),
            source: None,
        }
    }

    #[test]
    fn equal_bytes_hash_equal_and_one_byte_differs() {
        let d = tempfile::tempdir().unwrap();
        let (a, b, c) = (d.path().join("a"), d.path().join("b"), d.path().join("c"));
        std::fs::write(&a, b"bzImage").unwrap();
        std::fs::write(&b, b"bzImage").unwrap();
        std::fs::write(&c, b"bzImagf").unwrap();
        assert_eq!(hash_file(&a).unwrap(), hash_file(&b).unwrap());
        assert_ne!(hash_file(&a).unwrap(), hash_file(&c).unwrap());
        // The empty file's, as sha256sum prints it.
        let empty = d.path().join("e");
        std::fs::write(&empty, b"").unwrap();
        assert_eq!(
            hash_file(&empty).unwrap(),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }

    #[test]
    fn a_modules_tree_hashes_names_links_and_contents() {
        let d = tempfile::tempdir().unwrap();
        let tree = |name: &str, content: &str, link: &str| {
            let m = d.path().join(name);
            std::fs::create_dir_all(m.join("kernel/fs")).unwrap();
            std::fs::write(m.join("kernel/fs/9p.ko"), content).unwrap();
            std::fs::write(m.join("modules.dep"), "kernel/fs/9p.ko:\n").unwrap();
            std::os::unix::fs::symlink(link, m.join("build")).unwrap();
            hash_tree(&m).unwrap()
        };
        let base = tree("m1", "elf", "/usr/src/a");
        assert_eq!(base, tree("m2", "elf", "/usr/src/a"));
        assert_ne!(base, tree("m3", "elF", "/usr/src/a"));
        assert_ne!(base, tree("m4", "elf", "/usr/src/b"));
    }

    #[test]
    fn a_kernel_built_from_git_hands_over_its_record_and_an_image_is_hashed() {
        let d = tempfile::tempdir().unwrap();
        let k = d.path().join("k");
        std::fs::write(&k, b"kernel").unwrap();
        let mut choice = super::super::KernelChoice {
            path: k.display().to_string(),
            release: "6.1.0".into(),
            modules: None,
            package: None,
            label: None,
            source: None,
        };
        let p = of_kernel(&choice).unwrap();
        assert_eq!(p.image_sha256, hash_file(&k).unwrap());
        assert_eq!(p.revision, None);
        let built = abperf_model::KernelSource {
            revision: format!("base ({})", "a".repeat(40)),
            tree_id: "b".repeat(40),
            patches: vec![],
            config_sha256: "c".repeat(64),
            config: "CONFIG_X=y\n".into(),
            compiler: "gcc 12".into(),
            image_sha256: "d".repeat(64),
            modules_sha256: None,
        };
        choice.source = Some(built.clone());
        assert_eq!(of_kernel(&choice).unwrap(), built.provenance());
        // Not hashed: the build's record names the image.
        assert_eq!(of_kernel(&choice).unwrap().image_sha256, "d".repeat(64));
    }

    #[test]
    fn fill_hashes_each_kernel_variant_and_leaves_a_known_record() {
        let d = tempfile::tempdir().unwrap();
        let k = d.path().join("k");
        std::fs::write(&k, b"kernel").unwrap();
        let kv = |n: &str| Variant {
            boot: Some(boot(&k, None)),
            ..Variant::named(n)
        };
        let known = KernelProvenance {
            revision: Some("a".repeat(40)),
            ..KernelProvenance::of_image("f".repeat(64), None)
        };
        let mut vs = vec![
            kv("a"),
            kv("b"),
            Variant::named("plain"),
            Variant {
                provenance: Some(known.clone()),
                ..kv("built")
            },
        ];
        fill(&mut vs).unwrap();
        let h = hash_file(&k).unwrap();
        assert_eq!(vs[0].provenance.as_ref().unwrap().image_sha256, h);
        assert_eq!(vs[0].provenance, vs[1].provenance);
        assert_eq!(vs[2].provenance, None);
        assert_eq!(vs[3].provenance, Some(known));
        let gone = Variant {
            boot: Some(boot(&d.path().join("gone"), None)),
            ..Variant::named("gone")
        };
        let e = format!("{:#}", fill(&mut [gone]).unwrap_err());
        assert!(e.contains("variant 'gone'") && e.contains("gone"), "{e}");
    }
}
