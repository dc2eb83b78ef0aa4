//! Connection bootstrap between processes: a TCP side channel over which ranks check that
//! they run the same tool and scenario, exchange what a peer needs to connect a QP
//! ([`xrdma::driver::ConnInfo`], carried as an opaque serde value), agree on a start, and hand
//! their records back at the end.
//!
//! Wire format: each frame is a 4-byte big-endian length followed by that many bytes of JSON
//! (one [`Frame`]); frames above [`MAX_FRAME_BYTES`] are refused. A connection starts with both
//! sides sending a [`Hello`] and checking the other's, then, between the ranks of a job, proving
//! the job's secret both ways ([`Peer::handshake`], [`Auth`]; the frames after it carry no MAC,
//! see [`auth`]).
//!
//! Nothing here blocks without a limit: connecting retries until a deadline (the peer may
//! start later), accepting stops at a deadline, and every read and write has a timeout. A
//! peer that closes early, times out, sends garbage or runs another version is a typed
//! [`BootstrapError`] naming both sides.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

pub mod auth;
pub mod secret;
mod wire;
pub use auth::{Auth, Session};
pub use secret::{JobSecret, SecretError};
pub use wire::{encode_frame, parse_frame, MAX_FRAME_BYTES};

/// Version of this wire protocol; a peer with another one is refused (2: the rendezvous
/// frames `join` and `table`; 3: the `device` frame a rank sends after `bye`; 4: the
/// rendezvous proves the job secret, with `challenge` and `proof` frames and a MAC on `join`
/// and `table`; 5: every connection between the ranks of a job proves it, `challenge` each
/// way and `proof` each way, the acceptor's first ([`auth`]), the rendezvous's too).
pub const PROTOCOL_VERSION: u32 = 5;

/// Pause between two connection attempts while the peer is not listening yet.
pub const CONNECT_RETRY: Duration = Duration::from_millis(100);

/// Longest a connection to rank 0's coordinator (the launch's rendezvous) or to a rank's
/// listener may take from its accept to a proven join (5 s; a real rank answers in a few
/// round trips), so a stranger that connects and says nothing holds it up this long at most.
pub const HANDSHAKE_LIMIT: Duration = Duration::from_secs(5);

/// The first frame on a connection: who is speaking and what it runs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Hello {
    /// [`PROTOCOL_VERSION`] of the sender.
    pub protocol: u32,
    /// The sender's tool version (`CARGO_PKG_VERSION`).
    pub tool_version: String,
    /// Scenario name (or the tool's name, e.g. `ping`, outside a scenario).
    pub scenario: String,
    /// Hash of the scenario file ([`content_hash`]), or of the tool's options.
    pub scenario_hash: String,
    /// The sender's rank.
    pub rank: u32,
    /// The sender's host name, when it could read it; the receiver's rank records it in the
    /// result's `environment.ranks`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// The message stack and backend the sender's rank runs (`xrdma over the verbs
    /// backend`, ...): the two sides of a run must agree. `None` outside a scenario's run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transport: Option<String>,
}

impl Hello {
    /// A hello from `rank` of this build on this machine, for `scenario` with
    /// `scenario_hash`.
    pub fn new(scenario: &str, scenario_hash: &str, rank: u32) -> Self {
        Hello {
            protocol: PROTOCOL_VERSION,
            tool_version: env!("CARGO_PKG_VERSION").to_string(),
            scenario: scenario.to_string(),
            scenario_hash: scenario_hash.to_string(),
            rank,
            host: xrdma_observe::environment::host_name(),
            transport: None,
        }
    }

    /// This hello, saying its rank runs `transport` (see [`Hello::transport`]).
    pub fn with_transport(mut self, transport: &str) -> Self {
        self.transport = Some(transport.to_string());
        self
    }
}

impl std::fmt::Display for Hello {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "rank {} (protocol {}, xrdma {}, scenario {:?} hash {}",
            self.rank, self.protocol, self.tool_version, self.scenario, self.scenario_hash
        )?;
        match &self.transport {
            Some(t) => write!(f, ", {t})"),
            None => write!(f, ")"),
        }
    }
}

/// XXH3-64 of `bytes` as 16 hex digits: the scenario fingerprint two ranks compare.
pub fn content_hash(bytes: &[u8]) -> String {
    format!("{:016x}", xxhash_rust::xxh3::xxh3_64(bytes))
}

/// A connection record: one side's connection info for the QP pair joining scenario host
/// `sender` to scenario host `receiver`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct ConnRecord {
    /// The sending host of the pair.
    pub sender: u32,
    /// The receiving host of the pair.
    pub receiver: u32,
    /// The info, serialized whole (the bootstrap never reads its fields).
    pub info: serde_json::Value,
}

impl ConnRecord {
    /// The record for pair (`sender`, `receiver`) carrying `info`.
    ///
    /// # Errors
    /// [`BootstrapError::Encode`] when `info` cannot be serialized.
    pub fn new<T: Serialize>(sender: u32, receiver: u32, info: &T) -> Result<Self, BootstrapError> {
        let info = serde_json::to_value(info).map_err(|e| BootstrapError::Encode {
            reason: e.to_string(),
        })?;
        Ok(ConnRecord {
            sender,
            receiver,
            info,
        })
    }

    /// The info as `T`.
    ///
    /// # Errors
    /// [`BootstrapError::Malformed`] when the value is not a `T` (`peer` names the sender).
    pub fn decode<T: DeserializeOwned>(&self, peer: SocketAddr) -> Result<T, BootstrapError> {
        serde_json::from_value(self.info.clone()).map_err(|e| BootstrapError::Malformed {
            peer,
            reason: format!(
                "connection info for hosts {} -> {}: {e}",
                self.sender, self.receiver
            ),
        })
    }
}

/// One message of the bootstrap protocol.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "frame", rename_all = "kebab-case")]
pub enum Frame {
    /// Identification; the first frame each way.
    Hello(Hello),
    /// Connection infos, keyed by (sender host, receiver host).
    Conns {
        /// The records.
        conns: Vec<ConnRecord>,
    },
    /// Every QP is connected: start the clock now.
    Start,
    /// A rank's results at the end of a run (opaque to the bootstrap).
    Records {
        /// The results, serialized whole.
        records: serde_json::Value,
    },
    /// The run is over: the peer may close its QPs and exit.
    Bye,
    /// A rank's RDMA device and its counters over the run, the answer to `bye` (opaque to
    /// the bootstrap).
    Device {
        /// The device and counters, serialized whole.
        device: serde_json::Value,
    },
    /// A fresh random nonce, each side's challenge to the other after the hellos when the
    /// handshake proves the job's secret ([`Auth::Job`]).
    Challenge {
        /// The nonce, hex.
        nonce: String,
    },
    /// A side's answer to the other's challenge, proving it holds the job's secret
    /// ([`Auth::Job`]; the acceptor's first).
    Proof {
        /// HMAC-SHA256 over the handshake, hex.
        mac: String,
    },
    /// Rendezvous: a rank tells rank 0 the rank count it was launched with and where its
    /// bootstrap listener is bound (its rank is in its hello), proving it holds the job
    /// secret again, bound to what it says.
    Join {
        /// The rank count.
        size: u32,
        /// The bootstrap listener's address.
        address: SocketAddr,
        /// HMAC-SHA256 over the handshake and this frame, hex.
        mac: String,
    },
    /// Rendezvous: rank 0's answer, every rank's bootstrap address in rank order.
    Table {
        /// Rank `r`'s address is `ranks[r]`.
        ranks: Vec<SocketAddr>,
        /// HMAC-SHA256 over the handshake and the table, hex.
        mac: String,
    },
}

impl Frame {
    fn kind(&self) -> &'static str {
        match self {
            Frame::Hello(_) => "hello",
            Frame::Conns { .. } => "conns",
            Frame::Start => "start",
            Frame::Records { .. } => "records",
            Frame::Bye => "bye",
            Frame::Device { .. } => "device",
            Frame::Challenge { .. } => "challenge",
            Frame::Proof { .. } => "proof",
            Frame::Join { .. } => "join",
            Frame::Table { .. } => "table",
        }
    }
}

/// A bootstrap failure, naming the peer and what was under way.
#[derive(Debug, thiserror::Error)]
pub enum BootstrapError {
    /// The listener could not bind.
    #[error("bootstrap: cannot listen on {addr}: {source}")]
    Listen {
        /// The address asked for.
        addr: SocketAddr,
        /// The OS error.
        source: std::io::Error,
    },
    /// No connection to the peer before the deadline.
    #[error("bootstrap: could not connect to {addr} within {waited:.1?} (last error: {last})")]
    ConnectTimeout {
        /// The peer's address.
        addr: SocketAddr,
        /// How long the attempts went on.
        waited: Duration,
        /// The last attempt's error.
        last: String,
    },
    /// No peer connected before the deadline.
    #[error("bootstrap: no peer connected to {addr} within {waited:.1?}")]
    AcceptTimeout {
        /// Our listening address.
        addr: SocketAddr,
        /// How long we waited.
        waited: Duration,
    },
    /// A read or write did not finish in time.
    #[error("bootstrap: {peer} did not answer within {limit:.1?} while {what}")]
    Timeout {
        /// The peer's address.
        peer: SocketAddr,
        /// What we were doing (`reading a frame`, ...).
        what: String,
        /// The timeout.
        limit: Duration,
    },
    /// The peer closed the connection.
    #[error("bootstrap: {peer} closed the connection while {what}")]
    PeerClosed {
        /// The peer's address.
        peer: SocketAddr,
        /// What we were doing.
        what: String,
    },
    /// Another I/O error.
    #[error("bootstrap: I/O error with {peer} while {what}: {source}")]
    Io {
        /// The peer's address.
        peer: SocketAddr,
        /// What we were doing.
        what: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// A frame too large, not JSON, or not a [`Frame`].
    #[error("bootstrap: malformed frame from {peer}: {reason}")]
    Malformed {
        /// The peer's address.
        peer: SocketAddr,
        /// What is wrong with it.
        reason: String,
    },
    /// A valid frame that does not belong here.
    #[error("bootstrap: expected a `{expected}` frame from {peer}, got `{got}`")]
    Unexpected {
        /// The peer's address.
        peer: SocketAddr,
        /// The frame kind expected.
        expected: &'static str,
        /// The frame kind received.
        got: &'static str,
    },
    /// The peer runs another protocol or tool version.
    #[error("bootstrap: version mismatch: this side is {ours}, {peer} is {theirs}")]
    VersionMismatch {
        /// Our hello.
        ours: Box<Hello>,
        /// The peer's hello.
        theirs: Box<Hello>,
        /// The peer's address.
        peer: SocketAddr,
    },
    /// The peer runs the same scenario over another stack or backend ([`Hello::transport`]).
    #[error(
        "bootstrap: backend mismatch: this side runs {}, {peer} runs {} (start every rank with \
         the same --backend and --stack)",
        transport_name(ours),
        transport_name(theirs)
    )]
    TransportMismatch {
        /// Our hello.
        ours: Box<Hello>,
        /// The peer's hello.
        theirs: Box<Hello>,
        /// The peer's address.
        peer: SocketAddr,
    },
    /// The peer runs another scenario (name or file content differ).
    #[error("bootstrap: scenario mismatch: this side is {ours}, {peer} is {theirs}")]
    ScenarioMismatch {
        /// Our hello.
        ours: Box<Hello>,
        /// The peer's hello.
        theirs: Box<Hello>,
        /// The peer's address.
        peer: SocketAddr,
    },
    /// The peer did not prove the job's secret ([`Auth::Job`]): it is refused.
    #[error("bootstrap: refused {peer}{}: {reason}", claiming(*.rank))]
    Refused {
        /// The peer's address.
        peer: SocketAddr,
        /// The rank its hello claimed.
        rank: Option<u32>,
        /// Why (`no valid MAC over the handshake ...`, `sent back this side's own nonce ...`).
        reason: String,
    },
    /// No random nonce for the handshake.
    #[error("bootstrap: {0}")]
    Secret(#[from] SecretError),
    /// A value could not be serialized.
    #[error("bootstrap: cannot encode a frame: {reason}")]
    Encode {
        /// serde_json's error.
        reason: String,
    },
}

/// What a hello says its rank runs ([`Hello::transport`]), or that it does not say.
fn transport_name(h: &Hello) -> &str {
    h.transport.as_deref().unwrap_or("no stated backend")
}

/// ` (claiming rank R)` when a hello said which rank, else nothing.
fn claiming(rank: Option<u32>) -> String {
    rank.map_or(String::new(), |r| format!(" (claiming rank {r})"))
}

/// A bound bootstrap listener.
#[derive(Debug)]
pub struct Listener {
    listener: TcpListener,
    addr: SocketAddr,
}

impl Listener {
    /// Bind `addr` (port 0: any free port, see [`Listener::local_addr`]).
    ///
    /// # Errors
    /// [`BootstrapError::Listen`].
    pub fn bind(addr: SocketAddr) -> Result<Self, BootstrapError> {
        let listen = |source| BootstrapError::Listen { addr, source };
        let listener = TcpListener::bind(addr).map_err(listen)?;
        listener.set_nonblocking(true).map_err(listen)?;
        let addr = listener.local_addr().map_err(listen)?;
        Ok(Listener { listener, addr })
    }

    /// The address bound.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The next peer that connects before `deadline`; its reads and writes then time out
    /// after `io_timeout`.
    ///
    /// # Errors
    /// [`BootstrapError::AcceptTimeout`], or [`BootstrapError::Io`] from the socket.
    pub fn accept(&self, deadline: Instant, io_timeout: Duration) -> Result<Peer, BootstrapError> {
        let began = Instant::now();
        loop {
            match self.listener.accept() {
                Ok((stream, peer)) => return Peer::new(stream, peer, io_timeout, true),
                Err(e)
                    if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::Interrupted =>
                {
                    if Instant::now() >= deadline {
                        return Err(BootstrapError::AcceptTimeout {
                            addr: self.addr,
                            waited: began.elapsed(),
                        });
                    }
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(source) => {
                    return Err(BootstrapError::Io {
                        peer: self.addr,
                        what: "accepting".into(),
                        source,
                    })
                }
            }
        }
    }
}

/// One bootstrap connection.
#[derive(Debug)]
pub struct Peer {
    stream: TcpStream,
    peer: SocketAddr,
    io_timeout: Duration,
    /// Bytes read but not yet parsed into a frame.
    buf: Vec<u8>,
    nonblocking: bool,
    /// Whether this side accepted the connection (else it connected): the acceptor proves
    /// the job's secret first.
    accepted: bool,
}

impl Peer {
    fn new(
        stream: TcpStream,
        peer: SocketAddr,
        io_timeout: Duration,
        accepted: bool,
    ) -> Result<Self, BootstrapError> {
        let io = |source| BootstrapError::Io {
            peer,
            what: "setting up the socket".into(),
            source,
        };
        stream.set_nonblocking(false).map_err(io)?;
        stream.set_nodelay(true).map_err(io)?;
        let t = Some(io_timeout.max(Duration::from_millis(1)));
        stream.set_read_timeout(t).map_err(io)?;
        stream.set_write_timeout(t).map_err(io)?;
        Ok(Peer {
            stream,
            peer,
            io_timeout,
            buf: Vec::new(),
            nonblocking: false,
            accepted,
        })
    }

    /// Connect to `addr`, retrying every [`CONNECT_RETRY`] until `deadline` (the peer may
    /// not listen yet); reads and writes then time out after `io_timeout`.
    ///
    /// # Errors
    /// [`BootstrapError::ConnectTimeout`] with the last attempt's error.
    pub fn connect(
        addr: SocketAddr,
        deadline: Instant,
        io_timeout: Duration,
    ) -> Result<Self, BootstrapError> {
        let began = Instant::now();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let attempt = TcpStream::connect_timeout(
                &addr,
                left.clamp(Duration::from_millis(1), Duration::from_secs(2)),
            );
            let last = match attempt {
                Ok(stream) => return Peer::new(stream, addr, io_timeout, false),
                Err(e) => e.to_string(),
            };
            if Instant::now() + CONNECT_RETRY >= deadline {
                return Err(BootstrapError::ConnectTimeout {
                    addr,
                    waited: began.elapsed(),
                    last,
                });
            }
            std::thread::sleep(CONNECT_RETRY);
        }
    }

    /// The peer's address.
    pub fn addr(&self) -> SocketAddr {
        self.peer
    }

    /// This side's address of the connection: the local interface that reaches the peer.
    ///
    /// # Errors
    /// [`BootstrapError::Io`] from the socket.
    pub fn local_addr(&self) -> Result<SocketAddr, BootstrapError> {
        self.stream
            .local_addr()
            .map_err(|source| BootstrapError::Io {
                peer: self.peer,
                what: "reading the local address".into(),
                source,
            })
    }

    fn io_error(&self, what: &str, e: std::io::Error) -> BootstrapError {
        match e.kind() {
            ErrorKind::WouldBlock | ErrorKind::TimedOut => BootstrapError::Timeout {
                peer: self.peer,
                what: what.into(),
                limit: self.io_timeout,
            },
            ErrorKind::UnexpectedEof
            | ErrorKind::ConnectionReset
            | ErrorKind::ConnectionAborted
            | ErrorKind::BrokenPipe => BootstrapError::PeerClosed {
                peer: self.peer,
                what: what.into(),
            },
            _ => BootstrapError::Io {
                peer: self.peer,
                what: what.into(),
                source: e,
            },
        }
    }

    fn set_nonblocking(&mut self, on: bool) -> Result<(), BootstrapError> {
        if self.nonblocking != on {
            self.stream
                .set_nonblocking(on)
                .map_err(|e| self.io_error("switching the socket mode", e))?;
            self.nonblocking = on;
        }
        Ok(())
    }

    /// Send one frame.
    ///
    /// # Errors
    /// [`BootstrapError::Encode`], or the write's timeout, close or I/O error.
    pub fn send(&mut self, frame: &Frame) -> Result<(), BootstrapError> {
        let wire = encode_frame(frame).map_err(|reason| BootstrapError::Encode { reason })?;
        self.set_nonblocking(false)?;
        let what = format!("sending a `{}` frame", frame.kind());
        self.stream
            .write_all(&wire)
            .and_then(|()| self.stream.flush())
            .map_err(|e| self.io_error(&what, e))
    }

    /// A whole frame from the bytes read so far, if there is one.
    fn parse_buffered(&mut self) -> Result<Option<Frame>, BootstrapError> {
        match parse_frame(&self.buf) {
            Ok(Some((frame, used))) => {
                self.buf.drain(..used);
                Ok(Some(frame))
            }
            Ok(None) => Ok(None),
            Err(reason) => Err(BootstrapError::Malformed {
                peer: self.peer,
                reason,
            }),
        }
    }

    /// Read once into the buffer; `Ok(false)` when nothing was there (non-blocking mode).
    fn fill(&mut self, what: &str) -> Result<bool, BootstrapError> {
        let mut chunk = [0u8; 16 * 1024];
        match self.stream.read(&mut chunk) {
            Ok(0) => Err(BootstrapError::PeerClosed {
                peer: self.peer,
                what: what.into(),
            }),
            Ok(n) => {
                self.buf.extend_from_slice(&chunk[..n]);
                Ok(true)
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => Ok(true),
            Err(e) if self.nonblocking && e.kind() == ErrorKind::WouldBlock => Ok(false),
            Err(e) => Err(self.io_error(what, e)),
        }
    }

    /// Wait for the next frame (at most the I/O timeout per read); `what` says what we wait
    /// for, in errors.
    ///
    /// # Errors
    /// Timeout, close, I/O error or a malformed frame.
    pub fn recv(&mut self, what: &str) -> Result<Frame, BootstrapError> {
        self.set_nonblocking(false)?;
        loop {
            if let Some(f) = self.parse_buffered()? {
                return Ok(f);
            }
            self.fill(what)?;
        }
    }

    /// Wait for the next frame until `deadline` in all, however the peer spaces its bytes
    /// (each read waits at most what is left); `what` says what we wait for, in errors.
    ///
    /// # Errors
    /// [`BootstrapError::Timeout`] at the deadline, close, I/O error or a malformed frame.
    pub fn recv_until(&mut self, what: &str, deadline: Instant) -> Result<Frame, BootstrapError> {
        self.set_nonblocking(false)?;
        let limit = deadline.saturating_duration_since(Instant::now());
        let result = loop {
            match self.parse_buffered() {
                Ok(Some(f)) => break Ok(f),
                Ok(None) => {}
                Err(e) => break Err(e),
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break Err(BootstrapError::Timeout {
                    peer: self.peer,
                    what: what.into(),
                    limit,
                });
            }
            if let Err(e) = self.stream.set_read_timeout(Some(left)) {
                break Err(self.io_error(what, e));
            }
            if let Err(e) = self.fill(what) {
                break Err(match e {
                    BootstrapError::Timeout { peer, what, .. } => {
                        BootstrapError::Timeout { peer, what, limit }
                    }
                    e => e,
                });
            }
        };
        let t = Some(self.io_timeout.max(Duration::from_millis(1)));
        self.stream
            .set_read_timeout(t)
            .map_err(|e| self.io_error(what, e))?;
        result
    }

    /// The next frame if one has arrived, without waiting.
    ///
    /// # Errors
    /// Close, I/O error or a malformed frame.
    pub fn try_recv(&mut self) -> Result<Option<Frame>, BootstrapError> {
        if let Some(f) = self.parse_buffered()? {
            return Ok(Some(f));
        }
        self.set_nonblocking(true)?;
        while self.fill("polling for a frame")? {
            if let Some(f) = self.parse_buffered()? {
                return Ok(Some(f));
            }
        }
        Ok(None)
    }

    /// The next frame, by `deadline` in all when one is given, else at most the I/O timeout
    /// per read.
    fn recv_by(&mut self, what: &str, deadline: Option<Instant>) -> Result<Frame, BootstrapError> {
        match deadline {
            Some(d) => self.recv_until(what, d),
            None => self.recv(what),
        }
    }

    /// Wait for a frame of kind `expected` (`conns`, `start`, `records`, `bye`, `challenge`,
    /// `proof`, `join`, `table`).
    ///
    /// # Errors
    /// [`BootstrapError::Unexpected`] for another kind, or [`Peer::recv`]'s errors.
    pub fn expect(&mut self, expected: &'static str) -> Result<Frame, BootstrapError> {
        self.expect_by(expected, None)
    }

    /// [`Peer::expect`], the frame due by `deadline`.
    ///
    /// # Errors
    /// As [`Peer::expect`]; [`BootstrapError::Timeout`] at the deadline.
    pub fn expect_until(
        &mut self,
        expected: &'static str,
        deadline: Instant,
    ) -> Result<Frame, BootstrapError> {
        self.expect_by(expected, Some(deadline))
    }

    fn expect_by(
        &mut self,
        expected: &'static str,
        deadline: Option<Instant>,
    ) -> Result<Frame, BootstrapError> {
        let f = self.recv_by(&format!("waiting for a `{expected}` frame"), deadline)?;
        if f.kind() == expected {
            Ok(f)
        } else {
            Err(BootstrapError::Unexpected {
                peer: self.peer,
                expected,
                got: f.kind(),
            })
        }
    }

    /// Send our connection records and receive the peer's: the side that `leads` sends
    /// first, the other reads first, so the two never both wait on a full socket buffer.
    ///
    /// # Errors
    /// As [`Peer::send`] and [`Peer::expect`].
    pub fn exchange_conns(
        &mut self,
        ours: Vec<ConnRecord>,
        leads: bool,
    ) -> Result<Vec<ConnRecord>, BootstrapError> {
        let mine = Frame::Conns { conns: ours };
        if leads {
            self.send(&mine)?;
        }
        let Frame::Conns { conns } = self.expect("conns")? else {
            unreachable!("expect returns the kind asked for")
        };
        if !leads {
            self.send(&mine)?;
        }
        Ok(conns)
    }
}

#[cfg(test)]
mod tests;
