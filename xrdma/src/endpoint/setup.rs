//! Connection setup and teardown as inputs and outputs: taking a QP (from the QP cache, else
//! [`Op::CreateQp`]), carving the staging ring and receive buffers (spare ones of an ended
//! connection, else from the MR pool, registering a chunk by [`Op::RegisterMemory`] when it is
//! full), connecting, and resetting the QP of an ended connection ([`Op::ResetQp`]) so its
//! QP, buffers and slot serve the next connection.
//!
//! The driver performs each op and hands the outcome back: [`Endpoint::handle_qp_created`],
//! [`Endpoint::add_memory`] (or [`Endpoint::handle_post_error`] for a refused registration),
//! [`Endpoint::handle_connected`], [`Endpoint::handle_qp_reset`]. Nothing here calls a
//! transport.

use super::{Connection, Endpoint, Op, SetupProgress, MAX_CONNECTIONS};
use crate::error::{ConnId, XrdmaError};
use crate::mr_pool::Region;
use crate::ring::SendRing;
use crate::{ConnSetup, ConnState, MemoryRegion, QpAddress, QpNum, TransportError, MR_CHUNK_BYTES};

/// What a connection in [`ConnState::Connecting`] has got so far, and why its setup failed.
#[derive(Clone, Debug, Default)]
pub(super) struct HalfSetup {
    qp: Option<QpAddress>,
    reused_qp: bool,
    ring: Option<Region>,
    recv: Option<Region>,
    error: Option<TransportError>,
}

/// What an [`Op::RegisterMemory`] was asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum MemoryFor {
    /// Landing buffers for announced large messages ([`Endpoint::grant_pending`]).
    Landing,
    /// The staging ring or receive buffers of a connection being set up.
    Setup(ConnId),
}

/// An ended connection's QP waiting for its reset to be reported.
#[derive(Clone, Copy, Debug)]
pub(super) struct Resetting {
    pub(super) qpn: QpNum,
    pub(super) conn: ConnId,
    /// The staging ring and receive buffers, spare once the QP is reset (the NIC no longer
    /// writes into them).
    pub(super) buffers: Option<(Region, Region)>,
    /// Whether the reset QP goes to the QP cache (a cleanly closed or never used QP; a failed
    /// connection's is not reused).
    pub(super) cache: bool,
}

impl Endpoint {
    /// Open a connection: it starts in [`ConnState::Connecting`] in a free slot of the
    /// connection table: the most recently released one whose connection's end the
    /// application has heard (no [`crate::Event::Closed`] or [`crate::Event::ConnectionFailed`]
    /// naming it waits for [`Endpoint::poll_event`]), so an id stays valid at least until the
    /// application has polled the event that ended it; else a new slot. Its QP comes from the QP cache when one with
    /// this endpoint's capacities ([`crate::Config::qp_caps`]) waits there, else by an
    /// [`Op::CreateQp`]; its staging ring and receive buffers are an ended connection's, else
    /// carved from the MR pool, else from a chunk asked for by [`Op::RegisterMemory`]. Once
    /// [`Endpoint::setup_progress`] says [`SetupProgress::Ready`], send the QP's address to
    /// the peer, connect the QP and report it with [`Endpoint::handle_connected`].
    ///
    /// # Errors
    /// [`XrdmaError::TooManyConnections`] when all [`MAX_CONNECTIONS`] slots serve
    /// connections that have not ended.
    pub fn open(&mut self) -> Result<ConnId, XrdmaError> {
        let record = Connection::new(&self.cfg);
        let conn = match self.conns.free_slot(|id| self.end_unheard(id)) {
            Some(slot) => self.conns.reuse(slot, record),
            None => self.conns.push(record),
        }
        .ok_or(XrdmaError::TooManyConnections {
            max: MAX_CONNECTIONS,
        })?;
        if conn.generation() > 0 {
            // The slot's last connection has ended: drop what the queues still hold for it.
            let slot = conn.slot();
            self.tx_ready.retain(|c| c.slot() != slot);
            self.ack_list.retain(|c| c.slot() != slot);
            self.waiting_memory.retain(|c| c.slot() != slot);
            self.waiting_budget.retain(|c| c.slot() != slot);
            self.timers.set(slot, None);
        }
        let caps = self.cfg.qp_caps();
        match self.qp_cache.take(caps) {
            Some(qp) => {
                let half = &mut self.conns[conn].half;
                half.qp = Some(qp);
                half.reused_qp = true;
            }
            None => self.ops.push_back(Op::CreateQp { conn, caps }),
        }
        match self.spare_buffers.pop() {
            Some((ring, recv)) => {
                let half = &mut self.conns[conn].half;
                half.ring = Some(ring);
                half.recv = Some(recv);
            }
            None => self.carve_setup(conn, false),
        }
        Ok(conn)
    }

    /// Carve `conn`'s missing staging ring, then its receive buffers, from the MR pool; ask
    /// for a chunk of at least [`MR_CHUNK_BYTES`] when the pool is full. `registered`: a chunk
    /// asked for this connection has just been added, so a region that still does not fit
    /// fails the setup (the transport registered less than asked).
    fn carve_setup(&mut self, conn: ConnId, mut registered: bool) {
        let wants = [self.cfg.ring_bytes(), self.cfg.recv_buffer_bytes()];
        for (k, len) in wants.into_iter().enumerate() {
            let half = &self.conns[conn].half;
            if [half.ring, half.recv][k].is_some() {
                continue;
            }
            let Some(r) = self.pool.alloc(len) else {
                if registered {
                    let reason = "chunk too small".into();
                    let source = TransportError::RegistrationFailed { len, reason };
                    return self.fail_setup(conn, source);
                }
                self.registrations.push_back(super::MemoryFor::Setup(conn));
                let len = len.max(MR_CHUNK_BYTES);
                self.ops.push_back(Op::RegisterMemory { len });
                return;
            };
            registered = false;
            let half = &mut self.conns[conn].half;
            if k == 0 {
                half.ring = Some(r);
            } else {
                half.recv = Some(r);
            }
        }
    }

    /// The outcome of an [`Op::CreateQp`] for `conn`: its QP, or why there is none (the
    /// connection then fails, [`XrdmaError::Setup`]). A QP created for a connection that is no
    /// longer being set up goes to the QP cache.
    pub fn handle_qp_created(&mut self, conn: ConnId, result: Result<QpAddress, TransportError>) {
        let connecting = self
            .conns
            .get(conn)
            .is_some_and(|c| c.state == ConnState::Connecting);
        match result {
            Ok(qp) => {
                self.qp_cache.count_created();
                if connecting {
                    self.conns[conn].half.qp = Some(qp);
                } else {
                    self.qp_cache.put(qp, self.cfg.qp_caps());
                }
            }
            Err(source) if connecting => self.fail_setup(conn, source),
            Err(_) => {}
        }
    }

    /// How far `conn`'s setup is.
    ///
    /// # Errors
    /// [`XrdmaError::Setup`] when its setup failed (the transport's reason),
    /// [`XrdmaError::ConnectionFailed`] when it failed later, [`XrdmaError::UnknownConnection`],
    /// [`XrdmaError::StaleConnection`].
    pub fn setup_progress(&self, conn: ConnId) -> Result<SetupProgress, XrdmaError> {
        let Some(c) = self.conns.get(conn) else {
            return Err(self.lookup_error(conn));
        };
        let h = &c.half;
        match c.state {
            ConnState::Connecting => Ok(match (h.qp, h.ring, h.recv) {
                (Some(qp), Some(_), Some(_)) => SetupProgress::Ready {
                    qp,
                    reused_qp: h.reused_qp,
                },
                _ => SetupProgress::Pending,
            }),
            ConnState::Failed => Err(match &h.error {
                Some(source) => XrdmaError::Setup {
                    conn,
                    source: source.clone(),
                },
                None => XrdmaError::ConnectionFailed { conn },
            }),
            _ => Ok(SetupProgress::Connected),
        }
    }

    /// The driver connected `conn`'s QP to the peer labelled `peer` (`result`: the
    /// transport's answer to `connect_qp`). On success the connection is established and its
    /// `recv_depth` receive WRs, one per receive buffer slot, are queued for the driver to
    /// post; on error it fails, its QP is reset and cached, and its buffers kept.
    ///
    /// # Errors
    /// [`XrdmaError::Setup`] with the transport's error; [`XrdmaError::NotEstablished`] when
    /// the setup is not [`SetupProgress::Ready`]; [`XrdmaError::ConnectionFailed`],
    /// [`XrdmaError::UnknownConnection`], [`XrdmaError::StaleConnection`].
    pub fn handle_connected(
        &mut self,
        conn: ConnId,
        peer: u32,
        result: Result<(), TransportError>,
    ) -> Result<(), XrdmaError> {
        let Some(c) = self.conns.get_mut(conn) else {
            return Err(self.lookup_error(conn));
        };
        match c.state {
            ConnState::Connecting => {}
            ConnState::Failed => return Err(XrdmaError::ConnectionFailed { conn }),
            _ => return Ok(()),
        }
        let h = &c.half;
        let (Some(qp), Some(ring), Some(recv)) = (h.qp, h.ring, h.recv) else {
            return Err(XrdmaError::NotEstablished { conn });
        };
        if let Err(source) = result {
            self.fail_setup(conn, source.clone());
            return Err(XrdmaError::Setup { conn, source });
        }
        let setup = ConnSetup {
            qpn: qp.qpn,
            peer,
            send_ring: ring,
            recv_buffers: recv,
        };
        c.setup = setup;
        c.ring = SendRing::new(ring.len);
        c.state.on_connected();
        self.by_qp.insert(setup.qpn, conn);
        let slots = self.recv_slots(&setup);
        for slot in 0..slots {
            let op = self.recv_op(conn, &setup, slot);
            self.ops.push_back(op);
        }
        Ok(())
    }

    /// Registered memory the driver obtained for an [`Op::RegisterMemory`], in the order the
    /// ops were polled: a connection being set up carves its buffers from it, or landing
    /// buffers waiting for it are granted now.
    pub fn add_memory(&mut self, mr: MemoryRegion) {
        self.pool.add_chunk(mr);
        match self.registrations.pop_front() {
            Some(MemoryFor::Setup(conn)) => {
                let connecting = self
                    .conns
                    .get(conn)
                    .is_some_and(|c| c.state == ConnState::Connecting);
                if connecting {
                    self.carve_setup(conn, true);
                }
            }
            Some(MemoryFor::Landing) | None => {
                self.memory_requested = false;
                let waiting = std::mem::take(&mut self.waiting_memory);
                for conn in waiting {
                    self.grant_pending(conn);
                }
            }
        }
    }

    /// The driver could not register the memory of the oldest [`Op::RegisterMemory`]: the
    /// connection being set up, or every connection waiting for landing memory, fails.
    pub(super) fn memory_refused(&mut self, error: TransportError) {
        match self.registrations.pop_front() {
            Some(MemoryFor::Setup(conn)) => {
                let connecting = self
                    .conns
                    .get(conn)
                    .is_some_and(|c| c.state == ConnState::Connecting);
                if connecting {
                    self.fail_setup(conn, error);
                }
            }
            Some(MemoryFor::Landing) | None => {
                self.memory_requested = false;
                for conn in std::mem::take(&mut self.waiting_memory) {
                    let source = error.clone();
                    self.fail(conn, XrdmaError::Memory { conn, source });
                }
            }
        }
    }

    /// Fail `conn` during setup: no events (the application never had the connection); its
    /// QP, if it has one, is reset and cached; its buffers are kept for the next connection.
    fn fail_setup(&mut self, conn: ConnId, source: TransportError) {
        let c = &mut self.conns[conn];
        if c.state != ConnState::Connecting || !c.state.on_failed() {
            return;
        }
        let h = &mut c.half;
        h.error = Some(source);
        let buffers = h.ring.zip(h.recv);
        match h.qp {
            Some(qp) => self.reset_qp(qp.qpn, conn, buffers, true),
            None => {
                self.spare_buffers.extend(buffers);
                self.conns.release(conn);
            }
        }
    }

    /// Ask the driver to reset `qpn`, the QP of `conn`, which has ended; `buffers` become
    /// spare and `cache` says whether the QP goes to the QP cache once the reset is reported.
    pub(super) fn reset_qp(
        &mut self,
        qpn: QpNum,
        conn: ConnId,
        buffers: Option<(Region, Region)>,
        cache: bool,
    ) {
        self.resetting.push(Resetting {
            qpn,
            conn,
            buffers,
            cache,
        });
        self.ops.push_back(Op::ResetQp { qpn });
    }

    /// The outcome of an [`Op::ResetQp`]: the QP's new address (RESET, back in INIT with a
    /// new first PSN), or why the reset failed. Once reset, the NIC no longer touches the
    /// connection's buffers, so they serve the next connection, and a cleanly closed
    /// connection's QP goes to the QP cache. Either way the connection's slot is released: its
    /// record stays readable until an [`Endpoint::open`] reuses the slot. A QP that could not
    /// be reset is not reused, nor are its buffers.
    pub fn handle_qp_reset(&mut self, qpn: QpNum, result: Result<QpAddress, TransportError>) {
        let Some(i) = self.resetting.iter().position(|r| r.qpn == qpn) else {
            return;
        };
        let r = self.resetting.swap_remove(i);
        if let Ok(addr) = result {
            self.spare_buffers.extend(r.buffers);
            if r.cache {
                self.qp_cache.put(addr, self.cfg.qp_caps());
            }
        }
        if self.by_qp.get(&qpn) == Some(&r.conn) {
            self.by_qp.remove(&qpn);
        }
        self.conns.release(r.conn);
    }

    /// Whether an event that ends `conn` ([`crate::Event::Closed`],
    /// [`crate::Event::ConnectionFailed`]) still waits for [`Endpoint::poll_event`].
    fn end_unheard(&self, conn: ConnId) -> bool {
        self.events.iter().any(|e| match e {
            crate::Event::Closed { conn: c } | crate::Event::ConnectionFailed { conn: c, .. } => {
                *c == conn
            }
            _ => false,
        })
    }
}
