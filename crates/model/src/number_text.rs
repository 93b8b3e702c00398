//! Numbers as a person reads them in a table or a sentence.

/// `x` rounded to an integer with thousands separators (`1,234,567`; `-` when not finite).
pub fn thousands(x: f64) -> String {
    if !x.is_finite() {
        return "-".into();
    }
    let s = format!("{:.0}", x.abs());
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    if x < 0.0 && out != "0" {
        format!("-{out}")
    } else {
        out
    }
}

#[cfg(test)]
mod tests {
    use super::thousands;

    #[test]
    fn separators_signs_and_non_numbers() {
        assert_eq!(thousands(1_234_567.4), "1,234,567");
        assert_eq!(thousands(999.0), "999");
        assert_eq!(thousands(-4_362.0), "-4,362");
        assert_eq!(thousands(-0.2), "0");
        assert_eq!(thousands(f64::NAN), "-");
    }
}
