//! [`LiveView`]: the live screen's state, with no terminal in it: the newest rows (a bounded
//! ring), counters over every row pushed, retry chains and findings as they appear, capture
//! health, the filters, the selection and the details pane. Keys change it; `draw` reads it.

use super::health::{CaptureHealth, HealthState};
use super::row::ScreenRow;
use crate::mcp::retry::{Finding, FindingSet};
use crate::mcp::{Exchange, Hop, Layer, Outcome, RetryOrigin};
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use std::cell::Cell;
use std::collections::VecDeque;

/// Rows the screen keeps by default; older rows leave the table (the counters keep them).
pub const DEFAULT_SCREEN_ROWS: usize = 10_000;

/// Retry chains kept for the chains panel; older ones leave it (the counters keep them).
pub const MAX_CHAIN_EVENTS: usize = 500;

/// Attempts kept per chain; the middle of a longer chain is only counted.
pub(super) const MAX_CHAIN_ATTEMPTS: usize = 8;

/// What the caller does after a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyOutcome {
    Continue,
    Quit,
}

/// What the screen shows about the run itself, fixed at start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScreenHeader {
    pub interface: String,
    /// The BPF filter, if one was given.
    pub bpf_filter: Option<String>,
    /// Files being written (`-w`, `-o`, ...), named for the header.
    pub outputs: Vec<String>,
    /// Rows the screen keeps ([`DEFAULT_SCREEN_ROWS`] by default).
    pub max_rows: usize,
}

impl ScreenHeader {
    pub fn new(interface: impl Into<String>) -> ScreenHeader {
        ScreenHeader {
            interface: interface.into(),
            bpf_filter: None,
            outputs: Vec::new(),
            max_rows: DEFAULT_SCREEN_ROWS,
        }
    }
}

/// Which part of the screen keys go to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Mode {
    Table,
    /// Typing a filter after `/`.
    Filter,
    Details,
}

/// A kept row and its place in push order (its identity while it is kept).
#[derive(Debug, Clone)]
pub(super) struct Kept {
    pub(super) seq: u64,
    pub(super) row: ScreenRow,
}

/// One attempt of a retry chain as the chains panel shows it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Attempt {
    pub(super) exchange_id: u64,
    pub(super) outcome: Option<Outcome>,
    pub(super) origin: RetryOrigin,
}

/// A retry chain as it grows: a new attempt extends the chain whose last attempt it repeats.
#[derive(Debug, Clone)]
pub(super) struct ChainEvent {
    pub(super) ts_request: i64,
    pub(super) call: String,
    pub(super) hop: Hop,
    /// The first attempts and the last, up to [`MAX_CHAIN_ATTEMPTS`].
    pub(super) attempts: Vec<Attempt>,
    /// Attempts left out of `attempts` (the middle of a long chain).
    pub(super) elided: u64,
    pub(super) findings: FindingSet,
    /// The last attempt's `exchange_id`: what the next retry of this call names.
    last_id: u64,
}

/// The live screen's state. Single-threaded: the screen thread owns it.
#[derive(Debug)]
pub struct LiveView {
    pub(super) header: ScreenHeader,
    pub(super) rows: VecDeque<Kept>,
    max_rows: usize,
    next_seq: u64,
    /// Every row pushed, kept or not.
    pub(super) pushed: u64,
    /// Calls: hop-1 rows, what the counters count (a gateway's copies are not counted again,
    /// report-schema.md section 4c).
    pub(super) calls: u64,
    /// Rows at hop 2 or more.
    pub(super) copies: u64,
    pub(super) by_outcome: [u64; Outcome::ALL.len()],
    pub(super) by_layer: [u64; Layer::ALL.len()],
    pub(super) failures_by_layer: [u64; Layer::ALL.len()],
    pub(super) retries_by_origin: [u64; RetryOrigin::ALL.len()],
    pub(super) findings: [u64; Finding::ALL.len()],
    pub(super) chains: VecDeque<ChainEvent>,
    pub(super) health: HealthState,
    pub(super) failures_only: bool,
    /// The applied `/` filter, lowercase; empty for none.
    pub(super) text_filter: String,
    /// The filter being typed.
    pub(super) input: String,
    pub(super) mode: Mode,
    /// The newest visible row is selected and stays so as rows come.
    pub(super) follow: bool,
    /// `seq` of the selected row when not following.
    selected: u64,
    pub(super) details: Option<Box<ScreenRow>>,
    pub(super) details_scroll: u16,
    /// The furthest the details pane scrolls, at the last draw.
    pub(super) details_max: Cell<u16>,
    /// Table rows that fit at the last draw (for page keys).
    pub(super) page: Cell<usize>,
    /// `seq` of the top row at the last draw, so the table holds still while scrolled.
    pub(super) top: Cell<u64>,
}

impl LiveView {
    /// An empty view keeping up to `max_rows` rows (at least one).
    pub fn new(max_rows: usize) -> LiveView {
        LiveView {
            header: ScreenHeader::new(""),
            rows: VecDeque::new(),
            max_rows: max_rows.max(1),
            next_seq: 0,
            pushed: 0,
            calls: 0,
            copies: 0,
            by_outcome: [0; Outcome::ALL.len()],
            by_layer: [0; Layer::ALL.len()],
            failures_by_layer: [0; Layer::ALL.len()],
            retries_by_origin: [0; RetryOrigin::ALL.len()],
            findings: [0; Finding::ALL.len()],
            chains: VecDeque::new(),
            health: HealthState::default(),
            failures_only: false,
            text_filter: String::new(),
            input: String::new(),
            mode: Mode::Table,
            follow: true,
            selected: 0,
            details: None,
            details_scroll: 0,
            details_max: Cell::new(u16::MAX),
            page: Cell::new(10),
            top: Cell::new(0),
        }
    }

    /// A view for `header`, keeping `header.max_rows` rows.
    pub fn with_header(header: ScreenHeader) -> LiveView {
        let mut view = LiveView::new(header.max_rows);
        view.header = header;
        view
    }

    pub fn set_health(&mut self, health: CaptureHealth) {
        self.health.set(health);
    }

    pub fn push(&mut self, e: &Exchange) {
        self.push_row(ScreenRow::from_exchange(e));
    }

    /// Counts the row, notes its retry and findings, and keeps it (dropping the oldest past
    /// `max_rows`).
    pub fn push_row(&mut self, row: ScreenRow) {
        self.pushed = self.pushed.saturating_add(1);
        let is_call = row.hop.0 <= 1;
        if is_call {
            self.calls = self.calls.saturating_add(1);
            add(&mut self.by_outcome, row.outcome.index());
            add(&mut self.by_layer, row.layer.index());
            if row.outcome.is_failure() {
                add(&mut self.failures_by_layer, row.layer.index());
            }
        } else {
            self.copies = self.copies.saturating_add(1);
        }
        // A copy of a client's retry repeats it one hop up: counted where it was decided.
        if row.retry_of.is_some() && (is_call || row.retry_origin == RetryOrigin::Gateway) {
            add(&mut self.retries_by_origin, row.retry_origin.index());
            for f in row.retry_findings.iter() {
                add(&mut self.findings, f.index());
            }
            self.note_chain(&row);
        }
        let seq = self.next_seq;
        self.next_seq = self.next_seq.saturating_add(1);
        self.rows.push_back(Kept { seq, row });
        while self.rows.len() > self.max_rows {
            self.rows.pop_front();
        }
    }

    fn note_chain(&mut self, row: &ScreenRow) {
        let Some(prev) = row.retry_of else {
            return;
        };
        let attempt = Attempt {
            exchange_id: row.exchange_id,
            outcome: Some(row.outcome),
            origin: row.retry_origin,
        };
        let mut event = match self.chains.iter().rposition(|c| c.last_id == prev) {
            Some(i) => self.chains.remove(i),
            None => None,
        }
        .unwrap_or_else(|| {
            // The attempt it repeats, if still kept: retries come soon after their attempt.
            let first = self.rows.iter().rev().find(|k| k.row.exchange_id == prev);
            ChainEvent {
                ts_request: row.ts_request,
                call: row.call(),
                hop: row.hop,
                attempts: vec![Attempt {
                    exchange_id: prev,
                    outcome: first.map(|k| k.row.outcome),
                    origin: RetryOrigin::None,
                }],
                elided: 0,
                findings: FindingSet::default(),
                last_id: prev,
            }
        });
        if event.attempts.len() >= MAX_CHAIN_ATTEMPTS {
            // Keep the first attempts and the newest: drop the one before the newest.
            let at = event.attempts.len().saturating_sub(1);
            event.attempts.remove(at);
            event.elided = event.elided.saturating_add(1);
        }
        event.attempts.push(attempt);
        event.ts_request = row.ts_request;
        event.last_id = row.exchange_id;
        for f in row.retry_findings.iter() {
            event.findings.insert(f);
        }
        self.chains.push_back(event);
        while self.chains.len() > MAX_CHAIN_EVENTS {
            self.chains.pop_front();
        }
    }

    /// Rows kept now.
    pub fn rows_kept(&self) -> usize {
        self.rows.len()
    }

    /// Rows pushed since the start.
    pub fn rows_pushed(&self) -> u64 {
        self.pushed
    }

    /// Calls (hop-1 rows) pushed with `outcome`.
    pub fn outcome_count(&self, outcome: Outcome) -> u64 {
        self.by_outcome.get(outcome.index()).copied().unwrap_or(0)
    }

    /// Calls (hop-1 rows) pushed at `layer`.
    pub fn layer_count(&self, layer: Layer) -> u64 {
        self.by_layer.get(layer.index()).copied().unwrap_or(0)
    }

    /// Whether a row passes the filters.
    fn shows(&self, row: &ScreenRow) -> bool {
        (!self.failures_only || row.outcome.is_failure()) && row.matches_text(&self.text_filter)
    }

    /// Indexes into `rows` of the rows the filters let through, oldest first.
    pub(super) fn visible(&self) -> Vec<usize> {
        (0..self.rows.len())
            .filter(|&i| self.rows.get(i).is_some_and(|k| self.shows(&k.row)))
            .collect()
    }

    fn seq_at(&self, visible: &[usize], pos: usize) -> Option<u64> {
        let i = visible.get(pos)?;
        self.rows.get(*i).map(|k| k.seq)
    }

    /// Position in `visible` of the selected row: the newest when following; else the
    /// selected row, or the next one shown when it is filtered out or gone.
    pub(super) fn selected_pos(&self, visible: &[usize]) -> Option<usize> {
        let last = visible.len().checked_sub(1)?;
        if self.follow {
            return Some(last);
        }
        let pos =
            visible.partition_point(|&i| self.rows.get(i).is_some_and(|k| k.seq < self.selected));
        Some(pos.min(last))
    }

    /// Position in `visible` of the top row of a table `height` rows high, keeping the
    /// selection in sight and the table full; remembers it for the next draw.
    pub(super) fn top_pos(&self, visible: &[usize], height: usize) -> usize {
        self.page.set(height.max(1));
        let Some(sel) = self.selected_pos(visible) else {
            return 0;
        };
        let mut top = if self.follow {
            sel.saturating_add(1).saturating_sub(height)
        } else {
            let anchor = self.top.get();
            visible.partition_point(|&i| self.rows.get(i).is_some_and(|k| k.seq < anchor))
        };
        if sel < top {
            top = sel;
        }
        if height > 0 && sel >= top.saturating_add(height) {
            top = sel.saturating_add(1).saturating_sub(height);
        }
        top = top.min(visible.len().saturating_sub(height));
        if let Some(seq) = self.seq_at(visible, top) {
            self.top.set(seq);
        }
        top
    }

    /// The row the details pane would show.
    pub(super) fn selected_row(&self) -> Option<&ScreenRow> {
        let visible = self.visible();
        let pos = self.selected_pos(&visible)?;
        let i = visible.get(pos)?;
        self.rows.get(*i).map(|k| &k.row)
    }

    /// Moves the selection by `delta` rows; reaching the newest row follows again.
    fn move_selection(&mut self, delta: isize) {
        let visible = self.visible();
        let Some(cur) = self.selected_pos(&visible) else {
            return;
        };
        let last = visible.len().saturating_sub(1);
        let pos = cur.saturating_add_signed(delta).min(last);
        if pos == last && delta > 0 {
            self.follow = true;
            return;
        }
        if let Some(seq) = self.seq_at(&visible, pos) {
            self.follow = false;
            self.selected = seq;
        }
    }

    fn select_first(&mut self) {
        let visible = self.visible();
        if let Some(seq) = self.seq_at(&visible, 0) {
            self.follow = false;
            self.selected = seq;
        }
    }

    /// Applies one key. `q` and Ctrl-C quit, except that `q` is text while typing a filter.
    pub fn key(&mut self, key: KeyEvent) -> KeyOutcome {
        if key.kind == KeyEventKind::Release {
            return KeyOutcome::Continue;
        }
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        if ctrl && matches!(key.code, KeyCode::Char('c' | 'C')) {
            return KeyOutcome::Quit;
        }
        match self.mode {
            Mode::Filter => self.filter_key(key.code, ctrl),
            Mode::Details => return self.details_key(key.code),
            Mode::Table => return self.table_key(key.code),
        }
        KeyOutcome::Continue
    }

    fn filter_key(&mut self, code: KeyCode, ctrl: bool) {
        match code {
            KeyCode::Enter => {
                self.text_filter = self.input.trim().to_lowercase();
                self.mode = Mode::Table;
            }
            KeyCode::Esc => self.mode = Mode::Table,
            KeyCode::Backspace => {
                self.input.pop();
            }
            KeyCode::Char('u') if ctrl => self.input.clear(),
            KeyCode::Char(c) if !ctrl && !c.is_control() => self.input.push(c),
            _ => {}
        }
    }

    fn details_key(&mut self, code: KeyCode) -> KeyOutcome {
        match code {
            KeyCode::Char('q') => return KeyOutcome::Quit,
            KeyCode::Esc | KeyCode::Enter => {
                self.mode = Mode::Table;
                self.details = None;
                self.details_scroll = 0;
            }
            KeyCode::Up | KeyCode::Char('k') => self.scroll_details(-1),
            KeyCode::Down | KeyCode::Char('j') => self.scroll_details(1),
            KeyCode::PageUp => self.scroll_details(-10),
            KeyCode::PageDown => self.scroll_details(10),
            KeyCode::Home => self.details_scroll = 0,
            KeyCode::End => self.details_scroll = self.details_max.get(),
            _ => {}
        }
        KeyOutcome::Continue
    }

    fn scroll_details(&mut self, delta: i16) {
        self.details_scroll = self
            .details_scroll
            .saturating_add_signed(delta)
            .min(self.details_max.get());
    }

    fn table_key(&mut self, code: KeyCode) -> KeyOutcome {
        let page = isize::try_from(self.page.get().max(1)).unwrap_or(1);
        match code {
            KeyCode::Char('q') => return KeyOutcome::Quit,
            KeyCode::Char('f') => self.failures_only = !self.failures_only,
            KeyCode::Char('/') => {
                self.input = self.text_filter.clone();
                self.mode = Mode::Filter;
            }
            KeyCode::Esc => self.text_filter.clear(),
            KeyCode::Enter => {
                if let Some(row) = self.selected_row() {
                    self.details = Some(Box::new(row.clone()));
                    self.details_scroll = 0;
                    self.details_max.set(u16::MAX);
                    self.mode = Mode::Details;
                }
            }
            KeyCode::Up | KeyCode::Char('k') => self.move_selection(-1),
            KeyCode::Down | KeyCode::Char('j') => self.move_selection(1),
            KeyCode::PageUp => self.move_selection(-page),
            KeyCode::PageDown => self.move_selection(page),
            KeyCode::Home | KeyCode::Char('g') => self.select_first(),
            KeyCode::End | KeyCode::Char('G') => self.follow = true,
            _ => {}
        }
        KeyOutcome::Continue
    }
}

fn add(counts: &mut [u64], index: usize) {
    if let Some(n) = counts.get_mut(index) {
        *n = n.saturating_add(1);
    }
}
