//! The echo workload as xrdma applications: closed-loop clients that keep a fixed number of
//! requests outstanding, and one server that answers every request as it arrives.
//!
//! A request is intended at the start (the first `concurrency` of them) or at the instant the
//! response that freed its slot arrived; its latency runs from then to the moment its response
//! has fully arrived at the client. Requests are payload slices of the run's [`PayloadPool`]
//! (the client records their XXH3-128, the server digests what arrives); responses are slices
//! too, at the pool "sender" `u32::MAX − client`, so the client checks each response against
//! the digest it expects.

use super::receiver::Reassembly;
use super::{
    mean_shape, ArrivalLog, Digest, ErrorAt, PayloadPool, ReceiverView, Response, SenderRecord,
    SentRecord, Setup, Workload,
};
use crate::role::Finish;
use bytes::Bytes;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::VecDeque;
use xrdma::driver::Application;
use xrdma::AnyStack;
use xrdma::{ConnId, Event, Time};
use xrdma_reports as rep;
use xrdma_scenario::{Echo, Stall};
use xxhash_rust::xxh3::xxh3_128;

/// The pool "sender" whose slices are the responses to `client`.
pub fn response_stream(client: u32) -> u32 {
    u32::MAX - client
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
    seed: u64,
    rng: ChaCha8Rng,
    echo: Echo,
    total_weight: u64,
    started: bool,
    outstanding: VecDeque<usize>,
    digests: Reassembly,
    /// Every request issued so far, by index.
    pub exchanges: Vec<Exchange>,
    /// Errors xrdma reported, as text.
    pub errors: Vec<ErrorAt>,
}

impl EchoClient {
    /// A client on `host` of `echo`, talking over `conn`; request sizes come from ChaCha8
    /// seeded by `seed` with the host index as its stream.
    pub fn new(host: u32, conn: ConnId, pool: PayloadPool, seed: u64, echo: &Echo) -> Self {
        EchoClient {
            host,
            conn,
            pool,
            seed,
            rng: client_rng(seed, host),
            total_weight: echo.request_sizes.total_weight(),
            echo: echo.clone(),
            started: false,
            outstanding: VecDeque::new(),
            digests: Reassembly::default(),
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

    fn issue(&mut self, intended: Time, now: Time, ep: &mut AnyStack) {
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
                self.errors.push(ErrorAt::new(now, e));
                if let Some(x) = self.exchanges.last_mut() {
                    x.failed = true;
                }
            }
        }
    }
}

impl Application<AnyStack> for EchoClient {
    fn on_event(&mut self, now: Time, ep: &mut AnyStack, event: Event) {
        match &event {
            Event::ConnectionFailed { error, .. } => {
                self.errors.push(ErrorAt::new(now, error));
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

    fn on_turn(&mut self, now: Time, ep: &mut AnyStack) {
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

/// The server: answers every request on the connection it came from.
pub struct EchoServer {
    pool: PayloadPool,
    echo: Echo,
    /// Every request that arrived, in arrival order (its sender is the client), and the
    /// errors.
    pub log: ArrivalLog,
}

impl EchoServer {
    /// The server of `echo`, answering with slices of `pool`.
    pub fn new(pool: PayloadPool, echo: &Echo) -> Self {
        EchoServer {
            pool,
            echo: echo.clone(),
            log: ArrivalLog::default(),
        }
    }
}

impl Application<AnyStack> for EchoServer {
    fn on_event(&mut self, now: Time, ep: &mut AnyStack, event: Event) {
        let Some((conn, request)) = self.log.on_event(now, ep, &event) else {
            return;
        };
        let (client, index, size) = (request.sender, request.index, request.size);
        let response =
            self.pool
                .message(response_stream(client), index, self.echo.response_for(size));
        if let Err(e) = ep.send(now, conn, response) {
            self.log
                .errors
                .push(ErrorAt::new(now, format!("answering host {client}: {e}")));
        }
    }

    fn on_turn(&mut self, _now: Time, _ep: &mut AnyStack) {}

    fn next_wake(&self) -> Option<Time> {
        None
    }
}

impl Workload for Echo {
    type Sender = Box<EchoClient>;
    type Receiver = Box<EchoServer>;

    fn kind(&self) -> rep::WorkloadKind {
        rep::WorkloadKind::Echo
    }
    fn hosts(&self) -> u32 {
        Echo::hosts(self)
    }
    fn receiver_host(&self) -> u32 {
        self.server
    }
    fn largest_message(&self) -> u64 {
        self.largest()
    }
    fn stalls(&self) -> &[Stall] {
        &self.stalls
    }
    /// `time-limit` after its start.
    fn deadline(&self, _seed: u64) -> Option<Time> {
        Some(self.start + self.time_limit)
    }
    fn sender(&self, setup: &Setup, host: u32, conn: ConnId) -> Box<EchoClient> {
        Box::new(EchoClient::new(
            host,
            conn,
            setup.pool.clone(),
            setup.seed,
            self,
        ))
    }
    fn receiver(&self, setup: &Setup) -> Box<EchoServer> {
        Box::new(EchoServer::new(setup.pool.clone(), self))
    }
    /// The exchanges the client issued, then the requests it never got to issue (the time
    /// limit came first, or its connection failed), as [`Workload::planned`] states them.
    fn record(&self, c: &Box<EchoClient>) -> SenderRecord {
        let issued = c.exchanges.len();
        SenderRecord {
            host: c.host,
            messages: c
                .exchanges
                .iter()
                .map(|x| SentRecord {
                    index: x.index,
                    size: x.size,
                    intended_ps: x.intended.as_ps(),
                    digest: Some(Digest(x.digest)),
                    completed_ps: x.responded.map(Time::as_ps),
                    response: Some(Response {
                        bytes: x.response_size,
                        intact: x.response_intact,
                    }),
                    // An exchange completes on its response: no send-side stages.
                    timing: None,
                })
                .chain(self.planned(c.seed, c.host).into_iter().skip(issued))
                .collect(),
            errors: c.errors.clone(),
            window: None,
        }
    }
    fn view<'a>(&self, s: &'a Box<EchoServer>) -> ReceiverView<'a> {
        ReceiverView {
            arrivals: &s.log.arrivals,
            errors: &s.log.errors,
        }
    }
    /// The client's requests in the order it draws their sizes (the same stream as
    /// [`EchoClient`]), each intended at the start: a closed loop intends a request when a
    /// response frees its slot, which for a request never issued did not happen, so the start
    /// is the one instant it was due by.
    fn planned(&self, seed: u64, host: u32) -> Vec<SentRecord> {
        let mut rng = client_rng(seed, host);
        let total = self.request_sizes.total_weight();
        (0..self.requests)
            .map(|index| {
                let size = self.request_sizes.pick(rng.random_range(0..total));
                SentRecord {
                    index,
                    size,
                    intended_ps: self.start.as_ps(),
                    digest: None,
                    completed_ps: None,
                    response: Some(Response {
                        bytes: self.response_for(size),
                        intact: false,
                    }),
                    timing: None,
                }
            })
            .collect()
    }
    fn shape(&self, messages: &[rep::MessageRecord]) -> rep::WorkloadInfo {
        mean_shape(rep::WorkloadKind::Echo, self.clients, self.server, messages)
    }
    /// Requests and responses cross the server's link in opposite directions: the larger sum.
    fn bottleneck_bytes(&self, messages: &[rep::MessageRecord]) -> u64 {
        let requests: u64 = messages.iter().map(|m| m.size).sum();
        let responses: u64 = messages.iter().filter_map(|m| m.response_bytes).sum();
        requests.max(responses)
    }
}

/// The request-size stream of client `host`: ChaCha8 seeded by `seed`, the host as its stream.
fn client_rng(seed: u64, host: u32) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(u64::from(host));
    rng
}
