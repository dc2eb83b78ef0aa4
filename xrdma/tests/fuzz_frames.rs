//! Fuzzing the receive path with a hostile peer (a stable-toolchain harness on proptest):
//! host 0 posts raw SENDs of arbitrary frames — valid headers with hostile fields, coalesced
//! eager records, RTS/CTS bodies, piggybacked ACKs, random sequence numbers, plain noise —
//! into host 1's xrdma endpoint. Whatever arrives, the endpoint must not panic, must not ask
//! for an absurd registration, and must either deliver well-formed messages or fail the
//! connection with a typed error; it never delivers after failing.
//!
//! `PROPTEST_CASES=N` sets the number of cases (default 256 here); a case that fails is
//! written to `proptest-regressions/` and replayed first on every later run, and each defect
//! found is kept below as a plain regression test.

mod util;

use proptest::prelude::*;
use util::{Pair, Recorder};
use xrdma::driver::{self, TurnScratch};
use xrdma::fragment::{FrameKind, Grant, MessageHeader, HEADER_LEN};
use xrdma::*;

/// One frame the hostile peer sends.
#[derive(Clone, Debug)]
enum Hostile {
    /// A header with these fields, then `body`.
    Framed {
        kind: u8,
        message_len: u64,
        ack: Option<u32>,
        body: Vec<u8>,
    },
    /// An RTS announcing these lengths.
    Rts(Vec<u64>),
    /// A CTS with these grants.
    Cts(Vec<(u64, u32, u64)>),
    /// Arbitrary bytes (no header at all, or a torn one).
    Noise(Vec<u8>),
    /// A zero-length SEND: a bare ACK of this sequence number.
    Ack(u32),
}

/// Lengths a hostile peer likes: small, eager-sized, around the size classes and `u64`'s end.
fn hostile_len() -> impl Strategy<Value = u64> {
    prop_oneof![
        0u64..5000,
        Just(4096u64),
        Just(4097u64),
        (1u64 << 16)..(1u64 << 24),
        Just(1u64 << 31),
        Just(1u64 << 40),
        Just(u64::MAX / 2 + 1),
        Just(u64::MAX),
        any::<u64>(),
    ]
}

fn hostile() -> impl Strategy<Value = Hostile> {
    prop_oneof![
        (
            0u8..6,
            hostile_len(),
            proptest::option::of(any::<u32>()),
            proptest::collection::vec(any::<u8>(), 0..600)
        )
            .prop_map(|(kind, message_len, ack, body)| Hostile::Framed {
                kind,
                message_len,
                ack,
                body
            }),
        proptest::collection::vec(hostile_len(), 0..20).prop_map(Hostile::Rts),
        proptest::collection::vec((any::<u64>(), any::<u32>(), hostile_len()), 0..20)
            .prop_map(Hostile::Cts),
        proptest::collection::vec(any::<u8>(), 0..64).prop_map(Hostile::Noise),
        any::<u32>().prop_map(Hostile::Ack),
    ]
}

fn encode(f: &Hostile) -> Vec<u8> {
    let header = |kind: FrameKind, n: u64| MessageHeader {
        kind,
        message_len: n,
        ack: None,
        tag: 0,
        ack_req: false,
    };
    match f {
        Hostile::Framed {
            kind,
            message_len,
            ack,
            body,
        } => {
            let mut h = MessageHeader {
                kind: FrameKind::Eager,
                message_len: *message_len,
                ack: ack.map(Seq),
                // The length's high half as the tag: every bit of bytes 0..8 stays hostile.
                tag: (*message_len >> 32) as u32,
                ack_req: false,
            }
            .encode();
            // The kind byte as the peer wrote it, known or not (bits 8..16 of bytes 12..16).
            h[14] = *kind;
            let mut v = h.to_vec();
            v.extend_from_slice(body);
            v
        }
        Hostile::Rts(lens) => {
            let mut v = header(FrameKind::Rts, lens.len() as u64).encode().to_vec();
            for l in lens {
                v.extend_from_slice(&l.to_be_bytes());
            }
            v
        }
        Hostile::Cts(grants) => {
            let mut v = header(FrameKind::Cts, grants.len() as u64)
                .encode()
                .to_vec();
            for &(addr, rkey, len) in grants {
                v.extend_from_slice(&Grant { addr, rkey, len }.encode());
            }
            v
        }
        Hostile::Noise(b) => b.clone(),
        Hostile::Ack(_) => Vec::new(),
    }
}

/// Sends `frames` from a raw QP on host 0 to an xrdma endpoint on host 1 (sequence numbers in
/// order unless `seq_noise` says otherwise), turning host 1 after each, and checks what it
/// did.
fn attack(frames: &[Hostile], seq_noise: &[Option<u32>]) -> Vec<Event> {
    let cfg = Config::default();
    let slot = cfg.recv_slot_bytes() as usize;
    let mut pair = Pair::new();
    pair.max_registration = Some(64 << 20);
    let mut eps = [
        Endpoint::new(cfg.clone()).unwrap(),
        Endpoint::new(cfg).unwrap(),
    ];
    let a = driver::open(&mut eps[0], &mut pair.side(0)).unwrap();
    let b = driver::open(&mut eps[1], &mut pair.side(1)).unwrap();
    driver::establish(&mut eps[0], &mut pair.side(0), a, &b.info, 1).unwrap();
    let conn = driver::establish(&mut eps[1], &mut pair.side(1), b, &a.info, 0).unwrap();
    let mut app = Recorder::default();
    let mut scratch = TurnScratch::default();
    // Host 0's own endpoint never runs: its QP is the attacker's, its memory a staging area.
    let stage = pair.side(0).register_memory(1 << 16).unwrap();
    let qpn = a.info.qp.qpn;
    let mut seq = 0u32;
    for (i, f) in frames.iter().enumerate() {
        let mut bytes = encode(f);
        bytes.truncate(slot);
        pair.side(0).write(stage.addr, &[&bytes]).unwrap();
        let imm = seq_noise.get(i).copied().flatten().unwrap_or(seq);
        seq = seq.wrapping_add(1);
        let wr = SendWr {
            wr_id: 0,
            opcode: SendOpcode::SendWithImm,
            sge: Sge {
                addr: stage.addr,
                len: bytes.len() as u32,
                lkey: stage.lkey,
            },
            imm: match f {
                Hostile::Ack(a) => *a,
                _ => imm,
            },
            remote_addr: 0,
            rkey: 0,
            signaled: false,
        };
        pair.side(0).post_send(qpn, &wr).unwrap();
        for _ in 0..4 {
            let now = pair.now;
            driver::turn(now, &mut eps[1], &mut pair.side(1), &mut app, &mut scratch);
        }
        // Host 1's ACKs land in host 0's posted receives; keep them from running out.
        pair.hosts[0].discard_completions();
        pair.repost_all(0);
        if !eps[1].is_open(conn) {
            break;
        }
    }
    // Whatever happened: a failure is typed and said once, and nothing is delivered after it.
    let failed_at = app
        .events
        .iter()
        .position(|e| matches!(e, Event::ConnectionFailed { .. }));
    if let Some(at) = failed_at {
        assert!(
            !app.events[at + 1..]
                .iter()
                .any(|e| matches!(e, Event::Message { .. } | Event::ConnectionFailed { .. })),
            "events after the failure: {:?}",
            &app.events[at..]
        );
        assert!(!eps[1].is_open(conn));
    }
    for e in &app.events {
        if let Event::Message { data, .. } = e {
            assert!(
                data.len() as u64 <= 1 << 20,
                "a {}-byte delivery",
                data.len()
            );
        }
    }
    app.events
}

/// Cases per property: `PROPTEST_CASES`, else 256.
fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn a_hostile_peer_cannot_crash_the_receive_path(
        frames in proptest::collection::vec(hostile(), 1..12),
        seq_noise in proptest::collection::vec(proptest::option::weighted(0.1, any::<u32>()), 0..12),
    ) {
        attack(&frames, &seq_noise);
    }
}

fn failure(events: &[Event]) -> Option<&XrdmaError> {
    events.iter().find_map(|e| match e {
        Event::ConnectionFailed { error, .. } => Some(error),
        _ => None,
    })
}

#[test]
fn a_frame_shorter_than_its_header_fails_the_connection() {
    let events = attack(&[Hostile::Noise(vec![1, 2, 3])], &[]);
    assert!(
        matches!(failure(&events), Some(XrdmaError::MalformedFragment { .. })),
        "{events:?}"
    );
}

#[test]
fn an_rts_announcing_u64_max_bytes_fails_the_connection_and_registers_nothing() {
    // Found by the property above: the landing pool carved a buffer for u64::MAX bytes, and
    // the MR pool's `start + len` overflowed (a panic, or in release a wrapped region that
    // "fit" and would have been granted to the peer). An entry's high half is the message's
    // tag, its low half the length: an entry of u64::MAX announces u32::MAX bytes, one of
    // 2^63 a tagged 0-byte message.
    let above = "above the 2147483648-byte maximum";
    for (len, why) in [
        (u64::MAX, above),
        (u64::MAX / 2 + 1, "an eager size"),
        (MAX_MESSAGE_SIZE + 1, above),
    ] {
        let events = attack(&[Hostile::Rts(vec![len])], &[]);
        match failure(&events) {
            Some(XrdmaError::MalformedFragment { reason, .. }) => {
                assert!(reason.contains(why), "{reason}")
            }
            other => panic!("{len}: {other:?}"),
        }
    }
}

#[test]
fn the_frame_header_is_sixteen_bytes() {
    // The harness writes the kind byte at offset 14 (bits 8..16 of bytes 12..16).
    assert_eq!(HEADER_LEN, 16);
    let h = MessageHeader {
        kind: FrameKind::Rts,
        message_len: 1,
        ack: None,
        tag: 0,
        ack_req: false,
    }
    .encode();
    let mut e = MessageHeader {
        kind: FrameKind::Eager,
        message_len: 1,
        ack: None,
        tag: 0,
        ack_req: false,
    }
    .encode();
    e[14] = h[14];
    assert_eq!(
        MessageHeader::decode(&e).map(|h| h.kind),
        Some(FrameKind::Rts)
    );
}
