//! The encoding of requests (OTLP/JSON for the file and `http/json`, protobuf for
//! `http/protobuf`), the file's writes and the hand-over to the sender, on a thread of their
//! own: they overlap the analysis instead of adding to it. Batches go over a bounded channel,
//! so memory stays at a few requests.

use super::export::Exporter;
use super::json::JsonSpan;
use super::model::{ExportRequest, ResourceSpans, ScopeSpans, Span};
use super::span::SpanDraft;
use super::{Protocol, SCOPE, Service, json, proto};
use crate::report::ReportError;
use crate::report::output::PartialFile;
use std::io::Write;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::thread::JoinHandle;

/// Requests in flight before the sink waits for the encoder.
const REQUESTS_IN_FLIGHT: usize = 4;

/// Bytes written between two syncs of the file: the disk's writes overlap the analysis
/// instead of all waiting for the end of the run.
const SYNC_EVERY_BYTES: usize = 8 << 20;

/// One request's spans, each with the index of its service in `services`.
pub struct Batch {
    pub services: Vec<Service>,
    pub spans: Vec<(usize, PendingSpan)>,
}

/// A span as the sink hands it over: an exchange's is made here, off the analysis thread.
// Most spans are drafts: boxing them would add an allocation per span.
#[allow(clippy::large_enum_variant)]
pub enum PendingSpan {
    Draft(SpanDraft),
    Ready(Span),
}

impl PendingSpan {
    fn to_span(&self) -> Span {
        match self {
            PendingSpan::Draft(draft) => draft.to_span(),
            PendingSpan::Ready(span) => span.clone(),
        }
    }
}

impl JsonSpan for PendingSpan {
    fn write_json(&self, out: &mut Vec<u8>) {
        match self {
            PendingSpan::Draft(draft) => draft.write_json(out),
            PendingSpan::Ready(span) => span.write_json(out),
        }
    }
}

/// What the encoder writes to and hands its bodies to; given back when it ends.
pub struct Outputs {
    /// Committed by the encoder when the run ends well ([`Encoder::close`]).
    pub file: Option<PartialFile>,
    pub exporter: Option<(Exporter, Protocol)>,
    /// Requests encoded.
    pub requests: u64,
}

/// What the encoder is sent: a request's spans, or the end of a run that went well.
enum ToEncoder {
    Batch(Batch),
    /// Every span was sent: commit the file. Without it (the sink was dropped on an
    /// error), the partial file is removed.
    Commit,
}

/// The encoder thread and the channel to it.
pub struct Encoder {
    tx: Option<SyncSender<ToEncoder>>,
    handle: Option<JoinHandle<Result<Outputs, ReportError>>>,
}

impl Encoder {
    pub fn spawn(outputs: Outputs) -> Result<Encoder, ReportError> {
        let (tx, rx) = sync_channel(REQUESTS_IN_FLIGHT);
        let handle = std::thread::Builder::new()
            .name("otlp-encode".into())
            .spawn(move || encode_all(outputs, &rx))
            .map_err(|e| ReportError::Thread {
                message: format!("cannot start the OTLP encoder: {e}"),
            })?;
        Ok(Encoder {
            tx: Some(tx),
            handle: Some(handle),
        })
    }

    /// Queues one request; an error is the encoder's own (the file could not be written).
    pub fn send(&mut self, batch: Batch) -> Result<(), ReportError> {
        if self
            .tx
            .as_ref()
            .is_some_and(|tx| tx.send(ToEncoder::Batch(batch)).is_ok())
        {
            return Ok(());
        }
        self.tx = None;
        match self.join() {
            Err(e) => Err(e),
            Ok(_) => Err(ReportError::Thread {
                message: "the OTLP encoder stopped early".into(),
            }),
        }
    }

    /// Ends the queue: the encoder writes what is queued, commits the file (on its own
    /// thread: the sync and the rename overlap the caller's work) and stops.
    pub fn close(&mut self) {
        if let Some(tx) = self.tx.take() {
            // A send fails only when the encoder already stopped on an error, which
            // joining reports.
            let _ = tx.send(ToEncoder::Commit);
        }
    }

    /// Encodes what is queued and gives the outputs back.
    pub fn finish(mut self) -> Result<Outputs, ReportError> {
        self.close();
        self.join()
    }

    fn join(&mut self) -> Result<Outputs, ReportError> {
        match self.handle.take() {
            Some(h) => h.join().unwrap_or_else(|_| {
                Err(ReportError::Thread {
                    message: "the OTLP encoder panicked".into(),
                })
            }),
            None => Err(ReportError::Thread {
                message: "the OTLP encoder already ended".into(),
            }),
        }
    }
}

impl Drop for Encoder {
    /// Dropped without [`Encoder::close`] (the run failed): the encoder stops without
    /// committing, and its partial file is gone when this returns.
    fn drop(&mut self) {
        self.tx = None;
        if let Some(handle) = self.handle.take() {
            let _ = handle.join();
        }
    }
}

fn encode_all(mut out: Outputs, messages: &Receiver<ToEncoder>) -> Result<Outputs, ReportError> {
    let mut buf = Vec::new();
    let mut unsynced = 0;
    while let Ok(message) = messages.recv() {
        let batch = match message {
            ToEncoder::Batch(batch) => batch,
            ToEncoder::Commit => {
                if let Some(file) = out.file.take() {
                    file.commit()?;
                }
                break;
            }
        };
        out.requests += 1;
        let json = out.file.is_some() || matches!(out.exporter, Some((_, Protocol::HttpJson)));
        if json {
            buf.clear();
            json::encode(&mut buf, &request(&batch.services, &batch.spans));
        }
        if let Some((exporter, protocol)) = &out.exporter {
            let body = match protocol {
                Protocol::HttpProtobuf => {
                    let spans: Vec<(usize, Span)> = batch
                        .spans
                        .iter()
                        .map(|(service, span)| (*service, span.to_span()))
                        .collect();
                    proto::encode(&request(&batch.services, &spans))
                }
                Protocol::HttpJson => buf.clone(),
            };
            exporter.send(body, batch.spans.len() as u64);
        }
        if let Some(file) = out.file.as_mut() {
            buf.push(b'\n');
            file.write_all(&buf).map_err(|e| file.io_error(e))?;
            unsynced += buf.len();
            if unsynced >= SYNC_EVERY_BYTES {
                file.sync_so_far().map_err(|e| file.io_error(e))?;
                unsynced = 0;
            }
        }
    }
    Ok(out)
}

/// The request of `spans`, each with the index of its service in `services`: one resource
/// per service, in order of first appearance, its spans in batch order.
fn request<'a, S>(services: &[Service], spans: &'a [(usize, S)]) -> ExportRequest<'a, S> {
    let mut by_service: Vec<Vec<&S>> = services.iter().map(|_| Vec::new()).collect();
    for (index, span) in spans {
        if let Some(list) = by_service.get_mut(*index) {
            list.push(span);
        }
    }
    ExportRequest {
        resource_spans: services
            .iter()
            .zip(by_service)
            .map(|(service, spans)| ResourceSpans {
                resource: service.resource(),
                scope_spans: [ScopeSpans {
                    scope: SCOPE,
                    spans,
                }],
            })
            .collect(),
    }
}
