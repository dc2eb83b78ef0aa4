//! # xrdma-sim — a deterministic packet-level RDMA network simulator
//!
//! `hosts` hosts, each with one RoCEv2 NIC, on one output-queued switch (the default star) or
//! on the switches of a leaf-spine or k-ary fat-tree with per-QP ECMP ([`Topology`]); every
//! switch has a shared buffer, RED-style ECN marking and PFC (switch-to-switch too). Every NIC
//! implements [`xrdma::Transport`] (through [`HostTransport`]) with RC semantics: PSNs,
//! cumulative ACKs, RNR NAKs, CNPs, real bytes copied from the sender's memory into the
//! receiver's at delivery.
//!
//! Time is integer picoseconds: instants are [`xrdma::Time`] (simulated time from 0),
//! durations (link delays, serialization, timers' periods) [`xrdma::Span`]. Events sit in a
//! binary heap keyed by `(time, insertion sequence)`, so equal-time events run in scheduling
//! order and the same [`SimConfig`] (including its seed) and the same calls give bit-identical
//! results; see [`Simulation::trace_hash`].
//!
//! ## Where each event is handled
//! The state is in [`Simulation`] (the queue, the clock, the packet pool, the fabric and one
//! NIC per host); each concept's module extends it with the handlers of its events, and its
//! module doc lists the state it owns. [`Simulation::advance`] pops the events; a lazy timer
//! that is not due (a stale `Wake`, `NicWake` or `RetransmitTimer`) is dropped there without
//! moving the clock.
//!
//! | Event | Module | Handler |
//! |---|---|---|
//! | `HostTxDone`: a NIC finished serializing a packet | `nic::egress` | `on_host_tx_done` |
//! | `UpArrive`: an uplink packet reaches the switch | `nic::egress` | `on_up_arrive` |
//! | `NicWake`: a rate-limited QP may start | `nic::egress` | `on_nic_wake` |
//! | `SwitchTxDone`: a switch port finished a packet | `switch` | `on_switch_tx_done` |
//! | `DownArrive`: a link's packet reaches its peer | `switch` | `on_down_arrive` |
//! | `RnrTimer`: an RNR wait ends | `nic::requester` | `on_rnr_timer` |
//! | `RetransmitTimer`: local ACK timeout | `nic::requester::retransmit` | `on_retransmit_timer` |
//! | `Wake`: a driver's wake-up time | this crate root | `mark_ready` |
//! | `Wake`: a CQE became visible or a busy CPU became free (host model) | `host_model::clock` | `on_host_ready` |
//!
//! A packet that reaches a host (`DownArrive` on a host's port) goes to `nic::nic_receive`,
//! which hands it on by kind:
//!
//! | Packet | Module | Handler |
//! |---|---|---|
//! | PFC PAUSE / RESUME | `nic::egress` | `on_pause` / `on_resume` |
//! | CNP (DCQCN reaction point) | `nic::egress` | `on_cnp` |
//! | ACK, NAK, READ response | `nic::requester` | `on_ack`, `on_nak`, `on_read_resp` |
//! | SEND / WRITE packet, READ request | `nic::responder` | `on_request` |
//! | any CE-marked request or READ response (notification point) | `nic::responder` | `maybe_cnp` |
//!
//! The crate root holds construction, the event loop and its dispatch, wake requests and the
//! counters; `switch` also holds the fabric's accessors. The other `impl Simulation` blocks
//! are hooks on these paths, not event handlers: `faults` (the verdict on a packet at the far
//! end of its wire: `uplink_fault`, `port_link_fault`), `memory` (`copy_bytes`, the DMA at
//! delivery), `timeseries` (sampling before each event, delivered bytes), [`capture`] (pcap
//! records of the captured host links as each packet's transmission ends); the verbs calls are
//! in `transport` ([`HostTransport`]: posting a WR schedules its QP at the egress).
//!
//! ## The host model
//! [`SimConfig::host`] ([`HostModel`], profiles in [`profiles`]) gives the hosts costs: a CPU
//! clock per host that the verbs calls of a driver turn advance, the NIC's WQE fetch and
//! payload read before a WR's first packet, a transmit-engine time per packet, and the DMA
//! writes before a completion is visible to `poll_cq`. [`host_model`] has the timeline and
//! what it leaves out; `host_model::clock` holds its state and its use of the `Wake` event. The
//! default, the ideal host, costs nothing and schedules nothing: the events are those of a
//! simulation without the model.
//!
//! ## Driving a simulation
//! ```
//! use xrdma::{LocalMemory, QpCaps, RecvWr, SendOpcode, SendWr, Sge, Transport, WcOpcode};
//! use xrdma_sim::{SimConfig, Simulation};
//!
//! let mut sim = Simulation::new(SimConfig::default()).unwrap();
//! let (a, b) = {
//!     let a = sim.transport(0).create_qp(QpCaps::default()).unwrap();
//!     let b = sim.transport(1).create_qp(QpCaps::default()).unwrap();
//!     sim.transport(0).connect_qp(a.qpn, &b).unwrap();
//!     sim.transport(1).connect_qp(b.qpn, &a).unwrap();
//!     (a, b)
//! };
//! let src = sim.transport(0).register_memory(4096).unwrap();
//! let dst = sim.transport(1).register_memory(4096).unwrap();
//! sim.transport(0).write(src.addr, &[b"hello"]).unwrap();
//! let rwr = RecvWr { wr_id: 7, sge: Sge { addr: dst.addr, len: 4096, lkey: dst.lkey } };
//! sim.transport(1).post_recv(b.qpn, &rwr).unwrap();
//! let wr = SendWr {
//!     wr_id: 1, opcode: SendOpcode::Send, sge: Sge { addr: src.addr, len: 5, lkey: src.lkey },
//!     imm: 0, remote_addr: 0, rkey: 0, signaled: true,
//! };
//! sim.transport(0).post_send(a.qpn, &wr).unwrap();
//! let mut ready = Vec::new();
//! let mut wcs = Vec::new();
//! while sim.advance(&mut ready) {
//!     for &h in &ready {
//!         sim.transport(h).poll_cq(&mut wcs, 16);
//!     }
//! }
//! assert!(wcs.iter().any(|wc| wc.opcode == WcOpcode::Recv && wc.byte_len == 5));
//! assert_eq!(sim.transport(1).read_bytes(dst.addr, 5).unwrap(), &b"hello"[..]);
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod capture;
mod config;
mod config_error;
mod dcqcn;
mod engine;
mod extents;
mod faults;
pub mod host_model;
mod memory;
mod nic;
mod packet;
mod routing;
mod stats;
mod switch;
mod tcp;
mod timeseries;
mod topology;
mod transport;

/// This simulator's crate version (`CARGO_PKG_VERSION`), as results name the build that
/// simulated them.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

pub use capture::{CaptureConfig, LinkCapture};
pub use config::{
    EcnConfig, EcnSpec, PfcConfig, PfcThresholds, SimConfig, AETH_BYTES, CNP_EXTRA_BYTES,
    IMMDT_BYTES, PFC_FRAME_BYTES, RETH_BYTES,
};
pub use config_error::SimConfigError;
pub use dcqcn::{DcqcnConfig, DcqcnParams, DcqcnState, IncreasePhase, DCQCN_REFERENCE_RATE_BPS};
pub use faults::{FaultConfig, LinkDirection, LinkOutage, LinkRate, LinkSelector};
pub use host_model::{max_cost, profiles, HostModel, HostModelError, MAX_COST, MAX_PER_BYTE_COST};
pub use stats::SimStats;
pub use switch::{PortStats, SwitchStats};
pub use tcp::{TcpSettings, TcpSocketState, TCP_HEADER_BYTES};
pub use timeseries::{TimeSeriesConfig, DEFAULT_MAX_POINTS, DEFAULT_SAMPLE_INTERVAL};
pub use topology::{PortPeer, Topology};
pub use transport::HostTransport;
pub use xrdma::rc::{local_ack_timeout, rnr_timer};

use engine::{Event, EventQueue};
use nic::Host;
use packet::PacketPool;
use switch::Fabric;
use xrdma::{Span, Time};

/// A host index; in a star, host `i` is on switch port `i` (see [`Topology`] for the others).
pub type HostId = u32;

/// One simulated network: hosts, their NICs, the switch, and the event queue.
#[derive(Debug)]
pub struct Simulation {
    cfg: SimConfig,
    now: Time,
    queue: EventQueue,
    pool: PacketPool,
    hosts: Vec<Host>,
    fabric: Fabric,
    /// Serialization time of a `b`-byte packet at the link rate, indexed by `b`.
    ser: Vec<Span>,
    stats: SimStats,
    ready_list: Vec<HostId>,
    scratch: Vec<u8>,
    /// DCQCN parameters resolved for the line rate, when rate control is on.
    dcqcn: Option<DcqcnParams>,
    /// Time-series recorder, when sampling is on ([`Simulation::enable_timeseries`]).
    timeseries: Option<Box<timeseries::Recorder>>,
    /// Injected link faults; `None` when the config has none (no check on the packet path).
    faults: Option<Box<faults::Faults>>,
    /// The host model costs something ([`SimConfig::host`] is not ideal): CPU clocks, CQE
    /// visibility and NIC latencies are in force. False: none of it runs.
    host_on: bool,
    /// Packet capture of chosen host links, when on ([`Simulation::enable_capture`]).
    capture: Option<Box<capture::Capture>>,
    /// The hosts' TCP sockets, by socket id (`crate::tcp::host`).
    tcp: Vec<tcp::Socket>,
}

impl Simulation {
    /// Build a simulation at time 0 with idle links and no QPs or MRs.
    ///
    /// # Errors
    /// [`SimConfigError`] when `cfg` does not validate ([`SimConfig::validate`]).
    pub fn new(cfg: SimConfig) -> Result<Self, SimConfigError> {
        cfg.validate()?;
        let max_wire = (cfg.mtu + cfg.header_bytes + RETH_BYTES + IMMDT_BYTES + AETH_BYTES)
            .max(cfg.header_bytes + CNP_EXTRA_BYTES)
            .max(PFC_FRAME_BYTES)
            .max(cfg.tcp.mss + TCP_HEADER_BYTES);
        let ser = (0..=max_wire as u64)
            .map(|b| Span::serialization(b, cfg.link_rate_bps))
            .collect();
        let hosts = (0..cfg.hosts).map(Host::new).collect();
        let fabric = Fabric::new(&cfg, max_wire)?;
        let mut hosts: Vec<Host> = hosts;
        for h in &mut hosts {
            h.mem.set_carry_payload(cfg.carry_payload);
        }
        let dcqcn = cfg.dcqcn.map(|d| d.resolve(cfg.link_rate_bps));
        let faults = fabric.link_faults(&cfg.faults, cfg.seed).map(Box::new);
        Ok(Simulation {
            now: Time::ZERO,
            queue: EventQueue::new(),
            pool: PacketPool::default(),
            hosts,
            fabric,
            ser,
            stats: SimStats::default(),
            ready_list: Vec::new(),
            scratch: Vec::with_capacity(cfg.mtu as usize),
            dcqcn,
            timeseries: None,
            faults,
            host_on: !cfg.host.is_ideal(),
            capture: None,
            tcp: Vec::new(),
            cfg,
        })
    }

    /// The configuration this simulation runs with.
    pub fn config(&self) -> &SimConfig {
        &self.cfg
    }

    /// The RC attributes every host's QPs are connected with, as applied
    /// ([`SimConfig::rc_applied`]); what each [`HostTransport`] reports.
    pub fn rc_params(&self) -> xrdma::RcParams {
        self.cfg.rc_applied()
    }

    /// What the simulator delivers: every congestion signal and counter
    /// ([`xrdma::Capabilities::ALL`]); what each [`HostTransport`] reports.
    pub fn capabilities(&self) -> xrdma::Capabilities {
        xrdma::Capabilities::ALL
    }

    /// Current virtual time: the time of the last processed event (0 at start).
    pub fn now(&self) -> Time {
        self.now
    }

    /// The verbs interface of `host`'s NIC. Calls on a host index `≥ hosts` fail with
    /// [`xrdma::TransportError::Unreachable`] (or do nothing for calls without errors).
    pub fn transport(&mut self, host: HostId) -> HostTransport<'_> {
        HostTransport::new(self, host)
    }

    /// Process events in time order until at least one host needs attention (its CQ or
    /// congestion queue became non-empty, or its wake time was reached). Clears `ready`, then
    /// pushes those host ids (each once, ascending). Returns only after every event at the
    /// current timestamp has run, so `now()` is consistent for the caller.
    ///
    /// Returns `false` when there is nothing left to do: no pending events (including wakes)
    /// and no host needing attention.
    pub fn advance(&mut self, ready: &mut Vec<HostId>) -> bool {
        ready.clear();
        while let Some(t) = self.queue.peek_time() {
            if t > self.now && !self.ready_list.is_empty() {
                break;
            }
            let Some((t, ev)) = self.queue.pop() else {
                break;
            };
            // A lazy timer that is not due (replaced, postponed or cancelled) must not move the
            // clock: a cancelled 100 ms ACK timer or a disarmed 17 ms retransmission timer
            // would otherwise stretch the simulated time past the last real event.
            let due = match ev {
                Event::Wake(host) => self.wake_due(host, t),
                Event::NicWake(h) => self.hosts[h as usize].egress.pace_wake == t,
                Event::RetransmitTimer { host, qp } => self.retransmit_due(host, qp, t),
                Event::TcpTimer(s) => self.tcp_timer_due(s, t),
                _ => true,
            };
            if !due {
                continue;
            }
            self.sample_until(t);
            self.now = t;
            self.dispatch(ev);
        }
        self.ready_list.sort_unstable();
        for &h in &self.ready_list {
            self.hosts[h as usize].ready = false;
        }
        ready.extend_from_slice(&self.ready_list);
        self.ready_list.clear();
        !ready.is_empty()
    }

    /// Ask to be woken for `host` at `at` (replaces an earlier request; [`Time::MAX`] cancels).
    /// A time in the past wakes at `now()`, a time before the host's CPU is free (the host
    /// model, [`SimConfig::host`]) when it is. Unknown hosts are ignored.
    ///
    /// At most one wake event per host counts at a time. A later request than the queued one
    /// pushes nothing: when the queued event fires early it re-arms itself for the request, so
    /// a driver that moves its deadline on every turn (an ACK timer) does not flood the heap.
    pub fn set_wake(&mut self, host: HostId, at: Time) {
        let now = self.now;
        let Some(h) = self.hosts.get_mut(host as usize) else {
            return;
        };
        let at = if at == Time::MAX {
            at
        } else {
            at.max(now).max(h.clock.cpu)
        };
        h.wake_at = at;
        if at < h.wake_queued {
            h.wake_queued = at;
            self.queue.push(at, Event::Wake(host));
        }
    }

    /// A wake event for `host` fired at `t`: whether the host is due now. An event that is not
    /// the queued one is stale, unless it is the host model's, which is handled there
    /// (`host_model::clock`); the queued one re-arms for a later request.
    fn wake_due(&mut self, host: HostId, t: Time) -> bool {
        let h = &mut self.hosts[host as usize];
        if h.wake_queued != t {
            if self.host_on {
                self.host_model_wake(host, t);
            }
            return false;
        }
        h.wake_queued = Time::MAX;
        if h.wake_at == t {
            h.wake_at = Time::MAX;
            return true;
        }
        if h.wake_at != Time::MAX {
            h.wake_queued = h.wake_at;
            self.queue.push(h.wake_at, Event::Wake(host));
        }
        false
    }

    /// Connect a new TCP socket on host `a` to a new one on host `b`, both established at
    /// once (no handshake), with [`SimConfig::tcp`]'s settings and DCTCP's reaction to ECN
    /// when `dctcp`. Returns the socket ids on `a` and on `b`, for their hosts'
    /// [`HostTransport::tcp_write`] and siblings.
    ///
    /// # Panics
    /// When `a` or `b` is not a host (a caller's bug).
    pub fn tcp_connect(&mut self, a: HostId, b: HostId, dctcp: bool) -> (u32, u32) {
        assert!(a < self.cfg.hosts && b < self.cfg.hosts, "no such host");
        self.tcp_pair(a, b, dctcp)
    }

    /// Counters so far (see [`SimStats`] for each field's meaning).
    pub fn stats(&self) -> SimStats {
        let mut s = self.stats.clone();
        s.events = self.queue.processed();
        s.paused_time = self
            .hosts
            .iter()
            .fold(Span::ZERO, |acc, h| acc + h.egress.paused_time(self.now));
        s.packets_in_flight = self.pool.live() as u64;
        for k in &self.tcp {
            let c = k.conn.counters();
            s.tcp_retransmitted_segments += c.retransmitted_segments;
            s.tcp_fast_retransmits += c.fast_retransmits;
            s.tcp_timeouts += c.timeouts;
        }
        s
    }

    /// Total time `host`'s NIC spent paused by PFC so far (zero for unknown hosts).
    pub fn paused_time(&self, host: HostId) -> Span {
        self.hosts
            .get(host as usize)
            .map_or(Span::ZERO, |h| h.egress.paused_time(self.now))
    }

    /// The DCQCN reaction-point state of QP `qpn` on `host`, brought up to `now()` (elapsed
    /// α-decay and rate-increase periods applied to a copy; the simulation is not changed).
    /// A QP that has not received a CNP is at line rate with α = 1. `None` when DCQCN is off
    /// ([`SimConfig::dcqcn`] is `None`) or the host or QP does not exist.
    pub fn qp_rate(&self, host: HostId, qpn: xrdma::QpNum) -> Option<DcqcnState> {
        let p = self.dcqcn.as_ref()?;
        let h = self.hosts.get(host as usize)?;
        let qp = &h.qps[h.qp_index(qpn)?];
        let mut s = qp.egress.cc.unwrap_or_else(|| DcqcnState::new(p));
        s.advance(p, self.now);
        Some(s)
    }

    /// FNV-1a (over 64-bit words) of every processed event's time, kind and ids, in order.
    /// Equal for two runs exactly when they processed the same event sequence (up to hash
    /// collisions).
    pub fn trace_hash(&self) -> u64 {
        self.queue.hash()
    }

    fn dispatch(&mut self, ev: Event) {
        match ev {
            Event::HostTxDone(h) => self.on_host_tx_done(h),
            Event::UpArrive(h) => self.on_up_arrive(h),
            Event::SwitchTxDone(p) => self.on_switch_tx_done(p),
            Event::DownArrive(p) => self.on_down_arrive(p),
            Event::RnrTimer { host, qp } => self.on_rnr_timer(host, qp),
            Event::Wake(host) => self.mark_ready(host),
            Event::NicWake(h) => self.on_nic_wake(h),
            Event::RetransmitTimer { host, qp } => self.on_retransmit_timer(host, qp),
            Event::TcpTimer(s) => self.on_tcp_timer(s),
            Event::TcpRx(id) => self.on_tcp_rx(id),
        }
    }

    #[inline]
    fn ser(&self, wire: u32) -> Span {
        match self.ser.get(wire as usize) {
            Some(&t) => t,
            None => Span::serialization(wire as u64, self.cfg.link_rate_bps),
        }
    }

    /// Host `host` needs its driver: listed for the caller of [`Simulation::advance`], or,
    /// while its CPU is busy (the host model), given the turn when it is free.
    #[inline]
    fn mark_ready(&mut self, host: HostId) {
        let h = &mut self.hosts[host as usize];
        if !h.ready {
            if h.clock.cpu > self.now {
                self.defer_ready(host);
                return;
            }
            h.ready = true;
            self.ready_list.push(host);
        }
    }
}
