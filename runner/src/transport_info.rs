//! The transport's RC QP attributes and capabilities, in the result schema.

use xrdma::{Capabilities, Endpoint, RcParams, Transport, WindowSignals};
use xrdma_reports as rep;

/// `rc` (as applied) and `caps` as the result records them, with the codes decoded.
pub fn report(rc: RcParams, caps: Capabilities) -> rep::TransportInfo {
    let ns = |t: xrdma::Span| t.as_ps() / 1000;
    rep::TransportInfo {
        rc: rep::RcAttributes {
            local_ack_timeout: rc.local_ack_timeout,
            local_ack_timeout_ns: (rc.local_ack_timeout != 0).then(|| ns(rc.ack_timeout())),
            retry_cnt: rc.retry_cnt,
            rnr_retry: rc.rnr_retry,
            min_rnr_timer: rc.min_rnr_timer,
            min_rnr_timer_ns: ns(rc.rnr_timer()),
            path_mtu: rc.path_mtu,
        },
        capabilities: rep::TransportCapabilities {
            cnp_per_qp: caps.cnp_per_qp,
            ecn_marks: caps.ecn_marks,
            buffer_occupancy: caps.buffer_occupancy,
            port_counters: caps.port_counters,
        },
        congestion_signals: None,
    }
}

/// The congestion signals `w` lists, in the result's terms.
pub fn signals(w: WindowSignals) -> Vec<rep::CongestionSignal> {
    let mut v = Vec::new();
    if w.ecn {
        v.push(rep::CongestionSignal::EcnCnp);
    }
    if w.delay {
        v.push(rep::CongestionSignal::QueueingDelay);
    }
    v
}

/// Record in `r`'s `transport` the congestion signals the run's send windows could shrink on
/// ([`Endpoint::window_signals`]). Every endpoint of a run is configured alike; the first
/// that knows its transport's capabilities (it opened a connection) speaks for all.
pub fn record_window_signals(r: &mut rep::RunResult, eps: &[Endpoint]) {
    let known = eps.iter().find(|e| e.capabilities().is_some());
    if let (Some(t), Some(ep)) = (r.transport.as_mut(), known) {
        t.congestion_signals = Some(signals(ep.window_signals()));
    }
}

/// What transport `t` reports it applies ([`Transport::rc_params`]) and delivers
/// ([`Transport::capabilities`]).
pub fn of<T: Transport + ?Sized>(t: &T) -> rep::TransportInfo {
    report(t.rc_params(), t.capabilities())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_decoded() {
        let r = report(RcParams::default(), Capabilities::ALL);
        assert_eq!(r.rc.local_ack_timeout_ns, Some(16_777_216));
        assert_eq!(r.rc.min_rnr_timer_ns, 10_000);
        assert_eq!(r.rc.path_mtu, 4096);
        let never = report(
            RcParams {
                local_ack_timeout: 0,
                ..RcParams::default()
            },
            Capabilities::NONE,
        );
        assert_eq!(never.rc.local_ack_timeout_ns, None);
        assert!(!never.capabilities.port_counters);
    }

    #[test]
    fn window_signals_are_listed_in_order() {
        let both = WindowSignals {
            ecn: true,
            delay: true,
        };
        assert_eq!(
            signals(both),
            vec![
                rep::CongestionSignal::EcnCnp,
                rep::CongestionSignal::QueueingDelay
            ]
        );
        assert!(signals(WindowSignals::default()).is_empty());
    }
}
