//! `sim.capture:` — pcap files of chosen hosts' links ([`xrdma_sim::CaptureConfig`]):
//!
//! ```yaml
//! sim:
//!   capture: { hosts: [0, 8], max-packets: 100000, from: 0us, until: 10ms }
//! ```
//!
//! `hosts` is required (host indices of the workload, each once); `max-packets` (per host
//! link, ≥ 1) defaults to the simulator's [`xrdma_sim::capture::DEFAULT_MAX_PACKETS`];
//! `from` (default 0) and `until` (default: the end of the run) bound the packets' times on
//! the simulated clock. `xrdma run` writes one `capture-host<H>.pcap` per host into the
//! run's directory. The verbs backend ignores the block, as it ignores the rest of `sim:`.

use crate::check::{field_error, FieldError};
use crate::units::Span;
use serde::Deserialize;
use xrdma::Time;
use xrdma_sim::CaptureConfig;

/// The `capture:` mapping as written.
#[derive(Deserialize)]
#[serde(
    rename_all = "kebab-case",
    deny_unknown_fields,
    expecting = "a mapping (a packet capture `{ hosts, max-packets, from, until }`)"
)]
pub(crate) struct RawCapture {
    hosts: Vec<u32>,
    max_packets: Option<u64>,
    from: Option<Span>,
    until: Option<Span>,
}

/// Checks `sim.capture`: hosts listed once each, at least one packet, `from` before
/// `until`. Whether each host exists is checked against the workload
/// ([`CaptureConfig::check_hosts`]).
pub(crate) fn check_capture(raw: RawCapture) -> Result<CaptureConfig, FieldError> {
    if raw.hosts.is_empty() {
        return Err(field_error(
            "hosts",
            "lists no host: name the hosts to capture",
        ));
    }
    for (i, h) in raw.hosts.iter().enumerate() {
        if raw.hosts[..i].contains(h) {
            return Err(field_error("hosts", format!("host {h} is listed twice")));
        }
    }
    let d = CaptureConfig::default();
    let max_packets = raw.max_packets.unwrap_or(d.max_packets);
    if max_packets == 0 {
        return Err(field_error("max-packets", "must be at least 1"));
    }
    let from = Time::ZERO + raw.from.map_or(xrdma::Span::ZERO, |s| s.0);
    let until = raw.until.map(|s| Time::ZERO + s.0);
    if let Some(u) = until.filter(|&u| u <= from) {
        return Err(FieldError::new(
            vec!["until", "from"],
            format!(
                "until ({}) is not after from ({}): the window holds no packet",
                u.saturating_since(Time::ZERO),
                from.saturating_since(Time::ZERO)
            ),
        ));
    }
    Ok(CaptureConfig {
        hosts: raw.hosts,
        max_packets,
        from,
        until,
    })
}
