//! What the run's transport applied and delivers: the RC QP attributes every QP was connected
//! with and the backend's declared capabilities (the `transport` key of a result).

use serde::{Deserialize, Serialize};
use std::fmt::Write as _;
use xrdma::Capabilities;

/// The transport of a run: its RC QP attributes and capabilities, as the backend reported them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct TransportInfo {
    /// The RC QP attributes applied to every QP.
    pub rc: RcAttributes,
    /// What the backend observes and delivers, as its transport declares it (the core's
    /// record: a counter it cannot observe is not a measured zero).
    pub capabilities: Capabilities,
    /// The congestion signals the middleware's send windows shrank on in this run (empty:
    /// none could act, e.g. a device that reports no per-QP CNPs and no link rate for the
    /// delay law); absent from results written before the runner recorded it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub congestion_signals: Option<Vec<CongestionSignal>>,
    /// How the senders' send windows moved over the run; absent from results written before
    /// the runner recorded it, and where no sender's record carried it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<WindowTally>,
}

/// How the send windows of the senders' connections (the data direction) moved over a run,
/// summed over the connections.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct WindowTally {
    /// Connections counted.
    pub connections: u64,
    /// Window decreases applied, on every signal (at most one per connection per RTT).
    pub decreases: u64,
    /// Those of the decreases that were on queueing delay.
    pub delay_decreases: u64,
    /// ECN echoes the windows heard (per-QP CNPs, or port CNPs attributed to a connection
    /// with bytes in flight), applied or not.
    pub ecn_echoes: u64,
    /// The smallest window any of the connections had, bytes; `null` with no connection.
    pub smallest_bytes: Option<u64>,
}

impl WindowTally {
    /// `self` and `other` together: counts added, the smaller of the smallest windows.
    pub fn merge(self, other: WindowTally) -> WindowTally {
        WindowTally {
            connections: self.connections + other.connections,
            decreases: self.decreases + other.decreases,
            delay_decreases: self.delay_decreases + other.delay_decreases,
            ecn_echoes: self.ecn_echoes + other.ecn_echoes,
            smallest_bytes: match (self.smallest_bytes, other.smallest_bytes) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            },
        }
    }
}

/// A congestion signal a send window shrinks on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CongestionSignal {
    /// ECN CE marks in the network, echoed to the sender as per-QP CNPs: the window shrinks
    /// by β.
    EcnCnp,
    /// Queueing delay above the target, from RTT samples against the link rate.
    QueueingDelay,
    /// ECN CE marks echoed as CNPs that the device counts per port only (mlx5's
    /// `rp_cnp_handled`): a rise shrinks by β the window of every connection with bytes in
    /// flight.
    EcnPortCnp,
}

/// The RC QP attributes applied (the InfiniBand codes, as passed to `ibv_modify_qp`, and
/// what they decode to).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct RcAttributes {
    /// Local ACK timeout code (5 bits): 4.096 µs · 2^code.
    pub local_ack_timeout: u8,
    /// The local ACK timeout, nanoseconds; `None` for code 0 (no timeout).
    pub local_ack_timeout_ns: Option<u64>,
    /// Transport retries after a local ACK timeout (3 bits).
    pub retry_cnt: u8,
    /// RNR retries (3 bits; 7 = infinite).
    pub rnr_retry: u8,
    /// Minimum RNR NAK timer code (5 bits, IB Spec vol. 1 Table 45).
    pub min_rnr_timer: u8,
    /// The minimum RNR NAK timer, nanoseconds.
    pub min_rnr_timer_ns: u64,
    /// Path MTU applied, bytes (the smaller of the configured one and the port's).
    pub path_mtu: u32,
}

impl TransportInfo {
    /// Two summary lines: the RC attributes with their decoded values, and the capabilities.
    pub fn summary_lines(&self) -> String {
        let rc = &self.rc;
        let ms = |ns: u64| ns as f64 / 1e6;
        let timeout = match rc.local_ack_timeout_ns {
            Some(ns) => format!("{:.3} ms", ms(ns)),
            None => "none".into(),
        };
        let rnr_retry = if rc.rnr_retry == 7 {
            "7 (infinite)".to_string()
        } else {
            rc.rnr_retry.to_string()
        };
        let mut o = String::new();
        let _ = writeln!(
            o,
            "rc QP      local ACK timeout {} ({timeout})   retry-cnt {}   rnr-retry {rnr_retry}   \
             min RNR timer {} ({:.3} ms)   path MTU {} B",
            rc.local_ack_timeout,
            rc.retry_cnt,
            rc.min_rnr_timer,
            ms(rc.min_rnr_timer_ns),
            rc.path_mtu
        );
        let c = &self.capabilities;
        let yes_no = |b: bool| if b { "yes" } else { "no" };
        let _ = writeln!(
            o,
            "transport  per-QP CNPs {}   port CNPs {}   ECN marks {}   buffer occupancy {}   \
             port counters {}",
            yes_no(c.cnp_per_qp),
            yes_no(c.cnp_per_port),
            yes_no(c.ecn_marks),
            yes_no(c.buffer_occupancy),
            yes_no(c.port_counters)
        );
        if let Some(signals) = &self.congestion_signals {
            let names: Vec<&str> = signals
                .iter()
                .map(|s| match s {
                    CongestionSignal::EcnCnp => "ECN (per-QP CNPs)",
                    CongestionSignal::QueueingDelay => "queueing delay",
                    CongestionSignal::EcnPortCnp => "ECN (port CNPs)",
                })
                .collect();
            let _ = writeln!(
                o,
                "window     shrinks on {}",
                if names.is_empty() {
                    "no congestion signal".to_string()
                } else {
                    names.join(", ")
                }
            );
        }
        if let Some(w) = &self.window {
            let smallest = w
                .smallest_bytes
                .map_or("-".to_string(), |b| format!("{b} B"));
            let _ = writeln!(
                o,
                "window     {} decreases ({} on delay) over {} connections, {} ECN echoes, \
                 smallest {smallest}",
                w.decreases, w.delay_decreases, w.connections, w.ecn_echoes
            );
        }
        o
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_lines_decode_the_codes() {
        let t = TransportInfo {
            rc: RcAttributes {
                local_ack_timeout: 12,
                local_ack_timeout_ns: Some(16_777_216),
                retry_cnt: 7,
                rnr_retry: 7,
                min_rnr_timer: 1,
                min_rnr_timer_ns: 10_000,
                path_mtu: 1024,
            },
            capabilities: {
                let mut c = Capabilities::NONE;
                c.port_counters = true;
                c
            },
            congestion_signals: None,
            window: None,
        };
        assert_eq!(
            t.summary_lines(),
            "rc QP      local ACK timeout 12 (16.777 ms)   retry-cnt 7   rnr-retry 7 (infinite)   \
             min RNR timer 1 (0.010 ms)   path MTU 1024 B\n\
             transport  per-QP CNPs no   port CNPs no   ECN marks no   buffer occupancy no   \
             port counters yes\n"
        );
        let v = serde_json::to_value(&t).unwrap();
        assert_eq!(v["rc"]["local-ack-timeout"], 12);
        assert_eq!(v["rc"]["path-mtu"], 1024);
        assert_eq!(v["capabilities"]["port-counters"], true);
        assert!(
            v.get("congestion-signals").is_none(),
            "absent when not recorded"
        );
    }

    #[test]
    fn congestion_signals_are_listed_and_read_as_absent_from_older_results() {
        let mut t: TransportInfo = serde_json::from_value(serde_json::json!({
            "rc": {
                "local-ack-timeout": 14, "local-ack-timeout-ns": 67_108_864, "retry-cnt": 7,
                "rnr-retry": 7, "min-rnr-timer": 1, "min-rnr-timer-ns": 10_000, "path-mtu": 1024
            },
            "capabilities": {
                "cnp-per-qp": false, "ecn-marks": false, "buffer-occupancy": false,
                "port-counters": true
            }
        }))
        .unwrap();
        assert_eq!(t.congestion_signals, None);
        assert!(!t.capabilities.cnp_per_port, "absent reads as not declared");
        assert_eq!(t.window, None);
        assert!(!t.summary_lines().contains("window"));
        t.congestion_signals = Some(vec![]);
        assert!(t
            .summary_lines()
            .ends_with("window     shrinks on no congestion signal\n"));
        t.congestion_signals = Some(vec![
            CongestionSignal::EcnCnp,
            CongestionSignal::QueueingDelay,
        ]);
        assert!(t
            .summary_lines()
            .ends_with("window     shrinks on ECN (per-QP CNPs), queueing delay\n"));
        let v = serde_json::to_value(&t).unwrap();
        assert_eq!(
            v["congestion-signals"],
            serde_json::json!(["ecn-cnp", "queueing-delay"])
        );
        t.congestion_signals = Some(vec![CongestionSignal::EcnPortCnp]);
        assert!(t
            .summary_lines()
            .ends_with("window     shrinks on ECN (port CNPs)\n"));
        assert_eq!(
            serde_json::to_value(&t).unwrap()["congestion-signals"],
            serde_json::json!(["ecn-port-cnp"])
        );
    }

    #[test]
    fn window_tallies_merge_and_read_in_the_summary() {
        let a = WindowTally {
            connections: 1,
            decreases: 5,
            delay_decreases: 4,
            ecn_echoes: 2,
            smallest_bytes: Some(8192),
        };
        let b = WindowTally {
            connections: 2,
            decreases: 1,
            delay_decreases: 1,
            ecn_echoes: 0,
            smallest_bytes: Some(4096),
        };
        let m = a.merge(b);
        assert_eq!(
            m,
            WindowTally {
                connections: 3,
                decreases: 6,
                delay_decreases: 5,
                ecn_echoes: 2,
                smallest_bytes: Some(4096),
            }
        );
        assert_eq!(a.merge(WindowTally::default()).smallest_bytes, Some(8192));
        let mut t: TransportInfo = serde_json::from_value(serde_json::json!({
            "rc": {
                "local-ack-timeout": 14, "local-ack-timeout-ns": 67_108_864, "retry-cnt": 7,
                "rnr-retry": 7, "min-rnr-timer": 1, "min-rnr-timer-ns": 10_000, "path-mtu": 1024
            },
            "capabilities": {
                "cnp-per-qp": false, "cnp-per-port": true, "ecn-marks": false,
                "buffer-occupancy": false, "port-counters": true
            }
        }))
        .unwrap();
        assert!(t.capabilities.cnp_per_port);
        t.window = Some(m);
        assert!(t.summary_lines().ends_with(
            "window     6 decreases (5 on delay) over 3 connections, 2 ECN echoes, smallest 4096 B\n"
        ));
        let v = serde_json::to_value(&t).unwrap();
        assert_eq!(v["window"]["delay-decreases"], 5);
        assert_eq!(v["window"]["smallest-bytes"], 4096);
    }
}
