//! The byte path: buffered bytes to heads (or resynchronisation), and the start of each
//! request and response with its framing.

use super::framing::{Framing, request_framing, response_framing};
use super::parse::{
    Probe, Strictness, find_head_end, find_message_start, leading_empty_lines, parse_request_head,
    parse_response_head, probe,
};
use super::*;
use crate::anomaly::Anomaly;
use crate::http::BODY_RESERVE_MAX;
use crate::http::{Headers, ResponseHead};
use arcstr::ArcStr;

impl Conn {
    pub(super) fn data(
        &mut self,
        dir: Dir,
        bytes: &[u8],
        ts_us: i64,
        frame: u64,
        stats: &mut HttpCounters,
        out: &mut Vec<HttpEvent>,
    ) {
        let reader = self.reader(dir);
        if reader.state == ReadState::Dead {
            return;
        }
        // Fast path: body bytes are read straight from the delivery.
        if reader.state == ReadState::Body && reader.buf.is_empty() {
            let n = self.body(dir, bytes, ts_us, stats, out);
            let reader = self.reader(dir);
            reader.buf_offset = reader.buf_offset.saturating_add(n as u64);
            let rest = bytes.get(n..).unwrap_or_default();
            if rest.is_empty() {
                return;
            }
            reader.append(rest, ts_us, frame);
        } else {
            reader.append(bytes, ts_us, frame);
        }
        self.drain(dir, false, ts_us, frame, stats, out);
    }

    /// Processes buffered bytes as far as possible.
    pub(super) fn drain(
        &mut self,
        dir: Dir,
        at_end: bool,
        ts_us: i64,
        frame: u64,
        stats: &mut HttpCounters,
        out: &mut Vec<HttpEvent>,
    ) {
        loop {
            let state = self.reader(dir).state;
            if self.reader(dir).buf.is_empty() {
                return;
            }
            match state {
                ReadState::Dead => {
                    self.reader(dir).clear();
                    return;
                }
                ReadState::Body => {
                    let buf = std::mem::take(&mut self.reader(dir).buf);
                    let n = self.body(dir, &buf, ts_us, stats, out);
                    let reader = self.reader(dir);
                    reader.buf = buf;
                    reader.consume(n);
                    if n == 0 && reader.state == ReadState::Body {
                        return;
                    }
                }
                ReadState::Resync { line_start } => {
                    let reader = self.reader(dir);
                    let want = Some(match dir {
                        Dir::Req => Probe::Request,
                        Dir::Resp => Probe::Response,
                    });
                    let found = find_message_start(&reader.buf, want, line_start, at_end);
                    let skipping = found.map_or(reader.buf.len() > 16, |(at, _)| at > 0);
                    if reader.gap_at_boundary && (skipping || found.is_some()) {
                        reader.gap_at_boundary = false;
                        if skipping && dir == Dir::Resp {
                            self.response_lost_in_gap(ts_us, stats, out);
                        }
                    }
                    let reader = self.reader(dir);
                    match found {
                        Some((at, p)) => {
                            reader.consume(at);
                            stats.http_bytes_skipped =
                                stats.http_bytes_skipped.saturating_add(at as u64);
                            if p == Probe::NeedMore {
                                reader.state = ReadState::Resync { line_start: true };
                                return;
                            }
                            reader.state = ReadState::Head;
                            reader.gap = false;
                        }
                        None => {
                            // Keep a short tail: it may begin a message start.
                            let keep = reader.buf.len().min(16);
                            let drop = reader.buf.len().saturating_sub(keep);
                            let line_start =
                                match drop.checked_sub(1).and_then(|i| reader.buf.get(i)) {
                                    Some(b) => *b == b'\n',
                                    None => line_start,
                                };
                            reader.consume(drop);
                            stats.http_bytes_skipped =
                                stats.http_bytes_skipped.saturating_add(drop as u64);
                            reader.state = ReadState::Resync { line_start };
                            if at_end {
                                let n = reader.clear();
                                stats.http_bytes_skipped =
                                    stats.http_bytes_skipped.saturating_add(n as u64);
                            }
                            return;
                        }
                    }
                }
                ReadState::Head => {
                    if !self.head(dir, at_end, ts_us, frame, stats, out) {
                        return;
                    }
                }
            }
        }
    }

    /// Reads a head from the buffer. Returns false when more bytes are needed.
    pub(super) fn head(
        &mut self,
        dir: Dir,
        at_end: bool,
        ts_us: i64,
        frame: u64,
        stats: &mut HttpCounters,
        out: &mut Vec<HttpEvent>,
    ) -> bool {
        // The server answers while the request head is still open: the
        // request line was all there was (HTTP/0.9, or a cut head).
        if dir == Dir::Resp
            && self.exchanges.none_waiting()
            && self.req_msg.is_none()
            && self.req.state == ReadState::Head
            && !self.req.buf.is_empty()
        {
            self.promote_partial_request(ts_us, frame, "http.truncated_head", stats, out);
        }
        // A reply to an HTTP/0.9 request has no head: it is all body, up to
        // the close (RFC 1945 §4.1 Simple-Response; Zeek reads it so too).
        if dir == Dir::Resp && self.exchanges.oldest().is_some_and(|p| p.version == "0.9") {
            let (first_ts, first_frame) = self.resp.first_mark((ts_us, frame));
            let head = ResponseHead {
                status: 0,
                reason: ArcStr::new(),
                version: "0.9".into(),
                headers: Headers::default(),
            };
            self.head_done(dir, Ok(()), stats);
            self.start_response(head, first_ts, first_frame, vec![], ts_us, stats, out);
            return true;
        }
        let head_limit = self.limits.head_bytes;
        let reader = self.reader(dir);
        let skip = leading_empty_lines(&reader.buf);
        if skip > 0 {
            reader.consume(skip);
            if reader.buf.is_empty() {
                return false;
            }
        }
        let want = match dir {
            Dir::Req => Probe::Request,
            Dir::Resp => Probe::Response,
        };
        match probe(&reader.buf, Strictness::Lenient, at_end) {
            Probe::NeedMore => return false,
            p if p == want => {
                if !reader.head_started {
                    reader.head_started = true;
                    stats.http_messages = stats.http_messages.saturating_add(1);
                }
            }
            _ => {
                stats.anomaly(match dir {
                    Dir::Req => Anomaly::HttpBadRequestLine,
                    Dir::Resp => Anomaly::HttpBadStatusLine,
                });
                reader.state = ReadState::Resync { line_start: false };
                if reader.head_started {
                    self.head_done(dir, Err(HeadSkip::BadHead), stats);
                }
                return true;
            }
        }
        let mut scanned = reader.scanned;
        let end = find_head_end(&reader.buf, &mut scanned);
        reader.scanned = scanned;
        let (head_len, truncated) = match end {
            Some(n) if n <= head_limit => (n, false),
            None if at_end && reader.buf.len() <= head_limit => (reader.buf.len(), true),
            _ => {
                if end.is_some() || at_end || reader.buf.len() > head_limit {
                    stats.anomaly(Anomaly::HttpHeadTooLarge);
                    // Drop the oversized head: resync would otherwise find the same
                    // message start at offset 0 and read the head again, forever.
                    let skipped = end.unwrap_or(reader.buf.len());
                    stats.http_bytes_skipped =
                        stats.http_bytes_skipped.saturating_add(skipped as u64);
                    reader.consume(skipped);
                    reader.scanned = 0;
                    reader.state = ReadState::Resync { line_start: false };
                    self.head_done(dir, Err(HeadSkip::HeadTooLarge), stats);
                    return true;
                }
                return false;
            }
        };
        let (first_ts, first_frame) = reader.first_mark((ts_us, frame));
        let mut head_bytes = reader.buf.get(..head_len).unwrap_or_default().to_vec();
        if truncated {
            // An unfinished last line is cut, not malformed: leave it out.
            if let Some(lf) = head_bytes.iter().rposition(|&b| b == b'\n') {
                head_bytes.truncate(lf.saturating_add(1));
            }
        }
        reader.consume(head_len);
        reader.scanned = 0;
        let mut anomalies = Vec::new();
        if truncated {
            push_anomaly(&mut anomalies, "http.truncated_head");
        }
        match dir {
            Dir::Req => match parse_request_head(&head_bytes, &mut anomalies) {
                Ok(head) => {
                    self.head_done(dir, Ok(()), stats);
                    self.start_request(
                        head,
                        first_ts,
                        first_frame,
                        anomalies,
                        !truncated,
                        ts_us,
                        stats,
                        out,
                    )
                }
                Err(_) => {
                    self.head_done(dir, Err(HeadSkip::BadHead), stats);
                    stats.anomaly(Anomaly::HttpBadRequestLine);
                    stats.http_bytes_skipped =
                        stats.http_bytes_skipped.saturating_add(head_len as u64);
                    self.req.state = ReadState::Resync { line_start: true };
                }
            },
            Dir::Resp => match parse_response_head(&head_bytes, &mut anomalies) {
                Ok(head) => {
                    self.head_done(dir, Ok(()), stats);
                    if (100..200).contains(&head.status) && head.status != 101 {
                        // Interim response (RFC 9110 §15.2): not the final head.
                        return true;
                    }
                    self.start_response(head, first_ts, first_frame, anomalies, ts_us, stats, out);
                }
                Err(_) => {
                    self.head_done(dir, Err(HeadSkip::BadHead), stats);
                    stats.anomaly(Anomaly::HttpBadStatusLine);
                    stats.http_bytes_skipped =
                        stats.http_bytes_skipped.saturating_add(head_len as u64);
                    self.resp.state = ReadState::Resync { line_start: true };
                }
            },
        }
        true
    }

    /// The verdict on a head: parsed, or skipped for `reason`. A head taken without a
    /// probe (an HTTP/0.9 reply, a request promoted at a gap) is counted here first.
    pub(super) fn head_done(
        &mut self,
        dir: Dir,
        verdict: Result<(), HeadSkip>,
        stats: &mut HttpCounters,
    ) {
        if !std::mem::take(&mut self.reader(dir).head_started) {
            stats.http_messages = stats.http_messages.saturating_add(1);
        }
        match verdict {
            Ok(()) => stats.http_messages_parsed = stats.http_messages_parsed.saturating_add(1),
            Err(reason) => stats.skip_http_message(reason),
        }
    }

    /// Takes the buffered start of a request head as the whole request: an
    /// HTTP/0.9 request ends with its request line (RFC 1945 §4.1); any other
    /// head is cut (`http.truncated_head`).
    pub(super) fn promote_partial_request(
        &mut self,
        ts_us: i64,
        frame: u64,
        cut_anomaly: &str,
        stats: &mut HttpCounters,
        out: &mut Vec<HttpEvent>,
    ) {
        let skip = leading_empty_lines(&self.req.buf);
        let rest = self.req.buf.get(skip..).unwrap_or_default();
        if !rest.contains(&b'\n') || probe(rest, Strictness::Lenient, false) != Probe::Request {
            return;
        }
        self.req.consume(skip);
        let (first_ts, first_frame) = self.req.first_mark((ts_us, frame));
        let mut head_bytes = std::mem::take(&mut self.req.buf);
        self.req.clear();
        self.req.buf_offset = self.req.buf_offset.saturating_add(head_bytes.len() as u64);
        // An unfinished last line is cut, not malformed: leave it out.
        if let Some(lf) = head_bytes.iter().rposition(|&b| b == b'\n') {
            head_bytes.truncate(lf.saturating_add(1));
        }
        self.req.scanned = 0;
        let mut anomalies = Vec::new();
        let parsed = parse_request_head(&head_bytes, &mut anomalies);
        self.head_done(
            Dir::Req,
            parsed.as_ref().map(|_| ()).map_err(|_| HeadSkip::BadHead),
            stats,
        );
        if let Ok(head) = parsed {
            let complete = head.version == "0.9";
            if !complete {
                push_anomaly(&mut anomalies, cut_anomaly);
            }
            self.start_request(
                head,
                first_ts,
                first_frame,
                anomalies,
                complete,
                ts_us,
                stats,
                out,
            );
        }
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn start_request(
        &mut self,
        head: RequestHead,
        ts_first_us: i64,
        frame: u64,
        mut anomalies: Vec<String>,
        head_complete: bool,
        ts_us: i64,
        stats: &mut HttpCounters,
        out: &mut Vec<HttpEvent>,
    ) {
        let waiting = self.req_msg.as_ref().map(|m| m.xref.depth);
        let xref = self.exchanges.open_request(
            head.method.clone(),
            head.version.clone(),
            ts_us,
            waiting,
            stats,
            out,
        );
        let framing = if head_complete {
            request_framing(&head.headers, &mut anomalies)
        } else {
            Framing::None
        };
        let decoder = ContentDecoder::with_limit(
            head.headers.get("content-encoding"),
            self.limits.decoded_bytes,
            &mut anomalies,
        );
        let reader = match framing {
            Framing::Length(n) => Some(BodyReader::Length(n)),
            Framing::Chunked => Some(BodyReader::Chunked(ChunkedDecoder::new())),
            Framing::None | Framing::Close | Framing::Tunnel => None,
        };
        // A declared length sizes the body at once: no copies as it grows.
        let body = match framing {
            Framing::Length(n) => Vec::with_capacity(
                usize::try_from(n)
                    .unwrap_or(usize::MAX)
                    .min(self.limits.body_bytes)
                    .min(BODY_RESERVE_MAX),
            ),
            _ => Vec::new(),
        };
        let msg = ReqMsg {
            xref,
            ts_first_us,
            frame,
            head,
            body,
            wire_len: 0,
            reader: reader.unwrap_or(BodyReader::Length(0)),
            decoder,
            anomalies,
            complete: head_complete,
        };
        self.req_msg = Some(msg);
        if matches!(framing, Framing::Length(_) | Framing::Chunked) {
            self.req.state = ReadState::Body;
        } else {
            self.req.state = ReadState::Head;
            self.finish_request(ts_us, stats, out);
        }
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn start_response(
        &mut self,
        head: ResponseHead,
        ts_first_us: i64,
        frame: u64,
        mut anomalies: Vec<String>,
        ts_us: i64,
        stats: &mut HttpCounters,
        out: &mut Vec<HttpEvent>,
    ) {
        let (xref, method) = self.pair_response(&mut anomalies);
        if head.status == 101 && upgrade::is_h2c(&head.headers) {
            // The response to this request comes as HTTP/2 stream 1.
            self.upgrade_h2c(Some(xref), ts_us, stats, out);
            return;
        }
        let connect_tunnel = head.status != 101;
        let framing = if head.version == "0.9" {
            Framing::Close
        } else {
            response_framing(method.as_deref(), &head, &mut anomalies)
        };
        let decoder = ContentDecoder::with_limit(
            head.headers.get("content-encoding"),
            self.limits.decoded_bytes,
            &mut anomalies,
        );
        self.emit(
            HttpEvent::ResponseHead {
                xref: xref.clone(),
                ts_us: ts_first_us,
                frame,
                head,
            },
            stats,
            out,
        );
        let reader = match framing {
            Framing::Length(n) => BodyReader::Length(n),
            Framing::Chunked => BodyReader::Chunked(ChunkedDecoder::new()),
            Framing::Close => BodyReader::Close,
            Framing::None | Framing::Tunnel => {
                self.resp_msg = Some(RespMsg {
                    xref,
                    wire_len: 0,
                    reader: BodyReader::Length(0),
                    decoder,
                    anomalies,
                    gap: false,
                });
                self.finish_response(BodyEnd::Complete, ts_us, stats, out);
                if framing == Framing::Tunnel && connect_tunnel {
                    // A CONNECT tunnel: HTTP/2 with prior knowledge may run inside it.
                    self.upgrade_h2c(None, ts_us, stats, out);
                } else if framing == Framing::Tunnel {
                    // RFC 9110 §7.8 / RFC 9112 §6.3 rule 2: the bytes after this
                    // head belong to another protocol.
                    self.req.state = ReadState::Dead;
                    self.resp.state = ReadState::Dead;
                    self.req.clear();
                    self.resp.clear();
                    if let Some(m) = self.req_msg.as_mut() {
                        m.complete = false;
                    }
                    self.finish_request(ts_us, stats, out);
                }
                return;
            }
        };
        self.resp_msg = Some(RespMsg {
            xref,
            wire_len: 0,
            reader,
            decoder,
            anomalies,
            gap: false,
        });
        self.resp.state = ReadState::Body;
    }
}
