//! `xrdma soak`: a long run that proves nothing leaks and nothing is lost.
//!
//! Two phases on one fabric, hosts 0 and 1:
//!
//! 1. **Messages**: host 0 streams `messages` messages to host 1 over one connection, sizes
//!    cycling through `sizes` (by default 64 B and 1 KiB eager, coalesced, and 8 KiB by
//!    rendezvous), at most `outstanding` queued or in flight at once. Each payload starts with
//!    its index (8 bytes, big-endian) and is filled with the index's low byte; the receiver
//!    checks every message's index, length and fill in arrival order.
//! 2. **Cycles**: `cycles` times, both sides close the connection (FIN each way), wait for
//!    [`xrdma::Event::Closed`], connect again through [`xrdma::driver::open`] (the QP from
//!    the endpoint's QP cache, the buffers of the closed connection) and send one message.
//!
//! [`EndpointResources`] of both endpoints are taken after the first cycle (everything warm)
//! and at the end: QPs created, QPs cached, MRs, registered bytes, spare buffers, landing
//! buffers in use and connection records (an ended connection's slot serves the next one)
//! must not grow.

use super::{connect_pair, drive, Pair};
use anyhow::{bail, Context, Result};
use bytes::Bytes;
use xrdma::driver::{self, Application};
use xrdma::{Config, ConnId, Endpoint, EndpointResources, Event, Time};
use xrdma_runner::fabric::Fabric;

/// What to soak.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SoakOptions {
    /// Messages streamed in phase 1.
    pub messages: u64,
    /// Message sizes, bytes, used in turn (each at least 8).
    pub sizes: Vec<u64>,
    /// Most messages queued or in flight at once.
    pub outstanding: u32,
    /// Close/connect cycles in phase 2.
    pub cycles: u32,
}

impl Default for SoakOptions {
    fn default() -> Self {
        SoakOptions {
            messages: 1_000_000,
            sizes: vec![64, 1024, 8192],
            outstanding: 256,
            cycles: 10_000,
        }
    }
}

/// What a soak found.
#[derive(Clone, Debug, PartialEq)]
pub struct SoakReport {
    /// Messages streamed.
    pub messages: u64,
    /// Messages reported sent (ACKed) to host 0.
    pub sent: u64,
    /// Messages that failed with a typed error.
    pub failed: u64,
    /// Messages delivered to host 1 intact and in order.
    pub delivered_intact: u64,
    /// Deliveries with a wrong index, length or fill.
    pub bad: u64,
    /// Close/connect cycles completed.
    pub cycles: u32,
    /// Both endpoints' resources after the first cycle.
    pub before: [EndpointResources; 2],
    /// Both endpoints' resources at the end.
    pub after: [EndpointResources; 2],
}

impl SoakReport {
    /// The resources that grew between [`SoakReport::before`] and [`SoakReport::after`], as
    /// `host N: what before -> after`; empty when nothing leaked.
    pub fn growth(&self) -> Vec<String> {
        let mut out = Vec::new();
        for h in 0..2 {
            let (b, a) = (&self.before[h], &self.after[h]);
            let pairs: [(&str, u64, u64); 7] = [
                ("QPs created", b.qps_created, a.qps_created),
                ("QPs cached", b.qps_cached as u64, a.qps_cached as u64),
                ("MRs", b.mr_chunks as u64, a.mr_chunks as u64),
                ("registered bytes", b.registered_bytes, a.registered_bytes),
                (
                    "spare buffer sets",
                    b.spare_buffer_sets as u64,
                    a.spare_buffer_sets as u64,
                ),
                (
                    "landing bytes in use",
                    b.landing_in_use_bytes,
                    a.landing_in_use_bytes,
                ),
                (
                    "connection records",
                    b.connection_records as u64,
                    a.connection_records as u64,
                ),
            ];
            for (what, before, after) in pairs {
                if after > before {
                    out.push(format!("host {h}: {what} {before} -> {after}"));
                }
            }
        }
        out
    }

    /// Whether every message arrived intact, in order and ACKed, every cycle ran, and nothing
    /// grew.
    pub fn passed(&self) -> bool {
        self.sent == self.messages
            && self.delivered_intact == self.messages
            && self.failed == 0
            && self.bad == 0
            && self.growth().is_empty()
    }

    /// The report as lines of text.
    pub fn lines(&self) -> Vec<String> {
        let mut v = vec![
            format!(
                "messages   {} streamed, {} ACKed, {} delivered intact in order, {} bad, {} failed",
                self.messages, self.sent, self.delivered_intact, self.bad, self.failed
            ),
            format!("cycles     {} close/connect cycles", self.cycles),
            "resources  host  QPs-created  QPs-reused  QPs-cached  MRs  registered  spare-sets  landing-in-use  conn-records".into(),
        ];
        for (label, r) in [("before", &self.before), ("after", &self.after)] {
            for (h, x) in r.iter().enumerate() {
                v.push(format!(
                    "  {label:<7}  {h:<4}  {:<11}  {:<10}  {:<10}  {:<3}  {:<10}  {:<10}  {:<14}  {}",
                    x.qps_created,
                    x.qps_reused,
                    x.qps_cached,
                    x.mr_chunks,
                    x.registered_bytes,
                    x.spare_buffer_sets,
                    x.landing_in_use_bytes,
                    x.connection_records
                ));
            }
        }
        v
    }
}

/// The payload of message `index` of `len` bytes: the index, then its low byte repeated.
fn payload(index: u64, len: u64) -> Bytes {
    let mut v = vec![index as u8; len as usize];
    v[..8].copy_from_slice(&index.to_be_bytes());
    Bytes::from(v)
}

/// Host 0 in phase 1: keeps up to `outstanding` messages queued.
struct Streamer<'a> {
    conn: ConnId,
    opts: &'a SoakOptions,
    next: u64,
    in_flight: u32,
    sent: u64,
    failed: u64,
}

impl Streamer<'_> {
    fn refill(&mut self, now: Time, ep: &mut Endpoint) {
        while self.in_flight < self.opts.outstanding && self.next < self.opts.messages {
            let len = self.opts.sizes[(self.next % self.opts.sizes.len() as u64) as usize];
            if ep.send(now, self.conn, payload(self.next, len)).is_err() {
                self.failed += self.opts.messages - self.next;
                self.next = self.opts.messages;
                return;
            }
            self.next += 1;
            self.in_flight += 1;
        }
    }
}

impl Application for Streamer<'_> {
    fn on_event(&mut self, now: Time, ep: &mut Endpoint, event: Event) {
        match event {
            Event::Sent { .. } => {
                self.sent += 1;
                self.in_flight -= 1;
            }
            Event::SendFailed { .. } => {
                self.failed += 1;
                self.in_flight -= 1;
            }
            _ => {}
        }
        self.refill(now, ep);
    }
    fn on_turn(&mut self, now: Time, ep: &mut Endpoint) {
        self.refill(now, ep);
    }
    fn next_wake(&self) -> Option<Time> {
        None
    }
}

/// Host 1 in phase 1: checks every message in arrival order.
struct Checker<'a> {
    opts: &'a SoakOptions,
    next: u64,
    intact: u64,
    bad: u64,
}

impl Application for Checker<'_> {
    fn on_event(&mut self, _now: Time, _ep: &mut Endpoint, event: Event) {
        if let Event::Message { data, .. } = event {
            let i = self.next;
            self.next += 1;
            let len = self.opts.sizes[(i % self.opts.sizes.len() as u64) as usize];
            let ok = data.len() as u64 == len
                && data[..8] == i.to_be_bytes()
                && data[8..].iter().all(|&b| b == i as u8);
            if ok {
                self.intact += 1;
            } else {
                self.bad += 1;
            }
        }
    }
    fn on_turn(&mut self, _now: Time, _ep: &mut Endpoint) {}
    fn next_wake(&self) -> Option<Time> {
        None
    }
}

/// One side of a cycle: closes its connection, then waits for the close to finish.
struct Closer {
    conn: ConnId,
    asked: bool,
    closed: bool,
    failed: bool,
}

impl Application for Closer {
    fn on_event(&mut self, _now: Time, _ep: &mut Endpoint, event: Event) {
        match event {
            Event::Closed { conn } if conn == self.conn => self.closed = true,
            Event::ConnectionFailed { conn, .. } if conn == self.conn => self.failed = true,
            _ => {}
        }
    }
    fn on_turn(&mut self, _now: Time, ep: &mut Endpoint) {
        if !self.asked {
            self.asked = true;
            if ep.close(self.conn).is_err() {
                self.failed = true;
            }
        }
    }
    fn next_wake(&self) -> Option<Time> {
        None
    }
}

/// Run the soak of [`SoakOptions`] on hosts 0 and 1 of `fabric`.
///
/// # Errors
/// Options out of range (a size below 8 bytes, no sizes, `outstanding` 0, no message, fewer
/// than 2 cycles, which could show no growth), a transport error
/// while connecting, a close that fails, or the fabric stopping before a phase finished.
pub fn run<F: Fabric>(fabric: &mut F, opts: &SoakOptions) -> Result<SoakReport> {
    if opts.sizes.is_empty() || opts.sizes.iter().any(|&s| s < 8) || opts.outstanding == 0 {
        bail!("soak needs sizes of at least 8 bytes and at least one message outstanding");
    }
    if opts.messages == 0 || opts.cycles < 2 {
        bail!(
            "soak needs at least 1 message and 2 cycles (resources are compared between the \
             first cycle and the last; got {} message(s), {} cycle(s))",
            opts.messages,
            opts.cycles
        );
    }
    let cfg = Config::default();
    let mut pair = connect_pair(fabric, &cfg)?;
    let mut tx = Streamer {
        conn: pair.conns[0],
        opts,
        next: 0,
        in_flight: 0,
        sent: 0,
        failed: 0,
    };
    let mut rx = Checker {
        opts,
        next: 0,
        intact: 0,
        bad: 0,
    };
    let total = opts.messages;
    drive(fabric, &mut pair, &mut tx, &mut rx, |t, r| {
        t.sent + t.failed == total && r.next + t.failed >= total
    })
    .context("streaming the messages")?;
    let mut before = [EndpointResources::default(); 2];
    for cycle in 0..opts.cycles {
        cycle_once(fabric, &mut pair).with_context(|| format!("cycle {}", cycle + 1))?;
        if cycle == 0 {
            before = [pair.eps[0].resources(), pair.eps[1].resources()];
        }
    }
    let after = [pair.eps[0].resources(), pair.eps[1].resources()];
    Ok(SoakReport {
        messages: total,
        sent: tx.sent,
        failed: tx.failed,
        delivered_intact: rx.intact,
        bad: rx.bad,
        cycles: opts.cycles,
        before,
        after,
    })
}

/// Close the pair's connection on both sides, connect again, and pass one message.
fn cycle_once<F: Fabric>(fabric: &mut F, pair: &mut Pair) -> Result<()> {
    let closer = |conn| Closer {
        conn,
        asked: false,
        closed: false,
        failed: false,
    };
    let (mut a, mut b) = (closer(pair.conns[0]), closer(pair.conns[1]));
    drive(fabric, pair, &mut a, &mut b, |a, b| {
        (a.closed && b.closed) || a.failed || b.failed
    })?;
    if a.failed || b.failed {
        bail!("the close failed");
    }
    let [ea, eb] = &mut pair.eps;
    let ha = driver::open(ea, &mut fabric.host(0)).context("opening host 0's QP")?;
    let hb = driver::open(eb, &mut fabric.host(1)).context("opening host 1's QP")?;
    let ca = driver::establish(ea, &mut fabric.host(0), ha, &hb.info, 1)?;
    let cb = driver::establish(eb, &mut fabric.host(1), hb, &ha.info, 0)?;
    pair.conns = [ca, cb];
    let opts = SoakOptions {
        messages: 1,
        sizes: vec![1024],
        outstanding: 1,
        cycles: 0,
    };
    let mut tx = Streamer {
        conn: ca,
        opts: &opts,
        next: 0,
        in_flight: 0,
        sent: 0,
        failed: 0,
    };
    let mut rx = Checker {
        opts: &opts,
        next: 0,
        intact: 0,
        bad: 0,
    };
    drive(fabric, pair, &mut tx, &mut rx, |t, r| {
        t.sent == 1 && r.next == 1
    })?;
    if rx.intact != 1 {
        bail!("the message after reconnecting did not arrive intact");
    }
    Ok(())
}
