//! A two-host in-memory transport for core tests: every WR completes instantly and in order,
//! with real bytes copied between registered memory (WRITEs to their remote address, SENDs into
//! the receive buffer of the oldest posted receive). Knobs drop traffic to test timeouts.
//!
//! A SEND or WRITE with immediate that finds no receive posted completes with
//! `RnrRetryExcErr`, and one to a QP that is not connected back to the sender (reset, or in
//! error) with `RetryExcErr`, as a NIC reports once its retries are spent. Either puts the
//! sender's QP in error: its posted receives and every later WR complete with `WrFlushErr`
//! until the QP is reset.

#![allow(dead_code)]

use std::collections::VecDeque;
use xrdma::driver::Application;
use xrdma::*;

/// An application that only records every event it is told, in order.
#[derive(Default)]
pub struct Recorder {
    pub events: Vec<Event>,
}

impl Application for Recorder {
    fn on_event(&mut self, _now: Time, _ep: &mut Endpoint, event: Event) {
        self.events.push(event);
    }
    fn on_turn(&mut self, _now: Time, _ep: &mut Endpoint) {}
    fn next_wake(&self) -> Option<Time> {
        None
    }
}

#[derive(Default)]
pub struct Host {
    mrs: Vec<Vec<u8>>,
    qps: Vec<Qp>,
    cq: VecDeque<WorkCompletion>,
    congestion: VecDeque<QpNum>,
}

#[derive(Default)]
struct Qp {
    remote: Option<QpNum>,
    recvs: VecDeque<RecvWr>,
    error: bool,
}

impl Host {
    /// Put `qpn` in error after a WR completed with `status`: the WR's own completion, then
    /// every posted receive flushed.
    fn qp_error(&mut self, qpn: QpNum, wr: &SendWr, status: WcStatus) {
        let opcode = if wr.opcode == SendOpcode::SendWithImm {
            WcOpcode::Send
        } else {
            WcOpcode::RdmaWrite
        };
        self.cq.push_back(WorkCompletion {
            status,
            ..WorkCompletion::flushed(wr.wr_id, opcode, qpn)
        });
        let qp = &mut self.qps[qpn as usize];
        qp.error = true;
        for r in std::mem::take(&mut qp.recvs) {
            self.cq
                .push_back(WorkCompletion::flushed(r.wr_id, WcOpcode::Recv, qpn));
        }
    }
}

/// Two hosts, 0 and 1, wired back to back.
pub struct Pair {
    pub hosts: [Host; 2],
    pub now: Time,
    /// Swallow zero-length SENDs (the separate ACKs) from this host.
    pub drop_acks_from: Option<usize>,
    /// Refuse registrations above this many bytes (as a NIC out of memory would).
    pub max_registration: Option<u64>,
    /// The length of every chain each host posted with `post_send_chain`, in order.
    pub chains: [Vec<usize>; 2],
}

const MR_SHIFT: u32 = 40;

impl Pair {
    pub fn new() -> Self {
        Pair {
            hosts: [Host::default(), Host::default()],
            now: Time::ZERO,
            drop_acks_from: None,
            max_registration: None,
            chains: Default::default(),
        }
    }

    pub fn side(&mut self, h: usize) -> Side<'_> {
        Side { pair: self, h }
    }
}

pub struct Side<'a> {
    pair: &'a mut Pair,
    h: usize,
}

fn locate(addr: u64) -> (usize, usize) {
    (
        ((addr >> MR_SHIFT) - 1) as usize,
        (addr & ((1 << MR_SHIFT) - 1)) as usize,
    )
}

impl Host {
    /// The bytes `addr..addr + len` of one MR, or `BadAddress`.
    fn range(&self, addr: u64, len: usize) -> Result<&[u8], TransportError> {
        let bad = TransportError::BadAddress {
            addr,
            len: len as u64,
            key: 0,
        };
        let m = usize::try_from(addr >> MR_SHIFT)
            .ok()
            .and_then(|i| i.checked_sub(1))
            .ok_or(bad.clone())?;
        let o = (addr & ((1 << MR_SHIFT) - 1)) as usize;
        self.mrs
            .get(m)
            .and_then(|mr| mr.get(o..o.checked_add(len)?))
            .ok_or(bad)
    }
}

/// Only the required methods: the core tests run the provided `read_bytes`.
impl LocalMemory for Side<'_> {
    fn read_into(&self, addr: u64, out: &mut [u8]) -> Result<(), TransportError> {
        out.copy_from_slice(self.pair.hosts[self.h].range(addr, out.len())?);
        Ok(())
    }
    fn write(&mut self, addr: u64, data: &[u8]) -> Result<(), TransportError> {
        self.pair.hosts[self.h].range(addr, data.len())?;
        let (m, o) = locate(addr);
        self.pair.hosts[self.h].mrs[m][o..o + data.len()].copy_from_slice(data);
        Ok(())
    }
}

impl Transport for Side<'_> {
    fn now(&self) -> Time {
        self.pair.now
    }
    fn register_memory(&mut self, len: u64) -> Result<MemoryRegion, TransportError> {
        if self.pair.max_registration.is_some_and(|m| len > m) {
            return Err(TransportError::RegistrationFailed {
                len,
                reason: "more than the host can register".into(),
            });
        }
        let host = &mut self.pair.hosts[self.h];
        host.mrs.push(vec![0; len as usize]);
        let i = host.mrs.len() as u64;
        Ok(MemoryRegion {
            addr: i << MR_SHIFT,
            len,
            lkey: i as u32,
            rkey: i as u32,
        })
    }
    fn create_qp(&mut self, _caps: QpCaps) -> Result<QpAddress, TransportError> {
        let host = &mut self.pair.hosts[self.h];
        host.qps.push(Qp::default());
        Ok(QpAddress {
            gid: [0; 16],
            lid: self.h as u32,
            qpn: host.qps.len() as u32 - 1,
            psn: 0,
        })
    }
    fn connect_qp(&mut self, qpn: QpNum, remote: &QpAddress) -> Result<(), TransportError> {
        self.pair.hosts[self.h].qps[qpn as usize].remote = Some(remote.qpn);
        Ok(())
    }
    fn reset_qp(&mut self, qpn: QpNum) -> Result<QpAddress, TransportError> {
        let qp = &mut self.pair.hosts[self.h].qps[qpn as usize];
        qp.recvs.clear();
        qp.remote = None;
        qp.error = false;
        Ok(QpAddress {
            gid: [0; 16],
            lid: self.h as u32,
            qpn,
            psn: 0,
        })
    }
    fn post_send(&mut self, qpn: QpNum, wr: &SendWr) -> Result<(), TransportError> {
        let peer = 1 - self.h;
        let rq =
            self.pair.hosts[self.h].qps[qpn as usize]
                .remote
                .ok_or(TransportError::BadQpState {
                    qpn,
                    state: "INIT",
                    op: "post_send",
                })?;
        let data = self.pair.hosts[self.h]
            .range(wr.sge.addr, wr.sge.len as usize)?
            .to_vec();
        if self.pair.hosts[self.h].qps[qpn as usize].error {
            // Flushed, signaled or not: error completions are always reported.
            let opcode = if wr.opcode == SendOpcode::SendWithImm {
                WcOpcode::Send
            } else {
                WcOpcode::RdmaWrite
            };
            self.pair.hosts[self.h]
                .cq
                .push_back(WorkCompletion::flushed(wr.wr_id, opcode, qpn));
            return Ok(());
        }
        let peer_qp = &self.pair.hosts[peer].qps[rq as usize];
        if peer_qp.remote != Some(qpn) || peer_qp.error {
            self.pair.hosts[self.h].qp_error(qpn, wr, WcStatus::RetryExcErr);
            return Ok(());
        }
        if peer_qp.recvs.is_empty()
            && !(data.is_empty() && self.pair.drop_acks_from == Some(self.h))
        {
            self.pair.hosts[self.h].qp_error(qpn, wr, WcStatus::RnrRetryExcErr);
            return Ok(());
        }
        let dropped = wr.opcode == SendOpcode::SendWithImm
            && data.is_empty()
            && self.pair.drop_acks_from == Some(self.h);
        if !dropped {
            if wr.opcode == SendOpcode::RdmaWriteWithImm {
                let (m, o) = locate(wr.remote_addr);
                self.pair.hosts[peer].mrs[m][o..o + data.len()].copy_from_slice(&data);
            }
            let recv = self.pair.hosts[peer].qps[rq as usize].recvs.pop_front();
            let Some(recv) = recv else {
                unreachable!("checked above")
            };
            if wr.opcode != SendOpcode::RdmaWriteWithImm && !data.is_empty() {
                assert!(
                    data.len() <= recv.sge.len as usize,
                    "a {}-byte SEND into a {}-byte receive buffer",
                    data.len(),
                    recv.sge.len
                );
                let (m, o) = locate(recv.sge.addr);
                self.pair.hosts[peer].mrs[m][o..o + data.len()].copy_from_slice(&data);
            }
            let opcode = if wr.opcode == SendOpcode::RdmaWriteWithImm {
                WcOpcode::RecvRdmaWithImm
            } else {
                WcOpcode::Recv
            };
            self.pair.hosts[peer].cq.push_back(WorkCompletion {
                wr_id: recv.wr_id,
                status: WcStatus::Success,
                opcode,
                qp_num: rq,
                byte_len: data.len() as u32,
                imm: Some(wr.imm),
            });
        }
        if wr.signaled {
            let opcode = if wr.opcode == SendOpcode::SendWithImm {
                WcOpcode::Send
            } else {
                WcOpcode::RdmaWrite
            };
            self.pair.hosts[self.h].cq.push_back(WorkCompletion {
                wr_id: wr.wr_id,
                status: WcStatus::Success,
                opcode,
                qp_num: qpn,
                byte_len: data.len() as u32,
                imm: None,
            });
        }
        Ok(())
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
    fn post_recv(&mut self, qpn: QpNum, wr: &RecvWr) -> Result<(), TransportError> {
        let host = &mut self.pair.hosts[self.h];
        if host.qps[qpn as usize].error {
            host.cq
                .push_back(WorkCompletion::flushed(wr.wr_id, WcOpcode::Recv, qpn));
        } else {
            host.qps[qpn as usize].recvs.push_back(*wr);
        }
        Ok(())
    }
    fn poll_cq(&mut self, out: &mut Vec<WorkCompletion>, max: usize) -> usize {
        let cq = &mut self.pair.hosts[self.h].cq;
        let n = cq.len().min(max);
        out.extend(cq.drain(..n));
        n
    }
    fn poll_congestion(&mut self) -> Option<QpNum> {
        self.pair.hosts[self.h].congestion.pop_front()
    }
    /// The defaults: WRs complete at once, so no timer or MTU is modelled.
    fn rc_params(&self) -> RcParams {
        RcParams::default()
    }
    /// Congestion notifications come from [`Pair::notify_congestion`]; no network is modelled.
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            cnp_per_qp: true,
            ..Capabilities::NONE
        }
    }
}

impl Host {
    /// Forget the completions waiting on this host's CQ.
    pub fn discard_completions(&mut self) {
        self.cq.clear();
    }
}

impl Pair {
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

    pub fn notify_congestion(&mut self, h: usize, qpn: QpNum) {
        self.hosts[h].congestion.push_back(qpn);
    }
}
