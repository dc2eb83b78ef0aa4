//! The transport's RC QP attributes and capabilities, in the result schema.

use crate::workload::SenderRecord;
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
        capabilities: caps,
        congestion_signals: None,
        window: None,
    }
}

/// The congestion signals `w` lists, in the result's terms.
pub fn signals(w: WindowSignals) -> Vec<rep::CongestionSignal> {
    let mut v = Vec::new();
    if w.ecn {
        v.push(rep::CongestionSignal::EcnCnp);
    }
    if w.ecn_port {
        v.push(rep::CongestionSignal::EcnPortCnp);
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

/// How the send windows of `ep`'s connections moved: their decreases, ECN echoes and the
/// smallest window, summed over its connections.
pub fn window_tally(ep: &Endpoint) -> rep::WindowTally {
    ep.all_stats().fold(rep::WindowTally::default(), |t, s| {
        t.merge(rep::WindowTally {
            connections: 1,
            decreases: s.window_decreases,
            delay_decreases: s.window_delay_decreases,
            ecn_echoes: s.ecn_echoes,
            smallest_bytes: Some(s.smallest_window),
        })
    })
}

/// Give each of `records` its sender's window tally, from the endpoint `ep_of(host)` runs
/// it on (none: the record stays without one).
pub fn add_windows<'a>(records: &mut [SenderRecord], ep_of: impl Fn(u32) -> Option<&'a Endpoint>) {
    for r in records {
        if let Some(ep) = ep_of(r.host) {
            r.window = Some(window_tally(ep));
        }
    }
}

/// The senders' windows together, for the result's `transport.window`; `None` when no
/// record carries a tally.
pub fn senders_window(records: &[SenderRecord]) -> Option<rep::WindowTally> {
    records
        .iter()
        .filter_map(|r| r.window)
        .reduce(rep::WindowTally::merge)
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
            ecn_port: false,
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
        let port = WindowSignals {
            ecn_port: true,
            delay: true,
            ..WindowSignals::default()
        };
        assert_eq!(
            signals(port),
            vec![
                rep::CongestionSignal::EcnPortCnp,
                rep::CongestionSignal::QueueingDelay
            ]
        );
    }

    #[test]
    fn the_senders_windows_add_up() {
        let rec = |host, window| SenderRecord {
            host,
            messages: vec![],
            errors: vec![],
            window,
        };
        let t = |d, s| rep::WindowTally {
            connections: 1,
            decreases: d,
            delay_decreases: d,
            ecn_echoes: 0,
            smallest_bytes: Some(s),
        };
        assert_eq!(senders_window(&[rec(1, None)]), None);
        let got = senders_window(&[
            rec(1, Some(t(3, 8192))),
            rec(2, None),
            rec(3, Some(t(2, 4096))),
        ]);
        assert_eq!(
            got,
            Some(rep::WindowTally {
                connections: 2,
                decreases: 5,
                delay_decreases: 5,
                ecn_echoes: 0,
                smallest_bytes: Some(4096),
            })
        );
    }
}
