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

/// A NUMERIC value as the server sends it in binary (`numeric_send`), read as [`decode`] reads
/// the text `numeric_out` prints for it ([`text_of`]), so a value reads the same either way
/// without the server formatting every value as text.
pub struct Binary(pub Value);

impl<'a> postgres::types::FromSql<'a> for Binary {
    fn from_sql(
        _: &postgres::types::Type,
        raw: &'a [u8],
    ) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        Ok(Binary(decode(&text_of(raw)?)?))
    }

    fn accepts(ty: &postgres::types::Type) -> bool {
        *ty == postgres::types::Type::NUMERIC
    }
}

/// The text `numeric_out` prints for NUMERIC's binary form `raw`: ndigits, weight, sign and
/// dscale (16 bits each), then ndigits base-10000 digits; the integer part's groups (leading
/// zeros of the first dropped, "0" when there is none), then `dscale` digits after a '.'.
fn text_of(raw: &[u8]) -> Result<String, String> {
    use std::fmt::Write;
    let word = |i: usize| {
        raw.get(2 * i..2 * i + 2)
            .map(|b| u16::from_be_bytes([b[0], b[1]]))
            .ok_or_else(|| "a NUMERIC value cut short".to_string())
    };
    let ndigits = usize::from(word(0)?);
    let weight = i64::from(word(1)? as i16);
    let (sign, dscale) = (word(2)?, usize::from(word(3)?));
    if raw.len() != 8 + 2 * ndigits {
        return Err(format!(
            "a NUMERIC value of {} bytes for {ndigits} digits",
            raw.len()
        ));
    }
    match sign {
        0xC000 => return Ok("NaN".into()),
        0xD000 => return Ok("Infinity".into()),
        0xF000 => return Ok("-Infinity".into()),
        0x0000 | 0x4000 => {}
        _ => return Err(format!("a NUMERIC value of sign {sign:#x}")),
    }
    let digit = |d: i64| match usize::try_from(d) {
        Ok(d) if d < ndigits => match word(4 + d)? {
            g if g > 9999 => Err(format!("a NUMERIC digit {g}")),
            g => Ok(g),
        },
        _ => Ok(0),
    };
    let mut out = String::new();
    if sign == 0x4000 {
        out.push('-');
    }
    if weight < 0 {
        out.push('0');
    }
    for d in 0..=weight {
        let _ = match d {
            0 => write!(out, "{}", digit(d)?),
            _ => write!(out, "{:04}", digit(d)?),
        };
    }
    if dscale > 0 {
        out.push('.');
        let end = out.len() + dscale;
        let mut d = weight + 1;
        while out.len() < end {
            let _ = write!(out, "{:04}", digit(d)?);
            d += 1;
        }
        out.truncate(end);
    }
    Ok(out)
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

    /// NUMERIC's binary form of (weight, sign, dscale, digits).
    fn binary(weight: i16, sign: u16, dscale: u16, digits: &[u16]) -> Vec<u8> {
        let mut raw = Vec::new();
        for w in [digits.len() as u16, weight as u16, sign, dscale] {
            raw.extend(w.to_be_bytes());
        }
        for d in digits {
            raw.extend(d.to_be_bytes());
        }
        raw
    }

    #[test]
    fn binary_numeric_reads_as_its_text() {
        let cases: &[(i16, u16, u16, &[u16], &str)] = &[
            (0, 0, 0, &[], "0"),
            (-1, 0, 0, &[], "0"),
            (0, 0, 1, &[], "0.0"),
            (-1, 0, 2, &[], "0.00"),
            (0, 0, 0, &[7], "7"),
            (1, 0x4000, 0, &[12, 3456], "-123456"),
            (
                4,
                0x4000,
                0,
                &[922, 3372, 368, 5477, 5808],
                "-9223372036854775808",
            ),
            (0, 0, 1, &[3], "3.0"),
            (0, 0, 1, &[2, 5000], "2.5"),
            (-1, 0, 2, &[100], "0.01"),
            (-2, 0x4000, 8, &[15], "-0.00000015"),
            (1, 0, 3, &[1, 2345, 6780], "12345.678"),
            (0, 0xC000, 0, &[], "NaN"),
            (0, 0xD000, 0, &[], "Infinity"),
            (0, 0xF000, 0, &[], "-Infinity"),
        ];
        for (weight, sign, dscale, digits, text) in cases {
            let raw = binary(*weight, *sign, *dscale, digits);
            assert_eq!(text_of(&raw).unwrap(), *text, "{digits:?}");
        }
        assert!(text_of(&[0, 1, 0, 0]).unwrap_err().contains("cut short"));
        assert!(
            text_of(&binary(0, 0, 0, &[10000]))
                .unwrap_err()
                .contains("digit")
        );
        assert!(
            text_of(&binary(0, 0x1234, 0, &[]))
                .unwrap_err()
                .contains("sign")
        );
        let mut long = binary(0, 0, 0, &[1]);
        long.push(0);
        assert!(text_of(&long).is_err());
    }
}
