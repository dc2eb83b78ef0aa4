//! Messages over TCP sockets ([`TcpMessages`]): the baseline stack a scenario chooses with
//! `stack: tcp` or `stack: dctcp`, beside xrdma's endpoint, under the same workloads.
//!
//! Each message goes on its connection's byte stream as an 8-byte little-endian length and
//! then its bytes; the receiving side cuts the stream back into messages. A message is
//! [`Event::Sent`] once the peer's kernel has ACKed its last byte (the socket's unacknowledged
//! bytes, Linux `SIOCOUTQ`, fall below its end): the same instant xrdma reports, the ACK
//! covering the last piece. Its [`SendTiming`] has no grant (TCP has no rendezvous), `head`
//! when it reached the head of the connection's queue, and `last_post` when its last byte
//! went into the socket's send buffer.
//!
//! The sockets are the simulator's (its hosts' kernel TCP, `xrdma_sim`'s `tcp` module), made
//! in pairs by [`SimFabric::tcp_connect`].

use super::HostStack;
use crate::fabric::{Fabric, SimFabric};
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

/// Bytes of a message's length header on the stream.
const HEADER: usize = 8;

/// A message being written to its socket.
struct Out {
    id: MsgId,
    /// The length header, then the message.
    header: [u8; HEADER],
    data: Bytes,
    /// Bytes of header and message written so far.
    off: usize,
    accepted: Time,
    head: Option<Time>,
}

impl Out {
    fn len(&self) -> usize {
        HEADER + self.data.len()
    }
}

/// A message wholly written, waiting for the peer's ACK of its last byte.
struct Unacked {
    id: MsgId,
    /// Stream offset just past its last byte.
    end: u64,
    timing: SendTiming,
}

/// One connection: its socket and both directions' framing.
struct Conn {
    sock: u32,
    peer: u32,
    out: VecDeque<Out>,
    unacked: VecDeque<Unacked>,
    /// Bytes written to the socket so far.
    written: u64,
    /// Bytes read from the socket and not yet cut into messages.
    inbuf: Vec<u8>,
    /// Listed in `TcpMessages::writable`.
    listed: bool,
}

/// The TCP message stack of one host (see the module doc).
pub struct TcpMessages {
    conns: Vec<Conn>,
    by_sock: BTreeMap<u32, u32>,
    dctcp: bool,
    next_msg: u64,
    events: VecDeque<Event>,
    /// Connections with messages to write.
    writable: VecDeque<u32>,
    ready: Vec<u32>,
    buf: Vec<u8>,
}

impl TcpMessages {
    /// A stack with no connection yet; its connections react to ECN as DCTCP when `dctcp`.
    pub fn new(dctcp: bool) -> TcpMessages {
        TcpMessages {
            conns: Vec::new(),
            by_sock: BTreeMap::new(),
            dctcp,
            next_msg: 0,
            events: VecDeque::new(),
            writable: VecDeque::new(),
            ready: Vec::new(),
            buf: Vec::new(),
        }
    }

    /// Add a connection on socket `sock` to peer `peer`; its id.
    fn add(&mut self, sock: u32, peer: u32) -> ConnId {
        let i = self.conns.len() as u32;
        self.conns.push(Conn {
            sock,
            peer,
            out: VecDeque::new(),
            unacked: VecDeque::new(),
            written: 0,
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

    /// Take in what socket `sock` has: arrived bytes cut into messages, ACKed messages.
    fn take_in<T: SocketCalls>(&mut self, now: Time, t: &mut T, sock: u32) {
        let Some(&i) = self.by_sock.get(&sock) else {
            return;
        };
        let conn = ConnId::new(i, 0);
        self.buf.clear();
        t.read(sock, &mut self.buf);
        let c = &mut self.conns[i as usize];
        c.inbuf.extend_from_slice(&self.buf);
        let mut at = 0;
        while c.inbuf.len() - at >= HEADER {
            let mut len = [0u8; HEADER];
            len.copy_from_slice(&c.inbuf[at..at + HEADER]);
            let len = u64::from_le_bytes(len) as usize;
            if c.inbuf.len() - at - HEADER < len {
                break;
            }
            let data = Bytes::copy_from_slice(&c.inbuf[at + HEADER..at + HEADER + len]);
            self.events.push_back(Event::Message { conn, data });
            at += HEADER + len;
        }
        c.inbuf.drain(..at);
        let acked = c.written - t.unacked(sock);
        while c.unacked.front().is_some_and(|u| u.end <= acked) {
            if let Some(mut u) = c.unacked.pop_front() {
                u.timing.acked = now;
                self.events.push_back(Event::Sent {
                    conn,
                    msg: u.id,
                    timing: u.timing,
                });
            }
        }
    }

    /// Write what the connections have queued, as far as their send buffers take it.
    fn flush<T: SocketCalls>(&mut self, now: Time, t: &mut T) {
        for _ in 0..self.writable.len() {
            let Some(i) = self.writable.pop_front() else {
                break;
            };
            let c = &mut self.conns[i as usize];
            while let Some(m) = c.out.front_mut() {
                m.head.get_or_insert(now);
                while m.off < m.len() {
                    let n = if m.off < HEADER {
                        t.write(c.sock, &m.header[m.off..])
                    } else {
                        t.write(c.sock, &m.data[m.off - HEADER..])
                    };
                    if n == 0 {
                        break;
                    }
                    m.off += n;
                    c.written += n as u64;
                }
                if m.off < m.len() {
                    break;
                }
                if let Some(m) = c.out.pop_front() {
                    c.unacked.push_back(Unacked {
                        id: m.id,
                        end: c.written,
                        timing: SendTiming {
                            accepted: m.accepted,
                            head: m.head.unwrap_or(now),
                            granted: None,
                            last_post: now,
                            acked: now,
                        },
                    });
                }
            }
            // Still blocked on a full send buffer: tried again on the next turn (an ACK that
            // frees the buffer gives the host one).
            c.listed = !c.out.is_empty();
            if c.listed {
                self.writable.push_back(i);
            }
        }
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
            header: len.to_le_bytes(),
            data,
            off: 0,
            accepted: now,
            head: None,
        });
        if !c.listed {
            c.listed = true;
            self.writable.push_back(i as u32);
        }
        Ok(id)
    }
    fn queued_messages(&self, conn: ConnId) -> usize {
        self.conn_index(conn).map_or(0, |i| self.conns[i].out.len())
    }
    fn peer(&self, conn: ConnId) -> Option<u32> {
        self.conn_index(conn).ok().map(|i| self.conns[i].peer)
    }
    fn messages_accepted(&self) -> u64 {
        self.next_msg
    }
}

/// The socket calls the stack makes on its host ([`xrdma_sim::HostTransport`]'s `tcp_*`).
trait SocketCalls {
    fn write(&mut self, sock: u32, data: &[u8]) -> usize;
    fn read(&mut self, sock: u32, out: &mut Vec<u8>) -> usize;
    fn unacked(&self, sock: u32) -> u64;
    fn poll_ready(&mut self, out: &mut Vec<u32>);
}

impl SocketCalls for xrdma_sim::HostTransport<'_> {
    fn write(&mut self, sock: u32, data: &[u8]) -> usize {
        self.tcp_write(sock, data)
    }
    fn read(&mut self, sock: u32, out: &mut Vec<u8>) -> usize {
        self.tcp_read(sock, out)
    }
    fn unacked(&self, sock: u32) -> u64 {
        self.tcp_unacked(sock)
    }
    fn poll_ready(&mut self, out: &mut Vec<u32>) {
        self.tcp_poll_ready(out);
    }
}

impl HostStack<SimFabric> for TcpMessages {
    type Scratch = ();

    /// Take in what the host's sockets have (messages, ACKs), let `app` react, and write what
    /// is queued. The host model charges the turn and the application's messages as it does
    /// for xrdma's turn ([`crate::host_cpu`]); the kernel's own costs are not modelled yet.
    fn turn<A: Application<Self> + ?Sized>(
        &mut self,
        now: Time,
        h: u32,
        fabric: &mut SimFabric,
        app: &mut A,
        _scratch: &mut (),
        _hf: &mut HostFaultState,
    ) -> Option<Time> {
        let mut t = fabric.host(h);
        let charges = t.charges();
        if charges {
            t.begin_turn();
        }
        let mut ready = std::mem::take(&mut self.ready);
        ready.clear();
        t.poll_ready(&mut ready);
        for &s in &ready {
            self.take_in(now, &mut t, s);
        }
        self.ready = ready;
        let accepted = self.next_msg;
        let mut delivered = 0;
        loop {
            while let Some(ev) = self.events.pop_front() {
                delivered += u64::from(matches!(ev, Event::Message { .. }));
                app.on_event(now, self, ev);
            }
            app.on_turn(now, self);
            self.flush(now, &mut t);
            if self.events.is_empty() {
                break;
            }
        }
        if charges {
            t.app_messages(delivered, self.next_msg - accepted);
            t.end_turn();
        }
        app.next_wake()
    }

    fn snapshot(&self, _fabric: &mut SimFabric, _h: u32) -> Option<EndpointSnapshot> {
        None
    }

    fn connect(
        fabric: &mut SimFabric,
        stacks: &mut [Self],
        a: u32,
        b: u32,
    ) -> anyhow::Result<(ConnId, ConnId)> {
        let dctcp = stacks[a as usize].dctcp;
        let (sa, sb) = fabric.tcp_connect(a, b, dctcp);
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

    /// Segments of at most the MSS, each with [`xrdma_sim::TCP_HEADER_BYTES`] on the wire;
    /// the base RTT is a header-only segment and its ACK (both that size) on idle links.
    fn path(fabric: &SimFabric) -> rep::PathModel {
        let cfg = fabric.config();
        let mut path = crate::fabric::FabricReport::path(fabric);
        let hdr = Span::serialization(u64::from(TCP_HEADER_BYTES), cfg.link_rate_bps);
        path.base_rtt_ps = path
            .base_rtt_ps
            .map(|_| (cfg.link_delay * 4 + hdr * 4).as_ps());
        path.header_bytes = Some(u64::from(TCP_HEADER_BYTES));
        path.mtu_bytes = Some(u64::from(cfg.tcp.mss));
        path
    }
}
