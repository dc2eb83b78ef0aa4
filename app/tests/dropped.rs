//! A dropped worker is a process that exited: its peers' messages fail with a typed error,
//! never a silent success, and nothing keeps growing.

use xrdma_app::{AppError, Bytes, Config, SimConfig, Span, Worker};

fn pair() -> (Worker<xrdma_app::SimFabric>, Worker<xrdma_app::SimFabric>) {
    let mut hosts = Worker::simulated(SimConfig::default(), &Config::default()).unwrap();
    (hosts.remove(0), hosts.remove(0))
}

#[test]
fn messages_to_a_dropped_worker_fail() {
    for len in [64usize, 4096, 4097, 3 << 20] {
        let (mut a, b) = pair();
        let conn = a.connect(&b).unwrap();
        drop(b);
        a.send(conn, Bytes::from(vec![7u8; len])).unwrap();
        let flushed = a.flush(Span::from_ms(2000));
        assert!(
            matches!(flushed, Err(AppError::ConnectionFailed { .. })),
            "{len} B: {flushed:?}"
        );
        // Later sends are refused, so nothing piles up.
        assert!(
            a.send(conn, Bytes::from(vec![7u8; len])).is_err(),
            "{len} B"
        );
        assert_eq!(a.unacked(), 0, "{len} B");
    }
}

#[test]
fn a_call_to_a_dropped_server_fails() {
    let (mut client, mut server) = pair();
    server.serve(|_conn, msg: Bytes| Some(msg));
    let conn = client.connect(&server).unwrap();
    assert_eq!(
        &client.call(conn, &b"ping"[..], Span::from_ms(10)).unwrap()[..],
        b"ping"
    );
    drop(server);
    let r = client.call(conn, &b"again"[..], Span::from_ms(2000));
    assert!(matches!(r, Err(AppError::ConnectionFailed { .. })), "{r:?}");
}

#[test]
fn a_timeout_says_how_long_it_waited() {
    let (mut a, _b) = pair();
    let e = a.recv(Span::from_ms(5)).unwrap_err();
    assert_eq!(e.to_string(), "nothing arrived within 5.000 ms");
}
