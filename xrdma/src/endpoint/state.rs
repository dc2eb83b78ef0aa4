//! Where a connection is in its life, and every way it moves on.
//!
//! ```text
//!  Connecting ─connected─▶ Established ─close or peer's FIN─▶ Draining ─FIN posted─▶ Closing
//!      │                       │                                 │                  │
//!      │                       │                                 │      FINs through, nothing
//!      │                       │                                 │      left: Closed
//!      └──── setup error ──────┴──────── failure ────────────────┴──────────────────┴─▶ Failed
//! ```
//!
//! - `Connecting → Established`: the driver connected the QP ([`Endpoint::handle_connected`]).
//! - `Connecting → Failed`: the QP could not be created or connected, or the buffers not
//!   registered.
//! - `Established → Draining`: [`Endpoint::close`], or the peer's FIN arrived first. No new
//!   messages are accepted; the queued ones still go out, then the FIN.
//! - `Draining → Closing`: the FIN is posted.
//! - `Closing → Closed`: the FIN is ACKed, the peer's FIN has arrived, and nothing is left in
//!   flight, granted or owed (checked by `maybe_closed`).
//! - any state but `Closed` `→ Failed`: a completion in error, a timeout, a protocol
//!   violation, a refused post.
//!
//! `Closed` and `Failed` are final: the connection's QP is reset ([`crate::Op::ResetQp`]) and,
//! once the reset is reported, its slot serves the next connection. The methods below are the
//! only places a connection's state changes.
//!
//! [`Endpoint::handle_connected`]: super::Endpoint::handle_connected
//! [`Endpoint::close`]: super::Endpoint::close

/// A connection's state (see the module documentation for the transitions).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConnState {
    /// Opened; waiting for its QP and buffers, then for the driver to connect the QP.
    Connecting,
    /// Open both ways.
    Established,
    /// Closing: no new messages are accepted; the queued ones go out, then the FIN.
    Draining {
        /// Whether the peer's FIN has arrived.
        peer_fin: bool,
    },
    /// The FIN is posted: waiting for its ACK, the peer's FIN and the last completions.
    Closing {
        /// Whether the FIN was ACKed.
        fin_acked: bool,
        /// Whether the peer's FIN has arrived.
        peer_fin: bool,
    },
    /// Both sides closed and everything was ACKed.
    Closed,
    /// The connection failed; its messages were failed and its buffers reclaimed.
    Failed,
}

impl ConnState {
    /// Whether the connection has ended (closed or failed): nothing more happens on it.
    pub fn is_ended(self) -> bool {
        matches!(self, ConnState::Closed | ConnState::Failed)
    }

    /// Whether the connection carries traffic: established, draining or closing.
    pub fn is_live(self) -> bool {
        matches!(
            self,
            ConnState::Established | ConnState::Draining { .. } | ConnState::Closing { .. }
        )
    }

    /// Whether a close has begun (draining or closing), so no new message is accepted.
    pub fn is_closing(self) -> bool {
        matches!(self, ConnState::Draining { .. } | ConnState::Closing { .. })
    }

    /// Whether the FIN is still to be posted: draining.
    pub fn fin_due(self) -> bool {
        matches!(self, ConnState::Draining { .. })
    }

    /// Whether both FINs are through: ours ACKed and the peer's arrived.
    pub(super) fn fins_done(self) -> bool {
        matches!(
            self,
            ConnState::Closing {
                fin_acked: true,
                peer_fin: true
            }
        )
    }

    /// The QP is connected: `Connecting → Established`.
    pub(super) fn on_connected(&mut self) {
        if *self == ConnState::Connecting {
            *self = ConnState::Established;
        }
    }

    /// The application closes: `Established → Draining`. Returns whether the state changed.
    pub(super) fn on_close(&mut self) -> bool {
        if *self == ConnState::Established {
            *self = ConnState::Draining { peer_fin: false };
            return true;
        }
        false
    }

    /// The peer's FIN arrived: `Established → Draining`, or noted while draining or closing.
    pub(super) fn on_peer_fin(&mut self) {
        match self {
            ConnState::Established => *self = ConnState::Draining { peer_fin: true },
            ConnState::Draining { peer_fin } | ConnState::Closing { peer_fin, .. } => {
                *peer_fin = true;
            }
            _ => {}
        }
    }

    /// The FIN was posted: `Draining → Closing`.
    pub(super) fn on_fin_sent(&mut self) {
        if let ConnState::Draining { peer_fin } = *self {
            *self = ConnState::Closing {
                fin_acked: false,
                peer_fin,
            };
        }
    }

    /// The FIN was ACKed (while closing).
    pub(super) fn on_fin_acked(&mut self) {
        if let ConnState::Closing { fin_acked, .. } = self {
            *fin_acked = true;
        }
    }

    /// Everything is through: `Closing → Closed`.
    pub(super) fn on_closed(&mut self) {
        if self.fins_done() {
            *self = ConnState::Closed;
        }
    }

    /// The connection fails: any state but the final ones `→ Failed`. Returns whether the
    /// state changed.
    pub(super) fn on_failed(&mut self) -> bool {
        if self.is_ended() {
            return false;
        }
        *self = ConnState::Failed;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::ConnState::{self, *};

    #[test]
    fn a_close_runs_through_draining_and_closing() {
        let mut s = Connecting;
        s.on_close();
        assert_eq!(s, Connecting, "nothing to close before it is connected");
        s.on_connected();
        assert!(s.on_close());
        assert!(!s.on_close(), "a second close does nothing");
        assert_eq!(s, Draining { peer_fin: false });
        s.on_fin_sent();
        s.on_closed();
        assert_eq!(
            s,
            Closing {
                fin_acked: false,
                peer_fin: false
            },
            "not closed before both FINs"
        );
        s.on_fin_acked();
        s.on_peer_fin();
        assert!(s.fins_done());
        s.on_closed();
        assert_eq!(s, Closed);
        assert!(!s.on_failed(), "a closed connection does not fail");
    }

    #[test]
    fn the_peers_fin_starts_draining_and_failure_is_final() {
        let mut s = Established;
        s.on_peer_fin();
        assert_eq!(s, Draining { peer_fin: true });
        assert!(s.is_closing() && s.fin_due() && s.is_live());
        assert!(s.on_failed());
        assert_eq!(s, Failed);
        s.on_connected();
        s.on_peer_fin();
        assert_eq!(s, Failed);
        let mut c: ConnState = Connecting;
        assert!(c.on_failed());
        assert!(c.is_ended() && !c.is_live());
    }
}
