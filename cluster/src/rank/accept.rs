//! The receiver's rank admitting its peer ranks: accept each on the bootstrap listener, check
//! its hello and its proof of the job's secret, take its half of every sender-receiver pair
//! and answer with this side's. A connection that fails the handshake (a stranger with the
//! right scenario but not the secret, another scenario or version, silence) is refused
//! before it gets anything, logged (`bootstrap: rank 0 refused ADDR (claiming rank R):
//! REASON`), and the rank goes on accepting until its deadline, so the real ranks still join.

use super::RankPlan;
use crate::bootstrap::{
    Auth, BootstrapError, ConnRecord, Frame, Hello, Listener, Peer, HANDSHAKE_LIMIT,
};
use anyhow::{bail, Result};
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use xrdma_observe::environment::PeerSeen;

/// A peer rank the receiver's rank admitted.
#[derive(Debug)]
pub struct Admitted {
    /// Its rank.
    pub rank: u32,
    /// Its bootstrap connection.
    pub peer: Peer,
    /// The sender hosts it runs.
    pub senders: Vec<u32>,
}

/// What the receiver's rank's admission came to.
#[derive(Debug)]
pub struct Admission {
    /// The admitted peer ranks, in the order they came.
    pub peers: Vec<Admitted>,
    /// Where each admitted rank was seen, in the same order.
    pub seen: Vec<PeerSeen>,
    /// The refused connections, `ADDR (claiming rank R): REASON`, in order (each also logged).
    pub refused: Vec<String>,
}

/// Every peer rank of `plan` (the receiver's rank's) connecting to `listener` by `deadline`
/// (reads and writes bounded by `io`): each says hello as `ours` does, proves what `auth`
/// asks within [`HANDSHAKE_LIMIT`], and offers one connection record per sender host it
/// runs; `connect` answers each record (given the peer's bootstrap connection), connecting
/// this side's half of the pair, and returns this side's record, sent back as the answer. A connection that fails the handshake is refused
/// and logged, and the accepting goes on. Returns the admitted peers in the order they came,
/// where each was seen, and the refused.
///
/// # Errors
/// A peer rank missing at the deadline (naming the refused), a proven rank that runs no
/// sender or connects twice, records of hosts it does not run, or `connect`'s error.
pub fn admit_peers<F>(
    listener: &Listener,
    ours: &Hello,
    auth: Auth<'_>,
    plan: &RankPlan,
    deadline: Instant,
    io: Duration,
    mut connect: F,
) -> Result<Admission>
where
    F: FnMut(&ConnRecord, &Peer) -> Result<ConnRecord>,
{
    let receiver = plan.receiver;
    let mut peers: Vec<Admitted> = Vec::new();
    let mut seen = Vec::new();
    let mut refused: Vec<String> = Vec::new();
    while peers.len() < plan.peers.len() {
        let mut p = match listener.accept(deadline, io) {
            Ok(p) => p,
            Err(BootstrapError::AcceptTimeout { addr, waited }) => {
                let missing: Vec<u32> = plan
                    .peers
                    .iter()
                    .map(|(r, _)| *r)
                    .filter(|r| !peers.iter().any(|a| a.rank == *r))
                    .collect();
                let note = if refused.is_empty() {
                    String::new()
                } else {
                    format!("; refused {}", refused.join("; "))
                };
                bail!(
                    "bootstrap: rank {} waited {waited:.1?} on {addr}, and rank(s) {missing:?} \
                     never connected{note}",
                    plan.rank
                );
            }
            Err(e) => return Err(e.into()),
        };
        let by = (Instant::now() + HANDSHAKE_LIMIT).min(deadline);
        let theirs = match p.handshake_until(ours, auth, by) {
            Ok(h) => h,
            Err(e @ (BootstrapError::Secret(_) | BootstrapError::Encode { .. })) => {
                return Err(e.into())
            }
            Err(e) => {
                let r = refusal(p.addr(), e);
                eprintln!("bootstrap: rank {} refused {r}", plan.rank);
                refused.push(r);
                continue;
            }
        };
        seen.push(PeerSeen {
            rank: theirs.rank,
            host_name: theirs.host.clone(),
            from: p.addr(),
        });
        let Some((r, senders)) = plan.peers.iter().find(|(r, _)| *r == theirs.rank) else {
            bail!(
                "{} connected as rank {}, which runs no sender of this scenario",
                p.addr(),
                theirs.rank
            );
        };
        if peers.iter().any(|a| a.rank == *r) {
            bail!("rank {r} connected twice (second from {})", p.addr());
        }
        let Frame::Conns { conns } = p.expect("conns")? else {
            bail!("rank {r} sent no connection records");
        };
        let mut reply = Vec::with_capacity(conns.len());
        let mut covered = Vec::new();
        for rec in &conns {
            if rec.receiver != receiver || !senders.contains(&rec.sender) {
                bail!(
                    "rank {r} offered a connection {} -> {}; it runs senders {senders:?} and \
                     the receiver is host {receiver}",
                    rec.sender,
                    rec.receiver
                );
            }
            if covered.contains(&rec.sender) {
                bail!("rank {r} offered host {} twice", rec.sender);
            }
            covered.push(rec.sender);
            reply.push(connect(rec, &p)?);
        }
        if let Some(h) = senders.iter().find(|h| !covered.contains(h)) {
            bail!("rank {r} sent no connection for its sender host {h}");
        }
        p.send(&Frame::Conns { conns: reply })?;
        peers.push(Admitted {
            rank: *r,
            peer: p,
            senders: senders.clone(),
        });
    }
    Ok(Admission {
        peers,
        seen,
        refused,
    })
}

/// `ADDR (claiming rank R): REASON` for a connection refused with `e`.
fn refusal(peer: SocketAddr, e: BootstrapError) -> String {
    let (rank, reason) = match e {
        BootstrapError::Refused { rank, reason, .. } => (rank, reason),
        BootstrapError::Timeout { what, limit, .. } => {
            (None, format!("timed out after {limit:.1?} {what}"))
        }
        e => {
            let m = e.to_string();
            (
                None,
                m.strip_prefix("bootstrap: ").unwrap_or(&m).to_string(),
            )
        }
    };
    let claiming = rank.map_or(String::new(), |r| format!(" (claiming rank {r})"));
    format!("{peer}{claiming}: {reason}")
}

#[cfg(test)]
#[path = "accept_tests.rs"]
mod tests;
