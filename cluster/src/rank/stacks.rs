//! The message stack a rank runs its hosts over, and how its connections cross processes
//! ([`RankStack`]): xrdma's endpoints on an RDMA device ([`VerbsRank`], `--backend verbs`),
//! or kernel TCP over this machine's sockets ([`SocketRank`], `--backend sockets`), so a
//! cluster or the two-guest wire compares the two on the same machines and wire.
//!
//! A connection between hosts of two ranks is made in three steps over the bootstrap
//! connection: the sender's rank offers a record per sender host ([`RankStack::offer`]), the
//! receiver's rank answers each ([`RankStack::answer`]) and the sender's rank completes the
//! connection with the answer ([`RankStack::complete`]); before `start`, the receiver's rank
//! finishes what the answers left open ([`RankStack::settle`]).

use crate::bootstrap::secret::{from_hex, random_bytes, to_hex};
use anyhow::{anyhow, bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};
use xrdma::driver::{self, ConnInfo, HalfConn};
use xrdma::{ConnId, Endpoint, Span};
use xrdma_runner::fabric::{Clocked, Fabric, FabricReport, SocketFabric, VerbsFabric};
use xrdma_runner::request::Backend;
use xrdma_runner::stack::{HostStack, TcpMessages};
use xrdma_scenario::Scenario;

/// A rank's message stack and its connections across processes (see the module doc). Host
/// indices are the rank's fabric hosts.
pub trait RankStack {
    /// The fabric the rank's hosts run on.
    type Fabric: Clocked + FabricReport;
    /// A host's message stack.
    type Stack: HostStack<Self::Fabric>;
    /// A sender's connection between its offer and the receiver's answer.
    type Half;

    /// The backend it runs on ([`transport`] names it in the hello: two ranks of one run
    /// must agree).
    const BACKEND: Backend;
    /// The fabric of `hosts` hosts for `sc`, and a stack per host, not yet connected.
    ///
    /// # Errors
    /// A scenario this stack cannot run (naming its line), no device, or a refused call.
    fn build(&mut self, sc: &Scenario, hosts: u32) -> Result<(Self::Fabric, Vec<Self::Stack>)>;
    /// Open sender host `i`'s side of its connection to the receiver: the half, and what to
    /// offer the receiver's rank.
    ///
    /// # Errors
    /// The fabric's refusal.
    fn offer(
        &mut self,
        fabric: &mut Self::Fabric,
        stacks: &mut [Self::Stack],
        i: u32,
    ) -> Result<(Self::Half, serde_json::Value)>;
    /// On the receiver's rank, at receiver host `ri`: answer scenario host `sender`'s
    /// `offer`, which came over the bootstrap connection from `from` to `local` (both
    /// loopback for a pair inside the rank).
    ///
    /// # Errors
    /// A malformed offer, or the fabric's refusal.
    #[allow(clippy::too_many_arguments)]
    fn answer(
        &mut self,
        fabric: &mut Self::Fabric,
        stacks: &mut [Self::Stack],
        ri: u32,
        sender: u32,
        offer: &serde_json::Value,
        from: SocketAddr,
        local: SocketAddr,
    ) -> Result<serde_json::Value>;
    /// Complete sender host `i`'s connection to scenario host `receiver` with the receiver
    /// rank's `answer` (which came from `from`); the sender's connection.
    ///
    /// # Errors
    /// A malformed answer, or the fabric's refusal.
    #[allow(clippy::too_many_arguments)]
    fn complete(
        &mut self,
        fabric: &mut Self::Fabric,
        stacks: &mut [Self::Stack],
        i: u32,
        half: Self::Half,
        receiver: u32,
        answer: &serde_json::Value,
        from: SocketAddr,
    ) -> Result<ConnId>;
    /// On the receiver's rank, after the answers of the pairs inside the rank and again after
    /// the peers' (each time after their senders completed): finish the connections they
    /// left open, by `deadline`. Default: nothing is left open.
    ///
    /// # Errors
    /// A connection not finished by `deadline`.
    fn settle(
        &mut self,
        fabric: &mut Self::Fabric,
        stacks: &mut [Self::Stack],
        deadline: Instant,
    ) -> Result<()> {
        let _ = (fabric, stacks, deadline);
        Ok(())
    }
    /// Start the run's clock: the common `start` of every rank.
    fn start_clock(fabric: &mut Self::Fabric);
}

/// What a rank on `backend` runs, as its hello says ([`crate::bootstrap::Hello::transport`]).
pub fn transport(backend: Backend) -> &'static str {
    match backend {
        Backend::Verbs => "xrdma over the verbs backend",
        Backend::Sockets => "kernel TCP over the sockets backend",
        Backend::Sim => "the simulator",
    }
}

/// Decode a record's value as `T`, naming what it is in the error.
fn decode<T: serde::de::DeserializeOwned>(v: &serde_json::Value, what: &str) -> Result<T> {
    serde_json::from_value(v.clone()).with_context(|| format!("a malformed {what}"))
}

/// xrdma's endpoints on an RDMA device: the records are [`ConnInfo`]s (QP number, GID, the
/// buffers' keys), each side establishes its RC QP with the other's.
#[derive(Debug, Default)]
pub struct VerbsRank;

impl RankStack for VerbsRank {
    type Fabric = VerbsFabric;
    type Stack = Endpoint;
    type Half = HalfConn;

    const BACKEND: Backend = Backend::Verbs;
    fn build(&mut self, sc: &Scenario, hosts: u32) -> Result<(VerbsFabric, Vec<Endpoint>)> {
        let cfg = xrdma_runner::check::check_xrdma(sc)?;
        if sc.stack.is_tcp() {
            bail!(
                "`stack: {}` does not run on the verbs backend: run its ranks with --backend \
                 sockets",
                sc.stack.name()
            );
        }
        let section = sc.verbs.clone().unwrap_or_default();
        let fabric = VerbsFabric::with_rc(hosts, &section, sc.rc_params())?;
        let cfg = xrdma_runner::fabric::config_for(&cfg, &fabric);
        let eps = (0..hosts)
            .map(|_| Endpoint::new(cfg.clone()))
            .collect::<Result<Vec<_>, _>>()?;
        Ok((fabric, eps))
    }
    fn offer(
        &mut self,
        fabric: &mut VerbsFabric,
        stacks: &mut [Endpoint],
        i: u32,
    ) -> Result<(HalfConn, serde_json::Value)> {
        let half = driver::open(&mut stacks[i as usize], &mut fabric.host(i))?;
        Ok((half, serde_json::to_value(half.info)?))
    }
    fn answer(
        &mut self,
        fabric: &mut VerbsFabric,
        stacks: &mut [Endpoint],
        ri: u32,
        sender: u32,
        offer: &serde_json::Value,
        _from: SocketAddr,
        _local: SocketAddr,
    ) -> Result<serde_json::Value> {
        let info: ConnInfo = decode(offer, "connection info")?;
        let ep = &mut stacks[ri as usize];
        let half = driver::open(ep, &mut fabric.host(ri))?;
        let mine = half.info;
        driver::establish(ep, &mut fabric.host(ri), half, &info, sender)
            .with_context(|| format!("connecting host {sender}'s QP"))?;
        Ok(serde_json::to_value(mine)?)
    }
    fn complete(
        &mut self,
        fabric: &mut VerbsFabric,
        stacks: &mut [Endpoint],
        i: u32,
        half: HalfConn,
        receiver: u32,
        answer: &serde_json::Value,
        _from: SocketAddr,
    ) -> Result<ConnId> {
        let info: ConnInfo = decode(answer, "connection info")?;
        let ep = &mut stacks[i as usize];
        Ok(driver::establish(
            ep,
            &mut fabric.host(i),
            half,
            &info,
            receiver,
        )?)
    }
    fn start_clock(fabric: &mut VerbsFabric) {
        fabric.start_clock();
    }
}

/// How often a rank looks at its bootstrap connection once its own hosts are finished
/// (fabric time): a non-blocking read costs a system call, too much for every round.
pub(crate) const BOOTSTRAP_POLL: Span = Span::from_ms(1);

/// Bytes of the cookie a sender's data connection opens with.
const COOKIE_BYTES: usize = 16;

/// The receiver rank's answer on the sockets backend: where to connect, and the cookie to
/// open the connection with.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
struct TcpAnswer {
    address: SocketAddr,
    cookie: String,
}

/// Kernel TCP over this machine's sockets ([`SocketFabric`], `stack: tcp`). The receiver's
/// rank listens on an ephemeral port of the address its peers reached it at and answers
/// each sender host with that address and a fresh random cookie (sent over the
/// authenticated bootstrap connection); the sender's rank connects and writes the cookie
/// first, so the receiver's rank knows the connection's host and refuses (and logs) a
/// connection without a cookie it gave.
#[derive(Debug, Default)]
pub struct SocketRank {
    listener: Option<TcpListener>,
    /// Answers whose connection has not come: cookie, receiver host, sender host.
    pending: Vec<([u8; COOKIE_BYTES], u32, u32)>,
}

impl RankStack for SocketRank {
    type Fabric = SocketFabric;
    type Stack = TcpMessages;
    type Half = ();

    const BACKEND: Backend = Backend::Sockets;
    fn build(&mut self, sc: &Scenario, hosts: u32) -> Result<(SocketFabric, Vec<TcpMessages>)> {
        xrdma_runner::run::check_sockets(sc)?;
        let section = sc.verbs.clone().unwrap_or_default();
        let mut fabric = SocketFabric::new(hosts, section.run_timeout)?;
        // The rank looks at its bootstrap connection between rounds (`super::run`).
        fabric.wake_every(BOOTSTRAP_POLL);
        Ok((
            fabric,
            (0..hosts).map(|_| TcpMessages::new(false)).collect(),
        ))
    }
    fn offer(
        &mut self,
        _fabric: &mut SocketFabric,
        _stacks: &mut [TcpMessages],
        _i: u32,
    ) -> Result<((), serde_json::Value)> {
        Ok(((), serde_json::Value::Null))
    }
    fn answer(
        &mut self,
        _fabric: &mut SocketFabric,
        _stacks: &mut [TcpMessages],
        ri: u32,
        sender: u32,
        _offer: &serde_json::Value,
        _from: SocketAddr,
        local: SocketAddr,
    ) -> Result<serde_json::Value> {
        let listener = match &self.listener {
            Some(l) => l,
            None => {
                let l = TcpListener::bind((local.ip(), 0))
                    .with_context(|| format!("binding a TCP listener on {}", local.ip()))?;
                self.listener.insert(l)
            }
        };
        let address = listener
            .local_addr()
            .context("the TCP listener's address")?;
        let cookie = random_bytes::<COOKIE_BYTES>()?;
        self.pending.push((cookie, ri, sender));
        Ok(serde_json::to_value(TcpAnswer {
            address,
            cookie: to_hex(&cookie),
        })?)
    }
    fn complete(
        &mut self,
        fabric: &mut SocketFabric,
        stacks: &mut [TcpMessages],
        i: u32,
        _half: (),
        receiver: u32,
        answer: &serde_json::Value,
        from: SocketAddr,
    ) -> Result<ConnId> {
        let a: TcpAnswer = decode(answer, "TCP connection answer")?;
        let cookie = from_hex(&a.cookie)
            .filter(|c| c.len() == COOKIE_BYTES)
            .ok_or_else(|| anyhow!("rank at {from} answered with a malformed cookie"))?;
        let mut stream = TcpStream::connect_timeout(&a.address, Duration::from_secs(10))
            .with_context(|| format!("connecting to {} for host {receiver}", a.address))?;
        stream
            .write_all(&cookie)
            .with_context(|| format!("opening the connection to {}", a.address))?;
        let sock = fabric.adopt(i, stream)?;
        Ok(stacks[i as usize].add(sock, receiver))
    }
    fn settle(
        &mut self,
        fabric: &mut SocketFabric,
        stacks: &mut [TcpMessages],
        deadline: Instant,
    ) -> Result<()> {
        let Some(listener) = self.listener.take() else {
            return Ok(());
        };
        listener
            .set_nonblocking(true)
            .context("making the TCP listener non-blocking")?;
        while !self.pending.is_empty() {
            let (mut stream, from) = match listener.accept() {
                Ok(s) => s,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    if Instant::now() >= deadline {
                        let hosts: Vec<u32> = self.pending.iter().map(|p| p.2).collect();
                        bail!(
                            "the TCP connections of sender host(s) {hosts:?} never came to {}",
                            listener.local_addr().map_or("?".into(), |a| a.to_string())
                        );
                    }
                    std::thread::sleep(Duration::from_millis(1));
                    continue;
                }
                Err(e) => return Err(e).context("accepting a TCP connection"),
            };
            let mut cookie = [0u8; COOKIE_BYTES];
            let wait = deadline
                .saturating_duration_since(Instant::now())
                .clamp(Duration::from_millis(1), Duration::from_secs(5));
            let read = stream
                .set_nonblocking(false)
                .and_then(|()| stream.set_read_timeout(Some(wait)))
                .and_then(|()| stream.read_exact(&mut cookie));
            let found = self.pending.iter().position(|p| p.0 == cookie);
            match (read, found) {
                (Ok(()), Some(k)) => {
                    let (_, ri, sender) = self.pending.swap_remove(k);
                    let sock = fabric.adopt(ri, stream)?;
                    stacks[ri as usize].add(sock, sender);
                }
                (read, _) => {
                    let why = read.err().map_or("no cookie this rank gave".into(), |e| {
                        format!("no cookie ({e})")
                    });
                    eprintln!("bootstrap: refused a TCP connection from {from}: {why}");
                }
            }
        }
        Ok(())
    }
    fn start_clock(fabric: &mut SocketFabric) {
        fabric.start_clock();
    }
}

#[cfg(test)]
#[path = "stacks_tests.rs"]
mod tests;
