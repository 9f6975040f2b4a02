//! `startedDateTime` (ISO 8601 / RFC 3339) -> microseconds since the Unix epoch,
//! and HAR `timings` -> the instants of an exchange.
//!
//! Parsed by hand: the HAR 1.2 spec asks for ISO 8601 with an offset
//! ("2009-07-24T19:20:30.45+01:00"), and real exports vary (`Z`, `+00:00`,
//! `-07:00`, 3 or 6 fraction digits), so the parser is lenient where that is
//! harmless. Never panics; arithmetic saturates.

/// Microseconds since the Unix epoch, or `None` when `s` is not a date-time.
///
/// Accepted: `YYYY-MM-DD[T| ]HH:MM[:SS[.fraction]][Z|±HH[:MM]|±HHMM]`.
/// Without an offset the time is taken as UTC (lenient: some tools omit it).
pub(super) fn parse_datetime_us(s: &str) -> Option<i64> {
    let b = s.trim().as_bytes();
    let year = digits(b, 0, 4)?;
    expect(b, 4, b'-')?;
    let month = digits(b, 5, 2)?;
    expect(b, 7, b'-')?;
    let day = digits(b, 8, 2)?;
    match b.get(10) {
        Some(b'T' | b't' | b' ') => {}
        _ => return None,
    }
    let hour = digits(b, 11, 2)?;
    expect(b, 13, b':')?;
    let minute = digits(b, 14, 2)?;
    let mut pos = 16;
    let mut second = 0;
    if b.get(pos) == Some(&b':') {
        second = digits(b, pos.checked_add(1)?, 2)?;
        pos = pos.checked_add(3)?;
    }
    let mut micros: i64 = 0;
    if matches!(b.get(pos), Some(b'.' | b',')) {
        pos = pos.checked_add(1)?;
        let mut n = 0usize;
        while let Some(d) = b.get(pos).filter(|c| c.is_ascii_digit()) {
            // Digits beyond microseconds are read and dropped.
            if n < 6 {
                micros = micros * 10 + i64::from(d - b'0');
            }
            n = n.checked_add(1)?;
            pos = pos.checked_add(1)?;
        }
        if n == 0 {
            return None;
        }
        for _ in n..6 {
            micros *= 10;
        }
    }
    let offset_s: i64 = match b.get(pos) {
        None => 0,
        Some(b'Z' | b'z') if b.get(pos.checked_add(1)?).is_none() => 0,
        Some(sign @ (b'+' | b'-')) => {
            let oh = digits(b, pos.checked_add(1)?, 2)?;
            let rest = pos.checked_add(3)?;
            let om = match b.get(rest) {
                None => 0,
                Some(b':') if b.len() == rest.checked_add(3)? => {
                    digits(b, rest.checked_add(1)?, 2)?
                }
                Some(_) if b.len() == rest.checked_add(2)? => digits(b, rest, 2)?,
                Some(_) => return None,
            };
            if oh > 23 || om > 59 {
                return None;
            }
            let off = oh * 3600 + om * 60;
            if *sign == b'-' { -off } else { off }
        }
        Some(_) => return None,
    };
    // A leap second (60) is accepted and counts as the next second.
    if !(1..=12).contains(&month)
        || !(1..=31).contains(&day)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return None;
    }
    let days = days_from_civil(year, month, day);
    let secs = days
        .checked_mul(86_400)?
        .checked_add(hour * 3600 + minute * 60 + second)?
        .checked_sub(offset_s)?;
    secs.checked_mul(1_000_000)?.checked_add(micros)
}

/// `n` ASCII digits at `at`, as a number.
fn digits(b: &[u8], at: usize, n: usize) -> Option<i64> {
    let field = b.get(at..at.checked_add(n)?)?;
    field.iter().try_fold(0i64, |acc, c| {
        c.is_ascii_digit().then(|| acc * 10 + i64::from(c - b'0'))
    })
}

fn expect(b: &[u8], at: usize, c: u8) -> Option<()> {
    (b.get(at) == Some(&c)).then_some(())
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's
/// `days_from_civil`); inputs are bounded (year < 10000) so nothing overflows.
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// HAR `timings` in milliseconds; `None` for absent, `-1` ("does not apply")
/// and anything not a finite non-negative number.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(super) struct Timings {
    pub blocked: Option<f64>,
    pub dns: Option<f64>,
    pub connect: Option<f64>,
    pub send: Option<f64>,
    pub wait: Option<f64>,
    pub receive: Option<f64>,
}

/// Instants of one exchange, microseconds since the epoch, in order
/// `start <= request_end <= response_head <= end`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Instants {
    pub start: i64,
    pub request_end: i64,
    pub response_head: i64,
    pub end: i64,
}

/// Milliseconds -> microseconds, for values already known to be finite.
fn ms_to_us(ms: f64) -> i64 {
    // `as` saturates on out-of-range floats: no panic on absurd inputs.
    (ms * 1000.0).round() as i64
}

/// A usable timing value (HAR 1.2 §timings: -1 means "does not apply").
pub(super) fn valid_ms(v: Option<f64>) -> Option<f64> {
    v.filter(|x| x.is_finite() && *x >= 0.0)
}

/// Place the exchange on the time line.
///
/// The entry's total `time` is authoritative when present: HAR 1.2 says
/// `time` is the sum of the timings and that `ssl` is included in `connect`,
/// but mitmproxy adds `ssl` separately, so working backwards from the end
/// (`end - receive` = first response byte, minus `wait` = request sent) gives
/// the right instants under both conventions.
pub(super) fn instants(start: i64, time_ms: Option<f64>, t: &Timings) -> Instants {
    let part = |v: Option<f64>| valid_ms(v).unwrap_or(0.0);
    let total_ms = valid_ms(time_ms).unwrap_or_else(|| {
        part(t.blocked)
            + part(t.dns)
            + part(t.connect)
            + part(t.send)
            + part(t.wait)
            + part(t.receive)
    });
    let end = start.saturating_add(ms_to_us(total_ms));
    let response_head = end
        .saturating_sub(ms_to_us(part(t.receive)))
        .clamp(start, end);
    let request_end = response_head
        .saturating_sub(ms_to_us(part(t.wait)))
        .clamp(start, response_head);
    Instants {
        start,
        request_end,
        response_head,
        end,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_z_millis() {
        // 2023-03-30T00:00:54.250Z = 1680134454.25 (mitmproxy's chrome.json timestamp_start)
        assert_eq!(
            parse_datetime_us("2023-03-30T00:00:54.250Z"),
            Some(1_680_134_454_250_000)
        );
    }

    #[test]
    fn negative_offset() {
        // Charles: 2023-03-29T17:37:42.482-07:00 = 2023-03-30T00:37:42.482Z
        assert_eq!(
            parse_datetime_us("2023-03-29T17:37:42.482-07:00"),
            parse_datetime_us("2023-03-30T00:37:42.482Z")
        );
        assert_eq!(
            parse_datetime_us("2023-03-30T00:37:42.482+0000"),
            parse_datetime_us("2023-03-30T00:37:42.482Z")
        );
    }

    #[test]
    fn micro_fraction_and_plus_offset() {
        assert_eq!(
            parse_datetime_us("2023-07-25T10:42:01.726810+00:00"),
            Some(1_690_281_721_726_810)
        );
        // Nanosecond digits are dropped, not rounded.
        assert_eq!(
            parse_datetime_us("1970-01-01T00:00:00.123456789Z"),
            Some(123_456)
        );
    }

    #[test]
    fn epoch_and_before() {
        assert_eq!(parse_datetime_us("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(parse_datetime_us("1969-12-31T23:59:59Z"), Some(-1_000_000));
        assert_eq!(
            parse_datetime_us("2000-02-29T00:00:00Z"),
            Some(951_782_400_000_000)
        );
    }

    #[test]
    fn rejects_garbage() {
        for s in [
            "",
            "2023",
            "2023-13-01T00:00:00Z",
            "2023-01-01X00:00:00Z",
            "2023-01-01T00:00:00.Z",
            "2023-01-01T00:00:00+5",
            "2023-01-01T00:00:00Zjunk",
            "２０２３-01-01T00:00:00Z",
        ] {
            assert_eq!(parse_datetime_us(s), None, "{s}");
        }
    }

    #[test]
    fn instants_from_total_time() {
        // Charles: dns 43, connect 37 (ssl 26 inside), send 1, wait 24, receive 2, time 107.
        let t = Timings {
            blocked: None,
            dns: Some(43.0),
            connect: Some(37.0),
            send: Some(1.0),
            wait: Some(24.0),
            receive: Some(2.0),
        };
        let i = instants(1_000_000, Some(107.0), &t);
        assert_eq!(i.end, 1_107_000);
        assert_eq!(i.response_head, 1_105_000);
        assert_eq!(i.request_end, 1_081_000);
    }

    #[test]
    fn instants_without_time_and_with_minus_one() {
        let t = Timings {
            blocked: Some(-1.0),
            dns: Some(-1.0),
            connect: Some(f64::NAN),
            send: Some(2.0),
            wait: Some(5.0),
            receive: Some(3.0),
        };
        let i = instants(0, None, &t);
        assert_eq!(
            (i.request_end, i.response_head, i.end),
            (2_000, 7_000, 10_000)
        );
        // Inconsistent timings never put the response before the request.
        let i = instants(0, Some(1.0), &t);
        assert!(
            i.start <= i.request_end
                && i.request_end <= i.response_head
                && i.response_head <= i.end
        );
    }
}
