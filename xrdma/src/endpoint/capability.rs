//! What the endpoint knows of its transport: the [`Capabilities`] it declared, and so the
//! congestion signals the send windows can react to.

use super::Endpoint;
use crate::{Capabilities, WindowSignals};

impl Endpoint {
    /// Tell the endpoint what its transport delivers ([`crate::Transport::capabilities`]).
    /// [`crate::driver::open`] does it on every connection it opens; a driver of its own calls
    /// it before it drives the endpoint.
    pub fn set_capabilities(&mut self, caps: Capabilities) {
        self.caps = Some(caps);
    }

    /// What the transport declared it delivers, once told ([`Endpoint::set_capabilities`]).
    pub fn capabilities(&self) -> Option<Capabilities> {
        self.caps
    }

    /// Whether the driver polls the transport's congestion notifications
    /// ([`crate::Transport::poll_congestion`]) for [`Endpoint::handle_congestion`]: unless the
    /// transport declared that it never reports any ([`Capabilities::cnp_per_qp`] `false`).
    pub fn polls_congestion(&self) -> bool {
        self.caps.map_or(true, |c| c.cnp_per_qp)
    }

    /// The congestion signals this endpoint's send windows shrink on, from its configuration
    /// and its transport's capabilities: no ECN reaction over a transport that reports no
    /// CNPs per QP (or before it is known), whatever the window's β.
    pub fn window_signals(&self) -> WindowSignals {
        WindowSignals::new(&self.cfg, self.caps)
    }
}
