//! The named host profiles: [`HostModel::IDEAL`] (`ideal`, the default), [`CONNECTX6`]
//! (`connectx6`) and [`RXE_GUEST`] (`rxe-guest`). A scenario picks one with
//! `sim: { host: NAME }` and may override any cost with its key.
//!
//! Every profile writes every cost out, each with its source. Where a source gives a total
//! and not its parts, the profile states the equation its costs satisfy (a test checks it), so
//! a refit changes the parts and keeps the equation, or states a new one.

use super::HostModel;
use std::borrow::Cow;
use xrdma::Span;

/// A ConnectX-6-class NIC on a server CPU, busy polling, from published figures.
///
/// Sources:
/// - NVIDIA, ConnectX-6 VPI adapter cards user manual, "Introduction" (and the ConnectX-6 VPI
///   product brief): "sub-600ns latency and 215 million messages per second". The ConnectX-6
///   EN (Ethernet) product brief quotes sub-0.8 µs.
/// - The description of XRDMA this project follows (DESIGN.md: "0.6 µs end to end on
///   ConnectX-6, 3.2 µs per hop through XRDMA"); XRDMA is described in Ma et al., "X-RDMA:
///   Effective RDMA Middleware in Large-scale Production Environments", IEEE CLUSTER 2019
///   (doi:10.1109/CLUSTER.2019.8891004).
/// - Neugebauer et al., "Understanding PCIe performance for end host networking" (SIGCOMM
///   2018): the round trip of a small DMA read is about 0.5 µs on Xeon E5 hosts (up to about
///   1 µs on others); a posted write (MMIO to the NIC, DMA to host memory) takes about half
///   that one way.
/// - Kalia et al., "Design guidelines for high performance RDMA systems" (USENIX ATC 2016):
///   the doorbell is one MMIO write per chain (doorbell batching), cheaper per WR than the
///   WQEs themselves written by MMIO.
///
/// Calibration, one equation and two checks:
/// 1. The 0.6 µs is for small sends with inline data written through BlueFlame (the WQE and
///    payload in the doorbell's MMIO write), so no DMA read: the costs on such a SEND's path
///    sum to it, `post-send-wr + doorbell + wqe-fetch + rx-dma-write + cqe-write + poll-call
///    + poll-cqe = 0.6 µs`. The simulator posts a send of at most the QP's `max_inline_data`
///    inline as the verbs backend does (no `payload-read`).
/// 2. Check, verbs level: a 64 B SEND ping-pong whose receiver also reposts its receive WR
///    (as `ib_send_lat` does) has 0.63 µs of host costs per hop; on a star with zero link
///    delay (two 146-byte serializations of wire, 23 ns) a hop reads 0.65 µs (a test pins it).
/// 3. Check, not fitted: a hop of xrdma adds the driver's turn, the middleware's work on the
///    message at both ends and the empty poll that ends the turn; xrdma posts its 80-byte
///    frame inline (`inline_limit` 220 B). Its host costs per hop are 0.90 µs, and
///    `xrdma ping --host-profile connectx6` on the tools' fabric (host, switch, host; 1 µs
///    links, 2.03 µs of wire) reads 2.93 µs per hop, 8 % below the 3.2 µs per hop quoted for
///    XRDMA (a test keeps it within 25 %). Most of that is the tools' 2 µs of propagation: on
///    rack-length links the hop reads about 0.9 µs, so the 3.2 µs quoted (on links of unstated
///    length) leaves room for up to about 1.1 µs more of middleware and application work per
///    message at each end than the estimates below; a scenario that wants XRDMA's figure on
///    short links overrides `app-recv-message` and `app-send-message`. The CPU-side costs are
///    estimates (cycle counts at 3 GHz), stated per cost.
///
/// Kernel TCP (`stack: tcp`) on the same server: Linux with interrupts and an application
/// blocked in `epoll_wait`, no TSO or GRO (the simulator sends MSS-sized segments). Sources:
/// Cai et al., "Understanding Host Network Stack Overheads" (SIGCOMM 2021): the copy between
/// user and kernel is the largest per-byte cost, and one core receives about 42 Gb/s with
/// every offload on, about half of its cycles copying, so about 10 GB/s of copy per core;
/// without TSO and GRO the per-segment work dominates. Belay et al., "IX: A Protected
/// Dataplane Operating System for High Throughput and Low Latency" (OSDI 2014): Linux's
/// small-message latency is several times a polling dataplane's, from interrupts, wake-ups
/// and system calls. The per-call and per-segment costs are estimates (cycle counts at
/// 3 GHz), stated per cost; they put a 64 B hop of kernel TCP at
/// `tcp-write-call + tcp-tx-segment + rx-dma-write + tcp-rx-segment + tcp-wakeup + turn +
/// tcp-read-call + app-recv-message + app-send-message + 160 × tcp-copy-byte = 9.77 µs` of
/// host time (a test checks it; the message, its 8-byte length and the 8-byte ACK frame of
/// the message before it go in one `writev` and come out in one `read`), plus the wire:
/// `xrdma ping`'s fabric makes it 11.8 µs, four times xrdma's 2.93 µs
/// (`scenarios/study/per-hop.yaml`). XRDMA's description quotes 80 µs per hop over TCP:
/// that is its RPC framework's, with hand-offs between threads; kernel TCP alone is a
/// fraction of it.
pub const CONNECTX6: HostModel = HostModel {
    profile: Cow::Borrowed("connectx6"),
    // Writing one 64-byte WQE (a cache line of stores, ~120 cycles at 3 GHz): estimate.
    post_send_wr: Span::from_ns(40),
    // The doorbell's write-combining flush and store fence (~180 cycles): estimate.
    doorbell: Span::from_ns(60),
    // A receive WQE (16 bytes of SGE and the doorbell record): estimate, below post-send-wr.
    post_recv_wr: Span::from_ns(30),
    // Reading the CQ's head entry from cache: estimate (~60 cycles).
    poll_call: Span::from_ns(20),
    // Parsing one 64-byte CQE and moving the consumer index: estimate (~60 cycles).
    poll_cqe: Span::from_ns(20),
    // The driver loop's own work per turn: estimate for a busy-polling loop.
    turn: Span::from_ns(50),
    // The middleware's and application's work per message (framing, sequence numbers, the
    // callback): estimate for a cache-warm small message; the XRDMA description's 3.2 µs per
    // hop against 0.6 µs end to end bounds a middleware's whole per-hop cost at 2.6 µs.
    app_recv_message: Span::from_ns(100),
    app_send_message: Span::from_ns(100),
    // A `writev` on a socket: the system call's entry and exit with today's mitigations,
    // the socket lock, `tcp_sendmsg` allocating the skb (~3000 cycles): estimate.
    tcp_write_call: Span::from_ns(1_000),
    // A `read`: the system call, `tcp_recvmsg`, freeing the skb (~2400 cycles): estimate.
    tcp_read_call: Span::from_ns(800),
    // About 10 GB/s of copy per core (Cai et al. 2021, above).
    tcp_copy_byte: Span::from_ps(100),
    // TCP and IP output, the qdisc and the driver's descriptor and doorbell per segment
    // (~3000 cycles): estimate.
    tcp_tx_segment: Span::from_ns(1_000),
    // The interrupt, the NAPI poll, IP and TCP input per segment without GRO (~4500
    // cycles): estimate.
    tcp_rx_segment: Span::from_ns(1_500),
    // Waking the thread in `epoll_wait`: the scheduler, the context switch and the core
    // leaving a shallow idle state: estimate.
    tcp_wakeup: Span::from_ns(5_000),
    // The BlueFlame MMIO write crossing PCIe to the NIC: about half a 0.4–0.5 µs round trip
    // (Neugebauer et al. 2018).
    wqe_fetch: Span::from_ns(200),
    // One small DMA read round trip (Neugebauer et al. 2018: about 0.5 µs); only for a
    // payload that is not inline.
    payload_read: Span::from_ns(500),
    // Packet processing is pipelined with the wire: ConnectX-6 sends up to 215 million
    // messages/s (product brief), 4.7 ns per packet, overlapped with serialization.
    nic_tx_packet: Span::ZERO,
    nic_tx_byte: Span::ZERO,
    // The payload's posted DMA write to host memory: about half a PCIe round trip.
    rx_dma_write: Span::from_ns(200),
    // The CQE's DMA write, ordered behind the data in the same stream: estimate, the
    // remainder of the 0.6 µs (see the equation above).
    cqe_write: Span::from_ns(60),
};

/// Soft-RoCE (rxe) in the project's qemu TCG guest, busy polling, fitted to the figures
/// measured there. rxe does in software what a NIC does in hardware, so its "NIC" costs are
/// the guest CPU's: the kernel's requester, responder and completer tasks.
///
/// Sources (DESIGN.md §6 and `ci/softroce/`): perftest on an unloaded host, one rxe device in
/// loopback (`ci/softroce/perftest.sh`): `ib_write_lat` 64 B typical 9.2 µs, `ib_send_lat`
/// 64 B typical 10.5 µs, `ib_write_bw` 64 KiB 75–80 MB/s (perftest's MB, 2^20 bytes); and a
/// later run of `ci/softroce/perftest.sh` then `ci/softroce/figures.sh` in one guest boot on a
/// busier host (every latency about 2.6 times slower): `ib_send_lat` typical 27.51 µs,
/// `xrdma ping --backend verbs` with its ends in two processes 38.01 µs (1.38 times), in one
/// process 45.40 µs. The simulator gives each host its own CPU, as two processes have.
///
/// Calibration, four equations, each a loopback figure: the loopback has no wire, so these
/// are the hosts' costs alone, and the simulator's links add their own time on top (2.03 µs
/// of `xrdma ping`'s half round trip on the tools' fabric):
/// 1. `ib_write_lat` (the receiver polls the last byte, no completion; perftest posts the
///    64 B inline, so no `payload-read`): `post-send-wr + doorbell + wqe-fetch +
///    nic-tx-packet + 64 × nic-tx-byte + rx-dma-write = 9.2 µs`;
/// 2. `ib_send_lat`: (1) `+ cqe-write + poll-call + poll-cqe + post-recv-wr = 10.5 µs` (the
///    receiver polls the completion and reposts its receive before it replies);
/// 3. `ib_write_bw`, bound by the sender's per-packet work at rxe's 1024-byte MTU:
///    `nic-tx-packet + 1024 × nic-tx-byte = 1024 B / 77.5 MB/s ≈ 12.6 µs`;
/// 4. a hop of `xrdma ping` (two processes) takes 1.38 times `ib_send_lat`'s, 14.5 µs on
///    (2)'s scale: (2) `+ turn + poll-call + app-recv-message + app-send-message + 16 ×
///    nic-tx-byte = 14.5 µs` (the driver's turn, the empty poll that ends it, the middleware's
///    work on the message in and the reply out, the 16-byte xrdma header; the 80-byte frame
///    is inline too).
///
/// `xrdma ping --host-profile rxe-guest` then reads 16.53 µs: (4) and the tools' 2.03 µs of
/// wire, 14 % above xrdma's own loopback figure on (2)'s scale. How each equation's total
/// is split among its costs is a judgement, stated per cost; a fit to more measurements
/// (per-size latencies separate `nic-tx-byte` from `nic-tx-packet`) should replace it. TCG
/// speed varies with the host's load: fit to one run's figures at a time, and take ratios
/// within one guest boot. Left out: in loopback rxe's packet work runs on the same vCPUs as
/// the application, which a NIC of its own cannot show; the busier run measured
/// `xrdma bw` at 0.70 times `ib_write_bw`, where the simulator's bw reads `ib_write_bw`'s.
pub const RXE_GUEST: HostModel = HostModel {
    profile: Cow::Borrowed("rxe-guest"),
    // Writing the WQE into the queue shared with the kernel (librxe): part of (1).
    post_send_wr: Span::from_ns(300),
    // librxe rings by a system call into the kernel (post_send's command write): part of (1).
    doorbell: Span::from_ns(1_500),
    // A receive WQE into the shared queue, no system call: as post-send-wr; part of (2).
    post_recv_wr: Span::from_ns(300),
    // Reading the shared CQ ring from user space: part of (2), and once more in (4).
    poll_call: Span::from_ns(300),
    poll_cqe: Span::from_ns(200),
    // The driver loop per turn (its timers, the event queue): the rest of (4) after the
    // middleware's share.
    turn: Span::from_ns(540),
    // The middleware's work per message at each end (framing, sequence numbers, the copy
    // through the staging ring, the event to the application): most of (4), split evenly.
    app_recv_message: Span::from_ns(1_500),
    app_send_message: Span::from_ns(1_500),
    // The requester task scheduled and reading the WQE, with an inline payload in it: the
    // rest of (1).
    wqe_fetch: Span::from_ns(2_400),
    // Setting up the copy from the MR into the packet buffer, per WR whose payload is not
    // inline: in none of (1)-(4); a judgement, as the requester's own WQE read above.
    payload_read: Span::from_ns(1_200),
    // Building one packet (headers, the software ICRC's setup, the netdev transmit) and
    // per byte (the copy and the CRC32): (3), split so that (1) leaves room for the rest.
    nic_tx_packet: Span::from_ns(2_360),
    nic_tx_byte: Span::from_ns(10),
    // The responder task: checking the packet and copying the payload into the MR: part of (1).
    rx_dma_write: Span::from_ns(2_000),
    // The completer posting the CQE into the shared ring: the rest of (2).
    cqe_write: Span::from_ns(500),
    // The guest's kernel TCP is not fitted yet: it costs nothing here, and a TCP run with
    // this profile says so (a warning).
    tcp_write_call: Span::ZERO,
    tcp_read_call: Span::ZERO,
    tcp_copy_byte: Span::ZERO,
    tcp_tx_segment: Span::ZERO,
    tcp_rx_segment: Span::ZERO,
    tcp_wakeup: Span::ZERO,
};

/// Every built-in profile, the default first.
pub const PROFILES: &[HostModel] = &[HostModel::IDEAL, CONNECTX6, RXE_GUEST];

#[cfg(test)]
mod tests {
    use super::*;

    fn sum(ts: &[Span]) -> Span {
        ts.iter().fold(Span::ZERO, |a, &b| a + b)
    }

    #[test]
    fn names_are_unique_and_each_resolves() {
        for p in PROFILES {
            assert_eq!(HostModel::from_profile(p.name()).unwrap(), *p);
            p.validate().unwrap();
        }
        assert_eq!(PROFILES[0], HostModel::default());
        assert!(!CONNECTX6.is_ideal() && !RXE_GUEST.is_ideal());
    }

    #[test]
    fn connectx6_inline_path_sums_to_the_published_end_to_end_latency() {
        let c = &CONNECTX6;
        let inline_path = sum(&[
            c.post_send_wr,
            c.doorbell,
            c.wqe_fetch,
            c.rx_dma_write,
            c.cqe_write,
            c.poll_call,
            c.poll_cqe,
        ]);
        assert_eq!(inline_path, Span::from_ns(600));
    }

    #[test]
    fn connectx6_kernel_tcp_hop_sums_to_its_stated_host_time() {
        let c = &CONNECTX6;
        // A 64 B message, its length word and the ACK frame before it: 80 B in one segment.
        let hop = sum(&[
            c.tcp_write_cost(80),
            c.tcp_tx_segment,
            c.rx_dma_write,
            c.tcp_rx_segment,
            c.tcp_wakeup,
            c.turn,
            c.tcp_read_cost(80),
            c.app_cost(1, 1),
        ]);
        assert_eq!(hop, Span::from_ns(9_766));
    }

    #[test]
    fn rxe_guest_satisfies_its_four_equations() {
        let r = &RXE_GUEST;
        let write_lat = sum(&[
            r.post_send_wr,
            r.doorbell,
            r.wqe_fetch,
            r.tx_engine(64),
            r.rx_dma_write,
        ]);
        assert_eq!(write_lat, Span::from_ns(9_200));
        let send_lat = write_lat + r.cqe_write + r.poll_cost(1) + r.post_recv_wr;
        assert_eq!(send_lat, Span::from_ns(10_500));
        let xrdma_hop = send_lat + r.turn + r.poll_cost(0) + r.app_cost(1, 1) + r.nic_tx_byte * 16;
        assert_eq!(xrdma_hop, Span::from_ns(14_500));
        // 1024 B per packet at the engine's pace, in perftest's MB/s (2^20 B/s): 75–80.
        let mbps = 1024.0 / r.tx_engine(1024).as_us_f64() * 1e6 / f64::from(1 << 20);
        assert!((75.0..=80.0).contains(&mbps), "{mbps} MB/s");
    }
}
