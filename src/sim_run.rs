//! Running a scenario's workload on a [`Fabric`], and on the simulator by default.

use crate::fabric::{Fabric, SimFabric};
use crate::incast::{Arrival, PayloadPool, Receiver, Role, Sender};
use crate::sim_config::check;
use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Instant;
use xrdma::driver::{self, TurnScratch};
use xrdma::{Config, Endpoint, Time};
use xrdma_reports as rep;
use xrdma_scenario::{Scenario, Workload};

/// Run `sc` on the simulator and collect the result.
///
/// # Errors
/// An invalid configuration (nothing is run), or a transport failure during setup.
pub fn run(sc: &Scenario) -> Result<rep::RunResult> {
    let checked = check(sc)?;
    let seed = checked.sim.seed;
    let mut fabric = SimFabric::new(checked.sim)?;
    if let Some(interval) = sc.sim_or_default().sample_interval {
        let Workload::Incast(incast) = &sc.workload;
        fabric.sample(interval, incast.receiver);
    }
    run_on(sc, &checked.xrdma, seed, &mut fabric)
}

/// Run `sc`'s workload on any [`Fabric`] with the xrdma configuration `cfg`; `seed` seeds the
/// payload bytes.
///
/// Builds one xrdma [`Endpoint`] per host, connects every sender to the receiver (one RC QP
/// pair each, exchanging [`xrdma::driver::ConnInfo`] in process), then lets the fabric move
/// time and gives a driver turn to each host that needs one.
///
/// # Errors
/// A transport failure during setup, or a workload that does not fit the fabric.
pub fn run_on<F: Fabric>(
    sc: &Scenario,
    cfg: &Config,
    seed: u64,
    fabric: &mut F,
) -> Result<rep::RunResult> {
    let Workload::Incast(incast) = &sc.workload;
    let wall = Instant::now();
    let hosts = fabric.hosts();
    let recv_host = incast.receiver;
    let workload_hosts = sc.workload.hosts();
    if workload_hosts > hosts {
        bail!(
            "the workload needs {workload_hosts} hosts, the {} fabric has {hosts}",
            fabric.backend()
        );
    }
    let mut eps = Vec::with_capacity(hosts as usize);
    for _ in 0..hosts {
        eps.push(Endpoint::new(cfg.clone())?);
    }
    let sizes: Vec<u64> = incast
        .messages
        .iter()
        .flat_map(|m| std::iter::repeat_n(m.size, m.count as usize))
        .collect();
    let pool = PayloadPool::new(seed, sizes.iter().copied().max().unwrap_or(0));
    let mut apps: Vec<Role> = Vec::with_capacity(hosts as usize);
    for h in 0..hosts {
        if h == recv_host {
            apps.push(Role::Receiver(Receiver::default()));
            continue;
        }
        if h >= workload_hosts {
            // A fabric larger than the workload: the remaining hosts stay silent.
            apps.push(Role::Idle);
            continue;
        }
        let (s_ep, r_ep) = pair_mut(&mut eps, h as usize, recv_host as usize);
        let half_s = driver::open(s_ep, &mut fabric.host(h))?;
        let half_r = driver::open(r_ep, &mut fabric.host(recv_host))?;
        let conn = driver::establish(s_ep, &mut fabric.host(h), half_s, &half_r.info, recv_host)?;
        driver::establish(r_ep, &mut fabric.host(recv_host), half_r, &half_s.info, h)?;
        let sender = Sender::new(h, conn, pool.clone(), incast.start, sizes.clone());
        apps.push(Role::Sender(sender));
    }
    turn_loop(fabric, &mut eps, &mut apps, |_, _| true);
    let wall_seconds = wall.elapsed().as_secs_f64();
    let senders: Vec<SenderRecord> = apps
        .iter()
        .filter_map(|a| match a {
            Role::Sender(s) => Some(SenderRecord::of(s)),
            _ => None,
        })
        .collect();
    let (arrivals, recv_errors) = receiver_view(&apps);
    collect(
        sc,
        fabric,
        seed,
        &senders,
        arrivals,
        recv_errors,
        wall_seconds,
    )
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

/// The per-host turn loop every runner shares: host `i` of `fabric` runs endpoint `eps[i]`
/// and application `apps[i]`. Gives every host a first turn, then lets the fabric move time
/// and turns the hosts it names, until the fabric stops. The workload is settled when every
/// app is [`Role::finished`] and `remote_settled(now, apps)` holds; the closure is asked only
/// once the local apps are finished (a single-process run passes `|_, _| true`; a rank of a
/// multi-process run asks its peers there).
pub fn turn_loop<F: Fabric>(
    fabric: &mut F,
    eps: &mut [Endpoint],
    apps: &mut [Role],
    mut remote_settled: impl FnMut(Time, &[Role]) -> bool,
) {
    let mut scratch = TurnScratch::default();
    for h in 0..fabric.hosts() {
        let now = fabric.now();
        let i = h as usize;
        let wake = driver::turn(
            now,
            &mut eps[i],
            &mut fabric.host(h),
            &mut apps[i],
            &mut scratch,
        );
        fabric.set_wake(h, wake.unwrap_or(Time::MAX));
    }
    let mut ready = Vec::new();
    let mut settled = false;
    while fabric.advance(&mut ready, settled) {
        let now = fabric.now();
        for &h in &ready {
            let i = h as usize;
            let wake = driver::turn(
                now,
                &mut eps[i],
                &mut fabric.host(h),
                &mut apps[i],
                &mut scratch,
            );
            fabric.set_wake(h, wake.unwrap_or(Time::MAX));
        }
        ready.clear();
        settled = apps.iter().all(Role::finished) && remote_settled(now, apps);
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

pub(crate) fn pair_mut<T>(v: &mut [T], a: usize, b: usize) -> (&mut T, &mut T) {
    if a < b {
        let (x, y) = v.split_at_mut(b);
        (&mut x[a], &mut y[0])
    } else {
        let (x, y) = v.split_at_mut(a);
        (&mut y[0], &mut x[b])
    }
}

/// The run's result from the senders' records and the receiver's arrivals and errors.
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
    let Workload::Incast(incast) = &sc.workload;
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
            });
        }
    }
    // Arrivals no sender claims are duplicates or strays.
    duplicates += arrivals.len() as u64;
    let senders = incast.senders;
    if senders == 0 {
        bail!("no senders");
    }
    let total_bytes = incast.bytes_per_sender() * u64::from(senders);
    let sim = fabric.sim_info();
    let events = sim.as_ref().map_or(0, |s| s.events);
    Ok(rep::RunResult {
        schema_version: rep::SCHEMA_VERSION,
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        scenario: rep::ScenarioInfo {
            name: sc.name.clone(),
            path: sc.source_path.display().to_string(),
            backend: fabric.backend().into(),
            seed,
        },
        workload: rep::WorkloadInfo {
            kind: sc.workload.kind().into(),
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
        network: fabric.network(),
        ideal: fabric.ideal(total_bytes),
        sim,
        errors,
        scenario_yaml: None,
        timeseries: fabric.timeseries(),
        wall_clock: rep::WallClock {
            wall_seconds,
            events_per_second: if wall_seconds > 0.0 {
                events as f64 / wall_seconds
            } else {
                0.0
            },
        },
    })
}
