//! Tests of the TCP connections between ranks: cookies and refusals.

use super::*;
use std::net::Ipv4Addr;

fn here() -> SocketAddr {
    SocketAddr::from((Ipv4Addr::LOCALHOST, 0))
}

fn fabric(hosts: u32) -> (SocketFabric, Vec<TcpMessages>) {
    let f = SocketFabric::new(hosts, Span::from_ms(10_000)).unwrap();
    (f, (0..hosts).map(|_| TcpMessages::new(false)).collect())
}

#[test]
fn a_connection_without_a_cookie_this_rank_gave_is_refused_and_the_real_one_admitted() {
    let mut rank = SocketRank::default();
    let (mut rf, mut rs) = fabric(1);
    let answer = rank
        .answer(
            &mut rf,
            &mut rs,
            0,
            7,
            &serde_json::Value::Null,
            here(),
            here(),
        )
        .unwrap();
    let a: TcpAnswer = decode(&answer, "answer").unwrap();
    // A stranger finds the port first and writes a cookie of its own; another says nothing.
    let mut stranger = TcpStream::connect(a.address).unwrap();
    stranger.write_all(&[0xab; COOKIE_BYTES]).unwrap();
    let silent = TcpStream::connect(a.address).unwrap();
    // The real sender connects with the answer's cookie.
    let (mut sf, mut ss) = fabric(1);
    let mut sender = SocketRank::default();
    sender
        .complete(&mut sf, &mut ss, 0, (), 0, &answer, here())
        .unwrap();
    drop(silent);
    rank.settle(&mut rf, &mut rs, Instant::now() + Duration::from_secs(5))
        .unwrap();
    assert!(rank.pending.is_empty());
    // One connection at each end, labelled with the other end's scenario host.
    use xrdma::Messages;
    assert_eq!(rs[0].peer(ConnId::new(0, 0)), Some(7));
    assert_eq!(rs[0].peer(ConnId::new(1, 0)), None);
    assert_eq!(ss[0].peer(ConnId::new(0, 0)), Some(0));
}

#[test]
fn a_sender_that_never_connects_fails_the_settle_by_its_deadline_naming_its_host() {
    let mut rank = SocketRank::default();
    let (mut rf, mut rs) = fabric(1);
    rank.answer(
        &mut rf,
        &mut rs,
        0,
        3,
        &serde_json::Value::Null,
        here(),
        here(),
    )
    .unwrap();
    let e = rank
        .settle(&mut rf, &mut rs, Instant::now() + Duration::from_millis(50))
        .unwrap_err()
        .to_string();
    assert!(e.contains("sender host(s) [3] never came"), "{e}");
}

#[test]
fn a_malformed_answer_is_an_error_not_a_connection() {
    let (mut sf, mut ss) = fabric(1);
    let bad = serde_json::json!({ "address": "127.0.0.1:9", "cookie": "zz" });
    let e = SocketRank::default()
        .complete(&mut sf, &mut ss, 0, (), 0, &bad, here())
        .unwrap_err()
        .to_string();
    assert!(e.contains("malformed cookie"), "{e}");
}
