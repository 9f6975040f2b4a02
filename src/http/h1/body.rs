//! Bodies: framed bytes to decoded pieces, and the end of each request and response.

use super::*;
use crate::http::HttpRequest;

/// Largest buffer reserved up front for one piece of a response body (a buffer with more
/// data than this after the body's start is mostly the next messages).
const PIECE_CAPACITY_LIMIT: usize = 256 * 1024;

impl Conn {
    /// Reads body bytes of the current message in `dir`; returns bytes consumed.
    pub(super) fn body(
        &mut self,
        dir: Dir,
        bytes: &[u8],
        ts_us: i64,
        stats: &mut HttpCounters,
        out: &mut Vec<HttpEvent>,
    ) -> usize {
        match dir {
            Dir::Req => self.request_body(bytes, ts_us, stats, out),
            Dir::Resp => self.response_body(bytes, ts_us, stats, out),
        }
    }

    pub(super) fn request_body(
        &mut self,
        bytes: &[u8],
        ts_us: i64,
        stats: &mut HttpCounters,
        out: &mut Vec<HttpEvent>,
    ) -> usize {
        let Some(msg) = self.req_msg.as_mut() else {
            self.req.state = ReadState::Head;
            return 0;
        };
        let before = msg.body.len();
        let (consumed, done, failed) = read_plain(
            &mut msg.reader,
            &mut msg.decoder,
            bytes,
            &mut msg.body,
            &mut msg.anomalies,
        );
        msg.wire_len = msg.wire_len.saturating_add(consumed as u64);
        let room = self.limits.body_bytes.saturating_sub(before);
        if msg.body.len().saturating_sub(before) > room {
            push_anomaly(&mut msg.anomalies, "http.request_body_limit");
            msg.body.truncate(before.saturating_add(room));
        }
        if failed {
            push_anomaly(&mut msg.anomalies, "http.bad_chunked");
            msg.complete = false;
            self.req.state = ReadState::Resync { line_start: false };
            self.finish_request(ts_us, stats, out);
        } else if done {
            self.req.state = ReadState::Head;
            self.finish_request(ts_us, stats, out);
        }
        consumed
    }

    pub(super) fn response_body(
        &mut self,
        bytes: &[u8],
        ts_us: i64,
        stats: &mut HttpCounters,
        out: &mut Vec<HttpEvent>,
    ) -> usize {
        let Some(msg) = self.resp_msg.as_mut() else {
            self.resp.state = ReadState::Head;
            return 0;
        };
        // De-chunked bytes fit in their wire form: one allocation instead of one per growth
        // (a decompressed body still grows as it needs).
        let mut plain = Vec::with_capacity(bytes.len().min(PIECE_CAPACITY_LIMIT));
        let (consumed, done, failed) = read_plain(
            &mut msg.reader,
            &mut msg.decoder,
            bytes,
            &mut plain,
            &mut msg.anomalies,
        );
        msg.wire_len = msg.wire_len.saturating_add(consumed as u64);
        let xref = msg.xref.clone();
        if !plain.is_empty() {
            self.emit(
                HttpEvent::ResponseBody {
                    xref,
                    ts_us,
                    data: plain,
                },
                stats,
                out,
            );
        }
        if failed {
            if let Some(m) = self.resp_msg.as_mut() {
                push_anomaly(&mut m.anomalies, "http.bad_chunked");
            }
            self.resp.state = ReadState::Resync { line_start: false };
            self.finish_response(BodyEnd::Gap, ts_us, stats, out);
        } else if done {
            self.resp.state = ReadState::Head;
            self.finish_response(BodyEnd::Complete, ts_us, stats, out);
        }
        consumed
    }

    pub(super) fn finish_request(
        &mut self,
        ts_us: i64,
        stats: &mut HttpCounters,
        out: &mut Vec<HttpEvent>,
    ) {
        let Some(mut msg) = self.req_msg.take() else {
            return;
        };
        let mut tail = Vec::new();
        msg.decoder
            .finish(msg.complete, &mut tail, &mut msg.anomalies);
        let room = self.limits.body_bytes.saturating_sub(msg.body.len());
        msg.body
            .extend_from_slice(tail.get(..tail.len().min(room)).unwrap_or_default());
        for a in &msg.anomalies {
            stats.anomaly_name(a);
        }
        out.push(HttpEvent::Request(HttpRequest {
            xref: msg.xref,
            h2_stream: None,
            ts_first_us: msg.ts_first_us,
            ts_last_us: ts_us,
            frame: msg.frame,
            head: msg.head,
            body: msg.body,
            wire_len: msg.wire_len,
            complete: msg.complete,
            anomalies: msg.anomalies,
        }));
        self.exchanges.flush_deferred(out);
    }

    pub(super) fn finish_response(
        &mut self,
        end: BodyEnd,
        ts_us: i64,
        stats: &mut HttpCounters,
        out: &mut Vec<HttpEvent>,
    ) {
        let Some(mut msg) = self.resp_msg.take() else {
            return;
        };
        let complete = matches!(end, BodyEnd::Complete) && !msg.gap;
        let mut tail = Vec::new();
        msg.decoder.finish(
            complete || matches!(msg.reader, BodyReader::Close),
            &mut tail,
            &mut msg.anomalies,
        );
        if !tail.is_empty() {
            self.emit(
                HttpEvent::ResponseBody {
                    xref: msg.xref.clone(),
                    ts_us,
                    data: tail,
                },
                stats,
                out,
            );
        }
        let end = if msg.gap && end != BodyEnd::Rst {
            BodyEnd::Gap
        } else {
            end
        };
        for a in &msg.anomalies {
            stats.anomaly_name(a);
        }
        // Ended short of its framing after the client's FIN/RST: the client
        // gave up first. (A close-delimited body the server then ended with
        // FIN says so too; the MCP stage decides by the final response.)
        let client_closed = self.client_closed && end != BodyEnd::Complete;
        self.emit(
            HttpEvent::ResponseEnd {
                xref: msg.xref,
                ts_us,
                end,
                wire_len: msg.wire_len,
                decoded_len: msg.decoder.decoded_len(),
                anomalies: msg.anomalies,
                client_closed,
            },
            stats,
            out,
        );
    }
}

/// Reads framed body bytes and appends their content-decoded form to `plain`. Returns
/// (consumed, body done, framing error). Length- and close-framed bytes are a slice of the
/// input and go to the decoder as they are; only chunked bodies need a de-chunked copy.
fn read_plain(
    reader: &mut BodyReader,
    decoder: &mut ContentDecoder,
    bytes: &[u8],
    plain: &mut Vec<u8>,
    anomalies: &mut Vec<String>,
) -> (usize, bool, bool) {
    match reader {
        BodyReader::Length(rem) => {
            let take = usize::try_from(*rem).unwrap_or(usize::MAX).min(bytes.len());
            decoder.feed(bytes.get(..take).unwrap_or_default(), plain, anomalies);
            *rem = rem.saturating_sub(take as u64);
            (take, *rem == 0, false)
        }
        BodyReader::Chunked(c) if decoder.is_raw() => {
            let from = plain.len();
            let (n, r) = c.feed(bytes, plain);
            decoder.feed_in_place(plain, from, anomalies);
            (n, c.is_done(), r.is_err())
        }
        BodyReader::Chunked(c) => {
            let mut decoded = Vec::new();
            let (n, r) = c.feed(bytes, &mut decoded);
            decoder.feed(&decoded, plain, anomalies);
            (n, c.is_done(), r.is_err())
        }
        BodyReader::Close => {
            decoder.feed(bytes, plain, anomalies);
            (bytes.len(), false, false)
        }
    }
}
