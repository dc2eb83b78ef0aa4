//! Running a scenario's workload on a [`Fabric`], and on the simulator by default.

use crate::echo::{EchoClient, EchoRole, EchoServer};
use crate::fabric::{Fabric, SimFabric};
use crate::host_faults::{Holding, HostFaultState, HostFaults, Observed};
use crate::incast::{Arrival, PayloadPool, Receiver, Role, Sender};
use crate::open_loop::{OpenLoopRole, OpenLoopSender, PoissonArrivals};
use crate::sim_config::check;
use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Instant;
use xrdma::driver::Application;
use xrdma::driver::{self, TurnScratch};
use xrdma::{Config, Endpoint, Time};
use xrdma_reports as rep;
use xrdma_scenario::{Echo, Incast, OpenLoop, OpenLoopEnd, Scenario, Stall, Workload};

/// Run `sc` on the simulator and collect the result.
///
/// # Errors
/// An invalid configuration (nothing is run), or a transport failure during setup.
pub fn run(sc: &Scenario) -> Result<rep::RunResult> {
    let checked = check(sc)?;
    let seed = checked.sim.seed;
    let faults = HostFaults::from_section(&sc.sim_or_default().faults);
    let mut fabric = SimFabric::new(checked.sim)?;
    if let Some(interval) = sc.sim_or_default().sample_interval {
        let watch = match &sc.workload {
            Workload::Incast(i) => i.receiver,
            Workload::OpenLoop(ol) => ol.receiver,
            Workload::Echo(e) => e.server,
        };
        fabric.sample(interval, watch);
    }
    run_on_with_faults(sc, &checked.xrdma, seed, &mut fabric, &faults)
}

/// Run `sc`'s workload on any [`Fabric`] with the xrdma configuration `cfg`; `seed` seeds the
/// payload bytes, the open-loop arrivals and the echo request sizes.
///
/// Builds one xrdma [`Endpoint`] per host, connects every sender (or client) to the receiver
/// (or server) with one RC QP pair each, exchanging [`xrdma::driver::ConnInfo`] in process,
/// then lets the fabric move time and gives a driver turn to each host that needs one (see
/// [`drive`]). An incast runs until the fabric has nothing left to do; an open-loop run
/// until every message is done or failed, or `drain` after its arrivals end; an echo run
/// until every request is answered or `time-limit` after its start. Messages not done by
/// then are listed in [`rep::RunResult::unfinished`] and have no latency.
///
/// # Errors
/// A transport failure during setup, or a workload that does not fit the fabric.
pub fn run_on<F: Fabric>(
    sc: &Scenario,
    cfg: &Config,
    seed: u64,
    fabric: &mut F,
) -> Result<rep::RunResult> {
    run_on_with_faults(sc, cfg, seed, fabric, &HostFaults::default())
}

/// [`run_on`] with host faults injected by the runner (see [`crate::host_faults`]): receive
/// WRs held back in stop-reposting windows, per-message processing time at slow receivers.
///
/// # Errors
/// As [`run_on`].
pub fn run_on_with_faults<F: Fabric>(
    sc: &Scenario,
    cfg: &Config,
    seed: u64,
    fabric: &mut F,
    faults: &HostFaults,
) -> Result<rep::RunResult> {
    let mut hf = HostFaultState::new(faults, fabric.hosts());
    let wall = Instant::now();
    let hosts = fabric.hosts();
    let workload_hosts = sc.workload.hosts();
    if workload_hosts > hosts {
        bail!(
            "the workload needs {workload_hosts} hosts, the {} fabric has {hosts}",
            fabric.backend()
        );
    }
    let cfg = &crate::fabric::with_link_rate(cfg, fabric);
    let mut eps = Vec::with_capacity(hosts as usize);
    for _ in 0..hosts {
        eps.push(Endpoint::new(cfg.clone())?);
    }
    let outcome = match &sc.workload {
        Workload::Incast(incast) => {
            let sizes: Vec<u64> = incast
                .messages
                .iter()
                .flat_map(|m| std::iter::repeat_n(m.size, m.count as usize))
                .collect();
            let pool = PayloadPool::new(seed, sizes.iter().copied().max().unwrap_or(0));
            let recv_host = incast.receiver;
            let mut apps: Vec<Role> = Vec::with_capacity(hosts as usize);
            for h in 0..hosts {
                if h == recv_host {
                    apps.push(Role::Receiver(Receiver::default()));
                } else if h >= workload_hosts {
                    // A fabric larger than the workload: the remaining hosts stay silent.
                    apps.push(Role::Idle);
                } else {
                    let (conn, _) = connect(fabric, &mut eps, h, recv_host)?;
                    let sender = Sender::new(h, conn, pool.clone(), incast.start, sizes.clone());
                    apps.push(Role::Sender(sender));
                }
            }
            drive(fabric, &mut eps, &mut apps, &[], None, &mut hf, |_, _| true);
            let senders: Vec<SenderRecord> = apps
                .iter()
                .filter_map(|a| match a {
                    Role::Sender(s) => Some(SenderRecord::of(s)),
                    _ => None,
                })
                .collect();
            let (arrivals, recv_errors) = receiver_view(&apps);
            collect_incast(incast, &senders, arrivals, recv_errors)?
        }
        Workload::OpenLoop(ol) => {
            let pool = PayloadPool::new(seed, ol.sizes.largest());
            let mut apps = Vec::with_capacity(hosts as usize);
            for h in 0..hosts {
                if h == ol.receiver {
                    apps.push(OpenLoopRole::Receiver(Receiver::default()));
                } else if h >= workload_hosts {
                    apps.push(OpenLoopRole::Idle);
                } else {
                    let (conn, _) = connect(fabric, &mut eps, h, ol.receiver)?;
                    let arrivals = PoissonArrivals::new(seed, h, ol);
                    apps.push(OpenLoopRole::Sender(Box::new(OpenLoopSender::new(
                        h,
                        conn,
                        pool.clone(),
                        arrivals,
                    ))));
                }
            }
            let deadline = deadline(&sc.workload, seed);
            drive(
                fabric,
                &mut eps,
                &mut apps,
                &ol.stalls,
                deadline,
                &mut hf,
                |_, _| true,
            );
            collect_open_loop(ol, &apps)?
        }
        Workload::Echo(echo) => {
            let pool = PayloadPool::new(seed, echo.largest());
            let mut apps = Vec::with_capacity(hosts as usize);
            for h in 0..hosts {
                if h == echo.server {
                    apps.push(EchoRole::Receiver(Box::new(EchoServer::new(
                        pool.clone(),
                        echo,
                    ))));
                } else if h >= workload_hosts {
                    apps.push(EchoRole::Idle);
                } else {
                    let (conn, _) = connect(fabric, &mut eps, h, echo.server)?;
                    let client = EchoClient::new(h, conn, pool.clone(), seed, echo);
                    apps.push(EchoRole::Sender(Box::new(client)));
                }
            }
            drive(
                fabric,
                &mut eps,
                &mut apps,
                &echo.stalls,
                deadline(&sc.workload, seed),
                &mut hf,
                |_, _| true,
            );
            collect_echo(echo, &apps)?
        }
    };
    let wall_seconds = wall.elapsed().as_secs_f64();
    let mut r = finish(sc, fabric, seed, outcome, wall_seconds);
    r.network.ack_timeouts = Some(hf.counters.ack_timeouts);
    Ok(r)
}

/// When a run of `workload` with `seed` stops, on the run's clock: an open-loop run `drain`
/// after its last arrival (the end of `duration`, or the last of `count` arrivals from the
/// seed), an echo run `time-limit` after its start; `None` for an incast, which runs until
/// the fabric has nothing left to do.
pub fn deadline(workload: &Workload, seed: u64) -> Option<Time> {
    match workload {
        Workload::Incast(_) => None,
        Workload::OpenLoop(ol) => {
            let end = match ol.end {
                OpenLoopEnd::Duration(d) => ol.start.as_ps().saturating_add(d.as_ps()),
                // The last arrival: the latest next-wake any sender will ask for.
                OpenLoopEnd::Count(_) => ol
                    .sender_hosts()
                    .filter_map(|h| PoissonArrivals::new(seed, h, ol).last())
                    .map(|(at, _)| at.as_ps())
                    .max()
                    .unwrap_or(ol.start.as_ps()),
            };
            Some(Time::from_ps(end.saturating_add(ol.drain.as_ps())))
        }
        Workload::Echo(echo) => Some(Time::from_ps(
            echo.start.as_ps().saturating_add(echo.time_limit.as_ps()),
        )),
    }
}

/// A host's application as the runner sees it.
pub trait HostApp: Application {
    /// Whether this host has nothing left to do (a sender whose every message was ACKed or
    /// failed; hosts that only react always are).
    fn finished(&self) -> bool;
}

/// Connects host `a` to host `b` with one RC QP pair, exchanging
/// [`xrdma::driver::ConnInfo`] in process; returns the connection at `a` and at `b`.
fn connect<F: Fabric>(
    fabric: &mut F,
    eps: &mut [Endpoint],
    a: u32,
    b: u32,
) -> Result<(xrdma::ConnId, xrdma::ConnId)> {
    let (a_ep, b_ep) = pair_mut(eps, a as usize, b as usize);
    let half_a = driver::open(a_ep, &mut fabric.host(a))?;
    let half_b = driver::open(b_ep, &mut fabric.host(b))?;
    let conn_a = driver::establish(a_ep, &mut fabric.host(a), half_a, &half_b.info, b)?;
    let conn_b = driver::establish(b_ep, &mut fabric.host(b), half_b, &half_a.info, a)?;
    Ok((conn_a, conn_b))
}

/// The end of the stall `host` is in at `now`, if any (the latest end when stalls overlap).
fn stalled_until(stalls: &[Stall], host: u32, now: Time) -> Option<Time> {
    stalls
        .iter()
        .filter(|s| s.host == host && s.at <= now && now < s.end())
        .map(Stall::end)
        .max()
}

/// The per-host turn loop of an incast, which a rank of a multi-process run shares: host `i`
/// of `fabric` runs endpoint `eps[i]` and application `apps[i]`, until the fabric stops. The
/// workload is settled when every app is [`Role::finished`] and `remote_settled(now, apps)`
/// holds; the closure is asked only once the local apps are finished (a single-process run
/// passes `|_, _| true`; a rank of a multi-process run asks its peers there).
pub fn turn_loop<F: Fabric>(
    fabric: &mut F,
    eps: &mut [Endpoint],
    apps: &mut [Role],
    remote_settled: impl FnMut(Time, &[Role]) -> bool,
) {
    let mut hf = HostFaultState::new(&HostFaults::default(), fabric.hosts());
    drive(fabric, eps, apps, &[], None, &mut hf, remote_settled);
}

/// The receiver's arrivals and errors among `apps` (empty when no app is the receiver).
pub fn receiver_view(apps: &[Role]) -> (&[Arrival], &[String]) {
    apps.iter()
        .find_map(|a| match a {
            Role::Receiver(r) => Some((&r.arrivals[..], &r.errors[..])),
            _ => None,
        })
        .unwrap_or((&[], &[]))
}

/// The shared turn loop: lets the fabric move time and gives a driver turn to each host that
/// needs one, until the fabric says the run is over; with a `deadline`, until every host is
/// finished or the deadline passes. The run is settled when every local app is finished and
/// `remote_settled(now, apps)` holds (asked only then).
///
/// A host inside one of its `stalls` gets no turn (its CQ is not polled, nothing is posted or
/// reposted); it is woken at the stall's end. Its NIC keeps running on the simulator; on a
/// real device the same holds as far as the device goes (the host is simply not polled).
/// While the workload is unsettled, wakes are capped at `deadline` so the loop sees it pass.
/// The host faults in `hf` hold back receives and delay slow receivers ([`host_turn`]).
fn drive<F: Fabric, A: HostApp>(
    fabric: &mut F,
    eps: &mut [Endpoint],
    apps: &mut [A],
    stalls: &[Stall],
    deadline: Option<Time>,
    hf: &mut HostFaultState,
    mut remote_settled: impl FnMut(Time, &[A]) -> bool,
) {
    let hosts = fabric.hosts();
    let cap = |w: Option<Time>, settled: bool| {
        let w = w.unwrap_or(Time::MAX);
        match deadline {
            Some(d) if !settled => w.min(d),
            _ => w,
        }
    };
    let mut scratch = TurnScratch::default();
    for h in 0..hosts {
        let now = fabric.now();
        if let Some(until) = stalled_until(stalls, h, now) {
            fabric.set_wake(h, until);
            continue;
        }
        let i = h as usize;
        let wake = host_turn(now, h, fabric, &mut eps[i], &mut apps[i], &mut scratch, hf);
        fabric.set_wake(h, cap(wake, false));
    }
    let mut ready = Vec::new();
    let mut settled = false;
    while fabric.advance(&mut ready, settled) {
        let now = fabric.now();
        for &h in &ready {
            if let Some(until) = stalled_until(stalls, h, now) {
                fabric.set_wake(h, until);
                continue;
            }
            let i = h as usize;
            let wake = host_turn(now, h, fabric, &mut eps[i], &mut apps[i], &mut scratch, hf);
            fabric.set_wake(h, cap(wake, settled));
        }
        ready.clear();
        settled = apps.iter().all(A::finished) && remote_settled(now, apps);
        // A workload with a deadline stops as soon as it is settled: what is left are
        // trailing transport ACKs, and the clock should not run on to the deadline.
        if deadline.is_some_and(|d| settled || now >= d) {
            break;
        }
    }
}

/// One driver turn of host `h` at `now` under the host faults: a slow receiver still busy
/// gets no turn (it is woken when it is free); inside a stop-reposting window the core's
/// receive WRs are held back, after it they are posted first. Returns the host's next wake.
fn host_turn<F: Fabric, A: HostApp>(
    now: Time,
    h: u32,
    fabric: &mut F,
    ep: &mut Endpoint,
    app: &mut A,
    scratch: &mut TurnScratch,
    hf: &mut HostFaultState,
) -> Option<Time> {
    if let Some(busy) = hf.busy_until(h, now) {
        return Some(busy);
    }
    let holding = hf.holding_until(h, now);
    if holding.is_none() && hf.has_held(h) {
        hf.release(h, &mut fabric.host(h));
    }
    let (held, count) = hf.held_mut(h);
    let mut t = Holding {
        inner: fabric.host(h),
        holding: holding.is_some(),
        held,
        count,
    };
    let mut ack_timeouts = 0;
    let mut seen = Observed {
        app,
        delivered: 0,
        ack_timeouts: &mut ack_timeouts,
    };
    let wake = driver::turn(now, ep, &mut t, &mut seen, scratch);
    let delivered = seen.delivered;
    hf.counters.ack_timeouts += ack_timeouts;
    let earliest = |a: Option<Time>, b: Option<Time>| match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    // A busy host's next turn is at the end of its processing: what arrived meanwhile (and
    // any later wake it wants) is handled then.
    if let Some(busy) = hf.after_turn(h, now, delivered) {
        return Some(busy);
    }
    earliest(wake, holding)
}

pub(crate) fn pair_mut<T>(v: &mut [T], a: usize, b: usize) -> (&mut T, &mut T) {
    if a < b {
        let (x, y) = v.split_at_mut(b);
        (&mut x[a], &mut y[0])
    } else {
        let (x, y) = v.split_at_mut(a);
        (&mut y[0], &mut x[b])
    }
}

/// One message as its sender saw it, in a form another process can read.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct SentRecord {
    /// Position in the sender's list.
    pub index: u32,
    /// Payload bytes.
    pub size: u64,
    /// XXH3-128 of the payload, 32 hex digits (JSON numbers cannot hold 128 bits).
    pub digest: String,
    /// When the receiver's ACK of its last fragment arrived, ps on the sender's clock
    /// (`None`: never).
    pub acked_ps: Option<u64>,
}

/// One sender's outcome: what the report needs from it, and what a rank of a multi-process
/// run sends to the receiver's rank at the end.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct SenderRecord {
    /// The sender's scenario host.
    pub host: u32,
    /// The sizes it intended to send, bytes, in order.
    pub sizes: Vec<u64>,
    /// What it posted.
    pub sent: Vec<SentRecord>,
    /// Errors xrdma reported on it.
    pub errors: Vec<String>,
}

impl SenderRecord {
    /// The record of sender `s`.
    pub fn of(s: &Sender) -> Self {
        SenderRecord {
            host: s.host,
            sizes: s.sizes().to_vec(),
            sent: s
                .sent
                .iter()
                .map(|m| SentRecord {
                    index: m.index,
                    size: m.size,
                    digest: format!("{:032x}", m.digest),
                    acked_ps: m.acked.map(Time::as_ps),
                })
                .collect(),
            errors: s.errors.clone(),
        }
    }
}

/// What a workload's applications produced, before the fabric's counters are added.
struct Outcome {
    workload: rep::WorkloadInfo,
    messages: Vec<rep::MessageRecord>,
    delivery: rep::DeliveryCheck,
    errors: Vec<String>,
    /// Payload bytes through the busiest bottleneck direction (the N·S of T*).
    bottleneck_bytes: u64,
}

/// The result of an incast from the senders' records and the receiver's arrivals and errors
/// (a multi-process run gathers the records of every rank first).
///
/// # Errors
/// A workload without senders.
pub fn collect<F: Fabric>(
    sc: &Scenario,
    fabric: &F,
    seed: u64,
    senders: &[SenderRecord],
    receiver_arrivals: &[Arrival],
    receiver_errors: &[String],
    wall_seconds: f64,
) -> Result<rep::RunResult> {
    let Workload::Incast(incast) = &sc.workload else {
        bail!(
            "this {} workload runs in one process only; ranks run incasts",
            sc.workload.kind()
        );
    };
    let outcome = collect_incast(incast, senders, receiver_arrivals, receiver_errors)?;
    Ok(finish(sc, fabric, seed, outcome, wall_seconds))
}

fn collect_incast(
    incast: &Incast,
    senders: &[SenderRecord],
    receiver_arrivals: &[Arrival],
    receiver_errors: &[String],
) -> Result<Outcome> {
    let mut arrivals = BTreeMap::new();
    let mut duplicates = 0;
    let mut errors: Vec<String> = receiver_errors.to_vec();
    for a in receiver_arrivals {
        if arrivals.insert((a.sender, a.index), a.clone()).is_some() {
            duplicates += 1;
        }
    }
    for s in senders {
        errors.extend(s.errors.iter().map(|e| format!("host {}: {e}", s.host)));
    }
    let mut messages = Vec::new();
    let (mut delivered, mut mismatches, mut missing) = (0, 0, 0);
    for s in senders {
        // One record per intended message, posted or not: a message the sender never got to
        // post (its connection failed first) is missing, not invisible.
        for (index, &size) in s.sizes.iter().enumerate() {
            let index = index as u32;
            let sent = s.sent.iter().find(|m| m.index == index);
            let arrival = arrivals.remove(&(s.host, index));
            match (sent, &arrival) {
                (Some(m), Some(a))
                    if format!("{:032x}", a.digest) == m.digest && a.size == m.size =>
                {
                    delivered += 1
                }
                (_, Some(_)) => mismatches += 1,
                (_, None) => missing += 1,
            }
            messages.push(rep::MessageRecord {
                sender: s.host,
                receiver: incast.receiver,
                index,
                size,
                intended_ps: incast.start.as_ps(),
                completed_ps: sent.and_then(|m| m.acked_ps),
                delivered_ps: arrival.map(|a| a.at.as_ps()),
                response_bytes: None,
            });
        }
    }
    // Arrivals no sender claims are duplicates or strays.
    duplicates += arrivals.len() as u64;
    let senders = incast.senders;
    if senders == 0 {
        bail!("no senders");
    }
    Ok(Outcome {
        workload: rep::WorkloadInfo {
            kind: "incast".into(),
            senders,
            receiver: incast.receiver,
            bytes_per_sender: incast.bytes_per_sender(),
            messages_per_sender: incast.messages_per_sender() as u32,
        },
        messages,
        delivery: rep::DeliveryCheck {
            delivered,
            digest_mismatches: mismatches,
            duplicates,
            missing,
        },
        errors,
        bottleneck_bytes: incast.bytes_per_sender() * u64::from(senders),
    })
}

/// Receiver arrivals keyed by (sender, index), the duplicates among them and the errors.
type Arrivals = (BTreeMap<(u32, u32), (u64, u128, Time)>, u64);

fn index_arrivals(arrivals: impl Iterator<Item = (u32, u32, u64, u128, Time)>) -> Arrivals {
    let mut map = BTreeMap::new();
    let mut duplicates = 0;
    for (sender, index, size, digest, at) in arrivals {
        if map.insert((sender, index), (size, digest, at)).is_some() {
            duplicates += 1;
        }
    }
    (map, duplicates)
}

/// The shape of a workload whose senders send different amounts: per-sender figures are the
/// means over the senders, rounded down.
fn mean_shape(
    kind: &str,
    senders: u32,
    receiver: u32,
    records: &[rep::MessageRecord],
) -> rep::WorkloadInfo {
    let n = u64::from(senders.max(1));
    let bytes: u64 = records.iter().map(rep::MessageRecord::payload_bytes).sum();
    rep::WorkloadInfo {
        kind: kind.into(),
        senders,
        receiver,
        bytes_per_sender: bytes / n,
        messages_per_sender: u32::try_from(records.len() as u64 / n).unwrap_or(u32::MAX),
    }
}

fn collect_open_loop(ol: &OpenLoop, apps: &[OpenLoopRole]) -> Result<Outcome> {
    let mut errors = Vec::new();
    let mut found = Vec::new();
    for app in apps {
        match app {
            OpenLoopRole::Receiver(r) => {
                found.extend(
                    r.arrivals
                        .iter()
                        .map(|a| (a.sender, a.index, a.size, a.digest, a.at)),
                );
                errors.extend(r.errors.iter().cloned());
            }
            OpenLoopRole::Sender(s) => {
                errors.extend(s.errors.iter().map(|e| format!("host {}: {e}", s.host)))
            }
            OpenLoopRole::Idle => {}
        }
    }
    let (mut arrivals, mut duplicates) = index_arrivals(found.into_iter());
    let mut messages = Vec::new();
    let (mut delivered, mut mismatches, mut missing) = (0, 0, 0);
    for app in apps {
        let OpenLoopRole::Sender(s) = app else {
            continue;
        };
        for m in &s.messages {
            let arrival = arrivals.remove(&(s.host, m.index));
            match (m.posted, arrival) {
                (Some(_), Some((size, digest, _))) if digest == m.digest && size == m.size => {
                    delivered += 1
                }
                (_, Some(_)) => mismatches += 1,
                (_, None) => missing += 1,
            }
            messages.push(rep::MessageRecord {
                sender: s.host,
                receiver: ol.receiver,
                index: m.index,
                size: m.size,
                intended_ps: m.intended.as_ps(),
                completed_ps: m.acked.map(Time::as_ps),
                delivered_ps: arrival.map(|(_, _, at)| at.as_ps()),
                response_bytes: None,
            });
        }
    }
    duplicates += arrivals.len() as u64;
    let bottleneck_bytes = messages.iter().map(|m| m.size).sum();
    Ok(Outcome {
        workload: mean_shape("open-loop", ol.senders, ol.receiver, &messages),
        messages,
        delivery: rep::DeliveryCheck {
            delivered,
            digest_mismatches: mismatches,
            duplicates,
            missing,
        },
        errors,
        bottleneck_bytes,
    })
}

fn collect_echo(echo: &Echo, apps: &[EchoRole]) -> Result<Outcome> {
    let mut errors = Vec::new();
    let mut found = Vec::new();
    for app in apps {
        match app {
            EchoRole::Receiver(s) => {
                found.extend(
                    s.requests
                        .iter()
                        .map(|r| (r.client, r.index, r.size, r.digest, r.at)),
                );
                errors.extend(s.errors.iter().cloned());
            }
            EchoRole::Sender(c) => {
                errors.extend(c.errors.iter().map(|e| format!("host {}: {e}", c.host)))
            }
            EchoRole::Idle => {}
        }
    }
    let (mut arrivals, mut duplicates) = index_arrivals(found.into_iter());
    let mut messages = Vec::new();
    let (mut delivered, mut mismatches, mut missing) = (0, 0, 0);
    let (mut req_bytes, mut resp_bytes) = (0u64, 0u64);
    for app in apps {
        let EchoRole::Sender(c) = app else { continue };
        for x in &c.exchanges {
            let arrival = arrivals.remove(&(c.host, x.index));
            let request_ok =
                arrival.is_some_and(|(size, digest, _)| size == x.size && digest == x.digest);
            match (request_ok, x.responded) {
                (true, Some(_)) if x.response_intact => delivered += 1,
                (false, _) if arrival.is_some() => mismatches += 1,
                (true, Some(_)) => mismatches += 1,
                _ => missing += 1,
            }
            req_bytes += x.size;
            resp_bytes += x.response_size;
            messages.push(rep::MessageRecord {
                sender: c.host,
                receiver: echo.server,
                index: x.index,
                size: x.size,
                intended_ps: x.intended.as_ps(),
                completed_ps: x.responded.map(Time::as_ps),
                delivered_ps: arrival.map(|(_, _, at)| at.as_ps()),
                response_bytes: Some(x.response_size),
            });
        }
    }
    duplicates += arrivals.len() as u64;
    Ok(Outcome {
        workload: mean_shape("echo", echo.clients, echo.server, &messages),
        messages,
        delivery: rep::DeliveryCheck {
            delivered,
            digest_mismatches: mismatches,
            duplicates,
            missing,
        },
        errors,
        // Requests and responses cross the server's link in opposite directions.
        bottleneck_bytes: req_bytes.max(resp_bytes),
    })
}

fn finish<F: Fabric>(
    sc: &Scenario,
    fabric: &F,
    seed: u64,
    o: Outcome,
    wall_seconds: f64,
) -> rep::RunResult {
    let sim = fabric.sim_info();
    let events = sim.as_ref().map_or(0, |s| s.events);
    let unfinished = rep::metrics::unfinished(&o.messages);
    rep::RunResult {
        schema_version: rep::SCHEMA_VERSION,
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        scenario: rep::ScenarioInfo {
            name: sc.name.clone(),
            path: sc.source_path.display().to_string(),
            backend: fabric.backend().into(),
            seed,
        },
        workload: o.workload,
        messages: o.messages,
        delivery: o.delivery,
        network: fabric.network(),
        ideal: fabric.ideal(o.bottleneck_bytes),
        sim,
        errors: o.errors,
        unfinished,
        scenario_yaml: None,
        timeseries: fabric.timeseries(),
        transport: fabric.transport_info(),
        wall_clock: rep::WallClock {
            wall_seconds,
            events_per_second: if wall_seconds > 0.0 {
                events as f64 / wall_seconds
            } else {
                0.0
            },
        },
    }
}
