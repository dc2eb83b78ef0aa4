//! Messages over TCP sockets ([`TcpMessages`]): the baseline stack a scenario chooses with
//! `stack: tcp` or `stack: dctcp`, beside xrdma's endpoint, under the same workloads.
//!
//! Each message goes on its connection's byte stream as an 8-byte little-endian length and
//! then its bytes; the receiving side cuts the stream back into messages. A message is
//! [`Event::Sent`] once the peer's stack has delivered it, as xrdma's core reports a message
//! its peer's core has taken: after each turn that delivered messages on a connection, the
//! receiving stack writes an ACK frame (the length word's top bit set, the other 63 bits the
//! count of messages delivered so far) on the reverse stream. The ACK frame also carries the
//! kernel's ACK at once, so a lone last segment does not wait out the delayed-ACK timer. Its
//! [`SendTiming`] has no grant (TCP has no rendezvous), `head` when its first byte went to
//! the socket, and `last_post` when its last byte did.
//!
//! The frames a turn owes a connection (an ACK frame, messages) go in one gathered write, as
//! an RPC library over TCP writes with `writev`: a small message and the ACK frame before it
//! leave in one segment, and the host model charges one call.
//!
//! Frames are whole on the stream: an ACK frame owed while a message is half written goes
//! after that message (TCP's head-of-line blocking, as an RPC library over TCP has it).
//!
//! The sockets are the simulator's (its hosts' kernel TCP, `xrdma_sim`'s `tcp` module), made
//! in pairs by [`SimFabric::tcp_connect`].

use super::HostStack;
use crate::fabric::{Clocked, Fabric, FabricReport, SimFabric, SocketFabric, SocketHost};
use crate::host_cpu::HostCpu;
use crate::host_faults::HostFaultState;
use bytes::Bytes;
use std::collections::{BTreeMap, VecDeque};
use xrdma::driver::Application;
use xrdma::Span;
use xrdma::{
    ConnId, EndpointSnapshot, Event, Messages, MsgId, SendTiming, Time, XrdmaError,
    MAX_MESSAGE_SIZE,
};
use xrdma_reports as rep;
use xrdma_sim::TCP_HEADER_BYTES;

/// Bytes of a frame's header on the stream.
const HEADER: usize = 8;

/// Header bit of an ACK frame (see the module doc).
const ACK_FRAME: u64 = 1 << 63;

/// A message accepted and not yet written.
struct Out {
    id: MsgId,
    data: Bytes,
    accepted: Time,
}

/// The most times one turn asks the application again (see `TcpMessages::turn_on`): a bound
/// for an application that keeps sending as long as its writes go through.
const MAX_ROUNDS_PER_TURN: usize = 1024;

/// Frames gathered into one `writev` call at most (Linux's `IOV_MAX` is 1024 slices).
const GATHER: usize = 64;

/// A frame on its way to a socket: a message or an ACK.
struct Frame {
    header: [u8; HEADER],
    /// The message, with when its first byte was written (`None` before); `None` for an ACK
    /// frame.
    msg: Option<(Out, Option<Time>)>,
    /// Bytes of header and message written so far.
    off: usize,
}

impl Frame {
    fn len(&self) -> usize {
        HEADER + self.msg.as_ref().map_or(0, |(m, _)| m.data.len())
    }

    /// The frame's bytes not written yet, as at most two slices.
    fn rest(&self) -> [&[u8]; 2] {
        let body: &[u8] = self.msg.as_ref().map_or(&[], |(m, _)| &m.data);
        if self.off < HEADER {
            [&self.header[self.off..], body]
        } else {
            [&body[self.off - HEADER..], &[]]
        }
    }
}

/// One connection: its socket and both directions' framing.
struct Conn {
    sock: u32,
    peer: u32,
    out: VecDeque<Out>,
    /// The frame being written, if one is half written or blocked on a full buffer.
    cur: Option<Frame>,
    /// Messages wholly written, in order, waiting for the peer's ACK frame.
    unacked: VecDeque<(MsgId, SendTiming)>,
    /// Messages the peer has said it delivered.
    peer_delivered: u64,
    /// Messages delivered here, and how many of them an ACK frame written so far counts.
    delivered: u64,
    ack_written: u64,
    /// Bytes read from the socket and not yet cut into frames.
    inbuf: Vec<u8>,
    /// Listed in `TcpMessages::writable`.
    listed: bool,
}

impl Conn {
    fn has_output(&self) -> bool {
        self.cur.is_some() || !self.out.is_empty() || self.delivered > self.ack_written
    }
}

/// The TCP message stack of one host (see the module doc).
pub struct TcpMessages {
    conns: Vec<Conn>,
    by_sock: BTreeMap<u32, u32>,
    dctcp: bool,
    next_msg: u64,
    /// Messages wholly written to their sockets so far.
    written: u64,
    events: VecDeque<Event>,
    /// Connections with messages to write.
    writable: VecDeque<u32>,
    ready: Vec<u32>,
}

impl TcpMessages {
    /// A stack with no connection yet; its connections react to ECN as DCTCP when `dctcp`.
    pub fn new(dctcp: bool) -> TcpMessages {
        TcpMessages {
            conns: Vec::new(),
            by_sock: BTreeMap::new(),
            dctcp,
            next_msg: 0,
            written: 0,
            events: VecDeque::new(),
            writable: VecDeque::new(),
            ready: Vec::new(),
        }
    }

    /// Add a connection on socket `sock` of the host's fabric to host `peer`; its id. The
    /// runner's in-process connections come from [`HostStack::connect`]; a rank of a run
    /// across processes adds the sockets it connected to the other ranks with this.
    pub fn add(&mut self, sock: u32, peer: u32) -> ConnId {
        let i = self.conns.len() as u32;
        self.conns.push(Conn {
            sock,
            peer,
            out: VecDeque::new(),
            cur: None,
            unacked: VecDeque::new(),
            peer_delivered: 0,
            delivered: 0,
            ack_written: 0,
            inbuf: Vec::new(),
            listed: false,
        });
        self.by_sock.insert(sock, i);
        ConnId::new(i, 0)
    }

    fn conn_index(&self, conn: ConnId) -> Result<usize, XrdmaError> {
        match self.conns.get(conn.index()) {
            Some(_) if conn.generation() == 0 => Ok(conn.index()),
            _ => Err(XrdmaError::UnknownConnection(conn)),
        }
    }

    /// Take in what socket `sock` has: arrived bytes cut into messages and ACK frames.
    fn take_in<T: SocketCalls>(&mut self, now: Time, t: &mut T, sock: u32) {
        let Some(&i) = self.by_sock.get(&sock) else {
            return;
        };
        let conn = ConnId::new(i, 0);
        let c = &mut self.conns[i as usize];
        // Straight onto what is left of the last frame, not through a buffer of its own.
        t.read(sock, &mut c.inbuf);
        let mut at = 0;
        while c.inbuf.len() - at >= HEADER {
            let mut word = [0u8; HEADER];
            word.copy_from_slice(&c.inbuf[at..at + HEADER]);
            let word = u64::from_le_bytes(word);
            if word & ACK_FRAME != 0 {
                at += HEADER;
                while c.peer_delivered < word & !ACK_FRAME {
                    c.peer_delivered += 1;
                    if let Some((msg, mut timing)) = c.unacked.pop_front() {
                        timing.acked = now;
                        self.events.push_back(Event::Sent { conn, msg, timing });
                    }
                }
                continue;
            }
            let len = word as usize;
            if c.inbuf.len() - at - HEADER < len {
                break;
            }
            let data = Bytes::copy_from_slice(&c.inbuf[at + HEADER..at + HEADER + len]);
            self.events.push_back(Event::Message { conn, tag: 0, data });
            c.delivered += 1;
            at += HEADER + len;
        }
        c.inbuf.drain(..at);
        if c.has_output() && !c.listed {
            c.listed = true;
            self.writable.push_back(i);
        }
    }

    /// Write what the connections owe (ACK frames first at a frame boundary, then queued
    /// messages), as far as their send buffers take it: one gathered write per connection
    /// for up to [`GATHER`] frames, as an RPC library over TCP writes with `writev`.
    fn flush<T: SocketCalls>(&mut self, now: Time, t: &mut T) {
        let mut frames: Vec<Frame> = Vec::with_capacity(GATHER);
        let mut written = 0;
        for _ in 0..self.writable.len() {
            let Some(i) = self.writable.pop_front() else {
                break;
            };
            let c = &mut self.conns[i as usize];
            loop {
                frames.extend(c.cur.take());
                let prev_ack = c.ack_written;
                if c.delivered > c.ack_written {
                    c.ack_written = c.delivered;
                    frames.push(Frame {
                        header: (ACK_FRAME | c.delivered).to_le_bytes(),
                        msg: None,
                        off: 0,
                    });
                }
                while frames.len() < GATHER {
                    let Some(m) = c.out.pop_front() else { break };
                    frames.push(Frame {
                        header: (m.data.len() as u64).to_le_bytes(),
                        msg: Some((m, None)),
                        off: 0,
                    });
                }
                if frames.is_empty() {
                    break;
                }
                let parts: Vec<&[u8]> = frames.iter().flat_map(Frame::rest).collect();
                let wanted: usize = parts.iter().map(|p| p.len()).sum();
                let mut n = t.write(c.sock, &parts);
                let all = n == wanted;
                let mut left = Vec::new();
                for mut f in frames.drain(..) {
                    let take = n.min(f.len() - f.off);
                    n -= take;
                    f.off += take;
                    if let Some((_, head)) = f.msg.as_mut() {
                        if take > 0 && head.is_none() {
                            *head = Some(now);
                        }
                    }
                    if f.off < f.len() {
                        left.push(f);
                        continue;
                    }
                    if let Some((m, head)) = f.msg {
                        let timing = SendTiming {
                            accepted: m.accepted,
                            head: head.unwrap_or(now),
                            granted: None,
                            last_post: now,
                            acked: now,
                        };
                        c.unacked.push_back((m.id, timing));
                        written += 1;
                    }
                }
                // What the buffer did not take waits, in order: the frame begun (or first)
                // as the one being written, untouched messages back at the head of the
                // queue, an untouched ACK frame dropped (owed again, with a newer count).
                let mut left = left.into_iter();
                c.cur = left.next();
                for f in left.rev() {
                    match f.msg {
                        Some((m, _)) => c.out.push_front(m),
                        None => c.ack_written = prev_ack,
                    }
                }
                if !all {
                    break;
                }
            }
            // Still blocked on a full send buffer: tried again on the next turn (the kernel's
            // ACK that frees the buffer gives the host one).
            c.listed = c.has_output();
            if c.listed {
                self.writable.push_back(i);
            }
        }
        self.written += written;
    }
}

impl Messages for TcpMessages {
    fn send(&mut self, now: Time, conn: ConnId, data: Bytes) -> Result<MsgId, XrdmaError> {
        let i = self.conn_index(conn)?;
        let len = data.len() as u64;
        if len > MAX_MESSAGE_SIZE {
            return Err(XrdmaError::MessageTooLarge {
                conn,
                len,
                max: MAX_MESSAGE_SIZE,
            });
        }
        let id = MsgId(self.next_msg);
        self.next_msg += 1;
        let c = &mut self.conns[i];
        c.out.push_back(Out {
            id,
            data,
            accepted: now,
        });
        if !c.listed {
            c.listed = true;
            self.writable.push_back(i as u32);
        }
        Ok(id)
    }
    fn queued_messages(&self, conn: ConnId) -> usize {
        self.conn_index(conn).map_or(0, |i| {
            let c = &self.conns[i];
            c.out.len() + usize::from(c.cur.as_ref().is_some_and(|f| f.msg.is_some()))
        })
    }
    fn peer(&self, conn: ConnId) -> Option<u32> {
        self.conn_index(conn).ok().map(|i| self.conns[i].peer)
    }
    fn messages_accepted(&self) -> u64 {
        self.next_msg
    }
}

/// The socket calls the stack makes on its host: the simulated kernel's
/// ([`xrdma_sim::HostTransport`]'s `tcp_*`) or the machine's ([`SocketHost`]).
pub trait SocketCalls: HostCpu {
    /// Write `parts` in order in one call (`writev`); the bytes taken.
    fn write(&mut self, sock: u32, parts: &[&[u8]]) -> usize;
    /// Append what socket `sock` has to `out`; the bytes read.
    fn read(&mut self, sock: u32, out: &mut Vec<u8>) -> usize;
    /// The sockets that may have news (bytes to read, room in a send buffer found full).
    fn poll_ready(&mut self, out: &mut Vec<u32>);
}

/// A fabric whose hosts have kernel TCP sockets, which [`TcpMessages`] runs on: the
/// simulator's ([`SimFabric`]) or this machine's ([`SocketFabric`]).
pub trait TcpFabric: Clocked + FabricReport {
    /// A host's socket calls, for one turn.
    type Sockets<'a>: SocketCalls
    where
        Self: 'a;
    /// Host `h`'s socket calls.
    fn sockets(&mut self, h: u32) -> Self::Sockets<'_>;
    /// Connect a new socket of host `a` to a new socket of host `b`, with DCTCP's reaction
    /// to ECN when `dctcp`; the two socket ids.
    ///
    /// # Errors
    /// The kernel refuses a socket call, or the fabric cannot set DCTCP.
    fn connect_sockets(&mut self, a: u32, b: u32, dctcp: bool) -> anyhow::Result<(u32, u32)>;
    /// The path as TCP packs bytes into packets, for T* (see [`HostStack::path`]).
    fn tcp_path(&self) -> rep::PathModel;
}

impl SocketCalls for xrdma_sim::HostTransport<'_> {
    fn write(&mut self, sock: u32, parts: &[&[u8]]) -> usize {
        self.tcp_write(sock, parts)
    }
    fn read(&mut self, sock: u32, out: &mut Vec<u8>) -> usize {
        self.tcp_read(sock, out)
    }
    fn poll_ready(&mut self, out: &mut Vec<u32>) {
        self.tcp_poll_ready(out);
    }
}

impl SocketCalls for SocketHost<'_> {
    fn write(&mut self, sock: u32, parts: &[&[u8]]) -> usize {
        SocketHost::write(self, sock, parts)
    }
    fn read(&mut self, sock: u32, out: &mut Vec<u8>) -> usize {
        SocketHost::read(self, sock, out)
    }
    fn poll_ready(&mut self, out: &mut Vec<u32>) {
        SocketHost::poll_ready(self, out);
    }
}

impl TcpFabric for SimFabric {
    type Sockets<'a> = xrdma_sim::HostTransport<'a>;

    fn sockets(&mut self, h: u32) -> Self::Sockets<'_> {
        self.host(h)
    }
    fn connect_sockets(&mut self, a: u32, b: u32, dctcp: bool) -> anyhow::Result<(u32, u32)> {
        Ok(self.tcp_connect(a, b, dctcp))
    }
    /// Segments of at most the MSS, each with [`xrdma_sim::TCP_HEADER_BYTES`] on the wire;
    /// the base RTT is a header-only segment and its ACK (both that size) on idle links.
    fn tcp_path(&self) -> rep::PathModel {
        let cfg = self.config();
        let mut path = FabricReport::path(self);
        let hdr = Span::serialization(u64::from(TCP_HEADER_BYTES), cfg.link_rate_bps);
        path.base_rtt_ps = path
            .base_rtt_ps
            .map(|_| (cfg.link_delay * 4 + hdr * 4).as_ps());
        path.header_bytes = Some(u64::from(TCP_HEADER_BYTES));
        path.mtu_bytes = Some(u64::from(cfg.tcp.mss));
        path
    }
}

impl TcpFabric for SocketFabric {
    type Sockets<'a> = SocketHost<'a>;

    fn sockets(&mut self, h: u32) -> Self::Sockets<'_> {
        self.host(h)
    }
    /// A loopback socket pair. DCTCP is the machine's setting
    /// (`net.ipv4.tcp_congestion_control`), not a socket's here: refused.
    fn connect_sockets(&mut self, a: u32, b: u32, dctcp: bool) -> anyhow::Result<(u32, u32)> {
        if dctcp {
            anyhow::bail!("the sockets backend cannot set DCTCP on a socket: write `stack: tcp`");
        }
        self.tcp_connect(a, b)
    }
    /// A real path is not stated (no T*).
    fn tcp_path(&self) -> rep::PathModel {
        FabricReport::path(self)
    }
}

impl TcpMessages {
    /// One turn on host calls `t`: take in what the host's sockets have (messages, ACKs), let
    /// `app` react, and write what is queued. The host model charges the turn and the
    /// application's messages as it does for xrdma's turn ([`crate::host_cpu`]), and the
    /// simulated kernel its socket calls; a real host charges nothing.
    fn turn_on<T: SocketCalls, A: Application<Self> + ?Sized>(
        &mut self,
        now: Time,
        t: &mut T,
        app: &mut A,
    ) -> Option<Time> {
        let charges = t.charges();
        if charges {
            t.begin_turn();
        }
        let mut ready = std::mem::take(&mut self.ready);
        ready.clear();
        t.poll_ready(&mut ready);
        for &s in &ready {
            self.take_in(now, t, s);
        }
        self.ready = ready;
        let accepted = self.next_msg;
        let mut delivered = 0;
        // A write goes into the kernel's buffer at once: while the turn writes whole
        // messages, the application is asked again, so one that feeds its stack lazily
        // (a few messages queued at a time) keeps feeding until the buffer is full, as it
        // would around a blocking `write`, instead of waiting for a wake-up.
        for _ in 0..MAX_ROUNDS_PER_TURN {
            while let Some(ev) = self.events.pop_front() {
                delivered += u64::from(matches!(ev, Event::Message { .. }));
                app.on_event(now, self, ev);
            }
            let written = self.written;
            app.on_turn(now, self);
            self.flush(now, t);
            if self.events.is_empty() && self.written == written {
                break;
            }
        }
        if charges {
            t.app_messages(delivered, self.next_msg - accepted);
            t.end_turn();
        }
        app.next_wake()
    }
}

impl<F: TcpFabric> HostStack<F> for TcpMessages {
    type Scratch = ();

    /// Take in what the host's sockets have, let `app` react, write what is queued; on the
    /// simulator the host model charges the turn, the messages and the kernel's calls.
    fn turn<A: Application<Self> + ?Sized>(
        &mut self,
        now: Time,
        h: u32,
        fabric: &mut F,
        app: &mut A,
        _scratch: &mut (),
        _hf: &mut HostFaultState,
    ) -> Option<Time> {
        self.turn_on(now, &mut fabric.sockets(h), app)
    }

    fn snapshot(&self, _fabric: &mut F, _h: u32) -> Option<EndpointSnapshot> {
        None
    }

    fn connect(
        fabric: &mut F,
        stacks: &mut [Self],
        a: u32,
        b: u32,
    ) -> anyhow::Result<(ConnId, ConnId)> {
        let dctcp = stacks[a as usize].dctcp;
        let (sa, sb) = fabric.connect_sockets(a, b, dctcp)?;
        let ca = stacks[a as usize].add(sa, b);
        let cb = stacks[b as usize].add(sb, a);
        Ok((ca, cb))
    }

    fn window_tally(&self) -> Option<rep::WindowTally> {
        None
    }

    /// The RC QP attributes and xrdma's capabilities describe no TCP run: the result has no
    /// `transport` block.
    fn describe(r: &mut rep::RunResult, _stacks: &[Self]) {
        r.transport = None;
    }

    fn path(fabric: &F) -> rep::PathModel {
        fabric.tcp_path()
    }
}
