//! What each variant ran, in words, for every report format (issue 41): its command, `-L`
//! parameters, knobs (`path=value`), the kernel it booted (image or package, release, command
//! line) and, when stored, the kernel's provenance (base commit, tree, each patch by subject,
//! config hash, compiler, image and modules hashes). The renderers escape the text their way.

use abperf_model::Variant;

/// What a line is about, so that a format that already shows some items (a table of commands
/// and parameters) can leave them out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Item {
    Command,
    Parameters,
    Knob,
    Kernel,
    Provenance,
}

/// The lines saying what `v` ran, each with its item: `label: value`.
pub fn lines(v: &Variant) -> Vec<(Item, String)> {
    let mut out = Vec::new();
    if let Some(c) = &v.command {
        out.push((Item::Command, format!("command: {c}")));
    }
    if !v.parameters.is_empty() {
        let p: Vec<String> = v
            .parameters
            .iter()
            .map(|(k, val)| format!("{k}={val}"))
            .collect();
        out.push((Item::Parameters, format!("parameters: {}", p.join(" "))));
    }
    for k in &v.knobs {
        out.push((Item::Knob, format!("knob: {}={}", k.path, k.value)));
    }
    if let Some(b) = &v.boot {
        let package = b
            .package
            .as_deref()
            .map(|p| format!(", package {p}"))
            .unwrap_or_default();
        out.push((
            Item::Kernel,
            format!("kernel: {} ({}{package})", b.kernel, b.release),
        ));
        if let Some(m) = &b.modules {
            out.push((Item::Kernel, format!("modules: {m}")));
        }
        if !b.append.is_empty() {
            out.push((Item::Kernel, format!("kernel command line: {}", b.append)));
        }
    }
    if let Some(p) = &v.provenance {
        out.extend(p.lines().into_iter().map(|l| (Item::Provenance, l)));
    }
    out
}

/// The lines of `v` other than `skip`'s items.
pub fn lines_but(v: &Variant, skip: &[Item]) -> Vec<String> {
    lines(v)
        .into_iter()
        .filter(|(i, _)| !skip.contains(i))
        .map(|(_, l)| l)
        .collect()
}

/// Whether any variant of `vs` has something beyond a command and parameters to say.
pub fn any_beyond_command(vs: &[Variant]) -> bool {
    vs.iter()
        .any(|v| !lines_but(v, &[Item::Command, Item::Parameters]).is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use abperf_model::{BootConfig, KernelProvenance, KnobSetting, PatchRef};

    #[test]
    fn a_kernel_variant_says_command_knobs_kernel_and_provenance() {
        let v = Variant {
            command: Some("make -j2".into()),
            parameters: [("n".to_string(), "4".to_string())].into(),
            knobs: vec![KnobSetting {
                path: "/proc/sys/vm/x".into(),
                value: "33".into(),
                original: Some("1".into()),
            }],
            boot: Some(BootConfig {
                kernel: "/k/vmlinuz".into(),
                release: "6.1.0".into(),
                modules: None,
                package: Some("linux-image-6.1.0".into()),
                append: "pti=on".into(),
                source: None,
            }),
            provenance: Some(KernelProvenance {
                revision: Some("a".repeat(40)),
                patches: vec![PatchRef {
                    subject: "x86/mm: ceiling 33".into(),
                    id: "b".repeat(12),
                }],
                ..KernelProvenance::of_image("c".repeat(64), None)
            }),
            ..Variant::named("patched")
        };
        let l: Vec<String> = lines(&v).into_iter().map(|(_, l)| l).collect();
        assert_eq!(
            l[..5],
            [
                "command: make -j2",
                "parameters: n=4",
                "knob: /proc/sys/vm/x=33",
                "kernel: /k/vmlinuz (6.1.0, package linux-image-6.1.0)",
                "kernel command line: pti=on",
            ]
        );
        assert!(l.contains(&format!("base commit: {}", "a".repeat(40))));
        assert!(
            l.iter()
                .any(|x| x.starts_with("patch 1/1: x86/mm: ceiling 33"))
        );
        assert!(any_beyond_command(std::slice::from_ref(&v)));
        assert!(!any_beyond_command(&[Variant::named("plain")]));
    }
}
