//! `Upgrade: h2c` answered `101 Switching Protocols` (RFC 7540 §3.2): the connection goes
//! on as HTTP/2. The upgraded request's response arrives as HTTP/2 stream 1, so its
//! exchange, the exchange numbering and the bytes already buffered after the switch are
//! handed to the HTTP/2 reader through the router as an [`Upgrade`]. A CONNECT tunnel is handed over the same
//! way without an upgraded request: HTTP/2 reads it only if the client's first bytes in it
//! are the connection preface.

use super::*;
use crate::http::Headers;
use crate::http::reader::{Handover, Protocol};

/// The `101`'s `Upgrade` names h2c.
pub(super) fn is_h2c(headers: &Headers) -> bool {
    headers
        .get("upgrade")
        .is_some_and(|u| u.trim().eq_ignore_ascii_case("h2c"))
}

/// What the switch leaves behind, until the router takes it.
pub(super) struct Switched {
    upgraded: Option<ExchangeRef>,
    req_rest: (Vec<u8>, i64, u64),
    resp_rest: (Vec<u8>, i64, u64),
}

impl Conn {
    /// The 101 answering `xref` switched the connection, or (`None`) a CONNECT tunnel
    /// opened: HTTP/1.x reads nothing more.
    pub(super) fn upgrade_h2c(
        &mut self,
        xref: Option<ExchangeRef>,
        ts_us: i64,
        stats: &mut HttpCounters,
        out: &mut Vec<HttpEvent>,
    ) {
        // A body still arriving was cut by the switch.
        if let Some(m) = self.req_msg.as_mut() {
            m.complete = false;
        }
        self.finish_request(ts_us, stats, out);
        let take = |r: &mut Reader| {
            let (ts, frame) = r.first_mark((ts_us, 0));
            let bytes = std::mem::take(&mut r.buf);
            r.clear();
            r.state = ReadState::Dead;
            (bytes, ts, frame)
        };
        let req_rest = take(&mut self.req);
        let resp_rest = take(&mut self.resp);
        self.handover = Some(Box::new(Switched {
            upgraded: xref,
            req_rest,
            resp_rest,
        }));
    }

    /// The switched connection, for the HTTP/2 reader (once).
    pub(super) fn take_upgrade(&mut self) -> Option<Upgrade> {
        let s = self.handover.take()?;
        let info = self.exchanges.info().clone();
        Some(Upgrade {
            protocol: Protocol::Http2,
            handover: Handover {
                exchanges: std::mem::replace(&mut self.exchanges, Exchanges::new(info)),
                upgraded: s.upgraded,
                client_closed: self.client_closed,
                req_rest: s.req_rest,
                resp_rest: s.resp_rest,
            },
        })
    }
}
