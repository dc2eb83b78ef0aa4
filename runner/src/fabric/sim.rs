//! The simulator as a [`Fabric`] (virtual time from event to event) and its report view
//! ([`FabricReport`]: the engine's counters, statistics and samples).

use super::{Clocked, Fabric, FabricReport};
use xrdma::{Span, Time};
use xrdma_reports as rep;
use xrdma_sim::{SimConfig, Simulation, Topology};

/// The simulator as a [`Fabric`] and a [`FabricReport`].
pub struct SimFabric {
    sim: Simulation,
}

impl SimFabric {
    /// Sample the network every `interval` (see [`rep::TimeSeries`]), with the
    /// egress queue of the switch port cabled to `receiver` as the bottleneck queue, at most
    /// [`xrdma_sim::DEFAULT_MAX_POINTS`] samples per series.
    pub fn sample(&mut self, interval: Span, receiver: u32) {
        self.sim.enable_timeseries(xrdma_sim::TimeSeriesConfig {
            interval,
            max_points: xrdma_sim::DEFAULT_MAX_POINTS,
            watch_host: Some(receiver),
        });
    }

    /// Capture the links of `cfg.hosts` as pcap files ([`xrdma_sim::Simulation::enable_capture`]).
    pub fn capture(&mut self, cfg: xrdma_sim::CaptureConfig) {
        self.sim.enable_capture(cfg);
    }

    /// The packet captures so far, one per captured host (empty without [`SimFabric::capture`]).
    pub fn captures(&self) -> Vec<xrdma_sim::LinkCapture> {
        self.sim.captures()
    }

    /// Connect a new TCP socket on host `a` to one on host `b`
    /// ([`xrdma_sim::Simulation::tcp_connect`]); returns the socket ids on `a` and on `b`.
    pub fn tcp_connect(&mut self, a: u32, b: u32, dctcp: bool) -> (u32, u32) {
        self.sim.tcp_connect(a, b, dctcp)
    }

    /// The simulation's configuration.
    pub fn config(&self) -> &SimConfig {
        self.sim.config()
    }

    /// A fabric over a new simulation of `cfg`.
    ///
    /// # Errors
    /// The simulator's configuration error.
    pub fn new(cfg: SimConfig) -> Result<Self, xrdma_sim::SimConfigError> {
        Ok(SimFabric {
            sim: Simulation::new(cfg)?,
        })
    }
}

/// The base RTT used in T*: the round trip of a header-only packet and its ACK on
/// idle links, `4·delay + 2·ser(header) + 2·ser(header + AETH)`.
///
/// Why header-only: the last byte of an N-to-1 incast is ACKed no earlier than
/// `bottleneck bytes / B + 4·delay + ser(first packet on its first hop) + 2·ser(ACK)`. The
/// `N·S·(1 + header/MTU)` term already charges every packet's bottleneck serialization, so
/// charging a full data packet twice more (as the RTT of an MTU packet would) overstates the
/// bound; with a header-only RTT, T* stays below the true bound whenever MTU ≥ header.
pub fn ideal_base_rtt(cfg: &SimConfig) -> Span {
    let ser = |b: u32| Span::serialization(u64::from(b), cfg.link_rate_bps);
    let hdr = ser(cfg.header_bytes);
    let ack = ser(cfg.header_bytes + xrdma_sim::AETH_BYTES);
    cfg.link_delay * 4 + hdr + hdr + ack + ack
}

impl Clocked for SimFabric {
    fn backend(&self) -> rep::Backend {
        rep::Backend::Sim
    }
    fn hosts(&self) -> u32 {
        self.sim.config().hosts
    }
    fn now(&self) -> Time {
        self.sim.now()
    }
    fn advance(&mut self, ready: &mut Vec<u32>, _settled: bool) -> bool {
        self.sim.advance(ready)
    }
    fn set_wake(&mut self, h: u32, at: Time) {
        self.sim.set_wake(h, at);
    }
    fn register_payload(&mut self, payload: &bytes::Bytes) {
        for h in 0..self.sim.config().hosts {
            // One registration per host, of a block the run holds anyway; it cannot fail
            // below 65 536 registrations, and a host without one only stages its messages.
            let _ = self.sim.transport(h).register_external(payload.clone());
        }
    }
}

impl Fabric for SimFabric {
    type Host<'a> = xrdma_sim::HostTransport<'a>;

    fn link_rate_bps(&self) -> Option<u64> {
        Some(self.sim.config().link_rate_bps)
    }
    fn host(&mut self, h: u32) -> Self::Host<'_> {
        self.sim.transport(h)
    }
}

impl FabricReport for SimFabric {
    fn network(&self) -> rep::NetworkCounters {
        let st = self.sim.stats();
        rep::NetworkCounters {
            // A run uses one stack: RoCE's and TCP's counters add up to that stack's.
            data_packets: Some(st.data_packets + st.tcp_segments),
            ecn_marks: Some(st.ecn_marks),
            cnps: Some(st.cnps_sent),
            pfc_xoff: Some(st.pfc_xoff_sent),
            pfc_xon: Some(st.pfc_xon_sent),
            drops: Some(st.drops),
            max_buffer_bytes: Some(st.max_buffer_bytes),
            max_egress_queue_bytes: Some(st.max_egress_queue_bytes),
            retransmitted_packets: Some(st.retransmitted_packets + st.tcp_retransmitted_segments),
            retransmit_timeouts: Some(st.retransmit_timeouts + st.tcp_timeouts),
            // Only RC timeouts are told apart; a TCP RTO is not classified.
            spurious_timeouts: (st.tcp_timeouts == 0).then_some(st.spurious_timeouts),
            seq_naks: Some(st.seq_naks),
            rnr_naks: Some(st.rnr_naks),
            lossless: Some(self.sim.config().pfc.is_some()),
            injected_losses: Some(st.injected_losses),
            link_down_drops: Some(st.link_down_drops),
            icrc_drops: Some(st.icrc_drops),
            // Counted by the runner, not the network ([`crate::run::run_on`]).
            ack_timeouts: None,
        }
    }
    fn environment(&self) -> Option<rep::Environment> {
        // The backend and the simulator's crate version; no host, so the result does not
        // depend on the machine.
        Some(rep::Environment::sim(xrdma_sim::VERSION))
    }
    fn transport_info(&self) -> Option<rep::TransportInfo> {
        // What every HostTransport reports (`Transport::rc_params`, `::capabilities`).
        Some(crate::transport_info::report(
            self.sim.rc_params(),
            self.sim.capabilities(),
        ))
    }
    fn sim_info(&self) -> Option<rep::SimInfo> {
        Some(rep::SimInfo {
            events: self.sim.stats().events,
            simulated_ps: self.sim.now().as_ps(),
            trace_hash: format!("{:016x}", self.sim.trace_hash()),
            host_model: host_model_info(&self.sim.config().host),
            captures: Vec::new(),
        })
    }
    fn path(&self) -> rep::PathModel {
        let cfg = self.sim.config();
        rep::PathModel {
            // The base RTT of T* is the single switch's; on a multi-tier fabric the
            // bottleneck may be an oversubscribed uplink and the round trip crosses more
            // hops, so none is claimed there (and no T* or slowdown follows).
            base_rtt_ps: (cfg.topology == Topology::Star).then(|| ideal_base_rtt(cfg).as_ps()),
            bottleneck_bps: Some(cfg.link_rate_bps),
            header_bytes: Some(u64::from(cfg.header_bytes)),
            mtu_bytes: Some(u64::from(cfg.path_mtu())),
        }
    }
    fn timeseries(&self) -> Option<rep::TimeSeries> {
        self.sim.timeseries()
    }
    /// What the host model charged each host; `None` with the ideal host, which charges
    /// nothing (its hosts' time is not modelled, not zero).
    fn host_cpu(&self) -> Option<rep::HostCpuTime> {
        let m = &self.sim.config().host;
        (!m.is_ideal()).then(|| {
            let per_host = (0..self.sim.config().hosts)
                .map(|h| self.sim.host_cpu_busy(h).as_ps())
                .collect();
            rep::HostCpuTime::of_hosts(rep::CpuSource::HostModel, per_host)
        })
    }
}

/// The host model for the result; `None` for the ideal host (it costs nothing).
fn host_model_info(m: &xrdma_sim::HostModel) -> Option<rep::HostModelInfo> {
    (!m.is_ideal()).then(|| rep::HostModelInfo {
        profile: m.name().to_string(),
        overridden: m.overridden().into_iter().map(String::from).collect(),
        costs_ps: m
            .costs()
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.as_ps()))
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_simulated_run_names_the_simulator_only() {
        let fabric = SimFabric::new(SimConfig::default()).expect("the default configuration");
        let e = fabric
            .environment()
            .expect("a simulated run has an environment");
        assert_eq!(e.backend, rep::Backend::Sim);
        assert_eq!(e.simulator_version.as_deref(), Some(xrdma_sim::VERSION));
        assert_eq!((e.host_name, e.kernel, e.device), (None, None, None));
    }
}
