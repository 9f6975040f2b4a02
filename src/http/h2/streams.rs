//! Streams of one HTTP/2 connection: header blocks to request and response heads, DATA to
//! bodies, RST_STREAM, GOAWAY and the ends of a direction, with the same HTTP events as
//! HTTP/1.x (one exchange per stream, numbered in the order of the requests' HEADERS).

use super::conn::{Block, Conn, Dir};
use super::exchange::{ReqMsg, Resp, RespMsg, Stream, field_text, request_head, response_head};
use super::flood::RESET_RATE_LIMIT;
use super::frames::{FrameHeader, error_code_name, flag, headers_fragment, kind};
use super::hpack::HpackError;
use crate::anomaly::{Anomaly, HeadSkip};
use crate::http::HttpCounters;
use crate::http::decompress::ContentDecoder;
use crate::http::event::push_anomaly;
use crate::http::exchanges::Emitted;
use crate::http::limits::BODY_RESERVE_MAX;
use crate::http::{BodyEnd, HttpEvent, HttpRequest};

/// RFC 9113 §7 CANCEL: the client no longer wants the response.
const CANCEL: u32 = 0x8;

impl Conn {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn header_frame(
        &mut self,
        dir: Dir,
        hdr: &FrameHeader,
        payload: &[u8],
        truncated: bool,
        start: (i64, u64),
        ts_us: i64,
        stats: &mut HttpCounters,
        out: &mut Vec<HttpEvent>,
    ) {
        let limit = self.limits.head_bytes;
        if truncated {
            stats.http_messages = stats.http_messages.saturating_add(1);
            stats.anomaly(Anomaly::HttpHeadTooLarge);
            stats.skip_http_message(HeadSkip::HeadTooLarge);
            self.lose_hpack(dir, ts_us, stats, out);
            return;
        }
        if hdr.kind == kind::CONTINUATION {
            let Some(block) = self.dir_state(dir).block.as_mut() else {
                stats.anomaly(Anomaly::H2UnexpectedContinuation);
                return;
            };
            if block.stream != hdr.stream {
                stats.anomaly(Anomaly::H2ContinuationExpected);
                self.lose_hpack(dir, ts_us, stats, out);
                return;
            }
            block.continuations = block.continuations.saturating_add(1);
            if block.bytes.len().saturating_add(payload.len()) > limit {
                // The 2024 CONTINUATION flood: a block that never ends is not kept.
                stats.http_messages = stats.http_messages.saturating_add(1);
                stats.anomaly(Anomaly::H2ContinuationFlood);
                stats.skip_http_message(HeadSkip::HeadTooLarge);
                self.lose_hpack(dir, ts_us, stats, out);
                return;
            }
            block.bytes.extend_from_slice(payload);
        } else {
            let Some(fragment) = headers_fragment(hdr, payload) else {
                stats.anomaly(Anomaly::H2BadPadding);
                self.lose_hpack(dir, ts_us, stats, out);
                return;
            };
            if hdr.kind == kind::PUSH_PROMISE {
                stats.anomaly(Anomaly::H2PushPromise);
            }
            self.dir_state(dir).block = Some(Block {
                stream: hdr.stream,
                kind: hdr.kind,
                end_stream: hdr.kind == kind::HEADERS && hdr.has(flag::END_STREAM),
                bytes: fragment,
                ts_us: start.0,
                frame: start.1,
                continuations: 0,
            });
        }
        if !hdr.has(flag::END_HEADERS) {
            return;
        }
        let Some(block) = self.dir_state(dir).block.take() else {
            return;
        };
        self.header_block(dir, block, ts_us, stats, out);
    }

    /// A whole header block: decoded (always, to keep the table in step), then applied.
    fn header_block(
        &mut self,
        dir: Dir,
        block: Block,
        ts_us: i64,
        stats: &mut HttpCounters,
        out: &mut Vec<HttpEvent>,
    ) {
        stats.http_messages = stats.http_messages.saturating_add(1);
        let mut fields = Vec::new();
        let decoded = self
            .dir_state(dir)
            .hpack
            .decode(&block.bytes, &mut |n, v| fields.push(field_text(n, v)));
        match decoded {
            Ok(()) => {}
            Err(HpackError::ListTooLarge) => {
                // The table is still in step: only this header list is lost.
                stats.anomaly(HpackError::ListTooLarge.anomaly());
                stats.skip_http_message(HeadSkip::HeadTooLarge);
                self.drop_stream_heads(dir, block.stream, ts_us, stats, out);
                return;
            }
            Err(e) => {
                stats.anomaly(e.anomaly());
                stats.skip_http_message(HeadSkip::BadHead);
                self.lose_hpack(dir, ts_us, stats, out);
                return;
            }
        }
        if block.kind == kind::PUSH_PROMISE {
            // Decoded for the table only: MCP has no use for pushed responses.
            stats.http_messages_parsed = stats.http_messages_parsed.saturating_add(1);
            return;
        }
        match dir {
            Dir::Req => self.request_headers(block, fields, ts_us, stats, out),
            Dir::Resp => self.response_headers(block, fields, ts_us, stats, out),
        }
    }

    /// A header list that was not kept (too large): the stream's exchange ends as if cut.
    fn drop_stream_heads(
        &mut self,
        dir: Dir,
        id: u32,
        ts_us: i64,
        stats: &mut HttpCounters,
        out: &mut Vec<HttpEvent>,
    ) {
        self.highest_stream = self.highest_stream.max(id);
        if self.streams.contains_key(&id) {
            self.end_stream(id, dir, BodyEnd::Gap, ts_us, stats, out);
        }
    }

    fn request_headers(
        &mut self,
        block: Block,
        fields: Vec<(String, String)>,
        ts_us: i64,
        stats: &mut HttpCounters,
        out: &mut Vec<HttpEvent>,
    ) {
        let id = block.stream;
        if let Some(s) = self.streams.get_mut(&id) {
            // Trailers (RFC 9113 §8.1): only their END_STREAM matters here.
            stats.http_messages_parsed = stats.http_messages_parsed.saturating_add(1);
            if s.req.is_some() && block.end_stream {
                self.finish_request(id, true, ts_us, stats, out);
            }
            return;
        }
        if id == 0 || id.is_multiple_of(2) || id <= self.highest_stream {
            stats.anomaly(Anomaly::H2BadStreamId);
            stats.skip_http_message(HeadSkip::BadHead);
            return;
        }
        self.highest_stream = id;
        if self.streams.len() >= self.limits.h2_streams {
            stats.anomaly(Anomaly::H2StreamLimit);
            stats.skip_http_message(HeadSkip::StreamLimit);
            return;
        }
        stats.http_messages_parsed = stats.http_messages_parsed.saturating_add(1);
        let mut anomalies = Vec::new();
        let head = request_head(fields, &mut anomalies);
        if self.goaway_last.is_some_and(|last| id > last) {
            push_anomaly(&mut anomalies, "h2.goaway_unprocessed");
        }
        let decoder = ContentDecoder::with_limit(
            head.headers.get("content-encoding"),
            self.limits.decoded_bytes,
            &mut anomalies,
        );
        let reserve = head
            .headers
            .get("content-length")
            .and_then(|v| v.trim().parse::<usize>().ok())
            .unwrap_or_default()
            .min(self.limits.body_bytes)
            .min(BODY_RESERVE_MAX);
        let xref = self.exchanges.next_exchange();
        self.unfinished.insert((block.ts_us, id));
        self.streams.insert(
            id,
            Stream {
                xref,
                req: Some(ReqMsg {
                    ts_first_us: block.ts_us,
                    frame: block.frame,
                    head,
                    body: Vec::with_capacity(reserve),
                    wire_len: 0,
                    decoder,
                    anomalies,
                }),
                resp: Resp::Awaiting,
            },
        );
        if block.end_stream {
            self.finish_request(id, true, ts_us, stats, out);
        }
    }

    fn response_headers(
        &mut self,
        block: Block,
        fields: Vec<(String, String)>,
        ts_us: i64,
        stats: &mut HttpCounters,
        out: &mut Vec<HttpEvent>,
    ) {
        let id = block.stream;
        if id != 0 && id.is_multiple_of(2) && !self.streams.contains_key(&id) {
            // A pushed response (its PUSH_PROMISE was named): decoded, not an exchange.
            stats.http_messages_parsed = stats.http_messages_parsed.saturating_add(1);
            return;
        }
        if !self.streams.contains_key(&id) {
            // A response whose request was not seen (the capture began after it): an
            // exchange of its own, as HTTP/1.x numbers a response nobody asked for.
            if id == 0 || self.streams.len() >= self.limits.h2_streams {
                stats.anomaly(if id == 0 {
                    Anomaly::H2BadStreamId
                } else {
                    Anomaly::H2StreamLimit
                });
                stats.skip_http_message(HeadSkip::BadHead);
                return;
            }
            if id <= self.highest_stream {
                // A stream already closed: a late frame.
                stats.anomaly(Anomaly::H2FrameOnClosedStream);
                stats.skip_http_message(HeadSkip::BadHead);
                return;
            }
            self.highest_stream = id;
            let xref = self.exchanges.next_exchange();
            self.streams.insert(
                id,
                Stream {
                    xref,
                    req: None,
                    resp: Resp::Awaiting,
                },
            );
        }
        let Some(stream) = self.streams.get_mut(&id) else {
            return;
        };
        stats.http_messages_parsed = stats.http_messages_parsed.saturating_add(1);
        match &stream.resp {
            Resp::Body(_) => {
                // Trailers.
                if block.end_stream {
                    self.finish_response(id, BodyEnd::Complete, ts_us, stats, out);
                }
                return;
            }
            Resp::Done => return,
            Resp::Awaiting => {}
        }
        let Some(head) = response_head(fields) else {
            stats.anomaly(Anomaly::H2BadStatus);
            if block.end_stream {
                self.end_stream(id, Dir::Resp, BodyEnd::Gap, ts_us, stats, out);
            }
            return;
        };
        if (100..200).contains(&head.status) {
            // Interim (RFC 9110 §15.2): not the final head.
            return;
        }
        let mut anomalies = Vec::new();
        let decoder = ContentDecoder::with_limit(
            head.headers.get("content-encoding"),
            self.limits.decoded_bytes,
            &mut anomalies,
        );
        let xref = stream.xref.clone();
        let waiting = stream.waiting();
        stream.resp = Resp::Body(RespMsg {
            wire_len: 0,
            decoder,
            anomalies,
        });
        let ev = HttpEvent::ResponseHead {
            xref,
            ts_us: block.ts_us,
            frame: block.frame,
            head,
        };
        let _ = self.exchanges.emit(ev, waiting, stats, out);
        if block.end_stream {
            self.finish_response(id, BodyEnd::Complete, ts_us, stats, out);
        }
    }

    /// DATA payload bytes of one frame (`last`: the frame ends with them).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn data_frame(
        &mut self,
        dir: Dir,
        hdr: &FrameHeader,
        data: &[u8],
        last: bool,
        ts_us: i64,
        stats: &mut HttpCounters,
        out: &mut Vec<HttpEvent>,
    ) {
        let end_stream = last && hdr.has(flag::END_STREAM);
        let body_limit = self.limits.body_bytes;
        let Some(stream) = self.streams.get_mut(&hdr.stream) else {
            stats.http_bytes_skipped = stats.http_bytes_skipped.saturating_add(data.len() as u64);
            return;
        };
        match dir {
            Dir::Req => {
                let Some(msg) = stream.req.as_mut() else {
                    stats.http_bytes_skipped =
                        stats.http_bytes_skipped.saturating_add(data.len() as u64);
                    return;
                };
                msg.wire_len = msg.wire_len.saturating_add(data.len() as u64);
                let before = msg.body.len();
                // Per request and for all the connection's open requests together: many
                // streams at once hold no more than one HTTP/1.x request could.
                let room = body_limit.saturating_sub(self.kept_request_bytes);
                let cap = before.saturating_add(room).min(body_limit);
                msg.decoder.feed(data, &mut msg.body, &mut msg.anomalies);
                if msg.body.len() > cap {
                    push_anomaly(&mut msg.anomalies, "http.request_body_limit");
                    msg.body.truncate(cap.max(before));
                }
                self.kept_request_bytes = self
                    .kept_request_bytes
                    .saturating_add(msg.body.len().saturating_sub(before));
                if end_stream {
                    self.finish_request(hdr.stream, true, ts_us, stats, out);
                }
            }
            Dir::Resp => {
                let Resp::Body(msg) = &mut stream.resp else {
                    // DATA before the final head, or after the end.
                    stats.anomaly(Anomaly::H2DataWithoutHead);
                    stats.http_bytes_skipped =
                        stats.http_bytes_skipped.saturating_add(data.len() as u64);
                    return;
                };
                msg.wire_len = msg.wire_len.saturating_add(data.len() as u64);
                let mut plain = Vec::with_capacity(data.len());
                msg.decoder.feed(data, &mut plain, &mut msg.anomalies);
                let xref = stream.xref.clone();
                let waiting = stream.waiting();
                if !plain.is_empty() {
                    let ev = HttpEvent::ResponseBody {
                        xref,
                        ts_us,
                        data: plain,
                    };
                    if self.exchanges.emit(ev, waiting, stats, out) == Emitted::Dropped
                        && let Some(Stream {
                            resp: Resp::Body(m),
                            ..
                        }) = self.streams.get_mut(&hdr.stream)
                    {
                        push_anomaly(&mut m.anomalies, "http.deferred_limit");
                    }
                }
                if end_stream {
                    self.finish_response(hdr.stream, BodyEnd::Complete, ts_us, stats, out);
                }
            }
        }
    }

    /// RST_STREAM from `dir`: the stream's open messages end with its error code.
    pub(super) fn reset_stream(
        &mut self,
        dir: Dir,
        id: u32,
        code: u32,
        ts_us: i64,
        stats: &mut HttpCounters,
        out: &mut Vec<HttpEvent>,
    ) {
        let Some(stream) = self.streams.get_mut(&id) else {
            return;
        };
        let name = format!("h2.rst_stream_{}", error_code_name(code));
        if let Some(msg) = stream.req.as_mut() {
            push_anomaly(&mut msg.anomalies, &name);
        }
        let before_response = matches!(stream.resp, Resp::Awaiting);
        match &mut stream.resp {
            Resp::Body(msg) => push_anomaly(&mut msg.anomalies, &name),
            Resp::Awaiting => {
                stats
                    .anomalies
                    .add_pattern(Anomaly::H2RstStream, error_code_name(code), 1)
            }
            Resp::Done => {}
        }
        if before_response && self.resets.trips(ts_us, RESET_RATE_LIMIT) {
            stats.anomaly(Anomaly::H2RapidReset);
        }
        let client_cancel = dir == Dir::Req && code == CANCEL;
        self.finish_request(id, false, ts_us, stats, out);
        self.end_response(id, BodyEnd::StreamReset, client_cancel, ts_us, stats, out);
        self.remove_if_finished(id);
    }

    /// The server's GOAWAY: client streams above `last` were never processed.
    pub(super) fn mark_unprocessed(&mut self, last: u32, stats: &mut HttpCounters) {
        for (&id, stream) in self.streams.iter_mut() {
            if id <= last || id.is_multiple_of(2) {
                continue;
            }
            // Counted once: in a list counted when its message ends, or here.
            let name = "h2.goaway_unprocessed";
            match (stream.req.as_mut(), &mut stream.resp) {
                (Some(msg), _) => push_anomaly(&mut msg.anomalies, name),
                (None, Resp::Body(m)) => push_anomaly(&mut m.anomalies, name),
                (None, Resp::Awaiting) => stats.anomaly(Anomaly::H2GoawayUnprocessed),
                (None, Resp::Done) => {}
            }
        }
    }

    /// `dir` ends (FIN, RST, gap, close): every message open in it ends with `end`.
    pub(super) fn end_dir(
        &mut self,
        dir: Dir,
        end: BodyEnd,
        ts_us: i64,
        stats: &mut HttpCounters,
        out: &mut Vec<HttpEvent>,
    ) {
        self.dir_state(dir).block = None;
        let mut ids: Vec<u32> = self.streams.keys().copied().collect();
        ids.sort_unstable();
        for id in ids {
            self.end_stream(id, dir, end, ts_us, stats, out);
        }
    }

    /// `dir`'s message on stream `id` ends with `end`.
    fn end_stream(
        &mut self,
        id: u32,
        dir: Dir,
        end: BodyEnd,
        ts_us: i64,
        stats: &mut HttpCounters,
        out: &mut Vec<HttpEvent>,
    ) {
        match dir {
            Dir::Req => self.finish_request(id, false, ts_us, stats, out),
            Dir::Resp => {
                let client_closed = self.client_closed;
                self.end_response(id, end, client_closed, ts_us, stats, out);
            }
        }
        self.remove_if_finished(id);
    }

    /// The stream's request goes out (`complete`: its END_STREAM was seen).
    fn finish_request(
        &mut self,
        id: u32,
        complete: bool,
        ts_us: i64,
        stats: &mut HttpCounters,
        out: &mut Vec<HttpEvent>,
    ) {
        let Some(stream) = self.streams.get_mut(&id) else {
            return;
        };
        let Some(mut msg) = stream.req.take() else {
            return;
        };
        self.unfinished.remove(&(msg.ts_first_us, id));
        self.kept_request_bytes = self.kept_request_bytes.saturating_sub(msg.body.len());
        let mut tail = Vec::new();
        msg.decoder.finish(complete, &mut tail, &mut msg.anomalies);
        let room = self
            .limits
            .body_bytes
            .saturating_sub(self.kept_request_bytes)
            .saturating_sub(msg.body.len());
        msg.body
            .extend_from_slice(tail.get(..tail.len().min(room)).unwrap_or_default());
        for a in &msg.anomalies {
            stats.anomaly_name(a);
        }
        let depth = stream.xref.depth;
        out.push(HttpEvent::Request(HttpRequest {
            xref: stream.xref.clone(),
            h2_stream: Some(id),
            ts_first_us: msg.ts_first_us,
            ts_last_us: ts_us,
            frame: msg.frame,
            head: msg.head,
            body: msg.body,
            wire_len: msg.wire_len,
            complete,
            anomalies: msg.anomalies,
        }));
        self.exchanges.flush_deferred_for(depth, out);
        self.remove_if_finished(id);
    }

    fn finish_response(
        &mut self,
        id: u32,
        end: BodyEnd,
        ts_us: i64,
        stats: &mut HttpCounters,
        out: &mut Vec<HttpEvent>,
    ) {
        self.end_response(id, end, false, ts_us, stats, out);
        self.remove_if_finished(id);
    }

    /// The stream's response ends: `ResponseEnd` after a head, `NoResponse` before one.
    fn end_response(
        &mut self,
        id: u32,
        end: BodyEnd,
        client_closed: bool,
        ts_us: i64,
        stats: &mut HttpCounters,
        out: &mut Vec<HttpEvent>,
    ) {
        let Some(stream) = self.streams.get_mut(&id) else {
            return;
        };
        let waiting = stream.waiting();
        let xref = stream.xref.clone();
        let client_closed = client_closed && end != BodyEnd::Complete;
        match std::mem::replace(&mut stream.resp, Resp::Done) {
            Resp::Done => {}
            Resp::Awaiting => {
                let ev = HttpEvent::NoResponse {
                    xref,
                    ts_us,
                    end,
                    client_closed,
                };
                let _ = self.exchanges.emit(ev, waiting, stats, out);
            }
            Resp::Body(mut msg) => {
                let mut tail = Vec::new();
                msg.decoder
                    .finish(end == BodyEnd::Complete, &mut tail, &mut msg.anomalies);
                if !tail.is_empty() {
                    let ev = HttpEvent::ResponseBody {
                        xref: xref.clone(),
                        ts_us,
                        data: tail,
                    };
                    let _ = self.exchanges.emit(ev, waiting, stats, out);
                }
                for a in &msg.anomalies {
                    stats.anomaly_name(a);
                }
                let ev = HttpEvent::ResponseEnd {
                    xref,
                    ts_us,
                    end,
                    wire_len: msg.wire_len,
                    decoded_len: msg.decoder.decoded_len(),
                    anomalies: msg.anomalies,
                    client_closed,
                };
                let _ = self.exchanges.emit(ev, waiting, stats, out);
            }
        }
    }

    fn remove_if_finished(&mut self, id: u32) {
        if self.streams.get(&id).is_some_and(Stream::finished) {
            self.streams.remove(&id);
        }
    }
}
