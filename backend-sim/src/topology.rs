//! Network topologies: a single switch (star), a two-tier leaf-spine and a three-tier k-ary
//! fat-tree, and their wiring into numbered switch ports.
//!
//! Ports are numbered globally: switch `s` owns the contiguous range
//! `port_base[s]..port_base[s + 1]`, and local port `i` of switch `s` is global port
//! `port_base[s] + i`. In a star, switch 0's port `i` is host `i`.

use crate::config_error::SimConfigError;
use serde::de::value::MapAccessDeserializer;
use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};
use std::fmt;

/// The shape of the network. Every link direction runs at `SimConfig::link_rate_bps` unless
/// noted, with `SimConfig::link_delay` of propagation; every switch has its own shared buffer
/// of `SimConfig::switch_buffer_bytes`, RED ECN marking and PFC.
///
/// It is also a scenario's `sim.topology` block: a mapping with exactly one kind,
/// `{ star: {} }`, `{ leaf-spine: { leaves, spines, hosts-per-leaf, uplink-rate } }` or
/// `{ fat-tree: { k, hosts-per-edge } }` (keys in kebab-case, rates with units).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(
    remote = "Self",
    rename_all = "kebab-case",
    deny_unknown_fields,
    expecting = "a topology `star`, `leaf-spine` or `fat-tree`"
)]
pub enum Topology {
    /// `SimConfig::hosts` hosts on one switch; host `i` is on port `i`.
    #[default]
    #[serde(deserialize_with = "no_parameters")]
    Star,
    /// Two tiers: `leaves` leaf switches with `hosts_per_leaf` hosts each, every leaf linked
    /// once to each of `spines` spine switches. Hosts `l·hosts_per_leaf ..
    /// (l+1)·hosts_per_leaf` sit on leaf `l` (leaf-local ports `0..hosts_per_leaf`); leaf
    /// port `hosts_per_leaf + s` goes to spine `s` (spine port `l`).
    ///
    /// Oversubscription at the leaf = `(hosts_per_leaf · link_rate_bps) / (spines ·
    /// uplink_rate_bps)`.
    #[serde(rename_all = "kebab-case")]
    LeafSpine {
        /// Leaf (top-of-rack) switches, ≥ 1.
        leaves: u32,
        /// Spine switches, ≥ 1.
        spines: u32,
        /// Hosts on each leaf, ≥ 1.
        hosts_per_leaf: u32,
        /// Rate of each leaf–spine link direction, bits per second; `None` = the host link
        /// rate.
        #[serde(
            default,
            rename = "uplink-rate",
            deserialize_with = "xrdma::units::deserialize_opt_rate"
        )]
        uplink_rate_bps: Option<u64>,
    },
    /// Three-tier k-ary fat-tree (Al-Fares, Loukissas & Vahdat, SIGCOMM 2008, §3): `k` pods of
    /// `k/2` edge and `k/2` aggregation switches, `(k/2)²` core switches. Edge switch `e` of
    /// pod `p` links to every aggregation switch of its pod; aggregation switch `a` of every
    /// pod links to cores `a·k/2 .. (a+1)·k/2`. Hosts: `k · k/2 · hosts_per_edge` (`k³/4` at
    /// the default), host `h` on edge switch `h / hosts_per_edge` (pod-major order).
    ///
    /// Oversubscription at the edge = `hosts_per_edge / (k/2)`.
    #[serde(rename_all = "kebab-case")]
    FatTree {
        /// Switch radix, even, in 2..=64.
        k: u32,
        /// Hosts per edge switch, ≥ 1; `None` = `k/2` (no oversubscription).
        #[serde(default)]
        hosts_per_edge: Option<u32>,
    },
}

/// `star:` takes no parameters: an empty mapping or no value.
fn no_parameters<'de, D: Deserializer<'de>>(d: D) -> Result<(), D::Error> {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct NoParameters {}
    Option::<NoParameters>::deserialize(d).map(|_| ())
}

/// The kinds of topology, as a scenario names them.
const KINDS: &[&str] = &["star", "leaf-spine", "fat-tree"];

/// What a topology mapping must hold.
const EXACTLY_ONE: &str = "give exactly one topology kind: `star`, `leaf-spine` or `fat-tree`";

impl<'de> Deserialize<'de> for Topology {
    /// A mapping with exactly one key, the kind, whose value is the kind's parameters.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(OneKind)
    }
}

/// Reads the mapping's one key (refusing an unknown kind at the key) and hands it with its
/// value to the derived reader of the kind.
struct OneKind;

impl<'de> Visitor<'de> for OneKind {
    type Value = Topology;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a mapping (a topology `{ star | leaf-spine | fat-tree: ... }`)")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Topology, A::Error> {
        let Some(kind) = map.next_key_seed(Kind)? else {
            return Err(de::Error::custom(EXACTLY_ONE));
        };
        let replay = Replay {
            kind: Some(kind),
            map: &mut map,
        };
        let t = Topology::deserialize(MapAccessDeserializer::new(replay))?;
        if map.next_key::<de::IgnoredAny>()?.is_some() {
            return Err(de::Error::custom(EXACTLY_ONE));
        }
        Ok(t)
    }
}

/// A topology kind's key, one of [`KINDS`].
struct Kind;

impl<'de> de::DeserializeSeed<'de> for Kind {
    type Value = String;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<String, D::Error> {
        let k = String::deserialize(d)?;
        if !KINDS.contains(&k.as_str()) {
            return Err(de::Error::unknown_field(&k, KINDS));
        }
        Ok(k)
    }
}

/// The mapping with its first key already read: that key, then its value.
struct Replay<'a, A> {
    kind: Option<String>,
    map: &'a mut A,
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Replay<'_, A> {
    type Error = A::Error;

    fn next_key_seed<K: de::DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        use de::IntoDeserializer;
        match self.kind.take() {
            Some(k) => seed.deserialize(k.into_deserializer()).map(Some),
            None => Ok(None),
        }
    }

    fn next_value_seed<V: de::DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, A::Error> {
        self.map.next_value_seed(seed)
    }
}

/// What a switch port is cabled to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum PortPeer {
    /// A host NIC.
    Host(u32),
    /// A port of another switch.
    Switch {
        /// Switch index.
        switch: u32,
        /// Local port index on that switch.
        port: u32,
    },
}

/// One group of identical switches, for validation (per-switch port counts and rates).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SwitchKind {
    /// "switch", "leaf", "spine", "edge", "aggregation" or "core".
    pub name: &'static str,
    /// Ports on each switch of the kind.
    pub ports: u64,
    /// Fastest link rate on those ports, bits per second.
    pub max_rate_bps: u64,
}

/// Largest number of switches: the routing table holds one entry per ordered switch pair, so
/// 4096 switches take 64 MiB.
pub(crate) const MAX_SWITCHES: u64 = 4096;

fn invalid(field: &'static str, reason: String) -> SimConfigError {
    SimConfigError::Invalid { field, reason }
}

impl Topology {
    /// Hosts the topology holds, or `None` for [`Topology::Star`] (which takes
    /// `SimConfig::hosts`). Saturates instead of overflowing for absurd parameters.
    pub fn host_count(&self) -> Option<u64> {
        match *self {
            Topology::Star => None,
            Topology::LeafSpine {
                leaves,
                hosts_per_leaf,
                ..
            } => Some(leaves as u64 * hosts_per_leaf as u64),
            Topology::FatTree { k, hosts_per_edge } => {
                let half = (k / 2) as u64;
                Some(k as u64 * half * hosts_per_edge.map_or(half, u64::from))
            }
        }
    }

    /// Switches in the topology: 1, `leaves + spines`, or `k² + (k/2)²` for a fat-tree
    /// (`k·k/2` edge + `k·k/2` aggregation + `(k/2)²` core).
    pub fn switch_count(&self) -> u64 {
        match *self {
            Topology::Star => 1,
            Topology::LeafSpine { leaves, spines, .. } => leaves as u64 + spines as u64,
            Topology::FatTree { k, .. } => {
                let (k, half) = (k as u64, (k / 2) as u64);
                k * k + half * half
            }
        }
    }

    /// Oversubscription of the first switch tier: host-facing capacity over uplink capacity
    /// (1.0 for a star). Leaf-spine: `hosts_per_leaf·host_rate / (spines·uplink_rate)`;
    /// fat-tree: `hosts_per_edge / (k/2)`.
    pub fn oversubscription(&self, host_rate_bps: u64) -> f64 {
        match *self {
            Topology::Star => 1.0,
            Topology::LeafSpine {
                spines,
                hosts_per_leaf,
                uplink_rate_bps,
                ..
            } => {
                let up = uplink_rate_bps.unwrap_or(host_rate_bps) as f64 * spines as f64;
                hosts_per_leaf as f64 * host_rate_bps as f64 / up
            }
            Topology::FatTree { k, hosts_per_edge } => {
                let half = (k / 2) as f64;
                hosts_per_edge.map_or(half, f64::from) / half
            }
        }
    }

    /// Check the parameters and that `hosts` matches the topology.
    ///
    /// # Errors
    /// [`SimConfigError::Invalid`] with field `topology.*` for a zero count, an odd or
    /// out-of-range `k`, a zero uplink rate, more than [`MAX_SWITCHES`] switches; field
    /// `hosts` when `hosts` differs from [`Topology::host_count`].
    pub(crate) fn validate(&self, hosts: u32) -> Result<(), SimConfigError> {
        match *self {
            Topology::Star => return Ok(()),
            Topology::LeafSpine {
                leaves,
                spines,
                hosts_per_leaf,
                uplink_rate_bps,
            } => {
                for (f, v) in [
                    ("topology.leaves", leaves),
                    ("topology.spines", spines),
                    ("topology.hosts_per_leaf", hosts_per_leaf),
                ] {
                    if v == 0 {
                        return Err(invalid(f, "must be at least 1".into()));
                    }
                }
                if uplink_rate_bps == Some(0) {
                    return Err(invalid(
                        "topology.uplink_rate_bps",
                        "must be positive".into(),
                    ));
                }
            }
            Topology::FatTree { k, hosts_per_edge } => {
                if !(2..=64).contains(&k) || k % 2 != 0 {
                    return Err(invalid(
                        "topology.k",
                        format!("{k} is not an even radix in 2..=64"),
                    ));
                }
                if hosts_per_edge == Some(0) {
                    return Err(invalid(
                        "topology.hosts_per_edge",
                        "must be at least 1".into(),
                    ));
                }
            }
        }
        let sw = self.switch_count();
        if sw > MAX_SWITCHES {
            return Err(invalid(
                "topology",
                format!("{sw} switches exceed the limit of {MAX_SWITCHES}"),
            ));
        }
        let want = self.host_count().unwrap_or(hosts as u64);
        if want != hosts as u64 {
            return Err(invalid(
                "hosts",
                format!("{hosts} hosts, but the topology {self:?} holds {want}"),
            ));
        }
        Ok(())
    }

    /// The distinct switch kinds with their port counts and fastest link rate.
    pub(crate) fn switch_kinds(&self, hosts: u32, host_rate_bps: u64) -> Vec<SwitchKind> {
        let kind = |name, ports: u64, max_rate_bps| SwitchKind {
            name,
            ports,
            max_rate_bps,
        };
        match *self {
            Topology::Star => vec![kind("switch", hosts as u64, host_rate_bps)],
            Topology::LeafSpine {
                leaves,
                spines,
                hosts_per_leaf,
                uplink_rate_bps,
            } => {
                let up = uplink_rate_bps.unwrap_or(host_rate_bps);
                vec![
                    kind(
                        "leaf",
                        hosts_per_leaf as u64 + spines as u64,
                        up.max(host_rate_bps),
                    ),
                    kind("spine", leaves as u64, up),
                ]
            }
            Topology::FatTree { k, hosts_per_edge } => {
                let half = (k / 2) as u64;
                vec![
                    kind(
                        "edge",
                        hosts_per_edge.map_or(half, u64::from) + half,
                        host_rate_bps,
                    ),
                    kind("aggregation", k as u64, host_rate_bps),
                    kind("core", k as u64, host_rate_bps),
                ]
            }
        }
    }
}

/// The wiring of a validated topology: switches, their ports and what each port reaches.
#[derive(Clone, Debug)]
pub(crate) struct Layout {
    /// First global port of each switch; one extra entry holds the total port count.
    pub port_base: Vec<u32>,
    /// Switch of each global port.
    pub port_switch: Vec<u32>,
    /// Peer of each global port: a host, or another global port.
    pub peer: Vec<Peer>,
    /// Link rate of each global port, bits per second.
    pub port_rate: Vec<u64>,
    /// Global port each host's NIC is cabled to.
    pub host_port: Vec<u32>,
}

/// What a global port is cabled to (internal form of [`PortPeer`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Peer {
    /// A host NIC.
    Host(u32),
    /// A global port of another switch.
    Port(u32),
}

impl Layout {
    /// Wire a topology that passed [`Topology::validate`] for `hosts` hosts.
    pub(crate) fn build(topo: &Topology, hosts: u32, host_rate_bps: u64) -> Layout {
        // Ports per switch, then the cables.
        let mut ports_of: Vec<u32> = Vec::new();
        let mut host_links: Vec<(u32, u32)> = Vec::new(); // (switch, local port) per host
        let mut cables: Vec<(u32, u32, u32, u32, u64)> = Vec::new(); // (s1, p1, s2, p2, rate)
        match *topo {
            Topology::Star => {
                ports_of.push(hosts);
                host_links.extend((0..hosts).map(|h| (0, h)));
            }
            Topology::LeafSpine {
                leaves,
                spines,
                hosts_per_leaf: hpl,
                uplink_rate_bps,
            } => {
                let up = uplink_rate_bps.unwrap_or(host_rate_bps);
                ports_of.extend((0..leaves).map(|_| hpl + spines));
                ports_of.extend((0..spines).map(|_| leaves));
                for l in 0..leaves {
                    host_links.extend((0..hpl).map(|i| (l, i)));
                    for s in 0..spines {
                        cables.push((l, hpl + s, leaves + s, l, up));
                    }
                }
            }
            Topology::FatTree { k, hosts_per_edge } => {
                let half = k / 2;
                let hpe = hosts_per_edge.unwrap_or(half);
                let edge = |p: u32, e: u32| p * half + e;
                let agg = |p: u32, a: u32| k * half + p * half + a;
                let core = |c: u32| 2 * k * half + c;
                ports_of.extend((0..k * half).map(|_| hpe + half));
                ports_of.extend((0..k * half).map(|_| k));
                ports_of.extend((0..half * half).map(|_| k));
                for p in 0..k {
                    for e in 0..half {
                        host_links.extend((0..hpe).map(|i| (edge(p, e), i)));
                        for a in 0..half {
                            cables.push((edge(p, e), hpe + a, agg(p, a), e, host_rate_bps));
                        }
                    }
                    for a in 0..half {
                        for j in 0..half {
                            cables.push((
                                agg(p, a),
                                half + j,
                                core(a * half + j),
                                p,
                                host_rate_bps,
                            ));
                        }
                    }
                }
            }
        }
        let mut port_base = Vec::with_capacity(ports_of.len() + 1);
        let mut total = 0u32;
        for &n in &ports_of {
            port_base.push(total);
            total += n;
        }
        port_base.push(total);
        let mut port_switch = Vec::with_capacity(total as usize);
        for (s, &n) in ports_of.iter().enumerate() {
            port_switch.extend((0..n).map(|_| s as u32));
        }
        let mut peer = vec![Peer::Host(u32::MAX); total as usize];
        let mut port_rate = vec![host_rate_bps; total as usize];
        let mut host_port = Vec::with_capacity(host_links.len());
        for (h, &(s, p)) in host_links.iter().enumerate() {
            let g = port_base[s as usize] + p;
            peer[g as usize] = Peer::Host(h as u32);
            host_port.push(g);
        }
        for &(s1, p1, s2, p2, rate) in &cables {
            let (g1, g2) = (port_base[s1 as usize] + p1, port_base[s2 as usize] + p2);
            peer[g1 as usize] = Peer::Port(g2);
            peer[g2 as usize] = Peer::Port(g1);
            port_rate[g1 as usize] = rate;
            port_rate[g2 as usize] = rate;
        }
        Layout {
            port_base,
            port_switch,
            peer,
            port_rate,
            host_port,
        }
    }

    /// Number of switches.
    pub(crate) fn switches(&self) -> usize {
        self.port_base.len() - 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fat_tree_counts_follow_al_fares() {
        // k = 4: k³/4 = 16 hosts, k² = 16 pod switches + (k/2)² = 4 cores = 20 switches.
        let t = Topology::FatTree {
            k: 4,
            hosts_per_edge: None,
        };
        assert_eq!(t.host_count(), Some(16));
        assert_eq!(t.switch_count(), 20);
        assert_eq!(t.oversubscription(100), 1.0);
        let l = Layout::build(&t, 16, 100);
        assert_eq!(l.switches(), 20);
        // Every switch has k = 4 ports: 80 ports, 16 to hosts, 64 ends of 32 cables
        // (8 edge·2 uplinks + 8 agg·2 uplinks).
        assert_eq!(*l.port_base.last().unwrap(), 80);
        let to_hosts = l.peer.iter().filter(|p| matches!(p, Peer::Host(_))).count();
        assert_eq!(to_hosts, 16);
        // Cables are symmetric.
        for (g, p) in l.peer.iter().enumerate() {
            if let Peer::Port(o) = *p {
                assert_eq!(l.peer[o as usize], Peer::Port(g as u32));
                assert_ne!(l.port_switch[o as usize], l.port_switch[g]);
            }
        }
        // Host 5 = pod 1, edge 0 (switch 2), local port 1 → global 2·4 + 1 = 9.
        assert_eq!(l.host_port[5], 9);
        // Each core (switches 16..20) reaches all k = 4 pods, one aggregation switch each.
        for c in 16..20u32 {
            let pods: Vec<u32> = (l.port_base[c as usize]..l.port_base[c as usize + 1])
                .map(|g| match l.peer[g as usize] {
                    Peer::Port(o) => (l.port_switch[o as usize] - 8) / 2,
                    Peer::Host(_) => u32::MAX,
                })
                .collect();
            assert_eq!(pods, vec![0, 1, 2, 3], "core {c}");
        }
    }

    #[test]
    fn leaf_spine_oversubscription_and_host_mismatch() {
        // 4 hosts at 100 Gb/s per leaf over 2 spines at 100 Gb/s: 400/200 = 2.
        let t = Topology::LeafSpine {
            leaves: 3,
            spines: 2,
            hosts_per_leaf: 4,
            uplink_rate_bps: None,
        };
        assert_eq!(t.oversubscription(100_000_000_000), 2.0);
        // Same with 200 Gb/s uplinks: 400/400 = 1.
        let t2 = Topology::LeafSpine {
            leaves: 3,
            spines: 2,
            hosts_per_leaf: 4,
            uplink_rate_bps: Some(200_000_000_000),
        };
        assert_eq!(t2.oversubscription(100_000_000_000), 1.0);
        assert!(t.validate(12).is_ok());
        match t.validate(13) {
            Err(SimConfigError::Invalid { field, reason }) => {
                assert_eq!(field, "hosts");
                assert!(reason.contains("holds 12"), "{reason}");
            }
            r => panic!("{r:?}"),
        }
        let odd = Topology::FatTree {
            k: 5,
            hosts_per_edge: None,
        };
        assert!(matches!(
            odd.validate(0),
            Err(SimConfigError::Invalid {
                field: "topology.k",
                ..
            })
        ));
    }
}
