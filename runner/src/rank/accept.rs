//! The receiver's rank admitting its peer ranks: accept each on the bootstrap listener, check
//! its hello, take its half of every sender-receiver pair and answer with this side's.

use super::RankPlan;
use crate::bootstrap::{ConnRecord, Frame, Hello, Listener, Peer};
use crate::environment::PeerSeen;
use anyhow::{bail, Result};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

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

/// Every peer rank of `plan` (the receiver's rank's) connecting to `listener` by `deadline`
/// (reads and writes bounded by `io`): each says hello as `ours` does and offers one
/// connection record per sender host it runs; `connect` connects this side's QP to the
/// peer's half in the record and returns this side's record, sent back as the answer.
/// Returns the admitted peers in the order they came and where each was seen.
///
/// # Errors
/// No peer by the deadline, a hello that does not match, a rank that runs no sender or
/// connects twice, records of hosts it does not run, or `connect`'s error.
pub fn admit_peers<F>(
    listener: &Listener,
    ours: &Hello,
    plan: &RankPlan,
    deadline: Instant,
    io: Duration,
    mut connect: F,
) -> Result<(Vec<Admitted>, Vec<PeerSeen>)>
where
    F: FnMut(&ConnRecord, SocketAddr) -> Result<ConnRecord>,
{
    let receiver = plan.receiver;
    let mut peers: Vec<Admitted> = Vec::new();
    let mut seen = Vec::new();
    for _ in 0..plan.peers.len() {
        let mut p = listener.accept(deadline, io)?;
        let theirs = p.handshake(ours)?;
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
            reply.push(connect(rec, p.addr())?);
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
    Ok((peers, seen))
}
