//! [`WindowSignals`]: the congestion signals an endpoint's send windows react to, from its
//! configuration and its transport's [`Capabilities`] (the table of which backend delivers
//! which is in [`crate::capabilities`]).

use crate::Capabilities;
use serde::{Deserialize, Serialize};

/// The congestion signals an endpoint's send windows shrink on ([`crate::window`]), which
/// follow from its configuration and its transport's [`Capabilities`]
/// ([`crate::Endpoint::window_signals`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct WindowSignals {
    /// ECN: a CNP reported for a connection's QP shrinks its window by β. Needs an adaptive
    /// window ([`crate::Config::adaptive_window`]) and a transport that reports CNPs per QP
    /// ([`Capabilities::cnp_per_qp`]).
    pub ecn: bool,
    /// ECN through the port's CNP count: a rise shrinks by β the window of every connection
    /// with bytes in flight. Needs an adaptive window and a transport that counts its port's
    /// CNPs ([`Capabilities::cnp_per_port`]) but reports none per QP.
    #[serde(default)]
    pub ecn_port: bool,
    /// Queueing delay: an RTT sample whose queueing delay is at or above the target shrinks
    /// the window. Needs an adaptive window and the link rate
    /// ([`crate::Config::link_rate_bps`]), without which delay above the target only stops
    /// the window's growth.
    pub delay: bool,
}

impl WindowSignals {
    /// The signals a window configured by `cfg` reacts to over a transport with `caps`
    /// (`None`: not known, so no CNP is counted on).
    pub fn new(cfg: &crate::Config, caps: Option<Capabilities>) -> WindowSignals {
        WindowSignals {
            ecn: cfg.adaptive_window && caps.is_some_and(|c| c.cnp_per_qp),
            ecn_port: cfg.adaptive_window && caps.is_some_and(|c| c.cnp_per_port && !c.cnp_per_qp),
            delay: cfg.adaptive_window && cfg.link_rate_bps.is_some(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Config;

    #[test]
    fn window_signals_follow_the_configuration_and_the_capabilities() {
        let sim = Config {
            link_rate_bps: Some(100_000_000_000),
            ..Config::default()
        };
        let both = WindowSignals {
            ecn: true,
            ecn_port: false,
            delay: true,
        };
        assert_eq!(WindowSignals::new(&sim, Some(Capabilities::ALL)), both);
        // A device without per-QP CNPs and without a link rate: nothing shrinks the window.
        let device = Config::default();
        let none = WindowSignals::default();
        assert_eq!(WindowSignals::new(&device, Some(Capabilities::NONE)), none);
        assert!(!WindowSignals::new(&sim, None).ecn);
        let fixed = Config {
            adaptive_window: false,
            ..sim
        };
        assert_eq!(WindowSignals::new(&fixed, Some(Capabilities::ALL)), none);
    }

    #[test]
    fn port_cnps_are_a_signal_only_without_per_qp_ones() {
        let cfg = Config::default();
        let port = Capabilities {
            cnp_per_port: true,
            ..Capabilities::NONE
        };
        let s = WindowSignals::new(&cfg, Some(port));
        assert!(s.ecn_port && !s.ecn && !s.delay, "{s:?}");
        let both = Capabilities {
            cnp_per_qp: true,
            ..port
        };
        let s = WindowSignals::new(&cfg, Some(both));
        assert!(s.ecn && !s.ecn_port, "{s:?}");
        let fixed = Config {
            adaptive_window: false,
            ..cfg
        };
        assert!(!WindowSignals::new(&fixed, Some(port)).ecn_port);
    }
}
