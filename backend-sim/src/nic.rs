//! The host NIC: RC queue pairs (the responder half here, the requester half in
//! `requester.rs`), egress arbitration and the host's uplink.
//!
//! Egress: one packet at a time at line rate. Control packets (ACK, NAK, CNP) go first, in
//! FIFO order; data packets are taken round-robin, one packet per turn, from the QPs in the
//! `ring` (QPs with something to send). Packets are built lazily when the link frees up, so a
//! rewind (RNR NAK, sequence-error NAK, retransmission timeout; see `retransmit.rs`) never has
//! to recall queued packets. With DCQCN on, a QP whose next packet may not start yet (its
//! rate limiter, see `pacing.rs`) is skipped in its turn.

use crate::config::{AETH_BYTES, CNP_EXTRA_BYTES, IMMDT_BYTES, RETH_BYTES};
use crate::engine::Event;
use crate::memory::Memory;
use crate::packet::{
    psn_add, psn_diff, MsgOp, NakCode, Packet, PktKind, F_CE, F_CORRUPT, F_FIRST, F_LAST, PSN_MASK,
};
use crate::Simulation;
use std::collections::VecDeque;
use xrdma::{QpCaps, QpNum, RecvWr, SendOpcode, SendWr, Time, WcOpcode, WcStatus, WorkCompletion};

/// QPNs are `QPN_BASE + index` (QPNs 0 and 1 are special in InfiniBand).
pub(crate) const QPN_BASE: u32 = 0x100;

/// QP states used by the model (IB Spec 10.3.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum QpState {
    Init,
    Rts,
    Err,
}

impl QpState {
    pub(crate) fn name(self) -> &'static str {
        match self {
            QpState::Init => "INIT",
            QpState::Rts => "RTS",
            QpState::Err => "ERR",
        }
    }
}

/// A posted send WR and its PSN range.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Wqe {
    pub wr: SendWr,
    pub first_psn: u32,
    /// PSNs the WR consumes: packets of a SEND/WRITE, response packets of a READ.
    pub npkts: u32,
    /// READ response packets received so far.
    pub resp_got: u32,
}

/// A READ the responder is answering.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ReadJob {
    psn: u32,
    pkts_left: u32,
    src_addr: u64,
    bytes_left: u32,
    first: bool,
}

/// The inbound SEND being received.
#[derive(Clone, Copy, Debug)]
pub(crate) struct InMsg {
    recv: RecvWr,
    bytes: u32,
}

#[derive(Debug)]
pub(crate) struct Qp {
    pub qpn: QpNum,
    pub state: QpState,
    pub caps: QpCaps,
    /// Incremented on every reset; salts the initial PSN.
    pub gen: u32,
    pub remote_host: u32,
    pub remote_qpn: QpNum,
    // Requester.
    pub sq: VecDeque<Wqe>,
    /// Index in `sq` of the WQE whose packets are sent next; WQEs before it are fully sent.
    pub cursor: usize,
    /// Next packet of `sq[cursor]`.
    pub cursor_pkt: u32,
    /// PSN the next posted WR starts at.
    pub sq_psn: u32,
    /// Highest PSN known to be acknowledged.
    pub acked_psn: u32,
    pub rnr_wait: bool,
    pub rnr_deadline: Time,
    pub rnr_count: u8,
    pub in_ring: bool,
    /// PSN after the highest request PSN ever sent (ACKs and NAKs beyond it are invalid).
    pub sent_psn: u32,
    /// Retransmission timeouts since the last progress.
    pub retry_count: u8,
    /// When the retransmission timer expires; [`Time::MAX`] when disarmed.
    pub rto_deadline: Time,
    /// A `RetransmitTimer` event for this QP is in the event queue.
    pub rto_pending: bool,
    /// DCQCN reaction point, started by the first CNP.
    pub cc: Option<crate::dcqcn::DcqcnState>,
    /// Earliest start of this QP's next data packet (DCQCN pacing).
    pub next_send: Time,
    // Responder.
    pub rq: VecDeque<RecvWr>,
    pub epsn: u32,
    pub in_msg: Option<InMsg>,
    pub ack_count: u32,
    pub pending_ack: Option<u32>,
    pub last_cnp: Option<Time>,
    pub read_jobs: VecDeque<ReadJob>,
    /// A NAK (sequence error or RNR) was sent for the current `epsn`; later out-of-sequence
    /// packets are dropped silently until `epsn` arrives (one NAK per gap).
    pub nak_sent: bool,
}

/// SplitMix64 finalizer (Steele, Lea & Flood, OOPSLA 2014).
fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Deterministic initial PSN of QP `qpn` on `host` after `gen` resets, from the seed.
pub(crate) fn initial_psn(seed: u64, host: u32, qpn: u32, gen: u32) -> u32 {
    let x = splitmix(seed ^ splitmix((host as u64) << 32 | qpn as u64) ^ (gen as u64) << 48);
    (x as u32) & PSN_MASK
}

impl Qp {
    pub(crate) fn new(qpn: QpNum, caps: QpCaps, psn: u32) -> Self {
        Qp {
            qpn,
            state: QpState::Init,
            caps,
            gen: 0,
            remote_host: 0,
            remote_qpn: 0,
            sq: VecDeque::new(),
            cursor: 0,
            cursor_pkt: 0,
            sq_psn: psn,
            acked_psn: psn_add(psn, PSN_MASK),
            rnr_wait: false,
            rnr_deadline: Time::ZERO,
            rnr_count: 0,
            in_ring: false,
            sent_psn: psn,
            retry_count: 0,
            rto_deadline: Time::MAX,
            rto_pending: false,
            cc: None,
            next_send: Time::ZERO,
            rq: VecDeque::new(),
            epsn: 0,
            in_msg: None,
            ack_count: 0,
            pending_ack: None,
            last_cnp: None,
            read_jobs: VecDeque::new(),
            nak_sent: false,
        }
    }

    /// Back to INIT with a new first PSN; queued WRs are dropped without completions.
    pub(crate) fn reset(&mut self, psn: u32) {
        let (qpn, caps, gen, in_ring) = (self.qpn, self.caps, self.gen, self.in_ring);
        let rto_pending = self.rto_pending;
        *self = Qp::new(qpn, caps, psn);
        self.gen = gen;
        // A timer event still queued finds the timer disarmed and does nothing.
        self.rto_pending = rto_pending;
        // The QP may still be listed in the NIC's round-robin ring; keep the flag so it is
        // never listed twice. A pending ACK still in the control queue is forgotten: it goes
        // out unchanged and nothing folds new ACKs into it.
        self.in_ring = in_ring;
    }

    fn sendable(&self) -> bool {
        self.state == QpState::Rts
            && (!self.read_jobs.is_empty() || (!self.rnr_wait && self.cursor < self.sq.len()))
    }

    /// PSN of the next packet to send (behind `sent_psn` after a rewind).
    pub(crate) fn next_psn(&self) -> u32 {
        match self.sq.get(self.cursor) {
            Some(w) => psn_add(w.first_psn, self.cursor_pkt),
            None => self.sq_psn,
        }
    }

    /// Index of the WQE among the first `upto` whose PSN range holds `psn`.
    pub(crate) fn find_wqe(&self, psn: u32, upto: usize) -> Option<usize> {
        self.sq
            .iter()
            .take(upto)
            .position(|w| (0..w.npkts as i64).contains(&(psn_diff(psn, w.first_psn) as i64)))
    }
}

/// Packets a message of `len` bytes takes at `mtu` payload bytes per packet (at least 1).
pub(crate) fn packets_for(len: u32, mtu: u32) -> u32 {
    len.div_ceil(mtu).max(1)
}

#[derive(Debug)]
pub(crate) struct Host {
    pub mem: Memory,
    pub qps: Vec<Qp>,
    pub cq: VecDeque<WorkCompletion>,
    pub congestion: VecDeque<QpNum>,
    /// ACK/NAK/CNP packets, sent before data.
    ctrl: VecDeque<u32>,
    /// QP indices with data to send, round-robin.
    ring: VecDeque<u32>,
    tx_busy: bool,
    tx_pkt: u32,
    /// Time of the NIC wake-up event that matters ([`Time::MAX`]: none pending).
    pub pace_wake: Time,
    paused: bool,
    paused_since: Time,
    paused_total: Time,
    /// Packets on the uplink, with their arrival times at the switch.
    up: VecDeque<(Time, u32)>,
    /// When the driver wants this host woken ([`Time::MAX`]: never).
    pub wake_at: Time,
    /// Time of the one wake event that counts ([`Time::MAX`]: none queued).
    pub wake_queued: Time,
    pub ready: bool,
}

impl Host {
    pub(crate) fn new(id: u32) -> Self {
        Host {
            mem: Memory::new(id),
            qps: Vec::new(),
            cq: VecDeque::new(),
            congestion: VecDeque::new(),
            ctrl: VecDeque::new(),
            ring: VecDeque::new(),
            tx_busy: false,
            tx_pkt: 0,
            pace_wake: Time::MAX,
            paused: false,
            paused_since: Time::ZERO,
            paused_total: Time::ZERO,
            up: VecDeque::new(),
            wake_at: Time::MAX,
            wake_queued: Time::MAX,
            ready: false,
        }
    }

    /// Whether a PFC XOFF from the switch holds this NIC's transmission now.
    pub(crate) fn is_paused(&self) -> bool {
        self.paused
    }

    /// Time spent paused up to `now`, including a pause still in force.
    pub(crate) fn paused_time(&self, now: Time) -> Time {
        if self.paused {
            self.paused_total + (now - self.paused_since)
        } else {
            self.paused_total
        }
    }

    pub(crate) fn qp_index(&self, qpn: QpNum) -> Option<usize> {
        let i = qpn.checked_sub(QPN_BASE)? as usize;
        (i < self.qps.len()).then_some(i)
    }
}

impl Simulation {
    pub(crate) fn push_wc(&mut self, h: u32, wc: WorkCompletion) {
        self.hosts[h as usize].cq.push_back(wc);
        self.stats.completions += 1;
        self.mark_ready(h);
    }

    /// Put `qp` in the round-robin ring if it has something to send, and kick the NIC.
    pub(crate) fn schedule_qp(&mut self, h: u32, qi: usize) {
        let host = &mut self.hosts[h as usize];
        let qp = &mut host.qps[qi];
        if !qp.in_ring && qp.sendable() {
            qp.in_ring = true;
            host.ring.push_back(qi as u32);
        }
        self.nic_try_tx(h);
    }

    /// Start the next packet on host `h`'s uplink if the link is idle and not paused.
    pub(crate) fn nic_try_tx(&mut self, h: u32) {
        let host = &mut self.hosts[h as usize];
        if host.tx_busy || host.paused {
            return;
        }
        let id = if let Some(id) = host.ctrl.pop_front() {
            let p = self.pool.get(id);
            if p.kind == PktKind::Ack {
                self.stats.ack_packets += 1;
                if let Some(qi) = host.qp_index(p.src_qpn) {
                    let qp = &mut host.qps[qi];
                    if qp.pending_ack == Some(id) {
                        qp.pending_ack = None;
                    }
                }
            }
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
        let wire = self.pool.get(id).wire;
        let host = &mut self.hosts[h as usize];
        host.tx_busy = true;
        host.tx_pkt = id;
        let done = self.now + self.ser(wire);
        self.queue.push(done, Event::HostTxDone(h));
    }

    /// Round-robin over QPs with data: one packet from the first sendable QP whose rate
    /// limiter allows it to start now. When only rate-limited QPs are left, one NIC wake-up
    /// is scheduled at the earliest time one of them may start.
    fn next_data_packet(&mut self, h: u32) -> Option<u32> {
        let now = self.now;
        let mut earliest = Time::MAX;
        let turns = self.hosts[h as usize].ring.len();
        for _ in 0..turns {
            let host = &mut self.hosts[h as usize];
            let Some(qi) = host.ring.pop_front() else {
                break;
            };
            let qi = qi as usize;
            let at = host.qps[qi].next_send;
            if at > now {
                earliest = earliest.min(at);
                host.ring.push_back(qi as u32);
                continue;
            }
            let Some(p) = self.build_packet(h, qi) else {
                self.hosts[h as usize].qps[qi].in_ring = false;
                continue;
            };
            let host = &mut self.hosts[h as usize];
            let qp = &mut host.qps[qi];
            if let (Some(cc), Some(params)) = (qp.cc.as_mut(), self.dcqcn.as_ref()) {
                cc.advance(params, now);
                cc.on_sent(params, p.wire as u64);
                qp.next_send = cc.next_start(now, p.wire);
            }
            if qp.sendable() {
                host.ring.push_back(qi as u32);
            } else {
                qp.in_ring = false;
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
        if let Some(job) = qp.read_jobs.front_mut() {
            let payload = job.bytes_left.min(mtu);
            let first = job.first;
            let last = job.pkts_left == 1;
            p.kind = PktKind::ReadResp;
            p.flags = if first { F_FIRST } else { 0 } | if last { F_LAST } else { 0 };
            p.psn = job.psn;
            p.payload = payload;
            p.wire = hdr + payload + if first || last { AETH_BYTES } else { 0 };
            p.src_addr = job.src_addr;
            job.psn = psn_add(job.psn, 1);
            job.src_addr += payload as u64;
            job.bytes_left -= payload;
            job.pkts_left -= 1;
            job.first = false;
            if job.pkts_left == 0 {
                qp.read_jobs.pop_front();
            }
            return Some(p);
        }
        if qp.rnr_wait {
            return None;
        }
        let w = *qp.sq.get(qp.cursor)?;
        p.rkey = w.wr.rkey;
        p.msg_len = w.wr.sge.len;
        p.imm = w.wr.imm;
        if w.wr.opcode == SendOpcode::RdmaRead {
            p.kind = PktKind::ReadReq;
            p.flags = F_FIRST | F_LAST;
            p.psn = w.first_psn;
            p.wire = hdr + RETH_BYTES;
            p.remote_addr = w.wr.remote_addr;
            qp.cursor += 1;
            qp.cursor_pkt = 0;
            self.request_sent(h, qi, psn_add(w.first_psn, w.npkts));
            return Some(p);
        }
        let k = qp.cursor_pkt;
        let off = k * mtu;
        let payload = (w.wr.sge.len - off).min(mtu);
        let first = k == 0;
        let last = k + 1 == w.npkts;
        let (op, imm, write) = match w.wr.opcode {
            SendOpcode::Send => (MsgOp::Send, false, false),
            SendOpcode::SendWithImm => (MsgOp::SendImm, true, false),
            SendOpcode::RdmaWrite => (MsgOp::Write, false, true),
            _ => (MsgOp::WriteImm, true, true),
        };
        p.op = op;
        p.flags = if first { F_FIRST } else { 0 } | if last { F_LAST } else { 0 };
        p.psn = psn_add(w.first_psn, k);
        p.payload = payload;
        p.wire = hdr
            + payload
            + if first && write { RETH_BYTES } else { 0 }
            + if last && imm { IMMDT_BYTES } else { 0 };
        p.src_addr = w.wr.sge.addr + off as u64;
        p.remote_addr = w.wr.remote_addr + off as u64;
        if last {
            qp.cursor += 1;
            qp.cursor_pkt = 0;
        } else {
            qp.cursor_pkt += 1;
        }
        self.request_sent(h, qi, psn_add(p.psn, 1));
        Some(p)
    }

    pub(crate) fn on_host_tx_done(&mut self, h: u32) {
        let at = self.now + self.cfg.link_delay;
        let host = &mut self.hosts[h as usize];
        host.tx_busy = false;
        host.up.push_back((at, host.tx_pkt));
        if host.up.len() == 1 {
            self.queue.push(at, Event::UpArrive(h));
        }
        self.nic_try_tx(h);
    }

    pub(crate) fn on_up_arrive(&mut self, h: u32) {
        let host = &mut self.hosts[h as usize];
        let Some((_, id)) = host.up.pop_front() else {
            return;
        };
        if let Some(&(next, _)) = host.up.front() {
            self.queue.push(next, Event::UpArrive(h));
        }
        if self.uplink_fault(h, id) {
            return;
        }
        self.switch_receive(h, id);
    }

    pub(crate) fn on_rnr_timer(&mut self, h: u32, qi: u32) {
        let qi = qi as usize;
        let Some(qp) = self.hosts[h as usize].qps.get_mut(qi) else {
            return;
        };
        if qp.state == QpState::Rts && qp.rnr_wait && qp.rnr_deadline == self.now {
            qp.rnr_wait = false;
            self.schedule_qp(h, qi);
        }
    }

    /// A packet from the downlink has fully arrived at host `h`.
    pub(crate) fn nic_receive(&mut self, h: u32, id: u32) {
        let p = *self.pool.get(id);
        self.pool.release(id);
        if p.flags & F_CORRUPT != 0 {
            self.stats.icrc_drops += 1;
            return;
        }
        match p.kind {
            PktKind::Pause => {
                let host = &mut self.hosts[h as usize];
                if !host.paused {
                    host.paused = true;
                    host.paused_since = self.now;
                }
                return;
            }
            PktKind::Resume => {
                let host = &mut self.hosts[h as usize];
                if host.paused {
                    host.paused = false;
                    host.paused_total += self.now - host.paused_since;
                }
                self.nic_try_tx(h);
                return;
            }
            _ => {}
        }
        let host = &self.hosts[h as usize];
        let Some(qi) = host.qp_index(p.dst_qpn) else {
            self.stats.out_of_sequence_drops += 1;
            return;
        };
        let qp = &host.qps[qi];
        if qp.state == QpState::Init || qp.remote_host != p.src_host || qp.remote_qpn != p.src_qpn {
            self.stats.out_of_sequence_drops += 1;
            return;
        }
        match p.kind {
            PktKind::Cnp => {
                self.stats.cnps_received += 1;
                self.hosts[h as usize].congestion.push_back(p.dst_qpn);
                self.mark_ready(h);
                self.dcqcn_on_cnp(h, qi);
            }
            PktKind::Ack => self.on_ack(h, qi, p.psn),
            PktKind::Nak => self.on_nak(h, qi, p.psn, p.nak),
            PktKind::ReadResp => {
                if p.has(F_CE) {
                    self.maybe_cnp(h, qi);
                }
                self.on_read_resp(h, qi, &p);
            }
            PktKind::Data | PktKind::ReadReq => {
                if p.has(F_CE) {
                    self.maybe_cnp(h, qi);
                }
                self.on_request(h, qi, &p);
            }
            PktKind::Pause | PktKind::Resume => {}
        }
        self.nic_try_tx(h);
    }

    // ----- Responder -----

    fn queue_ctrl(&mut self, h: u32, p: Packet) -> u32 {
        let id = self.pool.alloc(p);
        self.hosts[h as usize].ctrl.push_back(id);
        id
    }

    fn reply(&self, h: u32, qi: usize, kind: PktKind, wire: u32) -> Packet {
        let qp = &self.hosts[h as usize].qps[qi];
        let mut p = Packet::control(kind, h, qp.remote_host, wire);
        p.src_qpn = qp.qpn;
        p.dst_qpn = qp.remote_qpn;
        p
    }

    /// Queue a cumulative ACK of `psn`, folding it into an ACK still waiting to be sent.
    fn queue_ack(&mut self, h: u32, qi: usize, psn: u32) {
        if let Some(id) = self.hosts[h as usize].qps[qi].pending_ack {
            self.pool.get_mut(id).psn = psn;
            return;
        }
        let mut p = self.reply(h, qi, PktKind::Ack, self.cfg.header_bytes + AETH_BYTES);
        p.psn = psn;
        let id = self.queue_ctrl(h, p);
        self.hosts[h as usize].qps[qi].pending_ack = Some(id);
    }

    fn send_nak(&mut self, h: u32, qi: usize, psn: u32, code: NakCode) {
        let mut p = self.reply(h, qi, PktKind::Nak, self.cfg.header_bytes + AETH_BYTES);
        p.psn = psn;
        p.nak = code;
        self.queue_ctrl(h, p);
        self.stats.nak_packets += 1;
        match code {
            NakCode::Rnr => {
                self.stats.rnr_naks += 1;
                self.hosts[h as usize].qps[qi].nak_sent = true;
            }
            NakCode::SeqErr => self.stats.seq_naks += 1,
            NakCode::RemAccess | NakCode::InvReq => {}
        }
    }

    /// Queue the responses of the READ request `p` (after checking its R_Key); a NAK and
    /// `false` when the range is not accessible.
    fn start_read(&mut self, h: u32, qi: usize, p: &Packet) -> bool {
        if !self.hosts[h as usize]
            .mem
            .check_rkey(p.rkey, p.remote_addr, p.msg_len as u64)
        {
            self.send_nak(h, qi, p.psn, NakCode::RemAccess);
            return false;
        }
        let n = packets_for(p.msg_len, self.cfg.path_mtu());
        self.hosts[h as usize].qps[qi].read_jobs.push_back(ReadJob {
            psn: p.psn,
            pkts_left: n,
            src_addr: p.remote_addr,
            bytes_left: p.msg_len,
            first: true,
        });
        self.schedule_qp(h, qi);
        true
    }

    /// DCQCN notification point: at most one CNP per `cnp_interval` per QP.
    fn maybe_cnp(&mut self, h: u32, qi: usize) {
        let (now, interval) = (self.now, self.cfg.cnp_interval);
        let qp = &mut self.hosts[h as usize].qps[qi];
        if qp.last_cnp.is_some_and(|t| now - t < interval) {
            return;
        }
        qp.last_cnp = Some(now);
        let p = self.reply(h, qi, PktKind::Cnp, self.cfg.header_bytes + CNP_EXTRA_BYTES);
        self.queue_ctrl(h, p);
        self.stats.cnps_sent += 1;
    }

    fn on_request(&mut self, h: u32, qi: usize, p: &Packet) {
        let (mtu, ack_every) = (self.cfg.path_mtu(), self.cfg.ack_every);
        let qp = &self.hosts[h as usize].qps[qi];
        if qp.state != QpState::Rts {
            self.stats.out_of_sequence_drops += 1;
            return;
        }
        let d = psn_diff(p.psn, qp.epsn);
        if d > 0 {
            // A gap: one sequence-error NAK carrying the expected PSN (IB Spec 9.7.5.2.4),
            // then silence until the expected packet arrives.
            self.stats.out_of_sequence_drops += 1;
            if !qp.nak_sent {
                let epsn = qp.epsn;
                self.send_nak(h, qi, epsn, NakCode::SeqErr);
                self.hosts[h as usize].qps[qi].nak_sent = true;
            }
            return;
        }
        if d < 0 {
            if p.kind == PktKind::ReadReq {
                // A repeated READ is executed again (IB Spec 9.7.5.1.2, duplicate READ).
                self.start_read(h, qi, p);
                return;
            }
            // Duplicate: re-acknowledge what was received.
            let last = psn_add(qp.epsn, PSN_MASK);
            self.queue_ack(h, qi, last);
            return;
        }
        let first = p.has(F_FIRST);
        let last = p.has(F_LAST);
        if p.kind == PktKind::ReadReq {
            if self.start_read(h, qi, p) {
                let n = packets_for(p.msg_len, mtu);
                let qp = &mut self.hosts[h as usize].qps[qi];
                qp.epsn = psn_add(qp.epsn, n);
                qp.nak_sent = false;
            }
            return;
        }
        let mut recv_done: Option<WorkCompletion> = None;
        match p.op {
            MsgOp::Send | MsgOp::SendImm => {
                let qp = &mut self.hosts[h as usize].qps[qi];
                if first {
                    let Some(r) = qp.rq.pop_front() else {
                        self.send_nak(h, qi, p.psn, NakCode::Rnr);
                        return;
                    };
                    qp.in_msg = Some(InMsg { recv: r, bytes: 0 });
                }
                let Some(m) = qp.in_msg else {
                    self.stats.out_of_sequence_drops += 1;
                    return;
                };
                let qpn = qp.qpn;
                if m.bytes as u64 + p.payload as u64 > m.recv.sge.len as u64 {
                    let wc = WorkCompletion {
                        wr_id: m.recv.wr_id,
                        status: WcStatus::LocLenErr,
                        opcode: WcOpcode::Recv,
                        qp_num: qpn,
                        byte_len: 0,
                        imm: None,
                    };
                    self.push_wc(h, wc);
                    self.send_nak(h, qi, p.psn, NakCode::InvReq);
                    self.fail_qp(h, qi, None);
                    return;
                }
                let dst = m.recv.sge.addr + m.bytes as u64;
                self.copy_bytes(p.src_host, p.src_addr, h, dst, p.payload);
                let qp = &mut self.hosts[h as usize].qps[qi];
                let bytes = m.bytes + p.payload;
                qp.in_msg = if last {
                    None
                } else {
                    Some(InMsg {
                        recv: m.recv,
                        bytes,
                    })
                };
                if last {
                    recv_done = Some(WorkCompletion {
                        wr_id: m.recv.wr_id,
                        status: WcStatus::Success,
                        opcode: WcOpcode::Recv,
                        qp_num: qpn,
                        byte_len: bytes,
                        imm: (p.op == MsgOp::SendImm).then_some(p.imm),
                    });
                }
            }
            MsgOp::Write | MsgOp::WriteImm => {
                let mem = &self.hosts[h as usize].mem;
                // A zero-length WRITE carries no R_Key to check (IB Spec 9.7.4.1.5, C9-88).
                let whole_ok = !first
                    || p.msg_len == 0
                    || mem.check_rkey(p.rkey, p.remote_addr, p.msg_len as u64);
                let part_ok =
                    p.payload == 0 || mem.check_rkey(p.rkey, p.remote_addr, p.payload as u64);
                if !whole_ok || !part_ok {
                    self.send_nak(h, qi, p.psn, NakCode::RemAccess);
                    return;
                }
                let qp = &mut self.hosts[h as usize].qps[qi];
                if last && p.op == MsgOp::WriteImm {
                    let Some(r) = qp.rq.pop_front() else {
                        self.send_nak(h, qi, p.psn, NakCode::Rnr);
                        return;
                    };
                    recv_done = Some(WorkCompletion {
                        wr_id: r.wr_id,
                        status: WcStatus::Success,
                        opcode: WcOpcode::RecvRdmaWithImm,
                        qp_num: qp.qpn,
                        byte_len: p.msg_len,
                        imm: Some(p.imm),
                    });
                }
                self.copy_bytes(p.src_host, p.src_addr, h, p.remote_addr, p.payload);
            }
        }
        self.stats.delivered_payload_bytes += p.payload as u64;
        self.note_delivered(p.src_host, h, p.payload as u64);
        let qp = &mut self.hosts[h as usize].qps[qi];
        qp.epsn = psn_add(qp.epsn, 1);
        qp.nak_sent = false;
        qp.ack_count += 1;
        if last || qp.ack_count >= ack_every {
            qp.ack_count = 0;
            self.queue_ack(h, qi, p.psn);
        }
        if let Some(wc) = recv_done {
            self.push_wc(h, wc);
        }
    }
}
