//! Which tables hold an experiment's content, how their rows are found from the experiment's
//! id, and which of their columns are ids that a copy must renumber (`copy`).
//!
//! Every table of the schema is either here ([`TABLES`]) or in [`NOT_COPIED`] with the reason;
//! a unit test fails when a migration adds a table that is in neither.

/// What an id column refers to, renumbered when the rows go into another store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Key {
    Experiment,
    Variant,
    Run,
    Boot,
    /// `metric_name.id`: interned names, looked up (or added) by name, unit and direction.
    MetricName,
}

/// One table of an experiment's content.
#[derive(Debug)]
pub struct TableSpec {
    pub name: &'static str,
    /// The rows of experiment `?1`, as a WHERE clause and an ORDER BY clause.
    pub rows: &'static str,
    pub order: &'static str,
    /// The table's own id column and what it numbers (new ids in the target store).
    pub own: Option<(&'static str, Key)>,
    /// Columns that refer to ids of other tables.
    pub refs: &'static [(&'static str, Key)],
}

const RUNS: &str = "run_id IN (SELECT id FROM run WHERE experiment_id = ?1)";
const VARIANTS: &str = "variant_id IN (SELECT id FROM variant WHERE experiment_id = ?1)";

/// The tables of an experiment, in an order that inserts every row after the rows it refers to.
pub const TABLES: &[TableSpec] = &[
    TableSpec {
        name: "experiment",
        rows: "id = ?1",
        order: "id",
        own: Some(("id", Key::Experiment)),
        refs: &[],
    },
    TableSpec {
        name: "variant",
        rows: "experiment_id = ?1",
        order: "id",
        own: Some(("id", Key::Variant)),
        refs: &[("experiment_id", Key::Experiment)],
    },
    TableSpec {
        name: "slot",
        rows: "experiment_id = ?1",
        order: "seq",
        own: None,
        refs: &[
            ("experiment_id", Key::Experiment),
            ("variant_id", Key::Variant),
        ],
    },
    TableSpec {
        name: "run",
        rows: "experiment_id = ?1",
        order: "id",
        own: Some(("id", Key::Run)),
        refs: &[("experiment_id", Key::Experiment)],
    },
    TableSpec {
        name: "metric_name",
        rows: "id IN (SELECT name_id FROM metric WHERE run_id IN \
               (SELECT id FROM run WHERE experiment_id = ?1))",
        order: "id",
        own: Some(("id", Key::MetricName)),
        refs: &[],
    },
    TableSpec {
        name: "metric",
        rows: RUNS,
        order: "run_id, pos",
        own: None,
        refs: &[("run_id", Key::Run), ("name_id", Key::MetricName)],
    },
    TableSpec {
        name: "run_label",
        rows: RUNS,
        order: "run_id",
        own: None,
        refs: &[("run_id", Key::Run)],
    },
    TableSpec {
        name: "import_run",
        rows: RUNS,
        order: "run_id",
        own: None,
        refs: &[("run_id", Key::Run)],
    },
    TableSpec {
        name: "import_variant_summary",
        rows: VARIANTS,
        order: "variant_id, name",
        own: None,
        refs: &[("variant_id", Key::Variant)],
    },
    TableSpec {
        name: "boot_plan",
        rows: "experiment_id = ?1",
        order: "number",
        own: None,
        refs: &[
            ("experiment_id", Key::Experiment),
            ("variant_id", Key::Variant),
        ],
    },
    TableSpec {
        name: "boot",
        rows: "experiment_id = ?1",
        order: "id",
        own: Some(("id", Key::Boot)),
        refs: &[("experiment_id", Key::Experiment)],
    },
    TableSpec {
        name: "boot_run",
        rows: RUNS,
        order: "run_id",
        own: None,
        refs: &[("run_id", Key::Run), ("boot_id", Key::Boot)],
    },
    TableSpec {
        name: "micro_round",
        rows: VARIANTS,
        order: "variant_id, round",
        own: None,
        refs: &[("variant_id", Key::Variant)],
    },
    TableSpec {
        name: "micro_finding",
        rows: "experiment_id = ?1",
        order: "position",
        own: None,
        refs: &[("experiment_id", Key::Experiment)],
    },
    TableSpec {
        name: "trace_capture",
        rows: "experiment_id = ?1",
        order: "experiment_id",
        own: None,
        refs: &[("experiment_id", Key::Experiment)],
    },
    TableSpec {
        name: "trace_table",
        rows: "experiment_id = ?1",
        order: "seq",
        own: None,
        refs: &[("experiment_id", Key::Experiment)],
    },
    TableSpec {
        name: "trace_bin",
        rows: "experiment_id = ?1",
        order: "table_seq, rowid",
        own: None,
        refs: &[("experiment_id", Key::Experiment)],
    },
    TableSpec {
        name: "profile",
        rows: "experiment_id = ?1",
        order: "seq",
        own: None,
        refs: &[
            ("experiment_id", Key::Experiment),
            ("variant_id", Key::Variant),
        ],
    },
    TableSpec {
        name: "kernel_provenance",
        rows: VARIANTS,
        order: "variant_id",
        own: None,
        refs: &[("variant_id", Key::Variant)],
    },
    TableSpec {
        name: "fleet_host",
        rows: "experiment_id = ?1",
        order: "pos",
        own: None,
        refs: &[("experiment_id", Key::Experiment)],
    },
];

/// The tables a copy leaves behind, and why.
pub const NOT_COPIED: &[(&str, &str)] = &[
    (
        "experiment_owner",
        "the process running it in the source store; nothing runs the copy",
    ),
    (
        "tune_session",
        "the source machine's journal of settings to restore, not measured data",
    ),
    (
        "tune_setting",
        "the source machine's journal of settings to restore, not measured data",
    ),
    (
        "trace_event_cost",
        "a per-machine calibration cache; each capture keeps the cost it used",
    ),
    (
        "id_high_water",
        "the target store's own record of the ids it handed out",
    ),
];

/// The spec of table `name`.
pub fn spec(name: &str) -> Option<&'static TableSpec> {
    TABLES.iter().find(|t| t.name == name)
}
