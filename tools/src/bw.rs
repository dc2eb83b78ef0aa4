//! `xrdma bw`: one-way streaming throughput through xrdma, reported like `ib_write_bw`.
//!
//! The sender (host 0) keeps [`TX_DEPTH`] messages handed to xrdma and not yet ACKed, so the
//! send window is never starved; the receiver (host 1) takes every message. Throughput is
//! `iters · size` payload bytes over the time from the first send to the ACK of the last
//! message, as `ib_write_bw` divides the bytes by the time from its first post to its last
//! completion. [`run`] puts both ends in one process; [`serve`] and [`connect`] split them over
//! two processes like `ib_write_bw`'s server and client ([`super::remote`]). perftest's
//! "MB/sec" is MiB/s (2^20 bytes per second); bits per second are SI.

use super::remote::{self, Agreement};
use super::{connect_pair, drive};
use anyhow::{bail, Result};
use bytes::Bytes;
use std::net::SocketAddr;
use std::time::Duration;
use xrdma::driver::Application;
use xrdma::{Config, ConnId, Endpoint, Event, LocalMemory, SendBuffer, Time};
use xrdma_runner::fabric::Fabric;

/// Messages kept outstanding by the sender: perftest's default `--tx-depth` for bandwidth
/// tests (128).
pub const TX_DEPTH: u32 = 128;

/// What to measure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BwOptions {
    /// Message size, bytes.
    pub size: u64,
    /// Messages sent.
    pub iters: u32,
    /// Pin the send window at this many bytes (`initial-window` = `max-window`, not
    /// adaptive); `None`: xrdma's default window (64 KiB growing to 256 KiB while the RTT stays
    /// within `target-delay` of its minimum).
    pub window: Option<u64>,
}

impl Default for BwOptions {
    /// 64 KiB messages (the figure `ib_write_bw -s 65536` is compared with), 5000 of them
    /// (perftest's default iteration count for bandwidth tests).
    fn default() -> Self {
        BwOptions {
            size: 64 << 10,
            iters: 5000,
            window: None,
        }
    }
}

/// What a bandwidth run measured.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BwReport {
    /// Message size, bytes.
    pub size: u64,
    /// Messages sent and ACKed.
    pub iters: u32,
    /// From the first send to the last ACK, ps.
    pub elapsed_ps: u64,
    /// Payload bytes per second.
    pub bytes_per_second: f64,
    /// The sender's connection counters at the end: its window (now, smallest, decreases on
    /// delay and ECN) and RTTs, which say whether the window held the stream back.
    pub sender: xrdma::ConnStats,
}

impl BwReport {
    /// Throughput in perftest's MB/sec (MiB/s).
    pub fn mib_per_second(&self) -> f64 {
        self.bytes_per_second / f64::from(1u32 << 20)
    }

    /// Throughput in Gb/s (10^9 bits per second).
    pub fn gbps(&self) -> f64 {
        self.bytes_per_second * 8.0 / 1e9
    }

    /// Messages per second, in millions (perftest's `MsgRate[Mpps]`).
    pub fn mpps(&self) -> f64 {
        self.bytes_per_second / self.size as f64 / 1e6
    }

    /// The header line of [`BwReport::row`].
    pub fn header() -> &'static str {
        " #bytes     #iterations    BW average[MB/sec]    BW average[Gb/sec]    MsgRate[Mpps]"
    }

    /// The sender's window and RTTs over the run, one line: a window that shrank far below
    /// the bandwidth-delay product on delay decreases is what held the stream back.
    pub fn window_line(&self) -> String {
        let s = &self.sender;
        format!(
            "sender window: {} B at the end, {} B smallest, {} decreases ({} on delay, {} ECN \
             echoes); RTT {:.1} us smallest, {:.1} us smoothed",
            s.window,
            s.smallest_window,
            s.window_decreases,
            s.window_delay_decreases,
            s.ecn_echoes,
            s.min_rtt_ps as f64 / 1e6,
            s.srtt_ps as f64 / 1e6
        )
    }

    /// One data line under [`BwReport::header`].
    pub fn row(&self) -> String {
        format!(
            " {:<10} {:<14} {:<21.2} {:<21.3} {:.6}",
            self.size,
            self.iters,
            self.mib_per_second(),
            self.gbps(),
            self.mpps()
        )
    }
}

struct Streamer {
    conn: ConnId,
    payload: Bytes,
    total: u32,
    sent: u32,
    acked: u32,
    first: Option<Time>,
    last_ack: Option<Time>,
    errors: Vec<String>,
}

/// The one message `bw` sends again and again, as `ib_write_bw` sends one buffer: on a device,
/// a large one lies in the send arena and is written by RDMA in place, with no staging copy
/// ([`LocalMemory::send_buffer`]).
fn payload<F: Fabric>(fabric: &mut F, cfg: &Config, size: u64) -> Bytes {
    let len = size as usize;
    let mut b = (size > cfg.eager_limit)
        .then(|| fabric.host(0).send_buffer(len))
        .flatten()
        .unwrap_or_else(|| SendBuffer::new(len));
    b.fill(0xA5);
    b.freeze()
}

impl Streamer {
    fn new(conn: ConnId, opts: &BwOptions, payload: Bytes) -> Self {
        Streamer {
            conn,
            payload,
            total: opts.iters,
            sent: 0,
            acked: 0,
            first: None,
            last_ack: None,
            errors: Vec::new(),
        }
    }
}

impl Application for Streamer {
    fn on_event(&mut self, now: Time, _ep: &mut Endpoint, event: Event) {
        match event {
            Event::Sent { .. } => {
                self.acked += 1;
                self.last_ack = Some(now);
            }
            Event::SendFailed { error, .. } | Event::ConnectionFailed { error, .. } => {
                self.errors.push(error.to_string())
            }
            // Nothing else concerns this tool, nor any kind of event the core adds later.
            _ => {}
        }
    }

    fn on_turn(&mut self, now: Time, ep: &mut Endpoint) {
        while self.errors.is_empty() && self.sent < self.total && self.sent - self.acked < TX_DEPTH
        {
            match ep.send(now, self.conn, self.payload.clone()) {
                Ok(_) => {
                    self.sent += 1;
                    self.first.get_or_insert(now);
                }
                Err(e) => self.errors.push(e.to_string()),
            }
        }
    }

    fn next_wake(&self) -> Option<Time> {
        None
    }
}

#[derive(Default)]
struct Sink {
    messages: u64,
    bytes: u64,
    errors: Vec<String>,
}

impl Application for Sink {
    fn on_event(&mut self, _now: Time, _ep: &mut Endpoint, event: Event) {
        match event {
            Event::Message { data, .. } => {
                self.messages += 1;
                self.bytes += data.len() as u64;
            }
            Event::ConnectionFailed { error, .. } => self.errors.push(error.to_string()),
            _ => {}
        }
    }

    fn on_turn(&mut self, _now: Time, _ep: &mut Endpoint) {}

    fn next_wake(&self) -> Option<Time> {
        None
    }
}

/// The endpoint configuration of a bandwidth run: [`Config::default`], with the window pinned
/// at `window` bytes when given.
pub fn config(window: Option<u64>) -> Config {
    let mut cfg = Config::default();
    if let Some(w) = window {
        cfg.initial_window = w;
        cfg.max_window = w;
        cfg.min_window = cfg.min_window.min(w);
        cfg.adaptive_window = false;
    }
    cfg
}

/// Stream `opts.iters` messages of `opts.size` bytes from host 0 to host 1 of `fabric` over
/// one xrdma connection configured by [`config`].
///
/// # Errors
/// Setup failures, a connection failure, a message that did not arrive whole, or a fabric
/// that stopped first.
pub fn run<F: Fabric>(fabric: &mut F, opts: &BwOptions) -> Result<BwReport> {
    check(opts)?;
    let cfg = config(opts.window);
    let mut pair = connect_pair(fabric, &cfg)?;
    let payload = payload(fabric, &cfg, opts.size);
    let mut tx = Streamer::new(pair.conns[0], opts, payload);
    let mut rx = Sink::default();
    drive(fabric, &mut pair, &mut tx, &mut rx, |t, r| {
        !t.errors.is_empty() || !r.errors.is_empty() || t.acked == t.total
    })?;
    if let Some(e) = tx.errors.first().or(rx.errors.first()) {
        bail!("bw failed: {e}");
    }
    let want = u64::from(opts.iters) * opts.size;
    if rx.messages != u64::from(opts.iters) || rx.bytes != want {
        bail!(
            "the receiver got {} messages, {} bytes; {} messages, {want} bytes were sent",
            rx.messages,
            rx.bytes,
            opts.iters
        );
    }
    report(&tx, opts, pair.eps[0].stats(pair.conns[0]))
}

/// Refuses options no stream can run: no messages or empty ones, a message above xrdma's
/// largest ([`xrdma::MAX_MESSAGE_SIZE`]), a window below one fragment.
///
/// # Errors
/// The first of those, naming its flag.
pub fn check(opts: &BwOptions) -> Result<()> {
    if opts.iters == 0 || opts.size == 0 {
        bail!("--iters and --size must be at least 1");
    }
    if opts.size > xrdma::MAX_MESSAGE_SIZE {
        // Refused before the payload is allocated: a 3 GiB message took seconds to fill,
        // then failed at its send.
        bail!(
            "--size {} B is above xrdma's largest message, {} B (2 GiB)",
            opts.size,
            xrdma::MAX_MESSAGE_SIZE
        );
    }
    let least = xrdma_scenario::MIN_FRAGMENT_SIZE;
    if let Some(w) = opts.window.filter(|&w| w < least) {
        // A window below one fragment's worth makes every fragment that small: 64 KiB of
        // 1-byte WRITEs is a test of nothing but per-WR overhead.
        bail!("--window must be at least {least} bytes (1 KiB, the smallest fragment); got {w}");
    }
    Ok(())
}

/// The figures of a finished stream, with the sender's counters `sender`.
fn report(tx: &Streamer, opts: &BwOptions, sender: Option<xrdma::ConnStats>) -> Result<BwReport> {
    let Some(sender) = sender else {
        bail!("the sender's connection is gone");
    };
    let want = u64::from(opts.iters) * opts.size;
    let (Some(first), Some(last)) = (tx.first, tx.last_ack) else {
        bail!("nothing was sent");
    };
    let elapsed_ps = (last - first).as_ps();
    if elapsed_ps == 0 {
        bail!("the run took no time on the fabric's clock");
    }
    Ok(BwReport {
        size: opts.size,
        iters: opts.iters,
        elapsed_ps,
        bytes_per_second: want as f64 / (elapsed_ps as f64 / 1e12),
        sender,
    })
}

/// What both ends of a two-process bandwidth run must agree on (tool version aside).
const AGREEMENT: Agreement<'static> = Agreement {
    tool: "bw",
    terms: "xrdma bw: one connection, the client streams, the server takes every message",
};

/// What a bandwidth server received.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SinkReport {
    /// The client's bootstrap address.
    pub client: SocketAddr,
    /// Whole messages received.
    pub messages: u64,
    /// Their payload bytes.
    pub bytes: u64,
}

/// Serve one two-process bandwidth run on host 0 of `fabric`, like `ib_write_bw`'s server:
/// listen on `bind`, wait (up to `timeout`) for a client, take every message until the client
/// says `bye`.
///
/// # Errors
/// Bootstrap failures (no client, other version), setup failures, a connection failure, or
/// the fabric's run timeout.
pub fn serve<F: Fabric>(fabric: &mut F, bind: SocketAddr, timeout: Duration) -> Result<SinkReport> {
    let mut r = remote::accept(fabric, bind, timeout, AGREEMENT, Config::default())?;
    let mut sink = Sink::default();
    remote::serve_until_bye(fabric, &mut r, &mut sink, |s| !s.errors.is_empty())?;
    if let Some(e) = sink.errors.first() {
        bail!("bw server failed: {e}");
    }
    Ok(SinkReport {
        client: r.peer.addr(),
        messages: sink.messages,
        bytes: sink.bytes,
    })
}

/// The client of a two-process bandwidth run: connect to the server at `server` (retrying
/// until `timeout`), then stream `opts` from host 0 of `fabric` and time it on this process's
/// clock, from the first send to the ACK of the last message (the server's xrdma has then
/// taken every byte in order).
///
/// # Errors
/// As [`run`], and bootstrap failures (no server, other version, closed early).
pub fn connect<F: Fabric>(
    fabric: &mut F,
    server: SocketAddr,
    timeout: Duration,
    opts: &BwOptions,
) -> Result<BwReport> {
    check(opts)?;
    let cfg = config(opts.window);
    let mut r = remote::connect(fabric, server, timeout, AGREEMENT, cfg.clone())?;
    let payload = payload(fabric, &cfg, opts.size);
    let mut tx = Streamer::new(r.conn, opts, payload);
    remote::drive_one(fabric, &mut r.ep, &mut tx, |_, t| {
        !t.errors.is_empty() || t.acked == t.total
    })?;
    let bye = remote::bye(&mut r);
    if let Some(e) = tx.errors.first() {
        bail!("bw failed: {e}");
    }
    bye?;
    report(&tx, opts, r.ep.stats(r.conn))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim_fabric;
    use xrdma_runner::fabric::SimFabric;
    use xrdma_sim::SimConfig;

    #[test]
    fn a_window_below_one_fragment_is_refused_by_its_own_name() {
        for w in [0, 1, 1023] {
            let opts = BwOptions {
                size: 4096,
                iters: 1,
                window: Some(w),
            };
            let e = run(&mut sim_fabric().unwrap(), &opts).unwrap_err();
            assert_eq!(
                e.to_string(),
                format!(
                    "--window must be at least 1024 bytes (1 KiB, the smallest fragment); got {w}"
                )
            );
        }
    }

    #[test]
    fn streaming_64k_on_the_simulator_fills_the_link() {
        let r = run(
            &mut sim_fabric().unwrap(),
            &BwOptions {
                size: 64 << 10,
                iters: 500,
                window: None,
            },
        )
        .unwrap();
        // Each 64 KiB message goes by rendezvous: one 65536-byte RDMA WRITE with immediate,
        // i.e. 64 packets at a 1 KiB MTU with 82 B of headers each, plus RETH (16 B) on the
        // first and ImmDt (4 B) on the last: 65536 + 64·82 + 20 = 70804 B; and a sixteenth of
        // an RTS SEND (one announces sixteen messages: 82 B of headers + the 16-byte xrdma
        // header + 16·8 B of lengths + 4 B ImmDt = 230 B). The receiver's CTS (one per sixteen
        // messages) and ACK SENDs travel the other way; at least the CTSs' transport ACKs
        // (82 + 4 AETH = 86 B) come back on the data link: 70804 + 230/16 + 86/16 = 70823.75
        // wire bytes per 65536 payload bytes at least. On a 100 Gb/s link that caps goodput
        // at 100e9 · 65536 / 70823.75 = 92.53 Gb/s. RTSs go out up to 32 messages ahead, so
        // grants are back before the data needs them, and the window (64 KiB growing to
        // 256 KiB) exceeds the bandwidth-delay product (100 Gb/s · ~4.1 µs RTT ≈ 51 KB), so the
        // link stays busy: the run reaches the cap, less the xrdma ACK SENDs' transport ACKs
        // (at most one per message, 0.1 %), the first RTS/CTS round trip, one RTT of start-up
        // and the last ACK's trip (~12 µs of ~2.8 ms for 500 messages: under 1 %).
        let cap = 100e9 * 65536.0 / 70823.75 / 8.0;
        assert!(
            r.bytes_per_second <= cap,
            "{} > cap {cap}",
            r.bytes_per_second
        );
        assert!(
            r.bytes_per_second >= 0.98 * cap,
            "{} B/s, below 98 % of the {cap} B/s cap",
            r.bytes_per_second
        );
        assert!((r.gbps() - r.bytes_per_second * 8.0 / 1e9).abs() < 1e-9);
        assert!((r.mib_per_second() * 1_048_576.0 - r.bytes_per_second).abs() < 1e-3);
    }

    #[test]
    fn a_host_whose_transmit_engine_is_slower_than_the_link_sets_the_pace() {
        let host = crate::HostProfileArg {
            host_profile: Some("rxe-guest".into()),
        };
        let m = host.model().unwrap();
        let r = run(
            &mut host.fabric().unwrap(),
            &BwOptions {
                size: 64 << 10,
                iters: 40,
                window: None,
            },
        )
        .unwrap();
        // rxe's sender spends nic-tx-packet + 1024 × nic-tx-byte on every 1 KiB data packet
        // before its serialization (82 + 1024 B at 100 Gb/s); the RTS share, the transport
        // ACKs it sends back and the xrdma round trips take a few per cent more.
        let per_packet = m.tx_engine(1024) + xrdma::Span::serialization(1106, 100_000_000_000);
        let cap = 1024.0 / (per_packet.as_ps() as f64 * 1e-12);
        let b = r.bytes_per_second;
        assert!(
            b <= cap && b >= 0.95 * cap,
            "{b} B/s against a cap of {cap}"
        );
    }

    #[test]
    fn a_per_message_cost_above_the_wire_time_sets_the_message_rate() {
        // 4 KiB messages go eagerly: 4096 B and the 16-byte xrdma header in four full packets
        // and a last of 16 B with ImmDt, 4112 + 5·82 + 4 = 4526 B on the wire, 362 ns at
        // 100 Gb/s. A host that spends 2 µs of CPU on each message it sends, or on each one
        // delivered to it, handles one message per 2 µs, so the stream runs at 1 / 2 µs =
        // 0.5 M messages/s whichever end pays. The window is pinned at 1 MiB (256 messages,
        // above the sender's TX_DEPTH), so the window never holds a message back.
        let cost = xrdma::Span::from_us(2);
        let wire = xrdma::Span::serialization(4526, SimConfig::default().link_rate_bps);
        assert!(wire < cost);
        let stream = |key: &str, iters: u32| {
            let mut host = xrdma_sim::HostModel::IDEAL;
            host.set_cost(key, cost).unwrap();
            let fabric = SimFabric::new(SimConfig {
                host,
                ..SimConfig::default()
            });
            let opts = BwOptions {
                size: 4096,
                iters,
                window: Some(1 << 20),
            };
            run(&mut fabric.unwrap(), &opts).unwrap()
        };
        let per = |n: u64| cost.as_ps() * n;
        // The receiver pays: it takes the messages one per cost as they queue up in front of
        // it, so every further message adds exactly one cost to the stream.
        let (a, b) = (
            stream("app-recv-message", 1000),
            stream("app-recv-message", 2000),
        );
        assert_eq!(b.elapsed_ps - a.elapsed_ps, per(1000));
        // Past the CPU's share, the first message's trip and the last one's ACK's.
        assert!(a.elapsed_ps > per(1000) && a.elapsed_ps - per(1000) < 5_000_000);
        let rate = b.mpps() * 1e6 * cost.as_ps() as f64 * 1e-12;
        assert!((0.99..1.0).contains(&rate), "{rate} of 1 / cost");
        // The sender pays: its CPU works through the messages in turn, so the stream takes
        // more than iters × cost; after the CPU's last message, the batch of its last turn (at
        // most TX_DEPTH messages) leaves at the wire's pace and the ACK of the last comes back
        // (two 1 µs links each way and a few serializations: under 5 µs).
        let s = stream("app-send-message", 2000);
        let after = s.elapsed_ps - per(2000);
        assert!(
            s.elapsed_ps > per(2000) && after < (wire * u64::from(TX_DEPTH)).as_ps() + 5_000_000,
            "{} ps after 2000 × {cost}",
            after
        );
        let rate = s.mpps() * 1e6 * cost.as_ps() as f64 * 1e-12;
        assert!((0.98..1.0).contains(&rate), "{rate} of 1 / cost");
    }

    #[test]
    fn a_window_below_the_bandwidth_delay_product_caps_throughput() {
        // With the window pinned at 16 KiB, 64 KiB messages go out as 16 KiB fragments (a
        // fragment is never larger than the window) and at most 16 KiB of payload is in
        // flight. A fragment's round trip (data to the receiver, its ACK back) crosses four
        // 1 µs links, so throughput ≤ 16384 B / 4 µs = 4.096 GB/s, well under the link's
        // ~11.5 GB/s payload cap.
        let r = run(
            &mut sim_fabric().unwrap(),
            &BwOptions {
                size: 64 << 10,
                iters: 50,
                window: Some(16 << 10),
            },
        )
        .unwrap();
        assert!(
            r.bytes_per_second <= 16384.0 / 4e-6,
            "{}",
            r.bytes_per_second
        );
        let cfg = config(Some(16 << 10));
        assert_eq!((cfg.initial_window, cfg.max_window), (16 << 10, 16 << 10));
        assert!(!cfg.adaptive_window);
    }
}
