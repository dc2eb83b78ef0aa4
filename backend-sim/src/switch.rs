//! The output-queued switch: shared buffer, per-port egress FIFOs, RED-style ECN marking and
//! PFC per ingress port.
//!
//! Modelling choices:
//! - A packet occupies the shared buffer from its arrival (last bit received) until it starts
//!   transmission on its egress port (dequeue).
//! - ECN is decided **at enqueue**, on the instantaneous length in bytes of the egress queue
//!   the packet joins, not counting the packet itself nor the packet being transmitted.
//! - PFC frames (XOFF/XON) are queued per port ahead of data and go out after the packet being
//!   transmitted finishes.

use crate::config::{EcnConfig, PfcThresholds, SimConfig, PFC_FRAME_BYTES};
use crate::engine::Event;
use crate::packet::{Packet, PktKind, F_CE};
use crate::Simulation;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::VecDeque;
use xrdma::Time;

/// ChaCha stream number of the switch's random stream (ECN decisions).
const SWITCH_STREAM: u64 = 1;

#[derive(Debug, Default)]
pub(crate) struct Port {
    /// Data FIFO (packet ids).
    queue: VecDeque<u32>,
    /// Wire bytes in `queue`.
    queue_bytes: u64,
    /// PFC frames to send, ahead of `queue`.
    ctrl: VecDeque<u32>,
    busy: bool,
    tx_pkt: u32,
    /// Packets on the downlink, with their arrival times at the host.
    down: VecDeque<(Time, u32)>,
    /// Buffered bytes that entered on this port.
    ingress_bytes: u64,
    /// XOFF sent to this port's host and not yet lifted.
    xoff: bool,
}

#[derive(Debug)]
pub(crate) struct Switch {
    ports: Vec<Port>,
    used: u64,
    capacity: u64,
    ecn: Option<EcnConfig>,
    pfc: Option<PfcThresholds>,
    rng: ChaCha8Rng,
}

impl Switch {
    pub(crate) fn new(cfg: &SimConfig, pfc: Option<PfcThresholds>) -> Self {
        let mut rng = ChaCha8Rng::seed_from_u64(cfg.seed);
        rng.set_stream(SWITCH_STREAM);
        Switch {
            ports: (0..cfg.hosts).map(|_| Port::default()).collect(),
            used: 0,
            capacity: cfg.switch_buffer_bytes,
            ecn: cfg.ecn,
            pfc,
            rng,
        }
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
}

impl Simulation {
    /// A packet from host `port`'s uplink has fully arrived at the switch.
    pub(crate) fn switch_receive(&mut self, port: u32, id: u32) {
        let (wire, dst, kind) = {
            let p = self.pool.get(id);
            (p.wire as u64, p.dst_host, p.kind)
        };
        let sw = &mut self.switch;
        if dst as usize >= sw.ports.len() || sw.used + wire > sw.capacity {
            self.stats.drops += 1;
            self.pool.release(id);
            return;
        }
        sw.used += wire;
        self.stats.max_buffer_bytes = self.stats.max_buffer_bytes.max(sw.used);
        let ing = &mut sw.ports[port as usize];
        ing.ingress_bytes += wire;
        let send_xoff = match sw.pfc {
            Some(t) if !ing.xoff && ing.ingress_bytes > t.xoff_bytes => {
                ing.xoff = true;
                true
            }
            _ => false,
        };
        let q = sw.ports[dst as usize].queue_bytes;
        let marked = matches!(kind, PktKind::Data | PktKind::ReadResp) && sw.ecn_mark(q);
        let p = self.pool.get_mut(id);
        p.ingress = port;
        if marked {
            p.flags |= F_CE;
            self.stats.ecn_marks += 1;
        }
        let eg = &mut self.switch.ports[dst as usize];
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
        self.switch.ports[port as usize].ctrl.push_back(id);
        self.switch_try_tx(port);
    }

    fn switch_try_tx(&mut self, port: u32) {
        let pt = &mut self.switch.ports[port as usize];
        if pt.busy {
            return;
        }
        let (id, from_queue) = if let Some(id) = pt.ctrl.pop_front() {
            (id, false)
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
        let done = self.now + self.ser(wire);
        self.queue.push(done, Event::SwitchTxDone(port));
        if from_queue {
            let sw = &mut self.switch;
            let wire = wire as u64;
            sw.ports[port as usize].queue_bytes -= wire;
            sw.used -= wire;
            let ing = &mut sw.ports[ingress as usize];
            ing.ingress_bytes -= wire;
            if let Some(t) = sw.pfc {
                if ing.xoff && ing.ingress_bytes <= t.xon_bytes {
                    ing.xoff = false;
                    self.stats.pfc_xon_sent += 1;
                    self.send_pfc(ingress, PktKind::Resume);
                }
            }
        }
    }

    pub(crate) fn on_switch_tx_done(&mut self, port: u32) {
        let at = self.now + self.cfg.link_delay;
        let pt = &mut self.switch.ports[port as usize];
        pt.busy = false;
        let id = pt.tx_pkt;
        pt.down.push_back((at, id));
        if pt.down.len() == 1 {
            self.queue.push(at, Event::DownArrive(port));
        }
        self.switch_try_tx(port);
    }

    pub(crate) fn on_down_arrive(&mut self, port: u32) {
        let pt = &mut self.switch.ports[port as usize];
        let Some((_, id)) = pt.down.pop_front() else {
            return;
        };
        if let Some(&(next, _)) = pt.down.front() {
            self.queue.push(next, Event::DownArrive(port));
        }
        self.nic_receive(port, id);
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
        let mut sw = Switch::new(&cfg, None);
        let n = 200_000;
        let frac =
            |sw: &mut Switch, q: u64| (0..n).filter(|_| sw.ecn_mark(q)).count() as f64 / n as f64;
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
