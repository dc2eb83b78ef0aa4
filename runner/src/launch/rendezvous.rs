//! The rendezvous at rank 0: every rank learns every rank's bootstrap address.
//!
//! Rank 0 listens on the coordinator port. Each other rank connects (retrying until the
//! timeout: rank 0 may start later), both sides check each other's [`Hello`] as the bootstrap
//! does, the rank binds its bootstrap listener on the local address of that connection (the
//! interface that reaches rank 0) and sends [`Frame::Join`] with the rank count it was
//! launched with and the listener's address. When every rank has joined, rank 0 binds its own
//! listener and sends each of them [`Frame::Table`], every address in rank order; then the
//! coordinator connections close. Frames are the bootstrap's ([`crate::bootstrap`]).
//!
//! Rank 0's own address in the table is the local address on which rank 1 reached it (its
//! listener binds the unspecified address, so any interface works); a lone rank 0 lists
//! loopback.

use super::{Coordinator, Launch};
use crate::bootstrap::{BootstrapError, Frame, Hello, Listener, Peer};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, ToSocketAddrs};
use std::time::{Duration, Instant};

/// What a rank has after the rendezvous.
#[derive(Debug)]
pub struct Rendezvous {
    /// Every rank's bootstrap address, rank order; the same in every rank.
    pub table: Vec<SocketAddr>,
    /// This rank's bootstrap listener, bound at `table[rank]`'s port.
    pub listener: Listener,
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
         of {size} never joined"
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
    },
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

fn unspecified(like: IpAddr) -> IpAddr {
    match like {
        IpAddr::V4(_) => Ipv4Addr::UNSPECIFIED.into(),
        IpAddr::V6(_) => Ipv6Addr::UNSPECIFIED.into(),
    }
}

/// The rendezvous of `launch` at `coordinator`: rank 0 serves ([`serve`]), the others join
/// ([`join`]); every wait is bounded by `timeout`.
///
/// # Errors
/// See [`RendezvousError`].
pub fn rendezvous(
    launch: &Launch,
    coordinator: &Coordinator,
    hello: &Hello,
    timeout: Duration,
) -> Result<Rendezvous, RendezvousError> {
    let resolved: Vec<SocketAddr> = (coordinator.host.as_str(), coordinator.port)
        .to_socket_addrs()
        .map(Iterator::collect)
        .unwrap_or_else(|_| Vec::new());
    let port = launch.bootstrap_port();
    if launch.rank == 0 {
        // Any interface: the name may resolve to another address here than on the others.
        let family = pick(&resolved).map_or(Ipv4Addr::UNSPECIFIED.into(), |a| a.ip());
        let coord = Listener::bind(SocketAddr::new(unspecified(family), coordinator.port))?;
        return serve(coord, hello, launch.size, port, timeout);
    }
    let Some(addr) = pick(&resolved) else {
        return Err(RendezvousError::Resolve {
            coordinator: coordinator.to_string(),
            from: coordinator.from,
            reason: format!("{} has no address", coordinator.host),
        });
    };
    join(addr, coordinator, hello, launch.size, port, timeout)
}

/// Rank 0's side over the bound coordinator listener `coord`: wait until ranks 1..size have
/// joined (each checked against `hello` and `size`), bind this rank's bootstrap listener on
/// port `port` (0: any), send the table to all.
///
/// # Errors
/// [`RendezvousError::Missing`] when a rank has not joined within `timeout`; a join with
/// another rank count, an out-of-range or repeated rank; a hello that does not match.
pub fn serve(
    coord: Listener,
    hello: &Hello,
    size: u32,
    port: u16,
    timeout: Duration,
) -> Result<Rendezvous, RendezvousError> {
    let began = Instant::now();
    let deadline = began + timeout;
    let mut joined: Vec<Option<(Peer, SocketAddr)>> = (0..size).map(|_| None).collect();
    let mut reached_at: Option<(u32, IpAddr)> = None;
    for _ in 1..size {
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
                });
            }
            Err(e) => return Err(e.into()),
        };
        let theirs = p.handshake(hello)?;
        let Frame::Join {
            size: their_size,
            address,
        } = p.expect("join")?
        else {
            unreachable!("expect returns the kind asked for")
        };
        let rank = theirs.rank;
        if their_size != size {
            return Err(RendezvousError::SizeMismatch {
                rank,
                peer: p.addr(),
                theirs: their_size,
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
        *slot = Some((p, address));
    }
    let ip = reached_at.map_or(Ipv4Addr::LOCALHOST.into(), |(_, ip)| ip);
    let listener = Listener::bind(SocketAddr::new(unspecified(ip), port))?;
    let mut table = vec![SocketAddr::new(ip, listener.local_addr().port())];
    table.extend(joined.iter().skip(1).flatten().map(|(_, a)| *a));
    for (p, _) in joined.iter_mut().flatten() {
        p.send(&Frame::Table {
            ranks: table.clone(),
        })?;
    }
    Ok(Rendezvous { table, listener })
}

/// Whether rank 0's address as reached by `candidate` (a joining rank and the local IP of its
/// connection) is a better address for the table than `seen`: a routable address beats a
/// loopback one (a rank on rank 0's own node may reach it through `127.0.1.1`, the address a
/// Debian `/etc/hosts` gives the node's own name, which no other node can use), then the
/// lowest rank wins, so the choice does not depend on the order of arrival.
fn better_reach(candidate: (u32, IpAddr), seen: (u32, IpAddr)) -> bool {
    match (candidate.1.is_loopback(), seen.1.is_loopback()) {
        (false, true) => true,
        (true, false) => false,
        _ => candidate.0 < seen.0,
    }
}

/// The side of rank `hello.rank` (≥ 1): connect to rank 0's coordinator at `addr` (named
/// `coordinator` in errors), retrying until `timeout`; check hellos; bind the bootstrap
/// listener on the connection's local address and port `port` (0: any); join; take the
/// table.
///
/// # Errors
/// [`RendezvousError::Unreachable`] when rank 0 does not answer within `timeout`;
/// [`RendezvousError::BadTable`]; a hello that does not match; a listener that cannot bind.
pub fn join(
    addr: SocketAddr,
    coordinator: &Coordinator,
    hello: &Hello,
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
    p.handshake(hello)?;
    let local = p.local_addr()?.ip();
    let listener = Listener::bind(SocketAddr::new(local, port))?;
    let address = SocketAddr::new(local, listener.local_addr().port());
    p.send(&Frame::Join { size, address })?;
    let Frame::Table { ranks } = p.expect("table")? else {
        unreachable!("expect returns the kind asked for")
    };
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
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::thread;

    const T: Duration = Duration::from_secs(10);

    fn coordinator() -> Coordinator {
        Coordinator {
            host: "127.0.0.1".into(),
            port: 1,
            from: "--coordinator",
        }
    }

    fn hello(rank: u32) -> Hello {
        Hello::new("incast-8", "0123", rank)
    }

    #[test]
    fn rank_0_is_tabled_at_a_routable_address_over_a_loopback_one() {
        let lo: IpAddr = Ipv4Addr::new(127, 0, 1, 1).into();
        let eth: IpAddr = Ipv4Addr::new(10, 99, 0, 1).into();
        // Rank 1 shares rank 0's node and reached it through loopback; rank 2 came over the
        // network: rank 2's view of rank 0 goes in the table, whichever arrived first.
        assert!(better_reach((2, eth), (1, lo)));
        assert!(!better_reach((1, lo), (2, eth)));
        // Between two of a kind, the lowest rank.
        assert!(better_reach((1, eth), (3, eth)));
        assert!(!better_reach((3, lo), (1, lo)));
    }

    /// `size` ranks on loopback, rank 0 on a coordinator at an OS-assigned port.
    fn run(size: u32) -> Vec<Rendezvous> {
        let coord = Listener::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let addr = coord.local_addr();
        let zero = thread::spawn(move || serve(coord, &hello(0), size, 0, T).unwrap());
        let others: Vec<_> = (1..size)
            .map(|r| {
                thread::spawn(move || join(addr, &coordinator(), &hello(r), size, 0, T).unwrap())
            })
            .collect();
        let mut all = vec![zero.join().unwrap()];
        all.extend(others.into_iter().map(|t| t.join().unwrap()));
        all
    }

    #[test]
    fn every_rank_gets_the_same_table_of_bound_listeners() {
        for size in [1, 2, 5] {
            let all = run(size);
            let table = all[0].table.clone();
            assert_eq!(table.len(), size as usize);
            for (r, rv) in all.iter().enumerate() {
                assert_eq!(rv.table, table, "rank {r}");
                assert_eq!(rv.listener.local_addr().port(), table[r].port(), "rank {r}");
                assert!(table[r].ip().is_loopback(), "{}", table[r]);
            }
            let mut ports: Vec<u16> = table.iter().map(SocketAddr::port).collect();
            ports.sort_unstable();
            ports.dedup();
            assert_eq!(ports.len(), size as usize, "{table:?}");
        }
    }

    #[test]
    fn a_rank_that_cannot_reach_rank_0_names_the_coordinator_and_the_wait() {
        // A port nothing listens on: bind one, then close it.
        let addr = Listener::bind("127.0.0.1:0".parse().unwrap())
            .unwrap()
            .local_addr();
        let c = Coordinator {
            host: "node01".into(),
            port: addr.port(),
            from: "SLURM_JOB_NODELIST",
        };
        let t = Duration::from_millis(400);
        let e = join(addr, &c, &hello(3), 4, 0, t).unwrap_err();
        let RendezvousError::Unreachable { waited, .. } = &e else {
            panic!("{e}")
        };
        assert!(*waited >= Duration::from_millis(250), "{waited:?}");
        let m = e.to_string();
        assert!(
            m.contains(&format!(
                "rank 3 could not reach rank 0's coordinator node01:{}",
                addr.port()
            )),
            "{m}"
        );
        assert!(
            m.contains("from SLURM_JOB_NODELIST") && m.contains("within"),
            "{m}"
        );
    }

    #[test]
    fn rank_0_names_the_ranks_that_never_joined() {
        let coord = Listener::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let addr = coord.local_addr();
        let zero =
            thread::spawn(move || serve(coord, &hello(0), 4, 0, Duration::from_millis(1500)));
        let two = join(addr, &coordinator(), &hello(2), 4, 0, T);
        let e = zero.join().unwrap().unwrap_err();
        assert!(
            matches!(&e, RendezvousError::Missing { missing, size: 4, .. } if *missing == vec![1, 3]),
            "{e}"
        );
        assert!(
            e.to_string().contains("rank(s) [1, 3] of 4 never joined"),
            "{e}"
        );
        // Rank 2 joined but got no table: rank 0 closed.
        assert!(two.is_err());
    }

    #[test]
    fn joins_with_another_count_a_bad_rank_or_twice_are_refused() {
        let case = |size0: u32, joins: Vec<(u32, u32)>| -> String {
            let coord = Listener::bind("127.0.0.1:0".parse().unwrap()).unwrap();
            let addr = coord.local_addr();
            let zero = thread::spawn(move || serve(coord, &hello(0), size0, 0, T));
            for (rank, size) in joins {
                // Sequential: each join either fails at once or waits for a table that
                // never comes (rank 0 fails first); a short timeout bounds the wait.
                let _ = join(
                    addr,
                    &coordinator(),
                    &hello(rank),
                    size,
                    0,
                    Duration::from_millis(300),
                );
            }
            zero.join().unwrap().unwrap_err().to_string()
        };
        let e = case(3, vec![(1, 4)]);
        assert!(
            e.contains("rank 1") && e.contains("one of 4 ranks, rank 0 as one of 3"),
            "{e}"
        );
        let e = case(3, vec![(5, 3)]);
        assert!(
            e.contains("joined as rank 5, which is not one of 1..3"),
            "{e}"
        );
        let e = case(3, vec![(0, 3)]);
        assert!(e.contains("joined as rank 0"), "{e}");
        let e = case(3, vec![(1, 3), (1, 3)]);
        assert!(e.contains("rank 1 joined twice"), "{e}");
    }

    #[test]
    fn another_scenario_is_refused_at_the_rendezvous() {
        let coord = Listener::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let addr = coord.local_addr();
        let zero = thread::spawn(move || serve(coord, &hello(0), 2, 0, T));
        let other = Hello::new("incast-8", "ffff", 1);
        let e = join(addr, &coordinator(), &other, 2, 0, T).unwrap_err();
        assert!(e.to_string().contains("scenario mismatch"), "{e}");
        assert!(zero.join().unwrap().is_err());
    }

    #[test]
    fn rendezvous_resolves_the_coordinator_by_name() {
        let port = Listener::bind("127.0.0.1:0".parse().unwrap())
            .unwrap()
            .local_addr()
            .port();
        let launch = |rank| Launch {
            rank,
            size: 2,
            local_rank: None,
            source: super::super::Source::Slurm,
            peers: super::super::Peers::Scenario,
        };
        let c = Coordinator {
            host: "localhost".into(),
            port,
            from: "SLURM_JOB_NODELIST",
        };
        let c1 = c.clone();
        let zero = thread::spawn(move || rendezvous(&launch(0), &c1, &hello(0), T).unwrap());
        let one = rendezvous(&launch(1), &c, &hello(1), T).unwrap();
        let zero = zero.join().unwrap();
        assert_eq!(zero.table, one.table);
        assert!(one.table[1].ip().is_loopback());
    }
}
