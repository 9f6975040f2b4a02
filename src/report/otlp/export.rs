//! OTLP/HTTP export (`--otlp-endpoint`): batches POSTed as protobuf (or OTLP/JSON) to
//! `URL/v1/traces` by one background thread, through a bounded queue. A batch is tried again on a connection
//! failure and on 429, 502, 503 and 504, after the `Retry-After` the receiver asked for or an
//! exponential backoff; what could not be delivered is counted by reason, never dropped
//! silently. Header values (`--otlp-header`) are sent, never printed.

use crate::contract::contract_names;
use crate::http::retry_after;
use std::collections::BTreeMap;
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

/// Batches waiting for the sender; a batch that finds the queue full is not delivered
/// (`queue_full`), so a slow receiver never slows the analysis.
pub const MAX_QUEUED_BATCHES: usize = 64;
/// Tries per batch (the first and its retries).
pub const MAX_EXPORT_ATTEMPTS: u32 = 5;
/// First backoff; each retry waits twice the previous one, at most [`MAX_BACKOFF`].
pub const FIRST_BACKOFF: Duration = Duration::from_millis(250);
pub const MAX_BACKOFF: Duration = Duration::from_secs(8);
/// Longest `Retry-After` honoured; a receiver asking for more gets the batch counted as not
/// delivered (`retry_after_too_long`) rather than a run that waits for it.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(30);
/// Timeout of one request (connect, send, answer).
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// `--otlp-timeout` default: how long the end of the run waits for queued batches.
pub const DEFAULT_FLUSH_TIMEOUT: Duration = Duration::from_secs(15);

contract_names! {
    /// The body encoding (`--otlp-protocol`, named as `OTEL_EXPORTER_OTLP_PROTOCOL` names them).
    #[derive(Default)]
    pub enum Protocol {
        /// `http/protobuf`: binary protobuf, which every OTLP/HTTP receiver accepts.
        #[default]
        HttpProtobuf => "http/protobuf",
        /// `http/json`: the same JSON as the `--otlp` file.
        HttpJson => "http/json",
    }
}

impl Protocol {
    fn content_type(self) -> &'static str {
        match self {
            Protocol::HttpProtobuf => "application/x-protobuf",
            Protocol::HttpJson => "application/json",
        }
    }
}

/// Where and how to send.
#[derive(Debug, Clone)]
pub struct Endpoint {
    /// The URL the batches are POSTed to (`.../v1/traces`).
    pub url: String,
    pub protocol: Protocol,
    /// `--otlp-header` pairs, sent with every request.
    pub headers: Vec<(String, String)>,
    /// How long the end of the run waits for the queue to drain.
    pub flush_timeout: Duration,
}

impl Endpoint {
    /// `base` with `/v1/traces` appended to its path unless the path already ends so; a
    /// query stays after it.
    pub fn traces_url(base: &str) -> String {
        let cut = base.find(['?', '#']).unwrap_or(base.len());
        let (url, rest) = base.split_at(cut);
        let url = url.trim_end_matches('/');
        if url.ends_with("/v1/traces") {
            format!("{url}{rest}")
        } else {
            format!("{url}/v1/traces{rest}")
        }
    }

    /// The URL without user info, query or fragment, for the reports.
    pub fn display_url(&self) -> String {
        display_url(&self.url)
    }
}

/// `scheme://host[:port]/path` of `url`: no `user:password@`, no query, no fragment.
pub fn display_url(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let rest = rest.split(['?', '#']).next().unwrap_or_default();
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    if scheme.is_empty() {
        format!("{host}{path}")
    } else {
        format!("{scheme}://{host}{path}")
    }
}

/// What the sender did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExportStats {
    /// Spans the receiver accepted (a partial success's rejected spans are not among them).
    pub sent_spans: u64,
    /// Requests made, retries included.
    pub requests: u64,
    /// Requests that were retries.
    pub retries: u64,
    /// Spans not delivered, by reason (`queue_full`, `connection_failed`, `http_<status>`,
    /// `rejected_by_receiver`, `retry_after_too_long`, `flush_timeout`).
    pub not_delivered: BTreeMap<String, u64>,
}

impl ExportStats {
    fn lose(&mut self, reason: impl Into<String>, spans: u64) {
        if spans > 0 {
            let slot = self.not_delivered.entry(reason.into()).or_default();
            *slot = slot.saturating_add(spans);
        }
    }

    /// Spans not delivered, every reason together.
    pub fn not_delivered_spans(&self) -> u64 {
        self.not_delivered.values().sum()
    }
}

/// One request's body and the spans in it.
struct Batch {
    body: Vec<u8>,
    spans: u64,
}

/// The sender thread and the queue to it.
pub struct Exporter {
    queue: Option<SyncSender<Batch>>,
    thread: Option<JoinHandle<()>>,
    shared: Arc<Shared>,
}

/// State both sides see: the stats, the deadline set when the run ends, and the spans
/// queued or in flight (what an abandoned sender leaves undelivered).
struct Shared {
    stats: Mutex<ExportStats>,
    deadline: Mutex<Option<Instant>>,
    unsettled_spans: Mutex<u64>,
    settled: Condvar,
}

impl Shared {
    fn stats(&self) -> std::sync::MutexGuard<'_, ExportStats> {
        self.stats
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn unsettled(&self) -> std::sync::MutexGuard<'_, u64> {
        self.unsettled_spans
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A batch of `spans` is delivered or lost.
    fn settle(&self, spans: u64) {
        let mut n = self.unsettled();
        *n = n.saturating_sub(spans);
        self.settled.notify_all();
    }

    fn deadline(&self) -> Option<Instant> {
        *self
            .deadline
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Exporter {
    /// Starts the sender for `endpoint`.
    pub fn spawn(endpoint: Endpoint) -> std::io::Result<Exporter> {
        let (queue, batches) = sync_channel(MAX_QUEUED_BATCHES);
        let shared = Arc::new(Shared {
            stats: Mutex::new(ExportStats::default()),
            deadline: Mutex::new(None),
            unsettled_spans: Mutex::new(0),
            settled: Condvar::new(),
        });
        let thread = std::thread::Builder::new()
            .name("otlp-export".into())
            .spawn({
                let shared = Arc::clone(&shared);
                move || send_all(&endpoint, &batches, &shared)
            })?;
        Ok(Exporter {
            queue: Some(queue),
            thread: Some(thread),
            shared,
        })
    }

    /// Queues one request body holding `spans` spans; a full queue counts them as not
    /// delivered (`queue_full`).
    pub fn send(&self, body: Vec<u8>, spans: u64) {
        let Some(queue) = &self.queue else { return };
        *self.shared.unsettled() += spans;
        match queue.try_send(Batch { body, spans }) {
            Ok(()) => {}
            Err(TrySendError::Full(b) | TrySendError::Disconnected(b)) => {
                self.shared.stats().lose("queue_full", b.spans);
                self.shared.settle(b.spans);
            }
        }
    }

    /// Lets the queue drain for at most `flush_timeout`, then returns what was done. Spans
    /// still queued or in flight then are `flush_timeout`: the sender is left behind (the
    /// process is ending) rather than waited for.
    pub fn finish(mut self, flush_timeout: Duration) -> ExportStats {
        let deadline = Instant::now() + flush_timeout;
        *self
            .shared
            .deadline
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(deadline);
        drop(self.queue.take());
        let mut unsettled = self.shared.unsettled();
        while *unsettled > 0 {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            unsettled = self
                .shared
                .settled
                .wait_timeout(unsettled, left)
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .0;
        }
        let abandoned = std::mem::take(&mut *unsettled);
        drop(unsettled);
        let mut stats = self.shared.stats().clone();
        stats.lose("flush_timeout", abandoned);
        if abandoned == 0
            && let Some(t) = self.thread.take()
        {
            // Every batch is settled: the sender has only its loop's end left.
            let _ = t.join();
            stats = self.shared.stats().clone();
        }
        stats
    }
}

/// The sender thread: each batch in turn until the queue closes.
fn send_all(endpoint: &Endpoint, batches: &Receiver<Batch>, shared: &Shared) {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(REQUEST_TIMEOUT))
        .http_status_as_error(false)
        .build()
        .into();
    while let Ok(batch) = batches.recv() {
        if shared.deadline().is_some_and(|d| Instant::now() >= d) {
            shared.stats().lose("flush_timeout", batch.spans);
            shared.settle(batch.spans);
            continue;
        }
        let (delivered, lost) = deliver(&agent, endpoint, &batch, shared);
        {
            let mut stats = shared.stats();
            stats.sent_spans = stats.sent_spans.saturating_add(delivered);
            if let Some((reason, spans)) = lost {
                stats.lose(reason, spans);
            }
        }
        shared.settle(batch.spans);
    }
}

/// One batch, tried up to [`MAX_EXPORT_ATTEMPTS`] times: the spans delivered, and the
/// spans lost with the reason.
fn deliver(
    agent: &ureq::Agent,
    endpoint: &Endpoint,
    batch: &Batch,
    shared: &Shared,
) -> (u64, Option<(String, u64)>) {
    let mut backoff = FIRST_BACKOFF;
    let mut last_reason = String::from("connection_failed");
    for attempt in 1..=MAX_EXPORT_ATTEMPTS {
        {
            let mut stats = shared.stats();
            stats.requests = stats.requests.saturating_add(1);
            if attempt > 1 {
                stats.retries = stats.retries.saturating_add(1);
            }
        }
        let wait = match post(agent, endpoint, &batch.body, shared) {
            Answer::Accepted { rejected } => {
                let rejected = rejected.min(batch.spans);
                let lost = (rejected > 0).then(|| ("rejected_by_receiver".to_string(), rejected));
                return (batch.spans - rejected, lost);
            }
            Answer::Refused(status) => {
                return (0, Some((format!("http_{status}"), batch.spans)));
            }
            Answer::Retry { reason, after } => {
                last_reason = reason;
                match after {
                    Some(asked) if asked > MAX_RETRY_AFTER => {
                        return (0, Some(("retry_after_too_long".into(), batch.spans)));
                    }
                    Some(asked) => asked,
                    None => backoff,
                }
            }
        };
        if attempt == MAX_EXPORT_ATTEMPTS {
            break;
        }
        if !sleep_until_deadline(wait, shared) {
            return (0, Some(("flush_timeout".into(), batch.spans)));
        }
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
    (0, Some((last_reason, batch.spans)))
}

/// A receiver's answer to one request.
enum Answer {
    /// 2xx; a partial success may have rejected some spans.
    Accepted { rejected: u64 },
    /// A status not worth trying again (400, 401, 404, ...).
    Refused(u16),
    /// A connection failure, or 429/502/503/504, with the wait the receiver asked for.
    Retry {
        reason: String,
        after: Option<Duration>,
    },
}

fn post(agent: &ureq::Agent, endpoint: &Endpoint, body: &[u8], shared: &Shared) -> Answer {
    // Once the run has ended, no request outlives the flush deadline.
    let timeout = match shared.deadline() {
        Some(d) => d
            .saturating_duration_since(Instant::now())
            .min(REQUEST_TIMEOUT),
        None => REQUEST_TIMEOUT,
    };
    let mut request = agent
        .post(&endpoint.url)
        .config()
        .timeout_global(Some(timeout))
        .build()
        .header("Content-Type", endpoint.protocol.content_type());
    for (name, value) in &endpoint.headers {
        request = request.header(name.as_str(), value.as_str());
    }
    let mut response = match request.send(body) {
        Ok(r) => r,
        Err(ureq::Error::Timeout(_)) => {
            return Answer::Retry {
                reason: "timeout".into(),
                after: None,
            };
        }
        Err(_) => {
            return Answer::Retry {
                reason: "connection_failed".into(),
                after: None,
            };
        }
    };
    let status = response.status().as_u16();
    match status {
        200..=299 => {
            let text = response
                .body_mut()
                .with_config()
                .limit(64 * 1024)
                .read_to_string()
                .unwrap_or_default();
            Answer::Accepted {
                rejected: rejected_spans(&text),
            }
        }
        429 | 502 | 503 | 504 => {
            let after = response
                .headers()
                .get("retry-after")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| retry_after_wait(v, SystemTime::now()));
            Answer::Retry {
                reason: format!("http_{status}"),
                after,
            }
        }
        _ => Answer::Refused(status),
    }
}

/// `partialSuccess.rejectedSpans` of an OTLP/JSON response (0 when absent).
fn rejected_spans(text: &str) -> u64 {
    let Ok(v) = serde_json::from_str::<serde_json::Value>(text) else {
        return 0;
    };
    let Some(n) = v.get("partialSuccess").and_then(|p| p.get("rejectedSpans")) else {
        return 0;
    };
    n.as_u64()
        .or_else(|| n.as_str().and_then(|s| s.parse().ok()))
        .unwrap_or(0)
}

/// The wait a `Retry-After` value asks for, seconds or an HTTP-date, from `now`.
fn retry_after_wait(value: &str, now: SystemTime) -> Option<Duration> {
    let now_us = now
        .duration_since(SystemTime::UNIX_EPOCH)
        .ok()
        .and_then(|d| i64::try_from(d.as_micros()).ok())?;
    let asked = retry_after::parse(value, None, now_us)?;
    Some(Duration::from_millis(
        u64::try_from(asked.delay_ms).unwrap_or(0),
    ))
}

/// Sleeps `wait`, in short steps so the end-of-run deadline cuts it; false when the
/// deadline comes first.
fn sleep_until_deadline(wait: Duration, shared: &Shared) -> bool {
    let until = Instant::now() + wait;
    loop {
        let now = Instant::now();
        if shared.deadline().is_some_and(|d| now >= d || until > d) {
            return false;
        }
        if now >= until {
            return true;
        }
        std::thread::sleep((until - now).min(Duration::from_millis(50)));
    }
}
