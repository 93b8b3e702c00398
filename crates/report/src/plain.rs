//! Results that are no experiment report: the checks of `abperf doctor` ([`super::doctor`]), the
//! cached kernels and the KVM probe of `abperf vm` ([`super::vm`]), the built-in workloads of
//! `abperf workload` ([`super::workloads`]). Their
//! commands offer two formats ([`PlainFormat`]): text for a terminal, or the result itself as
//! pretty JSON; each result renders both through the [`Plain`] trait.

/// The formats of the commands whose results are no experiment report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PlainFormat {
    Text,
    Json,
}

/// A result in both plain formats.
pub trait Plain {
    /// What a terminal shows, every line ended.
    fn text(&self) -> String;

    /// The result as one pretty-printed JSON document (no final newline).
    fn json(&self) -> anyhow::Result<String>;
}

impl PlainFormat {
    /// `x` in this format, every line ended.
    pub fn render(self, x: &dyn Plain) -> anyhow::Result<String> {
        Ok(match self {
            PlainFormat::Text => x.text(),
            PlainFormat::Json => format!("{}\n", x.json()?),
        })
    }
}
