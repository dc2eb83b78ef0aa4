//! The host model's kernel TCP costs (`tcp-*`): what a write, a segment each way, the
//! wake-up and a read add to a message's time, the CPU time each host is charged, and the
//! ideal model charging nothing.

mod common;

use common::*;
use std::borrow::Cow;
use xrdma::{Span, Time};
use xrdma_sim::{HostId, HostModel, SimConfig, Simulation, TcpSettings, TCP_HEADER_BYTES};

/// Costs that are all different, so a wrong term in a sum shows.
fn costs() -> HostModel {
    let ns = Span::from_ns;
    HostModel {
        profile: Cow::Borrowed("test"),
        turn: ns(11),
        app_recv_message: ns(31),
        app_send_message: ns(37),
        nic_tx_packet: ns(47),
        nic_tx_byte: Span::from_ps(53),
        rx_dma_write: ns(59),
        tcp_write_call: ns(67),
        tcp_read_call: ns(71),
        tcp_copy_byte: Span::from_ps(73),
        tcp_tx_segment: ns(79),
        tcp_rx_segment: ns(83),
        tcp_wakeup: ns(89),
        ..HostModel::IDEAL
    }
}

/// Two hosts of the default star, one TCP connection between them (no delayed ACK, so the
/// receiver's ACK goes at once).
fn sim_with(host: HostModel) -> (Simulation, u32, u32) {
    let mut sim = Simulation::new(SimConfig {
        host,
        tcp: TcpSettings {
            delayed_ack: Span::ZERO,
            ..TcpSettings::default()
        },
        ..SimConfig::default()
    })
    .unwrap();
    let (a, b) = sim.tcp_connect(0, 1, false);
    (sim, a, b)
}

/// Run until host `h` is ready; the time it is. Panics when the simulation ends first.
fn until_ready(sim: &mut Simulation, h: HostId) -> Time {
    let mut ready = Vec::new();
    while sim.advance(&mut ready) {
        if ready.contains(&h) {
            return sim.now();
        }
    }
    panic!("host {h} never became ready");
}

/// Run until nothing is left.
fn drain(sim: &mut Simulation) {
    let mut ready = Vec::new();
    while sim.advance(&mut ready) {}
}

/// Wire time of one segment with `payload` bytes on the default star: two links and a
/// store-and-forward switch.
fn segment_wire(payload: u64) -> Span {
    Span::from_ps(2 * D + 2 * (u64::from(TCP_HEADER_BYTES) + payload) * PS_PER_BYTE_100G)
}

#[test]
fn a_message_pays_the_write_both_kernels_the_wake_up_and_the_read() {
    let m = costs();
    let (mut sim, a, b) = sim_with(m.clone());
    let msg = [7u8; 64];
    let mut t = sim.transport(0);
    t.begin_turn();
    assert_eq!(t.tcp_write(a, &[&msg[..8], &msg[8..]]), 64);
    t.end_turn();
    let sender_cpu = m.turn + m.tcp_write_cost(64);
    // The write ends, the kernel builds the segment, the NIC's engine and the wire carry it,
    // the payload is written to memory, the kernel takes it in, the reader wakes.
    let expected = sender_cpu
        + m.tcp_tx_segment
        + m.tx_engine(64)
        + segment_wire(64)
        + m.rx_dma_write
        + m.tcp_rx_segment
        + m.tcp_wakeup;
    assert_eq!(until_ready(&mut sim, 1), Time::ZERO + expected);
    let mut t = sim.transport(1);
    t.begin_turn();
    let mut ready = Vec::new();
    t.tcp_poll_ready(&mut ready);
    assert_eq!(ready, vec![b]);
    let mut got = Vec::new();
    assert_eq!(t.tcp_read(b, &mut got), 64);
    t.end_turn();
    assert_eq!(got, msg);
    drain(&mut sim);
    // Host 0: its turn, the write, the segment out and the receiver's ACK in. Host 1: the
    // segment in, its ACK out, its turn and the read.
    assert_eq!(
        sim.host_cpu_busy(0),
        sender_cpu + m.tcp_tx_segment + m.tcp_rx_segment
    );
    assert_eq!(
        sim.host_cpu_busy(1),
        m.tcp_rx_segment + m.tcp_tx_segment + m.turn + m.tcp_read_cost(64)
    );
}

#[test]
fn the_ideal_host_charges_nothing_and_delivers_at_wire_time() {
    let (mut sim, a, _) = sim_with(HostModel::IDEAL);
    let mut t = sim.transport(0);
    t.begin_turn();
    assert_eq!(t.tcp_write(a, &[&[1u8; 64]]), 64);
    t.end_turn();
    assert_eq!(until_ready(&mut sim, 1), Time::ZERO + segment_wire(64));
    drain(&mut sim);
    assert_eq!(sim.host_cpu_busy(0), Span::ZERO);
    assert_eq!(sim.host_cpu_busy(1), Span::ZERO);
}

#[test]
fn one_core_bounds_the_segment_rate_at_every_size() {
    // A bulk write on an idle link: every segment waits for the kernel's transmit work, so
    // the last byte cannot arrive before `segments × (tx-segment + serialization)`.
    for (kib, tx) in [(64u64, 1_000u64), (256, 2_000), (1024, 500)] {
        let m = HostModel {
            tcp_tx_segment: Span::from_ns(tx),
            ..costs()
        };
        let (mut sim, a, b) = sim_with(m.clone());
        let data = vec![3u8; (kib * 1024) as usize];
        let mut t = sim.transport(0);
        t.begin_turn();
        assert_eq!(t.tcp_write(a, &[&data]), data.len());
        t.end_turn();
        let mut got = Vec::new();
        let mut ready = Vec::new();
        while got.len() < data.len() && sim.advance(&mut ready) {
            if ready.contains(&1) {
                let mut t = sim.transport(1);
                t.begin_turn();
                t.tcp_poll_ready(&mut Vec::new());
                t.tcp_read(b, &mut got);
                t.end_turn();
            }
        }
        assert_eq!(got.len(), data.len(), "{kib} KiB");
        let mss = u64::from(TcpSettings::default().mss);
        let segments = (kib * 1024).div_ceil(mss);
        let ser = Span::from_ps((mss + u64::from(TCP_HEADER_BYTES)) * PS_PER_BYTE_100G);
        let floor = (m.tcp_tx_segment + ser) * (segments - 1);
        assert!(
            sim.now() >= Time::ZERO + floor,
            "{kib} KiB at {tx} ns per segment: done at {} before the floor {floor}",
            sim.now()
        );
        assert!(sim.host_cpu_busy(0) >= m.tcp_tx_segment * segments);
    }
}
