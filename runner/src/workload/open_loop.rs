//! The open-loop workload as xrdma applications: each sender's messages arrive as a Poisson
//! process and are handed to xrdma at their arrival instant; one receiver (the incast
//! [`Receiver`]) records and digests what arrives.
//!
//! A message's latency counts from its arrival instant, however long the sender's queue or a
//! stalled receiver holds it (no coordinated omission): a backlog shows up in the tail.

use super::{
    mean_shape, Digest, ErrorAt, PayloadPool, Receiver, ReceiverView, SenderRecord, SentRecord,
    Setup, Workload,
};
use crate::role::Finish;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::VecDeque;
use xrdma::driver::Application;
use xrdma::AnyStack;
use xrdma::{ConnId, Event, MsgId, Span, Time};
use xrdma_reports as rep;
use xrdma_scenario::{OpenLoop, OpenLoopEnd, SizeDist, Stall};
use xxhash_rust::xxh3::xxh3_128;

/// The arrivals of one open-loop sender: a Poisson process of `rate` messages per second from
/// `start`, with sizes drawn from a distribution.
///
/// Inter-arrival gaps are exponential with mean `1/rate` (inverse-transform sampling,
/// `gap = −ln(1 − U)/rate` with `U` uniform in [0, 1); Knuth, TAOCP vol. 2, §3.4.1), rounded to
/// the picosecond and summed in integers; after each gap a size is drawn by weight. The random
/// numbers come from ChaCha8 seeded by the scenario seed with the sender's host index as its
/// stream (`set_stream`), so one sender's arrivals do not depend on how many others there are.
#[derive(Clone, Debug)]
pub struct PoissonArrivals {
    rng: ChaCha8Rng,
    mean_gap_ps: f64,
    sizes: SizeDist,
    total_weight: u64,
    end: OpenLoopEnd,
    start: Time,
    last: Time,
    produced: u32,
}

impl PoissonArrivals {
    /// The arrivals of sender `host` of `ol` under `seed`.
    pub fn new(seed: u64, host: u32, ol: &OpenLoop) -> Self {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        rng.set_stream(u64::from(host));
        PoissonArrivals {
            rng,
            mean_gap_ps: 1e12 / ol.rate_per_s,
            total_weight: ol.sizes.total_weight(),
            sizes: ol.sizes.clone(),
            end: ol.end,
            start: ol.start,
            last: ol.start,
            produced: 0,
        }
    }
}

impl Iterator for PoissonArrivals {
    /// (arrival time, size in bytes).
    type Item = (Time, u64);

    fn next(&mut self) -> Option<(Time, u64)> {
        if let OpenLoopEnd::Count(n) = self.end {
            if self.produced >= n {
                return None;
            }
        }
        let u: f64 = self.rng.random();
        let gap = (-(1.0 - u).ln() * self.mean_gap_ps).round();
        // A gap beyond u64 picoseconds (213 days) ends the process.
        let gap = if gap < u64::MAX as f64 {
            gap as u64
        } else {
            u64::MAX
        };
        let at = self.last.checked_add(Span::from_ps(gap))?;
        if let OpenLoopEnd::Duration(d) = self.end {
            if at >= self.start + d {
                return None;
            }
        }
        let size = self.sizes.pick(self.rng.random_range(0..self.total_weight));
        self.last = at;
        self.produced += 1;
        Some((self.last, size))
    }
}

/// One open-loop message as its sender saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpenLoopMessage {
    /// Position in the sender's arrivals, from 0.
    pub index: u32,
    /// Payload bytes.
    pub size: u64,
    /// The arrival instant (the intended send time).
    pub intended: Time,
    /// XXH3-128 of the payload (0 when it was never posted).
    pub digest: u128,
    /// When it was handed to xrdma (`None`: never, the connection failed first).
    pub posted: Option<Time>,
    /// When the receiver's ACK of its last fragment arrived (`None`: never).
    pub acked: Option<Time>,
    /// The sender's instants of it, from xrdma's [`Event::Sent`] (`None`: not ACKed).
    pub timing: Option<xrdma::SendTiming>,
    /// Whether xrdma reported it failed.
    pub failed: bool,
}

/// An open-loop sender: one connection to the receiver, Poisson arrivals.
pub struct OpenLoopSender {
    /// This sender's host index.
    pub host: u32,
    conn: ConnId,
    pool: PayloadPool,
    arrivals: PoissonArrivals,
    next: Option<(Time, u64)>,
    in_flight: VecDeque<(MsgId, usize)>,
    /// Every arrival so far, by index.
    pub messages: Vec<OpenLoopMessage>,
    /// Errors xrdma reported, as text.
    pub errors: Vec<ErrorAt>,
}

impl OpenLoopSender {
    /// A sender on `host` posting `arrivals` over `conn`.
    pub fn new(host: u32, conn: ConnId, pool: PayloadPool, mut arrivals: PoissonArrivals) -> Self {
        let next = arrivals.next();
        OpenLoopSender {
            host,
            conn,
            pool,
            arrivals,
            next,
            in_flight: VecDeque::new(),
            messages: Vec::new(),
            errors: Vec::new(),
        }
    }

    fn record(&mut self, msg: MsgId, now: Time, timing: Option<xrdma::SendTiming>) {
        if let Some(pos) = self.in_flight.iter().position(|(m, _)| *m == msg) {
            if let Some((_, i)) = self.in_flight.remove(pos) {
                match timing {
                    None => self.messages[i].failed = true,
                    Some(t) => {
                        self.messages[i].acked = Some(now);
                        self.messages[i].timing = Some(t);
                    }
                }
            }
        }
    }

    /// Records every remaining arrival as never posted (after a connection failure), so it is
    /// counted as unfinished rather than invisible.
    fn abandon_rest(&mut self) {
        while let Some((at, size)) = self.next.take() {
            self.messages.push(OpenLoopMessage {
                index: self.messages.len() as u32,
                size,
                intended: at,
                digest: 0,
                posted: None,
                acked: None,
                timing: None,
                failed: false,
            });
            self.next = self.arrivals.next();
        }
    }
}

impl Application<AnyStack> for OpenLoopSender {
    fn on_event(&mut self, now: Time, _ep: &mut AnyStack, event: Event) {
        match event {
            Event::Sent { msg, timing, .. } => self.record(msg, now, Some(timing)),
            Event::SendFailed { msg, .. } => self.record(msg, now, None),
            Event::ConnectionFailed { error, .. } => self.errors.push(ErrorAt::new(now, error)),
            // What a sender does not count: arrivals, closes, and any kind of event the core
            // adds later (`Event` is non-exhaustive).
            _ => {}
        }
    }

    fn on_turn(&mut self, now: Time, ep: &mut AnyStack) {
        if !self.errors.is_empty() {
            self.abandon_rest();
            return;
        }
        while let Some((at, size)) = self.next.filter(|(at, _)| *at <= now) {
            let index = self.messages.len() as u32;
            let data = self.pool.message(self.host, index, size);
            let digest = xxh3_128(&data);
            match ep.send(now, self.conn, data) {
                Ok(id) => {
                    self.in_flight.push_back((id, self.messages.len()));
                    self.messages.push(OpenLoopMessage {
                        index,
                        size,
                        intended: at,
                        digest,
                        posted: Some(now),
                        acked: None,
                        timing: None,
                        failed: false,
                    });
                    self.next = self.arrivals.next();
                }
                Err(e) => {
                    self.errors.push(ErrorAt::new(now, e));
                    self.abandon_rest();
                    return;
                }
            }
        }
    }

    fn next_wake(&self) -> Option<Time> {
        self.next.map(|(at, _)| at)
    }
}

impl Finish for OpenLoopSender {
    fn finished(&self) -> bool {
        (self.next.is_none() || !self.errors.is_empty()) && self.in_flight.is_empty()
    }
}

impl Workload for OpenLoop {
    type Sender = Box<OpenLoopSender>;
    type Receiver = Receiver;

    fn kind(&self) -> rep::WorkloadKind {
        rep::WorkloadKind::OpenLoop
    }
    fn hosts(&self) -> u32 {
        OpenLoop::hosts(self)
    }
    fn receiver_host(&self) -> u32 {
        self.receiver
    }
    fn largest_message(&self) -> u64 {
        self.sizes.largest()
    }
    fn stalls(&self) -> &[Stall] {
        &self.stalls
    }
    /// `drain` after the last arrival: the end of `duration`, or the last of `count` arrivals
    /// from the seed.
    fn deadline(&self, seed: u64) -> Option<Time> {
        let end = match self.end {
            OpenLoopEnd::Duration(d) => self.start + d,
            // The last arrival: the latest next-wake any sender will ask for.
            OpenLoopEnd::Count(_) => self
                .sender_hosts()
                .filter_map(|h| PoissonArrivals::new(seed, h, self).last())
                .map(|(at, _)| at)
                .max()
                .unwrap_or(self.start),
        };
        Some(end + self.drain)
    }
    fn sender(&self, setup: &Setup, host: u32, conn: ConnId) -> Box<OpenLoopSender> {
        let arrivals = PoissonArrivals::new(setup.seed, host, self);
        Box::new(OpenLoopSender::new(
            host,
            conn,
            setup.pool.clone(),
            arrivals,
        ))
    }
    fn receiver(&self, _setup: &Setup) -> Receiver {
        Receiver::default()
    }
    fn record(&self, s: &Box<OpenLoopSender>) -> SenderRecord {
        SenderRecord {
            host: s.host,
            messages: s
                .messages
                .iter()
                .map(|m| SentRecord {
                    index: m.index,
                    size: m.size,
                    intended_ps: m.intended.as_ps(),
                    digest: m.posted.map(|_| Digest(m.digest)),
                    completed_ps: m.acked.map(Time::as_ps),
                    response: None,
                    timing: m.timing,
                })
                .collect(),
            errors: s.errors.clone(),
            window: None,
        }
    }
    fn view<'a>(&self, r: &'a Receiver) -> ReceiverView<'a> {
        ReceiverView {
            arrivals: &r.log.arrivals,
            errors: &r.log.errors,
        }
    }
    fn planned(&self, seed: u64, host: u32) -> Vec<SentRecord> {
        PoissonArrivals::new(seed, host, self)
            .enumerate()
            .map(|(index, (at, size))| SentRecord {
                index: index as u32,
                size,
                intended_ps: at.as_ps(),
                digest: None,
                completed_ps: None,
                response: None,
                timing: None,
            })
            .collect()
    }
    fn shape(&self, messages: &[rep::MessageRecord]) -> rep::WorkloadInfo {
        mean_shape(
            rep::WorkloadKind::OpenLoop,
            self.senders,
            self.receiver,
            messages,
        )
    }
    fn bottleneck_bytes(&self, messages: &[rep::MessageRecord]) -> u64 {
        messages.iter().map(|m| m.size).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open_loop(rate: f64, end: OpenLoopEnd) -> OpenLoop {
        OpenLoop {
            senders: 4,
            receiver: 0,
            rate_per_s: rate,
            end,
            sizes: SizeDist::fixed(4096),
            start: Time::ZERO,
            stalls: Vec::new(),
            drain: xrdma_scenario::DEFAULT_DRAIN,
        }
    }

    #[test]
    fn poisson_count_is_within_five_sigma_of_rate_times_duration() {
        // N ~ Poisson(λT) with λT = 10_000/s × 1 s = 10_000: σ = √10_000 = 100, and
        // P(|N − 10_000| > 5σ = 500) ≈ 5.7e-7 per draw. Several seeds and senders.
        let ol = open_loop(
            10_000.0,
            OpenLoopEnd::Duration(Span::from_ps(1_000_000_000_000)),
        );
        for seed in [1, 2, 3] {
            for host in 1..=4 {
                let n = PoissonArrivals::new(seed, host, &ol).count() as i64;
                assert!((n - 10_000).abs() <= 500, "seed {seed} host {host}: {n}");
            }
        }
    }

    #[test]
    fn gaps_have_the_exponential_mean() {
        // 100_000 gaps of mean 100 µs: the sample mean has σ = 100 µs/√1e5 ≈ 0.32 µs;
        // 5σ ≈ 1.6 µs, so the mean lies in [98.4, 101.6] µs.
        let ol = open_loop(10_000.0, OpenLoopEnd::Count(100_000));
        let last = PoissonArrivals::new(9, 1, &ol).last().unwrap().0;
        let mean_us = last.as_ps() as f64 / 1e6 / 100_000.0;
        assert!((98.4..=101.6).contains(&mean_us), "{mean_us}");
        // Arrivals are strictly increasing or equal (integer ps) and exactly `count` long.
        let v: Vec<_> = PoissonArrivals::new(9, 1, &ol).collect();
        assert_eq!(v.len(), 100_000);
        assert!(v.windows(2).all(|w| w[0].0 <= w[1].0));
    }

    #[test]
    fn adding_senders_leaves_the_others_streams_alone() {
        let two = open_loop(1000.0, OpenLoopEnd::Count(50));
        let mut many = two.clone();
        many.senders = 64;
        let a: Vec<_> = PoissonArrivals::new(5, 2, &two).collect();
        let b: Vec<_> = PoissonArrivals::new(5, 2, &many).collect();
        assert_eq!(a, b);
        let c: Vec<_> = PoissonArrivals::new(5, 3, &two).collect();
        assert_ne!(a, c);
    }
}
