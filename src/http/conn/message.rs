//! The byte path: heads, bodies, pairing, and emitting events in order.

use super::*;
use crate::limits::BODY_RESERVE_MAX;

/// Largest buffer reserved up front for one piece of a response body (a buffer with more
/// data than this after the body's start is mostly the next messages).
const PIECE_CAPACITY_LIMIT: usize = 256 * 1024;

impl Conn {
    pub(super) fn data(
        &mut self,
        dir: Dir,
        bytes: &[u8],
        ts_us: i64,
        frame: u64,
        stats: &mut Stats,
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
        stats: &mut Stats,
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
        stats: &mut Stats,
        out: &mut Vec<HttpEvent>,
    ) -> bool {
        // The server answers while the request head is still open: the
        // request line was all there was (HTTP/0.9, or a cut head).
        if dir == Dir::Resp
            && self.pending.is_empty()
            && self.req_msg.is_none()
            && self.req.state == ReadState::Head
            && !self.req.buf.is_empty()
        {
            self.promote_partial_request(ts_us, frame, "http.truncated_head", stats, out);
        }
        // A reply to an HTTP/0.9 request has no head: it is all body, up to
        // the close (RFC 1945 §4.1 Simple-Response; Zeek reads it so too).
        if dir == Dir::Resp && self.pending.front().is_some_and(|p| p.version == "0.9") {
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
                    Dir::Req => "http.bad_request_line",
                    Dir::Resp => "http.bad_status_line",
                });
                reader.state = ReadState::Resync { line_start: false };
                if reader.head_started {
                    self.head_done(dir, Err("bad_head"), stats);
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
                    stats.anomaly("http.head_too_large");
                    // Drop the oversized head: resync would otherwise find the same
                    // message start at offset 0 and read the head again, forever.
                    let skipped = end.unwrap_or(reader.buf.len());
                    stats.http_bytes_skipped =
                        stats.http_bytes_skipped.saturating_add(skipped as u64);
                    reader.consume(skipped);
                    reader.scanned = 0;
                    reader.state = ReadState::Resync { line_start: false };
                    self.head_done(dir, Err("head_too_large"), stats);
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
                    self.head_done(dir, Err("bad_head"), stats);
                    stats.anomaly("http.bad_request_line");
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
                    self.head_done(dir, Err("bad_head"), stats);
                    stats.anomaly("http.bad_status_line");
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
    pub(super) fn head_done(&mut self, dir: Dir, verdict: Result<(), &str>, stats: &mut Stats) {
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
        stats: &mut Stats,
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
            parsed.as_ref().map(|_| ()).map_err(|_| "bad_head"),
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
        stats: &mut Stats,
        out: &mut Vec<HttpEvent>,
    ) {
        let xref = self.xref();
        if self.pending.len() >= PENDING_LIMIT
            && let Some(old) = self.pending.pop_front()
        {
            stats.anomaly("http.pending_limit");
            self.emit(
                HttpEvent::NoResponse {
                    xref: old.xref,
                    ts_us,
                    end: BodyEnd::CaptureEnd,
                    client_closed: false,
                },
                stats,
                out,
            );
        }
        self.pending.push_back(Pending {
            xref: xref.clone(),
            method: head.method.clone(),
            version: head.version.clone(),
        });
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
        stats: &mut Stats,
        out: &mut Vec<HttpEvent>,
    ) {
        let (xref, method) = self.pair_response(&mut anomalies);
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
                if framing == Framing::Tunnel {
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

    /// Reads body bytes of the current message in `dir`; returns bytes consumed.
    pub(super) fn body(
        &mut self,
        dir: Dir,
        bytes: &[u8],
        ts_us: i64,
        stats: &mut Stats,
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
        stats: &mut Stats,
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
        stats: &mut Stats,
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
        stats: &mut Stats,
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
            stats.anomaly(a);
        }
        out.push(HttpEvent::Request(HttpRequest {
            xref: msg.xref,
            ts_first_us: msg.ts_first_us,
            ts_last_us: ts_us,
            frame: msg.frame,
            head: msg.head,
            body: msg.body,
            wire_len: msg.wire_len,
            complete: msg.complete,
            anomalies: msg.anomalies,
        }));
        self.flush_deferred(out);
    }

    pub(super) fn finish_response(
        &mut self,
        end: BodyEnd,
        ts_us: i64,
        stats: &mut Stats,
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
            stats.anomaly(a);
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

    /// Sends an event out, or holds it while its request is still arriving.
    pub(super) fn emit(&mut self, ev: HttpEvent, stats: &mut Stats, out: &mut Vec<HttpEvent>) {
        if matches!(
            ev,
            HttpEvent::ResponseEnd { .. } | HttpEvent::NoResponse { .. }
        ) {
            stats.http_exchanges = stats.http_exchanges.saturating_add(1);
        }
        let waiting = self.req_msg.as_ref().map(|m| m.xref.depth);
        let depth = match &ev {
            HttpEvent::Request(r) => r.xref.depth,
            HttpEvent::ResponseHead { xref, .. }
            | HttpEvent::ResponseBody { xref, .. }
            | HttpEvent::ResponseEnd { xref, .. }
            | HttpEvent::NoResponse { xref, .. } => xref.depth,
        };
        if waiting != Some(depth) {
            out.push(ev);
            return;
        }
        if let HttpEvent::ResponseBody { data, .. } = &ev {
            if self.deferred_bytes.saturating_add(data.len()) > DEFERRED_RESPONSE_LIMIT {
                if let Some(m) = self.resp_msg.as_mut() {
                    push_anomaly(&mut m.anomalies, "http.deferred_limit");
                }
                return;
            }
            self.deferred_bytes = self.deferred_bytes.saturating_add(data.len());
        }
        self.deferred.push(ev);
    }

    pub(super) fn flush_deferred(&mut self, out: &mut Vec<HttpEvent>) {
        out.append(&mut self.deferred);
        self.deferred_bytes = 0;
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
