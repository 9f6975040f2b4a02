//! HAR entries overlap in time, but a HAR lists each one whole. The HTTP stage delivers a
//! capture's events in the order they happened (a request when its last byte is sent, a
//! response's head, body and end when they arrive), and the MCP stage reads them so: a
//! `notifications/cancelled` sent while an earlier call was still waiting must come before
//! that call's abort, or the cancellation finds no open request and the call reads as
//! `NO_RESPONSE` where the same traffic captured on the wire reads `CANCELLED`.
//!
//! So the events of all entries are merged by time. A request counts from its start
//! (`startedDateTime`): a HAR times an aborted request's sending only from its end (no
//! `wait`, no `receive`), which would put the call after its own cancellation. Each exchange
//! keeps its own order (request, head, body, end): an event's time is raised to the latest of
//! the events of its exchange before it, and the sort is stable (ties keep request-time
//! order).

use crate::http::HttpEvent;

/// The capture time an event happened at.
fn time_of(ev: &HttpEvent) -> i64 {
    match ev {
        HttpEvent::Request(r) => r.ts_first_us,
        HttpEvent::ResponseHead { ts_us, .. }
        | HttpEvent::ResponseBody { ts_us, .. }
        | HttpEvent::ResponseEnd { ts_us, .. }
        | HttpEvent::NoResponse { ts_us, .. } => *ts_us,
        HttpEvent::ConnectionClosed(record) => record.flow.last_ts.as_us(),
    }
}

/// Reorders `events` (each exchange's events contiguous, starting with its `Request`, as
/// the entries are read) into time order, each exchange's own order kept.
pub(super) fn by_time(events: &mut Vec<HttpEvent>) {
    let mut keyed: Vec<(i64, HttpEvent)> = Vec::with_capacity(events.len());
    let mut exchange_latest = i64::MIN;
    for ev in events.drain(..) {
        let t = time_of(&ev);
        exchange_latest = if matches!(ev, HttpEvent::Request(_)) {
            t
        } else {
            exchange_latest.max(t)
        };
        keyed.push((exchange_latest, ev));
    }
    keyed.sort_by_key(|(t, _)| *t);
    events.extend(keyed.into_iter().map(|(_, ev)| ev));
}
