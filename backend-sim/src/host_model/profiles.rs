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
/// Calibration: NVIDIA quotes sub-0.6 µs end-to-end latency for ConnectX-6 (ConnectX-6 VPI
/// product brief); the description of XRDMA, the middleware this project models, quotes the
/// same 0.6 µs, with 3.2 µs per hop through XRDMA's own stack. Such figures are for small
/// sends with inline data written through BlueFlame (the WQE and payload in the doorbell's
/// MMIO write), so no DMA read: the costs on a small SEND's path other than the payload read
/// sum to it,
///
/// `post-send-wr + doorbell + wqe-fetch + rx-dma-write + cqe-write + poll-call + poll-cqe
/// = 0.6 µs`.
///
/// xrdma sends from registered memory through an SGE, so its NIC reads the payload:
/// `payload-read` is one PCIe DMA read round trip. Neugebauer et al., "Understanding PCIe
/// performance for end host networking" (SIGCOMM 2018) measure the round trip of a small
/// DMA read at about 0.5 µs on Xeon E5 hosts (up to about 1 µs on others). A PCIe posted
/// write (MMIO to the NIC, DMA to host memory) takes about half that round trip one way.
/// Kalia et al., "Design guidelines for high performance RDMA systems" (USENIX ATC 2016)
/// show the doorbell as one MMIO write per chain (doorbell batching), cheaper per WR than the
/// WQEs themselves written by MMIO; the CPU-side split below is an estimate within that.
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
    // The BlueFlame MMIO write crossing PCIe to the NIC: about half a 0.4–0.5 µs round trip
    // (Neugebauer et al. 2018).
    wqe_fetch: Span::from_ns(200),
    // One small DMA read round trip (Neugebauer et al. 2018: about 0.5 µs).
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

/// Soft-RoCE (rxe) in the project's qemu TCG guest, busy polling: a first version from the
/// figures measured there (`ci/softroce/perftest.sh` on an unloaded host: one rxe device in
/// loopback, so no wire), to be refitted. rxe does in software what a NIC does in hardware,
/// so its "NIC" costs are the guest CPU's: the kernel's requester, responder and completer
/// tasks.
///
/// Calibration, three equations (loopback: the simulator's links add their own time on top):
/// 1. `ib_write_lat` 64 B, typical 9.2 µs one way (the receiver polls the last byte, no
///    completion): `post-send-wr + doorbell + wqe-fetch + payload-read + nic-tx-packet +
///    64 × nic-tx-byte + rx-dma-write = 9.2 µs`;
/// 2. `ib_send_lat` 64 B, typical 10.5 µs: (1) `+ cqe-write + poll-call + poll-cqe =
///    10.5 µs`;
/// 3. `ib_write_bw` 64 KiB, about 75–80 MB/s (perftest's MB, 2^20 bytes) at rxe's 1024-byte
///    MTU, bound by the sender's per-packet work: `nic-tx-packet + 1024 × nic-tx-byte =
///    1024 B / 77.5 MB/s ≈ 12.6 µs`.
///
/// How each equation's total is split among its costs is a judgement, stated per cost; a fit
/// to more measurements (per-size latencies separate `nic-tx-byte` from `nic-tx-packet`) should
/// replace it. TCG speed varies with the host's load: later runs on a loaded host measured 2–5
/// times these latencies, so fit to one run's figures at a time.
pub const RXE_GUEST: HostModel = HostModel {
    profile: Cow::Borrowed("rxe-guest"),
    // Writing the WQE into the queue shared with the kernel (librxe): part of (1).
    post_send_wr: Span::from_ns(300),
    // librxe rings by a system call into the kernel (post_send's command write): part of (1).
    doorbell: Span::from_ns(1_500),
    // A receive WQE into the shared queue, no system call: as post-send-wr.
    post_recv_wr: Span::from_ns(300),
    // Reading the shared CQ ring from user space: part of (2).
    poll_call: Span::from_ns(300),
    poll_cqe: Span::from_ns(200),
    // The driver loop per turn and the middleware's per-message work under TCG: estimates
    // (a few hundred native cycles each, slowed as TCG slows the guest).
    turn: Span::from_ns(500),
    app_recv_message: Span::from_ns(500),
    app_send_message: Span::from_ns(500),
    // The requester task scheduled and reading the WQE: part of (1).
    wqe_fetch: Span::from_ns(1_200),
    // Setting up the copy from the MR into the packet buffer, per WR: the rest of (1).
    payload_read: Span::from_ns(1_200),
    // Building one packet (headers, the software ICRC's setup, the netdev transmit) and
    // per byte (the copy and the CRC32): (3), split so that (1) leaves room for the rest.
    nic_tx_packet: Span::from_ns(2_360),
    nic_tx_byte: Span::from_ns(10),
    // The responder task: checking the packet and copying the payload into the MR: part of (1).
    rx_dma_write: Span::from_ns(2_000),
    // The completer posting the CQE into the shared ring: the rest of (2).
    cqe_write: Span::from_ns(800),
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
    fn rxe_guest_satisfies_its_three_equations() {
        let r = &RXE_GUEST;
        let write_lat = sum(&[
            r.post_send_wr,
            r.doorbell,
            r.wqe_fetch,
            r.payload_read,
            r.tx_engine(64),
            r.rx_dma_write,
        ]);
        assert_eq!(write_lat, Span::from_ns(9_200));
        let send_lat = write_lat + r.cqe_write + r.poll_call + r.poll_cqe;
        assert_eq!(send_lat, Span::from_ns(10_500));
        // 1024 B per packet at the engine's pace, in perftest's MB/s (2^20 B/s): 75–80.
        let mbps = 1024.0 / r.tx_engine(1024).as_us_f64() * 1e6 / f64::from(1 << 20);
        assert!((75.0..=80.0).contains(&mbps), "{mbps} MB/s");
    }
}
