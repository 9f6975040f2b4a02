//! `Retry-After` (RFC 9110 section 10.2.3) on 429 and 503 responses: the wait a server asked
//! for, as delay-seconds or an HTTP-date (IMF-fixdate, and the obsolete RFC 850 and asctime
//! forms of section 5.6.7).
//!
//! The wait runs from the response's head as captured. An HTTP-date is read against the
//! response's own `Date` header when it has a valid one (both are the server's clock, so a
//! skewed server clock cancels out), else against the capture time of the head. A date in
//! the past is no wait. Unparsable values are no `Retry-After`. Never panics.

use super::Headers;
use crate::timestamp::{days_from_civil, days_in_month};

/// Largest delay-seconds taken as given (about 31 years); a larger one is cut to it so the
/// deadline stays far inside `i64` microseconds.
pub const MAX_RETRY_AFTER_S: i64 = 1_000_000_000;

/// The wait a 429 or 503 response asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryAfter {
    /// The wait in milliseconds, from the response head's capture time (0 for a past date).
    pub delay_ms: i64,
    /// Capture time (µs) before which the client was asked not to send again.
    pub until_us: i64,
    /// Given as an HTTP-date (otherwise delay-seconds).
    pub from_date: bool,
}

impl RetryAfter {
    /// The `Retry-After` of a response with `status` and `headers` whose head was captured
    /// at `head_us`; `None` unless the status is 429 or 503 and the value parses.
    pub fn of_response(status: u16, headers: &Headers, head_us: i64) -> Option<RetryAfter> {
        if !matches!(status, 429 | 503) {
            return None;
        }
        let value = headers.get("retry-after")?;
        let date = headers.get("date").and_then(parse_http_date);
        parse(value, date, head_us)
    }
}

/// `value` of a `Retry-After` field; `date_s` is the response's `Date` (seconds since the
/// epoch), `head_us` the capture time of the response head.
pub fn parse(value: &str, date_s: Option<i64>, head_us: i64) -> Option<RetryAfter> {
    let value = value.trim();
    let (delay_ms, from_date) = if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
        // All digits: delay-seconds (leading zeros allowed, huge values cut).
        let secs = value
            .bytes()
            .try_fold(0i64, |acc, b| {
                acc.checked_mul(10)?.checked_add(i64::from(b - b'0'))
            })
            .unwrap_or(MAX_RETRY_AFTER_S)
            .min(MAX_RETRY_AFTER_S);
        (secs * 1000, false)
    } else {
        let at_s = parse_http_date(value)?;
        let delay_ms = match date_s {
            Some(d) => at_s.saturating_sub(d).saturating_mul(1000),
            None => at_s
                .saturating_mul(1000)
                .saturating_sub(head_us.div_euclid(1000)),
        };
        (
            delay_ms.clamp(0, MAX_RETRY_AFTER_S.saturating_mul(1000)),
            true,
        )
    };
    Some(RetryAfter {
        delay_ms,
        until_us: head_us.saturating_add(delay_ms.saturating_mul(1000)),
        from_date,
    })
}

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// An HTTP-date (RFC 9110 section 5.6.7) as seconds since the epoch: IMF-fixdate
/// `Sun, 06 Nov 1994 08:49:37 GMT`, RFC 850 `Sunday, 06-Nov-94 08:49:37 GMT` (a two-digit
/// year below 70 is 20xx) or asctime `Sun Nov  6 08:49:37 1994`. The weekday is not checked.
pub fn parse_http_date(text: &str) -> Option<i64> {
    let text = text.trim();
    let (day, month, year, time) = if let Some((_, rest)) = text.split_once(", ") {
        let rest = rest.strip_suffix(" GMT")?;
        let (date, time) = rest.rsplit_once(' ')?;
        if let Some((d, rest)) = date.split_once('-') {
            // RFC 850: 06-Nov-94
            let (m, y) = rest.split_once('-')?;
            let y: i64 = number(y, 2)?;
            (
                number(d, 2)?,
                m,
                if y < 70 { 2000 + y } else { 1900 + y },
                time,
            )
        } else {
            // IMF-fixdate: 06 Nov 1994
            let mut parts = date.split(' ');
            let d = number(parts.next()?, 2)?;
            let m = parts.next()?;
            let y = number(parts.next()?, 4)?;
            if parts.next().is_some() {
                return None;
            }
            (d, m, y, time)
        }
    } else {
        // asctime: Sun Nov  6 08:49:37 1994 (day padded with a space)
        let rest = text.get(4..)?;
        if text.as_bytes().get(3) != Some(&b' ') {
            return None;
        }
        let m = rest.get(..3)?;
        let rest = rest.get(3..)?.strip_prefix(' ')?;
        let d = rest.get(..2)?.trim_start();
        let rest = rest.get(2..)?.strip_prefix(' ')?;
        let (time, y) = rest.split_once(' ')?;
        (number(d, 0)?, m, number(y, 4)?, time)
    };
    let month = MONTHS.iter().position(|&m| m == month)? as u32 + 1;
    let day = u32::try_from(day).ok()?;
    if day < 1 || day > days_in_month(year, month) {
        return None;
    }
    let mut hms = time.split(':');
    let h = number(hms.next()?, 2)?;
    let m = number(hms.next()?, 2)?;
    let s = number(hms.next()?, 2)?;
    if hms.next().is_some() || h > 23 || m > 59 || s > 60 {
        return None;
    }
    Some(days_from_civil(year, month, day) * 86_400 + h * 3600 + m * 60 + s)
}

/// ASCII digits as a number: exactly `width` of them, or 1 to 2 when `width` is 0.
fn number(text: &str, width: usize) -> Option<i64> {
    let ok_len = if width == 0 {
        (1..=2).contains(&text.len())
    } else {
        text.len() == width
    };
    if !ok_len || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 1994-11-06T08:49:37Z, the RFC's example.
    const RFC_EXAMPLE_S: i64 = 784_111_777;

    #[test]
    fn the_three_date_forms_of_rfc_9110() {
        for text in [
            "Sun, 06 Nov 1994 08:49:37 GMT",
            "Sunday, 06-Nov-94 08:49:37 GMT",
            "Sun Nov  6 08:49:37 1994",
        ] {
            assert_eq!(parse_http_date(text), Some(RFC_EXAMPLE_S), "{text}");
        }
        assert_eq!(
            parse_http_date("Tue, 01 Dec 2026 22:30:00 GMT"),
            Some(1_796_164_200)
        );
        assert_eq!(parse_http_date("Thursday, 01-Jan-70 00:00:00 GMT"), Some(0));
        assert_eq!(
            parse_http_date("Mon, 01-Jan-35 00:00:00 GMT"),
            parse_http_date("Mon, 01 Jan 2035 00:00:00 GMT")
        );
    }

    #[test]
    fn bad_dates_are_none() {
        for text in [
            "",
            "soon",
            "Sun, 06 Nov 1994 08:49:37",
            "Sun, 06 Nov 1994 08:49:37 UTC",
            "Sun, 31 Feb 1994 08:49:37 GMT",
            "Sun, 06 Foo 1994 08:49:37 GMT",
            "Sun, 06 Nov 1994 24:00:00 GMT",
            "Sun, 6 Nov 1994 08:49:37 GMT",
            "Sun, 06 Nov 1994 08:49 GMT",
            "Sun Nov  6 08:49:37",
            "Sun Nov 06 08:49:37 94",
            "1994-11-06T08:49:37Z",
            "Sun, 06 Nov 1994 08:49:37 GMT extra",
        ] {
            assert_eq!(parse_http_date(text), None, "{text:?}");
        }
    }

    #[test]
    fn delay_seconds_run_from_the_head() {
        let ra = parse("120", None, 5_000_000).unwrap();
        assert_eq!(ra.delay_ms, 120_000);
        assert_eq!(ra.until_us, 125_000_000);
        assert!(!ra.from_date);
        assert_eq!(parse(" 0 ", None, 7).unwrap().until_us, 7);
        // Absurd values are cut, never overflow.
        let huge = parse("99999999999999999999999", None, 0).unwrap();
        assert_eq!(huge.delay_ms, MAX_RETRY_AFTER_S * 1000);
        for bad in ["", "-1", "1.5", "+3", "3s"] {
            assert_eq!(parse(bad, None, 0), None, "{bad:?}");
        }
    }

    #[test]
    fn a_date_is_read_against_the_date_header_else_the_capture_time() {
        let at = "Sun, 06 Nov 1994 08:49:37 GMT";
        // The server's clock says 08:49:35: a wait of 2 s from the head, whatever the
        // capture clock says.
        let head_us = 1_000_000_000_000;
        let ra = parse(at, Some(RFC_EXAMPLE_S - 2), head_us).unwrap();
        assert_eq!((ra.delay_ms, ra.from_date), (2000, true));
        assert_eq!(ra.until_us, head_us + 2_000_000);
        // No Date header: against the capture time of the head (1.5 s before the date).
        let head_us = RFC_EXAMPLE_S * 1_000_000 - 1_500_000;
        let ra = parse(at, None, head_us).unwrap();
        assert_eq!(ra.delay_ms, 1500);
        assert_eq!(ra.until_us, RFC_EXAMPLE_S * 1_000_000);
        // A date already past is no wait.
        let ra = parse(at, Some(RFC_EXAMPLE_S + 60), 9).unwrap();
        assert_eq!((ra.delay_ms, ra.until_us), (0, 9));
    }

    #[test]
    fn only_429_and_503_carry_it() {
        let headers: Headers = [
            ("Retry-After", "3"),
            ("Date", "Sun, 06 Nov 1994 08:49:37 GMT"),
        ]
        .into_iter()
        .collect();
        for status in [429, 503] {
            let ra = RetryAfter::of_response(status, &headers, 0).unwrap();
            assert_eq!(ra.delay_ms, 3000, "{status}");
        }
        for status in [200, 500, 502, 301] {
            assert_eq!(RetryAfter::of_response(status, &headers, 0), None);
        }
        let dated: Headers = [
            ("date", "Sun, 06 Nov 1994 08:49:37 GMT"),
            ("retry-after", "Sun, 06 Nov 1994 08:50:07 GMT"),
        ]
        .into_iter()
        .collect();
        let ra = RetryAfter::of_response(503, &dated, 10).unwrap();
        assert_eq!(
            (ra.delay_ms, ra.until_us, ra.from_date),
            (30_000, 30_000_010, true)
        );
        assert_eq!(RetryAfter::of_response(429, &Headers::default(), 0), None);
    }
}
