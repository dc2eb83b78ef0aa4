//! Packet captures of host links: every packet on the link between a chosen host and its
//! switch port, both directions, as a nanosecond pcap file of RoCEv2 frames that Wireshark
//! decodes (InfiniBand over UDP port 4791).
//!
//! A capture observes: it schedules no event and changes no packet, so a run with capture on
//! has the trace hash of the same run without it. When off ([`Simulation::enable_capture`]
//! never called) the packet path pays one branch on an `Option` per transmitted packet.
//!
//! What a file holds, per packet on the link (see docs/simulator.md, "Packet captures" for
//! the address mapping):
//! - the time the **first bit leaves the transmitter** (the NIC for host→switch, the switch
//!   port for switch→host; picoseconds truncated to nanoseconds, from the Unix epoch = the
//!   simulation's time 0);
//! - Ethernet II, IPv4, UDP to 4791, BTH and the extension headers (`map` and `frame`),
//!   the payload, the pad and the ICRC (`icrc`); no FCS (LINKTYPE_ETHERNET);
//! - PFC XOFF/XON as IEEE 802.1Qbb frames on the switch→host direction.
//!
//! A packet is captured as it leaves its transmitter, so one a fault drops or corrupts on the
//! wire is in the file as sent. The payload is the sender's bytes at that moment when the
//! simulation carries payload (`SimConfig::carry_payload`), zeros otherwise.
//!
//! # State
//! `Capture` (`Simulation::capture`, `None` when off): the bounds, the captured link of each
//! host and of each switch port (`u32::MAX`: not captured), and one [`LinkCapture`] per host,
//! whose `pcap` is the whole file so far.

mod frame;
mod icrc;
mod map;
mod pcap;

pub use map::{
    host_ipv4, host_mac, switch_port_mac, udp_source_port, CNP_DSCP, DATA_DSCP, PFC_PRIORITY,
    PFC_XOFF_QUANTA,
};
/// The capture's framing constants, for readers of its files (`xrdma wire-compare`).
pub mod format {
    pub use super::frame::{ETHERTYPE_IPV4, ROCEV2_PORT};
    pub use super::icrc::{BTH, ETH_HEADER, ICRC, IPV4_HEADER, UDP_HEADER};
    pub use super::pcap::{FILE_HEADER, LINKTYPE_ETHERNET, MAGIC_NS, RECORD_HEADER};
}

use crate::packet::PktKind;
use crate::{HostId, Simulation};
use serde::{Deserialize, Serialize};
use xrdma::Time;

/// The default [`CaptureConfig::max_packets`]: 100 000 packets a link, at most about 107 MB
/// of 1 KiB-MTU frames.
pub const DEFAULT_MAX_PACKETS: u64 = 100_000;

/// What to capture: the links of `hosts`, packets whose time is in `[from, until)`, at most
/// `max_packets` a link.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CaptureConfig {
    /// The hosts whose host↔switch link is captured (a host listed twice counts once).
    pub hosts: Vec<HostId>,
    /// Packets a link's file holds at most; later ones are counted as skipped.
    pub max_packets: u64,
    /// Packets leaving their transmitter before this instant are skipped.
    pub from: Time,
    /// Packets leaving at or after this instant are skipped; `None`: no end.
    pub until: Option<Time>,
}

impl CaptureConfig {
    /// Checks that every captured host is one of a workload's `hosts` hosts (`0..hosts`).
    ///
    /// # Errors
    /// A message naming the first host that does not exist, for the caller to place in the
    /// scenario (`sim.capture.hosts`).
    pub fn check_hosts(&self, hosts: u32) -> Result<(), String> {
        match self.hosts.iter().find(|&&h| h >= hosts) {
            Some(h) => Err(format!(
                "host {h} does not exist: the workload has hosts 0..={}",
                hosts.saturating_sub(1)
            )),
            None => Ok(()),
        }
    }
}

impl Default for CaptureConfig {
    fn default() -> Self {
        CaptureConfig {
            hosts: Vec::new(),
            max_packets: DEFAULT_MAX_PACKETS,
            from: Time::ZERO,
            until: None,
        }
    }
}

/// The capture of one host's link.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LinkCapture {
    /// The host.
    pub host: HostId,
    /// Packets in the file.
    pub packets: u64,
    /// Packets on the link left out (outside `[from, until)` or past `max_packets`).
    pub skipped: u64,
    /// The pcap file: header and records in time order (for equal times, in the order the
    /// packets finished transmission).
    pub pcap: Vec<u8>,
}

/// One captured link: the frames in the order they were recorded, and where each is.
#[derive(Debug)]
struct Link {
    host: HostId,
    skipped: u64,
    frames: Vec<u8>,
    /// `(first-bit time in ns, start in frames, length)` of each frame.
    index: Vec<(u64, usize, u32)>,
}

/// The capture's state (see the module doc).
#[derive(Debug)]
pub(crate) struct Capture {
    cfg: CaptureConfig,
    by_host: Vec<u32>,
    by_port: Vec<u32>,
    links: Vec<Link>,
}

const NONE: u32 = u32::MAX;

impl Simulation {
    /// Capture the links of `cfg.hosts` from now on (replaces an earlier capture). Hosts that
    /// do not exist are ignored.
    pub fn enable_capture(&mut self, cfg: CaptureConfig) {
        let mut by_host = vec![NONE; self.hosts.len()];
        let mut by_port = vec![NONE; self.fabric.port_count()];
        let mut links = Vec::new();
        for &h in &cfg.hosts {
            let (Some(slot), Some(g)) = (by_host.get_mut(h as usize), self.fabric.host_port(h))
            else {
                continue;
            };
            if *slot != NONE {
                continue;
            }
            *slot = links.len() as u32;
            by_port[g as usize] = links.len() as u32;
            links.push(Link {
                host: h,
                skipped: 0,
                frames: Vec::new(),
                index: Vec::new(),
            });
        }
        self.capture = Some(Box::new(Capture {
            cfg,
            by_host,
            by_port,
            links,
        }));
    }

    /// The captures so far as pcap files, one per captured host in the order of
    /// [`CaptureConfig::hosts`]; empty when capture is off. A frame is recorded when its
    /// transmission ends, so the records are sorted by their first-bit time here.
    pub fn captures(&self) -> Vec<LinkCapture> {
        let Some(c) = self.capture.as_deref() else {
            return Vec::new();
        };
        c.links
            .iter()
            .map(|l| {
                let mut order = l.index.clone();
                order.sort_by_key(|&(ns, _, _)| ns);
                let bytes = l.frames.len() + order.len() * pcap::RECORD_HEADER;
                let mut out = Vec::with_capacity(pcap::FILE_HEADER + bytes);
                out.extend_from_slice(&pcap::file_header());
                for (ns, start, len) in order {
                    out.extend_from_slice(&pcap::record_header(ns, len));
                    out.extend_from_slice(&l.frames[start..start + len as usize]);
                }
                LinkCapture {
                    host: l.host,
                    packets: l.index.len() as u64,
                    skipped: l.skipped,
                    pcap: out,
                }
            })
            .collect()
    }

    /// Host `h`'s NIC finished serializing packet `id`: record it if `h` is captured.
    #[cold]
    #[inline(never)]
    pub(crate) fn capture_host_tx(&mut self, h: u32, id: u32) {
        let Some(c) = self.capture.as_deref() else {
            return;
        };
        let Some(&slot) = c.by_host.get(h as usize).filter(|&&s| s != NONE) else {
            return;
        };
        let Some(g) = self.fabric.host_port(h) else {
            return;
        };
        let wire = self.pool.get(id).wire;
        let start = self.now.checked_sub(self.ser(wire)).unwrap_or(Time::ZERO);
        let (src, dst) = (map::host_mac(h), map::switch_port_mac(g));
        self.capture_record(slot, start, id, src, dst);
    }

    /// Global switch port `port` finished serializing packet `id`: record it if the port's
    /// host is captured.
    #[cold]
    #[inline(never)]
    pub(crate) fn capture_port_tx(&mut self, port: u32, id: u32) {
        let Some(c) = self.capture.as_deref() else {
            return;
        };
        let Some(&slot) = c.by_port.get(port as usize).filter(|&&s| s != NONE) else {
            return;
        };
        let h = c.links[slot as usize].host;
        let wire = self.pool.get(id).wire;
        let ser = self.fabric.port_ser(port, wire);
        let start = self.now.checked_sub(ser).unwrap_or(Time::ZERO);
        let (src, dst) = (map::switch_port_mac(port), map::host_mac(h));
        self.capture_record(slot, start, id, src, dst);
    }

    /// Append packet `id`, first bit at `at`, sent from `src` to `dst`, to link `slot`'s file
    /// if it is within the bounds.
    fn capture_record(&mut self, slot: u32, at: Time, id: u32, src: [u8; 6], dst: [u8; 6]) {
        let Simulation {
            capture,
            pool,
            hosts,
            cfg,
            ..
        } = self;
        let Some(c) = capture.as_deref_mut() else {
            return;
        };
        let link = &mut c.links[slot as usize];
        let in_window = at >= c.cfg.from && c.cfg.until.map_or(true, |u| at < u);
        if !in_window || link.index.len() as u64 >= c.cfg.max_packets {
            link.skipped += 1;
            return;
        }
        let p = pool.get(id);
        // TCP segments are not written as frames (the runner refuses a capture of TCP).
        if p.kind == PktKind::Tcp {
            link.skipped += 1;
            return;
        }
        let frame = &mut link.frames;
        let start = frame.len();
        let len = match map::transport(p, cfg.rc.min_rnr_timer, cfg.ack_every) {
            Some(t) => {
                let payload = match p.kind {
                    PktKind::Data | PktKind::ReadResp => hosts
                        .get(p.src_host as usize)
                        .and_then(|h| h.mem.read(p.src_addr, p.payload as usize).ok()),
                    _ => None,
                };
                let a = map::addressing(p, src, dst);
                let bytes = payload.as_deref().unwrap_or(&[]);
                frame::roce_frame(frame, &a, &t, bytes, p.payload as usize)
            }
            None => {
                let quanta = if p.kind == PktKind::Pause {
                    map::PFC_XOFF_QUANTA
                } else {
                    0
                };
                frame::pfc_frame(frame, src, map::PFC_PRIORITY, quanta)
            }
        };
        link.index.push((at.as_ps() / 1000, start, len as u32));
    }
}

#[cfg(test)]
mod tests {
    use super::CaptureConfig;

    #[test]
    fn check_hosts_names_the_first_host_the_workload_lacks() {
        let cfg = CaptureConfig {
            hosts: vec![0, 3, 9, 4],
            ..CaptureConfig::default()
        };
        assert_eq!(cfg.check_hosts(10), Ok(()));
        assert_eq!(
            cfg.check_hosts(4),
            Err("host 9 does not exist: the workload has hosts 0..=3".to_string())
        );
        assert!(CaptureConfig::default().check_hosts(0).is_ok());
    }
}
