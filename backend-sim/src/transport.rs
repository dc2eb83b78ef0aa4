//! [`HostTransport`]: the verbs interface of one simulated host.

use crate::nic::{flush_wc, initial_psn, packets_for, Qp, QpState, QPN_BASE};
use crate::packet::psn_add;
use crate::{HostId, Simulation};
use bytes::Bytes;
use xrdma::{
    Capabilities, ChainError, LocalMemory, MemoryRegion, QpAddress, QpCaps, QpNum, RcParams,
    RecvWr, SendOpcode, SendWr, Span, Time, Transport, TransportError, WcOpcode, WcStatus,
    WorkCompletion,
};

/// Largest number of QPs per host (QPNs are 24 bits).
const MAX_QPS: usize = (1 << 24) - QPN_BASE as usize;

/// Whether the NIC reads WR `wr`'s payload from host memory (the host model's
/// `payload-read`) on a QP created with `max_inline_data` bytes inline: not for a READ (its
/// request carries no local payload) or an empty WR, nor for a payload of at most
/// `max_inline_data` bytes, which the verbs backend posts inline (`IBV_SEND_INLINE`, the same
/// rule: the NIC takes the bytes from the WQE).
pub(crate) fn reads_payload(wr: &SendWr, max_inline_data: u32) -> bool {
    wr.opcode != SendOpcode::RdmaRead && wr.sge.len > max_inline_data
}

/// The [`Transport`] of host `host` in a [`Simulation`], borrowed from
/// [`Simulation::transport`]. Verbs calls act at the simulation's current time; posting a send
/// starts the NIC at `now()` if its link is idle. With a host model ([`crate::SimConfig::host`])
/// a call inside a driver turn ([`HostTransport::begin_turn`]) starts at the host's CPU clock
/// and advances it by its cost, the NIC starts a posted WR only after its WQE fetch and payload
/// read, and `poll_cq` returns only the completions visible when it is called.
#[derive(Debug)]
pub struct HostTransport<'a> {
    sim: &'a mut Simulation,
    host: HostId,
}

/// The address of QP `qpn` (first PSN `psn`) on `host`: `lid` = host index, `gid` = zeros
/// with the host index big-endian in the last four bytes.
fn address(host: HostId, qpn: QpNum, psn: u32) -> QpAddress {
    let mut gid = [0u8; 16];
    gid[12..].copy_from_slice(&host.to_be_bytes());
    QpAddress {
        gid,
        lid: host,
        qpn,
        psn,
    }
}

impl<'a> HostTransport<'a> {
    pub(crate) fn new(sim: &'a mut Simulation, host: HostId) -> Self {
        HostTransport { sim, host }
    }

    /// The host this transport belongs to.
    pub fn host(&self) -> HostId {
        self.host
    }

    fn check_host(&self) -> Result<usize, TransportError> {
        let h = self.host as usize;
        if h < self.sim.hosts.len() {
            Ok(h)
        } else {
            Err(TransportError::Unreachable(format!(
                "host {} does not exist",
                self.host
            )))
        }
    }

    /// Whether the simulation's host model costs anything ([`crate::HostModel::is_ideal`] is
    /// false): then [`HostTransport::begin_turn`], [`HostTransport::app_messages`] and the
    /// calls charge time; otherwise all of them are free and schedule nothing.
    pub fn charges(&self) -> bool {
        self.sim.host_on
    }

    /// A driver turn of this host starts now: with the host model, the CPU is charged the
    /// turn's fixed cost and, until [`HostTransport::end_turn`], every call's cost (calls
    /// outside a turn, such as connection setup, cost no CPU time). Nothing with the ideal
    /// model.
    pub fn begin_turn(&mut self) {
        if self.sim.host_on && self.check_host().is_ok() {
            self.sim.begin_turn(self.host);
        }
    }

    /// The driver turn begun by [`HostTransport::begin_turn`] is over.
    pub fn end_turn(&mut self) {
        if self.sim.host_on && self.check_host().is_ok() {
            self.sim.end_turn(self.host);
        }
    }

    /// The application handled `delivered` messages delivered to it and sent `sent` messages
    /// since the last report: with the host model, inside a turn, the CPU is charged
    /// `delivered × app-recv-message + sent × app-send-message` before the next call.
    pub fn app_messages(&mut self, delivered: u64, sent: u64) {
        if self.sim.host_on && self.check_host().is_ok() {
            let cost = self.sim.cfg.host.app_cost(delivered, sent);
            self.sim.charge_cpu(self.host, cost);
        }
    }

    /// When this host's CPU is free: the end of its last charged call, or now if that is past
    /// (always now with the ideal model). A call made now starts then.
    pub fn cpu_time(&self) -> Time {
        match self.check_host() {
            Ok(_) => self.sim.cpu_start(self.host),
            Err(_) => self.sim.now,
        }
    }

    /// The host model's doorbell for the last `posted` WRs queued on QP `qi` of host `h`: the
    /// CPU pays `posted × post-send-wr + doorbell`; the NIC has each WQE `wqe-fetch` after the
    /// doorbell is written, and its payload `payload-read` later when it reads one from host
    /// memory ([`reads_payload`]).
    #[inline(never)]
    fn doorbell(&mut self, h: usize, qi: usize, posted: usize) {
        let m = &self.sim.cfg.host;
        let (cost, fetch, read) = (m.post_send_cost(posted as u64), m.wqe_fetch, m.payload_read);
        let rung = self.sim.charge_cpu(self.host, cost);
        let qp = &mut self.sim.hosts[h].qps[qi];
        let inline = qp.caps.max_inline_data;
        for w in qp.requester.sq.iter_mut().rev().take(posted) {
            let read = if reads_payload(&w.wr, inline) {
                read
            } else {
                Span::ZERO
            };
            w.ready_at = rung + fetch + read;
        }
    }

    fn qp_index(&self, qpn: QpNum) -> Result<(usize, usize), TransportError> {
        let h = self.check_host()?;
        let qi = self.sim.hosts[h]
            .qp_index(qpn)
            .ok_or(TransportError::NoSuchQp(qpn))?;
        Ok((h, qi))
    }

    /// A WR posted to a QP in ERR completes at once: generated when the posting call runs.
    fn flush(&mut self, wc: WorkCompletion) {
        let at = self.sim.cpu_start(self.host);
        self.sim.push_wc_from(self.host, wc, at);
    }

    /// Check one send WR and put it on its QP's send queue, without ringing the NIC; on a QP
    /// in ERR it completes at once with `WrFlushErr`, signaled or not.
    fn queue_send(&mut self, qpn: QpNum, wr: &SendWr) -> Result<(), TransportError> {
        let (h, qi) = self.qp_index(qpn)?;
        let mtu = self.sim.cfg.path_mtu();
        let host = &mut self.sim.hosts[h];
        let qp = &host.qps[qi];
        match qp.state {
            QpState::Rts => {}
            QpState::Err => {
                let op = match wr.opcode {
                    xrdma::SendOpcode::Send | xrdma::SendOpcode::SendWithImm => WcOpcode::Send,
                    xrdma::SendOpcode::RdmaRead => WcOpcode::RdmaRead,
                    _ => WcOpcode::RdmaWrite,
                };
                self.flush(flush_wc(wr.wr_id, WcStatus::WrFlushErr, op, qpn));
                return Ok(());
            }
            s => {
                return Err(TransportError::BadQpState {
                    qpn,
                    state: s.name(),
                    op: "post_send",
                })
            }
        }
        if qp.requester.sq.len() >= qp.caps.max_send_wr as usize {
            return Err(TransportError::QueueFull {
                qpn,
                queue: "send",
                depth: qp.caps.max_send_wr,
            });
        }
        let s = wr.sge;
        check_sge(&host.mem, &s)?;
        let qp = &mut host.qps[qi];
        let npkts = packets_for(s.len, mtu);
        let first_psn = qp.requester.sq_psn;
        qp.requester.sq_psn = psn_add(first_psn, npkts);
        qp.requester.sq.push_back(crate::nic::Wqe {
            wr: *wr,
            first_psn,
            npkts,
            resp_got: 0,
            ready_at: Time::ZERO,
        });
        Ok(())
    }
}

/// The host's kernel TCP sockets (see `crate::tcp`): made in pairs by
/// [`crate::Simulation::tcp_connect`], each side used only from its own host.
impl HostTransport<'_> {
    /// Write as much of `parts`, in order, to socket `sock` as its send buffer takes, in one
    /// call (`writev`); returns the bytes taken (0 for a socket of another host, or a full
    /// buffer). With the host model the call costs `tcp-write-call` and the copy.
    pub fn tcp_write(&mut self, sock: u32, parts: &[&[u8]]) -> usize {
        self.sim.tcp_write(self.host, sock, parts)
    }

    /// Append every in-order byte that arrived on socket `sock` to `out`; returns how many.
    pub fn tcp_read(&mut self, sock: u32, out: &mut Vec<u8>) -> usize {
        self.sim.tcp_read(self.host, sock, out)
    }

    /// Bytes written to `sock` that its peer has not ACKed yet (Linux `SIOCOUTQ`).
    pub fn tcp_unacked(&self, sock: u32) -> u64 {
        self.sim.tcp_unacked(self.host, sock)
    }

    /// Move the host's sockets with news (bytes to read, room freed in a send buffer a write
    /// found full) since the last call
    /// into `out`, each once.
    pub fn tcp_poll_ready(&mut self, out: &mut Vec<u32>) {
        self.sim.tcp_poll_ready(self.host, out);
    }

    /// Register `data`, the application's own immutable memory, for this host's NIC to read
    /// in place, as `ibv_reg_mr` registers a process's buffer: a large message sliced from
    /// it is then sent with no staging copy ([`LocalMemory::registered_lkey`]), and what it
    /// writes into a peer's memory is held there by reference, not copied, until overwritten
    /// (a receiver reading it back gets a slice of `data`). Local reads only; the simulation
    /// keeps `data` alive. Registering the same buffer again returns the same region.
    ///
    /// # Errors
    /// [`TransportError::Unreachable`] for a host index `≥ hosts`;
    /// [`TransportError::RegistrationFailed`] past 65 536 registrations on one host.
    pub fn register_external(&mut self, data: Bytes) -> Result<MemoryRegion, TransportError> {
        let h = self.check_host()?;
        self.sim.hosts[h].mem.register_external(data)
    }
}

impl LocalMemory for HostTransport<'_> {
    fn read_into(&self, addr: u64, out: &mut [u8]) -> Result<(), TransportError> {
        let h = self.check_host()?;
        out.copy_from_slice(&self.sim.hosts[h].mem.read(addr, out.len())?);
        Ok(())
    }

    /// The bytes shared with no copy where one buffer holds them (application memory
    /// registered in place, and what a DMA from it left), else one copy from the host's
    /// memory into the new buffer (no zeroing first).
    fn read_bytes(&self, addr: u64, len: usize) -> Result<Bytes, TransportError> {
        let h = self.check_host()?;
        let mem = &self.sim.hosts[h].mem;
        if let Some((src, at)) = mem.shared(addr, len) {
            return Ok(src.slice(at..at + len));
        }
        Ok(Bytes::copy_from_slice(&mem.read(addr, len)?))
    }

    fn write(&mut self, addr: u64, parts: &[&[u8]]) -> Result<(), TransportError> {
        let h = self.check_host()?;
        self.sim.hosts[h].mem.write_parts(addr, parts)
    }

    /// Bytes a DMA left by reference to registered application memory
    /// ([`HostTransport::register_external`]), when one buffer holds the whole range; the
    /// address comes back at the next [`LocalMemory::poll_returned`], as the lease does not
    /// alias the simulated MR. `None` otherwise: the caller copies.
    fn lend(&mut self, addr: u64, len: usize) -> Option<Bytes> {
        let h = self.check_host().ok()?;
        self.sim.hosts[h].mem.lend(addr, len)
    }

    fn poll_returned(&mut self) -> Option<u64> {
        let h = self.check_host().ok()?;
        self.sim.hosts[h].mem.poll_returned()
    }

    /// The lkey of the application memory registered in place
    /// ([`HostTransport::register_external`]) that holds `data`, if any; other bytes are
    /// staged.
    fn registered_lkey(&self, data: &[u8]) -> Option<u32> {
        let h = self.check_host().ok()?;
        self.sim.hosts[h].mem.external_lkey(data)
    }

    /// Never: the application's bytes are staged into simulated memory when sent.
    fn send_buffer(&mut self, _len: usize) -> Option<xrdma::SendBuffer> {
        None
    }
}

impl Transport for HostTransport<'_> {
    fn now(&self) -> Time {
        self.sim.now
    }

    /// Registers zeroed memory at a fresh address; at most 16 GiB per region.
    fn register_memory(&mut self, len: u64) -> Result<MemoryRegion, TransportError> {
        let h = self.check_host()?;
        self.sim.hosts[h].mem.register(len)
    }

    /// QPNs are `0x100, 0x101, …` per host; the first PSN is drawn from the seed.
    fn create_qp(&mut self, caps: QpCaps) -> Result<QpAddress, TransportError> {
        let h = self.check_host()?;
        let host = &mut self.sim.hosts[h];
        if host.qps.len() >= MAX_QPS {
            return Err(TransportError::Other {
                verb: "create_qp",
                reason: format!("host {h} already has {MAX_QPS} QPs"),
            });
        }
        let qpn = QPN_BASE + host.qps.len() as u32;
        let psn = initial_psn(self.sim.cfg.seed, self.host, qpn, 0);
        host.qps.push(Qp::new(qpn, caps, psn));
        Ok(address(self.host, qpn, psn))
    }

    /// `remote.lid` must be a host index and `remote.gid` must end in that index
    /// (big-endian).
    fn connect_qp(&mut self, qpn: QpNum, remote: &QpAddress) -> Result<(), TransportError> {
        let (h, qi) = self.qp_index(qpn)?;
        let hosts = self.sim.hosts.len();
        let qp = &mut self.sim.hosts[h].qps[qi];
        if qp.state != QpState::Init {
            return Err(TransportError::BadQpState {
                qpn,
                state: qp.state.name(),
                op: "connect_qp",
            });
        }
        if remote.lid as usize >= hosts || remote.gid[12..] != remote.lid.to_be_bytes() {
            return Err(TransportError::Unreachable(format!(
                "lid {} / gid {:02x?} is not one of the {hosts} simulated hosts",
                remote.lid, remote.gid
            )));
        }
        qp.remote_host = remote.lid;
        qp.remote_qpn = remote.qpn;
        qp.responder.epsn = remote.psn & crate::packet::PSN_MASK;
        qp.state = QpState::Rts;
        Ok(())
    }

    fn reset_qp(&mut self, qpn: QpNum) -> Result<QpAddress, TransportError> {
        let (h, qi) = self.qp_index(qpn)?;
        let qp = &mut self.sim.hosts[h].qps[qi];
        let gen = qp.gen.wrapping_add(1);
        qp.gen = gen;
        let psn = initial_psn(self.sim.cfg.seed, self.host, qpn, gen);
        qp.reset(psn);
        Ok(address(self.host, qpn, psn))
    }

    /// On a QP in ERR the WR completes at once with `WrFlushErr` (verbs semantics).
    fn post_send(&mut self, qpn: QpNum, wr: &SendWr) -> Result<(), TransportError> {
        self.post_send_chain(qpn, std::slice::from_ref(wr))
            .map_err(|e| e.error)
    }

    /// Queues every WR of the chain, then rings the NIC once: the NIC starts on the first
    /// WR's first packet when its link is idle, exactly as after posting the WRs one by one
    /// (a QP in the NIC's round-robin ring stays there while it has packets to send).
    fn post_send_chain(&mut self, qpn: QpNum, wrs: &[SendWr]) -> Result<(), ChainError> {
        let mut posted = 0;
        let result = wrs.iter().try_for_each(|wr| {
            self.queue_send(qpn, wr)?;
            posted += 1;
            Ok(())
        });
        if let Ok((h, qi)) = self.qp_index(qpn) {
            if posted > 0 && self.sim.host_on {
                self.doorbell(h, qi, posted);
            }
            if posted > 0 && self.sim.hosts[h].qps[qi].state == QpState::Rts {
                self.sim.schedule_qp(self.host, qi);
            }
        }
        result.map_err(|error| ChainError { posted, error })
    }

    /// Allowed in INIT and RTS; on a QP in ERR the WR completes at once with `WrFlushErr`.
    fn post_recv(&mut self, qpn: QpNum, wr: &RecvWr) -> Result<(), TransportError> {
        let (h, qi) = self.qp_index(qpn)?;
        if self.sim.host_on {
            let cost = self.sim.cfg.host.post_recv_wr;
            self.sim.charge_cpu(self.host, cost);
        }
        let host = &mut self.sim.hosts[h];
        let qp = &host.qps[qi];
        if qp.state == QpState::Err {
            self.flush(flush_wc(
                wr.wr_id,
                WcStatus::WrFlushErr,
                WcOpcode::Recv,
                qpn,
            ));
            return Ok(());
        }
        if qp.responder.rq.len() >= qp.caps.max_recv_wr as usize {
            return Err(TransportError::QueueFull {
                qpn,
                queue: "recv",
                depth: qp.caps.max_recv_wr,
            });
        }
        check_sge(&host.mem, &wr.sge)?;
        host.qps[qi].responder.rq.push_back(*wr);
        Ok(())
    }

    /// With the host model, only the CQEs visible when the call starts are returned.
    fn poll_cq(&mut self, out: &mut Vec<WorkCompletion>, max: usize) -> usize {
        let Ok(h) = self.check_host() else { return 0 };
        if self.sim.host_on {
            return self.sim.poll_cq_timed(self.host, out, max);
        }
        let cq = &mut self.sim.hosts[h].cq;
        let n = max.min(cq.len());
        out.extend(cq.drain(..n));
        n
    }

    fn poll_congestion(&mut self) -> Option<QpNum> {
        let h = self.check_host().ok()?;
        self.sim.hosts[h].congestion.pop_front()
    }

    /// 0: the simulator reports CNPs per QP ([`Transport::poll_congestion`]), not per port.
    fn poll_port_cnps(&mut self, _now: Time) -> u64 {
        0
    }

    /// The simulation's [`crate::SimConfig::rc`], with the path MTU it applies
    /// ([`crate::SimConfig::path_mtu`]).
    fn rc_params(&self) -> RcParams {
        self.sim.rc_params()
    }

    /// Everything ([`Capabilities::ALL`]): the simulator is the network.
    fn capabilities(&self) -> Capabilities {
        self.sim.capabilities()
    }

    /// The QP's state and its requester's counters since it was last connected.
    fn observe_qp(&self, qpn: QpNum) -> xrdma::QpObservation {
        let Ok((h, qi)) = self.qp_index(qpn) else {
            return xrdma::QpObservation::default();
        };
        let qp = &self.sim.hosts[h].qps[qi];
        xrdma::QpObservation {
            state: Some(qp.state.name()),
            retransmitted_packets: Some(qp.requester.retransmitted),
            rnr_retries: Some(qp.requester.rnr_retries),
        }
    }
}

/// A non-empty SGE must lie inside the MR its local key names (`IBV_WC_LOC_PROT_ERR` in verbs;
/// reported synchronously here).
fn check_sge(mem: &crate::memory::Memory, s: &xrdma::Sge) -> Result<(), TransportError> {
    if s.len > 0 && !mem.check_lkey(s.lkey, s.addr, u64::from(s.len)) {
        return Err(TransportError::BadAddress {
            addr: s.addr,
            len: u64::from(s.len),
            key: s.lkey,
        });
    }
    Ok(())
}
