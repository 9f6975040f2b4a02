//! The registry of the run's counter names: every anomaly (`stage.condition`, e.g.
//! `flow.overlap_mismatch`) with its meaning and stage, listed once as an [`Anomaly`], and the
//! reasons by which skipped packets, unused TCP bytes and skipped HTTP heads are counted.
//! The stages count by these keys (their counters are their own, `crate::counters`).
//!
//! Identities the run summary promises:
//! - `packets_total = packets_decoded + sum(packets_skipped)`;
//! - `tcp_payload_bytes_seen = tcp_payload_bytes + duplicate_bytes + sum(tcp_bytes_unused)`
//!   (gap bytes are sequence space never captured, so they are not among the bytes seen);
//! - `http_messages = http_messages_parsed + sum(http_messages_skipped)`;
//! - `tls_bytes_received = tls_bytes_handshake + tls_bytes_application + sum(tls_bytes_undecrypted)`.

use crate::contract::contract_names;

contract_names! {
    /// Why a packet was not used: the `packets_skipped` keys.
    pub enum SkipReason {
        /// Link type we do not decode.
        LinkType => "link_type",
        /// Not IPv4/IPv6 (ARP, LLDP, ...).
        NotIp => "not_ip",
        /// IP but not TCP (UDP, ICMP, ...).
        NotTcp => "not_tcp",
        /// Headers that do not parse.
        Malformed => "malformed",
        /// Cut by the snap length before the TCP header ended.
        Truncated => "truncated",
        /// An IP fragment whose datagram never completed or could not be reassembled.
        Fragment => "ip_fragment",
    }
}

contract_names! {
    /// Why captured TCP payload bytes cannot be stream data: the `tcp_bytes_unused` keys.
    pub enum UnusedBytes {
        /// Below the stream's first sequence number.
        BeforeStreamStart => "before_stream_start",
        /// Too far ahead of the stream to be believed.
        OutOfWindow => "out_of_window",
        /// Past the sender's FIN.
        AfterFin => "after_fin",
        /// On a flow already closed.
        AfterClose => "after_close",
        /// Carried by a RST.
        RstPayload => "rst_payload",
    }
}

contract_names! {
    /// Why an HTTP message head begun was not usable: the `http_messages_skipped` keys.
    pub enum HeadSkip {
        /// Past `--max-header`.
        HeadTooLarge => "head_too_large",
        /// Does not parse.
        BadHead => "bad_head",
        /// A capture gap inside it.
        CutByGap => "cut_by_gap",
        /// The stream ended inside it.
        Unfinished => "unfinished",
        /// An HTTP/2 stream past `--max-h2-streams`.
        StreamLimit => "stream_limit",
    }
}

/// One anomaly name and what it means. A name ending in `<...>` is a pattern: the code
/// appends a value from a known set (e.g. `http.no_response_<stream_end>`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AnomalyName {
    pub name: &'static str,
    pub meaning: &'static str,
}

impl AnomalyName {
    /// The stage that records it: the name's prefix (`flow` in `flow.evicted`).
    pub fn stage(&self) -> &'static str {
        self.name
            .split_once('.')
            .map_or(self.name, |(stage, _)| stage)
    }

    /// Whether `name` is this entry (or, for a pattern, one of its names).
    pub fn matches(&self, name: &str) -> bool {
        match self.name.split_once('<') {
            Some((prefix, _)) => name.strip_prefix(prefix).is_some_and(|rest| {
                !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')
            }),
            None => self.name == name,
        }
    }
}

const fn a(name: &'static str, meaning: &'static str) -> AnomalyName {
    AnomalyName { name, meaning }
}

/// Declares [`Anomaly`] and [`ANOMALIES`] from one list of `Variant => "name": "meaning"`.
macro_rules! registry {
    ($($variant:ident => $name:literal: $meaning:literal,)+) => {
        contract_names! {
            /// Every anomaly name the stages record, in stage order: the key the stages
            /// count by. A pattern entry (`h2.goaway_<error>`) is counted with its value
            /// appended (`AnomalyCounts::add_pattern`).
            pub enum Anomaly {
                $($variant => $name,)+
            }
        }

        /// Every anomaly name with its meaning, in stage order. README's anomaly table is
        /// this list (a test compares them); a name missing here fails the tests.
        pub const ANOMALIES: &[AnomalyName] = &[$(a($name, $meaning),)+];
    };
}

registry! {
    CaptureDamagedInput => "capture.damaged_input":
        "an input could not be read to its end (truncated or corrupt file)",
    CaptureTimeWentBackwards => "capture.time_went_backwards":
        "a packet is older than the one before it; latencies across it are unreliable",
    CaptureUnknownInterface => "capture.unknown_interface":
        "a pcapng packet names an interface that was never described",
    DecodeIpFragmentIncomplete => "decode.ip_fragment_incomplete":
        "IP fragments never completed into a datagram",
    FlowBeforeStreamStart => "flow.before_stream_start":
        "data or FIN before the stream's first sequence number",
    FlowBufferLimit => "flow.buffer_limit":
        "out-of-order bytes beyond `--max-flow-buffer`; dropped as a gap",
    FlowDataAfterClose => "flow.data_after_close": "payload on a flow already closed",
    FlowDataAfterFin => "flow.data_after_fin": "payload past the sender's FIN",
    FlowEvicted => "flow.evicted": "a flow evicted to stay within `--max-open-flows`",
    FlowFinMismatch => "flow.fin_mismatch": "a FIN below data already delivered",
    FlowOverlapMismatch => "flow.overlap_mismatch":
        "a retransmission whose bytes differ from the first copy (the first is kept)",
    FlowSeqOutOfWindow => "flow.seq_out_of_window":
        "a segment too far ahead of the stream to be believed",
    FlowTruncatedSegment => "flow.truncated_segment": "a segment cut short by the snap length",
    TlsBadHandshake => "tls.bad_handshake": "a handshake message whose fields do not fit",
    TlsBadInnerContentType => "tls.bad_inner_content_type":
        "a decrypted TLS 1.3 record with an unknown inner content type",
    TlsBadRecordHeader => "tls.bad_record_header":
        "a record header no TLS peer sends, in a stream that began as TLS",
    TlsDecryptGaveUp => "tls.decrypt_gave_up":
        "a direction given up after records failed authentication",
    TlsHandshakeTooLong => "tls.handshake_too_long": "a handshake message longer than the limit",
    TlsKeyUpdateFailed => "tls.key_update_failed": "a KeyUpdate without application keys to update",
    TlsKeyWaitLimit => "tls.key_wait_limit":
        "a connection waiting for its secrets past the bytes it may hold (read without them)",
    TlsRecordTooLong => "tls.record_too_long": "a record longer than TLS allows",
    HttpBadChunked => "http.bad_chunked":
        "chunked framing that does not parse; the body ends there",
    HttpBadContentEncoding => "http.bad_content_encoding":
        "a body that does not decode with its `Content-Encoding`",
    HttpBadContentLength => "http.bad_content_length":
        "a `Content-Length` that is not a number, or several that disagree",
    HttpBadHeaderLine => "http.bad_header_line": "a header line that cannot be read (dropped)",
    HttpBadRequestLine => "http.bad_request_line":
        "bytes where a request line should be (skipped until the next message)",
    HttpBadStatusLine => "http.bad_status_line":
        "bytes where a status line should be (skipped until the next message)",
    HttpBadTransferEncoding => "http.bad_transfer_encoding":
        "a `Transfer-Encoding` whose last coding is not `chunked`",
    HttpContentLengthAndChunked => "http.content_length_and_chunked":
        "both `Content-Length` and chunked framing (chunked wins)",
    HttpDecompressionLimit => "http.decompression_limit":
        "a decoded body past `--max-decoded`; the rest is dropped",
    HttpDeferredLimit => "http.deferred_limit":
        "response events held while their request still arrives, past the limit (dropped)",
    HttpGapBetweenMessages => "http.gap_between_messages": "a capture gap between two messages",
    HttpGapInBody => "http.gap_in_body": "a capture gap inside a body",
    HttpGapInHead => "http.gap_in_head": "a capture gap inside a message head",
    HttpHeadTooLarge => "http.head_too_large": "a message head past `--max-header`",
    HttpNoResponse => "http.no_response_<stream_end>":
        "`mcp-trace http`: a request without a response, and how its stream ended",
    HttpObsFold => "http.obs_fold": "an obsolete folded header line (joined to the previous one)",
    HttpPendingLimit => "http.pending_limit":
        "requests awaiting a response past the limit; the oldest is dropped",
    HttpRequestBodyLimit => "http.request_body_limit":
        "a request body past `--max-body`; the rest is not kept",
    HttpResponseWithoutRequest => "http.response_without_request":
        "a response with no request left to answer",
    HttpTruncatedBody => "http.truncated_body": "a body cut short by the end of its stream",
    HttpTruncatedHead => "http.truncated_head": "a message head cut short by the end of its stream",
    HttpUnusualVersion => "http.unusual_version": "an HTTP version other than 1.0 and 1.1",
    H2BadPadding => "h2.bad_padding":
        "a padded DATA or HEADERS frame whose padding is longer than the frame",
    H2BadPreface => "h2.bad_preface":
        "a client preface that is not `PRI * HTTP/2.0`; the connection is not read",
    H2BadStatus => "h2.bad_status": "a response `:status` that is not a three-digit number",
    H2BadStreamId => "h2.bad_stream_id":
        "a frame on a stream id the sender may not use (even from the client, 0 for a stream frame)",
    H2ContinuationExpected => "h2.continuation_expected":
        "another frame between a header block's HEADERS and its CONTINUATION",
    H2ContinuationFlood => "h2.continuation_flood":
        "a header block longer than `--max-header` (CONTINUATION without end); the rest is not decoded",
    H2DataWithoutHead => "h2.data_without_head":
        "DATA before the stream's final response head, or after its end",
    H2FrameOnClosedStream => "h2.frame_on_closed_stream": "a frame on a stream already closed",
    H2FrameTooLarge => "h2.frame_too_large":
        "a frame longer than the receiver's SETTINGS_MAX_FRAME_SIZE (read anyway)",
    H2Gap => "h2.gap": "a capture gap in an HTTP/2 connection: that direction is not read further",
    H2Goaway => "h2.goaway_<error>":
        "a GOAWAY frame and its error code (e.g. `h2.goaway_no_error`)",
    H2GoawayUnprocessed => "h2.goaway_unprocessed":
        "a stream above the server's GOAWAY last stream id: never processed",
    H2HeaderTableLimit => "h2.header_table_limit":
        "a SETTINGS_HEADER_TABLE_SIZE above the decoder's 64 KiB ceiling (kept at the ceiling)",
    H2HpackBadIndex => "h2.hpack_bad_index": "an HPACK index past the static and dynamic tables",
    H2HpackBroken => "h2.hpack_broken":
        "a header block not decoded: an earlier HPACK error left the table unknown",
    H2HpackHuffmanEos => "h2.hpack_huffman_eos":
        "an HPACK Huffman string containing the EOS symbol",
    H2HpackHuffmanPadding => "h2.hpack_huffman_padding":
        "an HPACK Huffman string with padding longer than 7 bits or not all ones",
    H2HpackIntegerOverflow => "h2.hpack_integer_overflow": "an HPACK integer past 32 bits",
    H2HpackListTooLarge => "h2.hpack_list_too_large":
        "a decoded header list past `--max-header` (the rest not emitted)",
    H2HpackSizeUpdateMissing => "h2.hpack_size_update_missing":
        "a header block without the table size update a lowered SETTINGS_HEADER_TABLE_SIZE requires",
    H2HpackSizeUpdateNotAtStart => "h2.hpack_size_update_not_at_start":
        "an HPACK dynamic table size update after a header field",
    H2HpackSizeUpdateTooLarge => "h2.hpack_size_update_too_large":
        "an HPACK dynamic table size update above the advertised maximum",
    H2HpackTruncated => "h2.hpack_truncated": "a header block that ends inside a field",
    H2HpackStateLost => "h2.hpack_state_lost":
        "header blocks of a direction whose HPACK table is unknown after a gap or an error: not decoded",
    H2MissingPseudoHeader => "h2.missing_pseudo_header":
        "a request without `:method` or `:path`, or a response without `:status`",
    H2PingFlood => "h2.ping_flood": "more than 100 PING frames a second from one side",
    H2PushPromise => "h2.push_promise":
        "a PUSH_PROMISE (MCP has no use for server push; its block is decoded for the table only)",
    H2RapidReset => "h2.rapid_reset":
        "more than 100 streams a second reset before their response (CVE-2023-44487)",
    H2RstStream => "h2.rst_stream_<error>":
        "a RST_STREAM and its error code (e.g. `h2.rst_stream_cancel`)",
    H2SettingsFlood => "h2.settings_flood":
        "more than 100 SETTINGS frames a second from one side (the excess not applied)",
    H2StreamLimit => "h2.stream_limit":
        "streams past `--max-h2-streams` open at once on a connection (not kept)",
    H2UnexpectedContinuation => "h2.unexpected_continuation":
        "a CONTINUATION frame without a header block to continue",
    H2UnknownFrameType => "h2.unknown_frame_type":
        "a frame of a type HTTP/2 does not define (skipped)",
    H2UserinfoInAuthority => "h2.userinfo_in_authority":
        "userinfo in `:authority` (dropped, never written)",
    HarBadBase64 => "har.bad_base64": "a body marked base64 that does not decode",
    HarBadContentEncoding => "har.bad_content_encoding":
        "a recorded body that does not decode with its `Content-Encoding`",
    HarBadHeader => "har.bad_header": "headers that are not name/value pairs (dropped)",
    HarBadStatus => "har.bad_status": "a response status that is not a number",
    HarBadTimestamp => "har.bad_timestamp": "an entry's `startedDateTime` that does not parse",
    HarBadUrl => "har.bad_url": "an entry's URL that does not parse",
    HarBodyInSeparateFile => "har.body_in_separate_file":
        "the body was saved to a separate file, not in the HAR",
    HarBodyLimit => "har.body_limit": "a decoded body past the limit",
    HarBodyNotRecorded => "har.body_not_recorded": "a body the recorder did not keep",
    HarEntrySkipped => "har.entry_skipped": "an entry without the fields a request needs",
    HarMissingVersion => "har.missing_version": "no `log.version`; read as HAR 1.2",
    HarNoResponse => "har.no_response": "status 0: the request failed or was aborted",
    HarSseBodyNotRecorded => "har.sse_body_not_recorded":
        "an event stream whose body the recorder did not keep",
    HarSseBodyTruncated => "har.sse_body_truncated": "an event stream recorded without its end",
    HarTolerantParse => "har.tolerant_parse": "an entry read leniently (fields of the wrong type)",
    HarUnknownTextEncoding => "har.unknown_text_encoding": "a body `encoding` other than base64",
    HarUnsupportedContentEncoding => "har.unsupported_content_encoding":
        "a body in an encoding not decoded (zstd)",
    HarUnsupportedVersion => "har.unsupported_version":
        "a `log.version` other than 1.1, 1.2, 1.3; read as 1.2",
    HarWebsocketMessagesIgnored => "har.websocket_messages_ignored":
        "WebSocket messages in the entry (not analyzed)",
    RpcInvalidEnvelope => "rpc.invalid_envelope":
        "a JSON-RPC message from the server that is not a valid envelope",
    RpcInvalidRequestEnvelope => "rpc.invalid_request_envelope":
        "a client message that is not a valid JSON-RPC envelope",
    RpcJsonTooDeep => "rpc.json_too_deep": "a body nested deeper than the JSON parser's limit",
    RpcSseDataNotJson => "rpc.sse_data_not_json": "an SSE `data` that is not JSON",
    RpcSseEventTooLarge => "rpc.sse_event_too_large": "an SSE event past `--max-sse-event`",
    RpcSseUnknownField => "rpc.sse_unknown_field":
        "an SSE line with a field name the spec does not define",
    RpcSseUnterminatedEvent => "rpc.sse_unterminated_event":
        "an event stream ending inside an event",
    McpBodyOnAccepted => "mcp.body_on_accepted": "a body on a 202 that should have none",
    McpBodyTooLarge => "mcp.body_too_large": "a body past `--max-body`; not parsed",
    McpCancelWithoutOpenRequest => "mcp.cancel_without_open_request":
        "`notifications/cancelled` naming no open request",
    McpClientClosedBeforeResponse => "mcp.client_closed_before_response":
        "the client closed the connection before any response (before 2026-07-28: no cancellation)",
    McpClientClosedStream => "mcp.client_closed_stream":
        "the client closed the response stream before the final response (before 2026-07-28: no cancellation)",
    McpDuplicateRequestId => "mcp.duplicate_request_id":
        "a request id reused while the first request is open",
    McpDuplicateResponse => "mcp.duplicate_response": "a second response to the same request",
    McpEndpointLimit => "mcp.endpoint_limit": "MCP endpoints known past the limit",
    McpExchangeReused => "mcp.exchange_reused":
        "the HTTP stage reused an exchange whose end was lost",
    McpLegacyEndpointWithoutSession => "mcp.legacy_endpoint_without_session":
        "a legacy SSE `endpoint` event without a session id",
    McpLegacySessionLimit => "mcp.legacy_session_limit": "legacy SSE sessions past the limit",
    McpPendingLimit => "mcp.pending_limit":
        "requests awaiting a response past `--max-pending`; the oldest is closed",
    McpPreflightLimit => "mcp.preflight_limit":
        "CORS preflights awaiting their request past the limit",
    McpRequestNotJsonrpc => "mcp.request_not_jsonrpc":
        "a request to an MCP endpoint whose body is not JSON-RPC",
    McpResponseBeforeRequest => "mcp.response_before_request":
        "a response seen before its request (capture order)",
    McpResponseWithoutRequest => "mcp.response_without_request":
        "a client response to no known server request",
    McpResumeTargetMissing => "mcp.resume_target_missing":
        "a resumed stream whose original exchange is gone",
    McpResumeUnknownEventId => "mcp.resume_unknown_event_id": "a `Last-Event-ID` no stream sent",
    McpHopWaitingFull => "mcp.hop_waiting_full":
        "rows held for gateway copies past `--max-hop-waiting` (the oldest left unlinked-to)",
    McpRetryIndexFull => "mcp.retry_index_full":
        "requests held for retry inference past `--max-retry-rows`",
    McpServerRequestLimit => "mcp.server_request_limit":
        "server requests awaiting the client's answer past the limit",
    McpSessionInfoLimit => "mcp.session_info_limit":
        "session facts kept past the limit (the oldest forgotten)",
    McpToolCatalogFull => "mcp.tool_catalog_full":
        "tool catalog entries past `--max-catalog-tools`",
    McpUnknownResultType => "mcp.unknown_result_type": "a `resultType` this version does not know",
}

/// The anomaly names on one row, each once, in the order first recorded. Its text (the
/// `anomalies` column) is the names joined by `;`; a registered name never holds a `;`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AnomalySet {
    text: String,
}

impl AnomalySet {
    /// Adds `name` unless it is already in the set.
    pub fn insert(&mut self, name: &str) {
        if self.contains(name) {
            return;
        }
        if !self.text.is_empty() {
            self.text.push(';');
        }
        self.text.push_str(name);
    }

    /// Adds every name of `names`, in order.
    pub fn extend<'a>(&mut self, names: impl IntoIterator<Item = &'a str>) {
        for name in names {
            self.insert(name);
        }
    }

    pub fn contains(&self, name: &str) -> bool {
        self.iter().any(|n| n == name)
    }

    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    /// The names, in the order first recorded.
    pub fn iter(&self) -> impl Iterator<Item = &str> {
        self.text.split(';').filter(|n| !n.is_empty())
    }

    /// The column's text: the names joined by `;`, `None` for no name.
    pub fn text(&self) -> Option<&str> {
        (!self.text.is_empty()).then_some(self.text.as_str())
    }
}

impl<'a> FromIterator<&'a str> for AnomalySet {
    fn from_iter<I: IntoIterator<Item = &'a str>>(iter: I) -> AnomalySet {
        let mut set = AnomalySet::default();
        set.extend(iter);
        set
    }
}

impl serde::Serialize for AnomalySet {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.text().serialize(s)
    }
}

/// Whether `name` is in [`ANOMALIES`].
pub fn is_registered(name: &str) -> bool {
    ANOMALIES.iter().any(|a| a.matches(name))
}

/// README's anomaly table: one row per [`ANOMALIES`] entry.
pub fn markdown_table() -> String {
    let mut out = String::from("| anomaly | stage | meaning |\n|---|---|---|\n");
    for a in ANOMALIES {
        out.push_str(&format!(
            "| `{}` | {} | {} |\n",
            a.name,
            a.stage(),
            a.meaning
        ));
    }
    out
}

impl Anomaly {
    /// For a pattern entry (`h2.goaway_<error>`), the part before the value (`h2.goaway_`).
    pub fn pattern_prefix(self) -> Option<&'static str> {
        self.name().split_once('<').map(|(prefix, _)| prefix)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// Name prefixes of the stages that record anomalies.
    const STAGES: &[&str] = &[
        "capture", "decode", "flow", "tls", "http", "h2", "har", "rpc", "mcp",
    ];

    /// Every `"stage.name"` literal and `"stage.prefix{` format string in `src/` (this file
    /// aside), with where it is: (name or prefix, is a format prefix, file).
    fn names_in_source() -> Vec<(String, bool, String)> {
        fn walk(dir: &Path, out: &mut Vec<(String, bool, String)>) {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    walk(&path, out);
                } else if path.extension().is_some_and(|e| e == "rs")
                    && !path.ends_with("anomaly.rs")
                {
                    let text = std::fs::read_to_string(&path).unwrap();
                    let file = path.display().to_string();
                    for (at, _) in text.match_indices('"') {
                        let rest = &text[at + 1..];
                        let Some((stage, tail)) = rest.split_once('.') else {
                            continue;
                        };
                        if !STAGES.contains(&stage) {
                            continue;
                        }
                        let len = tail
                            .bytes()
                            .take_while(|b| {
                                b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'_'
                            })
                            .count();
                        let name = format!("{stage}.{}", &tail[..len]);
                        match tail.as_bytes().get(len) {
                            Some(b'"') if len > 0 => out.push((name, false, file.clone())),
                            Some(b'{') => out.push((name, true, file.clone())),
                            _ => {}
                        }
                    }
                    // Typed keys: `Anomaly::FlowEvicted`.
                    for (at, _) in text.match_indices("Anomaly::") {
                        let ident: String = text[at + 9..]
                            .chars()
                            .take_while(|c| c.is_ascii_alphanumeric())
                            .collect();
                        let Some(key) = Anomaly::ALL.iter().find(|k| format!("{k:?}") == ident)
                        else {
                            continue;
                        };
                        match key.pattern_prefix() {
                            Some(prefix) => out.push((prefix.to_string(), true, file.clone())),
                            None => out.push((key.name().to_string(), false, file.clone())),
                        }
                    }
                }
            }
        }
        let mut out = Vec::new();
        walk(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), &mut out);
        out
    }

    #[test]
    fn every_name_in_the_source_is_registered() {
        let found = names_in_source();
        assert!(
            found.len() > 50,
            "the scan finds the names ({})",
            found.len()
        );
        for (name, is_prefix, file) in found {
            let known = if is_prefix {
                ANOMALIES
                    .iter()
                    .any(|a| a.name.split_once('<').is_some_and(|(p, _)| p == name))
            } else {
                is_registered(&name)
            };
            assert!(
                known,
                "{file}: anomaly `{name}` is not in anomaly::ANOMALIES (add a line there and \
                 to README's anomaly table)"
            );
        }
    }

    #[test]
    fn every_registered_name_is_used() {
        let found = names_in_source();
        for a in ANOMALIES {
            let (want, prefix) = match a.name.split_once('<') {
                Some((p, _)) => (p, true),
                None => (a.name, false),
            };
            let used = found
                .iter()
                .any(|(name, is_prefix, _)| name == want && *is_prefix == prefix);
            assert!(used, "`{}` is registered but no stage records it", a.name);
        }
    }

    #[test]
    fn the_enum_is_the_registry() {
        assert_eq!(Anomaly::ALL.len(), ANOMALIES.len());
        for (key, entry) in Anomaly::ALL.iter().zip(ANOMALIES) {
            assert_eq!(key.name(), entry.name);
        }
        assert_eq!(Anomaly::H2Goaway.pattern_prefix(), Some("h2.goaway_"));
        assert_eq!(Anomaly::FlowEvicted.pattern_prefix(), None);
    }

    #[test]
    fn names_are_unique_and_name_their_stage() {
        for (i, a) in ANOMALIES.iter().enumerate() {
            assert!(STAGES.contains(&a.stage()), "{}", a.name);
            assert!(!a.meaning.is_empty(), "{}", a.name);
            assert!(
                ANOMALIES[..i].iter().all(|b| b.name != a.name),
                "{} twice",
                a.name
            );
        }
        assert_eq!(ANOMALIES[0].stage(), "capture");
    }

    #[test]
    fn patterns_match_their_names_only() {
        assert!(is_registered("flow.evicted"));
        assert!(is_registered("http.no_response_capture_end"));
        assert!(!is_registered("http.no_response_"));
        assert!(!is_registered("http.no_response_X"));
        assert!(!is_registered("flow.evicte"));
        assert!(!is_registered("nope"));
    }

    #[test]
    fn a_set_keeps_each_name_once_in_first_order() {
        let mut set = AnomalySet::default();
        assert_eq!(set.text(), None);
        assert_eq!(serde_json::to_string(&set).unwrap(), "null");
        set.insert("http.gap_in_body");
        set.extend(["flow.evicted", "http.gap_in_body", "h2.rst_stream_cancel"]);
        assert_eq!(
            set.text(),
            Some("http.gap_in_body;flow.evicted;h2.rst_stream_cancel")
        );
        assert!(set.contains("flow.evicted") && !set.contains("flow"));
        assert_eq!(set.iter().count(), 3);
        assert_eq!(
            serde_json::to_string(&set).unwrap(),
            r#""http.gap_in_body;flow.evicted;h2.rst_stream_cancel""#
        );
    }

    #[test]
    fn readme_table_is_the_registry() {
        let readme =
            std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"))
                .unwrap();
        let table = markdown_table();
        assert!(
            readme.contains(&table),
            "README.md's anomaly table differs from anomaly::ANOMALIES; it should read:\n{table}"
        );
    }
}
