//! The generic driver: joins an [`Endpoint`], a [`Transport`] and an application.
//!
//! The endpoint is sans-IO: it never calls the transport. The driver is the only code that
//! does, and its contract with the endpoint is:
//!
//! - **Inputs.** Every completion polled from the CQ goes to [`Endpoint::handle_completion`];
//!   when it answers with a range of registered memory (a frame, or a landed message), the
//!   driver copies the bytes out (`LocalMemory::read_bytes`) and hands them, or the copy's
//!   error, to [`Endpoint::handle_landed`] before any other input — or, when the endpoint
//!   says the range may be lent ([`Endpoint::landed_lendable`]) and the memory lends it
//!   (`LocalMemory::lend`), hands the lease to [`Endpoint::handle_lent`] with no copy. The
//!   core reads no memory: arrived bytes come in as data. Each turn first hands every
//!   dropped lease's address (`LocalMemory::poll_returned`) to
//!   [`Endpoint::handle_returned`]. Every congestion notification goes to
//!   [`Endpoint::handle_congestion`] (the transport is not asked for any when it declares
//!   none, [`Endpoint::polls_congestion`]), and [`Endpoint::handle_timeout`] is called at (or
//!   after) [`Endpoint::poll_timeout`].
//! - **Outputs.** Every [`Op`] from [`Endpoint::poll_op`] is performed on the transport, in
//!   order, and its outcome handed back before the next op is polled: an [`Op::CreateQp`]'s
//!   to [`Endpoint::handle_qp_created`], an [`Op::ResetQp`]'s to [`Endpoint::handle_qp_reset`],
//!   an [`Op::RegisterMemory`]'s region to [`Endpoint::add_memory`], and any other refusal to
//!   [`Endpoint::handle_post_error`]. [`flush`] does exactly this, with one liberty: it
//!   gathers consecutive [`Op::PostSend`]s of one QP into a chain posted with one doorbell
//!   ([`Transport::post_send_chain`]), so a refused send WR is handed back when its chain is
//!   posted — before any other kind of op is carried out, and in the order polled.
//! - **Signalling.** The core decides which send WRs ask for a completion
//!   ([`crate::SendWr::signaled`]); the driver posts them as they are. It polls ops until
//!   `poll_op` returns `None` and posts all of them before its next input: the last send WR
//!   handed out for a QP before `None` is signaled, so every unsignaled WR has a signaled one
//!   after it on its send queue. Cutting a QP's WRs into chains ([`CHAIN_MAX`]) keeps that, as
//!   long as every chain is posted in order in the same [`flush`].
//! - **Capabilities.** [`open`] tells the endpoint the transport's
//!   [`crate::Capabilities`] ([`Endpoint::set_capabilities`]).
//! - **Staging.** `poll_op` copies each frame or fragment into the connection's staging ring
//!   through [`crate::LocalMemory::write`] as it produces the WR that sends it, so the bytes
//!   are in place when the WR is posted. That is data access, not I/O: a copy from the
//!   application's message into host memory the endpoint owns (plain process memory on the
//!   verbs backend, a byte array in the simulator) — no system call, no device command, no
//!   clock, nothing that blocks or changes the transport's state; `LocalMemory` exposes
//!   nothing else of the transport. Handing the bytes out with the op instead would cost a
//!   gather list per coalesced frame (up to 64 headers and payloads).
//! - **Setup.** [`open`] asks the endpoint for a connection ([`Endpoint::open`]), performs the
//!   ops it emits (a QP created unless the QP cache has one, memory registered unless the
//!   buffers fit) and returns the half connection whose address goes to the peer; [`establish`]
//!   connects the QP to the peer's (`Transport::connect_qp`), reports it
//!   ([`Endpoint::handle_connected`]) and posts the receive WRs.
//!
//! A driver turn ([`turn`]) moves completions and congestion notifications from the transport
//! into the core, fires due timers, lets the application react to events, and posts the work
//! requests the core produced. The simulator calls [`turn`] with virtual time whenever a host
//! needs attention; the verbs backend calls it from its polling loop with real time.

use crate::endpoint::{Endpoint, Event, Op, SetupProgress};
use crate::error::{ConnId, XrdmaError};
use crate::{
    Config, QpAddress, QpCaps, QpNum, SendOpcode, SendWr, Sge, Time, Transport, WorkCompletion,
};
use serde::{Deserialize, Serialize};

pub use crate::qp_cache::QpCache;

/// An application running on one message stack `M`: an xrdma [`Endpoint`] unless said
/// otherwise. An application written for any `M: `[`crate::Messages`] runs over every stack.
pub trait Application<M: ?Sized = Endpoint> {
    /// An event from the stack at `now`; the application may send on `ep`.
    fn on_event(&mut self, now: Time, ep: &mut M, event: Event);
    /// Called on every turn (after events); the application may send what is due at `now`.
    fn on_turn(&mut self, now: Time, ep: &mut M);
    /// When the application next wants a turn even if nothing arrives (`None`: never).
    fn next_wake(&self) -> Option<Time>;
}

/// A boxed application is an application (workloads box their large per-host state).
impl<M: ?Sized, A: Application<M> + ?Sized> Application<M> for Box<A> {
    fn on_event(&mut self, now: Time, ep: &mut M, event: Event) {
        (**self).on_event(now, ep, event);
    }
    fn on_turn(&mut self, now: Time, ep: &mut M) {
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

/// One side of a connection being set up: QP and buffers ready, not yet connected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HalfConn {
    /// What to send to the peer.
    pub info: ConnInfo,
    /// Whether the QP came from the endpoint's QP cache (a closed connection's QP, reset).
    pub reused_qp: bool,
    conn: ConnId,
}

impl HalfConn {
    /// The connection, in [`crate::ConnState::Connecting`] until [`establish`].
    pub fn conn(&self) -> ConnId {
        self.conn
    }
}

/// The QP capacities a connection of an endpoint with `cfg` asks for ([`Config::qp_caps`]).
pub fn qp_caps(cfg: &Config) -> QpCaps {
    cfg.qp_caps()
}

/// Tell `ep` what `t` delivers ([`Endpoint::set_capabilities`]), open a connection on it
/// ([`Endpoint::open`]) and perform what it asks of `t` — a QP
/// created unless the endpoint's QP cache holds one with its capacities, a chunk registered
/// unless a closed connection's buffers or the MR pool serve it (with any other op pending) —
/// then send the returned [`HalfConn::info`] to the peer.
///
/// # Errors
/// [`XrdmaError::Setup`] with the transport's error from QP creation or registration;
/// [`XrdmaError::TooManyConnections`].
pub fn open<T: Transport + ?Sized>(ep: &mut Endpoint, t: &mut T) -> Result<HalfConn, XrdmaError> {
    ep.set_capabilities(t.capabilities());
    let conn = ep.open()?;
    let now = t.now();
    flush(now, ep, t);
    match ep.setup_progress(conn)? {
        SetupProgress::Ready { qp, reused_qp } => Ok(HalfConn {
            info: ConnInfo { qp },
            reused_qp,
            conn,
        }),
        // `flush` answered every op, so the setup is not waiting for anything.
        SetupProgress::Pending | SetupProgress::Connected => {
            Err(XrdmaError::NotEstablished { conn })
        }
    }
}

/// Connect `half` to the peer described by `remote`, tell the endpoint, and post the
/// connection's receive WRs at once (before the peer can send, so no RNR NAK at start-up).
///
/// # Errors
/// [`XrdmaError::Setup`] with the transport's error from connecting the QP (the connection
/// then fails and its QP and buffers go back for the next one).
pub fn establish<T: Transport + ?Sized>(
    ep: &mut Endpoint,
    t: &mut T,
    half: HalfConn,
    remote: &ConnInfo,
    peer: u32,
) -> Result<ConnId, XrdmaError> {
    let connected = t.connect_qp(half.info.qp.qpn, &remote.qp);
    let r = ep.handle_connected(half.conn, peer, connected);
    let now = t.now();
    flush(now, ep, t);
    r.map(|()| half.conn)
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
    while let Some(addr) = t.poll_returned() {
        ep.handle_returned(now, addr);
    }
    loop {
        scratch.wcs.clear();
        if t.poll_cq(&mut scratch.wcs, POLL_BATCH) == 0 {
            break;
        }
        for wc in &scratch.wcs {
            if let Some((addr, len)) = ep.handle_completion(now, wc) {
                match ep.landed_lendable().then(|| t.lend(addr, len)).flatten() {
                    Some(lease) => ep.handle_lent(now, lease),
                    None => ep.handle_landed(now, t.read_bytes(addr, len)),
                }
            }
        }
    }
    // A transport that declares no per-QP CNPs never reports one: it is not asked.
    if ep.polls_congestion() {
        while let Some(qpn) = t.poll_congestion() {
            ep.handle_congestion(now, qpn);
        }
    }
    // A port-level CNP count, where the transport has only that.
    if ep.polls_port_congestion() {
        let cnps = t.poll_port_cnps(now);
        ep.handle_port_congestion(now, cnps);
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
/// posted alone. A chain may end with an unsignaled WR only when more WRs of its QP follow in
/// this flush (the core signals the last one, see [`Endpoint::poll_op`]).
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
            Op::CreateQp { conn, caps } => t
                .create_qp(*caps)
                .map(|qp| ep.handle_qp_created(*conn, Ok(qp))),
            Op::ResetQp { qpn } => t.reset_qp(*qpn).map(|qp| ep.handle_qp_reset(*qpn, Ok(qp))),
            Op::RegisterMemory { len } => t.register_memory(*len).map(|mr| ep.add_memory(mr)),
        };
        if let Err(e) = r {
            ep.handle_post_error(&op, e);
        }
    }
    chain.post(ep, t);
}

/// `ep`'s snapshot ([`Endpoint::snapshot`]) at `t`'s clock, with what `t` observes of each of
/// its live QPs ([`Endpoint::live_qpns`], [`Transport::observe_qp`]): the `stat` tool's row.
pub fn snapshot<T: Transport + ?Sized>(ep: &Endpoint, t: &T) -> crate::EndpointSnapshot {
    let qps: crate::QpObservations = ep
        .live_qpns()
        .into_iter()
        .map(|qpn| (qpn, t.observe_qp(qpn)))
        .collect();
    ep.snapshot(t.now(), &qps)
}
