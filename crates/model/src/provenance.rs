//! What a kernel variant's kernel was made from (issue 41): the revision and tree it was built
//! from, the patches on top, the configuration and compiler, and the hashes of the image and
//! modules it booted. Stored one row per variant (`kernel_provenance`); a prebuilt image or a
//! Debian package has only its hashes. Rows come from a store, which is untrusted: [`check`]
//! bounds every field before anything is shown or run.
//!
//! [`check`]: KernelProvenance::check

use serde::Serialize;

/// One patch of the series applied on top of the revision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct PatchRef {
    /// Its subject line (the mail's `Subject:` without `[PATCH n/m]`).
    pub subject: String,
    /// Its id: the commit it became (`git am`), or the patch id of its diff.
    pub id: String,
}

/// A kernel variant's provenance; everything but the image hash is optional.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct KernelProvenance {
    /// The base commit (an object id) the kernel was built from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revision: Option<String>,
    /// The git tree id of the source built (patches applied).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tree_id: Option<String>,
    /// The patches applied on top of `revision`, in order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub patches: Vec<PatchRef>,
    /// SHA-256 (hex) of the final .config.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub config_sha256: Option<String>,
    /// The final .config itself (stored; reports name its hash only).
    #[serde(skip)]
    pub config: Option<String>,
    /// The compiler's version line (`gcc --version | head -1`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compiler: Option<String>,
    /// SHA-256 (hex) of the kernel image booted.
    pub image_sha256: String,
    /// SHA-256 (hex) over the modules directory booted with it (each file's path and content).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub modules_sha256: Option<String>,
}

/// Longest text field accepted from a store (a subject, a compiler line, a revision).
pub const MAX_FIELD: usize = 1024;
/// Most patches accepted in one series.
pub const MAX_PATCHES: usize = 10_000;
/// Largest .config accepted (a full distribution config is ~300 KB).
pub const MAX_CONFIG: usize = 16 << 20;

/// Whether `s` is a SHA-256 in lower-case hex.
pub fn is_sha256(s: &str) -> bool {
    s.len() == 64 && is_hex(s)
}

/// Whether `s` is a git object id (SHA-1 or SHA-256 in lower-case hex, or an abbreviation of at
/// least 7 digits): what `git log` may be given from a store without being read as an option or
/// a revision expression.
pub fn is_object_id(s: &str) -> bool {
    (7..=64).contains(&s.len()) && is_hex(s)
}

fn is_hex(s: &str) -> bool {
    s.bytes()
        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

impl KernelProvenance {
    /// A record of an image (and modules) with nothing known of how it was built.
    pub fn of_image(image_sha256: String, modules_sha256: Option<String>) -> KernelProvenance {
        KernelProvenance {
            image_sha256,
            modules_sha256,
            ..KernelProvenance::default()
        }
    }

    /// Whether two variants boot byte-identical kernels: the same image and the same modules.
    pub fn same_image(&self, other: &KernelProvenance) -> bool {
        self.image_sha256 == other.image_sha256 && self.modules_sha256 == other.modules_sha256
    }

    /// The first field out of bounds, named (a row read from a store, or a record about to be
    /// stored): hashes must be SHA-256 hex, text fields at most [`MAX_FIELD`] bytes, at most
    /// [`MAX_PATCHES`] patches, a .config at most [`MAX_CONFIG`] bytes.
    pub fn check(&self) -> Result<(), String> {
        let hash = |name: &str, v: Option<&str>| match v {
            Some(h) if !is_sha256(h) => Err(format!(
                "{name} is not a SHA-256 in lower-case hex ({} bytes)",
                h.len()
            )),
            _ => Ok(()),
        };
        hash("image_sha256", Some(&self.image_sha256))?;
        hash("modules_sha256", self.modules_sha256.as_deref())?;
        hash("config_sha256", self.config_sha256.as_deref())?;
        let text = |name: &str, v: Option<&str>| match v {
            Some(t) if t.len() > MAX_FIELD => Err(format!(
                "{name} is {} bytes, more than {MAX_FIELD}",
                t.len()
            )),
            _ => Ok(()),
        };
        text("revision", self.revision.as_deref())?;
        text("tree_id", self.tree_id.as_deref())?;
        text("compiler", self.compiler.as_deref())?;
        if self.patches.len() > MAX_PATCHES {
            return Err(format!(
                "{} patches, more than {MAX_PATCHES}",
                self.patches.len()
            ));
        }
        for (i, p) in self.patches.iter().enumerate() {
            text(&format!("patch {}'s subject", i + 1), Some(&p.subject))?;
            text(&format!("patch {}'s id", i + 1), Some(&p.id))?;
        }
        if let Some(c) = &self.config
            && c.len() > MAX_CONFIG
        {
            return Err(format!(
                "config is {} bytes, more than {MAX_CONFIG}",
                c.len()
            ));
        }
        Ok(())
    }

    /// The record in words, one item per line, for people (text escaped by the caller's
    /// renderer): base revision, tree, each patch by subject, config hash, compiler, image and
    /// modules hashes.
    pub fn lines(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(r) = &self.revision {
            out.push(format!("base commit: {r}"));
        }
        if let Some(t) = &self.tree_id {
            out.push(format!("tree: {t}"));
        }
        for (i, p) in self.patches.iter().enumerate() {
            out.push(format!(
                "patch {}/{}: {} ({})",
                i + 1,
                self.patches.len(),
                p.subject,
                p.id
            ));
        }
        if let Some(c) = &self.config_sha256 {
            out.push(format!("config sha256: {c}"));
        }
        if let Some(c) = &self.compiler {
            out.push(format!("compiler: {c}"));
        }
        out.push(format!("image sha256: {}", self.image_sha256));
        if let Some(m) = &self.modules_sha256 {
            out.push(format!("modules sha256: {m}"));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const H: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    #[test]
    fn same_image_needs_equal_image_and_modules() {
        let a = KernelProvenance::of_image(H.into(), None);
        let mut b = a.clone();
        assert!(a.same_image(&b));
        b.modules_sha256 = Some(H.into());
        assert!(!a.same_image(&b));
        b.modules_sha256 = None;
        b.image_sha256 = H.replace('0', "1");
        assert!(!a.same_image(&b));
    }

    #[test]
    fn check_names_the_field_out_of_bounds() {
        assert_eq!(KernelProvenance::of_image(H.into(), None).check(), Ok(()));
        let bad = KernelProvenance::of_image("--upload-pack=x".into(), None);
        assert!(bad.check().unwrap_err().starts_with("image_sha256"));
        let mut p = KernelProvenance::of_image(H.into(), None);
        p.patches = vec![PatchRef {
            subject: "x".repeat(MAX_FIELD + 1),
            id: "1".into(),
        }];
        assert!(p.check().unwrap_err().starts_with("patch 1's subject"));
        p.patches.clear();
        p.config_sha256 = Some(H.to_uppercase());
        assert!(p.check().unwrap_err().starts_with("config_sha256"));
    }

    #[test]
    fn object_ids_are_hex_only() {
        assert!(is_object_id("abcdef1"));
        assert!(is_object_id(&H[..40]));
        for bad in ["abc", "--all", "HEAD", "v6.1", "ABCDEF1", "abcdef1..x", ""] {
            assert!(!is_object_id(bad), "{bad}");
        }
    }

    #[test]
    fn lines_name_base_patches_and_hashes() {
        let p = KernelProvenance {
            revision: Some("a".repeat(40)),
            patches: vec![PatchRef {
                subject: "x86/mm: raise the ceiling".into(),
                id: "b".repeat(40),
            }],
            ..KernelProvenance::of_image(H.into(), None)
        };
        let l = p.lines();
        assert_eq!(l[0], format!("base commit: {}", "a".repeat(40)));
        assert!(l[1].starts_with("patch 1/1: x86/mm: raise the ceiling ("));
        assert_eq!(l[2], format!("image sha256: {H}"));
    }
}
