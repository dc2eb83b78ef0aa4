//! `xrdma ping`: message round trips through xrdma, reported like `ib_send_lat`.
//!
//! The client (host 0) sends one message; the server's application (host 1) echoes every
//! message it receives; the client takes the round-trip time when the echo is delivered and
//! sends the next message in the same turn. Like `ib_send_lat`, the reported latency is half
//! the round trip (perftest's latency tests report RTT/2 per iteration). The first `warmup`
//! round trips are not counted.
//!
//! [`run`] puts both ends in one process (hosts 0 and 1 of a fabric). [`serve`] and
//! [`connect`] split them over two processes, like `ib_send_lat`'s server and client: the
//! server listens on a TCP address, the client connects, the two swap their
//! [`xrdma::driver::ConnInfo`] through the bootstrap ([`super::remote`]) and the client
//! measures on its own clock; when it is done it says `bye` and both exit.

use super::remote::{self, Agreement};
use super::stats::LatencyStats;
use super::{connect_pair, drive};
use anyhow::{bail, Result};
use bytes::Bytes;
use std::net::SocketAddr;
use std::time::Duration;
use xrdma::driver::Application;
use xrdma::{Config, ConnId, Endpoint, Event, Time};
use xrdma_runner::fabric::Fabric;

/// What to measure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PingOptions {
    /// Message size, bytes.
    pub size: u64,
    /// Round trips measured.
    pub iters: u32,
    /// Round trips run first and not measured.
    pub warmup: u32,
}

impl Default for PingOptions {
    /// `ib_send_lat`'s defaults where they apply: 64 B isn't perftest's default size (2 B) but
    /// the size the figures compare; 10000 iterations; 1000 warm-up round trips.
    fn default() -> Self {
        PingOptions {
            size: 64,
            iters: 10_000,
            warmup: 1_000,
        }
    }
}

/// What a ping run measured.
#[derive(Clone, Debug, PartialEq)]
pub struct PingReport {
    /// Half round trips, ps, in the order measured.
    pub half_rtt_ps: Vec<u64>,
    /// Their statistics.
    pub stats: LatencyStats,
    /// Rounds of driver turns (each host one turn) per round trip, warm-up included: how
    /// often the fabric polled while a message was out.
    pub rounds_per_rtt: f64,
}

/// The client: one message in flight, timed from the turn that sends it to the turn that sees
/// its echo.
struct Client {
    conn: ConnId,
    payload: Bytes,
    total: u32,
    sent: u32,
    outstanding: Option<Time>,
    rtts: Vec<u64>,
    errors: Vec<String>,
}

impl Client {
    fn new(conn: ConnId, opts: &PingOptions) -> Self {
        Client {
            conn,
            payload: payload(opts.size),
            total: opts.warmup.saturating_add(opts.iters),
            sent: 0,
            outstanding: None,
            rtts: Vec::with_capacity((opts.warmup as usize).saturating_add(opts.iters as usize)),
            errors: Vec::new(),
        }
    }

    fn finished(&self) -> bool {
        !self.errors.is_empty() || (self.sent == self.total && self.outstanding.is_none())
    }
}

impl Application for Client {
    fn on_event(&mut self, now: Time, _ep: &mut Endpoint, event: Event) {
        match event {
            Event::Message { data, .. } => {
                let Some(at) = self.outstanding.take() else {
                    self.errors
                        .push("an echo arrived with no message out".into());
                    return;
                };
                if data != self.payload {
                    self.errors
                        .push(format!("echo {} differs from what was sent", self.sent));
                }
                self.rtts.push((now - at).as_ps());
            }
            Event::SendFailed { error, .. } | Event::ConnectionFailed { error, .. } => {
                self.errors.push(error.to_string())
            }
            // Nothing else concerns this tool, nor any kind of event the core adds later.
            _ => {}
        }
    }

    fn on_turn(&mut self, now: Time, ep: &mut Endpoint) {
        if self.outstanding.is_some() || self.sent == self.total || !self.errors.is_empty() {
            return;
        }
        match ep.send(now, self.conn, self.payload.clone()) {
            Ok(_) => {
                self.sent += 1;
                self.outstanding = Some(now);
            }
            Err(e) => self.errors.push(e.to_string()),
        }
    }

    fn next_wake(&self) -> Option<Time> {
        None
    }
}

/// The server: sends every message back on the connection it came on.
#[derive(Default)]
pub(super) struct Echo {
    pub(super) echoed: u64,
    pub(super) errors: Vec<String>,
}

impl Application for Echo {
    fn on_event(&mut self, now: Time, ep: &mut Endpoint, event: Event) {
        match event {
            Event::Message { conn, data, .. } => match ep.send(now, conn, data) {
                Ok(_) => self.echoed += 1,
                Err(e) => self.errors.push(e.to_string()),
            },
            Event::SendFailed { error, .. } | Event::ConnectionFailed { error, .. } => {
                self.errors.push(error.to_string())
            }
            // Nothing else concerns this tool, nor any kind of event the core adds later.
            _ => {}
        }
    }

    fn on_turn(&mut self, _now: Time, _ep: &mut Endpoint) {}

    fn next_wake(&self) -> Option<Time> {
        None
    }
}

/// The default bootstrap address of [`serve`] (`ib_send_lat` uses port 18515 as well).
pub const DEFAULT_BIND: &str = "0.0.0.0:18515";

/// What both ends of a two-process ping must agree on (tool version aside).
const AGREEMENT: Agreement<'static> = Agreement {
    tool: "ping",
    terms: "xrdma ping: one connection, default Config, echo server",
};

/// What a ping server did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServeReport {
    /// The client's bootstrap address.
    pub client: SocketAddr,
    /// Messages echoed.
    pub echoed: u64,
}

/// Serve one two-process ping on host 0 of `fabric`: listen on `bind`, wait (up to
/// `timeout`) for a client, connect one xrdma connection through the bootstrap, echo every
/// message until the client says `bye`.
///
/// # Errors
/// Bootstrap failures (no client, other version), setup failures, a connection failure, or
/// the fabric's run timeout.
pub fn serve<F: Fabric>(
    fabric: &mut F,
    bind: SocketAddr,
    timeout: Duration,
) -> Result<ServeReport> {
    let mut r = remote::accept(fabric, bind, timeout, AGREEMENT, Config::default())?;
    let mut echo = Echo::default();
    remote::serve_until_bye(fabric, &mut r, &mut echo, |e| !e.errors.is_empty())?;
    if let Some(e) = echo.errors.first() {
        bail!("ping server failed: {e}");
    }
    Ok(ServeReport {
        client: r.peer.addr(),
        echoed: echo.echoed,
    })
}

/// The client of a two-process ping: connect to the server at `server` (retrying until
/// `timeout`, the server may start later), set up the connection through the bootstrap and
/// run `opts` from host 0 of `fabric`, on this process's clock.
///
/// # Errors
/// As [`run`], and bootstrap failures (no server, other version, closed early).
pub fn connect<F: Fabric>(
    fabric: &mut F,
    server: SocketAddr,
    timeout: Duration,
    opts: &PingOptions,
) -> Result<PingReport> {
    if opts.iters == 0 {
        bail!("--iters must be at least 1");
    }
    let mut r = remote::connect(fabric, server, timeout, AGREEMENT, Config::default())?;
    let mut client = Client::new(r.conn, opts);
    let rounds = remote::drive_one(fabric, &mut r.ep, &mut client, |_, c| c.finished())?;
    // Tell the server we are done, whether or not the run went well.
    let bye = remote::bye(&mut r);
    if let Some(e) = client.errors.first() {
        bail!("ping failed: {e}");
    }
    bye?;
    report(&client, rounds, opts)
}

/// The payload of every ping: `size` bytes counting 0, 1, …, 255, 0, ….
fn payload(size: u64) -> Bytes {
    Bytes::from((0..size).map(|i| i as u8).collect::<Vec<u8>>())
}

/// Run `opts.warmup + opts.iters` round trips between hosts 0 and 1 of `fabric` over one xrdma
/// connection with the default [`Config`].
///
/// # Errors
/// Setup failures, a connection failure, a corrupted echo, or a fabric that stopped first.
pub fn run<F: Fabric>(fabric: &mut F, opts: &PingOptions) -> Result<PingReport> {
    if opts.iters == 0 {
        bail!("--iters must be at least 1");
    }
    let mut pair = connect_pair(fabric, &Config::default())?;
    let mut client = Client::new(pair.conns[0], opts);
    let mut server = Echo::default();
    let rounds = drive(fabric, &mut pair, &mut client, &mut server, |c, s| {
        c.finished() || !s.errors.is_empty()
    })?;
    if let Some(e) = client.errors.first().or(server.errors.first()) {
        bail!("ping failed: {e}");
    }
    report(&client, rounds, opts)
}

/// The figures of a finished client.
fn report(client: &Client, rounds: u64, opts: &PingOptions) -> Result<PingReport> {
    if client.rtts.len() < client.total as usize {
        bail!(
            "only {} of {} round trips finished",
            client.rtts.len(),
            client.total
        );
    }
    let half_rtt_ps: Vec<u64> = client.rtts[opts.warmup as usize..]
        .iter()
        .map(|&rtt| rtt / 2)
        .collect();
    let Some(stats) = LatencyStats::from_ps(opts.size, &half_rtt_ps) else {
        bail!("no round trip was measured");
    };
    let rounds_per_rtt = rounds as f64 / client.rtts.len().max(1) as f64;
    Ok(PingReport {
        half_rtt_ps,
        stats,
        rounds_per_rtt,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim_fabric;
    use xrdma_runner::fabric::SimFabric;
    use xrdma_sim::SimConfig;

    /// One direction of a ping on the default 2-host star (host → switch → host, 100 Gb/s,
    /// 1 µs per link, store and forward), for a message whose packets have wire sizes
    /// `packets` (bytes): the last bit arrives after 2·delay + ser(all packets) + ser(the
    /// largest packet) (the pipeline's second hop waits for that packet's second
    /// serialization). Ahead of each message its sender also puts the NIC's transport ACK of
    /// the message it just received on the wire (82 + 4 AETH = 86 B, ser = 6.88 ns); the xrdma
    /// ACK of that message travels in the reply's header, not as a packet of its own. The
    /// hosts take no virtual time to react, so RTT/2 equals one direction.
    fn one_way_ps(packets: &[u64]) -> u64 {
        let ser =
            |b: u64| xrdma::Span::serialization(b, SimConfig::default().link_rate_bps).as_ps();
        let total: u64 = packets.iter().sum();
        let largest = packets.iter().copied().max().unwrap_or(0);
        2 * 1_000_000 + ser(total) + ser(largest) + ser(86)
    }

    #[test]
    fn half_round_trip_of_64_bytes_on_the_simulator_is_the_wire_time() {
        let opts = PingOptions {
            size: 64,
            iters: 200,
            warmup: 10,
        };
        let r = run(&mut sim_fabric().unwrap(), &opts).unwrap();
        assert_eq!(r.half_rtt_ps.len(), 200);
        // One eager SEND with immediate of the 16-byte xrdma header + 64 B: one packet of
        // 82 (headers) + 80 + 4 (ImmDt) = 166 B. 2·1000 ns + 2·ser(166 B) (13.28 ns each) +
        // 6.88 ns = 2033.44 ns.
        let want = one_way_ps(&[166]);
        assert_eq!(want, 2_033_440);
        assert!(
            r.half_rtt_ps.iter().all(|&h| h == want),
            "{:?}",
            &r.half_rtt_ps[..5]
        );
        assert_eq!(r.stats.typical_us, 2.03344);
        assert_eq!(r.stats.stdev_us, 0.0);
    }

    #[test]
    fn a_host_profile_adds_each_hops_host_costs_to_the_half_round_trip() {
        let opts = PingOptions {
            size: 64,
            iters: 50,
            warmup: 5,
        };
        let ser = |b: u64| xrdma::Span::serialization(b, SimConfig::default().link_rate_bps);
        for name in ["connectx6", "rxe-guest"] {
            let host = crate::HostProfileArg {
                host_profile: Some(name.into()),
            };
            let m = host.model().unwrap();
            let r = run(&mut host.fabric().unwrap(), &opts).unwrap();
            // Each hop: the SEND of 16 + 64 B, its receive completion after the data's and
            // the CQE's DMA writes; the receiver's turn: its fixed cost, a poll returning the
            // CQE and the empty poll that ends the loop, the echo's work (one message in, one
            // out), one receive WR reposted, one SEND posted with its doorbell; then the
            // NIC's WQE fetch and transmit engine (the 80-byte frame is posted inline, so no
            // payload read). The ACK the receiving NIC sends at the message's arrival is gone
            // before the reply is fetched, so the ideal run's wait for its serialization is
            // not there.
            assert!(80 <= xrdma::Config::default().inline_limit);
            let hop = [
                m.rx_dma_write,
                m.cqe_write,
                m.turn,
                m.poll_cost(1),
                m.poll_cost(0),
                m.app_cost(1, 1),
                m.post_recv_wr,
                m.post_send_cost(1),
                m.wqe_fetch,
                m.tx_engine(80),
            ]
            .iter()
            .fold(xrdma::Span::ZERO, |a, &b| a + b);
            let want = xrdma::Span::from_ps(one_way_ps(&[166])) - ser(86) + hop;
            assert!(
                r.half_rtt_ps.iter().all(|&h| h == want.as_ps()),
                "{name}: {:?} != {want}",
                &r.half_rtt_ps[..5]
            );
        }
    }

    #[test]
    fn a_half_round_trip_is_the_ideal_one_plus_exactly_each_hops_costs() {
        // Every cost different, so a term missing from the sum or counted twice shows.
        let ns = xrdma::Span::from_ns;
        let m = xrdma_sim::HostModel {
            profile: "test".into(),
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
            nic_tx_byte: xrdma::Span::from_ps(54),
            rx_dma_write: ns(59),
            cqe_write: ns(61),
            // Kernel TCP's costs are not xrdma's: none of them may show in its hop.
            tcp_write_call: ns(67),
            tcp_read_call: ns(71),
            tcp_copy_byte: xrdma::Span::from_ps(73),
            tcp_tx_segment: ns(79),
            tcp_rx_segment: ns(83),
            tcp_wakeup: ns(89),
        };
        let opts = PingOptions {
            size: 64,
            iters: 100,
            warmup: 10,
        };
        let ideal = run(&mut sim_fabric().unwrap(), &opts).unwrap();
        let fabric = SimFabric::new(SimConfig {
            host: m.clone(),
            ..SimConfig::default()
        });
        let r = run(&mut fabric.unwrap(), &opts).unwrap();
        // Per hop, in order: the receiver's NIC writes the data and then the CQE; its turn
        // (the fixed cost, the poll that returns the CQE and the empty one that ends the
        // loop, the echo's work on one message in and one out, the receive WR reposted, the
        // reply's WR and doorbell); its NIC fetches the WQE with the 80-byte frame (the
        // 16-byte header and 64 B, posted inline: within `inline_limit`, so no payload read)
        // and runs it through the transmit engine. The ideal reply
        // waits for the serialization of the transport ACK its NIC sent at the arrival
        // (86 B); under the costs that ACK is long gone.
        let hop = [
            m.rx_dma_write,
            m.cqe_write,
            m.turn,
            m.poll_call + m.poll_cqe,
            m.poll_call,
            m.app_recv_message + m.app_send_message,
            m.post_recv_wr,
            m.post_send_wr + m.doorbell,
            m.wqe_fetch,
            m.nic_tx_packet + m.nic_tx_byte * 80,
        ]
        .iter()
        .fold(xrdma::Span::ZERO, |a, &b| a + b);
        let ack = xrdma::Span::serialization(86, SimConfig::default().link_rate_bps);
        assert_eq!(r.half_rtt_ps.len(), ideal.half_rtt_ps.len());
        for (with, without) in r.half_rtt_ps.iter().zip(&ideal.half_rtt_ps) {
            // Half of a round trip of two hops.
            assert_eq!(*with - *without, (hop - ack).as_ps(), "{with} - {without}");
        }
        assert_eq!(r.rounds_per_rtt, ideal.rounds_per_rtt);
    }

    #[test]
    fn each_profiles_ping_reads_what_its_calibration_claims() {
        // The figures each profile's doc (xrdma_sim::profiles) checks itself against.
        let opts = PingOptions {
            size: 64,
            iters: 20,
            warmup: 2,
        };
        let wire = one_way_ps(&[166]) as f64 / 1e6;
        let p50 = |name: &str| {
            let host = crate::HostProfileArg {
                host_profile: Some(name.into()),
            };
            run(&mut host.fabric().unwrap(), &opts)
                .unwrap()
                .stats
                .typical_us
        };
        // ConnectX-6: a hop through the tools' fabric against XRDMA's 3.2 µs per hop.
        let cx6 = p50("connectx6");
        assert!((cx6 / 3.2 - 1.0).abs() <= 0.25, "connectx6: {cx6} us");
        // Most of it is the tools' 2.03 µs of wire: with zero link delay the hop is its
        // 0.90 µs of host costs and two serializations of the 162-byte packet.
        let short = SimFabric::new(SimConfig {
            host: xrdma_sim::profiles::CONNECTX6,
            link_delay: xrdma::Span::ZERO,
            ..SimConfig::default()
        });
        let short = run(&mut short.unwrap(), &opts).unwrap().stats.typical_us;
        assert!(
            (short - (0.90 + 2.0 * 162.0 * 8e-5)).abs() < 1e-3,
            "{short} us"
        );
        // rxe in the guest: loopback has no wire, so the hop's costs alone against xrdma's
        // loopback ping, 14.5 µs on the unloaded run's scale; with the tools' wire on top.
        let rxe = p50("rxe-guest");
        assert!((rxe / 14.5 - 1.0).abs() <= 0.25, "rxe-guest: {rxe} us");
        assert!(
            ((rxe - wire) / 14.5 - 1.0).abs() < 0.01,
            "rxe-guest: {rxe} us"
        );
    }

    #[test]
    fn larger_messages_take_their_serialization_time() {
        // 4096 B (the eager limit) + the 16-byte header = 4112 B in one SEND with immediate:
        // 5 packets at a 1 KiB MTU, four of 82 + 1024 = 1106 B and a last of 82 + 16 + 4
        // (ImmDt) = 102 B: 4526 B. 2000 + ser(4526 B) 362.08 + ser(1106 B) 88.48 + 6.88 =
        // 2457.44 ns.
        let opts = PingOptions {
            size: 4096,
            iters: 20,
            warmup: 2,
        };
        let r = run(&mut sim_fabric().unwrap(), &opts).unwrap();
        let want = one_way_ps(&[1106, 1106, 1106, 1106, 102]);
        assert_eq!(want, 2_457_440);
        assert!(
            r.half_rtt_ps.iter().all(|&h| h == want),
            "{:?}",
            &r.half_rtt_ps[..5]
        );
    }
}
