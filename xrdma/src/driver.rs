//! The generic driver: joins an [`Endpoint`], a [`Transport`] and an application.
//!
//! A driver turn moves completions and congestion notifications from the transport into the
//! core, fires due timers, lets the application react to events, and posts the work requests
//! the core produced. The simulator calls [`turn`] with virtual time whenever a host needs
//! attention; the verbs backend calls it from its polling loop with real time.

use crate::endpoint::{ConnSetup, Endpoint, Event, Op};
use crate::error::ConnId;
use crate::mr_pool::Region;
use crate::{
    Config, QpAddress, QpCaps, QpNum, SendOpcode, SendWr, Sge, Time, Transport, TransportError,
    WorkCompletion, MR_CHUNK_BYTES,
};
use serde::{Deserialize, Serialize};

pub use crate::qp_cache::QpCache;

/// An application running on one endpoint.
pub trait Application {
    /// An event from the core at `now`; the application may call [`Endpoint::send`].
    fn on_event(&mut self, now: Time, ep: &mut Endpoint, event: Event);
    /// Called on every turn (after events); the application may send what is due at `now`.
    fn on_turn(&mut self, now: Time, ep: &mut Endpoint);
    /// When the application next wants a turn even if nothing arrives (`None`: never).
    fn next_wake(&self) -> Option<Time>;
}

/// A boxed application is an application (workloads box their large per-host state).
impl<A: Application + ?Sized> Application for Box<A> {
    fn on_event(&mut self, now: Time, ep: &mut Endpoint, event: Event) {
        (**self).on_event(now, ep, event);
    }
    fn on_turn(&mut self, now: Time, ep: &mut Endpoint) {
        (**self).on_turn(now, ep);
    }
    fn next_wake(&self) -> Option<Time> {
        (**self).next_wake()
    }
}

/// What a peer needs to connect to one of our connections: exchanged out of band (in process,
/// or over TCP between processes). Landing buffers are granted per message (CTS frames), so
/// the QP's address is all a connection needs up front.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConnInfo {
    /// Our QP's address.
    pub qp: QpAddress,
}

/// One side of a connection being set up: QP taken, buffers carved, not yet connected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HalfConn {
    /// What to send to the peer.
    pub info: ConnInfo,
    /// Whether the QP came from the endpoint's QP cache (a closed connection's QP, reset).
    pub reused_qp: bool,
    send_ring: Region,
    recv_buffers: Region,
}

/// Carve `len` bytes from the endpoint's MR pool, registering a new chunk of
/// `max(4 MiB, len)` bytes through `t` when the pool is full.
///
/// # Errors
/// The transport's registration error.
pub fn alloc_region<T: Transport + ?Sized>(
    ep: &mut Endpoint,
    t: &mut T,
    len: u64,
) -> Result<Region, TransportError> {
    if let Some(r) = ep.mr_pool().alloc(len) {
        return Ok(r);
    }
    let mr = t.register_memory(len.max(MR_CHUNK_BYTES))?;
    ep.mr_pool().add_chunk(mr);
    ep.mr_pool()
        .alloc(len)
        .ok_or(TransportError::RegistrationFailed {
            len,
            reason: "chunk too small".into(),
        })
}

/// The QP capacities a connection of an endpoint with `cfg` asks for: `send_depth` send WRs,
/// `recv_depth` receive WRs, `inline_limit` bytes of inline data.
pub fn qp_caps(cfg: &Config) -> QpCaps {
    QpCaps {
        max_send_wr: cfg.send_depth,
        max_recv_wr: cfg.recv_depth,
        max_inline_data: cfg.inline_limit,
    }
}

/// Take a QP for a new connection — from the endpoint's QP cache when it holds one with this
/// endpoint's capacities ([`qp_caps`]), else a new one — and its staging ring and receive
/// buffers (a closed connection's, else carved from the MR pool); send the returned
/// [`HalfConn::info`] to the peer.
///
/// # Errors
/// The transport's error from registration or QP creation.
pub fn open<T: Transport + ?Sized>(
    ep: &mut Endpoint,
    t: &mut T,
) -> Result<HalfConn, TransportError> {
    let caps = qp_caps(ep.config());
    let (qp, reused_qp) = ep.qp_cache().take(t, caps)?;
    let (send_ring, recv_buffers) = match ep.take_spare_buffers() {
        Some(b) => b,
        None => {
            let ring_len = ep.config().ring_bytes();
            let recv_len = ep.config().recv_buffer_bytes();
            (
                alloc_region(ep, t, ring_len)?,
                alloc_region(ep, t, recv_len)?,
            )
        }
    };
    Ok(HalfConn {
        info: ConnInfo { qp },
        reused_qp,
        send_ring,
        recv_buffers,
    })
}

/// Connect `half` to the peer described by `remote`, add the connection to the endpoint and
/// post its receive WRs at once (before the peer can send, so no RNR NAK at start-up).
///
/// # Errors
/// The transport's error from connecting the QP.
pub fn establish<T: Transport + ?Sized>(
    ep: &mut Endpoint,
    t: &mut T,
    half: HalfConn,
    remote: &ConnInfo,
    peer: u32,
) -> Result<ConnId, TransportError> {
    t.connect_qp(half.info.qp.qpn, &remote.qp)?;
    let conn = ep.add_connection(ConnSetup {
        qpn: half.info.qp.qpn,
        peer,
        send_ring: half.send_ring,
        recv_buffers: half.recv_buffers,
    });
    let now = t.now();
    flush(now, ep, t);
    Ok(conn)
}

/// Reusable buffers for [`turn`], so a turn does not allocate.
#[derive(Debug, Default)]
pub struct TurnScratch {
    wcs: Vec<WorkCompletion>,
}

/// Completions polled per `poll_cq` call.
pub const POLL_BATCH: usize = 64;

/// One driver turn at `now`; returns the next time this endpoint needs a turn even if no
/// completion arrives (the earlier of the core's timer and the application's wake).
pub fn turn<T: Transport + ?Sized, A: Application + ?Sized>(
    now: Time,
    ep: &mut Endpoint,
    t: &mut T,
    app: &mut A,
    scratch: &mut TurnScratch,
) -> Option<Time> {
    loop {
        scratch.wcs.clear();
        if t.poll_cq(&mut scratch.wcs, POLL_BATCH) == 0 {
            break;
        }
        for wc in &scratch.wcs {
            ep.handle_completion(now, wc, &*t);
        }
    }
    while let Some(qpn) = t.poll_congestion() {
        ep.handle_congestion(now, qpn);
    }
    ep.handle_timeout(now);
    loop {
        while let Some(ev) = ep.poll_event() {
            app.on_event(now, ep, ev);
        }
        app.on_turn(now, ep);
        flush(now, ep, t);
        // Posting can fail a connection, which raises events the application must hear.
        if !ep.has_events() {
            break;
        }
    }
    match (ep.poll_timeout(), app.next_wake()) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// The most send WRs [`flush`] posts as one chain ([`Transport::post_send_chain`]: one
/// doorbell on verbs).
pub const CHAIN_MAX: usize = 16;

/// Consecutive send WRs of one QP, waiting to be posted as one chain.
struct Chain {
    qpn: QpNum,
    wrs: [SendWr; CHAIN_MAX],
    len: usize,
}

impl Chain {
    const EMPTY_WR: SendWr = SendWr {
        wr_id: 0,
        opcode: SendOpcode::Send,
        sge: Sge {
            addr: 0,
            len: 0,
            lkey: 0,
        },
        imm: 0,
        remote_addr: 0,
        rkey: 0,
        signaled: true,
    };

    /// Add `wr` for `qpn`, first posting what is held if it is for another QP or full.
    fn push<T: Transport + ?Sized>(
        &mut self,
        ep: &mut Endpoint,
        t: &mut T,
        qpn: QpNum,
        wr: SendWr,
    ) {
        if self.len == CHAIN_MAX || (self.len > 0 && self.qpn != qpn) {
            self.post(ep, t);
        }
        self.qpn = qpn;
        self.wrs[self.len] = wr;
        self.len += 1;
    }

    /// Post what is held as one chain; each WR not posted is a failed post for the core.
    fn post<T: Transport + ?Sized>(&mut self, ep: &mut Endpoint, t: &mut T) {
        let wrs = &self.wrs[..self.len];
        self.len = 0;
        if wrs.is_empty() {
            return;
        }
        if let Err(e) = t.post_send_chain(self.qpn, wrs) {
            for wr in &wrs[e.posted.min(wrs.len())..] {
                let op = Op::PostSend {
                    qpn: self.qpn,
                    wr: *wr,
                };
                ep.handle_post_error(&op, e.error.clone());
            }
        }
    }
}

/// Post every work request the core has ready. Consecutive send WRs for one QP go out as one
/// chain of up to [`CHAIN_MAX`] ([`Transport::post_send_chain`]), posted before any other
/// op is carried out, so the transport sees the same WRs in the same order as when each is
/// posted alone.
pub fn flush<T: Transport + ?Sized>(now: Time, ep: &mut Endpoint, t: &mut T) {
    let mut chain = Chain {
        qpn: 0,
        wrs: [Chain::EMPTY_WR; CHAIN_MAX],
        len: 0,
    };
    while let Some(op) = ep.poll_op(now, t) {
        if let Op::PostSend { qpn, wr } = op {
            chain.push(ep, t, qpn, wr);
            continue;
        }
        chain.post(ep, t);
        let r = match &op {
            // Send WRs go out as chains above; this arm keeps the match whole.
            Op::PostSend { qpn, wr } => t.post_send(*qpn, wr),
            Op::PostRecv { qpn, wr } => t.post_recv(*qpn, wr),
            Op::ResetQp { qpn } => ep.reset_failed_qp(t, *qpn).map(|_| ()),
            Op::ReleaseQp { qpn } => ep.release_qp(t, *qpn).map(|_| ()),
            Op::RegisterMemory { len } => t.register_memory(*len).map(|mr| ep.add_memory(mr)),
        };
        if let Err(e) = r {
            // A QP that cannot be reset is left alone: its connection is gone already.
            if !matches!(op, Op::ResetQp { .. } | Op::ReleaseQp { .. }) {
                ep.handle_post_error(&op, e);
            }
        }
    }
    chain.post(ep, t);
}
