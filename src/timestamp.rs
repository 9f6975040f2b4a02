//! Timestamps of the report: microseconds since the Unix epoch (UTC) <-> RFC 3339 text.
//!
//! Output is always `YYYY-MM-DDTHH:MM:SS.ffffffZ` (RFC 3339 section 5.6, UTC, six fraction
//! digits), so text sorts like time. Every `i64` formats without panicking; years outside
//! 0000..=9999 (impossible in a real capture) are written with a sign and more digits.

/// A capture time: microseconds since the Unix epoch (UTC), the one unit of time after the
/// flow stage. Made once where a packet's nanoseconds become stream events, rounded down
/// (as the report writes times), so no later stage converts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct CaptureTime(i64);

impl CaptureTime {
    /// From nanoseconds since the epoch, rounded down to the microsecond.
    pub const fn from_ns(ns: i64) -> CaptureTime {
        CaptureTime(ns.div_euclid(1000))
    }

    pub const fn from_us(us: i64) -> CaptureTime {
        CaptureTime(us)
    }

    /// Microseconds since the epoch.
    pub const fn as_us(self) -> i64 {
        self.0
    }
}

/// Microseconds per day.
const US_PER_DAY: i64 = 86_400_000_000;

/// Days since 1970-01-01 -> (year, month, day) in the proleptic Gregorian calendar.
///
/// Howard Hinnant's `civil_from_days`. For any `i64` microsecond value `days` is within
/// about ±1.1e8, so every intermediate product stays far inside `i64`.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097); // [0, 146096]
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365; // [0, 399]
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100); // [0, 365]
    let mp = (5 * doy + 2) / 153; // [0, 11]
    let day = doy - (153 * mp + 2) / 5 + 1; // [1, 31]
    let month = if mp < 10 { mp + 3 } else { mp - 9 }; // [1, 12]
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month as u32, day as u32)
}

/// (year, month, day) -> days since 1970-01-01; the inverse of [`civil_from_days`].
/// Callers keep `year` within ±1e6 so nothing overflows.
pub(crate) fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let m = i64::from(month);
    let mp = if m > 2 { m - 3 } else { m + 9 };
    let doy = (153 * mp + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn is_leap(year: i64) -> bool {
    year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
}

pub(crate) fn days_in_month(year: i64, month: u32) -> u32 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Formats `ts_us` (µs since the epoch, UTC) as `2026-11-29T19:54:08.123456Z`.
pub fn format_rfc3339_us(ts_us: i64) -> String {
    let days = ts_us.div_euclid(US_PER_DAY);
    let in_day = ts_us.rem_euclid(US_PER_DAY); // [0, US_PER_DAY)
    let (year, month, day) = civil_from_days(days);
    let secs = in_day / 1_000_000;
    let micros = in_day % 1_000_000;
    let (h, m, s) = (secs / 3600, secs / 60 % 60, secs % 60);
    if !(0..=9999).contains(&year) {
        // RFC 3339 has no room for these; ISO 8601's expanded form keeps them readable.
        return format!("{year:+07}-{month:02}-{day:02}T{h:02}:{m:02}:{s:02}.{micros:06}Z");
    }
    // Written digit by digit: the report writes two per row, and `format!` costs ten times more.
    let mut out = String::with_capacity(27);
    push_digits(&mut out, year, 4);
    out.push('-');
    push_digits(&mut out, i64::from(month), 2);
    out.push('-');
    push_digits(&mut out, i64::from(day), 2);
    out.push('T');
    push_digits(&mut out, h, 2);
    out.push(':');
    push_digits(&mut out, m, 2);
    out.push(':');
    push_digits(&mut out, s, 2);
    out.push('.');
    push_digits(&mut out, micros, 6);
    out.push('Z');
    out
}

/// Appends the last `width` decimal digits of `n` (0 <= n), zero-padded.
fn push_digits(out: &mut String, n: i64, width: u32) {
    for place in (0..width).rev() {
        let digit = n / 10i64.pow(place) % 10;
        out.push(char::from(b'0' + digit.unsigned_abs() as u8));
    }
}

/// Why a timestamp given on the command line was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid timestamp {text:?}: {reason} (expected RFC 3339, e.g. 2026-11-29T19:54:08Z)")]
pub struct TimestampError {
    /// The text as given.
    pub text: String,
    /// What was wrong with it.
    pub reason: &'static str,
}

/// Reads exactly `n` ASCII digits at `pos`.
fn digits(b: &[u8], pos: usize, n: usize) -> Option<i64> {
    let slice = b.get(pos..pos.checked_add(n)?)?;
    slice.iter().try_fold(0i64, |acc, &c| {
        c.is_ascii_digit().then(|| acc * 10 + i64::from(c - b'0'))
    })
}

/// Parses an RFC 3339 timestamp (section 5.6) into µs since the epoch, UTC.
///
/// Accepted: `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)`; `t`, `z` and a space instead of
/// `T` (RFC 3339 allows both); a bare date `YYYY-MM-DD` means midnight UTC, and a date-time
/// without an offset is read as UTC, because investigators type these by hand.
/// Fractions beyond microseconds are truncated.
pub fn parse_rfc3339_us(text: &str) -> Result<i64, TimestampError> {
    let err = |reason| TimestampError {
        text: text.to_string(),
        reason,
    };
    let b = text.trim().as_bytes();
    let year = digits(b, 0, 4).ok_or_else(|| err("bad year"))?;
    if b.get(4) != Some(&b'-') || b.get(7) != Some(&b'-') {
        return Err(err("bad date"));
    }
    let month = digits(b, 5, 2).ok_or_else(|| err("bad month"))?;
    let day = digits(b, 8, 2).ok_or_else(|| err("bad day"))?;
    let month = u32::try_from(month).map_err(|_| err("bad month"))?;
    let day = u32::try_from(day).map_err(|_| err("bad day"))?;
    if !(1..=12).contains(&month) {
        return Err(err("month out of range"));
    }
    if day < 1 || day > days_in_month(year, month) {
        return Err(err("day out of range"));
    }
    let days = days_from_civil(year, month, day);
    if b.len() == 10 {
        return Ok(days * US_PER_DAY);
    }
    if !matches!(b.get(10), Some(b'T' | b't' | b' ')) {
        return Err(err("expected 'T' after the date"));
    }
    let h = digits(b, 11, 2).ok_or_else(|| err("bad hour"))?;
    let m = digits(b, 14, 2).ok_or_else(|| err("bad minute"))?;
    let s = digits(b, 17, 2).ok_or_else(|| err("bad second"))?;
    if b.get(13) != Some(&b':') || b.get(16) != Some(&b':') {
        return Err(err("bad time"));
    }
    // 60 is a leap second (RFC 3339 5.7); it is folded into the next second.
    if h > 23 || m > 59 || s > 60 {
        return Err(err("time out of range"));
    }
    let mut pos = 19;
    let mut micros = 0i64;
    if b.get(pos) == Some(&b'.') {
        pos += 1;
        let start = pos;
        while let Some(c) = b.get(pos).filter(|c| c.is_ascii_digit()) {
            if pos - start < 6 {
                micros = micros * 10 + i64::from(c - b'0');
            }
            pos += 1;
        }
        if pos == start {
            return Err(err("empty fraction"));
        }
        for _ in (pos - start)..6 {
            micros *= 10;
        }
    }
    let offset_s = match b.get(pos) {
        None => 0,
        Some(b'Z' | b'z') if pos + 1 == b.len() => 0,
        Some(&sign @ (b'+' | b'-')) if pos + 6 == b.len() => {
            let oh = digits(b, pos + 1, 2).ok_or_else(|| err("bad offset"))?;
            let om = digits(b, pos + 4, 2).ok_or_else(|| err("bad offset"))?;
            if b.get(pos + 3) != Some(&b':') || oh > 23 || om > 59 {
                return Err(err("bad offset"));
            }
            let off = oh * 3600 + om * 60;
            if sign == b'+' { off } else { -off }
        }
        Some(_) => return Err(err("unexpected text after the time")),
    };
    let secs = days * 86_400 + h * 3600 + m * 60 + s - offset_s;
    Ok(secs * 1_000_000 + micros)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn epoch_and_negative_edges() {
        assert_eq!(format_rfc3339_us(0), "1970-01-01T00:00:00.000000Z");
        assert_eq!(format_rfc3339_us(-1), "1969-12-31T23:59:59.999999Z");
        assert_eq!(format_rfc3339_us(1), "1970-01-01T00:00:00.000001Z");
        assert_eq!(
            format_rfc3339_us(-US_PER_DAY),
            "1969-12-31T00:00:00.000000Z"
        );
    }

    #[test]
    fn known_instants() {
        // 2026-11-29T19:54:08.123456Z = 1795982048 s (computed with `date -u -d ... +%s`).
        assert_eq!(
            format_rfc3339_us(1_795_982_048_123_456),
            "2026-11-29T19:54:08.123456Z"
        );
        // Leap day.
        assert_eq!(
            format_rfc3339_us(951_782_400_000_000),
            "2000-02-29T00:00:00.000000Z"
        );
    }

    /// The digit-by-digit writer agrees with `format!` across the range years 0..=9999 cover.
    #[test]
    fn digits_agree_with_format() {
        let reference = |ts: i64| {
            let days = ts.div_euclid(US_PER_DAY);
            let in_day = ts.rem_euclid(US_PER_DAY);
            let (y, mo, d) = civil_from_days(days);
            let (secs, micros) = (in_day / 1_000_000, in_day % 1_000_000);
            let (h, m, s) = (secs / 3600, secs / 60 % 60, secs % 60);
            format!("{y:04}-{mo:02}-{d:02}T{h:02}:{m:02}:{s:02}.{micros:06}Z")
        };
        let first = -62_167_219_200_000_000; // 0000-01-01T00:00:00Z
        let last = 253_402_300_799_999_999; // 9999-12-31T23:59:59.999999Z
        let mut ts = first;
        while ts <= last {
            assert_eq!(format_rfc3339_us(ts), reference(ts), "{ts}");
            ts += 997_331_111_117; // about 11.5 days, odd so every field varies
        }
        assert_eq!(format_rfc3339_us(last), reference(last));
        assert!(format_rfc3339_us(first - 1).starts_with("-00"));
    }

    #[test]
    fn extremes_do_not_panic() {
        assert!(format_rfc3339_us(i64::MIN).starts_with("-2"));
        assert!(format_rfc3339_us(i64::MAX).starts_with("+2"));
    }

    #[test]
    fn parse_round_trips() {
        for ts in [
            0,
            -1,
            1,
            1_795_982_048_123_456,
            951_782_400_000_000,
            -62_135_596_800_000_000, // 0001-01-01
        ] {
            assert_eq!(parse_rfc3339_us(&format_rfc3339_us(ts)), Ok(ts), "{ts}");
        }
    }

    #[test]
    fn parse_variants() {
        let base = 1_795_982_048_000_000;
        assert_eq!(parse_rfc3339_us("2026-11-29T19:54:08Z"), Ok(base));
        assert_eq!(parse_rfc3339_us("2026-11-29 19:54:08"), Ok(base));
        assert_eq!(parse_rfc3339_us("2026-11-29t19:54:08z"), Ok(base));
        assert_eq!(parse_rfc3339_us("2026-11-29T20:54:08+01:00"), Ok(base));
        assert_eq!(parse_rfc3339_us("2026-11-29T18:54:08-01:00"), Ok(base));
        assert_eq!(
            parse_rfc3339_us("2026-11-29T19:54:08.5Z"),
            Ok(base + 500_000)
        );
        assert_eq!(
            parse_rfc3339_us("2026-11-29T19:54:08.123456789Z"),
            Ok(base + 123_456)
        );
        assert_eq!(
            parse_rfc3339_us("2026-11-29"),
            Ok(base - (19 * 3600 + 54 * 60 + 8) * 1_000_000)
        );
    }

    #[test]
    fn parse_rejects() {
        for bad in [
            "",
            "2026",
            "2026-13-01",
            "2026-02-30",
            "2026-11-29T24:00:00Z",
            "2026-11-29T19:54Z",
            "2026-11-29T19:54:08.Z",
            "2026-11-29T19:54:08+0100",
            "2026-11-29T19:54:08Zjunk",
            "２０２６-11-29",
        ] {
            assert!(parse_rfc3339_us(bad).is_err(), "{bad:?} accepted");
        }
        assert_eq!(
            parse_rfc3339_us("2026-02-30").map_err(|e| e.reason),
            Err("day out of range")
        );
    }
}
