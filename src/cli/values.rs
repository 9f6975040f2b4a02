//! Parsing of argument values (times use `crate::timestamp`).

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
}
