//! Tests of the handshake's proof of the job secret over loopback: a right-secret pair
//! handshakes, a wrong secret or none is refused, a peer that echoes is refused.

use super::super::Listener;
use super::*;
use std::net::SocketAddr;
use std::thread;
use std::time::Duration;

const T: Duration = Duration::from_secs(10);

fn hello(rank: u32) -> Hello {
    Hello::new("incast-8", "0123", rank)
}

fn soon() -> Instant {
    Instant::now() + T
}

/// A listener on loopback whose one connection handshakes as rank 0 with `secret`.
fn acceptor(
    secret: JobSecret,
) -> (
    SocketAddr,
    thread::JoinHandle<Result<Hello, BootstrapError>>,
) {
    let l = Listener::bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let addr = l.local_addr();
    let t = thread::spawn(move || {
        let mut p = l.accept(soon(), T)?;
        p.handshake(&hello(0), Auth::Job(&secret))
    });
    (addr, t)
}

#[test]
fn a_pair_with_the_same_secret_handshakes_and_names_each_other() {
    let s = JobSecret::generate().unwrap();
    let (addr, zero) = acceptor(s.clone());
    let mut c = Peer::connect(addr, soon(), T).unwrap();
    assert_eq!(c.handshake(&hello(1), Auth::Job(&s)).unwrap(), hello(0));
    assert_eq!(zero.join().unwrap().unwrap(), hello(1));
    // The connection carries frames on after the handshake.
    c.send(&Frame::Start).unwrap();
}

#[test]
fn a_wrong_secret_is_refused_both_ways_and_none_is_refused_too() {
    let (addr, zero) = acceptor(JobSecret::generate().unwrap());
    let other = JobSecret::generate().unwrap();
    let mut c = Peer::connect(addr, soon(), T).unwrap();
    // The connector checks the acceptor's proof first and refuses it, proving nothing.
    let e = c.handshake(&hello(1), Auth::Job(&other)).unwrap_err();
    let BootstrapError::Refused { peer, rank, .. } = &e else {
        panic!("{e}")
    };
    assert_eq!((*peer, *rank), (addr, Some(0)));
    assert!(e.to_string().contains("no valid MAC"), "{e}");
    drop(c);
    let e = zero.join().unwrap().unwrap_err().to_string();
    assert!(
        e.contains("(claiming rank 1): closed the connection"),
        "{e}"
    );

    // No secret at all: the connector sends no challenge and is refused.
    let (addr, zero) = acceptor(JobSecret::generate().unwrap());
    let mut c = Peer::connect(addr, soon(), T).unwrap();
    c.handshake(&hello(1), Auth::Open).unwrap();
    c.send(&Frame::Conns { conns: vec![] }).unwrap();
    let e = zero.join().unwrap().unwrap_err();
    assert!(
        matches!(
            e,
            BootstrapError::Unexpected {
                expected: "challenge",
                got: "conns",
                ..
            }
        ),
        "{e}"
    );
}

/// Connect to `addr`, say hello as rank 1 and answer the acceptor's nonce and proof with
/// what `answer` makes of them (nonce, proof); returns the acceptor's verdict.
fn echo(answer: impl Fn(&str, &str) -> (String, String)) -> BootstrapError {
    let (addr, zero) = acceptor(JobSecret::generate().unwrap());
    let mut c = Peer::connect(addr, soon(), T).unwrap();
    c.handshake(&hello(1), Auth::Open).unwrap();
    let Frame::Challenge { nonce } = c.expect("challenge").unwrap() else {
        unreachable!()
    };
    // The acceptor proves only after both nonces; send ours first, as a peer must.
    let (n, _) = answer(&nonce, "");
    c.send(&Frame::Challenge { nonce: n }).unwrap();
    if let Ok(Frame::Proof { mac }) = c.expect("proof") {
        let (_, proof) = answer(&nonce, &mac);
        c.send(&Frame::Proof { mac: proof }).unwrap();
    }
    zero.join().unwrap().unwrap_err()
}

#[test]
fn a_peer_that_echoes_the_nonce_or_the_proof_is_refused() {
    // Both echoed: refused at the nonce, before the acceptor proves anything.
    let e = echo(|nonce, mac| (nonce.to_string(), mac.to_string()));
    assert!(
        matches!(&e, BootstrapError::Refused { rank: Some(1), reason, .. }
            if reason.contains("own nonce")),
        "{e}"
    );
    // A fresh nonce, then the acceptor's own proof sent back.
    let e = echo(|_, mac| (to_hex(&[9u8; NONCE_BYTES]), mac.to_string()));
    assert!(
        matches!(&e, BootstrapError::Refused { reason, .. } if reason.contains("own proof")),
        "{e}"
    );
    // Nor does the acceptor's proof pass under the connector's label by construction.
    let s = JobSecret::generate().unwrap();
    let t = Session::new(&[1; NONCE_BYTES], &[2; NONCE_BYTES], &hello(0), &hello(1)).unwrap();
    let proof = t.mac(&s, LABEL_ACCEPTOR, &[]);
    assert!(t.verify(&s, LABEL_ACCEPTOR, &[], &proof));
    assert!(!t.verify(&s, LABEL_CONNECTOR, &[], &proof));
}
