//! Per-connection application state with reused connection slots: a connection that takes
//! the slot of an ended one starts afresh instead of inheriting its predecessor's counters
//! or half-streamed message.

use bytes::Bytes;
use xrdma::driver::Application;
use xrdma::{Config, ConnId, Endpoint, Event, Time};
use xrdma_runner::workload::Receiver;
use xxhash_rust::xxh3::xxh3_128;

#[test]
fn regression_the_incast_receiver_numbers_a_reused_slots_connection_from_zero() {
    let mut ep = Endpoint::new(Config::default()).unwrap();
    let mut rx = Receiver::default();
    let (old, new) = (ConnId::new(0, 0), ConnId::new(0, 1));
    let data = Bytes::from_static(b"message");
    for conn in [old, old, new] {
        let ev = Event::Message {
            conn,
            tag: 0,
            data: data.clone(),
        };
        rx.on_event(Time::ZERO, &mut ep, ev);
    }
    let index: Vec<u32> = rx.log.arrivals.iter().map(|a| a.index).collect();
    assert_eq!(
        index,
        [0, 1, 0],
        "the new connection's first message is its 0th"
    );
}

#[test]
fn regression_a_reused_slots_connection_does_not_continue_a_half_streamed_message() {
    let mut ep = Endpoint::new(Config::default()).unwrap();
    let mut rx = Receiver::default();
    let (old, new) = (ConnId::new(2, 0), ConnId::new(2, 1));
    // The old connection ended halfway through a 10-byte message.
    let half = Event::Fragment {
        conn: old,
        tag: 0,
        message_len: 10,
        offset: 0,
        data: Bytes::from_static(b"hello"),
    };
    rx.on_event(Time::ZERO, &mut ep, half);
    let whole = Bytes::from_static(b"0123456789");
    let first = Event::Fragment {
        conn: new,
        tag: 0,
        message_len: 10,
        offset: 0,
        data: whole.slice(..4),
    };
    let last = Event::Fragment {
        conn: new,
        tag: 0,
        message_len: 10,
        offset: 4,
        data: whole.slice(4..),
    };
    rx.on_event(Time::ZERO, &mut ep, first);
    rx.on_event(Time::ZERO, &mut ep, last);
    assert_eq!(rx.log.arrivals.len(), 1);
    assert_eq!(rx.log.arrivals[0].digest, xxh3_128(&whole));
    assert_eq!(rx.log.arrivals[0].index, 0);
}
