//! What the analyzer keeps per HTTP exchange under way: its rows, what role the exchange
//! plays (a POST of messages, a GET stream, another request) and its response so far.

use crate::http::ExchangeRef;
use arcstr::ArcStr;

pub(super) type CtxKey = (u64, u32);

pub(super) fn ctx_key(x: &ExchangeRef) -> CtxKey {
    (x.conn.conn, x.depth)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Carrier {
    JsonBody,
    PostStream,
    GetStream,
}

#[derive(Debug)]
pub(super) enum ExchangeRole {
    /// POST of JSON-RPC messages (rows = one per element).
    Post,
    /// GET stream; `rows[0]` is the stream row; `origin` = rows whose stream it resumes.
    Stream {
        origin: Vec<usize>,
        probe: bool,
        legacy: Option<String>,
    },
    /// DELETE or any other request to an MCP endpoint.
    Other,
}

#[derive(Debug)]
pub(super) struct Ctx {
    pub(super) rows: Vec<usize>,
    pub(super) role: ExchangeRole,
    pub(super) session_key: ArcStr,
    pub(super) server_addr: ArcStr,
    pub(super) had_sid: bool,
    pub(super) status: Option<u16>,
    pub(super) media: Option<ArcStr>,
    /// A 2xx event stream (its events come split and parsed by the [`Preparer`](super::prepare::Preparer)).
    pub(super) sse: bool,
    pub(super) body_overflow: bool,
}
