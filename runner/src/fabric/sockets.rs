//! The kernel-socket fabric ([`SocketFabric`], `--backend sockets`): the hosts of a run as
//! real TCP sockets in this process, connected over loopback, on the wall clock. It has no
//! RDMA device: it runs the TCP stacks (`stack: tcp`), the baseline xrdma is compared with on
//! the same machine ([`crate::stack::TcpMessages`]).
//!
//! The hosts wait in `epoll` as a TCP server does: [`Clocked::advance`] sleeps until a socket
//! has news (bytes to read, room to write) or a host's wake is due, and gives a turn to those
//! hosts only; a turn reads the sockets that had news until they would block. Sockets are
//! non-blocking with `TCP_NODELAY` (an RPC library's frames go out when written, not when
//! Nagle's algorithm lets them). The kernel's own TCP (its congestion control, its buffers,
//! its RTOmin) is the machine's: the scenario's `tcp:` block describes the simulated kernel
//! and is not applied here.
//!
//! The result has no network counters (a real network's switches are not observed) and no
//! T*; its CPU time is that of the thread that runs the hosts ([`rep::CpuSource::Thread`]),
//! sleeps excluded.

use super::{thread_cpu, Clocked, FabricReport};
use crate::host_cpu::HostCpu;
use anyhow::{Context, Result};
use mio::net::TcpStream;
use mio::{Events, Interest, Poll, Token};
use std::cell::Cell;
use std::io::{ErrorKind, IoSlice, Read, Write};
use std::net::{Ipv4Addr, TcpListener};
use std::time::{Duration, Instant};
use xrdma::{Span, Time};
use xrdma_reports as rep;

/// The longest sleep between two non-blocking polls in a wait's last millisecond, ns:
/// a wake is late by about this much at most (plus the kernel's timer slack, 50 µs by
/// default), and a socket's news by as much.
const FINE_SLEEP_NS: u64 = 20_000;

/// One socket of a host.
struct Socket {
    host: u32,
    stream: TcpStream,
    /// The peer closed its end, or the socket failed: nothing more is read.
    closed: bool,
}

/// The kernel-socket fabric (see the module doc).
pub struct SocketFabric {
    hosts: u32,
    sockets: Vec<Socket>,
    /// Per host: its sockets that had news since its last turn, each once.
    news: Vec<Vec<u32>>,
    /// Per host: when it wants a turn even if nothing arrives ([`Time::MAX`]: never).
    wakes: Vec<Time>,
    poll: Poll,
    events: Events,
    start: Cell<Option<Instant>>,
    last_now: Cell<Time>,
    deadline: Time,
    /// The longest [`Clocked::advance`] sleeps with nothing due ([`SocketFabric::wake_every`]).
    max_sleep: Option<Span>,
    cpu_at_start: Option<Span>,
}

impl SocketFabric {
    /// A fabric of `hosts` hosts with no sockets yet, whose run stops `timeout` after its
    /// clock starts (the first reading of [`Clocked::now`]).
    ///
    /// # Errors
    /// The kernel refuses an `epoll` instance.
    pub fn new(hosts: u32, timeout: Span) -> Result<SocketFabric> {
        Ok(SocketFabric {
            hosts,
            sockets: Vec::new(),
            news: vec![Vec::new(); hosts as usize],
            wakes: vec![Time::MAX; hosts as usize],
            poll: Poll::new().context("making an epoll instance")?,
            events: Events::with_capacity(1024),
            start: Cell::new(None),
            last_now: Cell::new(Time::ZERO),
            deadline: Time::ZERO + timeout,
            max_sleep: None,
            cpu_at_start: thread_cpu(),
        })
    }

    /// Give the hosts' turn loop a round at least every `every` even when no socket has
    /// news and no host a wake: a rank of a run across processes looks at its bootstrap
    /// connection (the peers' records, `bye`) between rounds, outside `epoll`.
    pub fn wake_every(&mut self, every: Span) {
        self.max_sleep = Some(every);
    }

    /// Connect a new socket of host `a` to a new socket of host `b` over loopback; the two
    /// socket ids.
    ///
    /// # Errors
    /// The kernel refuses a socket call (no loopback, out of file descriptors).
    pub fn tcp_connect(&mut self, a: u32, b: u32) -> Result<(u32, u32)> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .context("binding a loopback TCP listener")?;
        let addr = listener.local_addr().context("the listener's address")?;
        let client = std::net::TcpStream::connect(addr).context("connecting over loopback")?;
        let (server, _) = listener.accept().context("accepting over loopback")?;
        Ok((self.adopt(a, client)?, self.adopt(b, server)?))
    }

    /// Make `stream`, a connected TCP socket, a socket of host `h` (non-blocking, with
    /// `TCP_NODELAY`, watched by `epoll`); its id. A rank of a run across processes
    /// connects its hosts' sockets to the other ranks' this way.
    ///
    /// # Errors
    /// The kernel refuses a socket option or `epoll`.
    pub fn adopt(&mut self, h: u32, stream: std::net::TcpStream) -> Result<u32> {
        stream.set_nodelay(true).context("setting TCP_NODELAY")?;
        stream
            .set_nonblocking(true)
            .context("making a socket non-blocking")?;
        let id = self.sockets.len() as u32;
        let mut stream = TcpStream::from_std(stream);
        self.poll
            .registry()
            .register(
                &mut stream,
                Token(id as usize),
                Interest::READABLE | Interest::WRITABLE,
            )
            .context("adding a socket to epoll")?;
        self.sockets.push(Socket {
            host: h,
            stream,
            closed: false,
        });
        Ok(id)
    }

    /// Start the run's clock now, unless it runs already: ranks of a run across processes
    /// do this on the common `start`, so their clocks agree. Without it, the clock starts
    /// at the first [`Clocked::now`].
    pub fn start_clock(&self) {
        let _ = self.now();
    }

    /// Host `h`'s side of the fabric for one turn: its socket calls.
    pub fn host(&mut self, h: u32) -> SocketHost<'_> {
        SocketHost { fabric: self, h }
    }
}

/// Host `h` of a [`SocketFabric`] for one turn: the socket calls its TCP stack makes.
pub struct SocketHost<'a> {
    fabric: &'a mut SocketFabric,
    h: u32,
}

impl SocketHost<'_> {
    /// Socket `sock` when it is this host's and open.
    fn socket(&mut self, sock: u32) -> Option<&mut Socket> {
        let h = self.h;
        self.fabric
            .sockets
            .get_mut(sock as usize)
            .filter(|s| s.host == h && !s.closed)
    }

    /// Write `parts` in order to socket `sock` in one `writev`; the bytes the kernel took (0
    /// when its buffer is full or the socket is gone).
    pub fn write(&mut self, sock: u32, parts: &[&[u8]]) -> usize {
        let Some(s) = self.socket(sock) else { return 0 };
        let slices: Vec<IoSlice<'_>> = parts.iter().map(|p| IoSlice::new(p)).collect();
        match s.stream.write_vectored(&slices) {
            Ok(n) => n,
            Err(e) if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::Interrupted => 0,
            Err(_) => {
                s.closed = true;
                0
            }
        }
    }

    /// Append what socket `sock` has to `out` (reads until it would block); the bytes read.
    pub fn read(&mut self, sock: u32, out: &mut Vec<u8>) -> usize {
        let Some(s) = self.socket(sock) else { return 0 };
        let mut total = 0;
        let mut buf = [0u8; 64 * 1024];
        loop {
            match s.stream.read(&mut buf) {
                Ok(0) => {
                    s.closed = true;
                    return total;
                }
                Ok(n) => {
                    out.extend_from_slice(&buf[..n]);
                    total += n;
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock => return total,
                Err(_) => {
                    s.closed = true;
                    return total;
                }
            }
        }
    }

    /// The host's sockets that had news since its last turn, each once.
    pub fn poll_ready(&mut self, out: &mut Vec<u32>) {
        out.append(&mut self.fabric.news[self.h as usize]);
    }
}

/// A real host spends its CPU time itself: the model takes nothing.
impl HostCpu for SocketHost<'_> {}

impl Clocked for SocketFabric {
    fn backend(&self) -> rep::Backend {
        rep::Backend::Sockets
    }
    fn hosts(&self) -> u32 {
        self.hosts
    }
    /// The time since the run's start; the first reading starts the clock.
    fn now(&self) -> Time {
        let start = match self.start.get() {
            Some(s) => s,
            None => {
                let s = Instant::now();
                self.start.set(Some(s));
                s
            }
        };
        let ns = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX / 1000);
        let now = Time::ZERO + Span::from_ns(ns);
        self.last_now.set(now);
        now
    }
    /// Sleep in `epoll` until a socket has news or a wake is due (never past the run's
    /// timeout); the hosts with either get a turn.
    fn advance(&mut self, ready: &mut Vec<u32>, settled: bool) -> bool {
        ready.clear();
        loop {
            let now = self.now();
            if settled || now >= self.deadline {
                return false;
            }
            let wake = self.wakes.iter().copied().min().unwrap_or(Time::MAX);
            let wait_ns = wake.min(self.deadline).saturating_since(now).as_ps() / 1000;
            // `epoll_wait` counts whole milliseconds (mio rounds a shorter wait up to one):
            // it sleeps the whole milliseconds of a wake's wait, and the last one is spent in
            // short sleeps between polls that do not block, so a wake is kept to tens of
            // microseconds, not to the next millisecond. `wake_every` bounds the sleep, and
            // needs no such precision.
            let fine = wait_ns < 1_000_000;
            let mut block_ms = wait_ns / 1_000_000;
            if let Some(every) = self.max_sleep {
                block_ms = block_ms.min((every.as_ps() / 1_000_000_000).max(1));
            }
            if let Err(e) = self
                .poll
                .poll(&mut self.events, Some(Duration::from_millis(block_ms)))
            {
                if e.kind() != ErrorKind::Interrupted {
                    // epoll itself failing leaves nothing to wait on: the run ends.
                    return false;
                }
            }
            if fine && self.events.is_empty() && wait_ns > 0 {
                std::thread::sleep(Duration::from_nanos(wait_ns.min(FINE_SLEEP_NS)));
            }
            for ev in self.events.iter() {
                let Some(s) = self.sockets.get(ev.token().0) else {
                    continue;
                };
                let (h, id) = (s.host, ev.token().0 as u32);
                let news = &mut self.news[h as usize];
                if !news.contains(&id) {
                    news.push(id);
                }
            }
            let now = self.now();
            for h in 0..self.hosts {
                let due = self.wakes[h as usize] <= now;
                if due || !self.news[h as usize].is_empty() {
                    if due {
                        self.wakes[h as usize] = Time::MAX;
                    }
                    ready.push(h);
                }
            }
            // With `wake_every`, every wake-up is a round, with turns or without.
            if !ready.is_empty() || self.max_sleep.is_some() {
                return true;
            }
        }
    }
    fn set_wake(&mut self, h: u32, at: Time) {
        if let Some(w) = self.wakes.get_mut(h as usize) {
            *w = at;
        }
    }
    /// A turn may copy megabytes out of its sockets: the next host's turn starts later.
    fn clock_per_turn(&self) -> bool {
        true
    }
}

impl FabricReport for SocketFabric {
    /// Nothing of a real network is observed here.
    fn network(&self) -> rep::NetworkCounters {
        rep::NetworkCounters::default()
    }
    fn sim_info(&self) -> Option<rep::SimInfo> {
        None
    }
    fn transport_info(&self) -> Option<rep::TransportInfo> {
        None
    }
    fn environment(&self) -> Option<rep::Environment> {
        Some(xrdma_observe::environment::sockets())
    }
    /// A real path is not stated: no T*, no slowdown.
    fn path(&self) -> rep::PathModel {
        rep::PathModel::default()
    }
    /// The CPU time of the thread that runs the hosts, since the fabric was made.
    fn host_cpu(&self) -> Option<rep::HostCpuTime> {
        let (start, now) = (self.cpu_at_start?, thread_cpu()?);
        Some(rep::HostCpuTime {
            source: rep::CpuSource::Thread,
            total_ps: now.saturating_sub(start).as_ps(),
            per_host_ps: None,
        })
    }
}
