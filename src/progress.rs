//! Progress of a long command on standard error: what it is doing now, shown only once the
//! command has run for [`SHOW_AFTER`] (a short run prints nothing more than before).
//!
//! On a terminal it is an indicatif spinner with the elapsed time and the current phase,
//! cleared at the end; otherwise (a pipe, a log file) one plain line when the delay passes
//! and one per phase after it. Standard output is never touched.

use std::io::IsTerminal;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How long a command runs before its progress is shown.
pub const SHOW_AFTER: Duration = Duration::from_secs(2);

/// The spinner's redraw interval on a terminal.
const TICK: Duration = Duration::from_millis(120);

/// The least time between two status lines when standard error is not a terminal.
pub const LINE_EVERY: Duration = Duration::from_secs(10);

/// What the waiting thread and the phases share: the current phase and whether progress is
/// shown yet.
struct State {
    phase: String,
    shown: bool,
    /// When the last status line was printed (plain lines only).
    last_line: Option<Instant>,
}

/// The progress of one command (see the module docs); ends, and clears its spinner, when
/// dropped or [`Progress::finish`]ed.
pub struct Progress {
    bar: ProgressBar,
    state: Arc<Mutex<State>>,
    terminal: bool,
    started: Instant,
    stop: Option<mpsc::Sender<()>>,
    waiter: Option<JoinHandle<()>>,
}

impl Progress {
    /// Starts timing a command whose first phase is `phase`; progress appears on standard
    /// error if it is still running after [`SHOW_AFTER`].
    pub fn start(phase: &str) -> Progress {
        let terminal = std::io::stderr().is_terminal();
        Progress::with(phase, terminal, SHOW_AFTER)
    }

    fn with(phase: &str, terminal: bool, delay: Duration) -> Progress {
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden());
        if let Ok(style) = ProgressStyle::with_template("{spinner} [{elapsed}] {wide_msg}") {
            bar.set_style(style);
        }
        bar.set_message(phase.to_string());
        let state = Arc::new(Mutex::new(State {
            phase: phase.to_string(),
            shown: false,
            last_line: None,
        }));
        let started = Instant::now();
        let (stop, stopped) = mpsc::channel::<()>();
        let (b, s) = (bar.clone(), Arc::clone(&state));
        let waiter = std::thread::spawn(move || {
            // Ended early (a message or the sender dropped): nothing to show.
            if stopped.recv_timeout(delay) != Err(RecvTimeoutError::Timeout) {
                return;
            }
            let Ok(mut st) = s.lock() else { return };
            st.shown = true;
            if terminal {
                b.set_draw_target(ProgressDrawTarget::stderr());
                b.enable_steady_tick(TICK);
            } else {
                eprintln!(
                    "[{:.1} s] {} ...",
                    started.elapsed().as_secs_f64(),
                    st.phase
                );
            }
        });
        Progress {
            bar,
            state,
            terminal,
            started,
            stop: Some(stop),
            waiter: Some(waiter),
        }
    }

    /// The command moved on to `phase` (e.g. "writing result.json").
    pub fn phase(&self, phase: &str) {
        let Ok(mut st) = self.state.lock() else {
            return;
        };
        st.phase = phase.to_string();
        self.bar.set_message(phase.to_string());
        if st.shown && !self.terminal {
            eprintln!(
                "[{:.1} s] {phase} ...",
                self.started.elapsed().as_secs_f64()
            );
        }
    }

    /// How far the current phase got (`text`, e.g. the simulated time so far): shown beside
    /// the phase by the spinner on a terminal; otherwise printed as a line, at most one every
    /// [`LINE_EVERY`], once progress is shown.
    pub fn status(&self, text: &str) {
        let Ok(mut st) = self.state.lock() else {
            return;
        };
        let line = format!("{}: {text}", st.phase);
        self.bar.set_message(line.clone());
        if !st.shown || self.terminal {
            return;
        }
        let now = Instant::now();
        if st.last_line.is_some_and(|t| now < t + LINE_EVERY) {
            return;
        }
        st.last_line = Some(now);
        eprintln!("[{:.1} s] {line}", self.started.elapsed().as_secs_f64());
    }

    /// Runs `f` with the spinner hidden (for text written to the terminal meanwhile).
    pub fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        self.bar.suspend(f)
    }

    /// Whether progress has been shown (the command ran past [`SHOW_AFTER`]).
    pub fn shown(&self) -> bool {
        self.state.lock().is_ok_and(|s| s.shown)
    }

    /// Ends the progress: clears the spinner, or says how long it all took when plain lines
    /// were printed.
    pub fn finish(mut self) {
        self.end();
    }

    fn end(&mut self) {
        // Dropping the sender wakes the waiting thread if it is still waiting.
        self.stop.take();
        if let Some(w) = self.waiter.take() {
            let _ = w.join();
        }
        self.bar.finish_and_clear();
        if self.shown() && !self.terminal {
            eprintln!("[{:.1} s] done", self.started.elapsed().as_secs_f64());
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if self.waiter.is_some() {
            self.end();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_command_shows_nothing() {
        let p = Progress::with("working", false, Duration::from_secs(3600));
        p.phase("still working");
        assert!(!p.shown());
        p.finish();
    }

    #[test]
    fn a_long_command_shows_its_phase() {
        let p = Progress::with("working", false, Duration::ZERO);
        // The waiting thread marks it shown as soon as the (zero) delay has passed.
        while !p.shown() {
            std::thread::sleep(Duration::from_millis(1));
        }
        p.phase("writing result.json");
        p.finish();
    }
}
