//! TCP sockets in the simulated hosts' kernels: the glue between one connection's model
//! ([`TcpConn`]), the application's socket calls ([`crate::HostTransport::tcp_write`] and its
//! siblings) and the network (segments through the same NIC, links, switches, ECN and PFC as
//! RoCE packets).
//!
//! # State
//! `Simulation::tcp`, one [`Socket`] per connection end, indexed by socket id:
//! - `conn`: the connection's model; `host`, `peer_host`, `peer`: where the socket and its
//!   peer socket are.
//! - `snd`: the bytes written and not yet ACKed, stream offsets `[snd_base, conn.written())`.
//!   Segments carry no bytes: when data arrives in order, the receiving kernel copies it from
//!   the peer's `snd` (still there: the sender drops bytes only once this side ACKs them).
//! - `rcv`: in-order bytes not yet read, offsets `[conn.read_to(), conn.rcv_nxt())`.
//! - `timer_queued`: the time of the one `TcpTimer` event that counts ([`Time::MAX`]: none).
//! - `in_ring`: listed in its host NIC's TCP ring (`Egress::tcp`), at most once.
//! - `hold_until`: with the host model, the end of the last `write` call: no segment of the
//!   socket leaves before it.
//! - `write_blocked`: the last `write` did not take all it was given: an ACK that frees send
//!   buffer is news for the application (otherwise a pure ACK is not: an application waiting
//!   to read is not woken by one).
//! - `notified`: listed in its host's ready sockets (`Host::tcp_ready`), at most once.
//!
//! # Events
//! - A TCP segment reaches its host's NIC (`nic_receive` → [`Simulation::tcp_arrive`]; with
//!   the host model, `TcpRx` when the receiving kernel has done its work,
//!   [`Simulation::on_tcp_rx`]; then [`Simulation::tcp_receive`]): the
//!   connection takes it, new in-order bytes are copied in, the socket is listed for the
//!   application when it has news (bytes to read, room freed in a send buffer a write found
//!   full), and the NIC looks for a
//!   segment to send.
//! - The NIC's link is free (`nic_try_tx` → [`Simulation::tcp_next_segment`]): the sockets of
//!   the TCP ring take turns, one segment each, after the control queue and before the QPs.
//! - `TcpTimer` ([`Simulation::on_tcp_timer`]): the connection's retransmission or
//!   delayed-ACK timer.
//!
//! The host model's kernel costs (`tcp-*`, see [`crate::HostModel`]) are charged here: the
//! calls in `tcp_write` and `tcp_read`, a segment sent in `tcp_next_segment`, a segment
//! received in `tcp_arrive`, the wake-up in `tcp_notify`.
//!
//! Left out: TSO/GRO, pacing, SYN/FIN (sockets are connected when made), and classic ECN for
//! non-DCTCP TCP (its segments are not ECN-capable: a marking switch neither marks nor drops
//! them early).

use super::{Segment, TcpConn, TCP_HEADER_BYTES};
use crate::engine::Event;
use crate::packet::{Packet, PktKind, F_CE, F_CWR, F_ECE, F_ECT};
use crate::Simulation;
use std::collections::VecDeque;
use xrdma::{Span, Time};

/// What one TCP socket's connection looks like now ([`Simulation::tcp_socket`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TcpSocketState {
    /// Congestion window, bytes.
    pub cwnd: u64,
    /// Slow-start threshold, bytes (`u64::MAX` before the first loss or ECN cut).
    pub ssthresh: u64,
    /// Smoothed RTT (RFC 6298), `None` before the first sample.
    pub srtt: Option<Span>,
    /// Current retransmission timeout, backoff included.
    pub rto: Span,
    /// DCTCP's estimate α of the marked fraction (1 before the first window ends).
    pub dctcp_alpha: f64,
    /// Bytes that arrived in order and the application has not read yet.
    pub unread: u64,
}

/// One end of a TCP connection (see the module doc).
#[derive(Debug)]
pub(crate) struct Socket {
    pub host: u32,
    pub peer_host: u32,
    pub peer: u32,
    pub conn: TcpConn,
    snd: VecDeque<u8>,
    snd_base: u64,
    rcv: VecDeque<u8>,
    timer_queued: Time,
    hold_until: Time,
    write_blocked: bool,
    pub in_ring: bool,
    pub notified: bool,
}

impl Socket {
    fn new(host: u32, peer_host: u32, peer: u32, conn: TcpConn) -> Socket {
        Socket {
            host,
            peer_host,
            peer,
            conn,
            snd: VecDeque::new(),
            snd_base: 0,
            rcv: VecDeque::new(),
            timer_queued: Time::MAX,
            hold_until: Time::ZERO,
            write_blocked: false,
            in_ring: false,
            notified: false,
        }
    }

    /// Drop the sent bytes the peer has ACKed.
    fn release_acked(&mut self) {
        let acked = self.conn.snd_una();
        if acked > self.snd_base {
            let n = (acked - self.snd_base) as usize;
            self.snd.drain(..n.min(self.snd.len()));
            self.snd_base = acked;
        }
    }
}

impl Simulation {
    /// Connect a new socket on host `a` to a new socket on host `b` (both established at
    /// once, no handshake); DCTCP's reaction to ECN when `dctcp`. Returns the two socket ids.
    pub(crate) fn tcp_pair(&mut self, a: u32, b: u32, dctcp: bool) -> (u32, u32) {
        let cfg = self.cfg.tcp.config(dctcp);
        let (sa, sb) = (self.tcp.len() as u32, self.tcp.len() as u32 + 1);
        self.tcp.push(Socket::new(a, b, sb, TcpConn::new(cfg)));
        self.tcp.push(Socket::new(b, a, sa, TcpConn::new(cfg)));
        (sa, sb)
    }

    /// The socket `s` when it exists and is on host `h`.
    fn socket_of(&mut self, h: u32, s: u32) -> Option<&mut Socket> {
        self.tcp.get_mut(s as usize).filter(|k| k.host == h)
    }

    /// The application on host `h` writes `parts`, in order, to socket `s` in one call
    /// (`writev`): as much as its send buffer takes, which is returned (0 for a socket not
    /// on `h`). With the host model the call costs `tcp-write-call` and the copy, and the
    /// socket's segments wait for its end.
    pub(crate) fn tcp_write(&mut self, h: u32, s: u32, parts: &[&[u8]]) -> usize {
        let Some(k) = self.socket_of(h, s) else {
            return 0;
        };
        let mut room = k.conn.send_space();
        let mut n = 0;
        for part in parts {
            let take = (room.min(part.len() as u64)) as usize;
            k.snd.extend(&part[..take]);
            n += take;
            room -= take as u64;
        }
        k.write_blocked = n < parts.iter().map(|p| p.len()).sum::<usize>();
        if n == 0 {
            return 0;
        }
        k.conn.write(n as u64);
        if self.host_on {
            let cost = self.cfg.host.tcp_write_cost(n as u64);
            let end = self.charge_cpu(h, cost);
            self.tcp[s as usize].hold_until = end;
        }
        self.tcp_kick(s);
        n
    }

    /// The application on host `h` reads every in-order byte of socket `s` into `out`;
    /// returns how many.
    pub(crate) fn tcp_read(&mut self, h: u32, s: u32, out: &mut Vec<u8>) -> usize {
        let Some(k) = self.socket_of(h, s) else {
            return 0;
        };
        let n = k.rcv.len();
        if n == 0 {
            return 0;
        }
        let (a, b) = k.rcv.as_slices();
        out.extend_from_slice(a);
        out.extend_from_slice(b);
        k.rcv.clear();
        let upto = k.conn.rcv_nxt();
        k.conn.read(upto);
        if self.host_on {
            let cost = self.cfg.host.tcp_read_cost(n as u64);
            self.charge_cpu(h, cost);
        }
        // Reading may open the window: a window update may be owed.
        self.tcp_kick(s);
        n
    }

    /// The state of socket `s`'s connection; `None` for no such socket.
    pub fn tcp_socket(&self, s: u32) -> Option<TcpSocketState> {
        let c = &self.tcp.get(s as usize)?.conn;
        Some(TcpSocketState {
            cwnd: c.cwnd(),
            ssthresh: c.ssthresh(),
            srtt: c.srtt(),
            rto: c.rto(),
            dctcp_alpha: c.dctcp_alpha(),
            unread: c.rcv_nxt() - c.read_to(),
        })
    }

    /// Bytes written to socket `s` that its peer has not ACKed yet (Linux `SIOCOUTQ`).
    pub(crate) fn tcp_unacked(&self, h: u32, s: u32) -> u64 {
        self.tcp
            .get(s as usize)
            .filter(|k| k.host == h)
            .map_or(0, |k| k.conn.written() - k.conn.snd_una())
    }

    /// Move the sockets of host `h` that have news for the application (bytes to read,
    /// bytes ACKed) into `out`, each once, in the order they had it.
    pub(crate) fn tcp_poll_ready(&mut self, h: u32, out: &mut Vec<u32>) {
        let host = &mut self.hosts[h as usize];
        for s in host.tcp_ready.drain(..) {
            self.tcp[s as usize].notified = false;
            out.push(s);
        }
    }

    /// List socket `s` for its application and mark its host ready.
    fn tcp_notify(&mut self, s: u32) {
        let k = &mut self.tcp[s as usize];
        let h = k.host;
        if k.notified {
            return;
        }
        k.notified = true;
        if self.host_on && self.cfg.host.tcp_wakeup > Span::ZERO {
            self.tcp_news_later(h, s);
        } else {
            self.hosts[h as usize].tcp_ready.push(s);
            self.mark_ready(h);
        }
    }

    /// Socket `s` may have a segment to send or a timer to move: list it in its NIC's TCP
    /// ring, start the NIC, and re-arm its timer.
    fn tcp_kick(&mut self, s: u32) {
        let k = &mut self.tcp[s as usize];
        let h = k.host;
        if !k.in_ring {
            k.in_ring = true;
            self.hosts[h as usize].egress.tcp.push_back(s);
        }
        self.tcp_arm(s);
        self.nic_try_tx(h);
    }

    /// Make sure socket `s`'s `TcpTimer` fires by its connection's next deadline.
    fn tcp_arm(&mut self, s: u32) {
        let k = &mut self.tcp[s as usize];
        if let Some(t) = k.conn.next_timeout() {
            if t < k.timer_queued {
                k.timer_queued = t;
                self.queue.push(t, Event::TcpTimer(s));
            }
        }
    }

    /// Whether the `TcpTimer` of socket `s` at `t` is the one that counts and its connection
    /// still has a deadline by then (else it is stale and must not move the clock).
    pub(crate) fn tcp_timer_due(&mut self, s: u32, t: Time) -> bool {
        let k = &mut self.tcp[s as usize];
        if k.timer_queued != t {
            return false;
        }
        k.timer_queued = Time::MAX;
        match k.conn.next_timeout() {
            Some(d) if d <= t => true,
            _ => {
                self.tcp_arm(s);
                false
            }
        }
    }

    /// `TcpTimer` of socket `s`: its connection handles what expired.
    pub(crate) fn on_tcp_timer(&mut self, s: u32) {
        let now = self.now;
        self.tcp[s as usize].conn.on_timeout(now);
        self.tcp_kick(s);
    }

    /// The next TCP segment host `h`'s NIC sends, and how long the kernel's transmit work
    /// holds it (zero without the host model): the sockets of its TCP ring take turns, one
    /// segment each; a socket with nothing to send leaves the ring, one whose last `write`
    /// has not ended yet waits (the NIC looks again then).
    pub(crate) fn tcp_next_segment(&mut self, h: u32) -> Option<(u32, Span)> {
        let now = self.now;
        let mut held = Time::MAX;
        for _ in 0..self.hosts[h as usize].egress.tcp.len() {
            let s = self.hosts[h as usize].egress.tcp.pop_front()?;
            let k = &mut self.tcp[s as usize];
            if k.hold_until > now {
                held = held.min(k.hold_until);
                self.hosts[h as usize].egress.tcp.push_back(s);
                continue;
            }
            let Some(seg) = k.conn.poll_transmit(now) else {
                k.in_ring = false;
                continue;
            };
            let (peer_host, peer) = (k.peer_host, k.peer);
            self.hosts[h as usize].egress.tcp.push_back(s);
            self.tcp_arm(s);
            let mut p = Packet::control(PktKind::Tcp, h, peer_host, seg.len + TCP_HEADER_BYTES);
            p.src_qpn = s;
            p.dst_qpn = peer;
            p.payload = seg.len;
            p.src_addr = seg.seq;
            p.remote_addr = seg.ack;
            p.msg_len = u32::try_from(seg.wnd).unwrap_or(u32::MAX);
            for (on, flag) in [(seg.ect, F_ECT), (seg.ece, F_ECE), (seg.cwr, F_CWR)] {
                if on {
                    p.flags |= flag;
                }
            }
            if seg.len > 0 {
                self.stats.tcp_segments += 1;
            } else {
                self.stats.tcp_acks += 1;
            }
            let hold = if self.host_on {
                let cost = self.cfg.host.tcp_tx_segment;
                self.charge_kernel(h, now, cost) - now
            } else {
                Span::ZERO
            };
            return Some((self.pool.alloc(p), hold));
        }
        if held != Time::MAX {
            self.schedule_nic_wake(h, held);
        }
        None
    }

    /// A TCP segment `p` reached host `h`'s NIC: it takes effect now, or with the host model
    /// once its payload is in host memory (`rx-dma-write`) and the kernel has spent
    /// `tcp-rx-segment` on it (`TcpRx`).
    pub(crate) fn tcp_arrive(&mut self, h: u32, p: Packet) {
        if !self.host_on {
            self.tcp_receive(h, &p);
            return;
        }
        let m = &self.cfg.host;
        let (dma, cost) = (m.rx_dma_write, m.tcp_rx_segment);
        let at = self.charge_kernel(h, self.now + dma, cost);
        let id = self.pool.alloc(p);
        self.queue.push(at, Event::TcpRx(id));
    }

    /// `TcpRx`: the receiving kernel is done with segment `id`.
    pub(crate) fn on_tcp_rx(&mut self, id: u32) {
        let p = *self.pool.get(id);
        self.pool.release(id);
        self.tcp_receive(p.dst_host, &p);
    }

    /// A TCP segment `p` reached host `h` (see the module doc).
    pub(crate) fn tcp_receive(&mut self, h: u32, p: &Packet) {
        let s = p.dst_qpn;
        let Some(k) = self.tcp.get(s as usize) else {
            self.stats.out_of_sequence_drops += 1;
            return;
        };
        if k.host != h || k.peer != p.src_qpn {
            self.stats.out_of_sequence_drops += 1;
            return;
        }
        let seg = Segment {
            seq: p.src_addr,
            len: p.payload,
            ack: p.remote_addr,
            wnd: u64::from(p.msg_len),
            ect: p.has(F_ECT),
            ce: p.has(F_CE),
            ece: p.has(F_ECE),
            cwr: p.has(F_CWR),
        };
        let now = self.now;
        let (si, pi) = (s as usize, k.peer as usize);
        let k = &mut self.tcp[si];
        let (before_rcv, before_una) = (k.conn.rcv_nxt(), k.conn.snd_una());
        k.conn.on_segment(now, &seg);
        let (after_rcv, after_una) = (k.conn.rcv_nxt(), k.conn.snd_una());
        if after_una > before_una {
            k.release_acked();
        }
        if after_rcv > before_rcv {
            // The peer still holds these bytes: it drops only what this side has ACKed,
            // which is below `before_rcv`.
            let (k, peer) = pair(&mut self.tcp, si, pi);
            let from = (before_rcv - peer.snd_base) as usize;
            let to = (after_rcv - peer.snd_base) as usize;
            k.rcv.extend(peer.snd.range(from..to));
            self.stats.delivered_payload_bytes += after_rcv - before_rcv;
            // Stream bytes: the messages with their 8-byte length words.
            self.note_delivered(p.src_host, h, after_rcv - before_rcv);
        }
        // News: bytes to read, or room in a send buffer a write found full.
        let k = &mut self.tcp[si];
        let room = after_una > before_una && std::mem::take(&mut k.write_blocked);
        if after_rcv > before_rcv || room {
            self.tcp_notify(s);
        }
        self.tcp_kick(s);
    }
}

/// Mutable references to two distinct sockets `a` and `b`.
fn pair(v: &mut [Socket], a: usize, b: usize) -> (&mut Socket, &mut Socket) {
    if a < b {
        let (x, y) = v.split_at_mut(b);
        (&mut x[a], &mut y[0])
    } else {
        let (x, y) = v.split_at_mut(a);
        (&mut y[0], &mut x[b])
    }
}
