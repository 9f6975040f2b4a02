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

/// `4096`, `64KiB`, `16MiB`, `1GiB` (also `k`, `KB`, `M`, ...: always binary) -> bytes.
pub fn parse_size(text: &str) -> Result<usize, String> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let value: usize = number
        .parse()
        .map_err(|_| format!("`{text}` is not a size (try 4096, 64KiB, 16MiB, 1GiB)"))?;
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        other => {
            return Err(format!(
                "unknown unit `{other}` in `{text}` (use KiB, MiB or GiB)"
            ));
        }
    };
    value
        .checked_mul(1usize << shift)
        .ok_or_else(|| format!("size `{text}` is out of range"))
}

/// clap value parser: a size of at least one byte.
pub fn positive_size(text: &str) -> Result<usize, String> {
    match parse_size(text)? {
        0 => Err("must be at least 1".into()),
        n => Ok(n),
    }
}

/// A positive finite number (`1.5`), for ratios such as `--backoff-factor`.
pub fn parse_factor(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err(format!("`{text}` is not a positive number")),
    }
}

/// A size as [`parse_size`] reads it back, in the largest binary unit that divides it
/// (`65536` -> `64KiB`): how `--help` shows a default.
pub fn size_text(bytes: usize) -> String {
    for (shift, unit) in [(30, "GiB"), (20, "MiB"), (10, "KiB")] {
        if bytes != 0 && bytes.is_multiple_of(1usize << shift) {
            return format!("{}{unit}", bytes >> shift);
        }
    }
    bytes.to_string()
}

/// A duration as [`parse_duration_ms`] reads it back, in the largest unit that divides it
/// (`600000` -> `10m`): how `--help` shows a default.
pub fn duration_text(ms: i64) -> String {
    for (factor, unit) in [(3_600_000, "h"), (60_000, "m"), (1000, "s")] {
        if ms != 0 && ms % factor == 0 {
            return format!("{}{unit}", ms / factor);
        }
    }
    format!("{ms}ms")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_in_every_unit() {
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert_eq!(parse_size("64KiB").unwrap(), 65_536);
        assert_eq!(parse_size("64k").unwrap(), 65_536);
        assert_eq!(parse_size("16MiB").unwrap(), 16 << 20);
        assert_eq!(parse_size("1 GiB").unwrap(), 1 << 30);
        assert!(parse_size("lots").is_err());
        assert!(parse_size("5TiB").is_err());
        assert!(parse_size("-1").is_err());
        assert!(positive_size("0").is_err());
    }

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
