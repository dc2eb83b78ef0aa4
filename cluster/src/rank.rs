//! Running one rank (process) of a scenario whose `verbs:` block has `ranks:`, over xrdma on
//! an RDMA device or over kernel TCP on this machine's sockets ([`stacks`]).
//!
//! Each rank runs the scenario hosts its entry lists, as one host of its fabric each.
//! Connections between two hosts of the same rank are set up in process, as in a
//! single-process run; connections to a host of another rank go through the TCP bootstrap
//! ([`crate::bootstrap`]): the rank running the workload's receiver listens on its address,
//! every other rank with senders connects to it, both check each other's [`Hello`] (tool
//! version, scenario name and file hash, the stack and backend) and prove they hold the
//! job's secret ([`crate::bootstrap::Auth::Job`]; the receiver's rank refuses and logs any
//! connection that does not and goes on accepting, [`accept`]), and they make each
//! connection with records keyed by (sender host, receiver host): the two sides'
//! [`xrdma::driver::ConnInfo`]s on a device, an address and a cookie for TCP
//! ([`stacks::RankStack`]). When every connection is made the receiver's rank sends `start`
//! and every rank restarts its clock, so the workload's `start` means the same moment
//! everywhere (up to one TCP one-way delay).
//!
//! Every rank then runs the shared turn loop ([`xrdma_runner::drive::drive`]) over its hosts, with
//! the workload's stalls and deadline. A sender rank
//! whose senders are finished sends its [`SenderRecord`]s (completion times on its own clock,
//! measured from the intended send time) and keeps its QPs serviced until the receiver's rank
//! says `bye`; the receiver's rank stops when its own hosts are finished and every peer has
//! sent its records, then says `bye`; each sender rank answers with its device and that
//! device's counters over its run ([`devices`]), and the receiver's rank writes the one
//! report ([`xrdma_runner::run::collect`], the same fields as a single-process run). Its device
//! counters and the device-derived network counters are the sum over the run's distinct
//! devices ([`devices::merge`]), each rank's own beside its place.

use crate::bootstrap::{content_hash, Frame, Hello};
use anyhow::{bail, Context, Result};
use xrdma_runner::request::Backend;
use xrdma_runner::workload::SenderRecord;
use xrdma_scenario::{Scenario, VerbsSection};

pub mod accept;
pub mod devices;
mod run;
pub mod stacks;
pub use run::{run_rank, run_rank_bound, RankOutcome};

/// What one rank of a scenario does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RankPlan {
    /// This rank.
    pub rank: u32,
    /// The scenario hosts it runs, in the order the `ranks:` entry lists them (fabric host
    /// `i` is `hosts[i]`).
    pub hosts: Vec<u32>,
    /// The workload's receiver host.
    pub receiver: u32,
    /// The rank that runs the receiver.
    pub receiver_rank: u32,
    /// On the receiver's rank: the other ranks that run senders, ascending, with their
    /// sender hosts. Elsewhere: empty.
    pub peers: Vec<(u32, Vec<u32>)>,
}

impl RankPlan {
    /// The plan of `rank` in `sc` under `section`'s `ranks:`.
    ///
    /// # Errors
    /// No `ranks:`, a rank out of range, or ranks that do not cover the workload (a scenario
    /// that passed [`xrdma_scenario::load`] always does).
    pub fn new(sc: &Scenario, section: &VerbsSection, rank: u32) -> Result<Self> {
        if section.ranks.is_empty() {
            bail!(
                "{}: --rank needs a `verbs.ranks` list (which hosts each process runs)",
                sc.source_path.display()
            );
        }
        let Some(me) = section.ranks.get(rank as usize) else {
            bail!(
                "--rank {rank}: {} has ranks 0..={}",
                sc.source_path.display(),
                section.ranks.len() - 1
            );
        };
        section
            .check_hosts(sc.workload.hosts())
            .map_err(|m| anyhow::anyhow!("{}: verbs.ranks: {m}", sc.source_path.display()))?;
        if sc.heartbeat.is_some() {
            bail!(
                "{}: heartbeat: a run across processes (`verbs.ranks`) has none yet; run it in \
                 one process (the simulator, or a real backend without --rank)",
                sc.source_path.display()
            );
        }
        let receiver = sc.workload.receiver();
        let Some(receiver_rank) = section.rank_of(receiver) else {
            bail!("the receiver host {receiver} is in no rank");
        };
        let mut peers = Vec::new();
        if rank == receiver_rank {
            for (r, spec) in section.ranks.iter().enumerate() {
                let senders: Vec<u32> = spec
                    .hosts
                    .iter()
                    .copied()
                    .filter(|&h| h != receiver)
                    .collect();
                if r as u32 != rank && !senders.is_empty() {
                    peers.push((r as u32, senders));
                }
            }
        }
        Ok(RankPlan {
            rank,
            hosts: me.hosts.clone(),
            receiver,
            receiver_rank,
            peers,
        })
    }

    /// Whether this rank runs the receiver.
    pub fn is_receiver_rank(&self) -> bool {
        self.rank == self.receiver_rank
    }

    /// This rank's fabric index of scenario host `h`.
    pub fn local_index(&self, h: u32) -> Option<usize> {
        self.hosts.iter().position(|&x| x == h)
    }
}

/// The [`Hello`] rank `rank` of `sc` sends: the scenario's name, the XXH3-64 of its file and
/// what it runs on `backend` ([`stacks::transport`]).
///
/// # Errors
/// The scenario file cannot be read again.
pub fn hello(sc: &Scenario, rank: u32, backend: Backend) -> Result<Hello> {
    let bytes = std::fs::read(&sc.source_path)
        .with_context(|| format!("reading {} to fingerprint it", sc.source_path.display()))?;
    Ok(
        Hello::new(&sc.name, &content_hash(&bytes), rank)
            .with_transport(stacks::transport(backend)),
    )
}

/// Decode the records a peer rank sent.
///
/// # Errors
/// A frame that is not records of senders the peer runs.
pub fn decode_records(
    frame: Frame,
    peer_rank: u32,
    peer_hosts: &[u32],
) -> Result<Vec<SenderRecord>> {
    let Frame::Records { records } = frame else {
        bail!("rank {peer_rank} sent no records");
    };
    let recs: Vec<SenderRecord> = serde_json::from_value(records)
        .with_context(|| format!("malformed records from rank {peer_rank}"))?;
    if let Some(r) = recs.iter().find(|r| !peer_hosts.contains(&r.host)) {
        bail!(
            "rank {peer_rank} sent records of host {}, which it does not run",
            r.host
        );
    }
    Ok(recs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn scenario(ranks: &str) -> Scenario {
        let text = format!(
            "name: t\nworkload:\n  incast: {{ senders: 3, receiver: 1, messages: [ {{ size: 4KiB }} ] }}\nverbs:\n  ranks:\n{ranks}"
        );
        xrdma_scenario::parse(&text, Path::new("t.yaml")).unwrap()
    }

    #[test]
    fn plans_name_local_hosts_and_the_receiver_rank_peers() {
        // Hosts 0..=3, receiver 1. Rank 0 runs host 1 (the receiver) and sender 3; rank 1
        // runs senders 2 and 0, listed in that order (its fabric hosts 0 and 1).
        let sc = scenario(
            "    - { address: \"127.0.0.1:1\", hosts: [1, 3] }\n    - { address: \"127.0.0.1:2\", hosts: [2, 0] }\n",
        );
        let v = sc.verbs.clone().unwrap();
        let p0 = RankPlan::new(&sc, &v, 0).unwrap();
        assert!(p0.is_receiver_rank());
        assert_eq!(p0.hosts, vec![1, 3]);
        assert_eq!(p0.peers, vec![(1, vec![2, 0])]);
        assert_eq!(p0.local_index(3), Some(1));
        let p1 = RankPlan::new(&sc, &v, 1).unwrap();
        assert!(!p1.is_receiver_rank());
        assert_eq!(p1.receiver_rank, 0);
        assert!(p1.peers.is_empty());
        assert_eq!(p1.local_index(0), Some(1));
        assert_eq!(p1.local_index(1), None);
        let e = RankPlan::new(&sc, &v, 2).unwrap_err().to_string();
        assert!(e.contains("--rank 2: t.yaml has ranks 0..=1"), "{e}");
    }

    #[test]
    fn a_heartbeat_is_refused_across_ranks() {
        let mut sc = scenario(
            "    - { address: \"127.0.0.1:1\", hosts: [1, 3] }\n    - { address: \"127.0.0.1:2\", hosts: [2, 0] }\n",
        );
        sc.heartbeat = Some(xrdma_scenario::Heartbeat {
            from: 0,
            to: 1,
            every: xrdma::Span::from_us(10),
            size: 64,
        });
        let v = sc.verbs.clone().unwrap();
        let e = RankPlan::new(&sc, &v, 0).unwrap_err().to_string();
        assert!(e.contains("heartbeat") && e.contains("verbs.ranks"), "{e}");
    }

    #[test]
    fn a_scenario_without_ranks_has_no_rank_plan() {
        let text = "name: t\nworkload:\n  incast: { senders: 1, receiver: 0, messages: [ { size: 1 } ] }\n";
        let sc = xrdma_scenario::parse(text, Path::new("t.yaml")).unwrap();
        let e = RankPlan::new(&sc, &VerbsSection::default(), 0)
            .unwrap_err()
            .to_string();
        assert!(e.contains("needs a `verbs.ranks` list"), "{e}");
    }

    #[test]
    fn records_of_hosts_a_peer_does_not_run_are_refused() {
        let rec = SenderRecord {
            host: 5,
            messages: vec![],
            errors: vec![],
            window: None,
        };
        let f = Frame::Records {
            records: serde_json::to_value(vec![rec.clone()]).unwrap(),
        };
        assert_eq!(decode_records(f.clone(), 1, &[5]).unwrap(), vec![rec]);
        let e = decode_records(f, 1, &[2, 3]).unwrap_err().to_string();
        assert!(e.contains("host 5, which it does not run"), "{e}");
        assert!(decode_records(Frame::Bye, 1, &[5]).is_err());
    }

    #[test]
    fn hello_fingerprints_the_file() {
        let dir = std::env::temp_dir().join(format!("xrdma-rank-hello-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("s.yaml");
        let text = "name: s\nworkload:\n  incast: { senders: 1, receiver: 0, messages: [ { size: 1 } ] }\n";
        std::fs::write(&path, text).unwrap();
        let sc = xrdma_scenario::load(&path).unwrap();
        let h = hello(&sc, 3, Backend::Sockets).unwrap();
        assert_eq!(h.rank, 3);
        assert_eq!(
            h.transport.as_deref(),
            Some("kernel TCP over the sockets backend")
        );
        assert_eq!(h.scenario, "s");
        assert_eq!(h.scenario_hash, content_hash(text.as_bytes()));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
