//! Wall-clock instants as abperf writes them: UTC civil dates from seconds since the epoch
//! (proleptic Gregorian, Howard Hinnant's civil-from-days), without a date-time crate.

/// (year, month, day, hour, minute, second) in UTC of `secs` seconds since 1970-01-01.
pub fn utc_fields(secs: i64) -> (i64, i64, i64, i64, i64, i64) {
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d, rem / 3600, rem % 3600 / 60, rem % 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_dates() {
        assert_eq!(utc_fields(0), (1970, 1, 1, 0, 0, 0));
        assert_eq!(utc_fields(951_782_400), (2000, 2, 29, 0, 0, 0));
        assert_eq!(utc_fields(1_763_843_461), (2025, 11, 22, 20, 31, 1));
        assert_eq!(utc_fields(-1), (1969, 12, 31, 23, 59, 59));
    }
}
