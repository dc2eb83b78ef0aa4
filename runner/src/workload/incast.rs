//! The N-to-1 incast workload as xrdma applications: every sender sends the same list of
//! messages to one receiver, all intended at the same start time.
//!
//! Payloads are deterministic pseudo-random bytes (slices of one ChaCha8 block seeded from the
//! scenario seed, see [`PayloadPool`]); the sender records each message's XXH3-128 digest and
//! the receiver digests what arrives, so the run checks end to end that every message arrived
//! exactly once and intact. Senders hand a message to xrdma only when the previous one has
//! been fully posted, which keeps memory at about one message per sender; latency still counts
//! from the intended send time, so the queueing this causes is measured, not hidden.

use super::{
    Digest, ErrorAt, PayloadPool, Receiver, ReceiverView, SenderRecord, SentRecord, Setup, Workload,
};
use crate::role::Finish;
use xrdma::driver::Application;
use xrdma::AnyStack;
use xrdma::{ConnId, Event, MsgId, Time};
use xrdma_reports as rep;
use xrdma_scenario::Incast;
use xxhash_rust::xxh3::xxh3_128;

/// One message a sender sent, as the sender saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SentMessage {
    /// Position in the sender's list.
    pub index: u32,
    /// Payload bytes.
    pub size: u64,
    /// XXH3-128 of the payload.
    pub digest: u128,
    /// When the message was handed to xrdma.
    pub posted: Time,
    /// When the receiver's ACK of its last fragment arrived (`None`: never).
    pub acked: Option<Time>,
    /// The sender's instants of it, from xrdma's [`Event::Sent`] (`None`: not ACKed).
    pub timing: Option<xrdma::SendTiming>,
    /// Whether xrdma reported it failed.
    pub failed: bool,
}

/// A sender: one connection to the receiver, a list of message sizes, one start time.
pub struct Sender {
    /// This sender's host index.
    pub host: u32,
    conn: ConnId,
    pool: PayloadPool,
    start: Time,
    sizes: Vec<u64>,
    next: usize,
    in_flight: Vec<(MsgId, usize)>,
    /// What was sent, in index order from 0 (the message at position i has index i).
    pub sent: Vec<SentMessage>,
    /// Errors xrdma reported (connection failures), as text.
    pub errors: Vec<ErrorAt>,
}

impl Sender {
    /// A sender on `host` that sends `sizes` over `conn`, all intended at `start`.
    pub fn new(host: u32, conn: ConnId, pool: PayloadPool, start: Time, sizes: Vec<u64>) -> Self {
        Sender {
            host,
            conn,
            pool,
            start,
            sizes,
            next: 0,
            in_flight: Vec::new(),
            sent: Vec::new(),
            errors: Vec::new(),
        }
    }

    /// Every message was handed to xrdma and then ACKed or failed.
    pub fn finished(&self) -> bool {
        (self.next == self.sizes.len() || !self.errors.is_empty()) && self.in_flight.is_empty()
    }

    /// The sizes of the messages this sender intends to send, in order.
    pub fn sizes(&self) -> &[u64] {
        &self.sizes
    }

    fn record_ack(&mut self, msg: MsgId, now: Time, timing: Option<xrdma::SendTiming>) {
        if let Some(pos) = self.in_flight.iter().position(|(m, _)| *m == msg) {
            let (_, i) = self.in_flight.swap_remove(pos);
            match timing {
                None => self.sent[i].failed = true,
                Some(t) => {
                    self.sent[i].acked = Some(now);
                    self.sent[i].timing = Some(t);
                }
            }
        }
    }
}

/// Messages an incast sender keeps queued in xrdma: the head and the next one.
const FEED_DEPTH: usize = 2;

impl Application<AnyStack> for Sender {
    fn on_event(&mut self, now: Time, _ep: &mut AnyStack, event: Event) {
        match event {
            Event::Sent { msg, timing, .. } => self.record_ack(msg, now, Some(timing)),
            Event::SendFailed { msg, .. } => self.record_ack(msg, now, None),
            Event::ConnectionFailed { error, .. } => self.errors.push(ErrorAt::new(now, error)),
            // What a sender does not count: arrivals, closes, and any kind of event the core
            // adds later (`Event` is non-exhaustive).
            _ => {}
        }
    }

    fn on_turn(&mut self, now: Time, ep: &mut AnyStack) {
        if now < self.start {
            return;
        }
        // Two messages queued at a time: the one on the wire and the next, whose RTS can then
        // go out (and its grant come back) while the first is still being sent.
        while self.next < self.sizes.len() && ep.queued_messages(self.conn) < FEED_DEPTH {
            let index = self.next as u32;
            let size = self.sizes[self.next];
            let data = self.pool.message(self.host, index, size);
            let digest = xxh3_128(&data);
            match ep.send(now, self.conn, data) {
                Ok(id) => {
                    self.in_flight.push((id, self.sent.len()));
                    self.sent.push(SentMessage {
                        index,
                        size,
                        digest,
                        posted: now,
                        acked: None,
                        timing: None,
                        failed: false,
                    });
                    self.next += 1;
                }
                Err(e) => {
                    self.errors.push(ErrorAt::new(now, e));
                    self.next = self.sizes.len();
                }
            }
        }
    }

    fn next_wake(&self) -> Option<Time> {
        (self.next == 0 && !self.sizes.is_empty()).then_some(self.start)
    }
}

impl Finish for Sender {
    fn finished(&self) -> bool {
        Sender::finished(self)
    }
}

impl Workload for Incast {
    type Sender = Sender;
    type Receiver = Receiver;

    fn kind(&self) -> rep::WorkloadKind {
        rep::WorkloadKind::Incast
    }
    fn hosts(&self) -> u32 {
        Incast::hosts(self)
    }
    fn receiver_host(&self) -> u32 {
        self.receiver
    }
    fn largest_message(&self) -> u64 {
        self.messages.iter().map(|m| m.size).max().unwrap_or(0)
    }
    fn deadline(&self, _seed: u64) -> Option<Time> {
        None
    }
    fn sender(&self, setup: &Setup, host: u32, conn: ConnId) -> Sender {
        Sender::new(host, conn, setup.pool.clone(), self.start, self.sizes())
    }
    fn receiver(&self, _setup: &Setup) -> Receiver {
        Receiver::default()
    }
    fn record(&self, s: &Sender) -> SenderRecord {
        let messages = s
            .sizes()
            .iter()
            .enumerate()
            .map(|(index, &size)| {
                // `sent` is in index order from 0: a message's position is its index.
                let sent = s.sent.get(index).filter(|m| m.index as usize == index);
                SentRecord {
                    index: index as u32,
                    size,
                    intended_ps: self.start.as_ps(),
                    digest: sent.map(|m| Digest(m.digest)),
                    completed_ps: sent.and_then(|m| m.acked).map(Time::as_ps),
                    response: None,
                    timing: sent.and_then(|m| m.timing),
                }
            })
            .collect();
        SenderRecord {
            host: s.host,
            messages,
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
    fn planned(&self, _seed: u64, _host: u32) -> Vec<SentRecord> {
        self.sizes()
            .into_iter()
            .enumerate()
            .map(|(index, size)| SentRecord {
                index: index as u32,
                size,
                intended_ps: self.start.as_ps(),
                digest: None,
                completed_ps: None,
                response: None,
                timing: None,
            })
            .collect()
    }
    fn shape(&self, _messages: &[rep::MessageRecord]) -> rep::WorkloadInfo {
        rep::WorkloadInfo {
            kind: rep::WorkloadKind::Incast,
            senders: self.senders,
            receiver: self.receiver,
            bytes_per_sender: self.bytes_per_sender(),
            messages_per_sender: self.messages_per_sender() as u32,
        }
    }
    fn bottleneck_bytes(&self, _messages: &[rep::MessageRecord]) -> u64 {
        self.bytes_per_sender() * u64::from(self.senders)
    }
    fn bounded_by_t_star(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use xrdma_scenario::MessageSpec;

    #[test]
    fn record_takes_each_message_from_its_position_and_lists_the_unsent() {
        let w = Incast {
            senders: 1,
            receiver: 0,
            start: Time::from_ps(5),
            messages: vec![MessageSpec { size: 8, count: 4 }],
        };
        let mut s = Sender::new(
            1,
            ConnId::new(0, 0),
            PayloadPool::new(1, 8),
            w.start,
            w.sizes(),
        );
        for index in 0..3 {
            s.sent.push(SentMessage {
                index,
                size: 8,
                digest: u128::from(index) + 100,
                posted: Time::from_ps(6),
                acked: (index != 1).then(|| Time::from_ps(50 + u64::from(index))),
                timing: None,
                failed: index == 1,
            });
        }
        let r = w.record(&s);
        let got: Vec<_> = r
            .messages
            .iter()
            .map(|m| (m.index, m.digest.map(|d| d.0), m.completed_ps))
            .collect();
        assert_eq!(
            got,
            vec![
                (0, Some(100), Some(50)),
                (1, Some(101), None),
                (2, Some(102), Some(52)),
                (3, None, None),
            ]
        );
        assert!(r.messages.iter().all(|m| m.intended_ps == 5));
    }
}
