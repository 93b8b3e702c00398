//! Kernel variants that ran the same configuration: two variants whose boots show no difference
//! in what the kernel did (its release, the CPU flags it reports, the vulnerability mitigations
//! it chose, the settings abperf records in the guest) although their command lines differ; a
//! word the kernel's log reported unknown is named as such. A
//! verdict between such variants measures noise: seed 000's `clearcpuid=invpcid` on a CPU
//! without INVPCID changes nothing, and only the guest's own snapshot can tell.
//!
//! Before any boot, [`image_notes`] names the variants that boot byte-identical kernels (the
//! hashes of their images and modules, `KernelProvenance`) and differ in nothing else they run:
//! a patch that compiled to nothing, or the same file given twice.

use abperf_model::{Boot, Dataset, Variant};
use serde_json::Value;
use std::collections::BTreeSet;

/// How every note of this module begins (`compare --strict` looks for it).
pub const PREFIX: &str = "SAME CONFIGURATION:";

/// How every note naming byte-identical kernels begins (`compare --strict` looks for it too).
pub const IMAGE_PREFIX: &str = "SAME IMAGE:";

/// Whether `a` and `b` run the same thing apart from their kernel: command, parameters, knobs,
/// workload and the kernel command line.
fn same_apart_from_kernel(a: &Variant, b: &Variant) -> bool {
    let append = |v: &Variant| v.boot.as_ref().map(|b| b.append.clone());
    let knobs = |v: &Variant| {
        v.knobs
            .iter()
            .map(|k| (k.path.clone(), k.value.clone()))
            .collect::<Vec<_>>()
    };
    a.command == b.command
        && a.parameters == b.parameters
        && knobs(a) == knobs(b)
        && a.workload == b.workload
        && append(a) == append(b)
}

/// A note for every pair of kernel variants whose images and modules hash equal and that run
/// the same command with the same kernel command line: a verdict between them measures noise.
pub fn image_notes(variants: &[Variant]) -> Vec<String> {
    let mut out = Vec::new();
    for (i, a) in variants.iter().enumerate() {
        for b in &variants[i + 1..] {
            let (Some(pa), Some(pb)) = (&a.provenance, &b.provenance) else {
                continue;
            };
            if !pa.same_image(pb) || !same_apart_from_kernel(a, b) {
                continue;
            }
            let modules = if pa.modules_sha256.is_some() {
                " and modules"
            } else {
                ""
            };
            out.push(format!(
                "{IMAGE_PREFIX} '{}' and '{}' boot the same kernel image{modules} (sha256 {}) \
                 with the same command line and command: a difference between them is noise",
                a.name,
                b.name,
                &pa.image_sha256[..pa.image_sha256.len().min(16)],
            ));
        }
    }
    out
}

/// What a boot's guest snapshot (`environment.guest`) says the kernel did. CPU flags are a set
/// (their order is the kernel's, but a set is what matters).
const SETTINGS: [&str; 7] = [
    "kernel",
    "vulnerabilities",
    "thp_enabled",
    "thp_defrag",
    "smt",
    "cpus_online",
    "aslr",
];

/// One boot's observable configuration, or None when the guest sent no snapshot.
fn observed(b: &Boot) -> Option<String> {
    let g = b.environment.get("guest")?;
    let flags: BTreeSet<&str> = g.get("cpu_flags")?.as_str()?.split_whitespace().collect();
    let settings: Vec<&Value> = SETTINGS
        .iter()
        .map(|k| g.get(*k).unwrap_or(&Value::Null))
        .collect();
    Some(serde_json::json!({ "flags": flags, "settings": settings }).to_string())
}

/// The observed configurations of `boots` (one variant's); None when a boot has none.
fn configs(boots: &[&Boot]) -> Option<BTreeSet<String>> {
    boots.iter().map(|b| observed(b)).collect()
}

/// The words of a command line.
fn words(b: &[&Boot]) -> BTreeSet<String> {
    b.iter()
        .filter_map(|b| b.cmdline.as_deref())
        .flat_map(|c| c.split_whitespace().map(str::to_string))
        .collect()
}

/// The flags of the first boot of `boots`.
fn flags(boots: &[&Boot]) -> BTreeSet<String> {
    boots
        .first()
        .and_then(|b| b.environment.get("guest")?.get("cpu_flags")?.as_str())
        .map(|f| f.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default()
}

/// The parameters the kernel reported unknown in any boot of `boots` (the guest snapshot's
/// `cmdline_unknown`, read from the kernel's log).
fn unknown(boots: &[&Boot]) -> BTreeSet<String> {
    boots
        .iter()
        .filter_map(|b| {
            b.environment
                .get("guest")?
                .get("cmdline_unknown")?
                .as_array()
        })
        .flatten()
        .filter_map(|w| w.as_str().map(str::to_string))
        .collect()
}

/// Why a word changed nothing: the kernel said it does not know it.
fn unknown_why(word: &str, unknown: &BTreeSet<String>) -> Option<String> {
    unknown
        .contains(word)
        .then(|| format!("`{word}`: the kernel reported it unknown and handed it to user space"))
}

/// Why a `clearcpuid=` word changed nothing: the flags it names that the CPU does not have.
fn clearcpuid_why(word: &str, other_flags: &BTreeSet<String>) -> Option<String> {
    let list = word.strip_prefix("clearcpuid=")?;
    let absent: Vec<&str> = list
        .split(',')
        .filter(|f| !f.is_empty() && !other_flags.contains(*f))
        .collect();
    (!absent.is_empty())
        .then(|| format!("`{word}`: this CPU has no {} to clear", absent.join(", ")))
}

/// A note for every pair of variants whose boots' observed configurations are the same and
/// whose command lines differ.
pub fn notes(data: &Dataset) -> Vec<String> {
    let by_variant: Vec<Vec<&Boot>> = (0..data.variants.len())
        .map(|v| data.boots.iter().filter(|b| b.variant == v).collect())
        .collect();
    let mut out = Vec::new();
    for i in 0..by_variant.len() {
        for j in i + 1..by_variant.len() {
            let (a, b) = (&by_variant[i], &by_variant[j]);
            if a.is_empty() || b.is_empty() {
                continue;
            }
            let (Some(ca), Some(cb)) = (configs(a), configs(b)) else {
                continue;
            };
            let (wa, wb) = (words(a), words(b));
            if ca != cb || wa == wb {
                continue;
            }
            let differ: Vec<&String> = wa.symmetric_difference(&wb).collect();
            let why: Vec<String> = differ
                .iter()
                .filter_map(|w| {
                    let (mine, other) = if wa.contains(*w) { (a, b) } else { (b, a) };
                    unknown_why(w, &unknown(mine)).or_else(|| clearcpuid_why(w, &flags(other)))
                })
                .collect();
            let why = if why.is_empty() {
                String::new()
            } else {
                format!(" ({})", why.join("; "))
            };
            out.push(format!(
                "{PREFIX} '{}' and '{}' differ on the kernel command line ({}) but every \
                 boot of both shows the same kernel, CPU flags, vulnerability mitigations and \
                 settings{why}: a difference between them is noise, or comes from something \
                 abperf does not record in the guest",
                data.variants[i].name,
                data.variants[j].name,
                differ
                    .iter()
                    .map(|w| format!("`{w}`"))
                    .collect::<Vec<_>>()
                    .join(" ")
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use abperf_model::boot::testdata::boot;
    use abperf_model::dataset::testdata::two_variants;

    fn booted(cmdlines: [&str; 2], flags: [&str; 2], meltdown: [&str; 2]) -> Dataset {
        let mut ds = two_variants("a", "b");
        ds.boots = (0..4)
            .map(|n| {
                let v = (n % 2) as usize;
                let mut b = boot(n, v, vec![]);
                b.cmdline = Some(format!("console=ttyS0 {}", cmdlines[v]));
                b.environment = serde_json::json!({"guest": {
                    "kernel": "6.12.0", "cpu_flags": flags[v],
                    "vulnerabilities": {"meltdown": meltdown[v]}, "smt": "notsupported",
                }});
                b
            })
            .collect();
        ds
    }

    #[test]
    fn a_parameter_that_changed_nothing_is_named_with_why() {
        let flags = "fpu sse2 pcid pti";
        let ds = booted(
            ["pti=on", "pti=on clearcpuid=invpcid"],
            [flags, flags],
            ["Mitigation: PTI"; 2],
        );
        let n = notes(&ds);
        assert_eq!(n.len(), 1, "{n:?}");
        assert!(
            n[0].starts_with("SAME CONFIGURATION: 'a' and 'b' differ"),
            "{}",
            n[0]
        );
        assert!(n[0].contains("(`clearcpuid=invpcid`)"), "{}", n[0]);
        assert!(
            n[0].contains("`clearcpuid=invpcid`: this CPU has no invpcid to clear"),
            "{}",
            n[0]
        );
    }

    #[test]
    fn variants_that_differ_in_flags_or_mitigations_are_not_named() {
        // nopti against pti=on: the pti flag says which one isolated page tables.
        let ds = booted(
            ["nopti", "pti=on"],
            ["fpu sse2", "fpu sse2 pti"],
            ["Not affected"; 2],
        );
        assert!(notes(&ds).is_empty());
        // mitigations=off: the mitigation chosen differs.
        let ds = booted(
            ["", "mitigations=off"],
            ["fpu"; 2],
            ["Mitigation: PTI", "Vulnerable"],
        );
        assert!(notes(&ds).is_empty());
        // The same command line: nothing to say.
        let ds = booted(["quiet", "quiet"], ["fpu"; 2], ["x"; 2]);
        assert!(notes(&ds).is_empty());
    }

    #[test]
    fn a_parameter_the_kernel_reported_unknown_is_named_so() {
        // `pit=on` (a typo of pti=on) changed nothing: the kernel's log says it is unknown.
        let mut ds = booted(["quiet", "quiet pit=on"], ["fpu"; 2], ["x"; 2]);
        for b in ds.boots.iter_mut().filter(|b| b.variant == 1) {
            b.environment["guest"]["cmdline_unknown"] = serde_json::json!(["pit=on"]);
        }
        let n = notes(&ds);
        assert_eq!(n.len(), 1, "{n:?}");
        assert!(
            n[0].contains("`pit=on`: the kernel reported it unknown and handed it to user space"),
            "{}",
            n[0]
        );
    }

    #[test]
    fn variants_booting_the_same_bytes_are_named_before_any_boot() {
        use abperf_model::{BootConfig, KernelProvenance};
        let h = |c: char| c.to_string().repeat(64);
        let kv = |name: &str, kernel: &str, append: &str, image: char| Variant {
            command: Some("true".into()),
            boot: Some(BootConfig {
                kernel: kernel.into(),
                release: "6.1.0".into(),
                modules: None,
                package: None,
                append: append.into(),
                source: None,
            }),
            provenance: Some(KernelProvenance::of_image(h(image), None)),
            ..Variant::named(name)
        };
        let vs = [
            kv("base", "/k/a", "", 'a'),
            kv("patched", "/k/b", "", 'a'),
            kv("other", "/k/c", "", 'c'),
            // The same image with another command line: an A/B of the command line.
            kv("pti", "/k/a", "pti=on", 'a'),
        ];
        let n = image_notes(&vs);
        assert_eq!(n.len(), 1, "{n:?}");
        assert!(
            n[0].starts_with("SAME IMAGE: 'base' and 'patched' boot the same kernel image (sha256 aaaaaaaaaaaaaaaa)"),
            "{}",
            n[0]
        );
        // Other modules: not the same kernel.
        let mut vs2 = vs[..2].to_vec();
        vs2[1].provenance.as_mut().unwrap().modules_sha256 = Some(h('m'));
        assert!(image_notes(&vs2).is_empty());
        // Another command: an A/B of commands on one kernel.
        vs2[1].provenance = vs2[0].provenance.clone();
        vs2[1].command = Some("false".into());
        assert!(image_notes(&vs2).is_empty());
        // Without provenance (a store before it): nothing said.
        let mut vs3 = vs[..2].to_vec();
        vs3[0].provenance = None;
        assert!(image_notes(&vs3).is_empty());
    }

    #[test]
    fn a_boot_without_a_guest_snapshot_says_nothing() {
        let mut ds = booted(["a=1", "a=2"], ["fpu"; 2], ["x"; 2]);
        ds.boots[3].environment = serde_json::json!({});
        assert!(notes(&ds).is_empty());
    }
}
