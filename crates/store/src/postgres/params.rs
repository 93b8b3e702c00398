//! Values as PostgreSQL parameters and back, and as fields of COPY's text format (`bulk`), by
//! the column's kind (`columns::Kind`). A value
//! that does not fit its column (text with a NUL byte, text in an integer or NUMERIC column) is
//! an error saying why; the caller names the table, column and experiment.

use super::columns::Kind;
use super::numeric;
use crate::copy::Value;
use postgres::types::ToSql;

pub type Param = Box<dyn ToSql + Sync>;

/// The placeholder for parameter `n` of a column of `kind`, with its type spelled out.
pub fn placeholder(n: usize, kind: Kind) -> String {
    match kind {
        Kind::Integer => format!("${n}::bigint"),
        Kind::Real => format!("${n}::float8"),
        Kind::Text => format!("${n}::text"),
        Kind::Blob => format!("${n}::bytea"),
        Kind::Numeric => format!("${n}::text::numeric"),
    }
}

/// `column` as a SELECT list item: NUMERIC read as its text.
pub fn selected(column: &str, kind: Kind) -> String {
    let quoted = super::ddl::quoted(column);
    match kind {
        Kind::Numeric => format!("{quoted}::text"),
        _ => quoted,
    }
}

/// `v` as a parameter for a column of `kind`.
pub fn param(v: &Value, kind: Kind) -> Result<Param, String> {
    Ok(match (kind, v) {
        (Kind::Numeric, v) => Box::new(numeric::encode(v)?),
        (Kind::Integer, Value::Null) => Box::new(None::<i64>),
        (Kind::Integer, Value::Integer(i)) => Box::new(*i),
        (Kind::Real, Value::Null) => Box::new(None::<f64>),
        (Kind::Real, Value::Real(f)) => Box::new(*f),
        (Kind::Real, Value::Integer(i)) if (*i as f64) as i64 == *i => Box::new(*i as f64),
        (Kind::Text, Value::Null) => Box::new(None::<String>),
        (Kind::Text, Value::Text(t)) if t.contains('\0') => {
            return Err("text with a NUL byte, which PostgreSQL's TEXT cannot hold".into());
        }
        (Kind::Text, Value::Text(t)) => Box::new(t.clone()),
        (Kind::Blob, Value::Null) => Box::new(None::<Vec<u8>>),
        (Kind::Blob, Value::Blob(b)) => Box::new(b.clone()),
        (kind, v) => return Err(format!("{v:?} does not fit a {kind:?} column")),
    })
}

/// Append `v` to `line` as a field of COPY's text format for a column of `kind`: what [`param`]
/// accepts, spelled as PostgreSQL reads it back to the same value (floats in their shortest
/// exact digits, bytes as `\\x` hex (its backslash escaped), `\N` for NULL, text with its backslash, tab, newline
/// and carriage return escaped).
pub fn copy_field(line: &mut String, v: &Value, kind: Kind) -> Result<(), String> {
    use std::fmt::Write;
    match (kind, v) {
        (_, Value::Null) => line.push_str("\\N"),
        (Kind::Numeric, v) => line.push_str(&numeric::encode(v)?.unwrap_or_default()),
        (Kind::Integer, Value::Integer(i)) => {
            let _ = write!(line, "{i}");
        }
        (Kind::Real, Value::Real(f)) => real(line, *f),
        (Kind::Real, Value::Integer(i)) if (*i as f64) as i64 == *i => real(line, *i as f64),
        (Kind::Text, Value::Text(t)) if t.contains('\0') => {
            return Err("text with a NUL byte, which PostgreSQL's TEXT cannot hold".into());
        }
        (Kind::Text, Value::Text(t)) => {
            for c in t.chars() {
                match c {
                    '\\' => line.push_str("\\\\"),
                    '\t' => line.push_str("\\t"),
                    '\n' => line.push_str("\\n"),
                    '\r' => line.push_str("\\r"),
                    c => line.push(c),
                }
            }
        }
        (Kind::Blob, Value::Blob(b)) => {
            line.push_str("\\\\x");
            for byte in b {
                let _ = write!(line, "{byte:02x}");
            }
        }
        (kind, v) => return Err(format!("{v:?} does not fit a {kind:?} column")),
    }
    Ok(())
}

/// A float8 as COPY text: Infinity, -Infinity, NaN, or the shortest digits that read back to it.
fn real(line: &mut String, f: f64) {
    use std::fmt::Write;
    match f {
        f if f.is_nan() => line.push_str("NaN"),
        f if f.is_infinite() && f > 0.0 => line.push_str("Infinity"),
        f if f.is_infinite() => line.push_str("-Infinity"),
        f => {
            let _ = write!(line, "{f:?}");
        }
    }
}

/// Column `at` of `row`, read as a value of `kind`.
pub fn value(row: &postgres::Row, at: usize, kind: Kind) -> anyhow::Result<Value> {
    let or_null = |v: Option<Value>| v.unwrap_or(Value::Null);
    Ok(match kind {
        Kind::Integer => or_null(row.try_get::<_, Option<i64>>(at)?.map(Value::Integer)),
        Kind::Real => or_null(row.try_get::<_, Option<f64>>(at)?.map(Value::Real)),
        Kind::Text => or_null(row.try_get::<_, Option<String>>(at)?.map(Value::Text)),
        Kind::Blob => or_null(row.try_get::<_, Option<Vec<u8>>>(at)?.map(Value::Blob)),
        Kind::Numeric => match row.try_get::<_, Option<&str>>(at)? {
            Some(text) => numeric::decode(text).map_err(anyhow::Error::msg)?,
            None => Value::Null,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_that_do_not_fit_are_refused() {
        let nul = param(&Value::Text("a\0b".into()), Kind::Text)
            .err()
            .unwrap();
        assert!(nul.contains("NUL"), "{nul}");
        assert!(param(&Value::Text("x".into()), Kind::Integer).is_err());
        assert!(param(&Value::Real(0.5), Kind::Integer).is_err());
        assert!(param(&Value::Integer(3), Kind::Real).is_ok());
        assert!(param(&Value::Blob(vec![1]), Kind::Numeric).is_err());
        assert_eq!(placeholder(3, Kind::Numeric), "$3::text::numeric");
    }

    #[test]
    fn copy_fields_are_escaped_and_exact() {
        let field = |v: Value, kind: Kind| {
            let mut line = String::new();
            copy_field(&mut line, &v, kind).map(|()| line)
        };
        let text = field(Value::Text("a\\b\tc\nd\re".into()), Kind::Text).unwrap();
        assert_eq!(text, "a\\\\b\\tc\\nd\\re");
        assert!(field(Value::Text("a\0b".into()), Kind::Text).is_err());
        assert_eq!(field(Value::Null, Kind::Text).unwrap(), "\\N");
        assert_eq!(field(Value::Null, Kind::Numeric).unwrap(), "\\N");
        assert_eq!(
            field(Value::Blob(vec![0, 255]), Kind::Blob).unwrap(),
            "\\\\x00ff"
        );
        assert_eq!(field(Value::Real(-0.0), Kind::Real).unwrap(), "-0.0");
        assert_eq!(field(Value::Real(0.1), Kind::Real).unwrap(), "0.1");
        assert_eq!(field(Value::Real(1e300), Kind::Real).unwrap(), "1e300");
        assert_eq!(
            field(Value::Real(f64::NEG_INFINITY), Kind::Real).unwrap(),
            "-Infinity"
        );
        assert_eq!(field(Value::Integer(3), Kind::Real).unwrap(), "3.0");
        assert_eq!(field(Value::Real(2.5), Kind::Numeric).unwrap(), "2.5");
        assert!(field(Value::Real(0.5), Kind::Integer).is_err());
        assert!(field(Value::Blob(vec![1]), Kind::Numeric).is_err());
    }
}
