//! The NIC's transmit side: arbitration between the QPs and the control queue, DCQCN pacing,
//! PFC pause, and the host's uplink.
//!
//! One packet at a time at line rate. Control packets (ACK, NAK, CNP) go first, in FIFO
//! order; data packets are taken round-robin, one packet per turn, from the QPs in the `ring`
//! (QPs with something to send). Packets are built lazily when the link frees up, so a rewind
//! (RNR NAK, sequence-error NAK, retransmission timeout) never has to recall queued packets:
//! the READ response owed by the responder goes first, else the requester's next request
//! packet. With DCQCN on, a QP whose next packet may not start yet (its rate limiter,
//! [`crate::DcqcnState::next_start`]: `last_start + wire_bytes·8 / R_C`) is skipped in its
//! turn; when only such QPs are left, one `NicWake` is scheduled at the earliest time one of
//! them may start. The host model ([`crate::HostModel`]) gates a QP the same way until the NIC
//! has its next WQE and payload (`Qp::wqe_ready_at`), and holds the link for each packet's
//! transmit-engine time before its serialization.
//!
//! # State
//! Per host, [`Egress`] (`Host::egress`):
//! - `ctrl`: packet-pool ids of queued ACK/NAK/CNP packets, FIFO. A QP's `pending_ack`
//!   (responder) names an ACK still in here; taking that ACK off clears `pending_ack`.
//! - `ring`: indices of QPs that may have data to send, in round-robin order. A QP is listed
//!   at most once, exactly when its `QpEgress::in_ring` is set; a listed QP that has nothing
//!   to send when its turn comes is taken off then.
//! - `tx_busy`, `tx_pkt`: a packet (pool id `tx_pkt`) is being serialized; exactly one
//!   `HostTxDone` event is pending while `tx_busy`.
//! - `up`: packets on the uplink with their arrival times at the switch (picoseconds,
//!   non-decreasing); exactly one `UpArrive` event is pending, for the head, while non-empty.
//! - `pace_wake`: time of the one `NicWake` event that counts ([`Time::MAX`]: none); a
//!   `NicWake` at any other time is stale. Only an earlier wake replaces it.
//! - `paused`, `paused_since`, `paused_total`: a PFC XOFF from the switch holds the link
//!   since `paused_since` (the packet on the wire finishes); `paused_total` is the time spent
//!   in earlier, ended pauses.
//!
//! Per QP, [`QpEgress`] (`Qp::egress`):
//! - `in_ring`: the QP is listed in `ring` (kept across a QP reset so it is never listed
//!   twice).
//! - `cc`: the DCQCN reaction point, started by the first CNP (`None`: line rate).
//! - `next_send`: earliest start of the QP's next data packet (picoseconds; only moved while
//!   `cc` is set).
//!
//! # Events
//! - `HostTxDone` ([`Simulation::on_host_tx_done`]): the packet goes on the uplink, the next
//!   one starts.
//! - `UpArrive` ([`Simulation::on_up_arrive`]): the head of the uplink reaches the switch
//!   (unless a link fault takes it).
//! - `NicWake` ([`Simulation::on_nic_wake`]): a rate-limited QP may start.
//! - PFC PAUSE / RESUME from the switch ([`Simulation::on_pause`], [`Simulation::on_resume`]).
//! - A CNP for one of the host's QPs ([`Simulation::on_cnp`]): the DCQCN rate cut.
//! - Something to send: a posted WR, a queued READ response or a rewind
//!   ([`Simulation::schedule_qp`]); a queued control packet ([`Simulation::queue_ctrl`]).

use crate::dcqcn::DcqcnState;
use crate::engine::Event;
use crate::packet::{Packet, PktKind};
use crate::Simulation;
use std::collections::VecDeque;
use xrdma::{Span, Time};

use super::QpState;

/// The transmit state of one host's NIC (see the module doc for the invariants).
#[derive(Debug)]
pub(crate) struct Egress {
    /// ACK/NAK/CNP packets (pool ids), sent before data.
    ctrl: VecDeque<u32>,
    /// QP indices with data to send, round-robin.
    ring: VecDeque<u32>,
    /// TCP sockets that may have a segment to send, round-robin (`crate::tcp::host`).
    pub tcp: VecDeque<u32>,
    tx_busy: bool,
    tx_pkt: u32,
    /// Time of the NIC wake-up event that matters ([`Time::MAX`]: none pending).
    pub pace_wake: Time,
    paused: bool,
    paused_since: Time,
    paused_total: Span,
    /// Packets on the uplink, with their arrival times at the switch.
    up: VecDeque<(Time, u32)>,
}

impl Egress {
    pub(crate) fn new() -> Self {
        Egress {
            ctrl: VecDeque::new(),
            ring: VecDeque::new(),
            tcp: VecDeque::new(),
            tx_busy: false,
            tx_pkt: 0,
            pace_wake: Time::MAX,
            paused: false,
            paused_since: Time::ZERO,
            paused_total: Span::ZERO,
            up: VecDeque::new(),
        }
    }

    /// Whether a PFC XOFF from the switch holds this NIC's transmission now.
    pub(crate) fn is_paused(&self) -> bool {
        self.paused
    }

    /// Time spent paused up to `now`, including a pause still in force.
    pub(crate) fn paused_time(&self, now: Time) -> Span {
        if self.paused {
            self.paused_total + (now - self.paused_since)
        } else {
            self.paused_total
        }
    }
}

/// The transmit state of one QP (see the module doc).
#[derive(Debug)]
pub(crate) struct QpEgress {
    /// Listed in the host's round-robin ring.
    pub in_ring: bool,
    /// DCQCN reaction point, started by the first CNP.
    pub cc: Option<DcqcnState>,
    /// Earliest start of this QP's next data packet (DCQCN pacing).
    pub next_send: Time,
}

impl QpEgress {
    pub(crate) fn new() -> Self {
        QpEgress {
            in_ring: false,
            cc: None,
            next_send: Time::ZERO,
        }
    }
}

impl Simulation {
    /// Put `qp` in the round-robin ring if it has something to send, and kick the NIC.
    pub(crate) fn schedule_qp(&mut self, h: u32, qi: usize) {
        let host = &mut self.hosts[h as usize];
        let qp = &mut host.qps[qi];
        if !qp.egress.in_ring && qp.sendable() {
            qp.egress.in_ring = true;
            host.egress.ring.push_back(qi as u32);
        }
        self.nic_try_tx(h);
    }

    /// Queue control packet `p` (ACK, NAK, CNP) on host `h`; its pool id.
    pub(crate) fn queue_ctrl(&mut self, h: u32, p: Packet) -> u32 {
        let id = self.pool.alloc(p);
        self.hosts[h as usize].egress.ctrl.push_back(id);
        id
    }

    /// Start the next packet on host `h`'s uplink if the link is idle and not paused.
    pub(crate) fn nic_try_tx(&mut self, h: u32) {
        let host = &mut self.hosts[h as usize];
        if host.egress.tx_busy || host.egress.paused {
            return;
        }
        let mut kernel = Span::ZERO;
        let id = if let Some(id) = host.egress.ctrl.pop_front() {
            let p = self.pool.get(id);
            if p.kind == PktKind::Ack {
                self.stats.ack_packets += 1;
                if let Some(qi) = host.qp_index(p.src_qpn) {
                    let qp = &mut host.qps[qi];
                    if qp.responder.pending_ack == Some(id) {
                        qp.responder.pending_ack = None;
                    }
                }
            }
            id
        } else if let Some((id, hold)) = self.tcp_next_segment(h) {
            kernel = hold;
            id
        } else {
            match self.next_data_packet(h) {
                Some(id) => {
                    self.stats.data_packets += 1;
                    id
                }
                None => return,
            }
        };
        let mut busy = self.ser(self.pool.get(id).wire);
        if self.host_on {
            busy += self.tx_engine_time(id) + kernel;
        }
        let host = &mut self.hosts[h as usize];
        host.egress.tx_busy = true;
        host.egress.tx_pkt = id;
        let done = self.now + busy;
        self.queue.push(done, Event::HostTxDone(h));
    }

    /// The host model's transmit-engine time for packet `id` (kept out of line: the ideal
    /// model never calls it).
    #[cold]
    #[inline(never)]
    fn tx_engine_time(&self, id: u32) -> Span {
        self.cfg.host.tx_engine(self.pool.get(id).payload)
    }

    /// Round-robin over QPs with data: one packet from the first sendable QP whose rate
    /// limiter allows it to start now. When only rate-limited QPs are left, one NIC wake-up
    /// is scheduled at the earliest time one of them may start.
    fn next_data_packet(&mut self, h: u32) -> Option<u32> {
        let now = self.now;
        let mut earliest = Time::MAX;
        let turns = self.hosts[h as usize].egress.ring.len();
        for _ in 0..turns {
            let host = &mut self.hosts[h as usize];
            let Some(qi) = host.egress.ring.pop_front() else {
                break;
            };
            let qi = qi as usize;
            let mut at = host.qps[qi].egress.next_send;
            if self.host_on {
                at = at.max(host.qps[qi].wqe_ready_at());
            }
            if at > now {
                earliest = earliest.min(at);
                host.egress.ring.push_back(qi as u32);
                continue;
            }
            let Some(p) = self.build_packet(h, qi) else {
                self.hosts[h as usize].qps[qi].egress.in_ring = false;
                continue;
            };
            let host = &mut self.hosts[h as usize];
            let qp = &mut host.qps[qi];
            if let (Some(cc), Some(params)) = (qp.egress.cc.as_mut(), self.dcqcn.as_ref()) {
                cc.advance(params, now);
                cc.on_sent(params, p.wire as u64);
                qp.egress.next_send = cc.next_start(now, p.wire);
            }
            if qp.sendable() {
                host.egress.ring.push_back(qi as u32);
            } else {
                qp.egress.in_ring = false;
            }
            return Some(self.pool.alloc(p));
        }
        if earliest != Time::MAX {
            self.schedule_nic_wake(h, earliest);
        }
        None
    }

    /// The next packet of QP `qi`: a READ response if one is owed, else the next request
    /// packet; `None` when the QP has nothing to send.
    fn build_packet(&mut self, h: u32, qi: usize) -> Option<Packet> {
        let (mtu, hdr) = (self.cfg.path_mtu(), self.cfg.header_bytes);
        let qp = &mut self.hosts[h as usize].qps[qi];
        if qp.state != QpState::Rts {
            return None;
        }
        let mut p = Packet::control(PktKind::Data, h, qp.remote_host, hdr);
        p.src_qpn = qp.qpn;
        p.dst_qpn = qp.remote_qpn;
        if qp.responder.next_read_response(&mut p, mtu, hdr) {
            return Some(p);
        }
        self.next_request(h, qi, p)
    }

    /// `HostTxDone`: host `h`'s NIC finished serializing its packet; it goes on the uplink
    /// and the next packet starts.
    pub(crate) fn on_host_tx_done(&mut self, h: u32) {
        let at = self.now + self.cfg.link_delay;
        let host = &mut self.hosts[h as usize];
        host.egress.tx_busy = false;
        let id = host.egress.tx_pkt;
        host.egress.up.push_back((at, id));
        if host.egress.up.len() == 1 {
            self.queue.push(at, Event::UpArrive(h));
        }
        if self.capture.is_some() {
            self.capture_host_tx(h, id);
        }
        self.nic_try_tx(h);
    }

    /// `UpArrive`: the head packet of host `h`'s uplink reaches the switch.
    pub(crate) fn on_up_arrive(&mut self, h: u32) {
        let host = &mut self.hosts[h as usize];
        let Some((_, id)) = host.egress.up.pop_front() else {
            return;
        };
        if let Some(&(next, _)) = host.egress.up.front() {
            self.queue.push(next, Event::UpArrive(h));
        }
        if self.uplink_fault(h, id) {
            return;
        }
        self.switch_receive(h, id);
    }

    /// A PFC PAUSE (XOFF) from the switch reached host `h`: no new packet starts.
    pub(crate) fn on_pause(&mut self, h: u32) {
        let e = &mut self.hosts[h as usize].egress;
        if !e.paused {
            e.paused = true;
            e.paused_since = self.now;
        }
    }

    /// A PFC RESUME (XON) from the switch reached host `h`: transmission goes on.
    pub(crate) fn on_resume(&mut self, h: u32) {
        let e = &mut self.hosts[h as usize].egress;
        if e.paused {
            e.paused = false;
            e.paused_total += self.now - e.paused_since;
        }
        self.nic_try_tx(h);
    }

    /// A CNP for QP `qi` on host `h` reached its reaction point.
    pub(crate) fn on_cnp(&mut self, h: u32, qi: usize) {
        let Some(p) = self.dcqcn else { return };
        let now = self.now;
        let qp = &mut self.hosts[h as usize].qps[qi];
        qp.egress
            .cc
            .get_or_insert_with(|| DcqcnState::new(&p))
            .on_cnp(&p, now);
    }

    /// Make sure host `h`'s NIC looks for a packet again at `at`.
    pub(crate) fn schedule_nic_wake(&mut self, h: u32, at: Time) {
        let e = &mut self.hosts[h as usize].egress;
        if at < e.pace_wake {
            e.pace_wake = at;
            self.queue.push(at, Event::NicWake(h));
        }
    }

    /// `NicWake` for host `h`: look for a packet again if this is the wake that counts.
    pub(crate) fn on_nic_wake(&mut self, h: u32) {
        let e = &mut self.hosts[h as usize].egress;
        if e.pace_wake == self.now {
            e.pace_wake = Time::MAX;
            self.nic_try_tx(h);
        }
    }
}
