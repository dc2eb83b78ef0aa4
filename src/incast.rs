//! The N-to-1 incast workload as xrdma applications: every sender sends the same list of
//! messages to one receiver, all intended at the same start time.
//!
//! Payloads are deterministic pseudo-random bytes (slices of one ChaCha8 block seeded from the
//! scenario seed, see [`PayloadPool`]); the sender records each message's XXH3-128 digest and
//! the receiver digests what arrives, so the run checks end to end that every message arrived
//! exactly once and intact. Senders hand a message to xrdma only when the previous one has
//! been fully posted, which keeps memory at about one message per sender; latency still counts
//! from the intended send time, so the queueing this causes is measured, not hidden.

use crate::role::{Finish, HostRole};
use bytes::Bytes;
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use xrdma::driver::Application;
use xrdma::slab::PerConn;
use xrdma::{ConnId, Endpoint, Event, MsgId, Time};
use xxhash_rust::xxh3::{xxh3_128, Xxh3};

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
    /// Whether xrdma reported it failed.
    pub failed: bool,
}

/// Distinct starting offsets a message can take in the pool: 1 MiB of them.
const POOL_OFFSETS: u64 = 1 << 20;

/// The payload bytes of a run: one block of pseudo-random bytes (ChaCha8 from the scenario
/// seed), `largest message + 1 MiB` long, shared by every sender. Message `index` of `sender`
/// is the slice starting at an offset drawn from (seed, sender, index), so messages differ
/// (a swapped or misplaced message fails its digest) while the run holds one block instead of
/// one buffer per message in flight.
#[derive(Clone, Debug)]
pub struct PayloadPool {
    seed: u64,
    bytes: Bytes,
}

impl PayloadPool {
    /// A pool for messages of at most `largest` bytes.
    pub fn new(seed: u64, largest: u64) -> Self {
        let mut key = [0u8; 32];
        key[..8].copy_from_slice(&seed.to_le_bytes());
        let mut rng = ChaCha8Rng::from_seed(key);
        let mut v = vec![0u8; (largest + POOL_OFFSETS) as usize];
        rng.fill_bytes(&mut v);
        PayloadPool {
            seed,
            bytes: Bytes::from(v),
        }
    }

    /// The payload of message `index` of `sender` (`size` ≤ the pool's largest message).
    pub fn message(&self, sender: u32, index: u32, size: u64) -> Bytes {
        // SplitMix64 (Steele et al., OOPSLA 2014) of the three numbers: a well-mixed offset.
        let mut z = self.seed ^ (u64::from(sender) << 32) ^ u64::from(index);
        z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        let off = (z % POOL_OFFSETS) as usize;
        let end = (off + size as usize).min(self.bytes.len());
        self.bytes.slice(off..end)
    }
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
    /// What was sent, by index.
    pub sent: Vec<SentMessage>,
    /// Errors xrdma reported (connection failures), as text.
    pub errors: Vec<String>,
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

    fn record_ack(&mut self, msg: MsgId, now: Time, failed: bool) {
        if let Some(pos) = self.in_flight.iter().position(|(m, _)| *m == msg) {
            let (_, i) = self.in_flight.swap_remove(pos);
            if failed {
                self.sent[i].failed = true;
            } else {
                self.sent[i].acked = Some(now);
            }
        }
    }
}

/// Messages an incast sender keeps queued in xrdma: the head and the next one.
const FEED_DEPTH: usize = 2;

impl Application for Sender {
    fn on_event(&mut self, now: Time, _ep: &mut Endpoint, event: Event) {
        match event {
            Event::Sent { msg, .. } => self.record_ack(msg, now, false),
            Event::SendFailed { msg, .. } => self.record_ack(msg, now, true),
            Event::ConnectionFailed { error, .. } => self.errors.push(error.to_string()),
            Event::Message { .. }
            | Event::Fragment { .. }
            | Event::PeerClosed { .. }
            | Event::Closed { .. } => {}
        }
    }

    fn on_turn(&mut self, now: Time, ep: &mut Endpoint) {
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
                        failed: false,
                    });
                    self.next += 1;
                }
                Err(e) => {
                    self.errors.push(e.to_string());
                    self.next = self.sizes.len();
                }
            }
        }
    }

    fn next_wake(&self) -> Option<Time> {
        (self.next == 0 && !self.sizes.is_empty()).then_some(self.start)
    }
}

/// A message as the receiver got it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Arrival {
    /// The sender's host index.
    pub sender: u32,
    /// Arrival order on that sender's connection (xrdma delivers in order, so this is the
    /// sender's message index when nothing was lost or duplicated).
    pub index: u32,
    /// Payload bytes.
    pub size: u64,
    /// XXH3-128 of the payload.
    pub digest: u128,
    /// When the whole message was delivered.
    pub at: Time,
}

/// The receiver: records every arriving message, whole or as streamed fragments.
#[derive(Default)]
pub struct Receiver {
    per_conn: PerConn<u32>,
    /// Digest state of the message being streamed on each connection.
    streams: PerConn<Xxh3>,
    /// Everything that arrived, in arrival order.
    pub arrivals: Vec<Arrival>,
    /// Errors xrdma reported, as text.
    pub errors: Vec<String>,
}

impl Receiver {
    fn arrived(&mut self, now: Time, ep: &Endpoint, conn: ConnId, size: u64, digest: u128) {
        let count = self.per_conn.entry(conn, || 0);
        let index = *count;
        *count += 1;
        self.arrivals.push(Arrival {
            sender: ep.peer(conn).unwrap_or(u32::MAX),
            index,
            size,
            digest,
            at: now,
        });
    }
}

impl Application for Receiver {
    fn on_event(&mut self, now: Time, ep: &mut Endpoint, event: Event) {
        match event {
            Event::Message { conn, data } => {
                let digest = xxh3_128(&data);
                self.arrived(now, ep, conn, data.len() as u64, digest);
            }
            Event::Fragment {
                conn,
                message_len,
                offset,
                data,
            } => {
                let h = self.streams.entry(conn, Xxh3::new);
                h.update(&data);
                if offset + data.len() as u64 == message_len {
                    let digest = h.digest128();
                    self.streams.remove(conn);
                    self.arrived(now, ep, conn, message_len, digest);
                }
            }
            Event::ConnectionFailed { error, .. } => self.errors.push(error.to_string()),
            Event::Sent { .. }
            | Event::SendFailed { .. }
            | Event::PeerClosed { .. }
            | Event::Closed { .. } => {}
        }
    }

    fn on_turn(&mut self, _now: Time, _ep: &mut Endpoint) {}

    fn next_wake(&self) -> Option<Time> {
        None
    }
}

/// Every host's application in an incast: a [`Sender`], the [`Receiver`], or idle.
pub type Role = HostRole<Sender, Receiver>;

impl Finish for Sender {
    fn finished(&self) -> bool {
        Sender::finished(self)
    }
}
