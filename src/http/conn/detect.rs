//! Side detection: which end is the client, or whether the stream is HTTP at all.

use super::*;

impl Conn {
    /// Decides which side is the client from the first bytes of each side:
    /// a request line marks the client, a status line the server; a stream
    /// whose first bytes are neither is not HTTP.
    pub(super) fn decide(&mut self, at_end: bool, stats: &mut Stats, out: &mut Vec<HttpEvent>) {
        let mut verdicts = [None, None];
        for side in [Side::Client, Side::Server] {
            let i = side_index(side);
            let bytes: Vec<u8> = self
                .held
                .iter()
                .filter_map(|h| match h {
                    Held::Data { side: s, bytes, .. } if *s == side => Some(bytes.as_slice()),
                    _ => None,
                })
                .flatten()
                .copied()
                .take(DETECT_LIMIT)
                .collect();
            if bytes.is_empty() {
                continue;
            }
            let verdict = if self.starts_with_gap.get(i).copied().unwrap_or_default() {
                // Mid-message start: look for a message start anywhere.
                match find_message_start(&bytes, None, false, at_end) {
                    Some((_, p)) => p,
                    None if at_end || bytes.len() >= DETECT_LIMIT => Probe::Neither,
                    None => Probe::NeedMore,
                }
            } else {
                let skip = leading_empty_lines(&bytes);
                match probe(
                    bytes.get(skip..).unwrap_or_default(),
                    Strictness::Lenient,
                    at_end,
                ) {
                    Probe::NeedMore if at_end || bytes.len() >= START_LINE_LIMIT => Probe::Neither,
                    Probe::NeedMore if skip == bytes.len() => Probe::NeedMore,
                    p => p,
                }
            };
            if let Some(v) = verdicts.get_mut(i) {
                *v = Some(verdict);
            }
        }
        let [c, s] = verdicts;
        let role = if c == Some(Probe::Request) || s == Some(Probe::Response) {
            Role::Http { swapped: false }
        } else if s == Some(Probe::Request) || c == Some(Probe::Response) {
            Role::Http { swapped: true }
        } else if c == Some(Probe::Neither) && s == Some(Probe::Neither) {
            Role::NotHttp
        } else if (c == Some(Probe::Neither) || s == Some(Probe::Neither))
            && (at_end || self.held_bytes.iter().any(|&n| n >= DETECT_LIMIT))
        {
            // One side is not HTTP and the other stayed silent (or undecided)
            // to the end; a garbled request still waits for a status line from
            // the other side, as Zeek logs such a response on its own.
            Role::NotHttp
        } else if at_end && (c.is_some() || s.is_some()) {
            Role::NotHttp
        } else {
            return;
        };
        self.role = role;
        match role {
            Role::NotHttp => {
                stats.non_http_streams = stats.non_http_streams.saturating_add(1);
                self.held = Vec::new();
            }
            Role::Http { swapped } => {
                let (client, server) = if swapped {
                    (self.server, self.client)
                } else {
                    (self.client, self.server)
                };
                self.info = Some(Arc::new(ConnInfo {
                    conn: self.stream,
                    tcp_stream: Some(self.stream),
                    client_addr: client.to_string().into(),
                    server_addr: server.to_string().into(),
                    capture: self.capture.clone(),
                }));
                for side in [Side::Client, Side::Server] {
                    if self
                        .starts_with_gap
                        .get(side_index(side))
                        .copied()
                        .unwrap_or_default()
                    {
                        let dir = self.dir_of(side);
                        self.reader(dir).state = ReadState::Resync { line_start: false };
                    }
                }
                let mut leading_gap = self.starts_with_gap;
                for h in std::mem::take(&mut self.held) {
                    match h {
                        Held::Data {
                            side,
                            ts_us,
                            frame,
                            bytes,
                        } => {
                            let dir = self.dir_of(side);
                            self.data(dir, &bytes, ts_us, frame, stats, out);
                        }
                        Held::Gap { side, len } => {
                            let i = side_index(side);
                            // A leading gap was handled by starting in Resync.
                            if leading_gap.get(i).copied().unwrap_or_default() {
                                if let Some(g) = leading_gap.get_mut(i) {
                                    *g = false;
                                }
                                continue;
                            }
                            let dir = self.dir_of(side);
                            let ts = self.reader(dir).marks.back().map_or(0, |m| m.1);
                            self.gap(dir, len, ts, stats, out);
                        }
                        Held::Fin { side, ts_us } => self.fin(side, ts_us, stats, out),
                    }
                }
            }
            Role::Undecided => {}
        }
    }
}
