//! PostgreSQL DDL for the tables SQLite declares (`columns`): INTEGER -> BIGINT, REAL -> DOUBLE
//! PRECISION, TEXT -> TEXT, BLOB -> BYTEA, no declared type -> NUMERIC; a table's own id an
//! identity column; a table without a primary key gets a `rowid` identity column (SQLite's
//! hidden one, which its rows are ordered by).

use super::columns::{Column, Kind, Table};

/// The PostgreSQL type of a column of `kind`.
pub fn pg_type(kind: Kind) -> &'static str {
    match kind {
        Kind::Integer => "BIGINT",
        Kind::Real => "DOUBLE PRECISION",
        Kind::Text => "TEXT",
        Kind::Blob => "BYTEA",
        Kind::Numeric => "NUMERIC",
    }
}

pub fn quoted(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

fn list(names: &[String]) -> String {
    names
        .iter()
        .map(|n| quoted(n))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A column's definition: name, type, identity, NOT NULL, DEFAULT.
pub fn column(c: &Column) -> String {
    let mut out = format!("{} {}", quoted(&c.name), pg_type(c.kind));
    if c.identity {
        out.push_str(" GENERATED ALWAYS AS IDENTITY");
    }
    if c.not_null {
        out.push_str(" NOT NULL");
    }
    if let Some(d) = &c.default {
        out.push_str(&format!(" DEFAULT {d}"));
    }
    out
}

/// `CREATE TABLE` with the primary key, UNIQUE constraints and foreign keys.
pub fn create_table(t: &Table) -> String {
    let mut parts: Vec<String> = t.columns.iter().map(column).collect();
    if t.primary_key.is_empty() {
        parts.push("\"rowid\" BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY".into());
    } else {
        parts.push(format!("PRIMARY KEY ({})", list(&t.primary_key)));
    }
    for u in &t.unique {
        parts.push(format!("UNIQUE ({})", list(u)));
    }
    for fk in &t.foreign_keys {
        let to = match fk.to.is_empty() {
            true => String::new(),
            false => format!(" ({})", list(&fk.to)),
        };
        parts.push(format!(
            "FOREIGN KEY ({}) REFERENCES {}{to} ON DELETE {}",
            list(&fk.columns),
            quoted(&fk.table),
            fk.on_delete
        ));
    }
    format!(
        "CREATE TABLE {} (\n    {}\n)",
        quoted(&t.name),
        parts.join(",\n    ")
    )
}

/// `CREATE INDEX IF NOT EXISTS` for each plain index of `t`.
pub fn create_indexes(t: &Table) -> Vec<String> {
    t.indexes
        .iter()
        .map(|(name, columns)| {
            format!(
                "CREATE INDEX IF NOT EXISTS {} ON {} ({})",
                quoted(name),
                quoted(&t.name),
                list(columns)
            )
        })
        .collect()
}

/// `ALTER TABLE ... ADD COLUMN` for a column an older PostgreSQL schema lacks.
pub fn add_column(t: &Table, c: &Column) -> String {
    format!("ALTER TABLE {} ADD COLUMN {}", quoted(&t.name), column(c))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::postgres::columns::tables;

    fn ddl(name: &str) -> String {
        create_table(tables().unwrap().iter().find(|t| t.name == name).unwrap())
    }

    #[test]
    fn types_keys_and_identities_are_mapped() {
        let run = ddl("run");
        assert!(
            run.contains("\"id\" BIGINT GENERATED ALWAYS AS IDENTITY"),
            "{run}"
        );
        assert!(run.contains("\"wall_ns\" NUMERIC,"), "{run}");
        assert!(run.contains("\"status\" NUMERIC NOT NULL"), "{run}");
        assert!(run.contains("UNIQUE (\"experiment_id\", \"seq\")"), "{run}");
        assert!(
            run.contains(
                "FOREIGN KEY (\"experiment_id\") REFERENCES \"experiment\" (\"id\") ON DELETE \
                 CASCADE"
            ),
            "{run}"
        );
        let bin = ddl("trace_bin");
        assert!(bin.contains("\"rowid\" BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY"));
        assert!(bin.contains("\"dist\" BYTEA"), "{bin}");
        let round = ddl("micro_round");
        assert!(
            round.contains("\"adds_per_cycle\" DOUBLE PRECISION,"),
            "{round}"
        );
        assert!(
            round.contains("\"invocation\" BIGINT NOT NULL DEFAULT 0"),
            "{round}"
        );
        let capture = ddl("trace_capture");
        assert!(
            capture.contains("PRIMARY KEY (\"experiment_id\")"),
            "{capture}"
        );
        assert!(!capture.contains("IDENTITY"), "{capture}");
    }
}
