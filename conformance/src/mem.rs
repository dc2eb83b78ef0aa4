//! A two-host in-memory transport: every WR completes at once, in order, at the time the
//! caller keeps in [`MemPair::now`], with real bytes copied between the hosts' registered
//! memory (SENDs into the oldest posted receive, WRITEs to their remote range, READs from
//! it). It is the transport of the core's own tests and the fastest conformance backend.
//!
//! Errors follow RC verbs (IB Spec 9.7.5, 10.8.3), without the time a NIC spends on them:
//! - a SEND or WRITE with immediate that finds no receive posted fails with
//!   `RnrRetryExcErr`: with nothing else running, no receive can appear between retries, so
//!   every retry is spent at once (whatever the QP's RNR retry count; 7, retry forever, is
//!   not modelled);
//! - a WR to a QP that is not connected back to the sender (reset, or in error) fails with
//!   `RetryExcErr`, as a NIC reports once its transport retries are spent;
//! - a WRITE or READ outside the peer's MR named by the rkey fails with `RemAccessErr`, and a
//!   SEND longer than its receive with `GeneralErr` (the NAK's remote invalid request) while
//!   the receive completes with `LocLenErr`; both move the responder's QP to error as well;
//! - a failed WR puts its QP in error: its posted receives are flushed (`WrFlushErr`), and
//!   every later WR on it completes with `WrFlushErr`, until the QP is reset.
//!
//! The send queue holds `max_send_wr` WRs (`ibv_post_send` answers `ENOMEM`,
//! [`TransportError::QueueFull`], past that). A WR's slot is freed when its completion is
//! polled; an unsignaled WR that succeeded has none, and its slot is freed only when the
//! completion of a later WR of its queue is polled, as a verbs provider retires unsignaled
//! WQEs up to the one a CQE names (mlx5; `ibv_post_send(3)`). So a queue filled with
//! unsignaled WRs stays full, as on a device.
//!
//! Knobs for the core's tests drop traffic (to test timeouts), cap registrations and lend
//! memory ([`MemPair::lending`]).

use bytes::Bytes;
use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};
use xrdma::*;

/// One host: its MRs, QPs, CQ and congestion notifications.
#[derive(Debug, Default)]
pub struct MemHost {
    mrs: Vec<Vec<u8>>,
    qps: Vec<Qp>,
    cq: VecDeque<Cqe>,
    congestion: VecDeque<QpNum>,
}

/// A completion in the CQ, and the send-queue slots polling it frees.
#[derive(Debug)]
struct Cqe {
    wc: WorkCompletion,
    /// For a send completion: its QP, the QP's incarnation (bumped by a reset) and the
    /// number of WRs posted to it up to and including this one.
    retires: Option<(QpNum, u32, u64)>,
}

impl Cqe {
    fn recv(wc: WorkCompletion) -> Cqe {
        Cqe { wc, retires: None }
    }
}

#[derive(Debug, Default)]
struct Qp {
    remote: Option<QpNum>,
    recvs: VecDeque<RecvWr>,
    error: bool,
    /// Send-queue depth (`max_send_wr`).
    max_send_wr: u32,
    /// Send WRs accepted since the last reset, and how many of their slots are free again.
    posted: u64,
    retired: u64,
    /// Incarnation: completions of WRs posted before a reset free nothing after it.
    epoch: u32,
}

impl Qp {
    /// Take a slot for one more send WR; returns its number, or the queue-full error.
    fn take_slot(&mut self, qpn: QpNum) -> Result<u64, TransportError> {
        if self.posted - self.retired >= u64::from(self.max_send_wr) {
            return Err(TransportError::QueueFull {
                qpn,
                queue: "send",
                depth: self.max_send_wr,
            });
        }
        self.posted += 1;
        Ok(self.posted)
    }
}

/// Two hosts, 0 and 1, wired back to back.
#[derive(Debug)]
pub struct MemPair {
    /// The hosts, by index.
    pub hosts: [MemHost; 2],
    /// What [`Transport::now`] returns on both hosts; the caller moves it.
    pub now: Time,
    /// Swallow zero-length SENDs with immediate (the core's separate ACKs) from this host:
    /// they complete at the sender and never arrive.
    pub drop_acks_from: Option<usize>,
    /// Refuse registrations above this many bytes (as a NIC out of memory would).
    pub max_registration: Option<u64>,
    /// The length of every chain each host posted with `post_send_chain`, in order.
    pub chains: [Vec<usize>; 2],
    /// Whether [`LocalMemory::lend`] lends (off: it answers `None`, and the core copies). A
    /// lease here holds a copy of the bytes, so the core's books of lent buffers are tested;
    /// a WRITE into a range still lent is counted ([`MemPair::lease_violations`]), as on a
    /// device it would change bytes the application holds.
    pub lending: bool,
    leases: [Arc<Mutex<LeaseBook>>; 2],
    lease_violations: u64,
}

/// One host's lent ranges and the returns not yet polled.
#[derive(Debug, Default)]
struct LeaseBook {
    /// Lent ranges: address to length.
    lent: BTreeMap<u64, usize>,
    returned: VecDeque<u64>,
}

impl LeaseBook {
    fn overlaps(&self, addr: u64, len: usize) -> bool {
        let end = addr.saturating_add(len as u64);
        self.lent
            .range(..end)
            .next_back()
            .is_some_and(|(&a, &l)| a.saturating_add(l as u64) > addr)
    }
}

/// The owner of a lease's bytes: a copy, and the book its drop returns the range to.
struct MemLease {
    bytes: Vec<u8>,
    addr: u64,
    book: Arc<Mutex<LeaseBook>>,
}

impl AsRef<[u8]> for MemLease {
    fn as_ref(&self) -> &[u8] {
        &self.bytes
    }
}

impl Drop for MemLease {
    fn drop(&mut self) {
        let mut book = self.book.lock().unwrap_or_else(PoisonError::into_inner);
        book.lent.remove(&self.addr);
        book.returned.push_back(self.addr);
    }
}

/// MR `i` (from 1) of host `h` starts at `(h + 1) << HOST_SHIFT | i << MR_SHIFT`, so no two
/// MRs of the pair share an address.
const MR_SHIFT: u32 = 40;
const HOST_SHIFT: u32 = 56;

impl Default for MemPair {
    fn default() -> Self {
        MemPair::new()
    }
}

impl MemPair {
    /// Two hosts with no MRs or QPs, at time 0, dropping nothing.
    pub fn new() -> Self {
        MemPair {
            hosts: [MemHost::default(), MemHost::default()],
            now: Time::ZERO,
            drop_acks_from: None,
            max_registration: None,
            chains: Default::default(),
            lending: false,
            leases: Default::default(),
            lease_violations: 0,
        }
    }

    /// WRITEs that landed in a range lent out and not yet returned.
    pub fn lease_violations(&self) -> u64 {
        self.lease_violations
    }

    /// Ranges of host `h` lent out and not yet returned.
    pub fn leases_out(&self, h: usize) -> usize {
        self.leases[h]
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .lent
            .len()
    }

    /// The transport of host `h` (0 or 1).
    ///
    /// # Panics
    /// When `h` is not 0 or 1.
    pub fn side(&mut self, h: usize) -> MemTransport<'_> {
        assert!(h < 2, "the pair has hosts 0 and 1, not {h}");
        MemTransport { pair: self, h }
    }

    /// Post again, on every QP of host `h`, the receives consumed so far (a peer that only
    /// sends keeps room for the other side's ACKs).
    pub fn repost_all(&mut self, h: usize) {
        for qp in &mut self.hosts[h].qps {
            if let Some(first) = qp.recvs.front().copied() {
                while qp.recvs.len() < 256 {
                    qp.recvs.push_back(first);
                }
            }
        }
    }

    /// Completions or congestion notifications are waiting on some host.
    pub fn busy(&self) -> bool {
        self.hosts
            .iter()
            .any(|h| !h.cq.is_empty() || !h.congestion.is_empty())
    }

    /// Report a congestion notification for QP `qpn` of host `h` at its next
    /// [`Transport::poll_congestion`].
    pub fn notify_congestion(&mut self, h: usize, qpn: QpNum) {
        self.hosts[h].congestion.push_back(qpn);
    }
}

impl MemHost {
    /// Forget the completions waiting on this host's CQ (as if polled: their send-queue slots
    /// are freed).
    pub fn discard_completions(&mut self) {
        while let Some(c) = self.cq.pop_front() {
            self.retire(&c);
        }
    }

    /// Send-queue slots in use on QP `qpn`: WRs posted whose slot no polled completion has
    /// freed yet (`None` for an unknown QP).
    pub fn send_slots_used(&self, qpn: QpNum) -> Option<u64> {
        self.qps.get(qpn as usize).map(|q| q.posted - q.retired)
    }

    /// Polling `c` frees its WR's slot and those of the unsignaled WRs before it.
    fn retire(&mut self, c: &Cqe) {
        if let Some((qpn, epoch, upto)) = c.retires {
            if let Some(q) = self.qps.get_mut(qpn as usize) {
                if q.epoch == epoch {
                    q.retired = q.retired.max(upto);
                }
            }
        }
    }

    /// Queue the completion of send WR number `n` of QP `qpn`.
    fn push_send_wc(&mut self, qpn: QpNum, n: u64, wc: WorkCompletion) {
        let epoch = self.qps[qpn as usize].epoch;
        self.cq.push_back(Cqe {
            wc,
            retires: Some((qpn, epoch, n)),
        });
    }

    /// The MR index and offset of `addr..addr + len` on host `h`, when the range lies
    /// inside one MR (and, for `key` other than `None`, one with that key).
    fn locate(&self, h: usize, addr: u64, len: u64, key: Option<u32>) -> Option<(usize, usize)> {
        if addr >> HOST_SHIFT != h as u64 + 1 {
            return None;
        }
        let i = usize::try_from((addr >> MR_SHIFT) & ((1 << (HOST_SHIFT - MR_SHIFT)) - 1))
            .ok()?
            .checked_sub(1)?;
        let off = addr & ((1 << MR_SHIFT) - 1);
        let mr = self.mrs.get(i)?;
        if off.checked_add(len)? > mr.len() as u64 || key.is_some_and(|k| k != i as u32 + 1) {
            return None;
        }
        Some((i, off as usize))
    }

    fn bytes(&self, (i, off): (usize, usize), len: usize) -> &[u8] {
        &self.mrs[i][off..off + len]
    }

    fn bytes_mut(&mut self, (i, off): (usize, usize), len: usize) -> &mut [u8] {
        &mut self.mrs[i][off..off + len]
    }

    fn qp(&mut self, qpn: QpNum) -> Result<&mut Qp, TransportError> {
        self.qps
            .get_mut(qpn as usize)
            .ok_or(TransportError::NoSuchQp(qpn))
    }

    /// Put `qpn` in error: every posted receive flushed.
    fn qp_error(&mut self, qpn: QpNum) {
        let qp = &mut self.qps[qpn as usize];
        qp.error = true;
        for r in std::mem::take(&mut qp.recvs) {
            self.cq.push_back(Cqe::recv(WorkCompletion::flushed(
                r.wr_id,
                WcOpcode::Recv,
                qpn,
            )));
        }
    }

    /// `wr`, send WR number `n` of `qpn`, failed with `status`: its completion, then the QP
    /// in error.
    fn fail(&mut self, qpn: QpNum, n: u64, wr: &SendWr, status: WcStatus) {
        let wc = WorkCompletion {
            status,
            ..WorkCompletion::flushed(wr.wr_id, wc_opcode(wr.opcode), qpn)
        };
        self.push_send_wc(qpn, n, wc);
        self.qp_error(qpn);
    }
}

/// The completion opcode of a send WR (`ibv_wc_opcode` of its send-side completion).
fn wc_opcode(op: SendOpcode) -> WcOpcode {
    match op {
        SendOpcode::Send | SendOpcode::SendWithImm => WcOpcode::Send,
        SendOpcode::RdmaWrite | SendOpcode::RdmaWriteWithImm => WcOpcode::RdmaWrite,
        SendOpcode::RdmaRead => WcOpcode::RdmaRead,
    }
}

/// One host of a [`MemPair`], as a [`Transport`].
#[derive(Debug)]
pub struct MemTransport<'a> {
    pair: &'a mut MemPair,
    h: usize,
}

impl MemTransport<'_> {
    fn host(&mut self) -> &mut MemHost {
        &mut self.pair.hosts[self.h]
    }

    fn check_sge(&self, s: &Sge) -> Result<(), TransportError> {
        let host = &self.pair.hosts[self.h];
        if s.len == 0
            || host
                .locate(self.h, s.addr, s.len.into(), Some(s.lkey))
                .is_some()
        {
            Ok(())
        } else {
            Err(TransportError::BadAddress {
                addr: s.addr,
                len: s.len.into(),
                key: s.lkey,
            })
        }
    }

    /// Carry out `wr`, send WR number `n` of `qpn` (accepted on a connected QP not in error),
    /// against the peer's QP `rq`.
    fn execute(&mut self, qpn: QpNum, n: u64, rq: QpNum, wr: &SendWr) {
        let (h, peer) = (self.h, 1 - self.h);
        let len = wr.sge.len as usize;
        let local = self.pair.hosts[h].locate(h, wr.sge.addr, len as u64, None);
        let data = local.map_or_else(Vec::new, |at| self.pair.hosts[h].bytes(at, len).to_vec());
        let one_sided = matches!(wr.opcode, SendOpcode::RdmaWrite | SendOpcode::RdmaRead);
        let dropped = wr.opcode == SendOpcode::SendWithImm
            && data.is_empty()
            && self.pair.drop_acks_from == Some(h);
        if matches!(
            wr.opcode,
            SendOpcode::RdmaWrite | SendOpcode::RdmaWriteWithImm
        ) && self.pair.leases[peer]
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .overlaps(wr.remote_addr, len)
        {
            self.pair.lease_violations += 1;
        }
        let [a, b] = &mut self.pair.hosts;
        let (me, them) = if h == 0 { (a, b) } else { (b, a) };
        if !one_sided && !dropped && them.qps[rq as usize].recvs.is_empty() {
            me.fail(qpn, n, wr, WcStatus::RnrRetryExcErr);
            return;
        }
        let remote = if matches!(wr.opcode, SendOpcode::Send | SendOpcode::SendWithImm) || len == 0
        {
            None
        } else {
            match them.locate(peer, wr.remote_addr, len as u64, Some(wr.rkey)) {
                Some(at) => Some(at),
                None => {
                    me.fail(qpn, n, wr, WcStatus::RemAccessErr);
                    them.qp_error(rq);
                    return;
                }
            }
        };
        match wr.opcode {
            SendOpcode::RdmaRead => {
                if let (Some(from), Some(to)) = (remote, local) {
                    let bytes = them.bytes(from, len).to_vec();
                    me.bytes_mut(to, len).copy_from_slice(&bytes);
                }
            }
            SendOpcode::RdmaWrite | SendOpcode::RdmaWriteWithImm => {
                if let Some(to) = remote {
                    them.bytes_mut(to, len).copy_from_slice(&data);
                }
            }
            SendOpcode::Send | SendOpcode::SendWithImm => {}
        }
        if !one_sided && !dropped {
            let Some(recv) = them.qps[rq as usize].recvs.pop_front() else {
                unreachable!("a receive was checked for above")
            };
            let write = wr.opcode == SendOpcode::RdmaWriteWithImm;
            if !write && len > recv.sge.len as usize {
                them.cq.push_back(Cqe::recv(WorkCompletion {
                    status: WcStatus::LocLenErr,
                    ..WorkCompletion::flushed(recv.wr_id, WcOpcode::Recv, rq)
                }));
                them.qp_error(rq);
                me.fail(qpn, n, wr, WcStatus::GeneralErr);
                return;
            }
            if !write && len > 0 {
                let Some(to) = them.locate(peer, recv.sge.addr, len as u64, None) else {
                    unreachable!("post_recv checked the receive's SGE")
                };
                them.bytes_mut(to, len).copy_from_slice(&data);
            }
            let with_imm = matches!(
                wr.opcode,
                SendOpcode::SendWithImm | SendOpcode::RdmaWriteWithImm
            );
            them.cq.push_back(Cqe::recv(WorkCompletion {
                wr_id: recv.wr_id,
                status: WcStatus::Success,
                opcode: if write {
                    WcOpcode::RecvRdmaWithImm
                } else {
                    WcOpcode::Recv
                },
                qp_num: rq,
                byte_len: len as u32,
                imm: with_imm.then_some(wr.imm),
            }));
        }
        if wr.signaled {
            let wc = WorkCompletion {
                wr_id: wr.wr_id,
                status: WcStatus::Success,
                opcode: wc_opcode(wr.opcode),
                qp_num: qpn,
                byte_len: len as u32,
                imm: None,
            };
            me.push_send_wc(qpn, n, wc);
        }
    }
}

/// `read_bytes` goes through `read_into` ([`xrdma::read_bytes_through`]), so the core's tests
/// run that path.
impl LocalMemory for MemTransport<'_> {
    fn read_into(&self, addr: u64, out: &mut [u8]) -> Result<(), TransportError> {
        let host = &self.pair.hosts[self.h];
        let at = host.locate(self.h, addr, out.len() as u64, None).ok_or(
            TransportError::BadAddress {
                addr,
                len: out.len() as u64,
                key: 0,
            },
        )?;
        out.copy_from_slice(host.bytes(at, out.len()));
        Ok(())
    }

    fn read_bytes(&self, addr: u64, len: usize) -> Result<Bytes, TransportError> {
        xrdma::read_bytes_through(self, addr, len)
    }

    /// A copy, kept in the books as lent until dropped, when [`MemPair::lending`] is on.
    fn lend(&mut self, addr: u64, len: usize) -> Option<Bytes> {
        if !self.pair.lending {
            return None;
        }
        let bytes = self.read_bytes(addr, len).ok()?.to_vec();
        let book = Arc::clone(&self.pair.leases[self.h]);
        book.lock()
            .unwrap_or_else(PoisonError::into_inner)
            .lent
            .insert(addr, len);
        Some(Bytes::from_owner(MemLease { bytes, addr, book }))
    }

    /// Never: this memory is not addressed by pointer.
    fn registered_lkey(&self, _data: &[u8]) -> Option<u32> {
        None
    }

    /// Never, as for `registered_lkey`.
    fn send_buffer(&mut self, _len: usize) -> Option<SendBuffer> {
        None
    }

    fn poll_returned(&mut self) -> Option<u64> {
        if !self.pair.lending {
            return None;
        }
        self.pair.leases[self.h]
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .returned
            .pop_front()
    }

    fn write(&mut self, addr: u64, parts: &[&[u8]]) -> Result<(), TransportError> {
        let (h, len) = (self.h, xrdma::gather_len(parts));
        let (i, mut off) = self.pair.hosts[h]
            .locate(h, addr, len, None)
            .ok_or(TransportError::BadAddress { addr, len, key: 0 })?;
        for p in parts {
            self.host().bytes_mut((i, off), p.len()).copy_from_slice(p);
            off += p.len();
        }
        Ok(())
    }
}

impl Transport for MemTransport<'_> {
    fn now(&self) -> Time {
        self.pair.now
    }

    fn register_memory(&mut self, len: u64) -> Result<MemoryRegion, TransportError> {
        let refuse = |reason: &str| TransportError::RegistrationFailed {
            len,
            reason: reason.into(),
        };
        if self.pair.max_registration.is_some_and(|m| len > m) {
            return Err(refuse("more than the host can register"));
        }
        let h = self.h as u64;
        let host = self.host();
        if len > 1 << MR_SHIFT || host.mrs.len() + 1 >= 1 << (HOST_SHIFT - MR_SHIFT) {
            return Err(refuse("more than the in-memory address layout holds"));
        }
        host.mrs.push(vec![0; len as usize]);
        let i = host.mrs.len() as u64;
        Ok(MemoryRegion {
            addr: ((h + 1) << HOST_SHIFT) | (i << MR_SHIFT),
            len,
            lkey: i as u32,
            rkey: i as u32,
        })
    }

    fn create_qp(&mut self, caps: QpCaps) -> Result<QpAddress, TransportError> {
        let lid = self.h as u32;
        let host = self.host();
        host.qps.push(Qp {
            max_send_wr: caps.max_send_wr,
            ..Qp::default()
        });
        Ok(QpAddress {
            gid: [0; 16],
            lid,
            qpn: host.qps.len() as u32 - 1,
            psn: 0,
        })
    }

    fn connect_qp(&mut self, qpn: QpNum, remote: &QpAddress) -> Result<(), TransportError> {
        self.host().qp(qpn)?.remote = Some(remote.qpn);
        Ok(())
    }

    fn reset_qp(&mut self, qpn: QpNum) -> Result<QpAddress, TransportError> {
        let lid = self.h as u32;
        let qp = self.host().qp(qpn)?;
        qp.recvs.clear();
        qp.remote = None;
        qp.error = false;
        // RESET discards the outstanding WRs: every slot is free.
        qp.posted = 0;
        qp.retired = 0;
        qp.epoch = qp.epoch.wrapping_add(1);
        Ok(QpAddress {
            gid: [0; 16],
            lid,
            qpn,
            psn: 0,
        })
    }

    fn post_send(&mut self, qpn: QpNum, wr: &SendWr) -> Result<(), TransportError> {
        let qp = self.host().qp(qpn)?;
        let (remote, error) = (qp.remote, qp.error);
        let rq = remote.ok_or(TransportError::BadQpState {
            qpn,
            state: "INIT",
            op: "post_send",
        })?;
        self.check_sge(&wr.sge)?;
        let n = self.host().qp(qpn)?.take_slot(qpn)?;
        if error {
            let wc = WorkCompletion::flushed(wr.wr_id, wc_opcode(wr.opcode), qpn);
            self.host().push_send_wc(qpn, n, wc);
            return Ok(());
        }
        let peer_qp = self.pair.hosts[1 - self.h].qps.get(rq as usize);
        if !peer_qp.is_some_and(|q| q.remote == Some(qpn) && !q.error) {
            self.host().fail(qpn, n, wr, WcStatus::RetryExcErr);
            return Ok(());
        }
        self.execute(qpn, n, rq, wr);
        Ok(())
    }

    fn post_recv(&mut self, qpn: QpNum, wr: &RecvWr) -> Result<(), TransportError> {
        self.host().qp(qpn)?;
        self.check_sge(&wr.sge)?;
        let host = self.host();
        if host.qps[qpn as usize].error {
            host.cq.push_back(Cqe::recv(WorkCompletion::flushed(
                wr.wr_id,
                WcOpcode::Recv,
                qpn,
            )));
        } else {
            host.qps[qpn as usize].recvs.push_back(*wr);
        }
        Ok(())
    }

    /// Polling a send completion frees the slots of its WR and the unsignaled ones before it.
    fn poll_cq(&mut self, out: &mut Vec<WorkCompletion>, max: usize) -> usize {
        let host = self.host();
        let n = host.cq.len().min(max);
        for _ in 0..n {
            if let Some(c) = host.cq.pop_front() {
                host.retire(&c);
                out.push(c.wc);
            }
        }
        n
    }

    fn poll_congestion(&mut self) -> Option<QpNum> {
        self.host().congestion.pop_front()
    }

    /// Records the chain's length, then posts its WRs one by one.
    fn post_send_chain(&mut self, qpn: QpNum, wrs: &[SendWr]) -> Result<(), ChainError> {
        self.pair.chains[self.h].push(wrs.len());
        for (posted, wr) in wrs.iter().enumerate() {
            self.post_send(qpn, wr)
                .map_err(|error| ChainError { posted, error })?;
        }
        Ok(())
    }

    /// The defaults: WRs complete at once, so no timer or MTU is modelled.
    fn rc_params(&self) -> RcParams {
        RcParams::default()
    }

    /// No port-level CNP count: congestion is reported per QP.
    fn poll_port_cnps(&mut self, _now: Time) -> u64 {
        0
    }

    /// Congestion notifications come from the pair's `congestion` queues; no network is
    /// modelled.
    fn capabilities(&self) -> Capabilities {
        let mut c = Capabilities::NONE;
        c.cnp_per_qp = true;
        c
    }

    /// Nothing: the in-memory QPs keep no state or counters worth reporting.
    fn observe_qp(&self, _qpn: QpNum) -> QpObservation {
        QpObservation::default()
    }
}
