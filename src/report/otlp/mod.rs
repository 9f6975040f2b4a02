//! OpenTelemetry traces (report-schema.md section 6): every exchange row as a span, written
//! as OTLP/JSON lines (`--otlp PATH`, one `ExportTraceServiceRequest` per line, as the
//! Collector's file exporter writes them) and sent to an OTLP/HTTP receiver
//! (`--otlp-endpoint`), as rows are released.
//!
//! A request that carried a valid `_meta.traceparent` joins the caller's trace under the
//! caller's span; every other row of a session sits in the session's trace under a session
//! root span, written at the end of the run. Retries and continuations link to the span of
//! the exchange they repeat or continue. Memory follows the open links and sessions, each
//! under a named limit.

mod encoder;
mod export;
mod ids;
mod json;
mod model;
mod proto;
mod span;
#[cfg(test)]
mod tests;

pub use export::{
    DEFAULT_FLUSH_TIMEOUT, Endpoint, ExportStats, MAX_EXPORT_ATTEMPTS, MAX_QUEUED_BATCHES,
    Protocol, display_url,
};
pub use ids::{RunKey, session_root_span_id, session_trace_id};

use super::ReportError;
use super::output::PartialFile;
use crate::hashing::HashMap;
use crate::mcp::{Exchange, RetryOrigin};
use arcstr::ArcStr;
use encoder::{Batch, Encoder, Outputs, PendingSpan};
use export::Exporter;
use model::{
    Hex, KeyValue, Resource, SPAN_KIND_INTERNAL, STATUS_UNSET, Scope, Span, Status, Text, U64Text,
};
use span::{LinkTarget, Placement, SpanDraft, link, link_targets, us_to_ns};
use std::collections::VecDeque;
use std::hash::BuildHasher;
use std::path::PathBuf;

/// `--otlp-max-events` default: SSE events written per span.
pub const DEFAULT_MAX_EVENTS: usize = 128;
/// Spans per `ExportTraceServiceRequest` (one line, one POST).
pub const SPANS_PER_REQUEST: usize = 128;
/// `--otlp-max-link-targets` default: exchanges whose trace is remembered for the links of later rows (a retry comes within the
/// repeat window); an older target's link is written without it (`links_unresolved`).
pub const MAX_LINK_TARGETS: usize = 262_144;
/// `--otlp-max-held-spans` default: spans held until the exchange they link to is released (a retry of a request that is
/// still open); past it a span is written without its link (`links_unresolved`).
pub const MAX_HELD_SPANS: usize = 65_536;
/// `--otlp-max-session-roots` default: sessions whose root span is kept until the end of the run; past it every root held so
/// far is written early (`session_roots_written_early`), and a session that goes on gets its
/// root again, with the same id, at the end.
pub const MAX_SESSION_ROOTS: usize = 100_000;

/// The instrumentation scope: this tool.
const SCOPE: Scope = Scope {
    name: "mcp-trace",
    version: env!("CARGO_PKG_VERSION"),
};

/// `service.name` when the client never said its `clientInfo.name`.
const UNKNOWN_SERVICE: &str = "unknown_service";

/// The sink's bounds on what it holds between rows (see the constants).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OtlpLimits {
    pub link_targets: usize,
    pub held_spans: usize,
    pub session_roots: usize,
}

impl Default for OtlpLimits {
    fn default() -> Self {
        OtlpLimits {
            link_targets: MAX_LINK_TARGETS,
            held_spans: MAX_HELD_SPANS,
            session_roots: MAX_SESSION_ROOTS,
        }
    }
}

/// Where the spans go.
#[derive(Debug, Clone, Default)]
pub struct OtlpOptions {
    /// `--otlp PATH`.
    pub path: Option<PathBuf>,
    /// `--otlp-endpoint URL` with its headers.
    pub endpoint: Option<Endpoint>,
    /// The inputs' file names, in order: span ids derive from them.
    pub inputs: Vec<String>,
    pub limits: OtlpLimits,
}

/// What the export did, for the run summary and the terminal summary.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OtlpReport {
    /// Exchange spans, and session root spans (a root written early counts again).
    pub spans: u64,
    pub session_spans: u64,
    /// `ExportTraceServiceRequest`s made (lines of the file).
    pub requests: u64,
    pub links: u64,
    /// Links written without their target (too old, or the run ended first).
    pub links_unresolved: u64,
    pub session_roots_written_early: u64,
    /// `--otlp PATH`, when given.
    pub file: Option<String>,
    /// `--otlp-endpoint` (shown without credentials) and what was delivered.
    pub endpoint: Option<(String, ExportStats)>,
}

impl OtlpReport {
    /// The run summary's `otlp` object.
    pub fn to_json(&self) -> serde_json::Value {
        let endpoint = self.endpoint.as_ref().map(|(url, s)| {
            serde_json::json!({
                "url": url,
                "sent_spans": s.sent_spans,
                "requests": s.requests,
                "retries": s.retries,
                "not_delivered_spans": s.not_delivered_spans(),
                "not_delivered": s.not_delivered,
            })
        });
        serde_json::json!({
            "spans": self.spans,
            "session_spans": self.session_spans,
            "requests": self.requests,
            "links": self.links,
            "links_unresolved": self.links_unresolved,
            "session_roots_written_early": self.session_roots_written_early,
            "file": self.file,
            "endpoint": endpoint,
        })
    }

    /// Lines for the terminal summary.
    pub fn text(&self) -> String {
        let mut out = String::from("OpenTelemetry\n");
        out.push_str(&format!(
            "  {} spans ({} exchanges, {} session roots), {} links",
            self.spans + self.session_spans,
            self.spans,
            self.session_spans,
            self.links
        ));
        if self.links_unresolved > 0 {
            out.push_str(&format!(
                " ({} without their target)",
                self.links_unresolved
            ));
        }
        out.push('\n');
        if let Some(path) = &self.file {
            out.push_str(&format!("  written to {path}\n"));
        }
        if let Some((url, s)) = &self.endpoint {
            out.push_str(&format!(
                "  sent to {url}: {} spans delivered in {} requests ({} retries)",
                s.sent_spans, s.requests, s.retries
            ));
            let lost = s.not_delivered_spans();
            if lost > 0 {
                let reasons: Vec<String> = s
                    .not_delivered
                    .iter()
                    .map(|(r, n)| format!("{r} {n}"))
                    .collect();
                out.push_str(&format!(", {lost} NOT delivered ({})", reasons.join(", ")));
            }
            out.push('\n');
        }
        out
    }
}

/// The resource of a span: the observed client.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct Service {
    name: Option<String>,
    version: Option<String>,
}

impl Service {
    fn of(row: &Exchange) -> Service {
        Service {
            name: row.client_name.clone(),
            version: row.client_version.clone(),
        }
    }

    fn resource(&self) -> Resource {
        let name = match &self.name {
            Some(n) => Text::Owned(n.clone()),
            None => Text::Static(UNKNOWN_SERVICE),
        };
        let mut attributes = vec![KeyValue::str("service.name", name)];
        if let Some(v) = &self.version {
            attributes.push(KeyValue::str("service.version", v.clone()));
        }
        Resource { attributes }
    }
}

/// A span waiting for the trace of the exchange it links to.
struct Held {
    service: Service,
    span: SpanDraft,
    target: LinkTarget,
    origin: RetryOrigin,
}

/// A session's root span, grown as its rows pass.
#[derive(Debug, Clone)]
struct Root {
    trace_id: [u8; 16],
    span_id: [u8; 8],
    service: Service,
    first_us: i64,
    last_us: i64,
    session_id: Option<ArcStr>,
    protocol_version: Option<String>,
    client_addr: ArcStr,
    server_addr: ArcStr,
    exchanges: u64,
    failures: u64,
}

/// An [`OtlpSink`] whose last spans are queued: the encoder is finishing them.
pub struct OtlpClosing {
    encoder: Encoder,
    endpoint: Option<Endpoint>,
    report: OtlpReport,
}

impl OtlpClosing {
    /// Waits for the encoder (which commits the file) and lets the sender drain; what could not
    /// be delivered is in the report.
    pub fn finish(self) -> Result<OtlpReport, ReportError> {
        let OtlpClosing {
            encoder,
            endpoint,
            mut report,
        } = self;
        let outputs = encoder.finish()?;
        report.requests = outputs.requests;
        if let (Some((exporter, _)), Some(endpoint)) = (outputs.exporter, endpoint) {
            let stats = exporter.finish(endpoint.flush_timeout);
            report.endpoint = Some((endpoint.display_url(), stats));
        }
        Ok(report)
    }
}

/// Turns released rows into spans and writes them; see the module doc.
pub struct OtlpSink {
    run: RunKey,
    limits: OtlpLimits,
    encoder: Option<Encoder>,
    endpoint: Option<Endpoint>,
    /// Spans of the next request, each with the index of its service in `batch_services`.
    batch: Vec<(usize, PendingSpan)>,
    batch_services: Vec<Service>,
    /// `batch_services` by the hash of name and version (the first service of a hash).
    service_by_hash: HashMap<u64, usize>,
    service_hasher: foldhash::fast::RandomState,
    /// Trace of each recent exchange, for the links of later rows; oldest first in `order`.
    traces: HashMap<u64, [u8; 16]>,
    order: VecDeque<u64>,
    /// Spans waiting, by the exchange they link to.
    held: HashMap<u64, Vec<Held>>,
    held_count: usize,
    /// By session key; written in key order.
    roots: HashMap<ArcStr, Root>,
    report: OtlpReport,
}

impl OtlpSink {
    /// Creates the file (as `<path>.partial` until finished) and starts the sender, before
    /// any input is read.
    pub fn create(options: OtlpOptions) -> Result<OtlpSink, ReportError> {
        let file = options
            .path
            .as_deref()
            .map(PartialFile::create)
            .transpose()?;
        let exporter = match &options.endpoint {
            Some(endpoint) => Some((
                Exporter::spawn(endpoint.clone()).map_err(|e| ReportError::Thread {
                    message: format!("cannot start the OTLP sender: {e}"),
                })?,
                endpoint.protocol,
            )),
            None => None,
        };
        let encoder = Encoder::spawn(Outputs {
            file,
            exporter,
            requests: 0,
        })?;
        Ok(OtlpSink {
            run: RunKey::of_inputs(&options.inputs),
            limits: options.limits,
            report: OtlpReport {
                file: options.path.as_ref().map(|p| p.display().to_string()),
                ..OtlpReport::default()
            },
            encoder: Some(encoder),
            endpoint: options.endpoint,
            batch: Vec::new(),
            batch_services: Vec::new(),
            service_by_hash: HashMap::default(),
            service_hasher: foldhash::fast::RandomState::default(),
            traces: HashMap::default(),
            order: VecDeque::new(),
            held: HashMap::default(),
            held_count: 0,
            roots: HashMap::default(),
        })
    }

    /// The span of one released row; a row the filters left out (`selected` false) gets
    /// none, but later rows still link to it.
    pub fn push(&mut self, row: &Exchange, selected: bool) -> Result<(), ReportError> {
        // A gateway's copy (section 4c) is a child of its original's span.
        let original = row
            .forwarded_from
            .and_then(|from| Some((from, *self.traces.get(&from)?)));
        let place = match original {
            Some((from, trace_id)) => Placement {
                trace_id,
                parent: self.run.span_id(from),
                joined: false,
            },
            None => match Placement::joined(row) {
                Some(place) => place,
                None if selected => {
                    let (trace_id, root) = self.grow_root(row)?;
                    Placement::in_session(trace_id, root)
                }
                None => Placement::of(row),
            },
        };
        self.remember_trace(row.exchange_id, place.trace_id);
        if !selected {
            return self.release_waiters(row.exchange_id, place.trace_id);
        }
        let mut span = SpanDraft::of(&self.run, row, place);
        self.report.spans += 1;
        let mut waiting = None;
        for target in link_targets(row) {
            match self.traces.get(&target.exchange_id) {
                Some(&trace) => {
                    span.links
                        .push(link(&self.run, target, trace, row.retry_origin));
                    self.report.links += 1;
                }
                None if target.exchange_id < row.exchange_id
                    && self.held_count < self.limits.held_spans =>
                {
                    waiting = Some(target);
                }
                None => self.report.links_unresolved += 1,
            }
        }
        match waiting {
            Some(target) => {
                self.held.entry(target.exchange_id).or_default().push(Held {
                    service: Service::of(row),
                    span,
                    target,
                    origin: row.retry_origin,
                });
                self.held_count += 1;
            }
            None => {
                let index = self
                    .service_index(row.client_name.as_deref(), row.client_version.as_deref())
                    .unwrap_or_else(|| self.add_service(Service::of(row)));
                self.push_span(index, PendingSpan::Draft(span))?;
            }
        }
        self.release_waiters(row.exchange_id, place.trace_id)
    }

    /// The spans that waited for exchange `exchange_id`, which lies in trace `trace`.
    fn release_waiters(&mut self, exchange_id: u64, trace: [u8; 16]) -> Result<(), ReportError> {
        if let Some(waiters) = self.held.remove(&exchange_id) {
            self.held_count -= waiters.len();
            for mut h in waiters {
                h.span
                    .links
                    .push(link(&self.run, h.target, trace, h.origin));
                self.report.links += 1;
                self.emit(h.service, PendingSpan::Draft(h.span))?;
            }
        }
        Ok(())
    }

    /// Writes what is held (spans whose link target never came, session roots), closes the
    /// file and lets the sender drain; what could not be delivered is in the report.
    pub fn finish(self) -> Result<OtlpReport, ReportError> {
        self.close()?.finish()
    }

    /// Hands what is held (spans whose link target never came, session roots) to the
    /// encoder and closes its queue; the encoder finishes on its own thread while the caller
    /// does other work, and [`OtlpClosing::finish`] waits for it.
    pub fn close(mut self) -> Result<OtlpClosing, ReportError> {
        let mut held: Vec<Held> = self.held.drain().flat_map(|(_, v)| v).collect();
        held.sort_by_key(|h| h.span.start_ns);
        for h in held {
            self.report.links_unresolved += 1;
            self.emit(h.service, PendingSpan::Draft(h.span))?;
        }
        self.write_roots()?;
        self.flush()?;
        let Some(mut encoder) = self.encoder.take() else {
            return Err(ReportError::Thread {
                message: "the OTLP encoder already ended".into(),
            });
        };
        encoder.close();
        Ok(OtlpClosing {
            encoder,
            endpoint: self.endpoint.take(),
            report: std::mem::take(&mut self.report),
        })
    }

    fn remember_trace(&mut self, exchange_id: u64, trace: [u8; 16]) {
        if self.traces.insert(exchange_id, trace).is_none() {
            self.order.push_back(exchange_id);
        }
        while self.order.len() > self.limits.link_targets {
            if let Some(old) = self.order.pop_front() {
                self.traces.remove(&old);
            }
        }
    }

    /// Adds `row` to its session's root span; gives the session's trace and root span ids.
    fn grow_root(&mut self, row: &Exchange) -> Result<([u8; 16], [u8; 8]), ReportError> {
        if !self.roots.contains_key(&row.session_key)
            && self.roots.len() >= self.limits.session_roots
        {
            self.report.session_roots_written_early += self.roots.len() as u64;
            self.write_roots()?;
        }
        let end = row
            .ts_response
            .unwrap_or(row.inference.ts_request_end)
            .max(row.ts_request);
        let root = self
            .roots
            .entry(row.session_key.clone())
            .or_insert_with(|| Root {
                trace_id: session_trace_id(&row.session_key),
                span_id: session_root_span_id(&row.session_key),
                service: Service::of(row),
                first_us: row.ts_request,
                last_us: end,
                session_id: None,
                protocol_version: None,
                client_addr: row.client_addr.clone(),
                server_addr: row.server_addr.clone(),
                exchanges: 0,
                failures: 0,
            });
        root.first_us = root.first_us.min(row.ts_request);
        root.last_us = root.last_us.max(end);
        root.exchanges += 1;
        root.failures += u64::from(row.outcome.is_failure());
        if root.service.name.is_none() {
            root.service = Service::of(row);
        }
        if root.session_id.is_none() {
            root.session_id.clone_from(&row.session_id);
        }
        if root.protocol_version.is_none() {
            root.protocol_version.clone_from(&row.protocol_version);
        }
        Ok((root.trace_id, root.span_id))
    }

    /// Writes every root held, in session-key order, and forgets them.
    fn write_roots(&mut self) -> Result<(), ReportError> {
        let mut roots: Vec<(ArcStr, Root)> = std::mem::take(&mut self.roots).into_iter().collect();
        roots.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        for (key, root) in roots {
            let mut attributes = Vec::with_capacity(8);
            if let Some(sid) = &root.session_id {
                attributes.push(KeyValue::str("mcp.session.id", sid));
            }
            if let Some(v) = &root.protocol_version {
                attributes.push(KeyValue::str("mcp.protocol.version", v.clone()));
            }
            attributes.push(KeyValue::str("mcp_trace.session_key", &key));
            attributes.push(KeyValue::str("mcp_trace.client_addr", &root.client_addr));
            attributes.push(KeyValue::str("mcp_trace.server_addr", &root.server_addr));
            attributes.push(KeyValue::int(
                "mcp_trace.exchanges",
                i64::try_from(root.exchanges).unwrap_or(i64::MAX),
            ));
            attributes.push(KeyValue::int(
                "mcp_trace.failures",
                i64::try_from(root.failures).unwrap_or(i64::MAX),
            ));
            let start = us_to_ns(root.first_us);
            let span = Span {
                trace_id: Hex(root.trace_id),
                span_id: Hex(root.span_id),
                parent_span_id: None,
                name: "MCP session".into(),
                kind: SPAN_KIND_INTERNAL,
                start_time_unix_nano: U64Text(start),
                end_time_unix_nano: U64Text(us_to_ns(root.last_us).max(start)),
                attributes,
                events: Vec::new(),
                dropped_events_count: 0,
                links: Vec::new(),
                status: Status {
                    code: STATUS_UNSET,
                    message: None,
                },
            };
            self.report.session_spans += 1;
            self.emit(root.service, PendingSpan::Ready(span))?;
        }
        Ok(())
    }

    fn emit(&mut self, service: Service, span: PendingSpan) -> Result<(), ReportError> {
        let index = match self.service_index(service.name.as_deref(), service.version.as_deref()) {
            Some(i) => i,
            None => self.add_service(service),
        };
        self.push_span(index, span)
    }

    /// The batch's index of the service with this name and version.
    fn service_index(&self, name: Option<&str>, version: Option<&str>) -> Option<usize> {
        let matches = |s: &Service| s.name.as_deref() == name && s.version.as_deref() == version;
        let hash = self.service_hasher.hash_one((name, version));
        match self.service_by_hash.get(&hash) {
            None => None,
            Some(&i) if self.batch_services.get(i).is_some_and(matches) => Some(i),
            // Another service with the same hash came first.
            Some(_) => self.batch_services.iter().rposition(matches),
        }
    }

    fn add_service(&mut self, service: Service) -> usize {
        let index = self.batch_services.len();
        let hash = self
            .service_hasher
            .hash_one((service.name.as_deref(), service.version.as_deref()));
        self.service_by_hash.entry(hash).or_insert(index);
        self.batch_services.push(service);
        index
    }

    fn push_span(&mut self, service_index: usize, span: PendingSpan) -> Result<(), ReportError> {
        self.batch.push((service_index, span));
        if self.batch.len() >= SPANS_PER_REQUEST {
            self.flush()?;
        }
        Ok(())
    }

    /// One `ExportTraceServiceRequest` of the batch, to the encoder: a line of the file, a
    /// POST.
    fn flush(&mut self) -> Result<(), ReportError> {
        if self.batch.is_empty() {
            return Ok(());
        }
        self.service_by_hash.clear();
        let batch = Batch {
            services: std::mem::take(&mut self.batch_services),
            spans: std::mem::replace(&mut self.batch, Vec::with_capacity(SPANS_PER_REQUEST)),
        };
        match self.encoder.as_mut() {
            Some(e) => e.send(batch),
            None => Err(ReportError::Thread {
                message: "the OTLP encoder already ended".into(),
            }),
        }
    }
}
