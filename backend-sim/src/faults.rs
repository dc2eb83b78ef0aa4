//! Injected link faults: packet loss, corruption (a bad ICRC the receiving NIC drops) and
//! links that go down for a while, per link direction and deterministic from the seed.
//!
//! Every link direction is a *wire*: the uplink of host `h` (its NIC towards its switch) and
//! the outgoing link of every switch port (towards a host or another switch). A fault is
//! decided when a packet reaches the far end of its wire:
//! - the wire is down at that instant (`at ≤ now < until`): the packet is dropped
//!   ([`crate::SimStats::link_down_drops`]);
//! - else, with probability `loss`, it is lost ([`crate::SimStats::injected_losses`]);
//! - else, with probability `corrupt`, it is marked corrupted
//!   ([`crate::SimStats::corrupted_packets`]): switches forward it (they do not check the
//!   ICRC), and the destination NIC drops it ([`crate::SimStats::icrc_drops`]).
//!
//! Each wire draws from its own ChaCha8 stream (`FAULT_STREAM_BASE + wire`, seeded by
//! [`crate::SimConfig::seed`]), so a fault on one link does not shift another link's draws,
//! and only wires with a non-zero rate draw at all. PFC frames are exempt: they are link-local
//! control frames whose loss the model does not represent (a lost XON would pause a port
//! forever). Without faults ([`FaultConfig::is_empty`]) nothing here runs: no state, no draw,
//! the same events and trace hash as before faults existed.

use crate::packet::{PktKind, F_CORRUPT};
use crate::topology::Peer;
use crate::Simulation;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;
use std::fmt;
use xrdma::{Span, Time};

/// First ChaCha stream number of the per-wire fault streams (the switches use stream 1).
const FAULT_STREAM_BASE: u64 = 1 << 32;

/// Which links a fault applies to; a scenario writes `all` or `host N` (`link:`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LinkSelector {
    /// Every link of the fabric (host cables and, for [`LinkDirection::Both`],
    /// switch-to-switch links too). Default.
    #[default]
    All,
    /// The cable between host `0`'s NIC and its switch port.
    Host(u32),
}

impl<'de> Deserialize<'de> for LinkSelector {
    /// `all`, or `host N` (the cable of host N).
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = LinkSelector;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("`all` or `host N`")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<LinkSelector, E> {
                let t = v.trim();
                if t == "all" {
                    return Ok(LinkSelector::All);
                }
                let n = t
                    .strip_prefix("host")
                    .map(str::trim)
                    .and_then(|n| n.parse().ok());
                n.map(LinkSelector::Host).ok_or_else(|| {
                    E::custom(format!(
                        "`{v}` names no link: write `all` or `host N` (the cable of host N)"
                    ))
                })
            }
        }
        d.deserialize_str(V)
    }
}

/// Which direction of a link a fault applies to (`direction: up | down | both`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LinkDirection {
    /// Host to switch (the NIC's uplink).
    Up,
    /// Switch to host.
    Down,
    /// Both directions; with [`LinkSelector::All`], switch-to-switch links as well. Default.
    #[default]
    Both,
}

/// A per-packet probability on some links; a scenario writes
/// `{ link: host 3, direction: up, rate: 1% }` (`sim.faults.loss`, `sim.faults.corrupt`).
#[derive(Clone, Copy, Debug, PartialEq, Deserialize)]
#[serde(
    rename_all = "kebab-case",
    deny_unknown_fields,
    expecting = "a mapping (a link fault rate `{ link: host 3, direction: up, rate: 1% }`)"
)]
pub struct LinkRate {
    /// The links; default all.
    #[serde(default)]
    pub link: LinkSelector,
    /// Their direction; default both.
    #[serde(default)]
    pub direction: LinkDirection,
    /// Probability per packet, in [0, 1] (written `1%` or `0.01`).
    #[serde(deserialize_with = "xrdma::units::deserialize_fraction")]
    pub rate: f64,
}

/// A window in which some links drop everything; a scenario writes
/// `{ link: host 2, at: 200us, for: 100us }` (`sim.faults.link-down`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(
    rename_all = "kebab-case",
    deny_unknown_fields,
    expecting = "a mapping (a link outage `{ link: host 2, at: 200us, for: 100us }`)"
)]
pub struct LinkOutage {
    /// The links; default all.
    #[serde(default)]
    pub link: LinkSelector,
    /// Their direction; default both.
    #[serde(default)]
    pub direction: LinkDirection,
    /// When the link goes down (simulated time, written as the span after time zero).
    #[serde(deserialize_with = "instant")]
    pub at: Time,
    /// How long it stays down (`for:`), > 0.
    #[serde(
        rename = "for",
        deserialize_with = "xrdma::units::deserialize_nonzero_span"
    )]
    pub duration: Span,
}

impl LinkOutage {
    /// When the link comes back up: `at + duration` (saturating at [`Time::MAX`]).
    pub fn until(&self) -> Time {
        self.at + self.duration
    }
}

/// An instant on the run's clock, written as the span after time zero (`200us`).
fn instant<'de, D: Deserializer<'de>>(d: D) -> Result<Time, D::Error> {
    xrdma::units::deserialize_span(d).map(|s| Time::ZERO + s)
}

/// The link faults of a run. Default: none. For `loss` and `corrupt`, the last entry that
/// covers a wire sets its rate (write a `LinkSelector::All` default first, exceptions after);
/// outages add up. A scenario writes them in `sim.faults` (each one mapping or a list).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FaultConfig {
    /// Packet loss rates.
    pub loss: Vec<LinkRate>,
    /// Corruption rates (packets that arrive with a bad ICRC).
    pub corrupt: Vec<LinkRate>,
    /// Link down/up windows.
    pub link_down: Vec<LinkOutage>,
}

impl FaultConfig {
    /// Whether no fault is configured (a rate of 0 counts as none).
    pub fn is_empty(&self) -> bool {
        self.loss.iter().all(|l| l.rate == 0.0)
            && self.corrupt.iter().all(|c| c.rate == 0.0)
            && self.link_down.is_empty()
    }

    /// The first problem, as `(field, reason)`: a rate outside [0, 1], an outage of no
    /// duration, or a host that does not exist among `hosts`.
    pub(crate) fn check(&self, hosts: u32) -> Result<(), (&'static str, String)> {
        let host_ok = |l: LinkSelector| match l {
            LinkSelector::Host(h) if h >= hosts => Err(format!(
                "host {h} does not exist: the hosts are 0..={}",
                hosts.saturating_sub(1)
            )),
            _ => Ok(()),
        };
        for (field, list) in [
            ("faults.loss", &self.loss),
            ("faults.corrupt", &self.corrupt),
        ] {
            for r in list {
                if !(0.0..=1.0).contains(&r.rate) {
                    return Err((field, format!("rate {} is outside [0, 1]", r.rate)));
                }
                host_ok(r.link).map_err(|e| (field, e))?;
            }
        }
        for o in &self.link_down {
            if o.duration == Span::ZERO {
                return Err(("faults.link_down", "must be longer than 0".into()));
            }
            host_ok(o.link).map_err(|e| ("faults.link_down", e))?;
        }
        Ok(())
    }
}

/// What happens to a packet at the end of its wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Verdict {
    Pass,
    Down,
    Lost,
    Corrupt,
}

#[derive(Debug)]
struct Wire {
    loss: f64,
    corrupt: f64,
    /// `(at, until)` windows in which the wire is down.
    down: Vec<(Time, Time)>,
    rng: ChaCha8Rng,
}

impl Wire {
    fn verdict(&mut self, now: Time) -> Verdict {
        if self.down.iter().any(|&(a, u)| a <= now && now < u) {
            return Verdict::Down;
        }
        if self.loss > 0.0 && self.rng.random::<f64>() < self.loss {
            return Verdict::Lost;
        }
        if self.corrupt > 0.0 && self.rng.random::<f64>() < self.corrupt {
            return Verdict::Corrupt;
        }
        Verdict::Pass
    }

    fn idle(&self) -> bool {
        self.loss == 0.0 && self.corrupt == 0.0 && self.down.is_empty()
    }
}

/// The fault state of every wire: uplinks `0..hosts`, then switch port `g`'s outgoing link at
/// `hosts + g`.
#[derive(Debug)]
pub(crate) struct Faults {
    hosts: u32,
    wires: Vec<Wire>,
    /// Per wire: whether any fault applies (checked before anything else).
    active: Vec<bool>,
}

impl Faults {
    /// The faults of `cfg` on a fabric with `host_port[h]` = host `h`'s switch port and
    /// `peers[g]` = what global port `g` is cabled to; `None` when `cfg` is empty.
    pub(crate) fn new(
        cfg: &FaultConfig,
        seed: u64,
        host_port: &[u32],
        peers: &[Peer],
    ) -> Option<Self> {
        if cfg.is_empty() {
            return None;
        }
        let hosts = host_port.len() as u32;
        let n = host_port.len() + peers.len();
        let mut wires: Vec<Wire> = (0..n)
            .map(|w| {
                let mut rng = ChaCha8Rng::seed_from_u64(seed);
                rng.set_stream(FAULT_STREAM_BASE + w as u64);
                Wire {
                    loss: 0.0,
                    corrupt: 0.0,
                    down: Vec::new(),
                    rng,
                }
            })
            .collect();
        // The wires a selector and direction cover.
        let covered = |link: LinkSelector, dir: LinkDirection| -> Vec<usize> {
            let up = matches!(dir, LinkDirection::Up | LinkDirection::Both);
            let down = matches!(dir, LinkDirection::Down | LinkDirection::Both);
            let mut v = Vec::new();
            match link {
                LinkSelector::Host(h) => {
                    if let Some(&g) = host_port.get(h as usize) {
                        if up {
                            v.push(h as usize);
                        }
                        if down {
                            v.push(hosts as usize + g as usize);
                        }
                    }
                }
                LinkSelector::All => {
                    if up {
                        v.extend(0..hosts as usize);
                    }
                    for (g, p) in peers.iter().enumerate() {
                        let to_host = matches!(p, Peer::Host(_));
                        if (to_host && down) || (!to_host && dir == LinkDirection::Both) {
                            v.push(hosts as usize + g);
                        }
                    }
                }
            }
            v
        };
        for r in &cfg.loss {
            for w in covered(r.link, r.direction) {
                wires[w].loss = r.rate;
            }
        }
        for r in &cfg.corrupt {
            for w in covered(r.link, r.direction) {
                wires[w].corrupt = r.rate;
            }
        }
        for o in &cfg.link_down {
            for w in covered(o.link, o.direction) {
                wires[w].down.push((o.at, o.until()));
            }
        }
        let active = wires.iter().map(|w| !w.idle()).collect();
        Some(Faults {
            hosts,
            wires,
            active,
        })
    }
}

impl Simulation {
    /// Apply the faults of host `h`'s uplink to packet `id`, which has just reached the
    /// switch; `true` when it was dropped (and released).
    #[inline]
    pub(crate) fn uplink_fault(&mut self, h: u32, id: u32) -> bool {
        match self.faults.as_ref() {
            Some(f) if f.active[h as usize] => self.inject(h as usize, id),
            _ => false,
        }
    }

    /// Apply the faults of global port `g`'s outgoing link to packet `id`, which has just
    /// reached the port's peer; `true` when it was dropped (and released).
    #[inline]
    pub(crate) fn port_link_fault(&mut self, g: u32, id: u32) -> bool {
        match self.faults.as_ref() {
            Some(f) if f.active[(f.hosts + g) as usize] => self.inject((f.hosts + g) as usize, id),
            _ => false,
        }
    }

    fn inject(&mut self, wire: usize, id: u32) -> bool {
        if matches!(self.pool.get(id).kind, PktKind::Pause | PktKind::Resume) {
            return false;
        }
        let now = self.now;
        let Some(f) = self.faults.as_mut() else {
            return false;
        };
        match f.wires[wire].verdict(now) {
            Verdict::Pass => return false,
            Verdict::Corrupt => {
                self.stats.corrupted_packets += 1;
                self.pool.get_mut(id).flags |= F_CORRUPT;
                return false;
            }
            Verdict::Down => self.stats.link_down_drops += 1,
            Verdict::Lost => self.stats.injected_losses += 1,
        }
        let p = *self.pool.get(id);
        self.pool.release(id);
        self.note_discard(&p);
        true
    }
}
