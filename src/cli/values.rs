//! Parsing of argument values: durations and RFC 3339 times.

/// `500ms`, `2s`, `10m`, `1h` (a bare number means seconds) -> milliseconds.
pub fn parse_duration_ms(text: &str) -> Result<i64, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let value: f64 = number
        .parse()
        .map_err(|_| format!("`{text}` is not a duration (try 500ms, 2s, 10m, 1h)"))?;
    let factor = match unit.trim() {
        "ms" => 1.0,
        "" | "s" | "sec" => 1000.0,
        "m" | "min" => 60_000.0,
        "h" => 3_600_000.0,
        other => {
            return Err(format!(
                "unknown unit `{other}` in `{text}` (use ms, s, m or h)"
            ));
        }
    };
    let ms = value * factor;
    if !ms.is_finite() || !(0.0..=1e15).contains(&ms) {
        return Err(format!("duration `{text}` is out of range"));
    }
    Ok(ms.round() as i64)
}

/// RFC 3339 (`2026-11-29T19:54:08.123Z`, `...+01:00`; a space may replace `T`) -> µs since the epoch.
pub fn parse_rfc3339_us(text: &str) -> Result<i64, String> {
    let bad = || format!("`{text}` is not an RFC 3339 time (e.g. 2026-11-29T19:54:08Z)");
    let b = text.trim().as_bytes();
    let num = |range: std::ops::Range<usize>| -> Result<i64, String> {
        let part = b.get(range).ok_or_else(bad)?;
        if part.is_empty() || !part.iter().all(u8::is_ascii_digit) {
            return Err(bad());
        }
        std::str::from_utf8(part)
            .ok()
            .and_then(|s| s.parse().ok())
            .ok_or_else(bad)
    };
    if b.len() < 20 || b.get(4) != Some(&b'-') || b.get(7) != Some(&b'-') {
        return Err(bad());
    }
    if !matches!(b.get(10), Some(b'T' | b't' | b' '))
        || b.get(13) != Some(&b':')
        || b.get(16) != Some(&b':')
    {
        return Err(bad());
    }
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&month)
        || !(1..=31).contains(&day)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return Err(bad());
    }
    let mut pos = 19;
    let mut micros = 0i64;
    if b.get(pos) == Some(&b'.') {
        pos += 1;
        let start = pos;
        while b.get(pos).is_some_and(u8::is_ascii_digit) {
            pos += 1;
        }
        let digits = b.get(start..pos).ok_or_else(bad)?;
        if digits.is_empty() {
            return Err(bad());
        }
        for i in 0..6 {
            micros = micros * 10 + digits.get(i).map_or(0, |d| i64::from(d - b'0'));
        }
    }
    let offset_s = match b.get(pos) {
        Some(b'Z' | b'z') if pos + 1 == b.len() => 0,
        Some(sign @ (b'+' | b'-')) if pos + 6 == b.len() && b.get(pos + 3) == Some(&b':') => {
            let off = num(pos + 1..pos + 3)? * 3600 + num(pos + 4..pos + 6)? * 60;
            if *sign == b'+' { off } else { -off }
        }
        _ => return Err(bad()),
    };
    let days = days_from_civil(year, month, day);
    let secs = days * 86_400 + hour * 3600 + minute * 60 + second - offset_s;
    Ok(secs * 1_000_000 + micros)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_in_every_unit() {
        assert_eq!(parse_duration_ms("500ms").unwrap(), 500);
        assert_eq!(parse_duration_ms("2s").unwrap(), 2000);
        assert_eq!(parse_duration_ms("2").unwrap(), 2000);
        assert_eq!(parse_duration_ms("10m").unwrap(), 600_000);
        assert_eq!(parse_duration_ms("1.5h").unwrap(), 5_400_000);
        assert!(parse_duration_ms("ten").is_err());
        assert!(parse_duration_ms("5 parsecs").is_err());
    }

    #[test]
    fn rfc3339_with_zone_and_fraction() {
        assert_eq!(parse_rfc3339_us("1970-01-01T00:00:00Z").unwrap(), 0);
        assert_eq!(
            parse_rfc3339_us("1970-01-01T00:00:01.5Z").unwrap(),
            1_500_000
        );
        assert_eq!(parse_rfc3339_us("1970-01-01T01:00:00+01:00").unwrap(), 0);
        assert_eq!(
            parse_rfc3339_us("2026-11-29T19:54:08.123456Z").unwrap(),
            1_795_982_048_123_456
        );
        assert!(parse_rfc3339_us("2026-11-29").is_err());
        assert!(parse_rfc3339_us("2026-13-29T00:00:00Z").is_err());
        assert!(parse_rfc3339_us("2026-11-29T00:00:00").is_err());
    }
}
