//! The exchange row's named values (report-schema.md sections 2 and 3): each enum's
//! [`name`](Outcome::name) is its contract name, the text every output writes.
//!
//! Scripts read these names, so they are stable: add a value, never rename one.

use crate::contract::contract_names;
use crate::http::BodyEnd;

contract_names! {
    /// The `transport` column.
    #[derive(Default)]
    pub enum Transport {
        StreamableHttp => "streamable_http",
        LegacySse => "legacy_sse",
        /// Not yet known (an `http` row without a session).
        #[default]
        Unknown => "unknown",
    }
}

contract_names! {
    /// The `kind` column: what the row is.
    #[derive(Default)]
    pub enum Kind {
        Request => "request",
        Notification => "notification",
        /// The client's answer to a server request.
        Response => "response",
        /// A GET that opens or resumes an SSE stream.
        Stream => "stream",
        /// A DELETE.
        SessionEnd => "session_end",
        /// Any other HTTP request to an MCP endpoint.
        #[default]
        Http => "http",
    }
}

contract_names! {
    /// The `outcome` column (section 3), in evaluation order.
    #[derive(Default)]
    pub enum Outcome {
        Cancelled => "CANCELLED",
        /// Also the value of a row not yet classified.
        #[default]
        NoResponse => "NO_RESPONSE",
        HttpError => "HTTP_ERROR",
        Accepted => "ACCEPTED",
        UnexpectedResponse => "UNEXPECTED_RESPONSE",
        MalformedJson => "MALFORMED_JSON",
        InvalidEnvelope => "INVALID_ENVELOPE",
        StreamIncomplete => "STREAM_INCOMPLETE",
        JsonrpcError => "JSONRPC_ERROR",
        InputRequired => "INPUT_REQUIRED",
        TaskCreated => "TASK_CREATED",
        InvalidToolResult => "INVALID_TOOL_RESULT",
        ToolError => "TOOL_ERROR",
        ToolSuccess => "TOOL_SUCCESS",
        RpcSuccess => "RPC_SUCCESS",
        StreamOpen => "STREAM_OPEN",
    }
}

contract_names! {
    /// The `layer` column, from the wire up.
    #[derive(Default)]
    pub enum Layer {
        #[default]
        Transport => "transport",
        Protocol => "protocol",
        Interaction => "interaction",
        Application => "application",
    }
}

contract_names! {
    /// The `stream_end` column: how the response stream ended.
    #[derive(Default)]
    pub enum StreamEnd {
        Complete => "complete",
        Fin => "fin",
        /// A TCP RST or an HTTP/2 `RST_STREAM`: the contract has one name for both.
        Rst => "rst",
        Gap => "gap",
        CaptureEnd => "capture_end",
        /// Not a stream.
        #[default]
        None => "none",
    }
}

contract_names! {
    /// The `retry_origin` column (section 4).
    #[derive(Default)]
    pub enum RetryOrigin {
        #[default]
        None => "none",
        Sdk => "sdk",
        Application => "application",
        Manual => "manual",
        Gateway => "gateway",
    }
}

impl Outcome {
    /// The layer, fixed per outcome (section 3).
    pub const fn layer(self) -> Layer {
        match self {
            Outcome::NoResponse | Outcome::HttpError | Outcome::StreamOpen => Layer::Transport,
            Outcome::Cancelled
            | Outcome::Accepted
            | Outcome::UnexpectedResponse
            | Outcome::MalformedJson
            | Outcome::InvalidEnvelope
            | Outcome::StreamIncomplete
            | Outcome::JsonrpcError => Layer::Protocol,
            Outcome::InputRequired | Outcome::TaskCreated => Layer::Interaction,
            Outcome::InvalidToolResult
            | Outcome::ToolError
            | Outcome::ToolSuccess
            | Outcome::RpcSuccess => Layer::Application,
        }
    }

    /// Whether the outcome counts as a failure for filters and summaries (`--only-failures`
    /// keeps these): all but `TOOL_SUCCESS`, `RPC_SUCCESS`, `ACCEPTED`, `STREAM_OPEN`.
    pub const fn is_failure(self) -> bool {
        !matches!(
            self,
            Outcome::ToolSuccess | Outcome::RpcSuccess | Outcome::Accepted | Outcome::StreamOpen
        )
    }
}

impl From<BodyEnd> for StreamEnd {
    fn from(end: BodyEnd) -> StreamEnd {
        match end {
            BodyEnd::Complete => StreamEnd::Complete,
            BodyEnd::Fin => StreamEnd::Fin,
            BodyEnd::Rst | BodyEnd::StreamReset => StreamEnd::Rst,
            BodyEnd::Gap => StreamEnd::Gap,
            BodyEnd::CaptureEnd => StreamEnd::CaptureEnd,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names<T: Copy>(all: &[T], name: fn(T) -> &'static str) -> Vec<&'static str> {
        all.iter().map(|v| name(*v)).collect()
    }

    #[test]
    fn names_are_the_contracts() {
        // report-schema.md sections 2 and 3, in their order.
        assert_eq!(
            names(&Transport::ALL, Transport::name),
            ["streamable_http", "legacy_sse", "unknown"]
        );
        assert_eq!(
            names(&Kind::ALL, Kind::name),
            [
                "request",
                "notification",
                "response",
                "stream",
                "session_end",
                "http"
            ]
        );
        assert_eq!(
            names(&Layer::ALL, Layer::name),
            ["transport", "protocol", "interaction", "application"]
        );
        assert_eq!(
            names(&StreamEnd::ALL, StreamEnd::name),
            ["complete", "fin", "rst", "gap", "capture_end", "none"]
        );
        assert_eq!(
            names(&RetryOrigin::ALL, RetryOrigin::name),
            ["none", "sdk", "application", "manual", "gateway"]
        );
        let outcomes: Vec<(&str, &str)> = Outcome::ALL
            .iter()
            .map(|o| (o.name(), o.layer().name()))
            .collect();
        assert_eq!(
            outcomes,
            [
                ("CANCELLED", "protocol"),
                ("NO_RESPONSE", "transport"),
                ("HTTP_ERROR", "transport"),
                ("ACCEPTED", "protocol"),
                ("UNEXPECTED_RESPONSE", "protocol"),
                ("MALFORMED_JSON", "protocol"),
                ("INVALID_ENVELOPE", "protocol"),
                ("STREAM_INCOMPLETE", "protocol"),
                ("JSONRPC_ERROR", "protocol"),
                ("INPUT_REQUIRED", "interaction"),
                ("TASK_CREATED", "interaction"),
                ("INVALID_TOOL_RESULT", "application"),
                ("TOOL_ERROR", "application"),
                ("TOOL_SUCCESS", "application"),
                ("RPC_SUCCESS", "application"),
                ("STREAM_OPEN", "transport"),
            ]
        );
        for (i, o) in Outcome::ALL.into_iter().enumerate() {
            assert_eq!(o.index(), i);
        }
    }

    #[test]
    fn from_name_inverts_name() {
        for o in Outcome::ALL {
            assert_eq!(Outcome::from_name(o.name()), Some(o));
        }
        for k in Kind::ALL {
            assert_eq!(Kind::from_name(k.name()), Some(k));
        }
        assert_eq!(
            Outcome::from_name("tool_success"),
            None,
            "exact, not any case"
        );
        assert_eq!(RetryOrigin::from_name("sdk"), Some(RetryOrigin::Sdk));
        assert_eq!(Layer::from_name(""), None);
    }

    #[test]
    fn failures() {
        let ok: Vec<Outcome> = Outcome::ALL
            .into_iter()
            .filter(|o| !o.is_failure())
            .collect();
        assert_eq!(
            ok,
            [
                Outcome::Accepted,
                Outcome::ToolSuccess,
                Outcome::RpcSuccess,
                Outcome::StreamOpen
            ]
        );
    }

    #[test]
    fn stream_ends_map_body_ends_by_name() {
        for end in [
            BodyEnd::Complete,
            BodyEnd::Fin,
            BodyEnd::Rst,
            BodyEnd::StreamReset,
            BodyEnd::Gap,
            BodyEnd::CaptureEnd,
        ] {
            assert_eq!(StreamEnd::from(end).name(), end.name(), "{end:?}");
        }
    }

    #[test]
    fn serialized_as_the_name() {
        let text = serde_json::to_string(&[Outcome::ToolError, Outcome::HttpError]).unwrap();
        assert_eq!(text, r#"["TOOL_ERROR","HTTP_ERROR"]"#);
        assert_eq!(StreamEnd::CaptureEnd.to_string(), "capture_end");
    }
}
