//! Incremental `text/event-stream` parser (WHATWG HTML, "Server-sent events",
//! section 9.2.6 "Interpreting an event stream").
//!
//! Bytes come in pieces of any size; a line end may be split between pieces
//! (a CR at the end of one piece followed by LF at the start of the next is
//! one line end). Each dispatched event carries the time of the piece that
//! completed it. Never panics; an event larger than [`MAX_SSE_EVENT_BYTES`]
//! is dropped with the anomaly `rpc.sse_event_too_large`.

/// Largest event (its pending line plus its `data` buffer) kept in memory.
/// Bigger events are skipped up to the next blank line.
pub const MAX_SSE_EVENT_BYTES: usize = 16 * 1024 * 1024;

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// Time of the body piece whose bytes completed the event (µs).
    pub ts_us: i64,
    /// The stream's last event ID at dispatch (WHATWG: it persists across
    /// events); `None` when never set or set to the empty string.
    pub id: Option<String>,
    /// Event type; `message` when the event had no `event` field.
    pub event: String,
    /// `data` lines joined with LF.
    pub data: String,
    /// A `retry` value (ms) seen since the previous dispatched event.
    pub retry_ms: Option<u64>,
}

/// Parser state for one stream. See the module doc.
#[derive(Debug)]
pub struct SseParser {
    /// Bytes of the current, unfinished line.
    line: Vec<u8>,
    /// The previous piece ended with CR: a leading LF in the next piece belongs to it.
    pending_cr: bool,
    /// Bytes seen so far of a possible leading BOM (0..=3); `None` once decided.
    bom_seen: Option<usize>,
    data: String,
    /// A `data` field was seen in the current event (WHATWG: the buffer gets a LF per field).
    has_data: bool,
    event_type: String,
    last_event_id: String,
    retry_ms: Option<u64>,
    /// Skipping the rest of an oversized event until the next blank line.
    skipping: bool,
    /// Anything (a field or a partial line) is buffered for an event not yet dispatched.
    open_fields: bool,
    anomalies: Vec<&'static str>,
    events: u64,
    /// Largest event kept ([`MAX_SSE_EVENT_BYTES`] unless configured).
    max_event_bytes: usize,
}

impl Default for SseParser {
    fn default() -> Self {
        Self::new()
    }
}

impl SseParser {
    /// A parser at the start of a stream.
    pub fn new() -> Self {
        Self::with_max_event_bytes(MAX_SSE_EVENT_BYTES)
    }

    /// A parser that skips events larger than `max_event_bytes` (`rpc.sse_event_too_large`).
    pub fn with_max_event_bytes(max_event_bytes: usize) -> Self {
        SseParser {
            line: Vec::new(),
            pending_cr: false,
            bom_seen: Some(0),
            data: String::new(),
            has_data: false,
            event_type: String::new(),
            last_event_id: String::new(),
            retry_ms: None,
            skipping: false,
            open_fields: false,
            anomalies: Vec::new(),
            events: 0,
            max_event_bytes,
        }
    }

    /// Feed the next piece of the stream, received at `ts_us`; completed events go to `out`.
    pub fn feed(&mut self, bytes: &[u8], ts_us: i64, out: &mut Vec<SseEvent>) {
        let mut rest = bytes;
        // WHATWG: one leading U+FEFF is stripped; it may be split over pieces.
        while let Some(n) = self.bom_seen {
            let Some((&b, tail)) = rest.split_first() else {
                return;
            };
            const BOM: [u8; 3] = [0xEF, 0xBB, 0xBF];
            if BOM.get(n) == Some(&b) {
                rest = tail;
                self.bom_seen = if n + 1 == BOM.len() {
                    None
                } else {
                    Some(n + 1)
                };
            } else {
                // Not a BOM after all: the bytes consumed so far are line content.
                if let Some(prefix) = BOM.get(..n) {
                    self.line.extend_from_slice(prefix);
                }
                self.bom_seen = None;
            }
        }
        if self.pending_cr {
            self.pending_cr = false;
            if let Some(tail) = rest.strip_prefix(b"\n") {
                rest = tail;
            }
        }
        while !rest.is_empty() {
            match memchr::memchr2(b'\n', b'\r', rest) {
                None => {
                    self.push_line_bytes(rest);
                    rest = &[];
                }
                Some(pos) => {
                    let (head, tail) = rest.split_at(pos);
                    let whole_line_fits = self.line.is_empty()
                        && !self.skipping
                        && self.data.len().saturating_add(head.len()) <= self.max_event_bytes;
                    if whole_line_fits {
                        // The usual case: the line lies within this piece and is read in place.
                        self.line_done(head, ts_us, out);
                    } else {
                        self.push_line_bytes(head);
                        self.end_line(ts_us, out);
                    }
                    let is_cr = tail.first() == Some(&b'\r');
                    let mut after = tail.get(1..).unwrap_or_default();
                    if is_cr {
                        match after.first() {
                            Some(b'\n') => after = after.get(1..).unwrap_or_default(),
                            None => self.pending_cr = true,
                            Some(_) => {}
                        }
                    }
                    rest = after;
                }
            }
        }
    }

    /// End of the stream. WHATWG: an event not followed by a blank line is
    /// not dispatched; it is reported as `rpc.sse_unterminated_event`.
    pub fn finish(&mut self, out: &mut Vec<SseEvent>) {
        let _ = out; // nothing is dispatched at end of stream, by the spec
        if self.open_fields || !self.line.is_empty() {
            self.flag("rpc.sse_unterminated_event");
        }
        self.line.clear();
        self.reset_event();
    }

    /// Anomalies seen since the last call (names, `rpc.*`; each at most once per call).
    pub fn take_anomalies(&mut self) -> Vec<&'static str> {
        std::mem::take(&mut self.anomalies)
    }

    /// The last event ID buffer (`None` when empty).
    pub fn last_event_id(&self) -> Option<&str> {
        (!self.last_event_id.is_empty()).then_some(self.last_event_id.as_str())
    }

    /// Events dispatched so far.
    pub fn events(&self) -> u64 {
        self.events
    }

    /// Record an anomaly once per stream (a garbage stream must not grow memory per line).
    fn flag(&mut self, name: &'static str) {
        if !self.anomalies.contains(&name) {
            self.anomalies.push(name);
        }
    }

    fn push_line_bytes(&mut self, b: &[u8]) {
        if b.is_empty() {
            return;
        }
        if self.skipping {
            return;
        }
        if self
            .line
            .len()
            .saturating_add(self.data.len())
            .saturating_add(b.len())
            > self.max_event_bytes
        {
            self.flag("rpc.sse_event_too_large");
            self.skipping = true;
            self.line.clear();
            self.reset_event();
            return;
        }
        self.line.extend_from_slice(b);
    }

    fn reset_event(&mut self) {
        self.data.clear();
        self.has_data = false;
        self.event_type.clear();
        self.open_fields = false;
    }

    fn end_line(&mut self, ts_us: i64, out: &mut Vec<SseEvent>) {
        let mut line = std::mem::take(&mut self.line);
        self.line_done(&line, ts_us, out);
        // The buffer goes back for the next line: no allocation per line.
        line.clear();
        self.line = line;
    }

    fn line_done(&mut self, line: &[u8], ts_us: i64, out: &mut Vec<SseEvent>) {
        if self.skipping {
            if line.is_empty() {
                self.skipping = false;
            }
            return;
        }
        if line.is_empty() {
            self.dispatch(ts_us, out);
            return;
        }
        self.open_fields = true;
        // Valid UTF-8 (the usual case) is checked by the SIMD validator, borrowed as is.
        let text = match simdutf8::basic::from_utf8(line) {
            Ok(s) => std::borrow::Cow::Borrowed(s),
            Err(_) => String::from_utf8_lossy(line),
        };
        if text.starts_with(':') {
            return; // comment (keep-alives such as `: ping`)
        }
        let (field, value) = match text.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (text.as_ref(), ""),
        };
        match field {
            "event" => self.event_type = value.to_string(),
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.has_data = true;
                self.data.push_str(value);
            }
            "id" => {
                // WHATWG: an id containing NUL is ignored.
                if !value.contains('\0') {
                    self.last_event_id = value.to_string();
                }
            }
            "retry" => {
                if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
                    // Too many digits to fit: ignore, as a field we cannot use.
                    self.retry_ms = value.parse().ok().or(self.retry_ms);
                }
            }
            _ => self.flag("rpc.sse_unknown_field"),
        }
    }

    fn dispatch(&mut self, ts_us: i64, out: &mut Vec<SseEvent>) {
        // WHATWG: with an empty data buffer nothing is dispatched (a block of
        // only `id:`/`retry:` still updated the stream state).
        if !self.has_data {
            self.reset_event();
            return;
        }
        let event = if self.event_type.is_empty() {
            "message".to_string()
        } else {
            std::mem::take(&mut self.event_type)
        };
        out.push(SseEvent {
            ts_us,
            id: self.last_event_id().map(str::to_string),
            event,
            data: std::mem::take(&mut self.data),
            retry_ms: self.retry_ms.take(),
        });
        self.events = self.events.saturating_add(1);
        self.reset_event();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_all(input: &[u8]) -> (Vec<SseEvent>, Vec<&'static str>) {
        let mut p = SseParser::new();
        let mut out = Vec::new();
        p.feed(input, 1, &mut out);
        p.finish(&mut out);
        (out, p.take_anomalies())
    }

    fn ev(id: Option<&str>, event: &str, data: &str) -> SseEvent {
        SseEvent {
            ts_us: 1,
            id: id.map(str::to_string),
            event: event.to_string(),
            data: data.to_string(),
            retry_ms: None,
        }
    }

    const SAMPLE: &[u8] = b"\xEF\xBB\xBF: keepalive\r\nevent: message\r\nid: 7\r\ndata: {\"a\":1}\r\n\r\ndata:x\rdata: y\r\rretry: 1500\nid\ndata\n\nfoo: bar\ndata: z\n\nevent: endpoint\ndata: /messages?sessionId=1\n\n";

    fn sample_expected() -> Vec<SseEvent> {
        let mut e3 = ev(None, "message", "");
        e3.retry_ms = Some(1500);
        vec![
            ev(Some("7"), "message", "{\"a\":1}"),
            ev(Some("7"), "message", "x\ny"),
            e3,
            ev(None, "message", "z"),
            ev(None, "endpoint", "/messages?sessionId=1"),
        ]
    }

    #[test]
    fn mixed_line_ends_bom_comments_multiline() {
        let (out, anomalies) = parse_all(SAMPLE);
        assert_eq!(out, sample_expected());
        assert_eq!(anomalies, vec!["rpc.sse_unknown_field"]);
    }

    #[test]
    fn split_at_every_byte_offset() {
        for cut in 0..=SAMPLE.len() {
            let (a, b) = SAMPLE.split_at(cut);
            let mut p = SseParser::new();
            let mut out = Vec::new();
            p.feed(a, 1, &mut out);
            p.feed(b, 1, &mut out);
            p.finish(&mut out);
            assert_eq!(out, sample_expected(), "cut at {cut}");
        }
    }

    #[test]
    fn one_byte_at_a_time_with_times() {
        let mut p = SseParser::new();
        let mut out = Vec::new();
        for (i, b) in SAMPLE.iter().enumerate() {
            p.feed(std::slice::from_ref(b), i as i64, &mut out);
        }
        let data: Vec<_> = out.iter().map(|e| e.data.as_str()).collect();
        assert_eq!(
            data,
            vec!["{\"a\":1}", "x\ny", "", "z", "/messages?sessionId=1"]
        );
        // The first event is completed by the CR of the blank line (a CR alone ends a line).
        let end = SAMPLE.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 2;
        assert_eq!(out[0].ts_us, end as i64);
    }

    #[test]
    fn cr_at_piece_end_then_lf() {
        let mut p = SseParser::new();
        let mut out = Vec::new();
        p.feed(b"data: a\r", 1, &mut out);
        p.feed(b"\n\r", 2, &mut out);
        p.feed(b"\n", 3, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].data, "a");
        assert_eq!(
            out[0].ts_us, 2,
            "the CR at the end of piece 2 is the blank line"
        );
    }

    #[test]
    fn unterminated_final_event_is_not_dispatched() {
        let (out, anomalies) = parse_all(b"data: a\n\ndata: b\n");
        assert_eq!(out, vec![ev(None, "message", "a")]);
        assert_eq!(anomalies, vec!["rpc.sse_unterminated_event"]);
        let (out, anomalies) = parse_all(b"data: a\n\n");
        assert_eq!(out.len(), 1);
        assert!(anomalies.is_empty());
    }

    #[test]
    fn bom_only_stripped_at_start() {
        let (out, _) = parse_all(b"data: \xEF\xBB\xBFa\n\n");
        assert_eq!(out[0].data, "\u{FEFF}a");
        let (out, _) = parse_all(b"\xEFdata: a\n\n");
        // Not a BOM: the byte stays in the field name, so the line is an unknown field.
        assert!(out.is_empty());
    }

    #[test]
    fn id_with_nul_ignored_and_id_persists() {
        let (out, _) = parse_all(b"id: 1\ndata: a\n\nid: 2\0\ndata: b\n\nid:\ndata: c\n\n");
        let ids: Vec<_> = out.iter().map(|e| e.id.clone()).collect();
        assert_eq!(ids, vec![Some("1".into()), Some("1".into()), None]);
    }

    #[test]
    fn retry_must_be_digits() {
        let (out, _) = parse_all(b"retry: 12a\ndata: a\n\nretry: 30\ndata: b\n\n");
        assert_eq!(out[0].retry_ms, None);
        assert_eq!(out[1].retry_ms, Some(30));
    }

    #[test]
    fn oversized_event_dropped_and_stream_recovers() {
        let mut p = SseParser::new();
        let mut out = Vec::new();
        let chunk = vec![b'x'; 1024 * 1024];
        p.feed(b"data: ", 1, &mut out);
        for _ in 0..17 {
            p.feed(&chunk, 1, &mut out);
        }
        p.feed(b"\n\ndata: ok\n\n", 2, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].data, "ok");
        assert_eq!(p.take_anomalies(), vec!["rpc.sse_event_too_large"]);
    }

    proptest::proptest! {
        /// Any bytes, cut into any pieces, give the same events as the whole.
        #[test]
        fn pieces_equal_whole(
            data in proptest::collection::vec(
                proptest::sample::select(b"data: {}x\r\n:id\xef\xbb\xbfretryevent 1".to_vec()),
                0..200,
            ),
            cuts in proptest::collection::vec(0usize..200, 0..8),
        ) {
            let whole = parse_all(&data).0;
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(data.len())).collect();
            cuts.sort_unstable();
            let mut p = SseParser::new();
            let mut out = Vec::new();
            let mut start = 0;
            for c in cuts.into_iter().chain([data.len()]) {
                p.feed(&data[start..c], 1, &mut out);
                start = c;
            }
            p.finish(&mut out);
            proptest::prop_assert_eq!(out, whole);
        }
    }

    #[test]
    fn garbage_never_panics() {
        let mut p = SseParser::new();
        let mut out = Vec::new();
        p.feed(b"\xff\xfe\r\r\n\n::\0data\xc3", 0, &mut out);
        p.finish(&mut out);
        assert!(out.is_empty());
    }
}
