//! Running a scenario's workload on a [`Fabric`], and on the simulator by default.

use crate::fabric::{Fabric, SimFabric};
use crate::incast::{PayloadPool, Receiver, Role, Sender};
use crate::sim_config::check;
use anyhow::{bail, Result};
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
    let mut scratch = TurnScratch::default();
    for h in 0..hosts {
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
        settled = apps.iter().all(Role::finished);
    }
    let wall_seconds = wall.elapsed().as_secs_f64();
    collect(sc, fabric, seed, &apps, wall_seconds)
}

fn pair_mut<T>(v: &mut [T], a: usize, b: usize) -> (&mut T, &mut T) {
    if a < b {
        let (x, y) = v.split_at_mut(b);
        (&mut x[a], &mut y[0])
    } else {
        let (x, y) = v.split_at_mut(a);
        (&mut y[0], &mut x[b])
    }
}

fn collect<F: Fabric>(
    sc: &Scenario,
    fabric: &F,
    seed: u64,
    apps: &[Role],
    wall_seconds: f64,
) -> Result<rep::RunResult> {
    let Workload::Incast(incast) = &sc.workload;
    let mut arrivals = BTreeMap::new();
    let mut duplicates = 0;
    let mut errors = Vec::new();
    for app in apps {
        match app {
            Role::Receiver(r) => {
                for a in &r.arrivals {
                    if arrivals.insert((a.sender, a.index), a.clone()).is_some() {
                        duplicates += 1;
                    }
                }
                errors.extend(r.errors.iter().cloned());
            }
            Role::Sender(s) => {
                errors.extend(s.errors.iter().map(|e| format!("host {}: {e}", s.host)))
            }
            Role::Idle => {}
        }
    }
    let mut messages = Vec::new();
    let (mut delivered, mut mismatches, mut missing) = (0, 0, 0);
    for app in apps {
        let Role::Sender(s) = app else { continue };
        // One record per intended message, posted or not: a message the sender never got to
        // post (its connection failed first) is missing, not invisible.
        for (index, &size) in s.sizes().iter().enumerate() {
            let index = index as u32;
            let sent = s.sent.iter().find(|m| m.index == index);
            let arrival = arrivals.remove(&(s.host, index));
            match (sent, &arrival) {
                (Some(m), Some(a)) if a.digest == m.digest && a.size == m.size => delivered += 1,
                (_, Some(_)) => mismatches += 1,
                (_, None) => missing += 1,
            }
            messages.push(rep::MessageRecord {
                sender: s.host,
                receiver: incast.receiver,
                index,
                size,
                intended_ps: incast.start.as_ps(),
                completed_ps: sent.and_then(|m| m.acked).map(Time::as_ps),
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
