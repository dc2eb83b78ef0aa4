//! The host model (`SimConfig::host`): what each call and each NIC step adds to a message's
//! time, derived from the costs; the CPU clock; the ideal model changing nothing.

mod common;

use common::*;
use std::borrow::Cow;
use xrdma::{MemoryRegion, QpNum, SendOpcode, Span, Time, Transport, WcOpcode};
use xrdma_sim::{HostId, HostModel, HostTransport, SimConfig, Simulation};

/// Costs that are all different, so a wrong term in a sum shows.
fn test_costs() -> HostModel {
    let ns = Span::from_ns;
    HostModel {
        profile: Cow::Borrowed("test"),
        turn: ns(11),
        post_send_wr: ns(13),
        doorbell: ns(17),
        post_recv_wr: ns(19),
        poll_call: ns(23),
        poll_cqe: ns(29),
        app_recv_message: ns(31),
        app_send_message: ns(37),
        wqe_fetch: ns(41),
        payload_read: ns(43),
        nic_tx_packet: ns(47),
        nic_tx_byte: Span::from_ps(53),
        rx_dma_write: ns(59),
        cqe_write: ns(61),
        ..HostModel::IDEAL
    }
}

fn sim_with(host: HostModel) -> Simulation {
    Simulation::new(SimConfig {
        host,
        ..SimConfig::default()
    })
    .unwrap()
}

/// One driver turn of host `h` at the simulation's time: `f` makes its calls.
fn turn<R>(sim: &mut Simulation, h: HostId, f: impl FnOnce(&mut HostTransport<'_>) -> R) -> R {
    let mut t = sim.transport(h);
    t.begin_turn();
    let r = f(&mut t);
    t.end_turn();
    r
}

fn sum(ts: &[Span]) -> Span {
    ts.iter().fold(Span::ZERO, |a, &b| a + b)
}

/// Wire time of one single-packet SEND of `payload` bytes on the default star: two links and
/// a store-and-forward switch, `2·D + 2·ser(82 + payload)`.
fn one_packet_wire(payload: u64) -> Span {
    Span::from_ps(2 * D + 2 * (82 + payload) * PS_PER_BYTE_100G)
}

/// The instant `span` after time zero.
fn at(span: Span) -> Time {
    Time::ZERO + span
}

struct Pair {
    sim: Simulation,
    qps: [QpNum; 2],
    mrs: [MemoryRegion; 2],
}

/// Hosts 0 and 1 connected, 4 KiB registered on each, `recvs` receive WRs posted on host 1
/// (outside any turn: free).
fn pair(host: HostModel, recvs: u64) -> Pair {
    let mut sim = sim_with(host);
    let (qa, qb) = connect(&mut sim, 0, 1);
    let a = patterned(&mut sim, 0, 4096, 1);
    let b = patterned(&mut sim, 1, 4096, 2);
    for i in 0..recvs {
        sim.transport(1).post_recv(qb, &recv(i, &b, 4096)).unwrap();
    }
    Pair {
        sim,
        qps: [qa, qb],
        mrs: [a, b],
    }
}

/// An unsignaled SEND of `len` bytes from `mr` (no send completion to poll).
fn send(mr: &MemoryRegion, len: u32) -> xrdma::SendWr {
    let mut w = wr(1, SendOpcode::Send, mr, len);
    w.signaled = false;
    w
}

/// Host 0 sends one 64-byte SEND in a turn at time 0; host 1's turn polls it. Returns host 1's
/// CPU time right after the poll that returned the receive completion.
fn single_send(host: HostModel) -> Time {
    let mut p = pair(host, 1);
    let w = send(&p.mrs[0], 64);
    turn(&mut p.sim, 0, |t| t.post_send(p.qps[0], &w).unwrap());
    let mut ready = Vec::new();
    let mut wcs = Vec::new();
    while p.sim.advance(&mut ready) {
        if ready.contains(&1) {
            let seen = turn(&mut p.sim, 1, |t| {
                t.poll_cq(&mut wcs, 16);
                t.cpu_time()
            });
            if wcs.iter().any(|wc| wc.opcode == WcOpcode::Recv) {
                return seen;
            }
        }
    }
    panic!("the receive never completed");
}

#[test]
fn a_sends_one_way_time_rises_by_exactly_the_costs_on_its_path() {
    let ideal = single_send(HostModel::IDEAL);
    // No cost: host 1 sees the message when its last bit is in.
    assert_eq!(ideal, at(one_packet_wire(64)));
    let m = test_costs();
    let path = sum(&[
        m.turn,
        m.post_send_wr,
        m.doorbell,
        m.wqe_fetch,
        m.payload_read,
        m.nic_tx_packet + m.nic_tx_byte * 64,
        m.rx_dma_write,
        m.cqe_write,
        m.turn,
        m.poll_call,
        m.poll_cqe,
    ]);
    assert_eq!(single_send(m) - ideal, path);
}

/// Ping-pong of 64-byte SENDs between hosts 0 and 1 for `hops` one-way trips; each host's
/// turn polls once, reports one message delivered and one sent, reposts its receive WR and
/// sends the next message. Returns the start time of each turn that received one.
fn ping_pong(host: HostModel, hops: usize) -> Vec<Time> {
    let cfg = SimConfig {
        host,
        ..SimConfig::default()
    };
    ping_pong_on(cfg, xrdma::QpCaps::default(), hops)
}

/// [`ping_pong`] on `cfg`'s network with QPs of capacities `caps`.
fn ping_pong_on(cfg: SimConfig, caps: xrdma::QpCaps, hops: usize) -> Vec<Time> {
    let mut sim = Simulation::new(cfg).unwrap();
    let a = sim.transport(0).create_qp(caps).unwrap();
    let b = sim.transport(1).create_qp(caps).unwrap();
    sim.transport(0).connect_qp(a.qpn, &b).unwrap();
    sim.transport(1).connect_qp(b.qpn, &a).unwrap();
    let (qa, qb) = (a.qpn, b.qpn);
    let mrs = [
        patterned(&mut sim, 0, 4096, 1),
        patterned(&mut sim, 1, 4096, 2),
    ];
    let qps = [qa, qb];
    for h in 0..2 {
        sim.transport(h)
            .post_recv(qps[h as usize], &recv(0, &mrs[h as usize], 4096))
            .unwrap();
    }
    let first = send(&mrs[0], 64);
    turn(&mut sim, 0, |t| t.post_send(qa, &first).unwrap());
    let (mut ready, mut wcs, mut starts) = (Vec::new(), Vec::new(), Vec::new());
    while starts.len() < hops && sim.advance(&mut ready) {
        for &h in &ready {
            let (qp, mr) = (qps[h as usize], &mrs[h as usize]);
            let now = sim.now();
            turn(&mut sim, h, |t| {
                wcs.clear();
                t.poll_cq(&mut wcs, 16);
                if wcs.iter().any(|wc| wc.opcode == WcOpcode::Recv) {
                    starts.push(now);
                    t.app_messages(1, 1);
                    t.post_recv(qp, &recv(0, mr, 4096)).unwrap();
                    t.post_send(qp, &send(mr, 64)).unwrap();
                }
            });
        }
    }
    starts
}

#[test]
fn a_ping_pong_hop_costs_the_sum_of_every_cost_on_the_round() {
    let m = test_costs();
    let starts = ping_pong(m.clone(), 8);
    assert_eq!(starts.len(), 8);
    // One hop: the receiving host's CQE written after the data, its turn (one poll returning
    // one CQE, the application, one receive reposted, one SEND posted), then the NIC's fetch,
    // read and transmit engine, and the wire. The transport ACK the receiver's NIC sends at
    // the packet's arrival is long gone by then, so it does not delay the reply.
    let hop = sum(&[
        m.rx_dma_write,
        m.cqe_write,
        m.turn,
        m.poll_cost(1),
        m.app_cost(1, 1),
        m.post_recv_wr,
        m.post_send_cost(1),
        m.wqe_fetch,
        m.payload_read,
        m.tx_engine(64),
        one_packet_wire(64),
    ]);
    for w in starts.windows(2) {
        assert_eq!(w[1] - w[0], hop, "{starts:?}");
    }
}

#[test]
fn a_chain_of_k_wrs_rings_one_doorbell() {
    const K: u64 = 4;
    let m = test_costs();
    // (CPU time after posting, when host 1 sees the first receive completion)
    let run = |chain: bool| {
        let mut p = pair(m.clone(), K);
        let wrs: Vec<_> = (0..K).map(|_| send(&p.mrs[0], 64)).collect();
        let cpu = turn(&mut p.sim, 0, |t| {
            if chain {
                t.post_send_chain(p.qps[0], &wrs).unwrap();
            } else {
                for w in &wrs {
                    t.post_send(p.qps[0], w).unwrap();
                }
            }
            t.cpu_time()
        });
        let seen = run(&mut p.sim);
        let first = seen.iter().find(|s| s.host == 1).map(|s| s.at);
        (cpu, first.unwrap(), seen.len())
    };
    let (cpu, first, n) = run(true);
    assert_eq!(n, K as usize);
    assert_eq!(cpu, at(m.turn + m.post_send_wr * K + m.doorbell));
    assert_eq!(cpu, at(m.turn + m.post_send_cost(K)));
    // The NIC fetches the whole chain once the doorbell is written.
    let fetched = cpu + m.wqe_fetch + m.payload_read;
    let visible = fetched + m.tx_engine(64) + one_packet_wire(64) + m.rx_dma_write + m.cqe_write;
    assert_eq!(first, visible);
    // One by one: a doorbell per WR, and the first WR's NIC work starts after its own.
    let (cpu_each, first_each, _) = run(false);
    assert_eq!(cpu_each, at(m.turn + (m.post_send_wr + m.doorbell) * K));
    let first_rung = at(m.turn + m.post_send_cost(1));
    assert_eq!(
        first_each,
        first_rung + m.wqe_fetch + m.payload_read + (visible - fetched)
    );
}

#[test]
fn the_cpu_clock_serialises_a_turns_calls_and_holds_the_next_turn() {
    let m = test_costs();
    let mut p = pair(m.clone(), 0);
    let (qb, b) = (p.qps[1], p.mrs[1]);
    let mut wcs = Vec::new();
    let times = turn(&mut p.sim, 1, |t| {
        let mut times = vec![t.cpu_time()];
        t.post_recv(qb, &recv(1, &b, 4096)).unwrap();
        times.push(t.cpu_time());
        t.post_recv(qb, &recv(2, &b, 4096)).unwrap();
        times.push(t.cpu_time());
        assert_eq!(t.poll_cq(&mut wcs, 16), 0);
        times.push(t.cpu_time());
        t.app_messages(2, 3);
        times.push(t.cpu_time());
        times
    });
    let expect = [
        at(m.turn),
        at(m.turn + m.post_recv_wr),
        at(m.turn + m.post_recv_wr + m.post_recv_wr),
        at(m.turn + m.post_recv_wr + m.post_recv_wr + m.poll_call),
        at(m.turn + m.post_recv_wr + m.post_recv_wr + m.poll_call + m.app_cost(2, 3)),
    ];
    assert_eq!(times, expect);
    assert_eq!(p.sim.now(), Time::ZERO, "the CPU clock does not move time");
    // Outside a turn calls cost nothing.
    p.sim
        .transport(1)
        .post_recv(qb, &recv(3, &b, 4096))
        .unwrap();
    assert_eq!(p.sim.transport(1).cpu_time(), expect[4]);
    // A wake asked for now comes when the CPU is free, not before.
    p.sim.set_wake(1, Time::ZERO);
    let mut ready = Vec::new();
    assert!(p.sim.advance(&mut ready));
    assert_eq!((ready.as_slice(), p.sim.now()), (&[1][..], expect[4]));
}

#[test]
fn a_completion_arriving_while_the_cpu_is_busy_waits_for_it() {
    let m = HostModel {
        turn: Span::from_us(20),
        ..test_costs()
    };
    let mut p = pair(m.clone(), 1);
    let w = send(&p.mrs[0], 64);
    // Posted outside a turn: no CPU cost on host 0, the NIC's latencies still apply.
    p.sim.transport(0).post_send(p.qps[0], &w).unwrap();
    // Host 1 starts a 20 µs turn at 0; the receive is visible long before it ends.
    turn(&mut p.sim, 1, |_| {});
    let visible = m.wqe_fetch
        + m.payload_read
        + m.tx_engine(64)
        + one_packet_wire(64)
        + m.rx_dma_write
        + m.cqe_write;
    assert!(visible < m.turn);
    let mut ready = Vec::new();
    assert!(p.sim.advance(&mut ready));
    assert_eq!((ready.as_slice(), p.sim.now()), (&[1][..], at(m.turn)));
    let mut wcs = Vec::new();
    assert_eq!(p.sim.transport(1).poll_cq(&mut wcs, 16), 1);
}

#[test]
fn a_completion_is_polled_only_once_its_cqe_is_written() {
    let m = test_costs();
    let mut p = pair(m.clone(), 1);
    let w = send(&p.mrs[0], 64);
    turn(&mut p.sim, 0, |t| t.post_send(p.qps[0], &w).unwrap());
    let mut ready = Vec::new();
    assert!(p.sim.advance(&mut ready));
    let visible = at(m.turn
        + m.post_send_cost(1)
        + m.wqe_fetch
        + m.payload_read
        + m.tx_engine(64)
        + one_packet_wire(64)
        + m.rx_dma_write
        + m.cqe_write);
    assert_eq!((ready.as_slice(), p.sim.now()), (&[1][..], visible));
    // The packet arrived rx-dma-write + cqe-write earlier: a poll then would have found
    // nothing (checked on a copy of the run that stops there).
    let mut early = pair(m.clone(), 1);
    turn(&mut early.sim, 0, |t| {
        t.post_send(early.qps[0], &w).unwrap()
    });
    early
        .sim
        .set_wake(1, visible - m.cqe_write - Span::from_ps(1));
    assert!(early.sim.advance(&mut ready));
    assert_eq!(ready, vec![1]);
    let mut wcs = Vec::new();
    assert_eq!(early.sim.transport(1).poll_cq(&mut wcs, 16), 0);
    assert!(early.sim.advance(&mut ready));
    assert_eq!((ready.as_slice(), early.sim.now()), (&[1][..], visible));
    assert_eq!(early.sim.transport(1).poll_cq(&mut wcs, 16), 1);
}

#[test]
fn packets_hold_the_transmit_engine_before_their_serialization() {
    let m = HostModel {
        profile: Cow::Borrowed("engine"),
        nic_tx_packet: Span::from_ns(100),
        nic_tx_byte: Span::from_ps(10),
        ..HostModel::IDEAL
    };
    // One 4096-byte SEND: 4 packets of 82 + 1024 B, which the switch forwards as they arrive.
    let run = |host: HostModel| {
        let mut p = pair(host, 1);
        let w = send(&p.mrs[0], 4096);
        p.sim.transport(0).post_send(p.qps[0], &w).unwrap();
        let seen = run(&mut p.sim);
        seen.iter().find(|s| s.host == 1).map(|s| s.at).unwrap()
    };
    let ideal = run(HostModel::IDEAL);
    // The last packet leaves after four engine times more; the switch's hop is unchanged.
    assert_eq!(run(m.clone()) - ideal, m.tx_engine(1024) * 4);
}

#[test]
fn an_all_zero_model_runs_exactly_as_the_ideal_one() {
    let zero = HostModel {
        profile: Cow::Borrowed("zero"),
        ..HostModel::IDEAL
    };
    let run = |host: HostModel| {
        let mut p = pair(host, 4);
        let wrs: Vec<_> = (0..4)
            .map(|_| wr(1, SendOpcode::Send, &p.mrs[0], 3000))
            .collect();
        turn(&mut p.sim, 0, |t| {
            t.app_messages(3, 3);
            t.post_send_chain(p.qps[0], &wrs).unwrap();
        });
        let seen: Vec<_> = run(&mut p.sim)
            .iter()
            .map(|s| (s.host, s.at, s.wc.wr_id))
            .collect();
        (seen, p.sim.trace_hash())
    };
    assert_eq!(run(zero), run(SimConfig::default().host));
}

#[test]
fn a_poll_that_leaves_visible_cqes_never_moves_the_clock_back() {
    // Eight receives complete on host 1 while it does not poll; it polls two at the end of
    // the run, when its CQEs have been visible for microseconds. The model then wakes host 1
    // for the CQEs left: at once, not at the (past) time they became visible. The poll is
    // outside a turn, so no CPU time holds the wake until later.
    let mut p = pair(test_costs(), 8);
    let wrs: Vec<_> = (0..8).map(|_| send(&p.mrs[0], 64)).collect();
    turn(&mut p.sim, 0, |t| {
        t.post_send_chain(p.qps[0], &wrs).unwrap()
    });
    let mut ready = Vec::new();
    while p.sim.advance(&mut ready) {}
    let end = p.sim.now();
    let mut wcs = Vec::new();
    assert_eq!(p.sim.transport(1).poll_cq(&mut wcs, 2), 2);
    assert!(p.sim.advance(&mut ready));
    assert_eq!((ready.as_slice(), p.sim.now()), (&[1][..], end));
    assert_eq!(p.sim.transport(1).poll_cq(&mut wcs, 16), 6);
    assert!(!p.sim.advance(&mut ready));
    assert_eq!(p.sim.now(), end);
}

/// When host 1 sees the completion of one WR that host 0 posts at time 0, outside a turn, on
/// a QP whose `max_inline_data` is `inline` (host 1's receive and host 0's READ target are
/// the pair's memory).
fn first_completion(host: HostModel, inline: u32, opcode: SendOpcode, len: u32) -> Time {
    let mut sim = sim_with(host);
    let caps = xrdma::QpCaps {
        max_inline_data: inline,
        ..xrdma::QpCaps::default()
    };
    let a = sim.transport(0).create_qp(caps).unwrap();
    let b = sim.transport(1).create_qp(caps).unwrap();
    sim.transport(0).connect_qp(a.qpn, &b).unwrap();
    sim.transport(1).connect_qp(b.qpn, &a).unwrap();
    let src = patterned(&mut sim, 0, 4096, 1);
    let dst = patterned(&mut sim, 1, 4096, 2);
    sim.transport(1)
        .post_recv(b.qpn, &recv(0, &dst, 4096))
        .unwrap();
    let mut w = wr(1, opcode, &src, len);
    w.remote_addr = dst.addr;
    w.rkey = dst.rkey;
    sim.transport(0).post_send(a.qpn, &w).unwrap();
    let seen = run(&mut sim);
    let on = if opcode == SendOpcode::RdmaRead { 0 } else { 1 };
    seen.iter().find(|s| s.host == on).map(|s| s.at).unwrap()
}

#[test]
fn an_inline_send_skips_the_payload_read_and_a_read_has_none() {
    // As the verbs backend posts: a send of 1..=max_inline_data bytes goes inline (the NIC
    // takes the payload from the WQE), so the NIC reads no payload from host memory.
    let m = test_costs();
    let free_read = HostModel {
        payload_read: Span::ZERO,
        ..m.clone()
    };
    let send = SendOpcode::Send;
    assert_eq!(
        first_completion(m.clone(), 0, send, 64) - first_completion(m.clone(), 220, send, 64),
        m.payload_read
    );
    assert_eq!(
        first_completion(m.clone(), 220, send, 64),
        first_completion(free_read.clone(), 0, send, 64)
    );
    // One byte above the limit: read from memory.
    assert_eq!(
        first_completion(m.clone(), 220, send, 221),
        first_completion(m.clone(), 0, send, 221)
    );
    // A READ request carries no payload of the requester's, inline or not.
    let read = SendOpcode::RdmaRead;
    assert_eq!(
        first_completion(m.clone(), 0, read, 64),
        first_completion(free_read, 0, read, 64)
    );
}

#[test]
fn connectx6_verbs_ping_reads_its_published_latency_on_a_short_wire() {
    // `ib_send_lat`'s loop on the connectx6 profile: 64 B SENDs posted inline (perftest's
    // default below its inline size), the receive reposted before the reply, no middleware:
    // the driver's turn and the application cost nothing. Zero link delay: the wire is the
    // two serializations of a 146-byte packet (82 B of headers) through the switch.
    let m = HostModel {
        turn: Span::ZERO,
        app_recv_message: Span::ZERO,
        app_send_message: Span::ZERO,
        ..xrdma_sim::profiles::CONNECTX6
    };
    let cfg = SimConfig {
        host: m.clone(),
        link_delay: Span::ZERO,
        ..SimConfig::default()
    };
    let caps = xrdma::QpCaps {
        max_inline_data: 220,
        ..xrdma::QpCaps::default()
    };
    let starts = ping_pong_on(cfg, caps, 8);
    let costs = sum(&[
        m.rx_dma_write,
        m.cqe_write,
        m.poll_cost(1),
        m.post_recv_wr,
        m.post_send_cost(1),
        m.wqe_fetch,
    ]);
    assert_eq!(costs, Span::from_ns(630));
    let wire = Span::from_ps(2 * 146 * PS_PER_BYTE_100G);
    for w in starts.windows(2) {
        assert_eq!(w[1] - w[0], costs + wire, "{starts:?}");
    }
    // 0.65 µs a hop, the published 0.6 µs and the reposted receive.
    assert_eq!((costs + wire).as_ps(), 653_360);
}
