//! Gaps (inside heads, bodies, or between messages) and the end of a direction.

use super::parse::{leading_empty_lines, parse_response_head, parse_status_line};
use super::*;
use crate::anomaly::Anomaly;
use arcstr::ArcStr;

impl Conn {
    pub(super) fn gap(
        &mut self,
        dir: Dir,
        len: GapLen,
        ts_us: i64,
        stats: &mut HttpCounters,
        out: &mut Vec<HttpEvent>,
    ) {
        let reader = self.reader(dir);
        // Offsets only order the deliveries still buffered, and every gap clears the
        // buffer: an unknown length moves them by nothing.
        reader.buf_offset = reader
            .buf_offset
            .saturating_add(len.bytes().unwrap_or_default());
        match reader.state {
            ReadState::Dead => {}
            ReadState::Resync { .. } => {
                let n = reader.clear();
                stats.http_bytes_skipped = stats.http_bytes_skipped.saturating_add(n as u64);
                reader.state = ReadState::Resync { line_start: false };
            }
            ReadState::Head => {
                let had_head = !reader.buf.is_empty();
                if had_head {
                    self.head_cut_by_gap(dir, ts_us, stats, out);
                }
                if self.reader(dir).head_started {
                    self.head_done(dir, Err(HeadSkip::CutByGap), stats);
                }
                let reader = self.reader(dir);
                let n = reader.clear();
                stats.http_bytes_skipped = stats.http_bytes_skipped.saturating_add(n as u64);
                reader.gap = true;
                // A head kept as a message carries the anomaly itself.
                if !had_head {
                    reader.gap_at_boundary = true;
                    stats.anomaly(Anomaly::HttpGapBetweenMessages);
                } else if n > 0 {
                    stats.anomaly(Anomaly::HttpGapInHead);
                }
                reader.state = ReadState::Resync { line_start: false };
            }
            ReadState::Body => {
                // Bytes still buffered are before the gap: read them first.
                let buf = std::mem::take(&mut reader.buf);
                let n = self.body(dir, &buf, ts_us, stats, out);
                let skipped = buf.len().saturating_sub(n);
                self.reader(dir).buf.clear();
                self.reader(dir).marks.clear();
                if self.reader(dir).state != ReadState::Body {
                    // The message ended before the gap; what followed is lost.
                    stats.http_bytes_skipped =
                        stats.http_bytes_skipped.saturating_add(skipped as u64);
                    let reader = self.reader(dir);
                    reader.state = ReadState::Resync { line_start: false };
                    reader.gap = true;
                    return;
                }
                self.body_gap(dir, len, ts_us, stats, out);
            }
        }
    }

    /// A gap cut the head being read. A request whose request line arrived is
    /// kept (incomplete); a response head that had begun was the answer to
    /// the oldest waiting request, which therefore gets `NoResponse` (gap),
    /// so later responses still pair with the right requests.
    pub(super) fn head_cut_by_gap(
        &mut self,
        dir: Dir,
        ts_us: i64,
        stats: &mut HttpCounters,
        out: &mut Vec<HttpEvent>,
    ) {
        match dir {
            Dir::Req => {
                let frame = self.req.marks.back().map_or(0, |m| m.2);
                self.promote_partial_request(ts_us, frame, "http.gap_in_head", stats, out);
            }
            Dir::Resp => {
                let skip = leading_empty_lines(&self.resp.buf);
                self.resp.consume(skip);
                let buf = &self.resp.buf;
                if !buf.starts_with(b"HTTP/")
                    || self.exchanges.oldest().is_some_and(|p| p.version == "0.9")
                {
                    return;
                }
                // The status line arrived whole: report the response with what
                // its head had (lines cut by the gap left out).
                let status_line = buf
                    .iter()
                    .position(|&b| b == b'\n')
                    .and_then(|lf| buf.get(..lf))
                    .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
                    .and_then(parse_status_line);
                let Some((_, status, _)) = status_line else {
                    if let Some(p) = self.exchanges.answer_oldest() {
                        // A response began: the server answered, whoever closed later.
                        let ev = HttpEvent::NoResponse {
                            xref: p.xref,
                            ts_us,
                            end: BodyEnd::Gap,
                            client_closed: false,
                        };
                        self.emit(ev, stats, out);
                    }
                    return;
                };
                if (100..200).contains(&status) && status != 101 {
                    return;
                }
                let fallback = (ts_us, self.resp.marks.back().map_or(0, |m| m.2));
                let (first_ts, first_frame) = self.resp.first_mark(fallback);
                let mut head_bytes = buf.clone();
                // Used, not skipped.
                self.resp.clear();
                if let Some(lf) = head_bytes.iter().rposition(|&b| b == b'\n') {
                    head_bytes.truncate(lf.saturating_add(1));
                }
                let mut anomalies = Vec::new();
                let Ok(head) = parse_response_head(&head_bytes, &mut anomalies) else {
                    return;
                };
                self.head_done(dir, Ok(()), stats);
                push_anomaly(&mut anomalies, "http.gap_in_head");
                let (xref, _) = self.pair_response(&mut anomalies);
                let decoder = ContentDecoder::new(None, &mut anomalies);
                self.emit(
                    HttpEvent::ResponseHead {
                        xref: xref.clone(),
                        ts_us: first_ts,
                        frame: first_frame,
                        head,
                    },
                    stats,
                    out,
                );
                self.resp_msg = Some(RespMsg {
                    xref,
                    wire_len: 0,
                    reader: BodyReader::Length(0),
                    decoder,
                    anomalies,
                    gap: true,
                });
                self.finish_response(BodyEnd::Gap, ts_us, stats, out);
                if status == 101 {
                    self.req.state = ReadState::Dead;
                    self.resp.state = ReadState::Dead;
                    self.req.clear();
                }
            }
        }
    }

    /// The bytes after a gap between responses are the middle of a message:
    /// a response began inside the gap, and it answered the oldest waiting
    /// request, which gets `NoResponse` (gap) so later responses pair right.
    pub(super) fn response_lost_in_gap(
        &mut self,
        ts_us: i64,
        stats: &mut HttpCounters,
        out: &mut Vec<HttpEvent>,
    ) {
        if let Some(p) = self.exchanges.answer_oldest() {
            // A response began inside the gap: the server answered.
            let ev = HttpEvent::NoResponse {
                xref: p.xref,
                ts_us,
                end: BodyEnd::Gap,
                client_closed: false,
            };
            self.emit(ev, stats, out);
        }
    }

    /// The request a response answers: the oldest waiting one, or a new
    /// depth of its own (`http.response_without_request`).
    pub(super) fn pair_response(
        &mut self,
        anomalies: &mut Vec<String>,
    ) -> (ExchangeRef, Option<ArcStr>) {
        match self.exchanges.answer_oldest() {
            Some(p) => (p.xref, Some(p.method)),
            None => {
                push_anomaly(anomalies, "http.response_without_request");
                (self.exchanges.next_exchange(), None)
            }
        }
    }

    /// A gap of `len` bytes inside the current body. Content-Length and
    /// chunk data keep their count (the gap is taken as body bytes that were
    /// not seen); otherwise, or when the gap's length is unknown, framing is lost
    /// and the message ends at the gap. A close-delimited body goes on either way.
    pub(super) fn body_gap(
        &mut self,
        dir: Dir,
        len: GapLen,
        ts_us: i64,
        stats: &mut HttpCounters,
        out: &mut Vec<HttpEvent>,
    ) {
        let (reader, decoder, anomalies) = match dir {
            Dir::Req => match self.req_msg.as_mut() {
                Some(m) => {
                    m.complete = false;
                    (&mut m.reader, &mut m.decoder, &mut m.anomalies)
                }
                None => return,
            },
            Dir::Resp => match self.resp_msg.as_mut() {
                Some(m) => {
                    m.gap = true;
                    (&mut m.reader, &mut m.decoder, &mut m.anomalies)
                }
                None => return,
            },
        };
        push_anomaly(anomalies, "http.gap_in_body");
        // Coded bodies cannot be decoded across a hole.
        if decoder.is_coded() {
            let mut sink = Vec::new();
            let mut ignore = Vec::new();
            decoder.finish(false, &mut sink, &mut ignore);
        }
        let (lost_framing, done) = match (reader, len) {
            (BodyReader::Close, _) => (false, false),
            (BodyReader::Length(_) | BodyReader::Chunked(_), GapLen::Unknown) => (true, false),
            (BodyReader::Length(rem), GapLen::Bytes(len)) => {
                let take = (*rem).min(len);
                *rem = rem.saturating_sub(take);
                (take < len, *rem == 0)
            }
            (BodyReader::Chunked(c), GapLen::Bytes(len)) => (c.skip_data(len) < len, false),
        };
        if done || lost_framing {
            match dir {
                Dir::Req => {
                    self.req.state = if lost_framing {
                        ReadState::Resync { line_start: false }
                    } else {
                        ReadState::Head
                    };
                    self.finish_request(ts_us, stats, out);
                }
                Dir::Resp => {
                    self.resp.state = if lost_framing {
                        ReadState::Resync { line_start: false }
                    } else {
                        ReadState::Head
                    };
                    self.finish_response(BodyEnd::Gap, ts_us, stats, out);
                }
            }
            self.reader(dir).gap = lost_framing;
        }
    }

    /// The direction ended (FIN, RST, or end of stream) with `end`.
    pub(super) fn end_dir(
        &mut self,
        dir: Dir,
        end: BodyEnd,
        ts_us: i64,
        stats: &mut HttpCounters,
        out: &mut Vec<HttpEvent>,
    ) {
        if self.reader(dir).state == ReadState::Dead {
            if dir == Dir::Resp {
                self.no_responses(end, ts_us, stats, out);
            }
            return;
        }
        let frame = self.reader(dir).marks.back().map_or(0, |m| m.2);
        // Whatever is buffered is judged as final: an unterminated head still counts.
        self.drain(dir, true, ts_us, frame, stats, out);
        if self.reader(dir).state == ReadState::Head && !self.reader(dir).buf.is_empty() {
            self.drain(dir, true, ts_us, frame, stats, out);
        }
        match dir {
            Dir::Req => {
                if let Some(m) = self.req_msg.as_mut() {
                    m.complete = false;
                    push_anomaly(&mut m.anomalies, "http.truncated_body");
                    self.finish_request(ts_us, stats, out);
                }
            }
            Dir::Resp => {
                if let Some(m) = self.resp_msg.as_mut() {
                    // A close-delimited body ends normally at FIN (RFC 9112 §6.3 rule 8).
                    let close_delimited = matches!(m.reader, BodyReader::Close);
                    if !close_delimited || end != BodyEnd::Fin {
                        push_anomaly(&mut m.anomalies, "http.truncated_body");
                    }
                    self.finish_response(end, ts_us, stats, out);
                }
            }
        }
        let reader = self.reader(dir);
        let n = reader.clear();
        stats.http_bytes_skipped = stats.http_bytes_skipped.saturating_add(n as u64);
        reader.state = ReadState::Dead;
        if dir == Dir::Resp {
            self.no_responses(end, ts_us, stats, out);
        }
    }

    /// Every request still waiting gets `NoResponse`.
    pub(super) fn no_responses(
        &mut self,
        end: BodyEnd,
        ts_us: i64,
        stats: &mut HttpCounters,
        out: &mut Vec<HttpEvent>,
    ) {
        if self.req_msg.is_some() && self.req.state == ReadState::Dead {
            self.finish_request(ts_us, stats, out);
        }
        let end = if self.resp.gap && end != BodyEnd::Rst {
            BodyEnd::Gap
        } else {
            end
        };
        while let Some(p) = self.exchanges.answer_oldest() {
            self.emit(
                HttpEvent::NoResponse {
                    xref: p.xref,
                    ts_us,
                    end,
                    client_closed: self.client_closed,
                },
                stats,
                out,
            );
        }
    }
}
