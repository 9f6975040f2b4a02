//! The live screen drawn into ratatui's `TestBackend`: layout and keys, read back as the
//! text and colours of the cells.

use super::run::{Drained, drain};
use super::*;
use crate::mcp::retry::Finding;
use crate::mcp::{Exchange, Hop, Layer, Outcome, RetryOrigin};
use crate::report::test_rows::ex;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::style::{Color, Modifier};

const T0: i64 = 1_795_982_048_000_000;

/// A completed `tools/call` of `tool` ending with `outcome`.
fn call(id: u64, tool: &str, outcome: Outcome) -> Exchange {
    Exchange {
        jsonrpc_id: Some(id.to_string()),
        rpc_method: Some("tools/call".into()),
        tool_name: Some(tool.into()),
        outcome,
        layer: outcome.layer(),
        http_status: Some(if outcome == Outcome::HttpError {
            503
        } else {
            200
        }),
        ts_response: Some(T0 + id as i64 * 1000 + 412_000),
        latency_ms: Some(412.0),
        final_response: outcome != Outcome::HttpError,
        ..ex(id, T0 + id as i64 * 1000)
    }
}

fn render(view: &LiveView, width: u16, height: u16) -> Buffer {
    let mut term = Terminal::new(TestBackend::new(width, height)).unwrap();
    term.draw(|f| draw(view, f)).unwrap();
    term.backend().buffer().clone()
}

fn lines(buf: &Buffer) -> Vec<String> {
    let area = buf.area;
    (area.top()..area.bottom())
        .map(|y| {
            (area.left()..area.right())
                .map(|x| buf.cell((x, y)).map_or(" ", |c| c.symbol()))
                .collect()
        })
        .collect()
}

fn text(view: &LiveView, width: u16, height: u16) -> Vec<String> {
    lines(&render(view, width, height))
}

/// The screen line holding the table row of exchange `id` (its `#id` cell).
fn row_line(screen: &[String], id: u64) -> Option<usize> {
    let cell = format!("#{id} ");
    screen
        .iter()
        .position(|l| l.trim_start().starts_with(&cell))
}

fn contains(screen: &[String], needle: &str) -> bool {
    screen.iter().any(|l| l.contains(needle))
}

fn press(view: &mut LiveView, code: KeyCode) -> KeyOutcome {
    view.key(KeyEvent::new(code, KeyModifiers::NONE))
}

fn type_text(view: &mut LiveView, s: &str) {
    for c in s.chars() {
        press(view, KeyCode::Char(c));
    }
}

fn view_of(rows: &[Exchange]) -> LiveView {
    let mut view = LiveView::new(DEFAULT_SCREEN_ROWS);
    for r in rows {
        view.push(r);
    }
    view
}

#[test]
fn rows_appear_in_order_newest_at_the_bottom_and_the_table_follows() {
    let mut view = view_of(&[
        call(1, "get_weather", Outcome::ToolSuccess),
        call(2, "search", Outcome::HttpError),
        call(3, "get_weather", Outcome::ToolError),
    ]);
    let screen = text(&view, 140, 20);
    let (a, b, c) = (
        row_line(&screen, 1).unwrap(),
        row_line(&screen, 2).unwrap(),
        row_line(&screen, 3).unwrap(),
    );
    assert!(a < b && b < c, "{screen:#?}");
    let third = &screen[c];
    for cell in [
        "tools/call get_weather",
        "TOOL_ERROR",
        "application",
        "412.0 ms",
        "200",
        "s1",
    ] {
        assert!(third.contains(cell), "{cell} in {third:?}");
    }
    assert!(screen[b].contains("HTTP_ERROR") && screen[b].contains("503"));
    // The time is the request's, UTC, to the millisecond.
    assert!(screen[a].contains("19:54:08.001"), "{:?}", screen[a]);
    assert!(contains(&screen, "following"));

    // More rows than fit: the newest are in sight, the oldest scrolled away.
    for id in 4..=60 {
        view.push(&call(id, "search", Outcome::ToolSuccess));
    }
    let screen = text(&view, 140, 20);
    assert!(row_line(&screen, 60).is_some(), "{screen:#?}");
    assert!(row_line(&screen, 1).is_none());
    let newest = row_line(&screen, 60).unwrap();
    assert_eq!(
        row_line(&screen, 59),
        Some(newest - 1),
        "newest at the bottom"
    );
    // Only the status line is under the newest row.
    assert_eq!(newest, 18, "{screen:#?}");
}

#[test]
fn the_newest_row_is_selected_while_following() {
    let view = view_of(&[
        call(1, "a", Outcome::ToolSuccess),
        call(2, "b", Outcome::ToolSuccess),
    ]);
    let buf = render(&view, 140, 12);
    let screen = lines(&buf);
    let (one, two) = (row_line(&screen, 1).unwrap(), row_line(&screen, 2).unwrap());
    let reversed = |y: usize| {
        buf.cell((0, y as u16))
            .unwrap()
            .modifier
            .contains(Modifier::REVERSED)
    };
    assert!(reversed(two) && !reversed(one));
}

#[test]
fn f_shows_failures_only() {
    let mut view = view_of(&[
        call(1, "get_weather", Outcome::ToolSuccess),
        call(2, "search", Outcome::HttpError),
        call(3, "lookup", Outcome::InputRequired),
        Exchange {
            rpc_method: Some("notifications/initialized".into()),
            tool_name: None,
            outcome: Outcome::Accepted,
            layer: Layer::Protocol,
            ..ex(4, T0 + 4000)
        },
    ]);
    let screen = text(&view, 140, 20);
    assert!((1..=4).all(|id| row_line(&screen, id).is_some()));
    assert_eq!(press(&mut view, KeyCode::Char('f')), KeyOutcome::Continue);
    let screen = text(&view, 140, 20);
    assert!(row_line(&screen, 1).is_none(), "{screen:#?}");
    assert!(row_line(&screen, 4).is_none(), "ACCEPTED is no failure");
    assert!(row_line(&screen, 2).is_some());
    assert!(
        row_line(&screen, 3).is_some(),
        "INPUT_REQUIRED counts as a failure"
    );
    assert!(contains(&screen, "showing failures only"));
    press(&mut view, KeyCode::Char('f'));
    let screen = text(&view, 140, 20);
    assert!(row_line(&screen, 1).is_some());
    assert!(!contains(&screen, "showing failures only"));
}

#[test]
fn slash_filters_by_tool_or_method_on_enter_and_esc_cancels() {
    let mut view = view_of(&[
        call(1, "get_weather", Outcome::ToolSuccess),
        call(2, "search", Outcome::ToolSuccess),
        call(3, "weather__get_weather", Outcome::HttpError),
        Exchange {
            rpc_method: Some("tools/list".into()),
            tool_name: None,
            ..ex(4, T0 + 4000)
        },
    ]);
    press(&mut view, KeyCode::Char('/'));
    type_text(&mut view, "GET_weather");
    let screen = text(&view, 140, 20);
    // Typing shows the text; the table is not filtered before Enter.
    assert!(contains(&screen, "/GET_weather"), "{screen:#?}");
    assert!(row_line(&screen, 2).is_some());
    press(&mut view, KeyCode::Enter);
    let screen = text(&view, 140, 20);
    assert!(row_line(&screen, 1).is_some() && row_line(&screen, 3).is_some());
    assert!(row_line(&screen, 2).is_none() && row_line(&screen, 4).is_none());
    assert!(contains(&screen, "filter: get_weather"), "{screen:#?}");

    // A method matches too; Esc while typing keeps the applied filter.
    press(&mut view, KeyCode::Char('/'));
    for _ in 0.."get_weather".len() {
        press(&mut view, KeyCode::Backspace);
    }
    type_text(&mut view, "list");
    press(&mut view, KeyCode::Esc);
    let screen = text(&view, 140, 20);
    assert!(row_line(&screen, 1).is_some() && row_line(&screen, 4).is_none());
    press(&mut view, KeyCode::Char('/'));
    for _ in 0.."get_weather".len() {
        press(&mut view, KeyCode::Backspace);
    }
    type_text(&mut view, "tools/list");
    press(&mut view, KeyCode::Enter);
    let screen = text(&view, 140, 20);
    assert!(row_line(&screen, 4).is_some() && row_line(&screen, 1).is_none());

    // In the table, Esc clears the text filter; a filter matching nothing says so.
    press(&mut view, KeyCode::Esc);
    let screen = text(&view, 140, 20);
    assert!((1..=4).all(|id| row_line(&screen, id).is_some()));
    press(&mut view, KeyCode::Char('/'));
    type_text(&mut view, "nothing");
    press(&mut view, KeyCode::Enter);
    assert!(contains(
        &text(&view, 140, 20),
        "no row matches the filters"
    ));
}

/// A gateway's retry after a 503, with every field the details pane shows.
fn rich_row() -> Exchange {
    Exchange {
        session_id: Some("4f3c-session".into()),
        client_name: Some("claude-code".into()),
        user_agent: Some("node".into()),
        error_code: Some(-32602),
        error_message: Some("Invalid params: city".into()),
        retry_of: Some(7),
        attempt: 2,
        retry_origin: RetryOrigin::Gateway,
        retry_evidence: Some(
            "rule 3 new id 325ms after #7 ended with HTTP_ERROR (503), same session".into(),
        ),
        retry_findings: [Finding::UnsafeRetry, Finding::NoBackoff]
            .into_iter()
            .collect(),
        hop: Hop(2),
        forwarded_from: Some(5),
        fault_hop: Some(2),
        hop_evidence: Some("copy of #5 via 127.0.0.2:18443 (+0.8 ms)".into()),
        anomalies: ["http.gap_in_body"].into_iter().collect(),
        tls_version: Some("TLS 1.3".into()),
        tls_sni: Some("mcp.example.com".into()),
        ..call(9, "get_weather", Outcome::JsonrpcError)
    }
}

#[test]
fn enter_opens_the_details_of_the_selected_row_and_esc_closes_them() {
    let mut row = rich_row();
    row.inference.endpoint = "10.0.0.2:8080/mcp".into();
    let mut view = view_of(&[call(8, "search", Outcome::ToolSuccess), row]);
    press(&mut view, KeyCode::Enter);
    let screen = text(&view, 120, 50);
    let joined = screen.join("\n");
    for want in [
        "exchange #9",
        "jsonrpc_id      9",
        "tools/call",
        "get_weather",
        "JSONRPC_ERROR (protocol)",
        "error_code      -32602",
        "Invalid params: city",
        "session_key     s1",
        "4f3c-session",
        "endpoint        10.0.0.2:8080/mcp",
        "ts_request      2026-11-29T19:54:08.009000Z",
        "ts_response     2026-11-29T19:54:08.421000Z",
        "latency_ms      412.0 ms",
        "http_status     200",
        "retry_of        #7",
        "retry_origin    gateway",
        "rule 3 new id 325ms after #7",
        "unsafe_retry;no_backoff",
        "hop             2",
        "forwarded_from  #5",
        "fault_hop       2",
        "copy of #5 via 127.0.0.2:18443",
        "http.gap_in_body",
        "TLS 1.3 sni mcp.example.com",
        "claude-code",
        "Esc closes",
    ] {
        assert!(joined.contains(want), "{want:?} in\n{joined}");
    }
    press(&mut view, KeyCode::Esc);
    let screen = text(&view, 120, 50);
    assert!(!contains(&screen, "retry_evidence"), "{screen:#?}");
    assert!(!contains(&screen, "exchange #9"));
    assert!(row_line(&screen, 9).is_some());

    // Enter on another row shows that row.
    press(&mut view, KeyCode::Up);
    press(&mut view, KeyCode::Enter);
    let screen = text(&view, 120, 50);
    assert!(contains(&screen, "exchange #8"));
    assert!(contains(&screen, "tool_name       search"));
}

#[test]
fn details_of_a_small_row_and_a_scroll_in_a_small_pane() {
    let mut view = view_of(&[call(1, "a", Outcome::NoResponse)]);
    press(&mut view, KeyCode::Enter);
    let screen = text(&view, 80, 14);
    assert!(contains(&screen, "exchange #1"));
    assert!(contains(&screen, "exchange_id     1"));
    assert!(!contains(&screen, "anomalies"), "below the fold");
    for _ in 0..60 {
        press(&mut view, KeyCode::Down);
    }
    let screen = text(&view, 80, 14);
    assert!(!contains(&screen, "exchange_id     1"), "{screen:#?}");
    press(&mut view, KeyCode::Home);
    assert!(contains(&text(&view, 80, 14), "exchange_id     1"));
}

#[test]
fn arrows_move_the_selection_and_stop_following() {
    let mut view = LiveView::new(DEFAULT_SCREEN_ROWS);
    for id in 1..=30 {
        view.push(&call(id, "search", Outcome::ToolSuccess));
    }
    let buf = render(&view, 140, 15);
    let screen = lines(&buf);
    assert!(row_line(&screen, 30).is_some());
    press(&mut view, KeyCode::Up);
    press(&mut view, KeyCode::Up);
    let buf = render(&view, 140, 15);
    let screen = lines(&buf);
    let sel = row_line(&screen, 28).unwrap();
    assert!(
        buf.cell((0, sel as u16))
            .unwrap()
            .modifier
            .contains(Modifier::REVERSED)
    );
    assert!(contains(&screen, "scrolled (End follows)"));

    // New rows do not move the table while scrolled.
    for id in 31..=40 {
        view.push(&call(id, "search", Outcome::ToolSuccess));
    }
    let screen = text(&view, 140, 15);
    assert_eq!(row_line(&screen, 28), Some(sel), "{screen:#?}");
    assert!(row_line(&screen, 40).is_none());

    // Up past the top scrolls; Home goes to the first row kept.
    for _ in 0..20 {
        press(&mut view, KeyCode::Up);
    }
    let screen = text(&view, 140, 15);
    assert!(row_line(&screen, 8).is_some() && row_line(&screen, 28).is_none());
    press(&mut view, KeyCode::Home);
    let screen = text(&view, 140, 15);
    assert!(row_line(&screen, 1).is_some());
    press(&mut view, KeyCode::PageDown);
    press(&mut view, KeyCode::Down);
    let screen = text(&view, 140, 15);
    assert!(row_line(&screen, 1).is_none(), "{screen:#?}");

    // End follows again; so does Down onto the newest row.
    press(&mut view, KeyCode::End);
    let screen = text(&view, 140, 15);
    assert!(row_line(&screen, 40).is_some() && contains(&screen, "following"));
    press(&mut view, KeyCode::Up);
    press(&mut view, KeyCode::Down);
    view.push(&call(41, "search", Outcome::ToolSuccess));
    assert!(row_line(&text(&view, 140, 15), 41).is_some());
}

#[test]
fn q_and_ctrl_c_quit_but_q_is_text_in_the_filter() {
    let mut view = LiveView::new(10);
    assert_eq!(press(&mut view, KeyCode::Char('q')), KeyOutcome::Quit);
    press(&mut view, KeyCode::Char('/'));
    assert_eq!(press(&mut view, KeyCode::Char('q')), KeyOutcome::Continue);
    assert_eq!(
        view.key(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL)),
        KeyOutcome::Quit
    );
    press(&mut view, KeyCode::Esc);
    view.push(&call(1, "a", Outcome::ToolSuccess));
    press(&mut view, KeyCode::Enter);
    assert_eq!(press(&mut view, KeyCode::Char('q')), KeyOutcome::Quit);
}

#[test]
fn counters_count_every_row_pushed_past_max_rows() {
    let mut view = LiveView::new(10);
    for id in 1..=20 {
        view.push(&call(id, "a", Outcome::ToolSuccess));
    }
    for id in 21..=25 {
        view.push(&call(id, "b", Outcome::HttpError));
    }
    view.push(&call(26, "c", Outcome::JsonrpcError));
    assert_eq!(view.rows_kept(), 10);
    assert_eq!(view.rows_pushed(), 26);
    assert_eq!(view.outcome_count(Outcome::ToolSuccess), 20);
    assert_eq!(view.layer_count(Layer::Application), 20);
    assert_eq!(view.layer_count(Layer::Transport), 5);
    let screen = text(&view, 160, 20);
    assert!(contains(&screen, "calls 26"), "{screen:#?}");
    assert!(contains(
        &screen,
        "HTTP_ERROR 5  JSONRPC_ERROR 1  TOOL_SUCCESS 20"
    ));
    assert!(contains(&screen, "transport 5 (5 failed)"));
    assert!(contains(&screen, "protocol 1 (1 failed)"));
    assert!(contains(&screen, "interaction 0  application 20"));
    assert!(contains(&screen, "26 rows, newest 10 kept"));
}

#[test]
fn gateway_copies_are_not_counted_as_calls() {
    let copy = Exchange {
        hop: Hop(2),
        forwarded_from: Some(1),
        ..call(2, "a", Outcome::HttpError)
    };
    let view = view_of(&[call(1, "a", Outcome::HttpError), copy]);
    assert_eq!(view.outcome_count(Outcome::HttpError), 1);
    let screen = text(&view, 160, 20);
    assert!(contains(&screen, "calls 1"));
    assert!(contains(&screen, "1 gateway copy (hop > 1, not counted)"));
    let copy_line = &screen[row_line(&screen, 2).unwrap()];
    assert!(copy_line.contains("2 ←#1"), "{copy_line:?}");
}

fn health(kernel: Option<u64>, interface: Option<u64>, loss: Option<f64>) -> CaptureHealth {
    CaptureHealth {
        interface: "eth0".into(),
        packets: 2000,
        bytes: 1_000_000,
        elapsed_s: 2.0,
        kernel_drops: kernel,
        interface_drops: interface,
        capture_loss: loss,
        rows_not_shown: 0,
    }
}

#[test]
fn health_shows_n_a_for_unknown_drops_and_the_numbers_when_known() {
    let mut view = LiveView::with_header(ScreenHeader::new("eth0"));
    let screen = text(&view, 200, 10);
    assert!(screen[0].contains("eth0 │ waiting for capture statistics"));

    view.set_health(health(None, None, None));
    let top = text(&view, 200, 10).remove(0);
    assert!(top.contains("eth0"), "{top}");
    assert!(top.contains("2000 packets 1.0 MB"), "{top}");
    assert!(top.contains("500.0 kB/s 1000 pkt/s"), "{top}");
    assert!(top.contains("drops kernel n/a interface n/a"), "{top}");
    assert!(top.contains("capture loss n/a"), "{top}");
    assert!(top.contains("rows not shown 0"), "{top}");
    assert!(top.contains("00:02"), "{top}");

    // Known values; the rate follows successive reports.
    let mut h = health(Some(3), Some(0), Some(0.0123));
    h.bytes = 3_000_000;
    h.elapsed_s = 3.0;
    h.rows_not_shown = 7;
    view.set_health(h);
    let buf = render(&view, 200, 10);
    let top = lines(&buf).remove(0);
    assert!(top.contains("drops kernel 3 interface 0"), "{top}");
    assert!(top.contains("capture loss 1.23%"), "{top}");
    assert!(top.contains("rows not shown 7"), "{top}");
    assert!(top.contains("2.0 MB/s"), "{top}");
    // A narrow screen keeps the drops and the rows not shown, with short labels.
    let narrow = text(&view, 100, 10).remove(0);
    assert!(narrow.contains("drops kernel 3 iface 0"), "{narrow}");
    assert!(narrow.contains("loss 1.23% │ not shown 7"), "{narrow}");
    assert!(contains(
        &text(&view, 100, 10),
        "0 rows (+7 not shown: the screen fell behind)"
    ));
    // A count of lost rows is shown in red.
    let x = top.find("shown 7").unwrap() + "shown ".len();
    let x = top[..x].chars().count() as u16;
    assert_eq!(buf.cell((x, 0)).unwrap().fg, Color::Red);
}

#[test]
fn outcomes_are_coloured_as_in_the_terminal_summary() {
    let view = view_of(&[
        call(1, "a", Outcome::ToolSuccess),
        call(2, "b", Outcome::InputRequired),
        call(3, "c", Outcome::HttpError),
    ]);
    let buf = render(&view, 140, 12);
    let screen = lines(&buf);
    let colour = |id: u64, word: &str| {
        let y = row_line(&screen, id).unwrap();
        let x = screen[y].find(word).unwrap();
        let x = screen[y][..x].chars().count() as u16;
        buf.cell((x, y as u16)).unwrap().fg
    };
    assert_eq!(colour(1, "TOOL_SUCCESS"), Color::Green);
    assert_eq!(colour(2, "INPUT_REQUIRED"), Color::Yellow);
    assert_eq!(colour(3, "HTTP_ERROR"), Color::Red);
    assert_eq!(colour(3, "transport"), Color::Red);
}

#[test]
fn retry_chains_and_findings_appear_as_they_come() {
    let first = call(4, "create_issue", Outcome::HttpError);
    let second = Exchange {
        retry_of: Some(4),
        attempt: 2,
        retry_origin: RetryOrigin::Application,
        retry_findings: [Finding::UnsafeRetry].into_iter().collect(),
        ..call(5, "create_issue", Outcome::HttpError)
    };
    let third = Exchange {
        retry_of: Some(5),
        attempt: 3,
        retry_origin: RetryOrigin::Application,
        retry_findings: [Finding::NoBackoff].into_iter().collect(),
        ..call(6, "create_issue", Outcome::ToolSuccess)
    };
    let mut view = view_of(&[first, second]);
    let screen = text(&view, 160, 24);
    assert!(
        contains(&screen, "Retry chains and findings"),
        "{screen:#?}"
    );
    assert!(
        contains(
            &screen,
            "tools/call create_issue: #4 HTTP_ERROR → #5 HTTP_ERROR by application  unsafe_retry"
        ),
        "{screen:#?}"
    );
    view.push(&third);
    let screen = text(&view, 160, 24);
    assert!(
        contains(
            &screen,
            "#4 HTTP_ERROR → #5 HTTP_ERROR by application → #6 TOOL_SUCCESS by application  unsafe_retry;no_backoff"
        ),
        "one line per chain, extended: {screen:#?}"
    );
    assert!(contains(&screen, "retries application 2"));
    assert!(contains(&screen, "findings unsafe_retry 1, no_backoff 1"));
    let retry_line = &screen[row_line(&screen, 6).unwrap()];
    assert!(retry_line.contains("#5 application"), "{retry_line:?}");
    assert!(retry_line.contains("no_backoff"), "{retry_line:?}");
}

#[test]
fn a_chain_whose_first_attempt_is_gone_still_shows() {
    let mut view = LiveView::new(1);
    view.push(&call(1, "a", Outcome::NoResponse));
    view.push(&call(2, "b", Outcome::ToolSuccess));
    view.push(&Exchange {
        retry_of: Some(1),
        retry_origin: RetryOrigin::Sdk,
        ..call(3, "a", Outcome::ToolSuccess)
    });
    let screen = text(&view, 160, 24);
    assert!(
        contains(&screen, "#1 (not kept) → #3 TOOL_SUCCESS by sdk"),
        "{screen:#?}"
    );
}

#[test]
fn long_chains_keep_the_first_attempts_and_the_newest() {
    let mut view = LiveView::new(100);
    view.push(&call(1, "a", Outcome::HttpError));
    for id in 2..=20 {
        view.push(&Exchange {
            retry_of: Some(id - 1),
            retry_origin: RetryOrigin::Sdk,
            ..call(id, "a", Outcome::HttpError)
        });
    }
    assert_eq!(view.chains.len(), 1);
    let screen = text(&view, 300, 24);
    assert!(
        contains(&screen, "… 12 more → #20 HTTP_ERROR"),
        "{screen:#?}"
    );
}

#[test]
fn small_and_narrow_terminals_draw_without_panic() {
    let mut view = view_of(&[rich_row(), call(10, "get_weather", Outcome::ToolSuccess)]);
    view.set_health(health(Some(1), None, None));
    for (w, h) in [
        (60, 15),
        (1, 1),
        (0, 0),
        (10, 3),
        (20, 5),
        (60, 6),
        (300, 80),
    ] {
        let _ = text(&view, w, h);
    }
    let screen = text(&view, 60, 15);
    let newest = &screen[row_line(&screen, 10).unwrap()];
    assert!(newest.contains("TOOL_SUCCESS"), "{screen:#?}");
    assert!(newest.contains("tools/call"), "{screen:#?}");
    assert!(screen.iter().all(|l| l.chars().count() == 60));
    assert!(screen[14].contains("q quit"), "{screen:#?}");
    press(&mut view, KeyCode::Enter);
    for (w, h) in [(60, 15), (1, 1), (10, 3), (20, 5)] {
        let _ = text(&view, w, h);
    }
    assert!(contains(&text(&view, 60, 15), "exchange #10"));
    press(&mut view, KeyCode::Esc);
    press(&mut view, KeyCode::Char('/'));
    type_text(
        &mut view,
        "a very long filter text that does not fit on a narrow line at all",
    );
    for (w, h) in [(60, 15), (1, 1), (10, 3)] {
        let _ = text(&view, w, h);
    }
}

#[test]
fn capture_text_is_shown_escaped() {
    let view = view_of(&[call(1, "evil\u{1b}[31m\nname", Outcome::ToolSuccess)]);
    let screen = text(&view, 140, 10);
    assert!(contains(&screen, "evil\\u{1b}[31m\\nname"), "{screen:#?}");
}

#[test]
fn the_ring_keeps_max_rows_of_100k_pushed() {
    let mut view = LiveView::new(DEFAULT_SCREEN_ROWS);
    let row = ScreenRow::from_exchange(&call(1, "a", Outcome::ToolSuccess));
    for id in 1..=100_000 {
        view.push_row(ScreenRow {
            exchange_id: id,
            ..row.clone()
        });
    }
    assert_eq!(view.rows_kept(), DEFAULT_SCREEN_ROWS);
    assert_eq!(view.rows_pushed(), 100_000);
    assert_eq!(view.outcome_count(Outcome::ToolSuccess), 100_000);
    let screen = text(&view, 140, 15);
    assert!(row_line(&screen, 100_000).is_some());
    assert!(contains(&screen, "100000 rows, newest 10000 kept"));
    press(&mut view, KeyCode::Home);
    let screen = text(&view, 140, 15);
    assert!(row_line(&screen, 90_001).is_some(), "{screen:#?}");
}

#[test]
fn the_feed_never_waits_and_counts_rows_it_could_not_hand_over() {
    let (mut feed, rx) = ScreenFeed::new(2);
    for id in 1..=5 {
        feed.row(&call(id, "a", Outcome::ToolSuccess));
    }
    assert_eq!(feed.rows_not_shown(), 3);
    let got: Vec<u64> = rx
        .try_iter()
        .filter_map(|m| match m {
            ScreenMsg::Row(r) => Some(r.exchange_id),
            _ => None,
        })
        .collect();
    assert_eq!(got, [1, 2]);
    feed.health(health(None, None, None));
    match rx.try_recv() {
        Ok(ScreenMsg::Health(h)) => assert_eq!(h.rows_not_shown, 3),
        other => panic!("{other:?}"),
    }
    // The screen shows the count from the health it carries.
    let mut view = LiveView::new(10);
    feed.health(health(None, None, None));
    if let Ok(ScreenMsg::Health(h)) = rx.try_recv() {
        view.set_health(h);
    }
    assert!(text(&view, 200, 10)[0].contains("rows not shown 3"));
    // Finishing with a full queue and no screen does not block.
    feed.row(&call(6, "a", Outcome::ToolSuccess));
    feed.row(&call(7, "a", Outcome::ToolSuccess));
    drop(rx);
    feed.row(&call(8, "a", Outcome::ToolSuccess));
    assert_eq!(feed.rows_not_shown(), 4);
    feed.finish();
}

#[test]
fn finished_comes_after_the_rows_sent_before_it() {
    let (mut feed, rx) = ScreenFeed::new(8);
    feed.row(&call(1, "a", Outcome::ToolSuccess));
    feed.finish();
    let msgs: Vec<ScreenMsg> = rx.try_iter().collect();
    assert!(matches!(
        msgs.as_slice(),
        [ScreenMsg::Row(_), ScreenMsg::Finished]
    ));
}

#[test]
fn the_screen_drains_rows_and_health_without_waiting_and_stops_at_finished() {
    fn sent_across_threads<T: Send>() {}
    sent_across_threads::<ScreenMsg>();
    sent_across_threads::<ScreenFeed>();
    sent_across_threads::<LiveView>();

    let (mut feed, rx) = ScreenFeed::new(16);
    let mut view = LiveView::new(10);
    assert_eq!(drain(&rx, &mut view), Drained::Nothing);
    feed.row(&call(1, "a", Outcome::ToolSuccess));
    feed.health(health(Some(2), None, None));
    assert_eq!(drain(&rx, &mut view), Drained::Some);
    assert_eq!(view.rows_pushed(), 1);
    assert!(text(&view, 200, 10)[0].contains("drops kernel 2"));
    feed.row(&call(2, "a", Outcome::ToolSuccess));
    feed.finish();
    assert_eq!(drain(&rx, &mut view), Drained::Finished);
    assert_eq!(view.rows_pushed(), 2, "rows sent before Finished are shown");

    // A capture thread that ends without Finished ends the screen too.
    let (feed, rx) = ScreenFeed::new(4);
    drop(feed);
    assert_eq!(drain(&rx, &mut view), Drained::Finished);
}
