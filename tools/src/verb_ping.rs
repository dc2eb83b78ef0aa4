//! `xrdma ping --verb send|write|read`: verbs-level ping-pong straight on the
//! [`xrdma::Transport`] of a fabric's hosts, perftest's latency tests' counterpart
//! (`ib_send_lat`, `ib_write_lat`, `ib_read_lat`, perftest 4.5 `run_iter_lat_send`,
//! `run_iter_lat_write`, `run_iter_lat` in `perftest_resources.c`). No xrdma core runs: one RC
//! QP per side, one MR of `2·size` bytes (the first half is what this side sends or a READ
//! fetches, the second half is where the peer's data lands), WRs posted and WCs polled by
//! this module.
//!
//! What each verb measures (the client is host 0; a sample is the time from one post to the
//! next, as perftest takes `tposted[i + 1] − tposted[i]`, and the next post happens in the
//! turn that sees the previous exchange end):
//!
//! - `send`: the client SENDs `size` bytes, the server's receive completion triggers its
//!   SEND back, the client's receive completion ends the round trip; reported RTT/2, as
//!   `ib_send_lat`. Every side keeps [`RECV_DEPTH`] receive WRs posted and reposts one per
//!   receive completion.
//! - `write`: each side RDMA WRITEs `size` bytes into the peer's receive half, the last
//!   byte holding the exchange's count (mod 256); the other side spins on the last byte of
//!   its receive half until it reads that count, then writes back; no receive WR, no
//!   receiver completion; reported RTT/2, as `ib_write_lat`. The spin is a
//!   [`xrdma::LocalMemory::read_into`] of that one byte per turn. On a device that is
//!   perftest's loop (a turn is one `poll_cq` and one byte copy). The simulator wakes a host
//!   only for a completion or a wake time, so a side that waits for a WRITE asks to be woken
//!   every [`SIM_POLL_PERIOD`]: the arrival is seen up to one period late (on the server
//!   this is hidden while the NIC still sends the ACK of that WRITE, which the reply queues
//!   behind; on the client it adds up to one period to a round trip, half of it to the
//!   reported figure).
//! - `read`: the client RDMA READs `size` bytes of the server's first half; the READ's
//!   completion ends the sample; the full post-to-completion time is reported (not halved),
//!   as `ib_read_lat`. The server does nothing but keep its QP up.
//!
//! Send WRs are all signaled (perftest signals every WRITE and READ, and every `cq_mod`-th
//! SEND; a send completion here only frees the slot). perftest drops the two largest samples
//! before its statistics (`LAT_MEASURE_TAIL`); these statistics keep every sample.
//!
//! [`run`] puts both sides in one process (hosts 0 and 1); [`serve`] and [`connect`] split
//! them over two processes through the TCP bootstrap, as today's ping does.

use super::ping::PingOptions;
use super::stats::LatencyStats;
use anyhow::{anyhow, bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use xrdma::{
    LocalMemory, MemoryRegion, QpAddress, QpCaps, QpNum, RecvWr, SendOpcode, SendWr, Sge, Span,
    Time, Transport, WcOpcode, WcStatus, WorkCompletion,
};
use xrdma_cluster::bootstrap::{content_hash, Auth, ConnRecord, Frame, Hello, Listener, Peer};
use xrdma_runner::drive::{turns, Clock, Hosts, Round};
use xrdma_runner::fabric::Fabric;

/// What `xrdma ping` measures (`--verb`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, clap::ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verb {
    /// xrdma message round trips through the core (eager SEND with immediate and the core's
    /// ACKs), RTT/2 (the `super::ping` module).
    Xrdma,
    /// Verbs SEND ping-pong, RTT/2 (`ib_send_lat`).
    Send,
    /// Verbs RDMA WRITE ping-pong, the receiver spinning on the last byte, RTT/2
    /// (`ib_write_lat`).
    Write,
    /// Verbs RDMA READ, post to completion, not halved (`ib_read_lat`).
    Read,
}

impl Verb {
    /// The name `--verb` takes.
    pub fn name(self) -> &'static str {
        match self {
            Verb::Xrdma => "xrdma",
            Verb::Send => "send",
            Verb::Write => "write",
            Verb::Read => "read",
        }
    }

    /// The perftest tool measuring the same (`None` for xrdma's own messages).
    pub fn perftest(self) -> Option<&'static str> {
        match self {
            Verb::Xrdma => None,
            Verb::Send => Some("ib_send_lat"),
            Verb::Write => Some("ib_write_lat"),
            Verb::Read => Some("ib_read_lat"),
        }
    }

    /// Whether the reported figure is half the round trip (all but READ, as perftest's
    /// `rtt_factor`).
    pub fn halved(self) -> bool {
        self != Verb::Read
    }

    /// What one sample is, for the output's title line.
    pub fn describes(self) -> &'static str {
        match self {
            Verb::Xrdma => "half round trip (RTT/2), one xrdma connection",
            Verb::Send => "half round trip (RTT/2) of verbs SENDs, one RC QP",
            Verb::Write => {
                "half round trip (RTT/2) of RDMA WRITEs, receiver polls the last byte, one RC QP"
            }
            Verb::Read => "RDMA READ post to completion (not halved), one RC QP",
        }
    }

    /// Refuse a size this verb cannot ping: 0 bytes for WRITE (no last byte to poll) and
    /// READ (nothing to fetch), and above 2³² − 1 bytes (one SGE's length) for every
    /// verbs-level ping.
    ///
    /// # Errors
    /// The size and why.
    pub fn check_size(self, size: u64) -> Result<()> {
        match self {
            Verb::Xrdma if size > xrdma::MAX_MESSAGE_SIZE => bail!(
                "--size {size} B is above xrdma's largest message, {} B (2 GiB)",
                xrdma::MAX_MESSAGE_SIZE
            ),
            Verb::Xrdma => Ok(()),
            Verb::Write | Verb::Read if size == 0 => bail!(
                "--verb {} needs --size of at least 1 byte ({})",
                self.name(),
                if self == Verb::Write {
                    "the receiver polls the last byte"
                } else {
                    "a READ of nothing measures nothing"
                }
            ),
            _ if size > u64::from(u32::MAX) => bail!(
                "--verb {} takes at most {} bytes (one SGE); got {size}",
                self.name(),
                u32::MAX
            ),
            _ => Ok(()),
        }
    }
}

/// How often a simulated host waiting for an RDMA WRITE reads the last byte (see the
/// module's note): 1 ns, so a reported WRITE half round trip is at most 0.5 ns above the
/// wire's.
pub const SIM_POLL_PERIOD: Span = Span::from_ns(1);

/// Receive WRs each side of a SEND ping keeps posted.
pub const RECV_DEPTH: u32 = 4;

/// What a side sends the other to connect: its QP and where its MR is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct PeerInfo {
    qp: QpAddress,
    addr: u64,
    rkey: u32,
}

/// One side of a verbs-level ping.
struct Side {
    verb: Verb,
    client: bool,
    qpn: QpNum,
    qp: QpAddress,
    mr: MemoryRegion,
    size: u32,
    peer: Option<PeerInfo>,
    /// Exchanges to run (warm-up included); `u32::MAX` on a two-process server, which runs
    /// until the client says `bye`.
    total: u32,
    sent: u32,
    arrived: u32,
    posted_at: Option<Time>,
    rtts: Vec<u64>,
    wcs: Vec<WorkCompletion>,
    error: Option<String>,
}

impl Side {
    /// Register the MR, create the QP, fill the send half and post the receives.
    /// `total`: the exchanges this side takes part in (warm-up included).
    fn new<T: Transport>(
        t: &mut T,
        verb: Verb,
        client: bool,
        total: u32,
        opts: &PingOptions,
    ) -> Result<Self> {
        verb.check_size(opts.size)?;
        let size = u32::try_from(opts.size).context("--size")?;
        let mr = t
            .register_memory((2 * opts.size).max(1))
            .context("registering the ping's memory")?;
        let caps = QpCaps {
            max_send_wr: 16,
            max_recv_wr: 16,
            max_inline_data: xrdma::Config::default().inline_limit,
        };
        let qp = t.create_qp(caps).context("creating the QP")?;
        let pattern: Vec<u8> = (0..opts.size).map(|i| i as u8).collect();
        t.write(mr.addr, &[&pattern])?;
        let side = Side {
            verb,
            client,
            qpn: qp.qpn,
            qp,
            mr,
            size,
            peer: None,
            total,
            sent: 0,
            arrived: 0,
            posted_at: None,
            rtts: Vec::with_capacity(if client { total as usize } else { 0 }),
            wcs: Vec::with_capacity(16),
            error: None,
        };
        if verb == Verb::Send {
            for i in 0..RECV_DEPTH {
                t.post_recv(side.qpn, &side.recv_wr(u64::from(i)))?;
            }
        }
        Ok(side)
    }

    fn info(&self) -> PeerInfo {
        PeerInfo {
            qp: self.qp,
            addr: self.mr.addr,
            rkey: self.mr.rkey,
        }
    }

    /// Connect the QP to the peer's.
    fn connect<T: Transport>(&mut self, t: &mut T, peer: PeerInfo) -> Result<()> {
        t.connect_qp(self.qpn, &peer.qp)
            .context("connecting the QP")?;
        self.peer = Some(peer);
        Ok(())
    }

    fn recv_wr(&self, wr_id: u64) -> RecvWr {
        RecvWr {
            wr_id,
            sge: Sge {
                addr: self.mr.addr + u64::from(self.size),
                len: self.size,
                lkey: self.mr.lkey,
            },
        }
    }

    /// Whether this side has nothing left to do (a server never has, until told).
    fn finished(&self) -> bool {
        self.error.is_some() || (self.sent == self.total && self.posted_at.is_none())
    }

    /// Whether this side spins on a WRITE's last byte: a WRITE ping not finished (a
    /// client between its post and the answer, a server between answers).
    fn waiting_for_write(&self) -> bool {
        self.verb == Verb::Write && !self.finished()
    }

    /// When the fabric should give this side a turn even if nothing completes.
    fn wake(&self, now: Time) -> Time {
        if self.waiting_for_write() {
            now + SIM_POLL_PERIOD
        } else {
            Time::MAX
        }
    }

    /// One turn: take completions, spin once on the WRITE byte, post what is due.
    fn turn<T: Transport>(&mut self, t: &mut T) {
        if let Err(e) = self.try_turn(t) {
            self.error.get_or_insert(e.to_string());
        }
    }

    /// The client reads the transport's clock ([`Transport::now`], the fabric's) only when an
    /// exchange ends and the next is posted, once for both, as perftest's `tposted`.
    fn try_turn<T: Transport>(&mut self, t: &mut T) -> Result<()> {
        if self.error.is_some() {
            return Ok(());
        }
        self.wcs.clear();
        while t.poll_cq(&mut self.wcs, 16) == 16 {}
        for i in 0..self.wcs.len() {
            let wc = self.wcs[i];
            if wc.status != WcStatus::Success {
                bail!(
                    "{:?} completion {} failed: {:?}",
                    wc.opcode,
                    wc.wr_id,
                    wc.status
                );
            }
            match wc.opcode {
                WcOpcode::Recv => {
                    if wc.byte_len != self.size {
                        bail!(
                            "a SEND of {} bytes arrived, {} expected",
                            wc.byte_len,
                            self.size
                        );
                    }
                    self.arrived += 1;
                    t.post_recv(self.qpn, &self.recv_wr(wc.wr_id))?;
                }
                WcOpcode::RdmaRead => self.arrived += 1,
                WcOpcode::Send | WcOpcode::RdmaWrite => {}
                WcOpcode::RecvRdmaWithImm => bail!("a WRITE with immediate arrived unasked"),
            }
        }
        if self.verb == Verb::Write && self.arrived < self.sent + u32::from(!self.client) {
            let mut last = [0u8];
            t.read_into(self.mr.addr + 2 * u64::from(self.size) - 1, &mut last)?;
            if last[0] == (self.arrived + 1) as u8 {
                self.arrived += 1;
            }
        }
        if self.client {
            let mut now = None;
            if let Some(at) = self.posted_at {
                if self.arrived < self.sent {
                    return Ok(());
                }
                let end = t.now();
                self.rtts.push((end - at).as_ps());
                self.posted_at = None;
                now = Some(end);
            }
            if self.sent < self.total {
                let at = now.unwrap_or_else(|| t.now());
                self.post(t)?;
                self.posted_at = Some(at);
            }
        } else if self.verb != Verb::Read && self.arrived > self.sent {
            self.post(t)?;
        }
        Ok(())
    }

    /// Post the next exchange's WR.
    fn post<T: Transport>(&mut self, t: &mut T) -> Result<()> {
        let peer = self
            .peer
            .ok_or_else(|| anyhow!("the QP is not connected"))?;
        self.sent += 1;
        let (opcode, local, remote) = match self.verb {
            Verb::Send => (SendOpcode::Send, self.mr.addr, 0),
            Verb::Write => {
                t.write(
                    self.mr.addr + u64::from(self.size) - 1,
                    &[&[self.sent as u8]],
                )?;
                (
                    SendOpcode::RdmaWrite,
                    self.mr.addr,
                    peer.addr + u64::from(self.size),
                )
            }
            Verb::Read => (
                SendOpcode::RdmaRead,
                self.mr.addr + u64::from(self.size),
                peer.addr,
            ),
            Verb::Xrdma => bail!("--verb xrdma runs through the core, not here"),
        };
        let wr = SendWr {
            wr_id: u64::from(self.sent),
            opcode,
            sge: Sge {
                addr: local,
                len: self.size,
                lkey: self.mr.lkey,
            },
            imm: 0,
            remote_addr: remote,
            rkey: peer.rkey,
            signaled: true,
        };
        t.post_send(self.qpn, &wr)?;
        Ok(())
    }
}

/// What a verbs-level ping measured.
#[derive(Clone, Debug, PartialEq)]
pub struct VerbPingReport {
    /// The verb.
    pub verb: Verb,
    /// The samples, ps, in the order measured: half round trips ([`Verb::halved`]) or READ
    /// post-to-completion times.
    pub samples_ps: Vec<u64>,
    /// Their statistics.
    pub stats: LatencyStats,
    /// Rounds of turns (each host one turn) per exchange, warm-up included: how often the
    /// fabric polled while an exchange was out.
    pub rounds_per_exchange: f64,
}

fn refuse_xrdma(verb: Verb, opts: &PingOptions) -> Result<()> {
    if verb == Verb::Xrdma {
        bail!("--verb xrdma runs through the xrdma core: use tools::ping");
    }
    if opts.iters == 0 {
        bail!("--iters must be at least 1");
    }
    verb.check_size(opts.size)
}

/// Run `opts.warmup + opts.iters` exchanges of `verb` between hosts 0 (client) and 1
/// (server) of `fabric`, one RC QP each.
///
/// # Errors
/// `--verb xrdma`, a size the verb refuses ([`Verb::check_size`]), `iters` 0, fewer than two
/// hosts, a verb that fails, a completion in error, or a fabric that stopped first.
pub fn run<F: Fabric>(fabric: &mut F, verb: Verb, opts: &PingOptions) -> Result<VerbPingReport> {
    refuse_xrdma(verb, opts)?;
    if fabric.hosts() < 2 {
        bail!(
            "the ping needs two hosts; the fabric has {}",
            fabric.hosts()
        );
    }
    let total = opts.warmup.saturating_add(opts.iters);
    let mut client = Side::new(&mut fabric.host(0), verb, true, total, opts)?;
    let mut server = Side::new(&mut fabric.host(1), verb, false, total, opts)?;
    let (ci, si) = (client.info(), server.info());
    client.connect(&mut fabric.host(0), si)?;
    server.connect(&mut fabric.host(1), ci)?;
    let mut sides = PairSides {
        client: &mut client,
        server: &mut server,
        settled: false,
    };
    let rounds = turns(fabric, Clock::Sparse, &mut sides).rounds;
    if let Some(e) = client.error.as_ref().or(server.error.as_ref()) {
        bail!("ping --verb {} failed: {e}", verb.name());
    }
    report(fabric, &client, rounds, opts)
}

/// Both sides of an in-process verbs-level ping as [`run`] hands them to the turn loop
/// (samples come from the transport's clock, so the round's is read sparsely,
/// [`Clock::Sparse`]): settled once the client is finished, stopped by an error.
struct PairSides<'a> {
    client: &'a mut Side,
    server: &'a mut Side,
    settled: bool,
}

impl<F: Fabric> Hosts<F> for PairSides<'_> {
    fn turn(&mut self, fabric: &mut F, h: u32, now: Time, _settled: bool) -> Option<Time> {
        let side = match h {
            0 => &mut *self.client,
            1 => &mut *self.server,
            _ => return None,
        };
        side.turn(&mut fabric.host(h));
        (!self.settled).then(|| side.wake(now))
    }

    fn after_round(&mut self, fabric: &mut F, _now: Time) -> Round {
        if self.client.error.is_some() || self.server.error.is_some() {
            return Round::Stop;
        }
        if !self.settled && self.client.finished() {
            self.settled = true;
            fabric.set_wake(0, Time::MAX);
            fabric.set_wake(1, Time::MAX);
        }
        if self.settled {
            Round::Settled
        } else {
            Round::Go
        }
    }
}

/// The figures of a finished client.
fn report<F: Fabric>(
    fabric: &F,
    client: &Side,
    rounds: u64,
    opts: &PingOptions,
) -> Result<VerbPingReport> {
    if client.rtts.len() < client.total as usize {
        bail!(
            "the {} fabric stopped at {} after {} of {} exchanges",
            fabric.backend(),
            fabric.now(),
            client.rtts.len(),
            client.total
        );
    }
    let div = if client.verb.halved() { 2 } else { 1 };
    let samples_ps: Vec<u64> = client.rtts[opts.warmup as usize..]
        .iter()
        .map(|&t| t / div)
        .collect();
    let Some(stats) = LatencyStats::from_ps(opts.size, &samples_ps) else {
        bail!("no exchange was measured");
    };
    Ok(VerbPingReport {
        verb: client.verb,
        samples_ps,
        stats,
        rounds_per_exchange: rounds as f64 / client.rtts.len().max(1) as f64,
    })
}

/// The bootstrap rank of the client; the connection record is the one client → server.
const CLIENT: u32 = 0;
/// The bootstrap rank of the server.
const SERVER: u32 = 1;

/// How often (fabric time) a server looks for the client's `bye`.
const BYE_POLL: Span = Span::from_ms(1);

/// What the two ends must agree on (the verb and the size; the counts are the client's),
/// hashed into the bootstrap's hello.
fn hello(verb: Verb, opts: &PingOptions, rank: u32) -> Hello {
    let terms = format!(
        "xrdma ping --verb {}: one RC QP, size {}",
        verb.name(),
        opts.size
    );
    Hello::new("ping-verbs", &content_hash(terms.as_bytes()), rank)
}

/// Swap [`PeerInfo`] with the other process and connect host 0's QP to its.
fn join<F: Fabric>(fabric: &mut F, peer: &mut Peer, side: &mut Side, client: bool) -> Result<()> {
    let mine = ConnRecord::new(CLIENT, SERVER, &side.info())?;
    let theirs = peer.exchange_conns(vec![mine], client)?;
    let info: PeerInfo = theirs
        .iter()
        .find(|c| c.sender == CLIENT && c.receiver == SERVER)
        .ok_or_else(|| anyhow!("the other side sent no connection info"))?
        .decode(peer.addr())?;
    side.connect(&mut fabric.host(0), info)
}

/// Turn host 0 of `fabric` (running `side`) through the turn loop until `done(now, side)`
/// holds (asked once per round) or the side fails. Returns the rounds run.
///
/// # Errors
/// The fabric stopped (its run timeout passed) first.
fn drive_side<F: Fabric>(
    fabric: &mut F,
    side: &mut Side,
    done: impl FnMut(Time, &Side) -> bool,
) -> Result<u64> {
    let ended = turns(fabric, Clock::Sparse, &mut OneSide { side, done });
    if !ended.stopped {
        bail!(
            "the {} fabric stopped at {} before the run finished",
            fabric.backend(),
            fabric.now()
        );
    }
    Ok(ended.rounds)
}

/// One side of a two-process verbs-level ping on host 0, as [`drive_side`] hands it to the
/// turn loop: stopped once `done` holds or the side fails.
struct OneSide<'a, D> {
    side: &'a mut Side,
    done: D,
}

impl<F: Fabric, D: FnMut(Time, &Side) -> bool> Hosts<F> for OneSide<'_, D> {
    fn turn(&mut self, fabric: &mut F, h: u32, now: Time, _settled: bool) -> Option<Time> {
        if h != 0 {
            return None;
        }
        self.side.turn(&mut fabric.host(0));
        Some(self.side.wake(now))
    }

    fn after_round(&mut self, _fabric: &mut F, now: Time) -> Round {
        if self.side.error.is_some() || (self.done)(now, self.side) {
            Round::Stop
        } else {
            Round::Go
        }
    }
}

/// What a verbs-level ping server did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerbServeReport {
    /// The client's bootstrap address.
    pub client: SocketAddr,
    /// Exchanges answered (SENDs or WRITEs sent back; 0 for READ, which the server's CPU
    /// never sees).
    pub answered: u64,
}

/// Serve one two-process verbs-level ping on host 0 of `fabric`: listen on `bind`, wait (up
/// to `timeout`) for a client of the same `verb` and `opts.size` (its counts are its own), connect one RC QP through the
/// bootstrap, answer every exchange until the client says `bye`.
///
/// # Errors
/// Bootstrap failures (no client, other version, verb or options), setup failures, a
/// completion in error, or the fabric's run timeout.
pub fn serve<F: Fabric>(
    fabric: &mut F,
    bind: SocketAddr,
    timeout: Duration,
    verb: Verb,
    opts: &PingOptions,
) -> Result<VerbServeReport> {
    refuse_xrdma(verb, opts)?;
    let listener = Listener::bind(bind)?;
    eprintln!(
        "ping --verb {} server: listening on {}",
        verb.name(),
        listener.local_addr()
    );
    let mut peer = listener.accept(Instant::now() + timeout, timeout)?;
    // Open by design, as `ib_send_lat`'s server is: no job secret is asked.
    peer.handshake(&hello(verb, opts, SERVER), Auth::Open)?;
    let mut side = Side::new(&mut fabric.host(0), verb, false, u32::MAX, opts)?;
    join(fabric, &mut peer, &mut side, false)?;
    peer.send(&Frame::Start)?;
    let mut next_poll = Time::ZERO;
    let mut failure = None;
    drive_side(fabric, &mut side, |now, _| {
        if now < next_poll {
            return false;
        }
        next_poll = now + BYE_POLL;
        match peer.try_recv() {
            Ok(None) => false,
            Ok(Some(Frame::Bye)) => true,
            Ok(Some(_)) => {
                failure = Some(anyhow!("the client sent an unexpected frame"));
                true
            }
            Err(e) => {
                failure = Some(e.into());
                true
            }
        }
    })?;
    if let Some(e) = side.error {
        bail!("ping --verb {} server failed: {e}", verb.name());
    }
    if let Some(e) = failure {
        return Err(e);
    }
    Ok(VerbServeReport {
        client: peer.addr(),
        answered: u64::from(side.sent),
    })
}

/// The client of a two-process verbs-level ping: connect to the server at `server`
/// (retrying until `timeout`), set up the RC QP through the bootstrap and run `opts` from
/// host 0 of `fabric`, on this process's clock.
///
/// # Errors
/// As [`run`], and bootstrap failures (no server, other version, verb or options).
pub fn connect<F: Fabric>(
    fabric: &mut F,
    server: SocketAddr,
    timeout: Duration,
    verb: Verb,
    opts: &PingOptions,
) -> Result<VerbPingReport> {
    refuse_xrdma(verb, opts)?;
    let mut peer = Peer::connect(server, Instant::now() + timeout, timeout)?;
    peer.handshake(&hello(verb, opts, CLIENT), Auth::Open)?;
    let total = opts.warmup.saturating_add(opts.iters);
    let mut side = Side::new(&mut fabric.host(0), verb, true, total, opts)?;
    join(fabric, &mut peer, &mut side, true)?;
    peer.expect("start")?;
    let rounds = drive_side(fabric, &mut side, |_, s| s.finished());
    // Tell the server we are done, whether or not the run went well.
    let bye = peer.send(&Frame::Bye);
    let rounds = rounds?;
    if let Some(e) = &side.error {
        bail!("ping --verb {} failed: {e}", verb.name());
    }
    bye?;
    report(fabric, &side, rounds, opts)
}

/// Refuse a simulated host model for a verbs-level ping: the model charges the core
/// driver's turn (`xrdma_runner::host_cpu::turn`), which these pings do not run, so its
/// figures would not be the profile's.
///
/// # Errors
/// `--host-profile` given with a verb other than [`Verb::Xrdma`].
pub fn require_ideal_host(verb: Verb, host_profile: Option<&str>) -> Result<()> {
    match host_profile {
        Some(p) if verb != Verb::Xrdma => bail!(
            "--host-profile {p} applies to --verb xrdma only: the verbs-level pings run on \
             the simulator's ideal host"
        ),
        _ => Ok(()),
    }
}
