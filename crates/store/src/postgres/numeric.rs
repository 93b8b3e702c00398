//! Values of the columns without a declared type (`run.status`, `run.wall_ns`..,
//! `metric.value`) as PostgreSQL NUMERIC text: an Integer as its decimal digits, a Real as a
//! plain decimal that always has a '.' (or NaN, Infinity, -Infinity). Read back, text with a
//! '.' (or NaN/Infinity) is a Real and any other an Integer, so the value and its type survive.
//! NUMERIC has no negative zero, but it keeps the number of digits written after the point:
//! -0.0 is written `0.00`, which no other value is written as (the shortest digits never end in
//! a 0 after the point, and 0.0 is `0.0`).

use crate::copy::Value;

/// The text standing for -0.0.
const NEGATIVE_ZERO: &str = "0.00";

/// The NUMERIC text of `v`; an error for what NUMERIC cannot hold (text, bytes).
pub fn encode(v: &Value) -> Result<Option<String>, String> {
    match v {
        Value::Null => Ok(None),
        Value::Integer(i) => Ok(Some(i.to_string())),
        Value::Real(f) => real(*f).map(Some),
        Value::Text(_) => Err("text cannot be stored in a NUMERIC column".into()),
        Value::Blob(_) => Err("bytes cannot be stored in a NUMERIC column".into()),
    }
}

fn real(f: f64) -> Result<String, String> {
    if f.is_nan() {
        return Ok("NaN".into());
    }
    if f.is_infinite() {
        return Ok(if f > 0.0 { "Infinity" } else { "-Infinity" }.into());
    }
    if f == 0.0 && f.is_sign_negative() {
        return Ok(NEGATIVE_ZERO.into());
    }
    // Display writes the shortest digits that read back to the same f64, never an exponent.
    let mut text = f.to_string();
    if !text.contains('.') {
        text.push_str(".0");
    }
    Ok(text)
}

/// The value NUMERIC text `text` stands for.
pub fn decode(text: &str) -> Result<Value, String> {
    if text == NEGATIVE_ZERO {
        return Ok(Value::Real(-0.0));
    }
    let special = matches!(text, "NaN" | "Infinity" | "-Infinity");
    if special || text.contains('.') {
        return text
            .parse::<f64>()
            .map(Value::Real)
            .map_err(|e| format!("NUMERIC {text} is not a number ({e})"));
    }
    text.parse::<i64>()
        .map(Value::Integer)
        .map_err(|e| format!("NUMERIC {text} is not a 64-bit integer ({e})"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(v: Value) -> Value {
        decode(&encode(&v).unwrap().unwrap()).unwrap()
    }

    #[test]
    fn values_and_types_survive() {
        for v in [
            Value::Integer(i64::MIN),
            Value::Integer(i64::MAX),
            Value::Integer(0),
            Value::Real(0.1),
            Value::Real(0.0),
            Value::Real(-0.0),
            Value::Real(0.01),
            Value::Real(1e300),
            Value::Real(5e-324),
            Value::Real(-1.5e-7),
            Value::Real(3.0),
            Value::Real(f64::MAX),
            Value::Real(f64::INFINITY),
            Value::Real(f64::NEG_INFINITY),
        ] {
            assert_eq!(format!("{:?}", round_trip(v.clone())), format!("{v:?}"));
        }
        assert!(matches!(round_trip(Value::Real(f64::NAN)), Value::Real(f) if f.is_nan()));
        assert_eq!(encode(&Value::Real(1e300)).unwrap().unwrap().len(), 303);
        assert_eq!(encode(&Value::Real(3.0)).unwrap().unwrap(), "3.0");
        assert_eq!(encode(&Value::Null).unwrap(), None);
    }

    #[test]
    fn what_numeric_cannot_hold_is_refused_and_other_numbers_are_not_read() {
        assert_eq!(encode(&Value::Real(-0.0)).unwrap().unwrap(), "0.00");
        assert!(encode(&Value::Text("x".into())).is_err());
        assert!(
            decode("99999999999999999999")
                .unwrap_err()
                .contains("64-bit")
        );
        assert!(decode("1e5").is_err());
    }
}
