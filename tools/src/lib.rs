//! The xrdma test bed's tools and studies, each a library call the `xrdma` command line makes:
//!
//! - perftest-like measurement tools on any [`Fabric`]: message latency ([`ping`]),
//!   verbs-level SEND, WRITE and READ latency ([`verb_ping`], straight on the hosts'
//!   transports, no core; both pings printed by [`ping_out`]), streaming throughput ([`bw`]),
//!   QP setup fresh vs from the QP cache ([`qp_setup`]), a long run with failures injected
//!   ([`soak`]), the two-process form of ping and bw ([`two_process`], [`remote`]) and, on an
//!   RDMA device, the CPU use of an idle worker in hybrid polling mode (`idle`, feature
//!   `verbs`);
//! - the host model fitted to a device ([`calibrate`], host profiles read by
//!   [`profile_file`]), the verbs-level suite on a device ([`conformance`]);
//! - results read back: runs side by side ([`compare`]), an endpoint's live or recorded
//!   statistics ([`stat`]), the simulated wire against a captured one ([`wire_compare`]);
//! - the simulator's own benchmarks ([`mod@bench`], [`window_bench`]);
//! - standard output that survives a closed pipe ([`output`], the [`out!`] and [`outln!`]
//!   macros).
//!
//! Each tool but [`verb_ping`] puts two xrdma endpoints on hosts 0 and 1 of a fabric, joined
//! by one connection, and drives them through the runner's one turn loop
//! ([`xrdma_runner::drive::turns`]) exactly as a scenario run does: on the simulator time is
//! virtual, on a device it is the wall clock.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod bench;
pub mod calibrate;
pub mod compare;
pub mod conformance;
pub mod output;
pub mod profile_file;
pub mod stat;
pub mod window_bench;
pub mod wire_compare;

pub mod bw;
pub mod cpu;
/// On an RDMA device; a build without the `verbs` feature has the same entry point, which says
/// how to build one (`idle_absent.rs`). The crate's one gate on the feature.
#[cfg_attr(not(feature = "verbs"), path = "idle_absent.rs")]
pub mod idle;
pub mod ping;
pub mod ping_out;
pub mod qp_setup;
pub mod remote;
pub mod soak;
pub mod stats;
pub mod two_process;
pub mod verb_ping;

use anyhow::{bail, Context, Result};
use xrdma::driver::{self, Application, TurnScratch};

/// The most iterations (round trips, messages, QP pairs) a tool runs, and the most warm-up
/// round trips: each one's sample is kept in memory (8 bytes), so 10 M hold 80 MB, and larger
/// counts asked for an allocation that aborted the process (4 G round trips, 32 GB).
pub const MAX_ITERS: u32 = 10_000_000;

/// Parses an iteration count of a tool's command line (`--iters`): a whole number from 1 to
/// [`MAX_ITERS`].
///
/// # Errors
/// Not a whole number, or outside `1..=MAX_ITERS`; the message says which.
pub fn parse_iters(s: &str) -> std::result::Result<u32, String> {
    parse_count(s, 1)
}

/// Parses a warm-up count (`--warmup`): a whole number from 0 to [`MAX_ITERS`].
///
/// # Errors
/// Not a whole number, or above [`MAX_ITERS`]; the message says which.
pub fn parse_warmup(s: &str) -> std::result::Result<u32, String> {
    parse_count(s, 0)
}

/// A whole number in `least..=MAX_ITERS`, or a message naming the range.
fn parse_count(s: &str, least: u32) -> std::result::Result<u32, String> {
    let n: u64 = s
        .trim()
        .parse()
        .map_err(|e| format!("`{s}` is not a count (a whole number >= {least}): {e}"))?;
    u32::try_from(n)
        .ok()
        .filter(|n| (least..=MAX_ITERS).contains(n))
        .ok_or_else(|| format!("{n} is not in {least}..={MAX_ITERS}"))
}
use xrdma::{Config, ConnId, Endpoint, Time};
use xrdma_runner::drive::{turns, Clock, Hosts, Round};
use xrdma_runner::fabric::{Fabric, SimFabric};
use xrdma_runner::host_cpu;
use xrdma_sim::SimConfig;

/// The simulator fabric the tools use: [`SimConfig::default`], two hosts behind one switch,
/// 100 Gb/s links with 1 µs propagation delay each, 1 KiB MTU, 82 B of headers per packet.
///
/// # Errors
/// The simulator's configuration error (none for the default).
pub fn sim_fabric() -> Result<SimFabric> {
    Ok(SimFabric::new(SimConfig::default())?)
}

/// `--host-profile NAME|FILE`: the simulator's host model for a tool (see
/// [`xrdma_sim::HostModel`] and its profiles, [`xrdma_sim::profiles`]; a file as
/// [`crate::profile_file`] reads it).
#[derive(clap::Args, Clone, Debug, Default, PartialEq, Eq)]
pub struct HostProfileArg {
    /// The simulated hosts' per-operation costs: a built-in host profile (`ideal`,
    /// `connectx6`, `rxe-guest`) or a profile file (`xrdma calibrate fit` writes one)
    /// [default: ideal, the hosts cost nothing]. Simulator only.
    #[arg(long = "host-profile", value_name = "NAME|FILE")]
    pub host_profile: Option<String>,
}

impl HostProfileArg {
    /// The host model asked for (the ideal host when none is).
    ///
    /// # Errors
    /// An unknown profile name (the message lists the known ones), or a profile file that
    /// does not read.
    pub fn model(&self) -> Result<xrdma_sim::HostModel> {
        match &self.host_profile {
            Some(name) => crate::profile_file::resolve(name),
            None => Ok(xrdma_sim::HostModel::default()),
        }
    }

    /// The simulator fabric of [`sim_fabric`] with this host model.
    ///
    /// # Errors
    /// An unknown profile name.
    pub fn fabric(&self) -> Result<SimFabric> {
        Ok(SimFabric::new(SimConfig {
            host: self.model()?,
            ..SimConfig::default()
        })?)
    }

    /// Refuse a host profile on a backend that is not the simulator: a device's host is real.
    ///
    /// # Errors
    /// A profile given with `on_sim` false.
    pub fn require_sim(&self, on_sim: bool) -> Result<()> {
        match &self.host_profile {
            Some(name) if !on_sim => bail!(
                "--host-profile {name} sets the simulator's host model; on a device the host \
                 is real: leave it out with --backend verbs"
            ),
            _ => Ok(()),
        }
    }

    /// `backend`, with the host profile when one is given: `sim, host connectx6`.
    pub fn label(&self, backend: &str) -> String {
        match &self.host_profile {
            Some(name) => format!("{backend}, host {name}"),
            None => backend.to_string(),
        }
    }
}

/// Two endpoints on hosts 0 and 1 of a fabric, joined by one connection.
pub struct Pair {
    /// The endpoints of host 0 (client, sender) and host 1 (server, receiver).
    pub eps: [Endpoint; 2],
    /// The connection's id on each endpoint.
    pub conns: [ConnId; 2],
}

/// Make an endpoint with `cfg` on hosts 0 and 1 of `fabric` and connect them (one RC QP each,
/// rings exchanged in process, receives posted).
///
/// # Errors
/// A fabric with fewer than two hosts, an invalid `cfg`, or a transport error during setup.
pub fn connect_pair<F: Fabric>(fabric: &mut F, cfg: &Config) -> Result<Pair> {
    if fabric.hosts() < 2 {
        bail!(
            "the tools need two hosts; the fabric has {}",
            fabric.hosts()
        );
    }
    let cfg = xrdma_runner::fabric::config_for(cfg, fabric);
    let mut a = Endpoint::new(cfg.clone())?;
    let mut b = Endpoint::new(cfg)?;
    let ha = driver::open(&mut a, &mut fabric.host(0)).context("opening host 0's QP")?;
    let hb = driver::open(&mut b, &mut fabric.host(1)).context("opening host 1's QP")?;
    let ca = driver::establish(&mut a, &mut fabric.host(0), ha, &hb.info, 1)
        .context("connecting host 0's QP")?;
    let cb = driver::establish(&mut b, &mut fabric.host(1), hb, &ha.info, 0)
        .context("connecting host 1's QP")?;
    Ok(Pair {
        eps: [a, b],
        conns: [ca, cb],
    })
}

/// Give host 0 (running `a`) and host 1 (running `b`) driver turns through the runner's turn
/// loop ([`turns`]) until `done(a, b)` holds and the fabric stops (a simulated fabric first
/// runs out its remaining events; a real one stops at once). The fabric's clock is read once
/// per round of turns, as the scenario runner does: on a device both hosts' turns of a round
/// see the same `now`.
///
/// Returns the number of rounds of turns run.
///
/// # Errors
/// The fabric stopped (its run timeout passed, or no event was left) before `done` held.
pub fn drive<F: Fabric, A: Application, B: Application>(
    fabric: &mut F,
    pair: &mut Pair,
    a: &mut A,
    b: &mut B,
    done: impl FnMut(&A, &B) -> bool,
) -> Result<u64> {
    let mut hosts = PairHosts {
        pair,
        a,
        b,
        done,
        settled: false,
        scratch: TurnScratch::default(),
    };
    let ended = turns(fabric, Clock::EveryRound, &mut hosts);
    if !hosts.settled {
        bail!(
            "the {} fabric stopped at {} before the run finished",
            fabric.backend(),
            fabric.now()
        );
    }
    Ok(ended.rounds)
}

/// An endpoint pair's hosts as [`drive`] hands them to the turn loop: settled, for good, once
/// `done` holds.
struct PairHosts<'a, A, B, D> {
    pair: &'a mut Pair,
    a: &'a mut A,
    b: &'a mut B,
    done: D,
    settled: bool,
    scratch: TurnScratch,
}

impl<F, A, B, D> Hosts<F> for PairHosts<'_, A, B, D>
where
    F: Fabric,
    A: Application,
    B: Application,
    D: FnMut(&A, &B) -> bool,
{
    fn turn(&mut self, fabric: &mut F, h: u32, now: Time, _settled: bool) -> Option<Time> {
        let (ep, app): (&mut Endpoint, &mut dyn Application) = match h {
            0 => (&mut self.pair.eps[0], self.a),
            1 => (&mut self.pair.eps[1], self.b),
            _ => return None,
        };
        host_cpu::turn(now, ep, &mut fabric.host(h), app, &mut self.scratch)
    }

    fn after_round(&mut self, _fabric: &mut F, _now: Time) -> Round {
        self.settled = self.settled || (self.done)(self.a, self.b);
        if self.settled {
            Round::Settled
        } else {
            Round::Go
        }
    }
}
