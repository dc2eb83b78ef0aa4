//! Two-process tools: one xrdma connection between a server process and a client process, set
//! up through the TCP bootstrap ([`xrdma_cluster::bootstrap`]) like perftest's server and client.
//!
//! The server listens, the client connects (retrying until the timeout, so either may start
//! first); both check each other's tool, version and options ([`Hello`]), swap their
//! [`ConnInfo`], connect their QPs, and the server says `start`. Each process drives host 0 of
//! its own fabric on its own clock. When the client is done it says `bye`, which ends the
//! server's loop.

use anyhow::{anyhow, bail, Context, Result};
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use xrdma::driver::{self, Application, ConnInfo, TurnScratch};
use xrdma::{Config, ConnId, Endpoint, Span, Time};
use xrdma_cluster::bootstrap::{content_hash, Auth, ConnRecord, Frame, Hello, Listener, Peer};
use xrdma_runner::drive::{turns, Clock, Hosts, Round};
use xrdma_runner::fabric::Fabric;

/// The bootstrap rank of the client; its connection is the one client → server.
const CLIENT: u32 = 0;
/// The bootstrap rank of the server.
const SERVER: u32 = 1;

/// How often (fabric time) a server looks for the client's `bye`: a socket read is a system
/// call, too costly for every busy-polling round.
const BYE_POLL: Span = Span::from_ms(1);

/// What both ends must agree on: the tool's name and a description of its options (hashed).
#[derive(Clone, Copy, Debug)]
pub struct Agreement<'a> {
    /// The tool (`ping`, `bw`).
    pub tool: &'a str,
    /// Everything the two ends must share, as text (e.g. the endpoint configuration).
    pub terms: &'a str,
}

impl Agreement<'_> {
    fn hello(&self, rank: u32) -> Hello {
        Hello::new(self.tool, &content_hash(self.terms.as_bytes()), rank)
    }
}

/// One end of a connected two-process tool.
pub struct Remote {
    /// The bootstrap connection to the other process.
    pub peer: Peer,
    /// This process's endpoint (on host 0 of its fabric).
    pub ep: Endpoint,
    /// The xrdma connection to the other process.
    pub conn: ConnId,
}

/// Exchange connection info with `peer`, connect host 0 of `fabric`'s QP to the other side's
/// and return the connection. `client` says which side this is.
fn join<F: Fabric>(
    fabric: &mut F,
    peer: &mut Peer,
    ep: &mut Endpoint,
    client: bool,
) -> Result<ConnId> {
    let half = driver::open(ep, &mut fabric.host(0)).context("opening the QP")?;
    let mine = ConnRecord::new(CLIENT, SERVER, &half.info)?;
    let theirs = peer.exchange_conns(vec![mine], client)?;
    let info: ConnInfo = theirs
        .iter()
        .find(|c| c.sender == CLIENT && c.receiver == SERVER)
        .ok_or_else(|| anyhow!("the other side sent no connection info"))?
        .decode(peer.addr())?;
    let label = if client { SERVER } else { CLIENT };
    let conn = driver::establish(ep, &mut fabric.host(0), half, &info, label)
        .context("connecting the QP")?;
    Ok(conn)
}

/// Serve side: listen on `bind`, wait up to `timeout` for a client that agrees on `terms`,
/// connect one xrdma connection with `cfg`, and say `start`.
///
/// # Errors
/// Bootstrap failures (no client, a client of another tool, version or options), setup
/// failures.
pub fn accept<F: Fabric>(
    fabric: &mut F,
    bind: SocketAddr,
    timeout: Duration,
    terms: Agreement<'_>,
    cfg: Config,
) -> Result<Remote> {
    let listener = Listener::bind(bind)?;
    eprintln!(
        "{} server: listening on {}",
        terms.tool,
        listener.local_addr()
    );
    let mut peer = listener.accept(Instant::now() + timeout, timeout)?;
    // Open by design, as perftest's servers are: whoever reaches the port and agrees on the
    // terms is served; no job secret is asked (only a run's ranks prove one).
    peer.handshake(&terms.hello(SERVER), Auth::Open)?;
    let mut ep = Endpoint::new(xrdma_runner::fabric::config_for(&cfg, fabric))?;
    let conn = join(fabric, &mut peer, &mut ep, false)?;
    peer.send(&Frame::Start)?;
    Ok(Remote { peer, ep, conn })
}

/// Client side: connect to the server at `server` (retrying until `timeout`), agree on
/// `terms`, connect one xrdma connection with `cfg`, and wait for `start`.
///
/// # Errors
/// Bootstrap failures (no server, a server of another tool, version or options), setup
/// failures.
pub fn connect<F: Fabric>(
    fabric: &mut F,
    server: SocketAddr,
    timeout: Duration,
    terms: Agreement<'_>,
    cfg: Config,
) -> Result<Remote> {
    let mut peer = Peer::connect(server, Instant::now() + timeout, timeout)?;
    peer.handshake(&terms.hello(CLIENT), Auth::Open)?;
    let mut ep = Endpoint::new(xrdma_runner::fabric::config_for(&cfg, fabric))?;
    let conn = join(fabric, &mut peer, &mut ep, true)?;
    peer.expect("start")?;
    Ok(Remote { peer, ep, conn })
}

/// Turn host 0 of `fabric` (running `app` on `ep`) until `done(now, app)` holds or the fabric
/// stops; `done` is asked once per round of turns. Returns the rounds run.
///
/// # Errors
/// The fabric stopped (its run timeout passed) before `done` held.
pub fn drive_one<F: Fabric, A: Application>(
    fabric: &mut F,
    ep: &mut Endpoint,
    app: &mut A,
    done: impl FnMut(Time, &A) -> bool,
) -> Result<u64> {
    let mut host = OneHost {
        ep,
        app,
        done,
        settled: false,
        scratch: TurnScratch::default(),
    };
    let ended = turns(fabric, Clock::EveryRound, &mut host);
    if !host.settled {
        bail!(
            "the {} fabric stopped at {} before the run finished",
            fabric.backend(),
            fabric.now()
        );
    }
    Ok(ended.rounds)
}

/// Host 0 of a two-process tool as [`drive_one`] hands it to the turn loop: settled, for
/// good, once `done` holds.
struct OneHost<'a, A, D> {
    ep: &'a mut Endpoint,
    app: &'a mut A,
    done: D,
    settled: bool,
    scratch: TurnScratch,
}

impl<F, A, D> Hosts<F> for OneHost<'_, A, D>
where
    F: Fabric,
    A: Application,
    D: FnMut(Time, &A) -> bool,
{
    fn turn(&mut self, fabric: &mut F, h: u32, now: Time, _settled: bool) -> Option<Time> {
        if h != 0 {
            return None;
        }
        let t = &mut fabric.host(0);
        xrdma_runner::host_cpu::turn(now, self.ep, t, self.app, &mut self.scratch)
    }

    fn after_round(&mut self, _fabric: &mut F, now: Time) -> Round {
        self.settled = self.settled || (self.done)(now, self.app);
        if self.settled {
            Round::Settled
        } else {
            Round::Go
        }
    }
}

/// Server side after [`accept`]: run `app` until the client says `bye` or `failed(app)`
/// holds.
///
/// # Errors
/// The client sent something other than `bye`, the bootstrap connection broke, or the
/// fabric's run timeout passed.
pub fn serve_until_bye<F: Fabric, A: Application>(
    fabric: &mut F,
    r: &mut Remote,
    app: &mut A,
    failed: impl Fn(&A) -> bool,
) -> Result<()> {
    let mut next_poll = Time::ZERO;
    let mut failure = None;
    let peer = &mut r.peer;
    drive_one(fabric, &mut r.ep, app, |now, a| {
        if failed(a) {
            return true;
        }
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
    failure.map_or(Ok(()), Err)
}

/// Client side when its run is over: tell the server, whether or not the run went well.
///
/// # Errors
/// The bootstrap connection broke.
pub fn bye(r: &mut Remote) -> Result<()> {
    Ok(r.peer.send(&Frame::Bye)?)
}
