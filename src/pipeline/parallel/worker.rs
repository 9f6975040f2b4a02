//! An HTTP worker thread: the stream chain of its share of the streams.

use super::{FromWorker, Gone, Ledger, ROUND_BYTES, ToWorker};
use crate::http::HttpEvent;
use crate::mcp::{McpLimits, PreparedEvents, Preparer};
use crate::pipeline::packets::{ChainCounters, Event};
use crate::report::RunStats;
use crate::stream::StreamStage;
use std::sync::mpsc::{Receiver, SyncSender};

/// One HTTP worker: a batch out for each batch in, tagged with the stream event's number.
pub(super) fn http_worker<S>(
    mut stage: S,
    prepare: Option<(McpLimits, PreparedEvents)>,
    rx: Receiver<ToWorker>,
    tx: SyncSender<FromWorker>,
    (ledger, producer): (&Ledger, usize),
) -> Result<(), Gone>
where
    S: StreamStage<Output = HttpEvent>,
    S::Counters: ChainCounters,
{
    let mut counters = S::Counters::default();
    let mut out: Vec<HttpEvent> = Vec::new();
    let mut preparer = prepare.map(Preparer::from);
    while let Ok(msg) = rx.recv() {
        match msg {
            ToWorker::Round(events) => {
                let mut batch = Vec::with_capacity(events.len());
                let mut held = 0usize;
                let count = events.len();
                for (i, (seq, ev)) in events.into_iter().enumerate() {
                    stage.push(ev, &mut counters, &mut out);
                    for h in out.drain(..) {
                        held = held.saturating_add(body_bytes(&h));
                        batch.push((seq, Event::new(h, preparer.as_mut())));
                    }
                    if held >= ROUND_BYTES && i + 1 < count {
                        ledger.reserve(producer, held);
                        let part = std::mem::take(&mut batch);
                        tx.send(FromWorker::Part(part, held, seq))
                            .map_err(|_| Gone)?;
                        held = 0;
                    }
                }
                let unfinished = stage.held_since_us();
                ledger.reserve(producer, held);
                tx.send(FromWorker::Round(batch, unfinished, held))
                    .map_err(|_| Gone)?;
            }
            ToWorker::Finish => {
                stage.finish(&mut counters, &mut out);
                let mut stats = RunStats::default();
                counters.add_to(&mut stats);
                // `finish` flushes in stream order; the stream id orders them across workers.
                let batch = out
                    .drain(..)
                    .map(|h| (conn_of(&h), Event::new(h, preparer.as_mut())))
                    .collect();
                return tx
                    .send(FromWorker::Finished(batch, Box::new(stats)))
                    .map_err(|_| Gone);
            }
        }
    }
    Err(Gone)
}

/// Body bytes an event carries (a decompressed piece may be far larger than its packet).
pub(super) fn body_bytes(ev: &HttpEvent) -> usize {
    match ev {
        HttpEvent::Request(r) => r.body.len(),
        HttpEvent::ResponseBody { data, .. } => data.len(),
        _ => 0,
    }
}

/// Connection (= TCP stream) id of an event.
fn conn_of(ev: &HttpEvent) -> u64 {
    let xref = match ev {
        HttpEvent::Request(r) => &r.xref,
        HttpEvent::ResponseHead { xref, .. }
        | HttpEvent::ResponseBody { xref, .. }
        | HttpEvent::ResponseEnd { xref, .. }
        | HttpEvent::NoResponse { xref, .. } => xref,
        HttpEvent::ConnectionClosed(record) => return record.flow.tcp_stream,
    };
    xref.conn.conn
}
