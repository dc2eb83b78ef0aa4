//! Tests of the rendezvous over loopback (127.0.0.0/8 only): tables, failures named, and the
//! job secret: strangers, wrong secrets, silent connections and impostors are refused while
//! the real ranks meet.

use super::*;
use crate::bootstrap::auth::LABEL_CONNECTOR;
use crate::bootstrap::secret::{from_hex, to_hex, NONCE_BYTES};
use crate::bootstrap::Auth;
use std::net::TcpStream;
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

/// One secret for every test of this file (the job's); strangers make their own.
fn secret() -> JobSecret {
    static S: std::sync::OnceLock<JobSecret> = std::sync::OnceLock::new();
    S.get_or_init(|| JobSecret::generate().unwrap()).clone()
}

fn bind_loopback() -> Listener {
    Listener::bind("127.0.0.1:0".parse().unwrap()).unwrap()
}

fn join_as(addr: SocketAddr, rank: u32, size: u32) -> Result<Rendezvous, RendezvousError> {
    join(addr, &coordinator(), &hello(rank), &secret(), size, 0, T)
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

#[test]
fn rank_0_binds_a_routable_address_of_the_name_before_a_loopback_one() {
    // Pure address choice: nothing is bound or sent.
    let lo: SocketAddr = "127.0.1.1:18515".parse().unwrap();
    let eth: SocketAddr = "10.99.0.1:18515".parse().unwrap();
    let v6: SocketAddr = "[fd00::1]:18515".parse().unwrap();
    assert_eq!(pick_local(&[lo, eth]), Some(eth));
    assert_eq!(pick_local(&[lo, v6]), Some(v6));
    assert_eq!(pick_local(&[v6, eth]), Some(eth));
    assert_eq!(pick_local(&[lo]), Some(lo));
    assert_eq!(pick_local(&[]), None);
}

/// `size` ranks on loopback, rank 0 on a coordinator at an OS-assigned port.
fn run(size: u32) -> Vec<Rendezvous> {
    let coord = bind_loopback();
    let addr = coord.local_addr();
    let zero = thread::spawn(move || serve(coord, &hello(0), &secret(), size, 0, T).unwrap());
    let others: Vec<_> = (1..size)
        .map(|r| thread::spawn(move || join_as(addr, r, size).unwrap()))
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
        assert!(all[0].refused.is_empty());
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
    let addr = bind_loopback().local_addr();
    let c = Coordinator {
        host: "node01".into(),
        port: addr.port(),
        from: "SLURM_JOB_NODELIST",
    };
    let t = Duration::from_millis(400);
    let e = join(addr, &c, &hello(3), &secret(), 4, 0, t).unwrap_err();
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
    let coord = bind_loopback();
    let addr = coord.local_addr();
    let zero = thread::spawn(move || {
        serve(
            coord,
            &hello(0),
            &secret(),
            4,
            0,
            Duration::from_millis(1500),
        )
    });
    let two = join_as(addr, 2, 4);
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
        let coord = bind_loopback();
        let addr = coord.local_addr();
        let zero = thread::spawn(move || serve(coord, &hello(0), &secret(), size0, 0, T));
        for (rank, size) in joins {
            // Sequential: each join either fails at once or waits for a table that
            // never comes (rank 0 fails first); a short timeout bounds the wait.
            let t = Duration::from_millis(300);
            let _ = join(addr, &coordinator(), &hello(rank), &secret(), size, 0, t);
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

/// Rank 0 serving 2 ranks at a fresh loopback port, each handshake limited to `limit`.
fn rank_0(
    limit: Duration,
) -> (
    SocketAddr,
    thread::JoinHandle<Result<Rendezvous, RendezvousError>>,
) {
    let coord = bind_loopback();
    let addr = coord.local_addr();
    let zero = thread::spawn(move || serve_within(coord, &hello(0), &secret(), 2, 0, T, limit));
    (addr, zero)
}

/// A stranger that knows the scenario and its hash: it says hello as `rank`, trades nonces,
/// takes rank 0's proof and answers with a MAC made with `key` (none: a MAC of zeros).
/// Returns its own address and what it got after its proof (it must get nothing).
fn stranger(
    addr: SocketAddr,
    rank: u32,
    key: Option<&JobSecret>,
) -> (SocketAddr, Result<Frame, BootstrapError>) {
    let mut p = Peer::connect(addr, Instant::now() + T, T).unwrap();
    let me = p.local_addr().unwrap();
    let ours = hello(rank);
    let theirs = p.handshake(&ours, Auth::Open).unwrap();
    let Frame::Challenge { nonce } = p.expect("challenge").unwrap() else {
        unreachable!()
    };
    let n1 = [7u8; NONCE_BYTES];
    p.send(&Frame::Challenge { nonce: to_hex(&n1) }).unwrap();
    let _proof = p.expect("proof").unwrap();
    let mac = match key {
        Some(k) => Session::new(&from_hex(&nonce).unwrap(), &n1, &theirs, &ours)
            .unwrap()
            .mac(k, LABEL_CONNECTOR, &[]),
        None => to_hex(&[0u8; 32]),
    };
    p.send(&Frame::Proof { mac }).unwrap();
    (me, p.recv("waiting for rank 0's answer"))
}

#[test]
fn a_stranger_with_the_scenario_but_no_secret_is_refused_and_the_run_goes_on() {
    let (addr, zero) = rank_0(T);
    let other = JobSecret::generate().unwrap();
    // Without a secret, then with another job's: both claim rank 1, neither gets a table.
    let (s1, got1) = stranger(addr, 1, None);
    let (s2, got2) = stranger(addr, 1, Some(&other));
    assert!(got1.is_err() && got2.is_err(), "{got1:?} {got2:?}");
    let one = join_as(addr, 1, 2).unwrap();
    let zero = zero.join().unwrap().unwrap();
    assert_eq!(zero.table, one.table);
    assert!(
        !zero.table.iter().any(|a| a.port() == 9),
        "{:?}",
        zero.table
    );
    let refused: Vec<(SocketAddr, Option<u32>)> = zero
        .refused
        .iter()
        .map(|r| (r.peer, r.claimed_rank))
        .collect();
    assert_eq!(refused, vec![(s1, Some(1)), (s2, Some(1))]);
    for r in &zero.refused {
        let m = r.to_string();
        assert!(
            m.starts_with(&format!("{} (claiming rank 1): no valid MAC", r.peer)),
            "{m}"
        );
    }
}

#[test]
fn a_rank_with_a_wrong_secret_is_refused_by_rank_0_and_refuses_it() {
    let (addr, zero) = rank_0(T);
    let other = JobSecret::generate().unwrap();
    let e = join(addr, &coordinator(), &hello(1), &other, 2, 0, T).unwrap_err();
    assert!(matches!(e, RendezvousError::Impostor { .. }), "{e}");
    assert!(e.to_string().contains("another job secret"), "{e}");
    let one = join_as(addr, 1, 2).unwrap();
    let zero = zero.join().unwrap().unwrap();
    assert_eq!(zero.table, one.table);
    assert_eq!(zero.refused.len(), 1, "{:?}", zero.refused);
}

#[test]
fn rank_0_giving_up_lists_whom_it_refused() {
    let coord = bind_loopback();
    let addr = coord.local_addr();
    let t = Duration::from_millis(1200);
    let zero = thread::spawn(move || serve(coord, &hello(0), &secret(), 2, 0, t));
    let other = JobSecret::generate().unwrap();
    let e = join(addr, &coordinator(), &hello(1), &other, 2, 0, T).unwrap_err();
    assert!(matches!(e, RendezvousError::Impostor { .. }), "{e}");
    let m = zero.join().unwrap().unwrap_err().to_string();
    assert!(
        m.contains("rank(s) [1] of 2 never joined; refused 127.0.0.1:"),
        "{m}"
    );
    assert!(
        m.contains("(claiming rank 1): closed the connection on this side's proof"),
        "{m}"
    );
}

#[test]
fn a_silent_connection_times_out_without_stalling_the_rendezvous() {
    let limit = Duration::from_millis(300);
    let (addr, zero) = rank_0(limit);
    let began = Instant::now();
    // Connects, says nothing, stays open well past the limit.
    let silent = TcpStream::connect(addr).unwrap();
    let silent_addr = silent.local_addr().unwrap();
    // A slow one: a hello's first byte, then nothing more.
    let mut slow = TcpStream::connect(addr).unwrap();
    std::io::Write::write_all(&mut slow, &[0]).unwrap();
    let one = join_as(addr, 1, 2).unwrap();
    let zero = zero.join().unwrap().unwrap();
    assert!(
        began.elapsed() < Duration::from_secs(3),
        "{:?}",
        began.elapsed()
    );
    assert_eq!(zero.table, one.table);
    assert_eq!(zero.refused.len(), 2, "{:?}", zero.refused);
    assert_eq!(zero.refused[0].peer, silent_addr);
    for r in &zero.refused {
        assert!(r.reason.starts_with("timed out after"), "{r}");
    }
    drop((silent, slow));
}

#[test]
fn a_fake_coordinator_without_the_secret_gets_no_address_from_a_rank() {
    let fake = bind_loopback();
    let addr = fake.local_addr();
    let impostor = thread::spawn(move || {
        let mut p = fake.accept(Instant::now() + T, T).unwrap();
        p.handshake(&hello(0), Auth::Open).unwrap();
        p.send(&Frame::Challenge {
            nonce: to_hex(&[1u8; NONCE_BYTES]),
        })
        .unwrap();
        let _ = p.expect("challenge").unwrap();
        p.send(&Frame::Proof {
            mac: to_hex(&[0u8; 32]),
        })
        .unwrap();
        // The rank must close rather than join.
        p.recv("waiting for a join")
    });
    let e = join_as(addr, 1, 2).unwrap_err();
    let m = e.to_string();
    assert!(matches!(e, RendezvousError::Impostor { .. }), "{m}");
    assert!(m.contains(&format!("rank 1 refused {addr}")), "{m}");
    assert!(m.contains("no address was sent"), "{m}");
    let got = impostor.join().unwrap();
    assert!(
        matches!(got, Err(BootstrapError::PeerClosed { .. })),
        "{got:?}"
    );
}

#[test]
fn another_scenario_or_version_is_refused_and_the_run_goes_on() {
    let (addr, zero) = rank_0(T);
    let other = Hello::new("incast-8", "ffff", 1);
    let e = join(addr, &coordinator(), &other, &secret(), 2, 0, T).unwrap_err();
    assert!(e.to_string().contains("scenario mismatch"), "{e}");
    let mut old = hello(1);
    old.protocol = 3;
    let e = join(addr, &coordinator(), &old, &secret(), 2, 0, T).unwrap_err();
    assert!(e.to_string().contains("version mismatch"), "{e}");
    let one = join_as(addr, 1, 2).unwrap();
    let zero = zero.join().unwrap().unwrap();
    assert_eq!(zero.table, one.table);
    let reasons: Vec<&str> = zero.refused.iter().map(|r| r.reason.as_str()).collect();
    assert_eq!(reasons.len(), 2);
    assert!(reasons[0].contains("scenario mismatch"), "{reasons:?}");
    assert!(reasons[1].contains("version mismatch"), "{reasons:?}");
}

fn launch(rank: u32) -> Launch {
    Launch {
        rank,
        size: 2,
        local_rank: None,
        source: super::super::Source::Slurm,
        peers: super::super::Peers::Scenario,
    }
}

#[test]
fn rendezvous_resolves_the_coordinator_by_name() {
    let port = bind_loopback().local_addr().port();
    let c = Coordinator {
        host: "localhost".into(),
        port,
        from: "SLURM_JOB_NODELIST",
    };
    let c1 = c.clone();
    let zero = thread::spawn(move || rendezvous(&launch(0), &c1, &hello(0), &secret(), T).unwrap());
    let one = rendezvous(&launch(1), &c, &hello(1), &secret(), T).unwrap();
    let zero = zero.join().unwrap();
    assert_eq!(zero.table, one.table);
    assert!(one.table[1].ip().is_loopback());
}

#[test]
fn rank_0_listens_only_on_the_address_it_is_named() {
    let port = bind_loopback().local_addr().port();
    let c = Coordinator {
        host: "127.0.0.1".into(),
        port,
        from: "--coordinator",
    };
    let c1 = c.clone();
    let zero = thread::spawn(move || rendezvous(&launch(0), &c1, &hello(0), &secret(), T));
    let named: SocketAddr = (Ipv4Addr::LOCALHOST, port).into();
    // Wait until it listens, without a handshake: a connection it then refuses.
    drop(Peer::connect(named, Instant::now() + T, T).unwrap());
    // Another loopback address of this host reaches a socket bound to every interface.
    let elsewhere: SocketAddr = (Ipv4Addr::new(127, 0, 0, 2), port).into();
    let e = TcpStream::connect_timeout(&elsewhere, Duration::from_secs(2));
    assert!(e.is_err(), "rank 0 answers on {elsewhere}");
    let one = rendezvous(&launch(1), &c, &hello(1), &secret(), T).unwrap();
    let zero = zero.join().unwrap().unwrap();
    assert_eq!(zero.table, one.table);
    assert_eq!(zero.table[0].ip(), named.ip());
    assert_eq!(zero.listener.local_addr().ip(), named.ip());
}
