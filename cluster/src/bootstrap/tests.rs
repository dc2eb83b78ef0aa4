//! Tests of the bootstrap: framing, handshakes, timeouts and closed peers over loopback.

use super::*;
use std::thread;

const IO: Duration = Duration::from_secs(5);

fn loopback() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

fn soon(ms: u64) -> Instant {
    Instant::now() + Duration::from_millis(ms)
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Info {
    qpn: u32,
    rkey: u32,
    addr: u64,
}

#[test]
fn hello_then_conns_then_records_round_trip() {
    let l = Listener::bind(loopback()).unwrap();
    let addr = l.local_addr();
    let server = thread::spawn(move || {
        let mut p = l.accept(soon(5000), IO).unwrap();
        let h = p
            .handshake(&Hello::new("incast-8", "abc", 0), Auth::Open)
            .unwrap();
        assert_eq!(h.rank, 1);
        let theirs = p
            .exchange_conns(
                vec![ConnRecord::new(
                    1,
                    0,
                    &Info {
                        qpn: 17,
                        rkey: 5,
                        addr: 1 << 40,
                    },
                )
                .unwrap()],
                false,
            )
            .unwrap();
        p.send(&Frame::Start).unwrap();
        let rec = p.expect("records").unwrap();
        p.send(&Frame::Bye).unwrap();
        (theirs, rec)
    });
    let mut c = Peer::connect(addr, soon(5000), IO).unwrap();
    let h = c
        .handshake(&Hello::new("incast-8", "abc", 1), Auth::Open)
        .unwrap();
    assert_eq!(h.rank, 0);
    let got = c
        .exchange_conns(
            vec![ConnRecord::new(
                1,
                0,
                &Info {
                    qpn: 9,
                    rkey: 3,
                    addr: u64::MAX,
                },
            )
            .unwrap()],
            true,
        )
        .unwrap();
    assert_eq!(got.len(), 1);
    assert_eq!((got[0].sender, got[0].receiver), (1, 0));
    let info: Info = got[0].decode(addr).unwrap();
    assert_eq!(
        info,
        Info {
            qpn: 17,
            rkey: 5,
            addr: 1 << 40
        }
    );
    assert_eq!(c.expect("start").unwrap(), Frame::Start);
    c.send(&Frame::Records {
        records: serde_json::json!({ "sent": [1, 2, 3] }),
    })
    .unwrap();
    assert_eq!(c.expect("bye").unwrap(), Frame::Bye);
    let (theirs, rec) = server.join().unwrap();
    // The client's u64::MAX address survives JSON whole.
    assert_eq!(theirs[0].decode::<Info>(addr).unwrap().addr, u64::MAX);
    let Frame::Records { records } = rec else {
        panic!("{rec:?}")
    };
    assert_eq!(records["sent"], serde_json::json!([1, 2, 3]));
}

#[test]
fn connect_retries_until_the_listener_appears() {
    // Reserve a port, free it, and only bind it 300 ms later: the client's first
    // attempts are refused and it must keep trying.
    let addr = TcpListener::bind(loopback()).unwrap().local_addr().unwrap();
    let server = thread::spawn(move || {
        thread::sleep(Duration::from_millis(300));
        let l = Listener::bind(addr).unwrap();
        let mut p = l.accept(soon(5000), IO).unwrap();
        p.handshake(&Hello::new("s", "h", 0), Auth::Open).unwrap()
    });
    let t0 = Instant::now();
    let mut c = Peer::connect(addr, soon(5000), IO).unwrap();
    assert!(
        t0.elapsed() >= Duration::from_millis(200),
        "{:?}",
        t0.elapsed()
    );
    c.handshake(&Hello::new("s", "h", 1), Auth::Open).unwrap();
    assert_eq!(server.join().unwrap().rank, 1);
}

#[test]
fn connect_gives_up_at_the_deadline() {
    let addr = TcpListener::bind(loopback()).unwrap().local_addr().unwrap();
    let t0 = Instant::now();
    let e = Peer::connect(addr, soon(400), IO).unwrap_err();
    assert!(matches!(e, BootstrapError::ConnectTimeout { .. }), "{e}");
    let waited = t0.elapsed();
    // Attempts stop once the next one would start after the deadline (400 ms, retry
    // every 100 ms): done between 300 ms and 400 ms plus one attempt's slack.
    assert!(
        waited >= Duration::from_millis(290) && waited < Duration::from_secs(2),
        "{waited:?}"
    );
}

#[test]
fn accept_gives_up_at_the_deadline() {
    let l = Listener::bind(loopback()).unwrap();
    let e = l.accept(soon(100), IO).unwrap_err();
    assert!(matches!(e, BootstrapError::AcceptTimeout { .. }), "{e}");
}

#[test]
fn mismatched_scenario_and_version_name_both_sides() {
    let l = Listener::bind(loopback()).unwrap();
    let addr = l.local_addr();
    let server = thread::spawn(move || {
        let mut p = l.accept(soon(5000), IO).unwrap();
        let e1 = p
            .handshake(&Hello::new("incast-8", "1111", 0), Auth::Open)
            .unwrap_err();
        let mut p = l.accept(soon(5000), IO).unwrap();
        let e2 = p
            .handshake(&Hello::new("incast-8", "1111", 0), Auth::Open)
            .unwrap_err();
        (e1.to_string(), e2.to_string())
    });
    let mut c = Peer::connect(addr, soon(5000), IO).unwrap();
    let e = c
        .handshake(&Hello::new("incast-8", "2222", 1), Auth::Open)
        .unwrap_err();
    let text = e.to_string();
    assert!(
        matches!(e, BootstrapError::ScenarioMismatch { .. }),
        "{text}"
    );
    assert!(
        text.contains("hash 2222") && text.contains("hash 1111"),
        "{text}"
    );
    let mut c = Peer::connect(addr, soon(5000), IO).unwrap();
    let mut old = Hello::new("incast-8", "1111", 1);
    old.protocol = PROTOCOL_VERSION + 1;
    let e = c.handshake(&old, Auth::Open).unwrap_err();
    assert!(matches!(e, BootstrapError::VersionMismatch { .. }), "{e}");
    let (s1, s2) = server.join().unwrap();
    assert!(
        s1.contains("scenario mismatch") && s1.contains("rank 1"),
        "{s1}"
    );
    assert!(
        s2.contains("version mismatch")
            && s2.contains(&format!("protocol {}", PROTOCOL_VERSION + 1)),
        "{s2}"
    );
}

#[test]
fn a_peer_that_closes_early_is_a_typed_error() {
    let l = Listener::bind(loopback()).unwrap();
    let addr = l.local_addr();
    let server = thread::spawn(move || {
        let p = l.accept(soon(5000), IO).unwrap();
        drop(p);
    });
    let mut c = Peer::connect(addr, soon(5000), IO).unwrap();
    server.join().unwrap();
    let e = c.expect("start").unwrap_err();
    assert!(matches!(e, BootstrapError::PeerClosed { .. }), "{e}");
    assert!(e.to_string().contains("waiting for a `start` frame"), "{e}");
}

#[test]
fn a_silent_peer_times_out() {
    let l = Listener::bind(loopback()).unwrap();
    let addr = l.local_addr();
    let server = thread::spawn(move || {
        let _p = l.accept(soon(5000), IO).unwrap();
        thread::sleep(Duration::from_millis(600));
    });
    let mut c = Peer::connect(addr, soon(5000), Duration::from_millis(150)).unwrap();
    let t0 = Instant::now();
    let e = c.expect("start").unwrap_err();
    assert!(matches!(e, BootstrapError::Timeout { .. }), "{e}");
    assert!(
        t0.elapsed() < Duration::from_millis(550),
        "{:?}",
        t0.elapsed()
    );
    server.join().unwrap();
}

#[test]
fn try_recv_polls_without_waiting_and_reassembles_split_frames() {
    let l = Listener::bind(loopback()).unwrap();
    let addr = l.local_addr();
    let mut c = Peer::connect(addr, soon(5000), IO).unwrap();
    let mut s = l.accept(soon(5000), IO).unwrap();
    assert_eq!(s.try_recv().unwrap(), None);
    // One frame written in two pieces: the length, then the body a little later.
    let body = serde_json::to_vec(&Frame::Bye).unwrap();
    c.stream
        .write_all(&(body.len() as u32).to_be_bytes())
        .unwrap();
    thread::sleep(Duration::from_millis(20));
    assert_eq!(s.try_recv().unwrap(), None);
    c.stream.write_all(&body).unwrap();
    thread::sleep(Duration::from_millis(20));
    assert_eq!(s.try_recv().unwrap(), Some(Frame::Bye));
    // Blocking reads still work after polling.
    c.send(&Frame::Start).unwrap();
    assert_eq!(s.recv("test").unwrap(), Frame::Start);
}

#[test]
fn oversized_and_garbage_frames_are_refused() {
    let l = Listener::bind(loopback()).unwrap();
    let addr = l.local_addr();
    let mut c = Peer::connect(addr, soon(5000), IO).unwrap();
    let mut s = l.accept(soon(5000), IO).unwrap();
    c.stream
        .write_all(&(MAX_FRAME_BYTES + 1).to_be_bytes())
        .unwrap();
    let e = s.recv("test").unwrap_err();
    assert!(e.to_string().contains("exceeds the limit"), "{e}");
    let mut c = Peer::connect(addr, soon(5000), IO).unwrap();
    let mut s = l.accept(soon(5000), IO).unwrap();
    c.stream.write_all(&3u32.to_be_bytes()).unwrap();
    c.stream.write_all(b"{x}").unwrap();
    let e = s.recv("test").unwrap_err();
    assert!(matches!(e, BootstrapError::Malformed { .. }), "{e}");
}

#[test]
fn content_hash_is_xxh3_of_the_bytes() {
    assert_eq!(
        content_hash(b""),
        format!("{:016x}", 0x2d06_8005_38d3_94c2u64)
    );
    assert_ne!(content_hash(b"a"), content_hash(b"b"));
}

#[test]
fn ranks_of_one_scenario_over_two_transports_refuse_each_other() {
    // One rank started with --backend verbs, the other with --backend sockets: their
    // connection records would not decode; the hellos say why first.
    let l = Listener::bind(loopback()).unwrap();
    let addr = l.local_addr();
    let ours = Hello::new("incast-8", "1111", 0).with_transport("xrdma over the verbs backend");
    let server = thread::spawn(move || {
        let mut p = l.accept(soon(5000), IO).unwrap();
        p.handshake(&ours, Auth::Open).unwrap_err().to_string()
    });
    let theirs =
        Hello::new("incast-8", "1111", 1).with_transport("kernel TCP over the sockets backend");
    let mut c = Peer::connect(addr, soon(5000), IO).unwrap();
    let e = c.handshake(&theirs, Auth::Open).unwrap_err();
    assert!(matches!(e, BootstrapError::TransportMismatch { .. }), "{e}");
    let s = server.join().unwrap();
    for text in [e.to_string(), s] {
        assert!(
            text.contains("backend mismatch")
                && text.contains("xrdma over the verbs backend")
                && text.contains("kernel TCP over the sockets backend"),
            "{text}"
        );
    }
}
