//! The echo workload as xrdma applications: closed-loop clients that keep a fixed number of
//! requests outstanding, and one server that answers every request as it arrives.
//!
//! A request is intended at the start (the first `concurrency` of them) or at the instant the
//! response that freed its slot arrived; its latency runs from then to the moment its response
//! has fully arrived at the client. Requests are payload slices of the run's [`PayloadPool`]
//! (the client records their XXH3-128, the server digests what arrives); responses are slices
//! too, at the pool "sender" `u32::MAX − client`, so the client checks each response against
//! the digest it expects.

use crate::incast::PayloadPool;
use crate::role::{Finish, HostRole};
use bytes::Bytes;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::VecDeque;
use xrdma::driver::Application;
use xrdma::slab::PerConn;
use xrdma::{ConnId, Endpoint, Event, Time};
use xrdma_scenario::Echo;
use xxhash_rust::xxh3::{xxh3_128, Xxh3};

/// The pool "sender" whose slices are the responses to `client`.
pub fn response_stream(client: u32) -> u32 {
    u32::MAX - client
}

/// Reassembles whole messages from [`Event::Message`] or streamed [`Event::Fragment`]s and
/// returns (size, digest) when one is complete.
#[derive(Default)]
struct Digests {
    streams: PerConn<Xxh3>,
}

impl Digests {
    fn whole(&mut self, event: &Event) -> Option<(ConnId, u64, u128)> {
        match event {
            Event::Message { conn, data } => Some((*conn, data.len() as u64, xxh3_128(data))),
            Event::Fragment {
                conn,
                message_len,
                offset,
                data,
            } => {
                let h = self.streams.entry(*conn, Xxh3::new);
                h.update(data);
                if offset + data.len() as u64 == *message_len {
                    let d = h.digest128();
                    self.streams.remove(*conn);
                    Some((*conn, *message_len, d))
                } else {
                    None
                }
            }
            _ => None,
        }
    }
}

/// One request/response exchange as the client saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Exchange {
    /// Position in the client's requests, from 0.
    pub index: u32,
    /// Request payload bytes.
    pub size: u64,
    /// Response payload bytes expected.
    pub response_size: u64,
    /// Intended send time of the request.
    pub intended: Time,
    /// XXH3-128 of the request payload.
    pub digest: u128,
    /// When the whole response arrived (`None`: never).
    pub responded: Option<Time>,
    /// Whether the response had the expected size and digest.
    pub response_intact: bool,
    /// Whether xrdma reported the request failed.
    pub failed: bool,
}

/// A closed-loop client: one connection to the server.
pub struct EchoClient {
    /// This client's host index.
    pub host: u32,
    conn: ConnId,
    pool: PayloadPool,
    rng: ChaCha8Rng,
    echo: Echo,
    total_weight: u64,
    started: bool,
    outstanding: VecDeque<usize>,
    digests: Digests,
    /// Every request issued so far, by index.
    pub exchanges: Vec<Exchange>,
    /// Errors xrdma reported, as text.
    pub errors: Vec<String>,
}

impl EchoClient {
    /// A client on `host` of `echo`, talking over `conn`; request sizes come from ChaCha8
    /// seeded by `seed` with the host index as its stream.
    pub fn new(host: u32, conn: ConnId, pool: PayloadPool, seed: u64, echo: &Echo) -> Self {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        rng.set_stream(u64::from(host));
        EchoClient {
            host,
            conn,
            pool,
            rng,
            total_weight: echo.request_sizes.total_weight(),
            echo: echo.clone(),
            started: false,
            outstanding: VecDeque::new(),
            digests: Digests::default(),
            exchanges: Vec::new(),
            errors: Vec::new(),
        }
    }

    /// The expected response payload to request `index` of `size` bytes.
    fn response_payload(&self, index: u32, size: u64) -> Bytes {
        self.pool.message(
            response_stream(self.host),
            index,
            self.echo.response_for(size),
        )
    }

    fn issue(&mut self, intended: Time, now: Time, ep: &mut Endpoint) {
        if !self.errors.is_empty() || self.exchanges.len() >= self.echo.requests as usize {
            return;
        }
        let index = self.exchanges.len() as u32;
        let size = self
            .echo
            .request_sizes
            .pick(self.rng.random_range(0..self.total_weight));
        let data = self.pool.message(self.host, index, size);
        let digest = xxh3_128(&data);
        self.exchanges.push(Exchange {
            index,
            size,
            response_size: self.echo.response_for(size),
            intended,
            digest,
            responded: None,
            response_intact: false,
            failed: false,
        });
        match ep.send(now, self.conn, data) {
            Ok(_) => self.outstanding.push_back(index as usize),
            Err(e) => {
                self.errors.push(e.to_string());
                if let Some(x) = self.exchanges.last_mut() {
                    x.failed = true;
                }
            }
        }
    }
}

impl Application for EchoClient {
    fn on_event(&mut self, now: Time, ep: &mut Endpoint, event: Event) {
        match &event {
            Event::ConnectionFailed { error, .. } => {
                self.errors.push(error.to_string());
                return;
            }
            Event::SendFailed { .. } => return,
            _ => {}
        }
        let Some((_, size, digest)) = self.digests.whole(&event) else {
            return;
        };
        // The server answers in order on the one connection: the oldest outstanding request.
        let Some(i) = self.outstanding.pop_front() else {
            return;
        };
        let (index, req) = (self.exchanges[i].index, self.exchanges[i].size);
        let expected = self.response_payload(index, req);
        let x = &mut self.exchanges[i];
        x.responded = Some(now);
        x.response_intact = size == expected.len() as u64 && digest == xxh3_128(&expected);
        self.issue(now, now, ep);
    }

    fn on_turn(&mut self, now: Time, ep: &mut Endpoint) {
        if self.started || now < self.echo.start {
            return;
        }
        self.started = true;
        for _ in 0..self.echo.concurrency {
            self.issue(self.echo.start, now, ep);
        }
    }

    fn next_wake(&self) -> Option<Time> {
        (!self.started).then_some(self.echo.start)
    }
}

impl Finish for EchoClient {
    fn finished(&self) -> bool {
        self.started
            && (self.exchanges.len() >= self.echo.requests as usize || !self.errors.is_empty())
            && (self.outstanding.is_empty() || !self.errors.is_empty())
    }
}

/// A request as the server got it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    /// The client's host index.
    pub client: u32,
    /// Arrival order on that client's connection.
    pub index: u32,
    /// Payload bytes.
    pub size: u64,
    /// XXH3-128 of the payload.
    pub digest: u128,
    /// When the whole request arrived.
    pub at: Time,
}

/// The server: answers every request on the connection it came from.
pub struct EchoServer {
    pool: PayloadPool,
    echo: Echo,
    per_conn: PerConn<u32>,
    digests: Digests,
    /// Every request that arrived, in arrival order.
    pub requests: Vec<Request>,
    /// Errors xrdma reported, as text.
    pub errors: Vec<String>,
}

impl EchoServer {
    /// The server of `echo`, answering with slices of `pool`.
    pub fn new(pool: PayloadPool, echo: &Echo) -> Self {
        EchoServer {
            pool,
            echo: echo.clone(),
            per_conn: PerConn::new(),
            digests: Digests::default(),
            requests: Vec::new(),
            errors: Vec::new(),
        }
    }
}

impl Application for EchoServer {
    fn on_event(&mut self, now: Time, ep: &mut Endpoint, event: Event) {
        if let Event::ConnectionFailed { error, .. } = &event {
            self.errors.push(error.to_string());
            return;
        }
        let Some((conn, size, digest)) = self.digests.whole(&event) else {
            return;
        };
        let count = self.per_conn.entry(conn, || 0);
        let index = *count;
        *count += 1;
        let client = ep.peer(conn).unwrap_or(u32::MAX);
        self.requests.push(Request {
            client,
            index,
            size,
            digest,
            at: now,
        });
        let response =
            self.pool
                .message(response_stream(client), index, self.echo.response_for(size));
        if let Err(e) = ep.send(now, conn, response) {
            self.errors.push(format!("answering host {client}: {e}"));
        }
    }

    fn on_turn(&mut self, _now: Time, _ep: &mut Endpoint) {}

    fn next_wake(&self) -> Option<Time> {
        None
    }
}

/// Every host's application in an echo run: a client (the sender of requests), the server
/// (their receiver, which answers), or idle.
pub type EchoRole = HostRole<Box<EchoClient>, Box<EchoServer>>;
