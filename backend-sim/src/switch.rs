//! The switches of the fabric: output-queued, each with its own shared buffer, per-port egress
//! FIFOs, RED-style ECN marking and PFC per ingress port; switch-to-switch links carry both
//! data and PFC frames.
//!
//! Modelling choices:
//! - A packet occupies its switch's shared buffer from its arrival (last bit received) until
//!   it starts transmission on its egress port (dequeue).
//! - ECN is decided **at enqueue**, on the instantaneous length in bytes of the egress queue
//!   the packet joins, not counting the packet itself nor the packet being transmitted.
//! - PFC frames (XOFF/XON) are queued per port ahead of data and go out after the packet being
//!   transmitted finishes. A switch port that receives XOFF stops starting data packets (the
//!   one on the wire finishes) but still sends PFC frames; XON resumes it. XOFF/XON carry no
//!   pause quanta: a pause lasts until the XON.
//! - Ports are numbered globally (see [`crate::topology`]); a star's switch port `i` is
//!   host `i`.

use crate::config::{EcnConfig, PfcThresholds, SimConfig, PFC_FRAME_BYTES};
use crate::config_error::SimConfigError;
use crate::engine::Event;
use crate::faults::{FaultConfig, Faults};
use crate::packet::{Packet, PktKind, F_CE, F_ECT};
use crate::routing::Routes;
use crate::topology::{Layout, Peer, PortPeer};
use crate::Simulation;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use xrdma::{Span, Time};

/// ChaCha stream number of the switches' random stream (ECN decisions).
const SWITCH_STREAM: u64 = 1;

/// Counters of one switch port. "Sent" and "received" are from the port's own side: it sends
/// XOFF/XON to its peer when its ingress accounting crosses the thresholds, and receives them
/// from a peer switch (hosts never send PFC frames).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PortStats {
    /// Routed packets (data, READ requests/responses, ACK, NAK, CNP) this port sent.
    pub tx_packets: u64,
    /// Wire bytes of those packets.
    pub tx_bytes: u64,
    /// XOFF (PAUSE) frames this port sent to its peer.
    pub xoff_sent: u64,
    /// XON (RESUME) frames this port sent to its peer.
    pub xon_sent: u64,
    /// When the first XOFF was decided, if any.
    pub first_xoff: Option<Time>,
    /// When the last XOFF was decided, if any.
    pub last_xoff: Option<Time>,
    /// When the last XON was decided, if any.
    pub last_xon: Option<Time>,
    /// Total time this port held its peer in XOFF (from each XOFF decision to the matching
    /// XON decision; a pause still in force counts up to the query time).
    pub xoff_time: Span,
    /// XOFF frames this port received from a peer switch.
    pub pauses_received: u64,
    /// Total time this port's data transmission was paused by its peer (until the query
    /// time for a pause in force).
    pub paused_time: Span,
}

/// Counters of one switch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SwitchStats {
    /// Ports on the switch.
    pub ports: u32,
    /// Largest occupancy of its shared buffer, bytes (wire size of queued packets).
    pub max_buffer_bytes: u64,
    /// Packets it dropped (buffer full, or no route to the destination host).
    pub drops: u64,
    /// Packets it marked ECN CE.
    pub ecn_marks: u64,
    /// The PFC thresholds in force on it (`None` without PFC).
    pub pfc: Option<PfcThresholds>,
}

#[derive(Debug)]
pub(crate) struct Port {
    /// Data FIFO (packet ids).
    queue: VecDeque<u32>,
    /// Wire bytes in `queue`.
    queue_bytes: u64,
    /// PFC frames to send, ahead of `queue`.
    ctrl: VecDeque<u32>,
    busy: bool,
    tx_pkt: u32,
    /// Packets on the outgoing link, with their arrival times at the peer.
    down: VecDeque<(Time, u32)>,
    /// Buffered bytes that entered on this port.
    ingress_bytes: u64,
    /// XOFF sent to this port's peer and not yet lifted.
    xoff: bool,
    xoff_since: Time,
    /// Data transmission paused by the peer's XOFF.
    paused: bool,
    paused_since: Time,
    /// Owning switch.
    switch: u32,
    peer: Peer,
    /// Index of this port's link rate in `Fabric::ser`.
    rate: u32,
    stats: PortStats,
}

#[derive(Debug)]
struct SwitchState {
    used: u64,
    capacity: u64,
    pfc: Option<PfcThresholds>,
    stats: SwitchStats,
}

/// All switches, their ports, and the routes between them.
#[derive(Debug)]
pub(crate) struct Fabric {
    ports: Vec<Port>,
    switches: Vec<SwitchState>,
    port_base: Vec<u32>,
    host_port: Vec<u32>,
    routes: Routes,
    /// Serialization time by wire size, one table per distinct port link rate.
    ser: Vec<Vec<Span>>,
    rates: Vec<u64>,
    ecn: Option<EcnConfig>,
    rng: ChaCha8Rng,
}

impl Fabric {
    /// Wire up `cfg.topology` with per-switch PFC thresholds; `max_wire` is the largest wire
    /// size to tabulate serialization times for.
    pub(crate) fn new(cfg: &SimConfig, max_wire: u32) -> Result<Self, SimConfigError> {
        let layout = Layout::build(&cfg.topology, cfg.hosts, cfg.link_rate_bps);
        let routes = Routes::build(&layout, cfg.seed);
        let mut rates: Vec<u64> = Vec::new();
        let mut ports = Vec::with_capacity(layout.peer.len());
        for (g, &peer) in layout.peer.iter().enumerate() {
            let r = layout.port_rate[g];
            let rate = match rates.iter().position(|&x| x == r) {
                Some(i) => i,
                None => {
                    rates.push(r);
                    rates.len() - 1
                }
            } as u32;
            ports.push(Port {
                queue: VecDeque::new(),
                queue_bytes: 0,
                ctrl: VecDeque::new(),
                busy: false,
                tx_pkt: 0,
                down: VecDeque::new(),
                ingress_bytes: 0,
                xoff: false,
                xoff_since: Time::ZERO,
                paused: false,
                paused_since: Time::ZERO,
                switch: layout.port_switch[g],
                peer,
                rate,
                stats: PortStats::default(),
            });
        }
        let ser = rates
            .iter()
            .map(|&r| {
                (0..=max_wire as u64)
                    .map(|b| Span::serialization(b, r))
                    .collect()
            })
            .collect();
        let mut switches = Vec::with_capacity(layout.switches());
        for s in 0..layout.switches() {
            let (a, b) = (
                layout.port_base[s] as usize,
                layout.port_base[s + 1] as usize,
            );
            let max_rate = layout.port_rate[a..b].iter().copied().max().unwrap_or(0);
            let pfc = cfg.pfc_thresholds_for((b - a) as u64, max_rate)?;
            switches.push(SwitchState {
                used: 0,
                capacity: cfg.switch_buffer_bytes,
                pfc,
                stats: SwitchStats {
                    ports: (b - a) as u32,
                    pfc,
                    ..SwitchStats::default()
                },
            });
        }
        let mut rng = ChaCha8Rng::seed_from_u64(cfg.seed);
        rng.set_stream(SWITCH_STREAM);
        Ok(Fabric {
            ports,
            switches,
            port_base: layout.port_base,
            host_port: layout.host_port,
            routes,
            ser,
            rates,
            ecn: cfg.ecn,
            rng,
        })
    }

    /// RED decision for a packet joining an egress queue of `q` bytes (DCQCN, Zhu et al.
    /// SIGCOMM 2015 §3.1): mark with probability 0 if `q ≤ Kmin`, `Pmax·(q−Kmin)/(Kmax−Kmin)`
    /// if `Kmin < q ≤ Kmax`, 1 if `q > Kmax`. Draws from the RNG only in the middle band.
    pub(crate) fn ecn_mark(&mut self, q: u64) -> bool {
        let Some(e) = self.ecn else { return false };
        if q <= e.kmin_bytes {
            false
        } else if q > e.kmax_bytes {
            true
        } else {
            let p = e.pmax * (q - e.kmin_bytes) as f64 / (e.kmax_bytes - e.kmin_bytes) as f64;
            self.rng.random::<f64>() < p
        }
    }

    #[inline]
    fn ser(&self, rate: u32, wire: u32) -> Span {
        match self.ser[rate as usize].get(wire as usize) {
            Some(&t) => t,
            None => Span::serialization(wire as u64, self.rates[rate as usize]),
        }
    }

    /// The fault state of `cfg` on this fabric's wires; `None` when `cfg` is empty.
    pub(crate) fn link_faults(&self, cfg: &FaultConfig, seed: u64) -> Option<Faults> {
        let peers: Vec<Peer> = self.ports.iter().map(|p| p.peer).collect();
        Faults::new(cfg, seed, &self.host_port, &peers)
    }

    /// Bytes (wire size) in the egress queue of the switch port cabled to `host` (0 for an
    /// unknown host).
    pub(crate) fn host_port_queue_bytes(&self, host: u32) -> u64 {
        self.host_port
            .get(host as usize)
            .map_or(0, |&g| self.ports[g as usize].queue_bytes)
    }

    /// The longest egress queue of any switch port now, bytes.
    pub(crate) fn max_queue_bytes(&self) -> u64 {
        self.ports.iter().map(|p| p.queue_bytes).max().unwrap_or(0)
    }

    /// Switch ports whose data transmission a peer's XOFF holds now.
    pub(crate) fn paused_ports(&self) -> u32 {
        self.ports.iter().filter(|p| p.paused).count() as u32
    }

    /// Number of global switch ports.
    pub(crate) fn port_count(&self) -> usize {
        self.ports.len()
    }

    /// The global switch port cabled to `host`, `None` for an unknown host.
    pub(crate) fn host_port(&self, host: u32) -> Option<u32> {
        self.host_port.get(host as usize).copied()
    }

    /// Serialization time of a `wire`-byte packet on global port `port`'s link.
    pub(crate) fn port_ser(&self, port: u32, wire: u32) -> Span {
        self.ser(self.ports[port as usize].rate, wire)
    }

    /// Global port index of `(switch, port)`.
    fn global(&self, switch: u32, port: u32) -> Option<usize> {
        let s = switch as usize;
        let (a, b) = (*self.port_base.get(s)?, *self.port_base.get(s + 1)?);
        (port < b - a).then_some((a + port) as usize)
    }

    fn local(&self, g: u32) -> PortPeer {
        let s = self.ports[g as usize].switch;
        PortPeer::Switch {
            switch: s,
            port: g - self.port_base[s as usize],
        }
    }
}

impl Simulation {
    /// A packet from host `host`'s uplink has fully arrived at the host's switch port.
    pub(crate) fn switch_receive(&mut self, host: u32, id: u32) {
        let g = self.fabric.host_port[host as usize];
        self.port_receive(g, id);
    }

    /// A packet has fully arrived at global port `port`: route, account, mark, enqueue.
    fn port_receive(&mut self, port: u32, id: u32) {
        let fab = &mut self.fabric;
        let sw_i = fab.ports[port as usize].switch as usize;
        let p = self.pool.get(id);
        let (wire, kind) = (p.wire as u64, p.kind);
        let egress = fab.routes.egress(sw_i as u32, p);
        let sw = &mut fab.switches[sw_i];
        let Some(dst) = egress.filter(|_| sw.used + wire <= sw.capacity) else {
            sw.stats.drops += 1;
            self.stats.drops += 1;
            let p = *self.pool.get(id);
            self.pool.release(id);
            self.note_discard(&p);
            return;
        };
        sw.used += wire;
        sw.stats.max_buffer_bytes = sw.stats.max_buffer_bytes.max(sw.used);
        self.stats.max_buffer_bytes = self.stats.max_buffer_bytes.max(sw.used);
        let pfc = sw.pfc;
        let ing = &mut fab.ports[port as usize];
        ing.ingress_bytes += wire;
        let send_xoff = match pfc {
            Some(t) if !ing.xoff && ing.ingress_bytes > t.xoff_bytes => {
                ing.xoff = true;
                ing.xoff_since = self.now;
                let st = &mut ing.stats;
                st.xoff_sent += 1;
                st.first_xoff.get_or_insert(self.now);
                st.last_xoff = Some(self.now);
                true
            }
            _ => false,
        };
        let q = fab.ports[dst as usize].queue_bytes;
        let capable = match kind {
            PktKind::Data | PktKind::ReadResp => true,
            PktKind::Tcp => self.pool.get(id).has(F_ECT),
            _ => false,
        };
        let marked = capable && fab.ecn_mark(q);
        let p = self.pool.get_mut(id);
        p.ingress = port;
        if marked {
            // Network-wide, a packet counts once however many hops mark it; each switch
            // counts its own marking decisions.
            if p.flags & F_CE == 0 {
                self.stats.ecn_marks += 1;
            }
            p.flags |= F_CE;
            fab.switches[sw_i].stats.ecn_marks += 1;
        }
        let eg = &mut fab.ports[dst as usize];
        eg.queue.push_back(id);
        eg.queue_bytes += wire;
        self.stats.max_egress_queue_bytes = self.stats.max_egress_queue_bytes.max(eg.queue_bytes);
        if send_xoff {
            self.stats.pfc_xoff_sent += 1;
            self.send_pfc(port, PktKind::Pause);
        }
        self.switch_try_tx(dst);
    }

    fn send_pfc(&mut self, port: u32, kind: PktKind) {
        let mut p = Packet::control(kind, port, port, PFC_FRAME_BYTES);
        p.ingress = port;
        let id = self.pool.alloc(p);
        self.fabric.ports[port as usize].ctrl.push_back(id);
        self.switch_try_tx(port);
    }

    fn switch_try_tx(&mut self, port: u32) {
        let pt = &mut self.fabric.ports[port as usize];
        if pt.busy {
            return;
        }
        let (id, from_queue) = if let Some(id) = pt.ctrl.pop_front() {
            (id, false)
        } else if pt.paused {
            return;
        } else if let Some(id) = pt.queue.pop_front() {
            (id, true)
        } else {
            return;
        };
        let (wire, ingress) = {
            let p = self.pool.get(id);
            (p.wire, p.ingress)
        };
        pt.busy = true;
        pt.tx_pkt = id;
        let rate = pt.rate;
        let done = self.now + self.fabric.ser(rate, wire);
        self.queue.push(done, Event::SwitchTxDone(port));
        if from_queue {
            let fab = &mut self.fabric;
            let wire = wire as u64;
            let pt = &mut fab.ports[port as usize];
            pt.queue_bytes -= wire;
            pt.stats.tx_packets += 1;
            pt.stats.tx_bytes += wire;
            let sw = &mut fab.switches[pt.switch as usize];
            sw.used -= wire;
            let pfc = sw.pfc;
            let ing = &mut fab.ports[ingress as usize];
            ing.ingress_bytes -= wire;
            if let Some(t) = pfc {
                if ing.xoff && ing.ingress_bytes <= t.xon_bytes {
                    ing.xoff = false;
                    ing.stats.xon_sent += 1;
                    ing.stats.last_xon = Some(self.now);
                    ing.stats.xoff_time += self.now - ing.xoff_since;
                    self.stats.pfc_xon_sent += 1;
                    self.send_pfc(ingress, PktKind::Resume);
                }
            }
        }
    }

    pub(crate) fn on_switch_tx_done(&mut self, port: u32) {
        let at = self.now + self.cfg.link_delay;
        let pt = &mut self.fabric.ports[port as usize];
        pt.busy = false;
        let id = pt.tx_pkt;
        pt.down.push_back((at, id));
        if self.capture.is_some() {
            self.capture_port_tx(port, id);
        }
        let pt = &mut self.fabric.ports[port as usize];
        if pt.down.len() == 1 {
            self.queue.push(at, Event::DownArrive(port));
        }
        self.switch_try_tx(port);
    }

    pub(crate) fn on_down_arrive(&mut self, port: u32) {
        let pt = &mut self.fabric.ports[port as usize];
        let Some((_, id)) = pt.down.pop_front() else {
            return;
        };
        if let Some(&(next, _)) = pt.down.front() {
            self.queue.push(next, Event::DownArrive(port));
        }
        let peer = pt.peer;
        if self.port_link_fault(port, id) {
            return;
        }
        match peer {
            Peer::Host(h) => self.nic_receive(h, id),
            Peer::Port(o) => match self.pool.get(id).kind {
                PktKind::Pause | PktKind::Resume => self.on_pfc_frame(o, id),
                _ => self.port_receive(o, id),
            },
        }
    }

    /// A PFC frame reached global port `port` from its peer switch.
    fn on_pfc_frame(&mut self, port: u32, id: u32) {
        let kind = self.pool.get(id).kind;
        self.pool.release(id);
        let pt = &mut self.fabric.ports[port as usize];
        match kind {
            PktKind::Pause if !pt.paused => {
                pt.paused = true;
                pt.paused_since = self.now;
                pt.stats.pauses_received += 1;
            }
            PktKind::Resume if pt.paused => {
                pt.paused = false;
                pt.stats.paused_time += self.now - pt.paused_since;
                self.switch_try_tx(port);
            }
            _ => {}
        }
    }

    /// Number of switches in the fabric (1 for a star).
    pub fn switch_count(&self) -> u32 {
        self.fabric.switches.len() as u32
    }

    /// Counters of switch `switch`, `None` if it does not exist.
    pub fn switch_stats(&self, switch: u32) -> Option<SwitchStats> {
        self.fabric.switches.get(switch as usize).map(|s| s.stats)
    }

    /// Counters of local port `port` of switch `switch`, `None` if it does not exist. Pause
    /// durations still in force are counted up to [`Simulation::now`].
    pub fn port_stats(&self, switch: u32, port: u32) -> Option<PortStats> {
        let pt = &self.fabric.ports[self.fabric.global(switch, port)?];
        let mut st = pt.stats;
        if pt.xoff {
            st.xoff_time += self.now - pt.xoff_since;
        }
        if pt.paused {
            st.paused_time += self.now - pt.paused_since;
        }
        Some(st)
    }

    /// What local port `port` of switch `switch` is cabled to, `None` if it does not exist.
    pub fn port_peer(&self, switch: u32, port: u32) -> Option<PortPeer> {
        let pt = &self.fabric.ports[self.fabric.global(switch, port)?];
        Some(match pt.peer {
            Peer::Host(h) => PortPeer::Host(h),
            Peer::Port(o) => self.fabric.local(o),
        })
    }

    /// The `(switch, local port)` host `host`'s NIC is cabled to, `None` for unknown hosts.
    pub fn host_attachment(&self, host: u32) -> Option<(u32, u32)> {
        let g = *self.fabric.host_port.get(host as usize)?;
        match self.fabric.local(g) {
            PortPeer::Switch { switch, port } => Some((switch, port)),
            PortPeer::Host(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn red_marking_fraction_follows_the_ramp() {
        let cfg = SimConfig {
            ecn: Some(EcnConfig {
                kmin_bytes: 100_000,
                kmax_bytes: 400_000,
                pmax: 0.2,
            }),
            seed: 42,
            ..Default::default()
        };
        let mut sw = Fabric::new(&cfg, 1200).unwrap();
        let n = 200_000;
        let frac =
            |sw: &mut Fabric, q: u64| (0..n).filter(|_| sw.ecn_mark(q)).count() as f64 / n as f64;
        // q = Kmin: p = 0 exactly; q > Kmax: p = 1 exactly.
        assert_eq!(frac(&mut sw, 100_000), 0.0);
        assert_eq!(frac(&mut sw, 400_001), 1.0);
        // q = 250_000: p = 0.2·(250_000−100_000)/(400_000−100_000) = 0.1; the binomial standard
        // deviation of the fraction is sqrt(0.1·0.9/200_000) ≈ 0.00067, so ±0.003 is > 4σ.
        let f = frac(&mut sw, 250_000);
        assert!((f - 0.1).abs() < 0.003, "fraction {f}");
        // q = Kmax: p = Pmax = 0.2, σ ≈ 0.0009.
        let f = frac(&mut sw, 400_000);
        assert!((f - 0.2).abs() < 0.004, "fraction {f}");
    }
}
