//! Tests of the receiver's rank admitting peers over loopback, with stand-in connection infos
//! (no device): a stranger is refused and the run goes on.

use super::*;
use crate::bootstrap::JobSecret;
use std::thread;

const T: Duration = Duration::from_secs(10);

fn hello(rank: u32) -> Hello {
    Hello::new("incast-8", "0123", rank)
}

/// Rank 0 runs the receiver (host 0), rank 1 the sender host 1.
fn plan() -> RankPlan {
    RankPlan {
        rank: 0,
        hosts: vec![0],
        receiver: 0,
        receiver_rank: 0,
        peers: vec![(1, vec![1])],
    }
}

/// What the receiver's rank hands out for a pair: a stand-in for its QP number and the
/// remote key of its registered memory.
fn secret_info() -> serde_json::Value {
    serde_json::json!({ "qpn": 17, "rkey": 4242 })
}

/// One secret for every test of this file (the job's); strangers make their own.
fn secret() -> JobSecret {
    static S: std::sync::OnceLock<JobSecret> = std::sync::OnceLock::new();
    S.get_or_init(|| JobSecret::generate().unwrap()).clone()
}

/// The receiver's rank admitting `plan()`'s peers on `listener`, with the job's secret.
fn receiver(listener: Listener) -> thread::JoinHandle<Result<Admission>> {
    thread::spawn(move || {
        admit_peers(
            &listener,
            &hello(0),
            Auth::Job(&secret()),
            &plan(),
            Instant::now() + T,
            T,
            |rec, _| Ok(ConnRecord::new(rec.sender, rec.receiver, &secret_info())?),
        )
    })
}

/// Say hello as rank 1 on `p`, offer host 1's half and take the answer.
fn offer(p: &mut Peer) -> Result<Vec<ConnRecord>, BootstrapError> {
    let mine = ConnRecord::new(1, 0, &serde_json::json!({ "qpn": 99 }))?;
    p.send(&Frame::Conns { conns: vec![mine] })?;
    match p.expect("conns")? {
        Frame::Conns { conns } => Ok(conns),
        _ => unreachable!("expect returns the kind asked for"),
    }
}

/// A connection that knows the scenario and its hash, claims rank 1 and proves what `auth`
/// says; returns its address and the infos it got for its offer.
fn claim_rank_1(
    addr: SocketAddr,
    auth: Auth<'_>,
) -> (SocketAddr, Result<Vec<ConnRecord>, BootstrapError>) {
    let mut s = Peer::connect(addr, Instant::now() + T, T).unwrap();
    let me = s.local_addr().unwrap();
    let got = s.handshake(&hello(1), auth).and_then(|_| offer(&mut s));
    (me, got)
}

#[test]
fn a_stranger_with_the_scenario_but_no_secret_gets_no_conn_info_and_the_run_goes_on() {
    let listener = Listener::bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let addr = listener.local_addr();
    let zero = receiver(listener);
    // Strangers that know the scenario's name and hash, claiming rank 1: without a secret,
    // then with another job's.
    let (open, got) = claim_rank_1(addr, Auth::Open);
    assert!(got.is_err(), "the stranger got connection infos: {got:?}");
    let other = JobSecret::generate().unwrap();
    let (wrong, got) = claim_rank_1(addr, Auth::Job(&other));
    assert!(
        matches!(got, Err(BootstrapError::Refused { .. })),
        "the stranger got connection infos: {got:?}"
    );
    // The real rank 1 still joins and gets its half.
    let (real, conns) = claim_rank_1(addr, Auth::Job(&secret()));
    let conns = conns.unwrap();
    assert_eq!(conns.len(), 1);
    assert_eq!(conns[0].info, secret_info());
    let a = zero.join().unwrap().unwrap();
    assert_eq!(a.peers.len(), 1);
    assert_eq!(a.peers[0].rank, 1);
    assert_eq!(a.seen.len(), 1);
    assert_eq!(a.seen[0].from, real);
    assert_eq!(a.refused.len(), 2, "{:?}", a.refused);
    assert!(
        a.refused[0].starts_with(&format!("{open}: expected a `challenge` frame")),
        "{:?}",
        a.refused
    );
    assert!(
        a.refused[1].starts_with(&format!("{wrong} (claiming rank 1): closed the connection")),
        "{:?}",
        a.refused
    );
}

#[test]
fn a_receiver_whose_ranks_never_prove_the_secret_names_whom_it_refused() {
    let listener = Listener::bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let addr = listener.local_addr();
    let zero = thread::spawn(move || {
        admit_peers(
            &listener,
            &hello(0),
            Auth::Job(&secret()),
            &plan(),
            Instant::now() + Duration::from_millis(1500),
            T,
            |rec, _| Ok(ConnRecord::new(rec.sender, rec.receiver, &secret_info())?),
        )
    });
    let (s, got) = claim_rank_1(addr, Auth::Open);
    assert!(got.is_err(), "{got:?}");
    let e = format!("{:#}", zero.join().unwrap().unwrap_err());
    assert!(e.contains("rank(s) [1] never connected"), "{e}");
    assert!(
        e.contains(&format!("refused {s}: expected a `challenge`")),
        "{e}"
    );
}
