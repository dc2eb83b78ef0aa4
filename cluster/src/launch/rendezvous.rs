//! The rendezvous at rank 0: every rank learns every rank's bootstrap address.
//!
//! Rank 0 listens on the coordinator's address and port, the address its name resolves to
//! on rank 0's node (not every interface). Each other rank connects (retrying until the
//! timeout: rank 0 may start later), and both sides check each other's [`Hello`] as the
//! bootstrap does. The hello proves nothing (the scenario and its hash are no secret), so
//! each side then proves it holds the [`JobSecret`]:
//!
//! 1. the bootstrap's handshake with [`Auth::Job`] ([`crate::bootstrap::auth`]): a fresh
//!    random nonce each way ([`Frame::Challenge`]), then rank 0's [`Frame::Proof`], the
//!    HMAC-SHA256 (RFC 2104) of the transcript (both nonces and both hellos) under the label
//!    `acceptor`, which the rank checks before it says anything about itself, so an impostor
//!    at the coordinator's port learns no address and gets no rank into its table; then the
//!    rank's own proof under the label `connector`;
//! 2. the rank binds its bootstrap listener on the local address of that connection (the
//!    interface that reaches rank 0) and sends [`Frame::Join`] with the rank count it was
//!    launched with, the listener's address and the MAC of the transcript with both;
//! 3. when every rank has joined, rank 0 binds its own listener and sends each of them
//!    [`Frame::Table`], every address in rank order, with the MAC of the transcript and the
//!    table, which the rank checks; then the coordinator connections close.
//!
//! MACs are compared in constant time and the secret never goes on the wire. A connection
//! that fails before its join is proven (no or a wrong MAC, another version or scenario,
//! garbage, silence past [`HANDSHAKE_LIMIT`]) is refused: rank 0 logs its address and the
//! reason, drops it and goes on waiting for the real ranks. Frames are the bootstrap's
//! ([`crate::bootstrap`]).
//!
//! Rank 0's own address in the table is the coordinator's address (its bootstrap listener
//! binds it too); a lone rank 0 lists loopback.

use super::secret::{JobSecret, SecretError};
use super::{Coordinator, Launch};
#[cfg(doc)]
use crate::bootstrap::Auth;
use crate::bootstrap::HANDSHAKE_LIMIT;
use crate::bootstrap::{BootstrapError, Frame, Hello, Listener, Peer, Session};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, ToSocketAddrs};
use std::time::{Duration, Instant};

/// What a rank has after the rendezvous.
#[derive(Debug)]
pub struct Rendezvous {
    /// Every rank's bootstrap address, rank order; the same in every rank.
    pub table: Vec<SocketAddr>,
    /// This rank's bootstrap listener, bound at `table[rank]`'s port.
    pub listener: Listener,
    /// On rank 0: the connections it refused, in order (each also logged when refused).
    pub refused: Vec<Refusal>,
}

/// A connection rank 0 refused at the rendezvous.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// Where it came from.
    pub peer: SocketAddr,
    /// The rank its hello claimed, when it sent one.
    pub claimed_rank: Option<u32>,
    /// Why (`no valid MAC ...`, `timed out ...`, a version or scenario mismatch).
    pub reason: String,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.peer)?;
        if let Some(r) = self.claimed_rank {
            write!(f, " (claiming rank {r})")?;
        }
        write!(f, ": {}", self.reason)
    }
}

/// `; refused: A (reason), B (reason)` when any was refused, else nothing.
fn refused_note(refused: &[Refusal]) -> String {
    if refused.is_empty() {
        return String::new();
    }
    let all: Vec<String> = refused.iter().map(Refusal::to_string).collect();
    format!("; refused {}", all.join("; "))
}

/// A rendezvous failure, naming the coordinator and how long it waited.
#[derive(Debug, thiserror::Error)]
pub enum RendezvousError {
    /// The coordinator's name does not resolve.
    #[error(
        "rendezvous: cannot resolve rank 0's coordinator {coordinator} (from {from}): {reason}"
    )]
    Resolve {
        /// `HOST:PORT`.
        coordinator: String,
        /// Where it came from.
        from: &'static str,
        /// The resolver's error.
        reason: String,
    },
    /// Rank 0 never answered.
    #[error(
        "rendezvous: rank {rank} could not reach rank 0's coordinator {coordinator} ({addr}, \
         from {from}) within {waited:.1?} (last error: {last}); is rank 0 running there?"
    )]
    Unreachable {
        /// This rank.
        rank: u32,
        /// `HOST:PORT`.
        coordinator: String,
        /// Where it came from.
        from: &'static str,
        /// The address tried.
        addr: SocketAddr,
        /// How long the attempts went on.
        waited: Duration,
        /// The last attempt's error.
        last: String,
    },
    /// Some ranks never joined.
    #[error(
        "rendezvous: rank 0's coordinator {addr} waited {waited:.1?}, and rank(s) {missing:?} \
         of {size} never joined{}",
        refused_note(.refused)
    )]
    Missing {
        /// The coordinator's listening address.
        addr: SocketAddr,
        /// How long it waited.
        waited: Duration,
        /// The ranks that did not join.
        missing: Vec<u32>,
        /// The rank count.
        size: u32,
        /// The connections refused meanwhile (a rank with another secret shows here).
        refused: Vec<Refusal>,
    },
    /// Rank 0 cannot listen on the coordinator's address.
    #[error(
        "rendezvous: rank 0 cannot listen on its coordinator {coordinator} ({addr}, from \
         {from}): {source}; is this the node it names?"
    )]
    Bind {
        /// `HOST:PORT`.
        coordinator: String,
        /// Where it came from.
        from: &'static str,
        /// The address it resolved to here.
        addr: SocketAddr,
        /// The OS error.
        source: std::io::Error,
    },
    /// The peer at the coordinator's address did not prove the job secret: this rank sent it
    /// nothing about itself (or took no table from it).
    #[error(
        "rendezvous: rank {rank} refused {peer}, which answers at rank 0's coordinator but \
         {reason}: it may be an impostor, or rank 0 runs with another job secret"
    )]
    Impostor {
        /// This rank.
        rank: u32,
        /// The coordinator's address.
        peer: SocketAddr,
        /// What it failed to prove.
        reason: String,
    },
    /// No job secret, or no random nonce.
    #[error("rendezvous: {0}")]
    Secret(#[from] SecretError),
    /// A rank launched with another rank count.
    #[error(
        "rendezvous: rank {rank} ({peer}) was launched as one of {theirs} ranks, rank 0 as one \
         of {ours}"
    )]
    SizeMismatch {
        /// The joining rank.
        rank: u32,
        /// Its address.
        peer: SocketAddr,
        /// Its rank count.
        theirs: u32,
        /// Rank 0's.
        ours: u32,
    },
    /// A join from a rank that is not one of 1..size.
    #[error("rendezvous: {peer} joined as rank {rank}, which is not one of 1..{size}")]
    BadRank {
        /// Its address.
        peer: SocketAddr,
        /// The rank it gave.
        rank: u32,
        /// The rank count.
        size: u32,
    },
    /// Two joins with one rank.
    #[error("rendezvous: rank {rank} joined twice (from {first} and from {second})")]
    Duplicate {
        /// The rank.
        rank: u32,
        /// Where it first joined from.
        first: SocketAddr,
        /// Where it joined again from.
        second: SocketAddr,
    },
    /// A table that does not fit this rank.
    #[error("rendezvous: rank 0 ({peer}) sent a table that {reason}")]
    BadTable {
        /// Rank 0's address.
        peer: SocketAddr,
        /// What is wrong.
        reason: String,
    },
    /// A bootstrap failure on a coordinator connection (version or scenario mismatch, a
    /// closed peer, a listener that cannot bind, ...).
    #[error(transparent)]
    Bootstrap(#[from] BootstrapError),
}

/// The address to use among `addrs`: the first IPv4 one, else the first.
fn pick(addrs: &[SocketAddr]) -> Option<SocketAddr> {
    addrs
        .iter()
        .find(|a| a.is_ipv4())
        .or(addrs.first())
        .copied()
}

/// The address rank 0 binds among those its coordinator's name resolves to on its node: as
/// [`pick`] among the routable ones (a Debian `/etc/hosts` also maps the node's own name to
/// `127.0.1.1`, which no other node can reach), else as [`pick`].
fn pick_local(addrs: &[SocketAddr]) -> Option<SocketAddr> {
    let routable: Vec<SocketAddr> = addrs
        .iter()
        .copied()
        .filter(|a| !a.ip().is_loopback())
        .collect();
    pick(&routable).or_else(|| pick(addrs))
}

fn unspecified(like: IpAddr) -> IpAddr {
    match like {
        IpAddr::V4(_) => Ipv4Addr::UNSPECIFIED.into(),
        IpAddr::V6(_) => Ipv6Addr::UNSPECIFIED.into(),
    }
}

/// The labels of the two MACs on rendezvous frames, one per frame, so neither can stand for
/// the other or for a handshake's proof.
const LABEL_JOIN: &str = "xrdma rendezvous 5: join";
const LABEL_TABLE: &str = "xrdma rendezvous 5: table";

/// What a join's MAC covers after the transcript: the rank count and the address.
fn join_fields(size: u32, address: SocketAddr) -> [Vec<u8>; 2] {
    [
        size.to_be_bytes().to_vec(),
        address.to_string().into_bytes(),
    ]
}

/// What a table's MAC covers after the transcript: every address in rank order.
fn table_fields(ranks: &[SocketAddr]) -> Vec<Vec<u8>> {
    ranks.iter().map(|a| a.to_string().into_bytes()).collect()
}

/// `fields` as the slices a MAC takes.
fn slices(fields: &[Vec<u8>]) -> Vec<&[u8]> {
    fields.iter().map(Vec::as_slice).collect()
}

/// The rendezvous of `launch` at `coordinator`: rank 0 binds the coordinator's address and
/// serves ([`serve`]), the others join ([`join`]); each side proves it holds `secret`; every
/// wait is bounded by `timeout`.
///
/// # Errors
/// See [`RendezvousError`].
pub fn rendezvous(
    launch: &Launch,
    coordinator: &Coordinator,
    hello: &Hello,
    secret: &JobSecret,
    timeout: Duration,
) -> Result<Rendezvous, RendezvousError> {
    let resolved: Vec<SocketAddr> = (coordinator.host.as_str(), coordinator.port)
        .to_socket_addrs()
        .map(Iterator::collect)
        .unwrap_or_else(|_| Vec::new());
    let port = launch.bootstrap_port();
    let chosen = if launch.rank == 0 {
        pick_local(&resolved)
    } else {
        pick(&resolved)
    };
    let Some(addr) = chosen else {
        return Err(RendezvousError::Resolve {
            coordinator: coordinator.to_string(),
            from: coordinator.from,
            reason: format!("{} has no address", coordinator.host),
        });
    };
    if launch.rank == 0 {
        let coord = Listener::bind(addr).map_err(|e| match e {
            BootstrapError::Listen { addr, source } => RendezvousError::Bind {
                coordinator: coordinator.to_string(),
                from: coordinator.from,
                addr,
                source,
            },
            e => e.into(),
        })?;
        let named_loopback = coordinator.host == "localhost"
            || coordinator
                .host
                .parse::<IpAddr>()
                .is_ok_and(|ip| ip.is_loopback());
        if addr.ip().is_loopback() && !named_loopback && launch.size > 1 {
            eprintln!(
                "rendezvous: warning: {} resolves to loopback ({}) on rank 0's node, so ranks \
                 on other nodes cannot reach it; give --coordinator this node's address",
                coordinator.host,
                addr.ip()
            );
        }
        return serve(coord, hello, secret, launch.size, port, timeout);
    }
    join(addr, coordinator, hello, secret, launch.size, port, timeout)
}

/// Rank 0's side over the bound coordinator listener `coord`: wait until ranks 1..size have
/// joined, each proving `secret` and checked against `hello` and `size`, refusing (and
/// logging) any other connection; bind this rank's bootstrap listener on the coordinator's
/// address and port `port` (0: any); send the table to all. Each connection has
/// [`HANDSHAKE_LIMIT`] to prove its join.
///
/// # Errors
/// [`RendezvousError::Missing`] when a rank has not joined within `timeout`; a proven join
/// with another rank count, an out-of-range or repeated rank.
pub fn serve(
    coord: Listener,
    hello: &Hello,
    secret: &JobSecret,
    size: u32,
    port: u16,
    timeout: Duration,
) -> Result<Rendezvous, RendezvousError> {
    serve_within(coord, hello, secret, size, port, timeout, HANDSHAKE_LIMIT)
}

/// A join rank 0 accepted: its handshake's transcript, rank, rank count and listener address.
struct Admitted {
    session: Session,
    rank: u32,
    size: u32,
    address: SocketAddr,
}

/// [`serve`] with `limit` for each connection's handshake.
pub(crate) fn serve_within(
    coord: Listener,
    hello: &Hello,
    secret: &JobSecret,
    size: u32,
    port: u16,
    timeout: Duration,
    limit: Duration,
) -> Result<Rendezvous, RendezvousError> {
    let began = Instant::now();
    let deadline = began + timeout;
    let mut joined: Vec<Option<(Peer, Admitted)>> = (0..size).map(|_| None).collect();
    let mut refused = Vec::new();
    let mut reached_at: Option<(u32, IpAddr)> = None;
    let mut count = 1;
    while count < size {
        let mut p = match coord.accept(deadline, timeout) {
            Ok(p) => p,
            Err(BootstrapError::AcceptTimeout { addr, waited }) => {
                let missing = (1..size)
                    .filter(|&r| joined[r as usize].is_none())
                    .collect();
                return Err(RendezvousError::Missing {
                    addr,
                    waited,
                    missing,
                    size,
                    refused,
                });
            }
            Err(e) => return Err(e.into()),
        };
        let by = (Instant::now() + limit).min(deadline);
        let a = match admit(&mut p, hello, secret, by)? {
            Ok(a) => a,
            Err((claimed_rank, reason)) => {
                let r = Refusal {
                    peer: p.addr(),
                    claimed_rank,
                    reason,
                };
                eprintln!("rendezvous: rank 0 refused {r}");
                refused.push(r);
                continue;
            }
        };
        let rank = a.rank;
        if a.size != size {
            return Err(RendezvousError::SizeMismatch {
                rank,
                peer: p.addr(),
                theirs: a.size,
                ours: size,
            });
        }
        let slot = joined.get_mut(rank as usize).filter(|_| rank != 0).ok_or(
            RendezvousError::BadRank {
                peer: p.addr(),
                rank,
                size,
            },
        )?;
        if let Some((first, _)) = slot {
            return Err(RendezvousError::Duplicate {
                rank,
                first: first.addr(),
                second: p.addr(),
            });
        }
        let local = p.local_addr()?.ip();
        if reached_at.is_none_or(|seen| better_reach((rank, local), seen)) {
            reached_at = Some((rank, local));
        }
        *slot = Some((p, a));
        count += 1;
    }
    let named = coord.local_addr().ip();
    let ip = if named.is_unspecified() {
        reached_at.map_or(Ipv4Addr::LOCALHOST.into(), |(_, ip)| ip)
    } else {
        named
    };
    let bind_ip = if named.is_unspecified() {
        unspecified(ip)
    } else {
        ip
    };
    let listener = Listener::bind(SocketAddr::new(bind_ip, port))?;
    let mut table = vec![SocketAddr::new(ip, listener.local_addr().port())];
    table.extend(joined.iter().skip(1).flatten().map(|(_, a)| a.address));
    for (p, a) in joined.iter_mut().flatten() {
        let mac = a
            .session
            .mac(secret, LABEL_TABLE, &slices(&table_fields(&table)));
        p.send(&Frame::Table {
            ranks: table.clone(),
            mac,
        })?;
    }
    Ok(Rendezvous {
        table,
        listener,
        refused,
    })
}

/// Rank 0's verdict on one connection: admitted, or refused with the rank its hello claimed
/// (if any) and why.
type Verdict = Result<Admitted, (Option<u32>, String)>;

/// Rank 0's handshake on one accepted connection, everything due by `by`: hellos, nonces,
/// both proofs, the peer's join and its MAC. `Ok(Err((claimed rank, reason)))`: refuse it.
///
/// # Errors
/// Only this side's failure to draw a nonce or to encode a frame.
fn admit(
    p: &mut Peer,
    hello: &Hello,
    secret: &JobSecret,
    by: Instant,
) -> Result<Verdict, RendezvousError> {
    let why = |e: BootstrapError| match e {
        BootstrapError::Timeout { what, limit, .. } => {
            format!("timed out after {limit:.1?} {what}")
        }
        e => e.to_string(),
    };
    let (theirs, session) = match p.handshake_session(hello, secret, Some(by)) {
        Ok(x) => x,
        Err(BootstrapError::Refused { rank, reason, .. }) => return Ok(Err((rank, reason))),
        Err(e @ (BootstrapError::Secret(_) | BootstrapError::Encode { .. })) => {
            return Err(e.into())
        }
        Err(e) => return Ok(Err((None, why(e)))),
    };
    let refuse = |reason: String| Ok(Err((Some(theirs.rank), reason)));
    let (size, address, mac) = match p.expect_until("join", by) {
        Ok(Frame::Join { size, address, mac }) => (size, address, mac),
        Ok(_) => unreachable!("expect returns the kind asked for"),
        Err(e) => return refuse(why(e)),
    };
    if !session.verify(
        secret,
        LABEL_JOIN,
        &slices(&join_fields(size, address)),
        &mac,
    ) {
        return refuse("sent a join without a valid MAC".into());
    }
    Ok(Ok(Admitted {
        session,
        rank: theirs.rank,
        size,
        address,
    }))
}

/// Whether rank 0's address as reached by `candidate` (a joining rank and the local IP of its
/// connection) is a better address for the table than `seen`, when the coordinator listens on
/// every interface: a routable address beats a loopback one (a rank on rank 0's own node may
/// reach it through `127.0.1.1`, the address a Debian `/etc/hosts` gives the node's own name,
/// which no other node can use), then the lowest rank wins, so the choice does not depend on
/// the order of arrival.
fn better_reach(candidate: (u32, IpAddr), seen: (u32, IpAddr)) -> bool {
    match (candidate.1.is_loopback(), seen.1.is_loopback()) {
        (false, true) => true,
        (true, false) => false,
        _ => candidate.0 < seen.0,
    }
}

/// The side of rank `hello.rank` (≥ 1): connect to rank 0's coordinator at `addr` (named
/// `coordinator` in errors), retrying until `timeout`; check hellos; take rank 0's proof of
/// `secret` before saying anything of itself; bind the bootstrap listener on the connection's
/// local address and port `port` (0: any); join with its own proof; take the table and check
/// its MAC.
///
/// # Errors
/// [`RendezvousError::Unreachable`] when rank 0 does not answer within `timeout`;
/// [`RendezvousError::Impostor`] when the peer does not prove the secret;
/// [`RendezvousError::BadTable`]; a hello that does not match; a listener that cannot bind.
pub fn join(
    addr: SocketAddr,
    coordinator: &Coordinator,
    hello: &Hello,
    secret: &JobSecret,
    size: u32,
    port: u16,
    timeout: Duration,
) -> Result<Rendezvous, RendezvousError> {
    let mut p = match Peer::connect(addr, Instant::now() + timeout, timeout) {
        Ok(p) => p,
        Err(BootstrapError::ConnectTimeout { addr, waited, last }) => {
            return Err(RendezvousError::Unreachable {
                rank: hello.rank,
                coordinator: coordinator.to_string(),
                from: coordinator.from,
                addr,
                waited,
                last,
            })
        }
        Err(e) => return Err(e.into()),
    };
    let impostor = |p: &Peer, reason: &str| RendezvousError::Impostor {
        rank: hello.rank,
        peer: p.addr(),
        reason: reason.to_string(),
    };
    let session = match p.handshake_session(hello, secret, None) {
        Ok((_, s)) => s,
        Err(BootstrapError::Refused { reason, .. }) => {
            return Err(impostor(
                &p,
                &format!("{reason}; no address was sent to it"),
            ))
        }
        Err(e) => return Err(e.into()),
    };
    let local = p.local_addr()?.ip();
    let listener = Listener::bind(SocketAddr::new(local, port))?;
    let address = SocketAddr::new(local, listener.local_addr().port());
    let mac = session.mac(secret, LABEL_JOIN, &slices(&join_fields(size, address)));
    p.send(&Frame::Join { size, address, mac })?;
    let Frame::Table { ranks, mac } = p.expect("table")? else {
        unreachable!("expect returns the kind asked for")
    };
    if !session.verify(secret, LABEL_TABLE, &slices(&table_fields(&ranks)), &mac) {
        return Err(impostor(&p, "sent a table without a valid MAC"));
    }
    let bad = |reason: String| RendezvousError::BadTable {
        peer: p.addr(),
        reason,
    };
    if ranks.len() != size as usize {
        return Err(bad(format!("lists {} ranks, not {size}", ranks.len())));
    }
    match ranks.get(hello.rank as usize) {
        Some(a) if *a == address => {}
        Some(a) => {
            return Err(bad(format!(
                "gives rank {} the address {a}, not {address}",
                hello.rank
            )))
        }
        None => return Err(bad(format!("has no entry for rank {}", hello.rank))),
    }
    Ok(Rendezvous {
        table: ranks,
        listener,
        refused: Vec::new(),
    })
}

#[cfg(test)]
mod tests;
