//! The screen's thread: takes the terminal (raw mode, alternate screen), shows what the
//! capture sends, answers keys, and gives the terminal back however it ends.

use super::draw::draw;
use super::feed::ScreenMsg;
use super::view::{KeyOutcome, LiveView, ScreenHeader};
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use ratatui::crossterm::event::{self, Event, KeyEventKind};
use ratatui::crossterm::{cursor, execute, terminal};
use std::io::{self, Stdout};
use std::panic;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, TryRecvError};
use std::time::{Duration, Instant};

/// At most 10 redraws a second.
const FRAME_INTERVAL: Duration = Duration::from_millis(100);
/// Longest wait for a key, so that rows and `stop` are looked at this often.
const KEY_POLL: Duration = Duration::from_millis(50);
/// Messages taken per turn of the loop, so that a flood of rows does not delay keys.
const MAX_DRAIN: usize = 20_000;

type PanicHook = Box<dyn Fn(&panic::PanicHookInfo<'_>) + Sync + Send + 'static>;

/// Raw mode and the alternate screen while it lives; restored on drop (a return, an error,
/// a panic unwinding through the screen thread). A panic on any thread restores the terminal
/// first, so that its message is printed where it can be read.
struct TerminalGuard {
    previous_hook: Arc<PanicHook>,
}

impl TerminalGuard {
    fn enter() -> io::Result<TerminalGuard> {
        let previous_hook: Arc<PanicHook> = Arc::new(panic::take_hook());
        let chained = Arc::clone(&previous_hook);
        panic::set_hook(Box::new(move |info| {
            restore_terminal();
            chained(info);
        }));
        // From here on, Drop undoes whatever was done.
        let guard = TerminalGuard { previous_hook };
        terminal::enable_raw_mode()?;
        execute!(
            io::stdout(),
            terminal::EnterAlternateScreen,
            cursor::Hide,
            terminal::Clear(terminal::ClearType::All)
        )?;
        Ok(guard)
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        restore_terminal();
        // The hook cannot be changed while panicking; the process is ending then anyway.
        if !std::thread::panicking() {
            let previous = Arc::clone(&self.previous_hook);
            drop(panic::take_hook());
            panic::set_hook(Box::new(move |info| previous(info)));
        }
    }
}

/// Leaves the alternate screen and raw mode; each step is tried even when one fails.
fn restore_terminal() {
    let _ = execute!(io::stdout(), terminal::LeaveAlternateScreen, cursor::Show);
    let _ = terminal::disable_raw_mode();
}

/// Runs the live screen until `stop` is set (by anyone) or [`ScreenMsg::Finished`] comes
/// (or every sender is gone). Sets `stop` itself on `q` or Ctrl-C. Call it on a thread of
/// its own, with stdout a terminal; the terminal is restored before it returns.
pub fn run_screen(
    rx: Receiver<ScreenMsg>,
    stop: Arc<AtomicBool>,
    header: ScreenHeader,
) -> io::Result<()> {
    let _guard = TerminalGuard::enter()?;
    let mut term: Terminal<CrosstermBackend<Stdout>> =
        Terminal::new(CrosstermBackend::new(io::stdout()))?;
    // No `Terminal::clear`: it asks the terminal where the cursor is, and fails when no
    // answer comes (a terminal that does not answer); the guard cleared the screen.
    let mut view = LiveView::with_header(header);
    let mut changed = true;
    let mut last_draw: Option<Instant> = None;
    loop {
        if stop.load(Ordering::Relaxed) {
            return Ok(());
        }
        match drain(&rx, &mut view) {
            Drained::Nothing => {}
            Drained::Some => changed = true,
            Drained::Finished => return Ok(()),
        }
        let now = Instant::now();
        let due = last_draw.map_or(now, |t| t + FRAME_INTERVAL);
        if changed && now >= due {
            term.draw(|f| draw(&view, f))?;
            last_draw = Some(now);
            changed = false;
        }
        // Wait for a key, but no longer than until the next frame is due.
        let wait = if changed {
            due.saturating_duration_since(now).min(KEY_POLL)
        } else {
            KEY_POLL
        };
        if event::poll(wait)? {
            match event::read()? {
                Event::Key(k) if k.kind != KeyEventKind::Release => {
                    if view.key(k) == KeyOutcome::Quit {
                        stop.store(true, Ordering::Relaxed);
                        return Ok(());
                    }
                    changed = true;
                }
                Event::Resize(..) => changed = true,
                _ => {}
            }
        }
    }
}

#[derive(Debug, PartialEq, Eq)]
pub(super) enum Drained {
    Nothing,
    Some,
    Finished,
}

/// Takes what the capture sent, without waiting.
pub(super) fn drain(rx: &Receiver<ScreenMsg>, view: &mut LiveView) -> Drained {
    let mut got = Drained::Nothing;
    for _ in 0..MAX_DRAIN {
        match rx.try_recv() {
            Ok(ScreenMsg::Row(row)) => view.push_row(row),
            Ok(ScreenMsg::Health(h)) => view.set_health(h),
            Ok(ScreenMsg::Finished) | Err(TryRecvError::Disconnected) => {
                return Drained::Finished;
            }
            Err(TryRecvError::Empty) => break,
        }
        got = Drained::Some;
    }
    got
}
