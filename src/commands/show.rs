//! `abperf show ID`: design, environment and per-variant summary; `--runs` lists every run.

use crate::cli::DbArgs;
use crate::report::perfstat;
use crate::store::Store;

#[derive(Debug, clap::Args)]
pub struct ShowArgs {
    /// Experiment id, or `latest`
    pub id: String,
    /// Also list every run in schedule order
    #[arg(long)]
    pub runs: bool,
    #[command(flatten)]
    pub db: DbArgs,
}

fn field(env: &serde_json::Value, key: &str) -> String {
    match &env[key] {
        serde_json::Value::Null => "(not available)".into(),
        serde_json::Value::String(s) => s.clone(),
        v => v.to_string(),
    }
}

pub fn run(args: ShowArgs) -> anyhow::Result<i32> {
    let store = Store::open_resolved(args.db.db.as_deref())?;
    let id = store.resolve_id(&args.id)?;
    let exp = store.experiment(id)?;
    let variants = store.variants(id)?;
    let runs = store.runs(id)?;
    let planned = store.schedule(id)?.len();
    println!("experiment {}: {}", exp.id, exp.name);
    println!(
        "  kind {}, status {}, created {}",
        exp.kind,
        exp.status.as_str(),
        exp.created
    );
    println!("  command: {}", shell_words::join(&exp.command_line));
    if let Some(seed) = exp.seed {
        println!(
            "  seed {seed}, {} of {planned} scheduled runs stored",
            runs.len()
        );
    }
    println!("  design: {}", exp.design);
    let env = &exp.environment;
    println!("environment:");
    for key in [
        "kernel",
        "cmdline",
        "cpu_model",
        "cpu_count",
        "mem_total_kib",
        "thp_enabled",
        "cpufreq_governor",
        "clocksource",
        "hostname",
        "abperf_version",
    ] {
        println!("  {key:<18} {}", field(env, key));
    }
    println!("  {:<18} {}", "virtualization", env["virtualization"]);
    println!("variants:");
    for v in &variants {
        println!(
            "  [{}] {}: {}",
            v.position,
            v.name,
            v.command.as_deref().unwrap_or("-")
        );
        for k in &v.knobs {
            println!(
                "      knob {} = {} (original: {})",
                k.path,
                k.value,
                k.original.as_deref().unwrap_or("not recorded")
            );
        }
    }
    println!();
    for v in &variants {
        println!("{}", perfstat::variant_block(v, &runs));
    }
    if args.runs {
        println!(
            "{:>5}  {:<24} {:<7} {:<8} {:>14} {:>12} {:>12} {:>12}",
            "seq", "variant", "warmup", "status", "wall", "user", "sys", "maxrss KiB"
        );
        for r in &runs {
            let name = variants
                .get(r.variant)
                .map(|v| v.name.as_str())
                .unwrap_or("?");
            let t = |k: &str| {
                r.metrics
                    .get(k)
                    .map(|&x| {
                        let (n, u) = perfstat::human(x, "ns");
                        format!("{n} {u}")
                    })
                    .unwrap_or_default()
            };
            println!(
                "{:>5}  {:<24} {:<7} {:<8} {:>14} {:>12} {:>12} {:>12}",
                r.seq,
                name,
                if r.warmup { "yes" } else { "" },
                r.status.as_str(),
                t("wall_ns"),
                t("user_ns"),
                t("sys_ns"),
                r.metrics
                    .get("maxrss_kib")
                    .map(|x| format!("{x:.0}"))
                    .unwrap_or_default()
            );
        }
    }
    Ok(0)
}
