//! One RC queue pair: creation, the RESET → INIT → RTR → RTS transitions, posting, and the
//! shadow queues that give each completion its caller's `wr_id` and opcode.
//!
//! Verbs leaves `ibv_wc.opcode` undefined when a completion is in error, and an unsignaled
//! send completes silently. So the QP posts each WR with its own sequence number as the
//! hardware `wr_id` (bit 63 set for receives) and keeps the caller's `wr_id`, opcode and
//! length in a per-queue shadow FIFO. Completions of one queue arrive in posting order on an
//! RC QP (IB Spec 10.8.3), so a completion for sequence `s` also retires the unsignaled WRs
//! queued before `s`. After a reset, sequence numbers below the reset point belong to
//! discarded WRs and their completions (already in the CQ) are dropped.

use crate::error::VerbsError;
use crate::resources::{Cq, Pd};
use rdma_sys::*;
use std::collections::VecDeque;
use std::ptr::NonNull;
use std::sync::Arc;
use xrdma::rc::path_mtu_code;
use xrdma::{QpAddress, QpCaps, RcParams, RecvWr, SendOpcode, SendWr, WcOpcode};

/// The completion opcode of a send WR's `opcode`.
fn wc_opcode(opcode: SendOpcode) -> WcOpcode {
    match opcode {
        SendOpcode::Send | SendOpcode::SendWithImm => WcOpcode::Send,
        SendOpcode::RdmaWrite | SendOpcode::RdmaWriteWithImm => WcOpcode::RdmaWrite,
        SendOpcode::RdmaRead => WcOpcode::RdmaRead,
    }
}

/// Hardware `wr_id` bit marking a receive WR.
const RECV_BIT: u64 = 1 << 63;

/// The states this backend moves a QP through (`enum ibv_qp_state`). The device may move a
/// QP to ERR on its own after an error completion; that is seen through completions, not
/// tracked here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum QpState {
    Reset,
    Init,
    Rtr,
    Rts,
}

impl QpState {
    pub(crate) fn name(self) -> &'static str {
        match self {
            QpState::Reset => "RESET",
            QpState::Init => "INIT",
            QpState::Rtr => "RTR",
            QpState::Rts => "RTS",
        }
    }
}

/// The connection attributes for `INIT → RTR → RTS` (`struct ibv_qp_attr`; IB Spec 11.2.4.2)
/// besides the backend-neutral [`RcParams`] (timeout, retry counts, RNR timer, path MTU),
/// which come from [`crate::TransportConfig::rc`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConnectParams {
    /// GRH hop limit (default 64).
    pub hop_limit: u8,
    /// Outstanding RDMA READs this QP may issue (default 1).
    pub max_rd_atomic: u8,
    /// Outstanding RDMA READs this QP accepts as a responder (default 1).
    pub max_dest_rd_atomic: u8,
}

impl Default for ConnectParams {
    fn default() -> Self {
        ConnectParams {
            hop_limit: 64,
            max_rd_atomic: 1,
            max_dest_rd_atomic: 1,
        }
    }
}

/// Where a QP lives: what the transitions need from the device.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PortCtx {
    pub(crate) port: u8,
    pub(crate) gid_index: u8,
    pub(crate) infiniband: bool,
}

#[derive(Clone, Copy, Debug)]
struct Shadow {
    seq: u64,
    wr_id: u64,
    opcode: WcOpcode,
    len: u32,
}

/// The caller's view of one retired WR.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Retired {
    pub(crate) wr_id: u64,
    pub(crate) opcode: WcOpcode,
    pub(crate) len: u32,
    pub(crate) recv: bool,
}

#[derive(Debug, Default)]
struct ShadowQueue {
    q: VecDeque<Shadow>,
    next: u64,
    /// Sequence numbers below this were discarded by a reset.
    valid_from: u64,
}

impl ShadowQueue {
    fn with_capacity(n: u32) -> Self {
        ShadowQueue {
            q: VecDeque::with_capacity(n as usize),
            next: 0,
            valid_from: 0,
        }
    }

    fn push(&mut self, wr_id: u64, opcode: WcOpcode, len: u32) -> u64 {
        let seq = self.next;
        self.next += 1;
        self.q.push_back(Shadow {
            seq,
            wr_id,
            opcode,
            len,
        });
        seq
    }

    /// Undo the last push (the post failed).
    fn pop_last(&mut self) {
        self.q.pop_back();
        self.next -= 1;
    }

    fn retire(&mut self, seq: u64) -> Option<Shadow> {
        if seq < self.valid_from {
            return None;
        }
        while let Some(front) = self.q.front() {
            if front.seq >= seq {
                break;
            }
            self.q.pop_front(); // an unsignaled WR, retired by this later completion
        }
        match self.q.front() {
            Some(f) if f.seq == seq => self.q.pop_front(),
            _ => None,
        }
    }

    fn discard(&mut self) {
        self.q.clear();
        self.valid_from = self.next;
    }
}

/// The hardware WRs and SGEs of the chain being posted, kept between posts so posting does
/// not allocate. Their pointers are set anew for every post and never read after it.
#[derive(Default)]
struct ChainScratch {
    wrs: Vec<ibv_send_wr>,
    sges: Vec<ibv_sge>,
}

impl std::fmt::Debug for ChainScratch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChainScratch")
            .field("capacity", &self.wrs.capacity())
            .finish()
    }
}

/// An RC QP on the transport's single CQ.
#[derive(Debug)]
pub(crate) struct Qp {
    raw: NonNull<ibv_qp>,
    pub(crate) qpn: u32,
    pub(crate) state: QpState,
    /// Capacities the device granted (may exceed those asked for).
    pub(crate) caps: QpCaps,
    /// First PSN of the current connection.
    pub(crate) psn: u32,
    sends: ShadowQueue,
    recvs: ShadowQueue,
    scratch: ChainScratch,
    _cq: Arc<Cq>,
    _pd: Arc<Pd>,
}

// SAFETY: the QP handle is owned by this wrapper; posting from any one thread at a time (which
// `&mut` guarantees) is allowed by libibverbs. The scratch WRs' raw pointers point only into
// the scratch vectors themselves and are rewritten before every use.
unsafe impl Send for Qp {}

fn zeroed_attr() -> ibv_qp_attr {
    // SAFETY: `ibv_qp_attr` is a plain C struct of integers and unions of integers; all-zero
    // is a valid value (and the one `ibv_modify_qp(3)` examples start from).
    unsafe { std::mem::zeroed() }
}

impl Qp {
    pub(crate) fn create(pd: Arc<Pd>, cq: Arc<Cq>, caps: QpCaps) -> Result<Qp, VerbsError> {
        let mut init = ibv_qp_init_attr {
            qp_context: std::ptr::null_mut(),
            send_cq: cq.raw.as_ptr(),
            recv_cq: cq.raw.as_ptr(),
            srq: std::ptr::null_mut(),
            cap: ibv_qp_cap {
                max_send_wr: caps.max_send_wr.max(1),
                max_recv_wr: caps.max_recv_wr.max(1),
                max_send_sge: 1,
                max_recv_sge: 1,
                max_inline_data: caps.max_inline_data,
            },
            qp_type: ibv_qp_type::IBV_QPT_RC,
            sq_sig_all: 0,
        };
        // SAFETY: PD and CQ are live (Arcs stored in the result); `init` is a valid
        // initialised attribute block that the call updates with the granted capacities.
        let raw = unsafe { ibv_create_qp(pd.raw.as_ptr(), &mut init) };
        let raw = NonNull::new(raw).ok_or_else(|| VerbsError::last("ibv_create_qp"))?;
        // SAFETY: `raw` is a live QP; `qp_num` is a plain field set at creation.
        let qpn = unsafe { (*raw.as_ptr()).qp_num };
        let granted = QpCaps {
            max_send_wr: init.cap.max_send_wr,
            max_recv_wr: init.cap.max_recv_wr,
            max_inline_data: init.cap.max_inline_data,
        };
        Ok(Qp {
            raw,
            qpn,
            state: QpState::Reset,
            caps: granted,
            psn: 0,
            sends: ShadowQueue::with_capacity(granted.max_send_wr),
            recvs: ShadowQueue::with_capacity(granted.max_recv_wr),
            scratch: ChainScratch::default(),
            _cq: cq,
            _pd: pd,
        })
    }

    fn modify(&mut self, attr: &mut ibv_qp_attr, mask: ibv_qp_attr_mask) -> Result<(), i32> {
        // SAFETY: `raw` is a live QP; `attr` is a fully initialised attribute block whose
        // fields named in `mask` are set.
        let rc = unsafe { ibv_modify_qp(self.raw.as_ptr(), attr, mask.0 as i32) };
        if rc != 0 {
            return Err(rc);
        }
        Ok(())
    }

    /// RESET → INIT on `port` with remote write/read access.
    pub(crate) fn modify_to_init(&mut self, port: u8) -> Result<(), VerbsError> {
        let mut a = zeroed_attr();
        a.qp_state = ibv_qp_state::IBV_QPS_INIT;
        a.pkey_index = 0;
        a.port_num = port;
        a.qp_access_flags = (ibv_access_flags::IBV_ACCESS_LOCAL_WRITE
            | ibv_access_flags::IBV_ACCESS_REMOTE_WRITE
            | ibv_access_flags::IBV_ACCESS_REMOTE_READ)
            .0;
        let mask = ibv_qp_attr_mask::IBV_QP_STATE
            | ibv_qp_attr_mask::IBV_QP_PKEY_INDEX
            | ibv_qp_attr_mask::IBV_QP_PORT
            | ibv_qp_attr_mask::IBV_QP_ACCESS_FLAGS;
        self.modify(&mut a, mask)
            .map_err(|e| VerbsError::verb("ibv_modify_qp(INIT)", e))?;
        self.state = QpState::Init;
        Ok(())
    }

    /// INIT → RTR (towards `remote`) → RTS with `psn` as our first send PSN, with the RC
    /// attributes `rc` (already lowered to the port's MTU) and the rest from `p`.
    pub(crate) fn connect(
        &mut self,
        remote: &QpAddress,
        port: &PortCtx,
        rc: &RcParams,
        p: &ConnectParams,
    ) -> Result<(), VerbsError> {
        let path_mtu = path_mtu_code(rc.path_mtu).ok_or_else(|| VerbsError::BadSetting {
            name: "rc.path_mtu",
            value: rc.path_mtu.to_string(),
            reason: "not an InfiniBand path MTU".into(),
        })?;
        let mut a = zeroed_attr();
        a.qp_state = ibv_qp_state::IBV_QPS_RTR;
        a.path_mtu = u32::from(path_mtu);
        a.dest_qp_num = remote.qpn;
        a.rq_psn = remote.psn & 0x00FF_FFFF;
        a.max_dest_rd_atomic = p.max_dest_rd_atomic;
        a.min_rnr_timer = rc.min_rnr_timer;
        a.ah_attr.port_num = port.port;
        a.ah_attr.sl = 0;
        // RoCE needs a GRH on every packet; InfiniBand inside a subnet routes by LID.
        if port.infiniband && remote.lid != 0 {
            a.ah_attr.dlid = remote.lid as u16;
        } else {
            a.ah_attr.is_global = 1;
            a.ah_attr.grh.dgid = ibv_gid { raw: remote.gid };
            a.ah_attr.grh.sgid_index = port.gid_index;
            a.ah_attr.grh.hop_limit = p.hop_limit;
        }
        let mask = ibv_qp_attr_mask::IBV_QP_STATE
            | ibv_qp_attr_mask::IBV_QP_AV
            | ibv_qp_attr_mask::IBV_QP_PATH_MTU
            | ibv_qp_attr_mask::IBV_QP_DEST_QPN
            | ibv_qp_attr_mask::IBV_QP_RQ_PSN
            | ibv_qp_attr_mask::IBV_QP_MAX_DEST_RD_ATOMIC
            | ibv_qp_attr_mask::IBV_QP_MIN_RNR_TIMER;
        self.modify(&mut a, mask)
            .map_err(|e| VerbsError::verb("ibv_modify_qp(RTR)", e))?;
        self.state = QpState::Rtr;

        let mut a = zeroed_attr();
        a.qp_state = ibv_qp_state::IBV_QPS_RTS;
        a.timeout = rc.local_ack_timeout;
        a.retry_cnt = rc.retry_cnt;
        a.rnr_retry = rc.rnr_retry;
        a.sq_psn = self.psn;
        a.max_rd_atomic = p.max_rd_atomic;
        let mask = ibv_qp_attr_mask::IBV_QP_STATE
            | ibv_qp_attr_mask::IBV_QP_TIMEOUT
            | ibv_qp_attr_mask::IBV_QP_RETRY_CNT
            | ibv_qp_attr_mask::IBV_QP_RNR_RETRY
            | ibv_qp_attr_mask::IBV_QP_SQ_PSN
            | ibv_qp_attr_mask::IBV_QP_MAX_QP_RD_ATOMIC;
        self.modify(&mut a, mask)
            .map_err(|e| VerbsError::verb("ibv_modify_qp(RTS)", e))?;
        self.state = QpState::Rts;
        Ok(())
    }

    /// The RC attributes the device holds for this QP (`ibv_query_qp`): timeout, retry
    /// counts, minimum RNR timer and path MTU as the device reports them.
    pub(crate) fn query_rc(&self) -> Result<RcParams, VerbsError> {
        let mut a = zeroed_attr();
        // SAFETY: `ibv_qp_init_attr` is a plain C struct of integers and pointers; all-zero is
        // a valid value for the call to overwrite.
        let mut init: ibv_qp_init_attr = unsafe { std::mem::zeroed() };
        let mask = ibv_qp_attr_mask::IBV_QP_TIMEOUT
            | ibv_qp_attr_mask::IBV_QP_RETRY_CNT
            | ibv_qp_attr_mask::IBV_QP_RNR_RETRY
            | ibv_qp_attr_mask::IBV_QP_MIN_RNR_TIMER
            | ibv_qp_attr_mask::IBV_QP_PATH_MTU;
        // SAFETY: `raw` is a live QP; `a` and `init` are valid out-blocks the call fills.
        let rc = unsafe { ibv_query_qp(self.raw.as_ptr(), &mut a, mask.0 as i32, &mut init) };
        if rc != 0 {
            return Err(VerbsError::verb("ibv_query_qp", rc));
        }
        Ok(RcParams {
            local_ack_timeout: a.timeout,
            retry_cnt: a.retry_cnt,
            rnr_retry: a.rnr_retry,
            min_rnr_timer: a.min_rnr_timer,
            path_mtu: xrdma::rc::path_mtu_bytes(a.path_mtu).unwrap_or(0),
        })
    }

    /// The QP's state as the device holds it now (`ibv_query_qp` with `IBV_QP_STATE`), in
    /// the verbs' names: `RESET`, `INIT`, `RTR`, `RTS`, `SQD`, `SQE`, `ERR` (`UNKNOWN` for a
    /// value outside `enum ibv_qp_state`).
    ///
    /// # Errors
    /// The verb's error.
    pub(crate) fn query_state(&self) -> Result<&'static str, VerbsError> {
        let mut a = zeroed_attr();
        // SAFETY: `ibv_qp_init_attr` is a plain C struct of integers and pointers; all-zero is
        // a valid value for the call to overwrite.
        let mut init: ibv_qp_init_attr = unsafe { std::mem::zeroed() };
        let mask = ibv_qp_attr_mask::IBV_QP_STATE;
        // SAFETY: `raw` is a live QP; `a` and `init` are valid out-blocks the call fills.
        let rc = unsafe { ibv_query_qp(self.raw.as_ptr(), &mut a, mask.0 as i32, &mut init) };
        if rc != 0 {
            return Err(VerbsError::verb("ibv_query_qp", rc));
        }
        Ok(match a.qp_state {
            ibv_qp_state::IBV_QPS_RESET => "RESET",
            ibv_qp_state::IBV_QPS_INIT => "INIT",
            ibv_qp_state::IBV_QPS_RTR => "RTR",
            ibv_qp_state::IBV_QPS_RTS => "RTS",
            ibv_qp_state::IBV_QPS_SQD => "SQD",
            ibv_qp_state::IBV_QPS_SQE => "SQE",
            ibv_qp_state::IBV_QPS_ERR => "ERR",
            _ => "UNKNOWN",
        })
    }

    /// Any state → RESET: outstanding WRs are discarded without completions.
    pub(crate) fn modify_to_reset(&mut self) -> Result<(), VerbsError> {
        let mut a = zeroed_attr();
        a.qp_state = ibv_qp_state::IBV_QPS_RESET;
        self.modify(&mut a, ibv_qp_attr_mask::IBV_QP_STATE)
            .map_err(|e| VerbsError::verb("ibv_modify_qp(RESET)", e))?;
        self.state = QpState::Reset;
        self.sends.discard();
        self.recvs.discard();
        Ok(())
    }

    /// Post `wrs` as one linked list with one `ibv_post_send` (one doorbell). `Err((posted,
    /// errno))` when the provider refuses WR number `posted` (ENOMEM: queue full): the WRs
    /// before it are posted, it and those after it are not.
    ///
    /// # Safety
    /// Every non-empty `sge` of `wrs` must lie inside a live MR of this QP's PD registered
    /// under its `lkey`, and that MR must stay registered and allocated until the WR completes
    /// or this QP is reset or destroyed: the provider copies inline payloads from `sge.addr`
    /// in this call, and the device reads (SEND, WRITE) or writes (READ) the range later.
    pub(crate) unsafe fn post_send_chain(&mut self, wrs: &[SendWr]) -> Result<(), (usize, i32)> {
        if wrs.is_empty() {
            return Ok(());
        }
        let ChainScratch {
            wrs: mut list,
            mut sges,
        } = std::mem::take(&mut self.scratch);
        sges.clear();
        list.clear();
        for wr in wrs {
            sges.push(ibv_sge {
                addr: wr.sge.addr,
                length: wr.sge.len,
                lkey: wr.sge.lkey,
            });
            let seq = self.sends.push(wr.wr_id, wc_opcode(wr.opcode), wr.sge.len);
            list.push(self.hw_send_wr(wr, seq));
        }
        // Link the list only now, through raw pointers alone: neither vector grows or is
        // borrowed again until the call returns, so the pointers stay valid for it.
        let n = list.len();
        let base = list.as_mut_ptr();
        let sge_base = sges.as_mut_ptr();
        for i in 0..n {
            let next = if i + 1 < n {
                base.wrapping_add(i + 1)
            } else {
                std::ptr::null_mut()
            };
            // SAFETY: `i < n == list.len() == sges.len()`, so both pointers name elements of
            // the vectors, and no reference into either vector is alive.
            unsafe {
                (*base.add(i)).sg_list = sge_base.add(i);
                (*base.add(i)).next = next;
            }
        }
        let mut bad: *mut ibv_send_wr = std::ptr::null_mut();
        // SAFETY: `raw` is a live QP; `list` is a well-formed list of `n` WRs, each pointing
        // at its own SGE in `sges`, and both vectors outlive the call (the provider copies
        // each WR into its queue, or the payload when inline); `bad` is a valid out-pointer.
        // The memory each SGE names is a live registered MR range for as long as the device
        // may use it, which is this function's safety contract.
        let rc = unsafe { ibv_post_send(self.raw.as_ptr(), base, &mut bad) };
        let result = if rc == 0 {
            Ok(())
        } else {
            // `bad` is the first WR not posted; the ones before it are on the queue.
            let posted = (0..n).find(|&i| base.wrapping_add(i) == bad).unwrap_or(0);
            for _ in posted..n {
                self.sends.pop_last();
            }
            Err((posted, rc))
        };
        self.scratch = ChainScratch { wrs: list, sges };
        result
    }

    /// The hardware WR for `wr` with hardware `wr_id` `seq`; `sg_list` and `next` are left
    /// null for the caller to set.
    fn hw_send_wr(&self, wr: &SendWr, seq: u64) -> ibv_send_wr {
        let opcode = match wr.opcode {
            SendOpcode::Send => ibv_wr_opcode::IBV_WR_SEND,
            SendOpcode::SendWithImm => ibv_wr_opcode::IBV_WR_SEND_WITH_IMM,
            SendOpcode::RdmaWrite => ibv_wr_opcode::IBV_WR_RDMA_WRITE,
            SendOpcode::RdmaWriteWithImm => ibv_wr_opcode::IBV_WR_RDMA_WRITE_WITH_IMM,
            SendOpcode::RdmaRead => ibv_wr_opcode::IBV_WR_RDMA_READ,
        };
        let mut flags = ibv_send_flags(0);
        if wr.signaled {
            flags |= ibv_send_flags::IBV_SEND_SIGNALED;
        }
        let inline = wr.opcode != SendOpcode::RdmaRead
            && wr.sge.len > 0
            && wr.sge.len <= self.caps.max_inline_data;
        if inline {
            flags |= ibv_send_flags::IBV_SEND_INLINE;
        }
        // SAFETY: `ibv_send_wr` is a plain C struct of integers, pointers and unions of
        // those; all-zero (null `next`, no SGE) is valid and the fields used are set below.
        let mut w: ibv_send_wr = unsafe { std::mem::zeroed() };
        w.wr_id = seq;
        w.num_sge = i32::from(wr.sge.len > 0);
        w.opcode = opcode;
        w.send_flags = flags.0;
        w.imm_data_invalidated_rkey_union.imm_data = wr.imm.to_be();
        w.wr.rdma = rdma_t {
            remote_addr: wr.remote_addr,
            rkey: wr.rkey,
        };
        w
    }

    /// Post one receive WR; `Err(errno)` when the provider refuses (ENOMEM: queue full).
    ///
    /// # Safety
    /// As for [`Qp::post_send`]: a non-empty `wr.sge` must lie inside a live MR of this QP's
    /// PD registered under `wr.sge.lkey` that stays registered and allocated until the WR
    /// completes or this QP is reset or destroyed (the device writes arriving bytes there).
    pub(crate) unsafe fn post_recv(&mut self, wr: &RecvWr) -> Result<(), i32> {
        let mut sge = ibv_sge {
            addr: wr.sge.addr,
            length: wr.sge.len,
            lkey: wr.sge.lkey,
        };
        let seq = self.recvs.push(wr.wr_id, WcOpcode::Recv, wr.sge.len);
        let mut w = ibv_recv_wr {
            wr_id: seq | RECV_BIT,
            next: std::ptr::null_mut(),
            sg_list: &mut sge,
            num_sge: i32::from(wr.sge.len > 0),
        };
        let mut bad: *mut ibv_recv_wr = std::ptr::null_mut();
        // SAFETY: `raw` is a live QP; `w` and `sge` outlive the call; `bad` is valid. The
        // memory `sge` names is a live registered MR range for as long as the device may
        // write it, which is this function's safety contract.
        let rc = unsafe { ibv_post_recv(self.raw.as_ptr(), &mut w, &mut bad) };
        if rc != 0 {
            self.recvs.pop_last();
            return Err(rc);
        }
        Ok(())
    }

    /// The caller's WR behind hardware `wr_id`, or `None` for a completion of a WR discarded
    /// by a reset.
    pub(crate) fn retire(&mut self, hw_wr_id: u64) -> Option<Retired> {
        let recv = hw_wr_id & RECV_BIT != 0;
        let seq = hw_wr_id & !RECV_BIT;
        let q = if recv {
            &mut self.recvs
        } else {
            &mut self.sends
        };
        q.retire(seq).map(|s| Retired {
            wr_id: s.wr_id,
            opcode: s.opcode,
            len: s.len,
            recv,
        })
    }
}

impl Drop for Qp {
    fn drop(&mut self) {
        // SAFETY: `raw` came from `ibv_create_qp`; the CQ and PD it uses are kept alive by
        // our Arcs until after this call.
        unsafe {
            ibv_destroy_qp(self.raw.as_ptr());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_completion_retires_the_unsignaled_wrs_before_it() {
        let mut q = ShadowQueue::with_capacity(4);
        let a = q.push(10, WcOpcode::RdmaWrite, 1);
        let b = q.push(11, WcOpcode::RdmaWrite, 2);
        let c = q.push(12, WcOpcode::Send, 3);
        assert_eq!((a, b, c), (0, 1, 2));
        // Only `c` was signaled: its completion retires a and b silently.
        let s = q.retire(c).unwrap();
        assert_eq!((s.wr_id, s.len), (12, 3));
        assert!(q.q.is_empty());
    }

    #[test]
    fn completions_from_before_a_reset_are_dropped() {
        let mut q = ShadowQueue::with_capacity(4);
        let old = q.push(1, WcOpcode::Send, 0);
        q.discard();
        let new = q.push(2, WcOpcode::Send, 0);
        assert!(q.retire(old).is_none());
        assert_eq!(q.retire(new).unwrap().wr_id, 2);
    }

    #[test]
    fn a_failed_post_is_undone() {
        let mut q = ShadowQueue::with_capacity(4);
        q.push(1, WcOpcode::Send, 0);
        q.pop_last();
        let s = q.push(2, WcOpcode::Send, 0);
        assert_eq!(s, 0, "the sequence number is reused");
        assert_eq!(q.retire(0).unwrap().wr_id, 2);
    }
}
