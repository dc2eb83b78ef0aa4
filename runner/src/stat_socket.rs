//! The local socket a running process answers `xrdma stat --socket PATH` on: a Unix domain
//! stream socket at the path the user names (`xrdma run --stat-socket PATH`), opened only on
//! request. The protocol is one exchange per connection: the client connects, the process
//! writes one [`LiveStat`] as a line of JSON and closes; nothing is read from the client.
//!
//! The turn loop asks the socket ([`Watch::due`]) after every round; it looks for a waiting
//! client at most every [`POLL_EVERY`] of wall time (one non-blocking `accept`), so an
//! unwatched socket costs a clock read per round, and after each answer it waits long enough
//! that answering takes at most [`SHARE`] of the wall time, whatever the clients ask. A
//! client is answered at the first round after it connected: within a few ms on a busy run;
//! an idle verbs run answers at its next wake (the client's read timeout bounds the wait).

use crate::watch::{LiveStat, Watch};
use std::io::{ErrorKind, Write};
use std::os::unix::fs::FileTypeExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use xrdma::Time;

/// How often, in wall time, the socket looks for a waiting client.
pub const POLL_EVERY: Duration = Duration::from_millis(5);

/// How long an answer may take to write before the client is given up.
const WRITE_TIMEOUT: Duration = Duration::from_secs(2);

/// The most of the run's wall time answering may take: after an answer that took `d`, the
/// socket looks for the next client no sooner than `d · (1 − SHARE) / SHARE` later, however
/// many clients ask and however often (they wait instead).
pub const SHARE: f64 = 0.1;

/// Why the socket could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum StatSocketError {
    /// A process (this one or another) answers on the path.
    #[error("{0}: a process is already answering stat requests on this socket")]
    InUse(PathBuf),
    /// Something that is not a socket is in the way.
    #[error("{0}: exists and is not a socket; name another path for the stat socket")]
    NotASocket(PathBuf),
    /// No path: Linux would bind an abstract socket no client can name.
    #[error("the stat socket needs a path")]
    NoPath,
    /// The socket could not be made.
    #[error("{path}: cannot open the stat socket: {source}")]
    Io {
        /// The path.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

/// An open stat socket: answers every client that connects with the endpoints of the run.
#[derive(Debug)]
pub struct StatSocket {
    listener: UnixListener,
    path: PathBuf,
    /// A client accepted and not yet answered.
    pending: Option<UnixStream>,
    /// When `due` said yes to the pending client (the answer's cost runs from here).
    since: Option<Instant>,
    next_poll: Instant,
    answered: u64,
    failed: u64,
}

impl StatSocket {
    /// Opens the socket at `path`. A socket file left by a process that has gone (nothing
    /// accepts on it) is replaced.
    ///
    /// # Errors
    /// An empty path; a live process answers on `path`; `path` is not a socket; the socket
    /// cannot be bound
    /// (a missing directory, no permission, a path longer than `sun_path`'s 107 bytes).
    pub fn bind(path: &Path) -> Result<StatSocket, StatSocketError> {
        if path.as_os_str().is_empty() {
            return Err(StatSocketError::NoPath);
        }
        let io = |source| StatSocketError::Io {
            path: path.to_path_buf(),
            source,
        };
        if let Ok(meta) = std::fs::symlink_metadata(path) {
            if !meta.file_type().is_socket() {
                return Err(StatSocketError::NotASocket(path.to_path_buf()));
            }
            match UnixStream::connect(path) {
                Ok(_) => return Err(StatSocketError::InUse(path.to_path_buf())),
                Err(_) => std::fs::remove_file(path).map_err(io)?,
            }
        }
        let listener = UnixListener::bind(path).map_err(io)?;
        listener.set_nonblocking(true).map_err(io)?;
        Ok(StatSocket {
            listener,
            path: path.to_path_buf(),
            pending: None,
            since: None,
            next_poll: Instant::now(),
            answered: 0,
            failed: 0,
        })
    }

    /// The socket's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Clients answered so far.
    pub fn answered(&self) -> u64 {
        self.answered
    }

    /// Clients that went away (or stopped reading) before their answer was written.
    pub fn failed(&self) -> u64 {
        self.failed
    }

    fn answer(stream: &mut UnixStream, stat: &LiveStat) -> std::io::Result<()> {
        stream.set_nonblocking(false)?;
        stream.set_write_timeout(Some(WRITE_TIMEOUT))?;
        let mut line = serde_json::to_vec(stat)?;
        line.push(b'\n');
        stream.write_all(&line)?;
        stream.flush()
    }
}

impl Watch for StatSocket {
    fn due(&mut self, _now: Time) -> bool {
        if self.pending.is_some() {
            return true;
        }
        let now = Instant::now();
        if now < self.next_poll {
            return false;
        }
        self.next_poll = now + POLL_EVERY;
        match self.listener.accept() {
            Ok((stream, _)) => {
                self.pending = Some(stream);
                self.since = Some(now);
                true
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => false,
            Err(_) => {
                self.failed += 1;
                false
            }
        }
    }

    fn take(&mut self, stat: LiveStat) {
        if let Some(mut stream) = self.pending.take() {
            match StatSocket::answer(&mut stream, &stat) {
                Ok(()) => self.answered += 1,
                Err(_) => self.failed += 1,
            }
            // Keep answering within SHARE of the wall time: the snapshot, its JSON and the
            // write just took `cost`; the next client waits the rest.
            let now = Instant::now();
            let cost = self.since.take().map_or(Duration::ZERO, |t| now - t);
            let gap = cost.mul_f64((1.0 - SHARE) / SHARE).max(POLL_EVERY);
            self.next_poll = now + gap;
        }
    }
}

impl Drop for StatSocket {
    fn drop(&mut self) {
        // Best effort: the socket file goes with the process that answered on it.
        let _ = std::fs::remove_file(&self.path);
    }
}

#[cfg(test)]
mod tests;
