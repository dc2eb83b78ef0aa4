//! [`VerbsTransport`]: the [`xrdma::Transport`] of one worker on a real RDMA device.

use crate::arena::Arena;
use crate::clock::Clock;
use crate::device::Device;
use crate::error::VerbsError;
use crate::lease::Leases;
use crate::port_cnps::PortCnps;
use crate::qp::{ConnectParams, PortCtx, Qp, QpState};
use crate::resources::{CompChannel, Cq, Mr};
use crate::wc::{to_completion, RawWc};
use bytes::Bytes;
use rdma_sys::*;
use std::collections::BTreeMap;
use std::mem::MaybeUninit;
use std::sync::Arc;
use xrdma::{
    Capabilities, ChainError, LocalMemory, MemoryRegion, QpAddress, QpCaps, QpNum, QpObservation,
    RcParams, RecvWr, SendOpcode, SendWr, Sge, Time, Transport, TransportError, WorkCompletion,
};

/// Work completions read per `ibv_poll_cq` call.
const WC_BATCH: usize = 64;

/// Settings of one transport.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TransportConfig {
    /// Initial CQ depth, entries (default 4096). The CQ grows (`ibv_resize_cq`) when the
    /// QPs' send + receive depths would exceed it, so it can never overrun.
    pub cq_depth: u32,
    /// The RC attributes [`Transport::connect_qp`] applies (default [`RcParams::default`],
    /// the same as the simulator's); the path MTU is lowered to the port's active MTU, and on
    /// Soft-RoCE the local ACK timeout is at least [`crate::soft_roce::MIN_LOCAL_ACK_TIMEOUT`].
    pub rc: RcParams,
    /// The other connection attributes (hop limit, outstanding READs).
    pub connect: ConnectParams,
}

impl Default for TransportConfig {
    fn default() -> Self {
        TransportConfig {
            cq_depth: 4096,
            rc: RcParams::default(),
            connect: ConnectParams::default(),
        }
    }
}

/// One worker's verbs resources on a device port: one CQ with a completion channel, its RC
/// QPs and its MRs. Implements [`Transport`] with the same semantics as the simulator's
/// `HostTransport`:
///
/// - `register_memory` allocates page-aligned zeroed memory and registers it (local write,
///   remote write, remote read); `MemoryRegion.addr` is the real virtual address;
/// - `create_qp` returns a QP in INIT with a random 24-bit first PSN; `connect_qp` moves it
///   INIT → RTR → RTS; `reset_qp` moves it to RESET (outstanding WRs vanish without
///   completions) and back to INIT with a new PSN;
/// - `post_send` on a QP the device moved to ERR succeeds and the WR completes with
///   `WrFlushErr`, as verbs does;
/// - `poll_congestion` always returns `None`: rxe and mlx5 expose CNPs only as port counters
///   (`hw_counters/np_cnp_sent`, `rp_cnp_handled`), never per QP; [`Transport::capabilities`]
///   says so;
/// - `poll_port_cnps` hands out the rise of the port's `rp_cnp_handled` (CNPs its reaction
///   point handled), read once per `hw_counters/lifespan` ([`crate::port_cnps`]), on a device
///   that has that counter (mlx5), and declares [`Capabilities::cnp_per_port`] only then; rxe
///   has none;
/// - every QP is connected with [`TransportConfig::rc`], its path MTU lowered to the port's
///   active MTU and, on Soft-RoCE, its local ACK timeout raised to
///   [`crate::soft_roce::MIN_LOCAL_ACK_TIMEOUT`] ([`Transport::rc_params`] reports what is
///   applied);
/// - `post_send_chain` posts a chain as one linked list with one `ibv_post_send`;
/// - `now` reads the transport's [`Clock`]: its own, started when it was created
///   ([`VerbsTransport::new`]), or one shared with a fabric and the fabric's other transports
///   ([`VerbsTransport::with_clock`]).
///
/// Fields drop in order: QPs before MRs (a QP may reference MRs), then the CQ, then the
/// device (PD, context); the `Arc` parent chain enforces the same order for the verbs
/// objects themselves.
#[derive(Debug)]
pub struct VerbsTransport {
    qps: BTreeMap<QpNum, Qp>,
    mrs: BTreeMap<u64, Arc<Mr>>,
    /// Ranges of `mrs` lent to the application ([`LocalMemory::lend`]).
    leases: Leases,
    /// Read-only MRs the application fills and sends from ([`LocalMemory::send_buffer`]);
    /// each is in `mrs` too.
    arena: Arena,
    cq: Arc<Cq>,
    device: Device,
    cfg: TransportConfig,
    /// `cfg.rc` as applied (path MTU at most the port's active MTU; the Soft-RoCE timeout).
    rc: RcParams,
    /// Whether the port's `hw_counters` directory exists.
    port_counters: bool,
    clock: Clock,
    /// The port's CNP count, where the device has one.
    port_cnps: Option<PortCnps>,
    wc_buf: Box<[MaybeUninit<ibv_wc>]>,
    /// Completions taken by `arm`'s re-poll, handed out first by `poll_cq`.
    pending: Vec<WorkCompletion>,
    /// Sum of the QPs' granted send and receive depths (what the CQ must hold).
    cq_committed: u64,
    completions: u64,
    posts: u64,
    poll_errors: u64,
}

fn other(verb: &'static str, errno: i32) -> TransportError {
    VerbsError::verb(verb, errno).into()
}

impl VerbsTransport {
    /// Create the CQ (with its completion channel) on `device`, with a clock of its own
    /// started now.
    ///
    /// # Errors
    /// [`VerbsError::BadSetting`] when `cfg.rc` is outside its encodings
    /// ([`RcParams::validate`]); [`VerbsError::Verb`] when the channel or CQ cannot be created.
    pub fn new(device: &Device, cfg: TransportConfig) -> Result<Self, VerbsError> {
        Self::with_clock(device, cfg, Clock::new())
    }

    /// [`VerbsTransport::new`] reading `clock` ([`Transport::now`]): the transports of one
    /// fabric and the fabric itself share one, so every instant an endpoint is handed is of
    /// one clock ([`crate::clock`]).
    ///
    /// # Errors
    /// As [`VerbsTransport::new`].
    pub fn with_clock(
        device: &Device,
        cfg: TransportConfig,
        clock: Clock,
    ) -> Result<Self, VerbsError> {
        cfg.rc.validate().map_err(|e| VerbsError::BadSetting {
            name: "rc",
            value: format!("{:?}", cfg.rc),
            reason: e.to_string(),
        })?;
        let port = device.port();
        let lowered = match port.active_mtu_bytes() {
            0 => cfg.rc,
            active => cfg.rc.with_port_mtu(active),
        };
        // On Soft-RoCE a longer local ACK timeout (see `soft_roce`).
        let rc = crate::soft_roce::rc_for_device(lowered, device.vendor_id());
        let port_counters = std::path::Path::new(&format!(
            "/sys/class/infiniband/{}/ports/{}/hw_counters",
            device.name(),
            port.port
        ))
        .is_dir();
        let channel = Arc::new(CompChannel::new(device.ctx.clone())?);
        let cq = Arc::new(Cq::new(device.ctx.clone(), channel, cfg.cq_depth.max(1))?);
        let wc_buf = (0..WC_BATCH).map(|_| MaybeUninit::uninit()).collect();
        Ok(VerbsTransport {
            qps: BTreeMap::new(),
            mrs: BTreeMap::new(),
            leases: Leases::default(),
            arena: Arena::default(),
            cq,
            device: device.clone(),
            cfg,
            rc,
            port_counters,
            clock,
            port_cnps: PortCnps::open(
                std::path::Path::new(crate::device::IB_SYSFS_ROOT),
                device.name(),
                port.port,
            ),
            wc_buf,
            pending: Vec::with_capacity(WC_BATCH),
            cq_committed: 0,
            completions: 0,
            posts: 0,
            poll_errors: 0,
        })
    }

    /// The device this transport runs on.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// The clock [`Transport::now`] reads.
    pub fn clock(&self) -> &Clock {
        &self.clock
    }

    /// Number of registered MRs.
    pub fn mr_count(&self) -> usize {
        self.mrs.len()
    }

    /// Bytes registered over all MRs.
    pub fn registered_bytes(&self) -> u64 {
        self.mrs.values().map(|m| m.len).sum()
    }

    /// Number of QPs (connected, idle in INIT, or reset for reuse).
    pub fn qp_count(&self) -> usize {
        self.qps.len()
    }

    /// Completions handed out by `poll_cq` since creation.
    pub fn completions_polled(&self) -> u64 {
        self.completions
    }

    /// Work requests accepted by `post_send` and `post_recv` since creation.
    pub fn work_requests_posted(&self) -> u64 {
        self.posts
    }

    /// Times `ibv_poll_cq` returned an error (the CQ overran or the device failed).
    pub fn poll_errors(&self) -> u64 {
        self.poll_errors
    }

    /// The completion channel's file descriptor (readable when an armed CQ has a
    /// completion), for callers that wait on several sources with `epoll`.
    pub fn completion_fd(&self) -> i32 {
        self.cq.channel.fd()
    }

    /// The RC attributes the device reports for connected QP `qpn` (`ibv_query_qp`), to check
    /// them against [`Transport::rc_params`].
    ///
    /// # Errors
    /// [`TransportError::NoSuchQp`], or the verb's error.
    pub fn query_rc(&self, qpn: QpNum) -> Result<RcParams, TransportError> {
        let qp = self.qps.get(&qpn).ok_or(TransportError::NoSuchQp(qpn))?;
        Ok(qp.query_rc()?)
    }

    /// The granted capacities of `qpn`.
    pub fn qp_caps(&self, qpn: QpNum) -> Option<QpCaps> {
        self.qps.get(&qpn).map(|q| q.caps)
    }

    fn port_ctx(&self) -> PortCtx {
        let p = self.device.port();
        PortCtx {
            port: p.port,
            // `choose_gid` takes no entry past `MAX_SGID_INDEX`, so this never saturates.
            gid_index: u8::try_from(self.device.gid().index).unwrap_or(u8::MAX),
            infiniband: p.is_infiniband(),
        }
    }

    fn address(&self, qpn: QpNum, psn: u32) -> QpAddress {
        QpAddress {
            gid: self.device.gid().gid,
            lid: u32::from(self.device.port().lid),
            qpn,
            psn,
        }
    }

    /// The MR that starts at or below `addr` and could contain it (the last one by address).
    fn mr_containing(&self, addr: u64) -> Option<&Arc<Mr>> {
        self.mrs.range(..=addr).next_back().map(|(_, mr)| mr)
    }

    fn mr_at(&self, addr: u64, len: u64) -> Option<(&Mr, usize)> {
        let mr = self.mr_containing(addr)?;
        mr.offset_of(addr, len).map(|off| (&**mr, off))
    }

    fn check_sge(&self, s: &Sge) -> Result<(), TransportError> {
        if s.len == 0 {
            return Ok(());
        }
        match self.mr_at(s.addr, u64::from(s.len)) {
            Some((mr, _)) if mr.lkey() == s.lkey => Ok(()),
            _ => Err(TransportError::BadAddress {
                addr: s.addr,
                len: u64::from(s.len),
                key: s.lkey,
            }),
        }
    }

    fn qp(&mut self, qpn: QpNum) -> Result<&mut Qp, TransportError> {
        self.qps.get_mut(&qpn).ok_or(TransportError::NoSuchQp(qpn))
    }

    /// Read up to `max` completions from the device into `out`.
    fn poll_hw(&mut self, out: &mut Vec<WorkCompletion>, max: usize) -> usize {
        let mut moved = 0;
        while moved < max {
            let want = (max - moved).min(self.wc_buf.len());
            // SAFETY: the CQ is live; `wc_buf` has room for `want` (≤ its length) entries,
            // which `MaybeUninit<ibv_wc>` lays out exactly like `ibv_wc`.
            let n = unsafe {
                ibv_poll_cq(
                    self.cq.raw.as_ptr(),
                    want as i32,
                    self.wc_buf.as_mut_ptr().cast::<ibv_wc>(),
                )
            };
            if n < 0 {
                self.poll_errors += 1;
                break;
            }
            let n = n as usize;
            for i in 0..n {
                // SAFETY: `ibv_poll_cq` initialised the first `n` entries.
                let wc = unsafe { self.wc_buf[i].assume_init_ref() };
                let raw = RawWc {
                    status: wc.status,
                    opcode: wc.opcode,
                    qp_num: wc.qp_num,
                    byte_len: wc.byte_len,
                    wc_flags: wc.wc_flags,
                    // SAFETY: both union members are a plain u32; reading either is defined.
                    imm_be: unsafe { wc.imm_data_invalidated_rkey_union.imm_data },
                };
                let wr_id = wc.wr_id;
                let Some(qp) = self.qps.get_mut(&raw.qp_num) else {
                    continue;
                };
                let Some(wr) = qp.retire(wr_id) else {
                    continue; // a WR discarded by a reset
                };
                out.push(to_completion(&raw, &wr));
                moved += 1;
            }
            if n < want {
                break;
            }
        }
        self.completions += moved as u64;
        moved
    }

    /// Read and acknowledge every pending completion-channel event; returns how many.
    fn drain_events(&mut self) -> Result<u32, VerbsError> {
        let mut count = 0;
        loop {
            let mut cq: *mut ibv_cq = std::ptr::null_mut();
            let mut ctx: *mut libc::c_void = std::ptr::null_mut();
            // SAFETY: the channel is live and non-blocking; `cq`/`ctx` are valid out-pointers.
            let rc = unsafe { ibv_get_cq_event(self.cq.channel.raw.as_ptr(), &mut cq, &mut ctx) };
            if rc != 0 {
                let err = std::io::Error::last_os_error();
                if err.kind() == std::io::ErrorKind::WouldBlock {
                    return Ok(count);
                }
                return Err(VerbsError::verb(
                    "ibv_get_cq_event",
                    err.raw_os_error().unwrap_or(0),
                ));
            }
            // SAFETY: `cq` is the CQ the event was for (ours: only our CQ uses this channel);
            // acknowledging it at once keeps `ibv_destroy_cq` from waiting.
            unsafe { ibv_ack_cq_events(cq, 1) };
            count += 1;
        }
    }

    /// Arm the CQ for one completion event (`ibv_req_notify_cq`), first reading events left
    /// from an earlier arming, then poll once more to close the race with a completion that
    /// arrived before arming (it raises no event). `true` when completions are ready (taken
    /// by the re-poll and queued for [`Transport::poll_cq`]): do not block then.
    ///
    /// # Errors
    /// [`VerbsError::Verb`] when reading an event or arming fails.
    pub fn arm(&mut self) -> Result<bool, VerbsError> {
        if !self.pending.is_empty() {
            return Ok(true);
        }
        self.drain_events()?;
        // SAFETY: the CQ is live; solicited_only = 0 asks for an event on any completion.
        let rc = unsafe { ibv_req_notify_cq(self.cq.raw.as_ptr(), 0) };
        if rc != 0 {
            return Err(VerbsError::verb("ibv_req_notify_cq", rc));
        }
        let mut pending = std::mem::take(&mut self.pending);
        // Counted when handed out by `poll_cq`, not here.
        let got = self.poll_hw(&mut pending, WC_BATCH);
        self.completions -= got as u64;
        self.pending = pending;
        Ok(got > 0)
    }

    /// The completion channel's file descriptor: readable once the armed CQ
    /// ([`VerbsTransport::arm`]) has a completion.
    pub fn channel_fd(&self) -> i32 {
        self.cq.channel.fd()
    }

    /// After a wake-up: read and acknowledge the completion channel's events; how many.
    ///
    /// # Errors
    /// [`VerbsError::Verb`] when `ibv_get_cq_event` fails other than by having none.
    pub fn take_events(&mut self) -> Result<u32, VerbsError> {
        self.drain_events()
    }

    fn new_psn() -> u32 {
        rand::random::<u32>() & 0x00FF_FFFF
    }
}

/// Reads and writes copy between Rust buffers and MR memory; `lend` hands out a shared view of
/// a landed message, and no write reaches a lent range (see the crate documentation,
/// "Registered memory is lent out only as a lease").
impl LocalMemory for VerbsTransport {
    /// Refused in an arena MR, which only the application's buffer may touch.
    fn read_into(&self, addr: u64, out: &mut [u8]) -> Result<(), TransportError> {
        let len = out.len() as u64;
        match self.mr_containing(addr) {
            Some(mr) if !mr.read_only && mr.read_into(addr, out) => Ok(()),
            _ => Err(TransportError::BadAddress { addr, len, key: 0 }),
        }
    }

    /// One copy from the MR into the new buffer (no zeroing first).
    fn read_bytes(&self, addr: u64, len: usize) -> Result<Bytes, TransportError> {
        self.mr_containing(addr)
            .filter(|mr| !mr.read_only)
            .and_then(|mr| mr.read_vec(addr, len))
            .map(Bytes::from)
            .ok_or(TransportError::BadAddress {
                addr,
                len: len as u64,
                key: 0,
            })
    }

    /// Refused over a range lent out ([`TransportError::Other`]).
    fn write(&mut self, addr: u64, parts: &[&[u8]]) -> Result<(), TransportError> {
        let len = xrdma::gather_len(parts);
        self.leases.check_unlent("write", addr, len)?;
        // SAFETY: no lease covers the range (checked just above), and `&mut self` keeps every
        // other write of this transport's MRs out for the call.
        let written = self
            .mr_containing(addr)
            .is_some_and(|mr| !mr.read_only && unsafe { mr.write(addr, parts) });
        if written {
            Ok(())
        } else {
            Err(TransportError::BadAddress { addr, len, key: 0 })
        }
    }

    /// A `Bytes` over the MR itself, which keeps the MR alive; `None` for an empty range, one
    /// outside every MR, or one overlapping a range lent already.
    fn lend(&mut self, addr: u64, len: usize) -> Option<Bytes> {
        let mr = Arc::clone(self.mr_containing(addr).filter(|mr| !mr.read_only)?);
        self.leases.lend(&mr, addr, len)
    }

    fn poll_returned(&mut self) -> Option<u64> {
        self.leases.poll_returned()
    }

    /// The lkey of the MR whose memory `data` lies in (its address is its pointer).
    fn registered_lkey(&self, data: &[u8]) -> Option<u32> {
        self.mr_at(data.as_ptr() as u64, data.len() as u64)
            .map(|(mr, _)| mr.lkey())
    }

    /// A buffer of the send arena: an MR of its own, registered read-only, reused once the
    /// message sent from it is dropped (`crate::arena`).
    fn send_buffer(&mut self, len: usize) -> Option<xrdma::SendBuffer> {
        let pd = self.device.pd.clone();
        let mrs = &mut self.mrs;
        self.arena.take(&pd, len, |mr| {
            mrs.insert(mr.addr(), mr);
        })
    }
}

impl Transport for VerbsTransport {
    fn now(&self) -> Time {
        self.clock.now()
    }

    fn register_memory(&mut self, len: u64) -> Result<MemoryRegion, TransportError> {
        let mr = Mr::new(self.device.pd.clone(), len, false)
            .map_err(|reason| TransportError::RegistrationFailed { len, reason })?;
        let region = MemoryRegion {
            addr: mr.addr(),
            len,
            lkey: mr.lkey(),
            rkey: mr.rkey(),
        };
        self.mrs.insert(region.addr, Arc::new(mr));
        Ok(region)
    }

    /// The CQ grows first if the new QP's depths would not fit; the QP is created with one
    /// SGE per WR and moved RESET → INIT on the device's port.
    fn create_qp(&mut self, caps: QpCaps) -> Result<QpAddress, TransportError> {
        let mut qp = Qp::create(self.device.pd.clone(), self.cq.clone(), caps)?;
        let need =
            self.cq_committed + u64::from(qp.caps.max_send_wr) + u64::from(qp.caps.max_recv_wr);
        if need > u64::from(self.cq.capacity()) {
            let depth = u32::try_from(need).map_err(|_| TransportError::Other {
                verb: "ibv_resize_cq",
                reason: format!("{need} CQ entries needed"),
            })?;
            self.cq.resize(depth)?;
        }
        qp.modify_to_init(self.port_ctx().port)?;
        qp.psn = Self::new_psn();
        self.cq_committed = need;
        let addr = self.address(qp.qpn, qp.psn);
        self.qps.insert(qp.qpn, qp);
        Ok(addr)
    }

    /// A QP in RESET is first moved to INIT. On RoCE `remote.gid` must be non-zero.
    fn connect_qp(&mut self, qpn: QpNum, remote: &QpAddress) -> Result<(), TransportError> {
        let port = self.port_ctx();
        let params = self.cfg.connect;
        let rc = self.rc;
        let qp = self.qp(qpn)?;
        if qp.state == QpState::Reset {
            qp.modify_to_init(port.port)?;
        }
        if qp.state != QpState::Init {
            return Err(TransportError::BadQpState {
                qpn,
                state: qp.state.name(),
                op: "connect_qp",
            });
        }
        if !port.infiniband && remote.gid.iter().all(|&b| b == 0) {
            return Err(TransportError::Unreachable(format!(
                "QP {:#x}: an all-zero GID cannot be reached over RoCE",
                remote.qpn
            )));
        }
        qp.connect(remote, &port, &rc, &params)?;
        Ok(())
    }

    fn reset_qp(&mut self, qpn: QpNum) -> Result<QpAddress, TransportError> {
        let port = self.port_ctx().port;
        let qp = self.qp(qpn)?;
        qp.modify_to_reset()?;
        qp.modify_to_init(port)?;
        qp.psn = Self::new_psn();
        let psn = qp.psn;
        Ok(self.address(qpn, psn))
    }

    /// Checks in the simulator's order: the QP exists, it is in RTS, the local SGE lies in
    /// the MR of its `lkey`; then `ibv_post_send` (ENOMEM: queue full).
    fn post_send(&mut self, qpn: QpNum, wr: &SendWr) -> Result<(), TransportError> {
        self.post_send_chain(qpn, std::slice::from_ref(wr))
            .map_err(|e| e.error)
    }

    /// The checks of [`Transport::post_send`] for every WR, then one `ibv_post_send` of the
    /// WRs before the first that fails them, linked into one list (one doorbell).
    fn post_send_chain(&mut self, qpn: QpNum, wrs: &[SendWr]) -> Result<(), ChainError> {
        let at = |posted| move |error| ChainError { posted, error };
        let state = self.qp(qpn).map_err(at(0))?.state;
        if state != QpState::Rts {
            return Err(ChainError {
                posted: 0,
                error: TransportError::BadQpState {
                    qpn,
                    state: state.name(),
                    op: "post_send",
                },
            });
        }
        let mut refused = None;
        for (i, wr) in wrs.iter().enumerate() {
            let checked = self.check_sge(&wr.sge).and_then(|()| match wr.opcode {
                // A READ writes its local SGE.
                SendOpcode::RdmaRead => {
                    self.leases
                        .check_unlent("post_send", wr.sge.addr, u64::from(wr.sge.len))
                }
                _ => Ok(()),
            });
            if let Err(e) = checked {
                refused = Some(ChainError {
                    posted: i,
                    error: e,
                });
                break;
            }
        }
        let ok = refused.as_ref().map_or(wrs.len(), |e| e.posted);
        let qp = self.qp(qpn).map_err(at(0))?;
        let depth = qp.caps.max_send_wr;
        // SAFETY: `check_sge` just found every SGE of `wrs[..ok]` inside one of our MRs with
        // its lkey, all of the same PD as the QP. MRs are never deregistered while the
        // transport lives, and the transport drops its QPs before its MRs (field order), so
        // the MRs outlive the WRs.
        match unsafe { qp.post_send_chain(&wrs[..ok]) } {
            Ok(()) => {
                self.posts += ok as u64;
                refused.map_or(Ok(()), Err)
            }
            Err((posted, errno)) => {
                self.posts += posted as u64;
                let error = if errno == libc::ENOMEM {
                    TransportError::QueueFull {
                        qpn,
                        queue: "send",
                        depth,
                    }
                } else {
                    other("ibv_post_send", errno)
                };
                Err(ChainError { posted, error })
            }
        }
    }

    /// Allowed from INIT on; checks the QP, its state and the SGE, then `ibv_post_recv`.
    fn post_recv(&mut self, qpn: QpNum, wr: &RecvWr) -> Result<(), TransportError> {
        let state = self.qp(qpn)?.state;
        if state == QpState::Reset {
            return Err(TransportError::BadQpState {
                qpn,
                state: state.name(),
                op: "post_recv",
            });
        }
        self.check_sge(&wr.sge)?;
        self.leases
            .check_unlent("post_recv", wr.sge.addr, u64::from(wr.sge.len))?;
        let qp = self.qp(qpn)?;
        // SAFETY: as in `post_send`: the SGE was just checked to lie in one of our MRs under
        // its lkey, and MRs outlive every QP of the transport.
        match unsafe { qp.post_recv(wr) } {
            Ok(()) => {
                self.posts += 1;
                Ok(())
            }
            Err(libc::ENOMEM) => Err(TransportError::QueueFull {
                qpn,
                queue: "recv",
                depth: qp.caps.max_recv_wr,
            }),
            Err(e) => Err(other("ibv_post_recv", e)),
        }
    }

    fn poll_cq(&mut self, out: &mut Vec<WorkCompletion>, max: usize) -> usize {
        let mut moved = 0;
        if !self.pending.is_empty() {
            let n = self.pending.len().min(max);
            out.extend(self.pending.drain(..n));
            self.completions += n as u64;
            moved = n;
        }
        if moved < max {
            moved += self.poll_hw(out, max - moved);
        }
        moved
    }

    /// Always `None`: see the type's documentation.
    fn poll_congestion(&mut self) -> Option<QpNum> {
        None
    }

    /// The rise of the port's `rp_cnp_handled` since the last read, read at most once per
    /// counter lifespan ([`PortCnps::sample`]); 0 on a device without it.
    fn poll_port_cnps(&mut self, now: Time) -> u64 {
        self.port_cnps.as_mut().map_or(0, |c| c.sample(now))
    }

    /// [`TransportConfig::rc`] with the path MTU lowered to the port's active MTU: what
    /// `connect_qp` passes to `ibv_modify_qp`.
    fn rc_params(&self) -> RcParams {
        self.rc
    }

    /// No per-QP CNPs (see [`Transport::poll_congestion`]), no ECN mark counts, no buffer
    /// occupancy (the switches are not observable from a host); port counters when the
    /// device exposes `hw_counters` in sysfs (rxe and mlx5 do); port CNPs when it has
    /// `rp_cnp_handled` (mlx5, not rxe).
    fn observe_qp(&self, qpn: QpNum) -> QpObservation {
        // The device keeps no per-QP retransmission or RNR counts a verb can read (rxe and
        // mlx5 count them per port, in hw_counters): those stay unobserved.
        QpObservation {
            state: self.qps.get(&qpn).and_then(|q| q.query_state().ok()),
            ..QpObservation::default()
        }
    }

    fn capabilities(&self) -> Capabilities {
        let mut c = Capabilities::NONE;
        c.port_counters = self.port_counters;
        c.cnp_per_port = self.port_cnps.is_some();
        c
    }
}
