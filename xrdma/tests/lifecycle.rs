//! Connection lifecycle in the core over the in-memory pair: close and drain, QP and buffer
//! reuse through the QP cache, reused connection slots and stale ids.

mod util;

use bytes::Bytes;
use util::world::{pattern, World};
use xrdma::*;

#[test]
fn close_drains_queued_messages_then_both_sides_close() {
    let mut w = World::new(Config::default());
    let (c0, c1) = (w.conns[0], w.conns[1]);
    w.eps[0].send(w.pair.now, c0, pattern(100, 1)).unwrap();
    w.eps[0].send(w.pair.now, c0, pattern(300_000, 2)).unwrap();
    w.eps[1].send(w.pair.now, c1, pattern(5000, 3)).unwrap();
    w.eps[0].close(c0).unwrap();
    assert_eq!(
        w.eps[0].send(w.pair.now, c0, pattern(1, 4)),
        Err(XrdmaError::ConnectionClosed { conn: c0 })
    );
    w.settle();
    // Everything queued before the close arrived, in order, on both sides.
    assert_eq!(w.received(1), vec![pattern(100, 1), pattern(300_000, 2)]);
    assert_eq!(w.received(0), vec![pattern(5000, 3)]);
    assert_eq!(w.count(1, |e| matches!(e, Event::PeerClosed { .. })), 1);
    for h in 0..2 {
        assert_eq!(
            w.count(h, |e| matches!(e, Event::Closed { .. })),
            1,
            "host {h}"
        );
        assert!(!w.eps[h].is_open(w.conns[h]));
        assert_eq!(w.eps[h].qp_cache().len(), 1, "host {h}'s QP is cached");
    }
}

#[test]
fn a_new_connection_reuses_the_cached_qp_and_buffers() {
    let mut w = World::new(Config::default());
    let registered: Vec<u64> = (0..2)
        .map(|h| w.eps[h].mr_pool().registered_bytes())
        .collect();
    let old = w.conns;
    w.eps[0].close(old[0]).unwrap();
    w.settle();
    assert_eq!(w.connect(), [true, true]);
    assert_ne!(w.conns, old);
    w.eps[1]
        .send(w.pair.now, w.conns[1], pattern(70_000, 9))
        .unwrap();
    w.settle();
    assert_eq!(w.received(0), vec![pattern(70_000, 9)]);
    // The reused connection carved no new staging ring or receive buffers, and host 0's
    // 128 KiB landing buffer for the 70 000-byte message fit the first 4 MiB chunk
    // (320 KiB ring + 1040 KiB receive buffers + 128 KiB < 4 MiB): nothing new registered.
    for (h, before) in registered.iter().enumerate() {
        assert_eq!(w.eps[h].mr_pool().registered_bytes(), *before, "host {h}");
    }
    assert_eq!(w.eps[0].qp_cache().hits(), 1);
}

#[test]
fn regression_an_ended_connections_slot_serves_the_next_and_its_id_goes_stale() {
    let mut w = World::new(Config::default());
    let first = w.conns;
    for cycle in 1..=5u32 {
        let old = w.conns;
        w.eps[0].close(old[0]).unwrap();
        w.settle();
        w.connect();
        for h in 0..2 {
            let ep = &mut w.eps[h];
            let (new, now) = (w.conns[h], w.pair.now);
            assert_eq!(new.index(), first[h].index(), "host {h} cycle {cycle}");
            assert_eq!(new.generation(), cycle, "host {h} cycle {cycle}");
            assert_eq!(ep.connection_count(), 1, "host {h}: no record growth");
            assert_eq!(ep.resources().connection_records, 1);
            // The ended connection's id names nothing now, not its successor.
            let stale = Err(XrdmaError::StaleConnection(old[h]));
            assert_eq!(ep.send(now, old[h], pattern(1, 0)).map(|_| ()), stale);
            assert_eq!(ep.close(old[h]), stale);
            assert_eq!(ep.stats(old[h]), None);
            assert_eq!(ep.state(old[h]), None);
            assert!(!ep.is_open(old[h]) && ep.is_open(new));
            assert_eq!(ep.state(new), Some(ConnState::Established));
        }
        // The new connection carries traffic.
        let msg = pattern(5000, cycle as u8);
        w.eps[0].send(w.pair.now, w.conns[0], msg.clone()).unwrap();
        w.settle();
        assert_eq!(w.received(1).last(), Some(&msg), "cycle {cycle}");
    }
}

/// Registered memory that is never touched (the test below moves no payload).
struct NoMemory;

impl LocalMemory for NoMemory {
    fn read_into(&self, addr: u64, out: &mut [u8]) -> Result<(), TransportError> {
        Err(TransportError::BadAddress {
            addr,
            len: out.len() as u64,
            key: 0,
        })
    }
    fn read_bytes(&self, addr: u64, len: usize) -> Result<Bytes, TransportError> {
        read_bytes_through(self, addr, len)
    }
    fn write(&mut self, addr: u64, parts: &[&[u8]]) -> Result<(), TransportError> {
        Err(TransportError::BadAddress {
            addr,
            len: xrdma::gather_len(parts),
            key: 0,
        })
    }
    fn lend(&mut self, _addr: u64, _len: usize) -> Option<Bytes> {
        None
    }
    fn poll_returned(&mut self) -> Option<u64> {
        None
    }
    fn registered_lkey(&self, _data: &[u8]) -> Option<u32> {
        None
    }
    fn send_buffer(&mut self, _len: usize) -> Option<SendBuffer> {
        None
    }
}

/// Set a connection up with no transport at all: answer the endpoint's ops by hand. Returns
/// the connection and the `wr_id`s of its receive WRs.
fn open_by_hand(ep: &mut Endpoint, next_qpn: &mut u32) -> (ConnId, Vec<u64>) {
    let conn = ep.open().unwrap();
    let mut recvs = Vec::new();
    let mut mr_base = 0x1000_0000 * u64::from(*next_qpn);
    let mut answer = |ep: &mut Endpoint, recvs: &mut Vec<u64>| {
        while let Some(op) = ep.poll_op(Time::ZERO, &mut NoMemory) {
            match op {
                Op::CreateQp { conn, .. } => {
                    *next_qpn += 1;
                    let qp = QpAddress {
                        gid: [0; 16],
                        lid: 0,
                        qpn: *next_qpn,
                        psn: 0,
                    };
                    ep.handle_qp_created(conn, Ok(qp));
                }
                Op::RegisterMemory { len } => {
                    mr_base += 0x1_0000_0000;
                    ep.add_memory(MemoryRegion {
                        addr: mr_base,
                        len,
                        lkey: 1,
                        rkey: 2,
                    });
                }
                Op::ResetQp { qpn } => {
                    let qp = QpAddress {
                        gid: [0; 16],
                        lid: 0,
                        qpn,
                        psn: 1,
                    };
                    ep.handle_qp_reset(qpn, Ok(qp));
                }
                Op::PostRecv { wr, .. } => recvs.push(wr.wr_id),
                Op::PostSend { .. } => {}
                other => panic!("an op this hand driver does not know: {other:?}"),
            }
        }
    };
    answer(ep, &mut recvs);
    assert!(matches!(
        ep.setup_progress(conn),
        Ok(SetupProgress::Ready { .. })
    ));
    ep.handle_connected(conn, 7, Ok(())).unwrap();
    answer(ep, &mut recvs);
    assert_eq!(ep.setup_progress(conn), Ok(SetupProgress::Connected));
    (conn, recvs)
}

#[test]
fn a_completion_left_by_an_ended_connection_does_not_reach_its_slots_next_connection() {
    let mut ep = Endpoint::new(Config::default()).unwrap();
    let mut qpn = 0;
    let (old, old_recvs) = open_by_hand(&mut ep, &mut qpn);
    // The connection fails (a receive completes in error); its QP is reset.
    assert_eq!(ep.peer(old), Some(7));
    let err = WorkCompletion {
        wr_id: old_recvs[0],
        status: WcStatus::RemAccessErr,
        opcode: WcOpcode::Recv,
        qp_num: 1,
        byte_len: 0,
        imm: None,
    };
    assert_eq!(ep.handle_completion(Time::ZERO, &err), None);
    assert_eq!(ep.state(old), Some(ConnState::Failed));
    while let Some(op) = ep.poll_op(Time::ZERO, &mut NoMemory) {
        if let Op::ResetQp { qpn } = op {
            ep.handle_qp_reset(qpn, Err(TransportError::NoSuchQp(qpn)));
        }
    }
    // Its slot is not reused before the application has heard of the failure.
    let (early, _) = open_by_hand(&mut ep, &mut qpn);
    assert_eq!(early.index(), 1);
    while ep.poll_event().is_some() {}
    let (new, _) = open_by_hand(&mut ep, &mut qpn);
    assert_eq!((new.index(), new.generation()), (old.index(), 1));
    // A zero-length receive completion the old connection's QP left in the CQ: for the new
    // connection it would be an ACK beyond anything sent, and fail it.
    let late = WorkCompletion {
        status: WcStatus::Success,
        byte_len: 0,
        imm: Some(12345),
        ..err
    };
    assert_eq!(
        ep.handle_completion(Time::ZERO, &late),
        None,
        "no bytes asked for"
    );
    assert_eq!(ep.state(new), Some(ConnState::Established));
    assert_eq!(ep.stats(new).unwrap().acks_received, 0);
    assert!(ep.poll_event().is_none());
}

#[test]
fn arrived_bytes_come_in_as_data_and_a_short_or_missing_copy_fails_the_connection() {
    use xrdma::fragment::{FrameKind, MessageHeader};
    let mut ep = Endpoint::new(Config::default()).unwrap();
    let mut qpn = 0;
    let (conn, recvs) = open_by_hand(&mut ep, &mut qpn);
    let frame = |payload: &[u8]| {
        let h = MessageHeader {
            kind: FrameKind::Eager,
            message_len: payload.len() as u64,
            ack: None,
            tag: 9,
            ack_req: false,
        };
        let mut b = h.encode().to_vec();
        b.extend_from_slice(payload);
        Bytes::from(b)
    };
    let wc = |wr_id: u64, imm: u32, byte_len: u32| WorkCompletion {
        wr_id,
        status: WcStatus::Success,
        opcode: WcOpcode::Recv,
        qp_num: 1,
        byte_len,
        imm: Some(imm),
    };
    // An eager frame: the endpoint names the receive buffer's range and takes the copy.
    let f = frame(b"hello");
    let range = ep.handle_completion(Time::ZERO, &wc(recvs[0], 0, f.len() as u32));
    assert_eq!(range.map(|(_, len)| len), Some(f.len()));
    ep.handle_landed(Time::ZERO, Ok(f));
    let got: Vec<Event> = std::iter::from_fn(|| ep.poll_event()).collect();
    assert_eq!(
        got,
        [Event::Message {
            conn,
            tag: 9,
            data: Bytes::from_static(b"hello")
        }]
    );
    // A copy shorter than asked fails the connection with a memory error.
    let f = frame(b"world");
    let asked = ep.handle_completion(Time::ZERO, &wc(recvs[1], 1, f.len() as u32));
    assert!(asked.is_some());
    ep.handle_landed(Time::ZERO, Ok(f.slice(..4)));
    assert_eq!(ep.state(conn), Some(ConnState::Failed));
    assert!(matches!(
        ep.poll_event(),
        Some(Event::ConnectionFailed {
            error: XrdmaError::Memory { .. },
            ..
        })
    ));

    // A completion whose bytes never came fails its connection at the next input.
    while ep.poll_op(Time::ZERO, &mut NoMemory).is_some() {} // the failed one's reposts
    let (conn, recvs) = open_by_hand(&mut ep, &mut qpn);
    let f = frame(b"lost");
    assert!(ep
        .handle_completion(Time::ZERO, &wc(recvs[0], 0, f.len() as u32))
        .is_some());
    ep.handle_timeout(Time::ZERO);
    let ack = wc(recvs[1], 0, 0);
    assert_eq!(ep.handle_completion(Time::ZERO, &ack), None);
    assert_eq!(ep.state(conn), Some(ConnState::Failed));
}
