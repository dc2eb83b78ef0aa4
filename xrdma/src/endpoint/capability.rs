//! What the endpoint knows of its transport: the [`Capabilities`] it declared, and so the
//! congestion signals the send windows can react to (and the port-level CNPs they take).

use super::Endpoint;
use crate::{Capabilities, ConnStats, Time, WindowSignals};

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

    /// Whether the driver polls the transport's port CNP count
    /// ([`crate::Transport::poll_port_cnps`]) for [`Endpoint::handle_port_congestion`]: when
    /// the transport declared it counts them ([`Capabilities::cnp_per_port`]) and reports no
    /// CNPs per QP.
    pub fn polls_port_congestion(&self) -> bool {
        self.caps.is_some_and(|c| c.cnp_per_port && !c.cnp_per_qp)
    }

    /// The congestion signals this endpoint's send windows shrink on, from its configuration
    /// and its transport's capabilities: no ECN reaction over a transport that reports no
    /// CNPs per QP (or before it is known), whatever the window's β.
    pub fn window_signals(&self) -> WindowSignals {
        WindowSignals::new(&self.cfg, self.caps)
    }

    /// At `now` the port counted `cnps` new CNPs ([`crate::Transport::poll_port_cnps`])
    /// without saying for which QP: each connection with bytes in flight takes it as one ECN
    /// echo, as [`Endpoint::handle_congestion`] for its QP (its window shrinks by β at most
    /// once per RTT, however many CNPs arrived). Returns how many connections it reached.
    pub fn handle_port_congestion(&mut self, now: Time, cnps: u64) -> usize {
        if cnps == 0 {
            return 0;
        }
        let mut reached = 0;
        for (_, c) in self
            .conns
            .iter_mut()
            .filter(|(_, c)| c.state.is_live() && c.inflight_bytes > 0)
        {
            c.stats.ecn_echoes += 1;
            c.window.on_congestion(now);
            reached += 1;
        }
        reached
    }

    /// The counters of every connection record the endpoint holds, open or not, in slot
    /// order (a slot a later connection reused holds only the later one's): what a runner
    /// sums for a run's window tally.
    pub fn all_stats(&self) -> impl Iterator<Item = ConnStats> + '_ {
        self.conns.iter().filter_map(move |(id, _)| self.stats(id))
    }
}
