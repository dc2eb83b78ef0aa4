//! Shortest-path routing with ECMP over a [`Layout`], computed once at construction.
//!
//! For every ordered pair of switches `(s, t)`, `s ≠ t`, the next-hop set is every port of `s`
//! whose neighbour switch is one hop closer to `t` (breadth-first distances over the switch
//! graph). In a leaf-spine or fat-tree this is exactly up-down routing: up through any
//! uplink, then down along the single downward path. Next-hop sets are stored once per
//! distinct set; the table maps `(s, t)` to a set. Forwarding a packet is two array lookups,
//! plus one hash when the set has several ports; no allocation.
//!
//! ECMP is per QP: the port is picked by a hash of (seed, source host, destination host,
//! source QPN, destination QPN, switch), so all packets of one QP direction follow one path
//! and arrive in order. The switch index salts the hash so that successive tiers choose
//! independently (otherwise, in a fat-tree, the edge's choice `h mod k/2` would fix the
//! aggregation switch's choice too and only `k/2` of the `(k/2)²` cores would carry traffic).

use crate::packet::Packet;
use crate::topology::{Layout, Peer};
use std::collections::{BTreeMap, VecDeque};

/// SplitMix64 finalizer (Steele, Lea & Flood, OOPSLA 2014).
#[inline]
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The ECMP hash of one QP direction at switch `sw`.
#[inline]
pub(crate) fn ecmp_hash(seed: u64, src: u32, dst: u32, sqpn: u32, dqpn: u32, sw: u32) -> u64 {
    let h = mix(seed ^ ((src as u64) << 32 | dst as u64));
    let h = mix(h ^ ((sqpn as u64) << 32 | dqpn as u64));
    mix(h ^ sw as u64)
}

/// No next-hop set (the pair is the same switch, or unreachable).
const NONE: u32 = u32::MAX;

/// Routing tables of a fabric.
#[derive(Debug)]
pub(crate) struct Routes {
    nsw: usize,
    /// Next-hop set id for `(s, t)` at index `s·nsw + t`.
    table: Vec<u32>,
    /// `(start, len)` of each next-hop set in `ports`.
    sets: Vec<(u32, u32)>,
    /// Global egress ports of all sets, back to back.
    ports: Vec<u32>,
    /// Switch of each host.
    host_switch: Vec<u32>,
    /// Global port of each host.
    host_port: Vec<u32>,
    seed: u64,
}

impl Routes {
    /// Compute next-hop sets for every switch pair of `l`.
    pub(crate) fn build(l: &Layout, seed: u64) -> Routes {
        let nsw = l.switches();
        let host_switch: Vec<u32> = l
            .host_port
            .iter()
            .map(|&g| l.port_switch[g as usize])
            .collect();
        let mut table = vec![NONE; nsw * nsw];
        let mut sets = Vec::new();
        let mut ports = Vec::new();
        let mut ids: BTreeMap<Vec<u32>, u32> = BTreeMap::new();
        let mut dist = vec![u32::MAX; nsw];
        let mut todo = VecDeque::new();
        let mut cand = Vec::new();
        // Neighbour switch of each global port (NONE for host ports).
        let nb: Vec<u32> = l
            .peer
            .iter()
            .map(|p| match *p {
                Peer::Port(o) => l.port_switch[o as usize],
                Peer::Host(_) => NONE,
            })
            .collect();
        for t in 0..nsw {
            dist.fill(u32::MAX);
            dist[t] = 0;
            todo.push_back(t);
            while let Some(s) = todo.pop_front() {
                for g in l.port_base[s]..l.port_base[s + 1] {
                    let n = nb[g as usize];
                    if n != NONE && dist[n as usize] == u32::MAX {
                        dist[n as usize] = dist[s] + 1;
                        todo.push_back(n as usize);
                    }
                }
            }
            for s in (0..nsw).filter(|&s| s != t && dist[s] != u32::MAX) {
                cand.clear();
                cand.extend((l.port_base[s]..l.port_base[s + 1]).filter(|&g| {
                    let n = nb[g as usize];
                    n != NONE && dist[n as usize] + 1 == dist[s]
                }));
                let id = match ids.get(cand.as_slice()) {
                    Some(&id) => id,
                    None => {
                        let id = sets.len() as u32;
                        sets.push((ports.len() as u32, cand.len() as u32));
                        ports.extend_from_slice(&cand);
                        ids.insert(cand.clone(), id);
                        id
                    }
                };
                table[s * nsw + t] = id;
            }
        }
        Routes {
            nsw,
            table,
            sets,
            ports,
            host_switch,
            host_port: l.host_port.clone(),
            seed,
        }
    }

    /// The egress global port at switch `sw` for packet `p`, `None` when its destination host
    /// does not exist or cannot be reached.
    #[inline]
    pub(crate) fn egress(&self, sw: u32, p: &Packet) -> Option<u32> {
        let dst = p.dst_host as usize;
        let t = *self.host_switch.get(dst)?;
        if t == sw {
            return Some(self.host_port[dst]);
        }
        let id = self.table[sw as usize * self.nsw + t as usize];
        let &(start, len) = self.sets.get(id as usize)?;
        let pick = match len {
            0 => return None,
            1 => 0,
            _ => {
                let h = ecmp_hash(self.seed, p.src_host, p.dst_host, p.src_qpn, p.dst_qpn, sw);
                // Multiply-shift range reduction of the high 32 bits (Lemire, 2019).
                (((h >> 32) * len as u64) >> 32) as u32
            }
        };
        Some(self.ports[(start + pick) as usize])
    }

    /// Number of ports in the next-hop set from switch `s` towards switch `t` (0 if none).
    #[cfg(test)]
    pub(crate) fn fanout(&self, s: u32, t: u32) -> u32 {
        let id = self.table[s as usize * self.nsw + t as usize];
        self.sets.get(id as usize).map_or(0, |&(_, n)| n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::PktKind;
    use crate::topology::Topology;

    #[test]
    fn fat_tree_next_hops_are_up_down() {
        // k = 4: edge switches 0..8, aggregation 8..16, cores 16..20.
        let t = Topology::FatTree {
            k: 4,
            hosts_per_edge: None,
        };
        let l = Layout::build(&t, 16, 100);
        let r = Routes::build(&l, 1);
        // Edge 0 (pod 0) to edge 1 (same pod): up to either of the k/2 = 2 aggregations.
        assert_eq!(r.fanout(0, 1), 2);
        // Edge 0 to edge 2 (pod 1): up to 2 aggregations; aggregation 8 (pod 0, a = 0) to
        // edge 2: up to its k/2 = 2 cores; core 16 to edge 2: one way down (pod 1's agg).
        assert_eq!(r.fanout(0, 2), 2);
        assert_eq!(r.fanout(8, 2), 2);
        assert_eq!(r.fanout(16, 2), 1);
        // Aggregation 10 (pod 1) to edge 2 (pod 1): straight down, one port.
        assert_eq!(r.fanout(10, 2), 1);
        // A packet for host 5 (edge 2, local port 1) at edge 2 leaves on global port 9.
        let mut p = Packet::control(PktKind::Data, 0, 5, 100);
        assert_eq!(r.egress(2, &p), Some(9));
        // Unknown host: no route.
        p.dst_host = 16;
        assert_eq!(r.egress(2, &p), None);
    }

    #[test]
    fn per_hop_salt_uses_every_core() {
        // Over many QPs from pod 0 to pod 1, count which core each path crosses: the edge
        // picks an aggregation, the aggregation a core. With the switch-salted hash every one
        // of the (k/2)² = 4 cores is used.
        let t = Topology::FatTree {
            k: 4,
            hosts_per_edge: None,
        };
        let l = Layout::build(&t, 16, 100);
        let r = Routes::build(&l, 7);
        let mut used = [0u32; 4];
        for qpn in 0..64 {
            let mut p = Packet::control(PktKind::Data, 0, 4, 100);
            p.src_qpn = 0x100 + qpn;
            p.dst_qpn = 0x100;
            let mut sw = l.port_switch[l.host_port[0] as usize];
            loop {
                let g = r.egress(sw, &p).unwrap();
                match l.peer[g as usize] {
                    Peer::Host(h) => {
                        assert_eq!(h, 4);
                        break;
                    }
                    Peer::Port(o) => {
                        sw = l.port_switch[o as usize];
                        if sw >= 16 {
                            used[(sw - 16) as usize] += 1;
                        }
                    }
                }
            }
        }
        assert!(used.iter().all(|&n| n > 0), "{used:?}");
        assert_eq!(used.iter().sum::<u32>(), 64);
    }
}
