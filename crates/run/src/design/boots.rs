//! Kernel variants: the kernels (`--kernel`) and kernel command lines (`--append`) crossed with
//! the variants of commands, `-L` parameters and `-k` knobs, and the two-level schedule: boots in
//! seeded ABBA order (`--boots N` per variant), each boot running its warm-ups and then `-r`
//! timed runs of its one variant.

use super::schedule::{Order, build_schedule};
use super::variants::VariantPlan;
use abperf_model::error::usage;
use abperf_model::{BootConfig, BootPlan, Slot};

/// A kernel given with `--kernel`, resolved (a file, or a package fetched into the cache).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelChoice {
    /// Absolute path of the image.
    pub path: String,
    pub release: String,
    pub modules: Option<String>,
    pub package: Option<String>,
    /// The `--kernel` argument, when it names a build from source (`git:REV`): the variant's
    /// label when the releases do not tell the kernels apart.
    pub label: Option<String>,
    /// The provenance of a kernel built from source.
    pub source: Option<abperf_model::KernelSource>,
}

/// One variant of a kernel-variant experiment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BootVariant {
    pub plan: VariantPlan,
    pub boot: BootConfig,
}

/// Labels that tell the kernels apart: their releases, else their labels (`git:REV`) or file
/// names, else their paths.
fn kernel_labels(kernels: &[KernelChoice]) -> Vec<String> {
    let distinct = |l: &[String]| {
        let mut s = l.to_vec();
        s.sort();
        s.dedup();
        s.len() == l.len()
    };
    let releases: Vec<String> = kernels.iter().map(|k| k.release.clone()).collect();
    if distinct(&releases) {
        return releases;
    }
    let files: Vec<String> = kernels
        .iter()
        .map(|k| {
            if let Some(l) = &k.label {
                return l.clone();
            }
            std::path::Path::new(&k.path)
                .file_name()
                .map(|f| f.to_string_lossy().into_owned())
                .unwrap_or_else(|| k.path.clone())
        })
        .collect();
    if distinct(&files) {
        return files;
    }
    kernels.iter().map(|k| k.path.clone()).collect()
}

/// Every combination kernel x command line x `plans` (in that nesting), named by what differs:
/// the kernel's release when there are several kernels, the appended parameters when there are
/// several command lines, then the plan's own name when there are several plans. `names`
/// (`-n`), when there are as many as variants, name them all instead.
pub fn build_boot_variants(
    kernels: &[KernelChoice],
    appends: &[String],
    plans: &[VariantPlan],
    names: &[String],
) -> anyhow::Result<Vec<BootVariant>> {
    if kernels.is_empty() {
        return Err(usage("kernel variants need at least one --kernel"));
    }
    let appends: Vec<String> = if appends.is_empty() {
        vec![String::new()]
    } else {
        appends.iter().map(|a| a.trim().to_string()).collect()
    };
    for (i, a) in appends.iter().enumerate() {
        if a.contains(['\n', '\0']) {
            return Err(usage(format!("--append {a:?}: expected one line")));
        }
        if appends[..i].contains(a) {
            return Err(usage(format!("--append {a:?} given twice")));
        }
    }
    for (i, k) in kernels.iter().enumerate() {
        if kernels[..i].iter().any(|o| o.path == k.path) {
            return Err(usage(format!("--kernel {} given twice", k.path)));
        }
    }
    let labels = kernel_labels(kernels);
    let total = kernels.len() * appends.len() * plans.len();
    if !names.is_empty() && names.len() != total {
        return Err(usage(format!(
            "-n/--name given {} times, but there are {total} variants ({} kernel(s) x {} command line(s) x {} other variant(s)); name all or none",
            names.len(),
            kernels.len(),
            appends.len(),
            plans.len()
        )));
    }
    let mut out = Vec::with_capacity(total);
    for (k, label) in kernels.iter().zip(&labels) {
        for a in &appends {
            for p in plans {
                let mut parts = Vec::new();
                if kernels.len() > 1 {
                    parts.push(label.clone());
                }
                if appends.len() > 1 {
                    parts.push(if a.is_empty() {
                        "(no parameters)".to_string()
                    } else {
                        a.clone()
                    });
                }
                if plans.len() > 1 || parts.is_empty() {
                    parts.push(p.name.clone());
                }
                let name = match names.get(out.len()) {
                    Some(n) => n.clone(),
                    None => parts.join(" "),
                };
                out.push(BootVariant {
                    plan: VariantPlan { name, ..p.clone() },
                    boot: BootConfig {
                        kernel: k.path.clone(),
                        release: k.release.clone(),
                        modules: k.modules.clone(),
                        package: k.package.clone(),
                        append: a.clone(),
                        source: k.source.clone(),
                    },
                });
            }
        }
    }
    for (i, v) in out.iter().enumerate() {
        if out[..i].iter().any(|o| o.plan.name == v.plan.name) {
            return Err(usage(format!(
                "two variants would both be called '{}': name them with -n (once per variant)",
                v.plan.name
            )));
        }
    }
    Ok(out)
}

/// The two-level schedule: `boots` boots per variant in `order` (seeded ABBA blocks by default:
/// a permutation of the variants, then its reverse), each boot's slots contiguous: `warmup`
/// warm-ups (block -1), then `runs` timed runs (the boot's block). Same seed, same schedule.
pub fn build_boot_schedule(
    order: Order,
    variants: usize,
    boots: u32,
    runs: u32,
    warmup: u32,
    seed: u64,
) -> (Vec<BootPlan>, Vec<Slot>) {
    let order_of_boots = build_schedule(order, variants, boots, 0, seed);
    let mut plans = Vec::with_capacity(order_of_boots.len());
    let mut slots = Vec::new();
    for (number, b) in order_of_boots.iter().enumerate() {
        let first = slots.len() as u32;
        for i in 0..warmup + runs {
            slots.push(Slot {
                seq: slots.len() as u32,
                variant: b.variant,
                block: if i < warmup { -1 } else { b.block },
                warmup: i < warmup,
            });
        }
        plans.push(BootPlan {
            number: number as u32,
            variant: b.variant,
            block: b.block,
            first_seq: first,
            last_seq: slots.len() as u32 - 1,
        });
    }
    (plans, slots)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn plan(name: &str) -> VariantPlan {
        VariantPlan {
            name: name.into(),
            command: "uname -r".into(),
            parameters: BTreeMap::new(),
            knobs: Vec::new(),
        }
    }

    fn kernel(path: &str, release: &str) -> KernelChoice {
        KernelChoice {
            path: path.into(),
            release: release.into(),
            label: None,
            source: None,
            modules: None,
            package: None,
        }
    }

    #[test]
    fn variants_are_named_by_what_differs() {
        let ks = [
            kernel("/a/vmlinuz-6.1", "6.1"),
            kernel("/b/vmlinuz-6.12", "6.12"),
        ];
        let v = build_boot_variants(&ks, &[], &[plan("uname -r")], &[]).unwrap();
        let names: Vec<&str> = v.iter().map(|x| x.plan.name.as_str()).collect();
        assert_eq!(names, ["6.1", "6.12"]);
        assert_eq!(v[1].boot.kernel, "/b/vmlinuz-6.12");

        let appends = [
            "pti=on".to_string(),
            "pti=on clearcpuid=invpcid".to_string(),
        ];
        let v = build_boot_variants(&ks[..1], &appends, &[plan("x")], &[]).unwrap();
        let names: Vec<&str> = v.iter().map(|x| x.plan.name.as_str()).collect();
        assert_eq!(names, ["pti=on", "pti=on clearcpuid=invpcid"]);
        assert_eq!(v[1].boot.append, "pti=on clearcpuid=invpcid");

        let v = build_boot_variants(&ks, &appends, &[plan("p1"), plan("p2")], &[]).unwrap();
        assert_eq!(v.len(), 8);
        assert_eq!(v[7].plan.name, "6.12 pti=on clearcpuid=invpcid p2");

        let v = build_boot_variants(&ks[..1], &[], &[plan("only")], &[]).unwrap();
        assert_eq!(v[0].plan.name, "only");

        // Same release twice: the file names tell them apart.
        let same = [
            kernel("/a/bzImage-old", "6.13"),
            kernel("/a/bzImage-new", "6.13"),
        ];
        let v = build_boot_variants(&same, &[], &[plan("x")], &[]).unwrap();
        assert_eq!(v[0].plan.name, "bzImage-old");

        let names = ["old".to_string(), "new".to_string()];
        let v = build_boot_variants(&same, &[], &[plan("x")], &names).unwrap();
        assert_eq!(v[1].plan.name, "new");
    }

    #[test]
    fn bad_axes_are_refused() {
        let k = [kernel("/a", "6.1")];
        let e = build_boot_variants(&k, &["a".into(), "a".into()], &[plan("x")], &[]);
        assert!(e.unwrap_err().to_string().contains("given twice"));
        let e = build_boot_variants(&[k[0].clone(), k[0].clone()], &[], &[plan("x")], &[]);
        assert!(e.unwrap_err().to_string().contains("given twice"));
        let e = build_boot_variants(&k, &[], &[plan("x")], &["a".into(), "b".into()]);
        assert!(
            e.unwrap_err()
                .to_string()
                .contains("-n/--name given 2 times")
        );
        let e = build_boot_variants(&[], &[], &[plan("x")], &[]);
        assert!(e.is_err());
    }

    #[test]
    fn boots_in_abba_order_with_contiguous_slots() {
        let (plans, slots) = build_boot_schedule(Order::Abba, 2, 4, 3, 1, 42);
        assert_eq!(plans.len(), 8);
        assert_eq!(slots.len(), 8 * 4);
        assert_eq!(
            (plans.clone(), slots.clone()),
            build_boot_schedule(Order::Abba, 2, 4, 3, 1, 42)
        );
        // Per block of boots: a permutation then its reverse (ABBA or BAAB).
        for b in plans.chunks(4) {
            let v: Vec<usize> = b.iter().map(|p| p.variant).collect();
            assert!(v == [0, 1, 1, 0] || v == [1, 0, 0, 1], "{v:?}");
            assert!(b.iter().all(|p| p.block == b[0].block));
        }
        for p in &plans {
            let mine: Vec<&Slot> = slots.iter().filter(|s| p.contains(s.seq)).collect();
            assert_eq!(mine.len(), 4);
            assert!(mine.iter().all(|s| s.variant == p.variant));
            assert!(mine[0].warmup && mine[0].block == -1);
            assert!(mine[1..].iter().all(|s| !s.warmup && s.block == p.block));
        }
        assert!(slots.windows(2).all(|w| w[1].seq == w[0].seq + 1));
        let (seq, _) = build_boot_schedule(Order::Sequential, 2, 2, 1, 0, 1);
        let v: Vec<usize> = seq.iter().map(|p| p.variant).collect();
        assert_eq!(v, [0, 0, 1, 1]);
    }
}
