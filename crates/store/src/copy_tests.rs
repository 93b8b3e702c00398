use super::*;
use abperf_model::{Kind, Labels, Metric, NewExperiment, Run, Slot, Variant};

fn run(variant: usize, seq: u32, wall: f64) -> Run {
    let metrics = vec![
        Metric::new("wall_ns", wall, "ns"),
        Metric::new("x", 3.0, ""),
    ];
    Run {
        exit_code: Some(0),
        started_ns: 1,
        ended_ns: 2,
        labels: Labels {
            host: Some(format!("h{variant}")),
            ..Default::default()
        },
        ..Run::ok(seq, variant, metrics)
    }
}

fn sample(store: &mut Store, name: &str) -> i64 {
    let exp = NewExperiment {
        name: name.into(),
        kind: Kind::Run,
        command_line: vec!["abperf".into()],
        design: serde_json::json!({"runs": 1}),
        seed: Some(u64::MAX),
        environment: serde_json::json!({"host": "a"}),
    };
    let slot = |seq, variant| Slot {
        seq,
        variant,
        block: 0,
        warmup: false,
    };
    let id = store
        .create_experiment(
            &exp,
            &[Variant::named("a"), Variant::named("b")],
            &[slot(0, 0), slot(1, 1)],
        )
        .unwrap();
    store.commit_run(id, &run(0, 0, 1.0)).unwrap();
    store.commit_run(id, &run(1, 1, 2.5)).unwrap();
    store.set_status(id, Status::Complete).unwrap();
    id
}

/// The content with every id column left out: what must be equal between stores.
fn without_ids(c: &Content) -> Vec<(String, Vec<Vec<Value>>)> {
    c.tables
        .iter()
        .map(|t| {
            let spec = crate::copy_tables::spec(&t.table).unwrap();
            let is_id = |col: &str| {
                spec.own.is_some_and(|(o, _)| o == col) || spec.refs.iter().any(|(r, _)| *r == col)
            };
            let keep: Vec<usize> = (0..t.columns.len())
                .filter(|&i| !is_id(&t.columns[i]))
                .collect();
            let rows = t
                .rows
                .iter()
                .map(|r| keep.iter().map(|&i| r[i].clone()).collect())
                .collect();
            (t.table.clone(), rows)
        })
        .collect()
}

#[test]
fn every_table_of_the_schema_is_copied_or_left_with_a_reason() {
    let d = tempfile::tempdir().unwrap();
    let s = Store::open(&d.path().join("t.db")).unwrap();
    let mut stmt = s
        .conn()
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        .unwrap();
    let tables: Vec<String> = stmt
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    for t in &tables {
        let copied = TABLES.iter().any(|s| s.name == t);
        let left = NOT_COPIED.iter().any(|(n, _)| n == t);
        assert!(
            copied != left,
            "table {t}: add it to copy_tables::TABLES (how its rows belong to an experiment) \
             or to NOT_COPIED (why not), not both"
        );
    }
    for name in TABLES
        .iter()
        .map(|s| s.name)
        .chain(NOT_COPIED.iter().map(|n| n.0))
    {
        assert!(
            tables.iter().any(|t| t == name),
            "{name} is not a table of the schema"
        );
    }
}

#[test]
fn content_round_trips_under_new_ids() {
    let d = tempfile::tempdir().unwrap();
    let mut a = Store::open(&d.path().join("a.db")).unwrap();
    let mut b = Store::open(&d.path().join("b.db")).unwrap();
    sample(&mut b, "taken");
    sample(&mut b, "taken too");
    let id = sample(&mut a, "x");
    let content = a.read_content(id).unwrap();
    assert_eq!(content.table("run").unwrap().rows.len(), 2);
    let copied = b.write_content(&content, &|| false).unwrap().unwrap();
    assert_eq!(copied, 3);
    let back = b.read_content(copied).unwrap();
    assert_eq!(without_ids(&back), without_ids(&content));
    assert_eq!(back.identity(), content.identity());
    assert_eq!(b.identities().unwrap()[&content.identity()], copied);
    // The runs read back the same through the ordinary loader.
    let (x, y) = (a.load(id).unwrap(), b.load(copied).unwrap());
    assert_eq!(format!("{:?}", x.runs), format!("{:?}", y.runs));
}

#[test]
fn a_running_experiment_is_stored_as_interrupted_and_a_missing_one_is_an_error() {
    let d = tempfile::tempdir().unwrap();
    let mut a = Store::open(&d.path().join("a.db")).unwrap();
    let id = sample(&mut a, "x");
    a.set_status(id, Status::Running).unwrap();
    let content = a.read_content(id).unwrap();
    let copied = a.write_content(&content, &|| false).unwrap().unwrap();
    assert_eq!(a.experiment(copied).unwrap().status, Status::Interrupted);
    let e = a.read_content(99).unwrap_err().to_string();
    assert!(e.contains("no experiment 99"), "{e}");
}

#[test]
fn identity_keeps_to_the_host_of_the_environment() {
    let d = tempfile::tempdir().unwrap();
    let mut a = Store::open(&d.path().join("a.db")).unwrap();
    let id = sample(&mut a, "x");
    let content = a.read_content(id).unwrap();
    let with_env = |env: &str| {
        let mut c = content.clone();
        let rows = c
            .tables
            .iter_mut()
            .find(|t| t.table == "experiment")
            .unwrap();
        let at = rows.column("environment").unwrap();
        rows.rows[0][at] = Value::Text(env.into());
        c.identity()
    };
    let here = with_env(r#"{"hostname":"a"}"#);
    assert_eq!(
        here,
        with_env(r#"{"hostname":"a","sampled":{"during":"the runs"}}"#)
    );
    assert_ne!(here, with_env(r#"{"hostname":"b"}"#));
}

#[test]
fn a_stopped_write_stores_nothing() {
    let d = tempfile::tempdir().unwrap();
    let mut a = Store::open(&d.path().join("a.db")).unwrap();
    let id = sample(&mut a, "x");
    let mut content = a.read_content(id).unwrap();
    // Enough rows to be asked (bins of a table no capture has: only stop() ends it well).
    let columns = [
        "experiment_id",
        "table_seq",
        "grp",
        "key",
        "count",
        "timed",
        "sum_ticks",
        "min_ticks",
        "max_ticks",
    ];
    let mut row = vec![Value::Integer(id)];
    row.extend((0..8).map(Value::Integer));
    content.tables.push(Rows {
        table: "trace_bin".into(),
        columns: columns.iter().map(|c| c.to_string()).collect(),
        rows: vec![row; 5000],
    });
    assert_eq!(a.write_content(&content, &|| true).unwrap(), None);
    assert_eq!(a.list().unwrap().len(), 1);
}

#[test]
fn a_write_that_keeps_ids_reads_back_the_same_content() {
    let d = tempfile::tempdir().unwrap();
    let mut a = Store::open(&d.path().join("a.db")).unwrap();
    sample(&mut a, "first");
    a.delete(1).unwrap();
    let id = sample(&mut a, "second");
    let content = a.read_content(id).unwrap();
    let mut memory = Store::open(std::path::Path::new(":memory:")).unwrap();
    assert_eq!(memory.write_content_keeping_ids(&content).unwrap(), id);
    assert_eq!(memory.read_content(id).unwrap(), content);
    // A name another experiment brought is shared, under its id.
    let mut other = content.clone();
    other.id = id + 100;
    for t in &mut other.tables {
        let spec = crate::copy_tables::spec(&t.table).unwrap();
        for row in &mut t.rows {
            for (c, v) in t.columns.iter().zip(row.iter_mut()) {
                let own = spec
                    .own
                    .is_some_and(|(o, k)| o == c && k != Key::MetricName);
                let refers = spec
                    .refs
                    .iter()
                    .any(|(r, k)| r == c && *k != Key::MetricName);
                if let (true, Value::Integer(i)) = (own || refers, &v) {
                    *v = Value::Integer(i + 100);
                }
            }
        }
    }
    assert_eq!(memory.write_content_keeping_ids(&other).unwrap(), id + 100);
    assert_eq!(memory.list().unwrap().len(), 2);
}

/// `content` written beside its row, a row at a time (as `postgres::lazy` writes it).
fn write_beside_row(store: &Store, content: &Content) -> anyhow::Result<()> {
    let mut beside = store.beside_row(content.id)?;
    for rows in &content.tables {
        for row in &rows.rows {
            beside.row(rows, row)?;
        }
    }
    beside.finish()
}

#[test]
fn content_written_beside_its_row_reads_back_whole_and_settled() {
    let d = tempfile::tempdir().unwrap();
    let mut a = Store::open(&d.path().join("a.db")).unwrap();
    let id = sample(&mut a, "x");
    let content = a.read_content(id).unwrap();
    // The row first, as a reading command's working copy of a server holds it; the rest later.
    let mut memory = Store::open(std::path::Path::new(":memory:")).unwrap();
    let row = content.table("experiment").unwrap().clone();
    memory
        .write_rows_keeping_ids(&[row], &mut BTreeMap::new())
        .unwrap();
    assert!(memory.runs(id).unwrap().is_empty());
    write_beside_row(&memory, &content).unwrap();
    assert_eq!(memory.read_content(id).unwrap(), content);
    let (x, y) = (a.load(id).unwrap(), memory.load(id).unwrap());
    assert_eq!(format!("{:?}", x.runs), format!("{:?}", y.runs));
    // A row that changed since takes the content's values; running without an owner is
    // settled as a copy stores it (interrupted), and content without its row is refused.
    a.set_status(id, Status::Running).unwrap();
    let mut memory = Store::open(std::path::Path::new(":memory:")).unwrap();
    let row = content.table("experiment").unwrap().clone();
    memory
        .write_rows_keeping_ids(&[row], &mut BTreeMap::new())
        .unwrap();
    write_beside_row(&memory, &a.read_content(id).unwrap()).unwrap();
    assert_eq!(memory.experiment(id).unwrap().status, Status::Interrupted);
    let mut headless = content.clone();
    headless.tables.remove(0);
    let e = write_beside_row(&memory, &headless)
        .unwrap_err()
        .to_string();
    assert!(e.contains("no experiment row"), "{e}");
}
