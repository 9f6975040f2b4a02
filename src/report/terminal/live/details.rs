//! The details pane: every field of the selected row worth reading, under its column name
//! (report-schema.md section 2), over the table.

use super::row::ScreenRow;
use super::style::{dim, outcome_tone, safe, tone};
use super::view::LiveView;
use crate::report::terminal::paint::{self, fmt_ms};
use crate::timestamp::format_rfc3339_us;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph, Wrap};

/// Longest capture text shown in the details pane (evidence lines can be long).
const DETAIL_MAX_CHARS: usize = 2000;

/// The details pane: every field of the row worth reading, under its column name.
pub(super) fn draw_details(view: &LiveView, r: &ScreenRow, frame: &mut Frame, area: Rect) {
    let width = area.width.saturating_sub(4).clamp(area.width.min(20), 110);
    let height = area.height.saturating_sub(1).max(area.height.min(3));
    let x = area.x.saturating_add(area.width.saturating_sub(width) / 2);
    let pane = Rect::new(x, area.y, width, height);
    frame.render_widget(Clear, pane);
    let title = format!(" exchange #{} ", r.exchange_id);
    let block = Block::bordered()
        .title(Span::styled(
            title,
            Style::new().add_modifier(Modifier::BOLD),
        ))
        .title_bottom(Span::styled(" Esc closes · ↑↓ scroll ", dim()));
    let lines = detail_lines(r);
    // Scrolling stops where the last line is at the bottom (an estimate of the wrapping).
    let inner = block.inner(pane);
    let wrapped: usize = lines
        .iter()
        .map(|l| l.width().div_ceil(usize::from(inner.width).max(1)).max(1))
        .sum();
    let max = wrapped.saturating_sub(usize::from(inner.height));
    view.details_max.set(u16::try_from(max).unwrap_or(u16::MAX));
    let scroll = view.details_scroll.min(view.details_max.get());
    let text = Paragraph::new(lines)
        .block(block)
        .wrap(Wrap { trim: false })
        .scroll((scroll, 0));
    frame.render_widget(text, pane);
}

fn detail_lines(r: &ScreenRow) -> Vec<Line<'static>> {
    let mut lines = Vec::new();
    let mut field = |name: &'static str, value: String, style: Style| {
        lines.push(Line::from(vec![
            Span::styled(format!("{name:<16}"), dim()),
            Span::styled(value, style),
        ]));
    };
    let text = |s: &str| safe(s, DETAIL_MAX_CHARS);
    let opt = |v: Option<String>| v.unwrap_or_else(|| "-".into());
    let plain = Style::new();
    field("exchange_id", r.exchange_id.to_string(), plain);
    field("jsonrpc_id", opt(r.jsonrpc_id.as_deref().map(text)), plain);
    field("kind", r.kind.name().into(), plain);
    field("rpc_method", opt(r.rpc_method.as_deref().map(text)), plain);
    field("tool_name", opt(r.tool_name.as_deref().map(text)), plain);
    field(
        "outcome",
        format!("{} ({})", r.outcome.name(), r.layer.name()),
        outcome_tone(r.outcome),
    );
    field(
        "http_status",
        opt(r.http_status.map(|s| s.to_string())),
        plain,
    );
    field(
        "error_code",
        opt(r.error_code.map(|c| c.to_string())),
        plain,
    );
    field(
        "error_message",
        opt(r.error_message.as_deref().map(text)),
        plain,
    );
    field("is_error", opt(r.is_error.map(|b| b.to_string())), plain);
    field(
        "result_type",
        opt(r.result_type.as_deref().map(text)),
        plain,
    );
    field("stream_end", r.stream_end.name().into(), plain);
    field(
        "final_response",
        format!("{} (sse_events {})", r.final_response, r.sse_events),
        plain,
    );
    field("ts_request", format_rfc3339_us(r.ts_request), plain);
    field(
        "ts_response",
        opt(r.ts_response.map(format_rfc3339_us)),
        plain,
    );
    field("latency_ms", opt(r.latency_ms.map(fmt_ms)), plain);
    field(
        "bytes",
        format!("request {} response {}", r.request_bytes, r.response_bytes),
        plain,
    );
    field("session_key", text(&r.session_key), plain);
    field("session_id", opt(r.session_id.as_deref().map(text)), plain);
    field(
        "client_name",
        opt(r.client_name.as_deref().map(text)),
        plain,
    );
    field("user_agent", opt(r.user_agent.as_deref().map(text)), plain);
    field("endpoint", text(&r.endpoint), plain);
    field(
        "request",
        format!("{} {}", text(&r.http_method), text(&r.path)),
        plain,
    );
    let mut conn = vec![format!(
        "{} → {}",
        text(&r.client_addr),
        text(&r.server_addr)
    )];
    if let Some(s) = r.tcp_stream {
        conn.push(format!("tcp_stream {s}"));
    }
    if let Some(v) = r.http_version {
        conn.push(v.to_string());
    }
    if let Some(s) = r.h2_stream {
        conn.push(format!("h2_stream {s}"));
    }
    match (&r.tls_version, &r.tls_sni) {
        (Some(v), Some(sni)) => conn.push(format!("{} sni {}", text(v), text(sni))),
        (Some(v), None) => conn.push(text(v)),
        (None, _) => conn.push("plaintext".into()),
    }
    field("connection", conn.join(", "), plain);
    field("attempt", r.attempt.to_string(), plain);
    field("retry_of", opt(r.retry_of.map(|i| format!("#{i}"))), plain);
    field("retry_origin", r.retry_origin.name().into(), plain);
    field(
        "retry_evidence",
        opt(r.retry_evidence.as_deref().map(text)),
        plain,
    );
    field(
        "retry_findings",
        opt(r.retry_findings.text().map(str::to_string)),
        tone(paint::Style::Warn),
    );
    field(
        "continuation_of",
        opt(r.continuation_of.map(|i| format!("#{i}"))),
        plain,
    );
    field("hop", r.hop.0.to_string(), plain);
    field(
        "forwarded_from",
        opt(r.forwarded_from.map(|i| format!("#{i}"))),
        plain,
    );
    field("fault_hop", opt(r.fault_hop.map(|h| h.to_string())), plain);
    field(
        "hop_evidence",
        opt(r.hop_evidence.as_deref().map(text)),
        plain,
    );
    if let Some(g) = &r.gateway {
        let translated = if r.translated {
            " (outcome translated)"
        } else {
            ""
        };
        field("gateway", format!("{}{translated}", text(g)), plain);
    }
    field("anomalies", opt(r.anomalies.text().map(text)), plain);
    lines
}
