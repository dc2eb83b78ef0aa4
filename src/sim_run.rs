//! Running a scenario on the simulator backend.
//!
//! Builds one xrdma [`Endpoint`] per host, connects every sender to the receiver (one RC QP
//! pair each, exchanging [`xrdma::driver::ConnInfo`] in process), then lets the simulator
//! advance virtual time and gives a driver turn to each host that needs one.

use crate::incast::{Receiver, Role, Sender};
use anyhow::{bail, Result};
use std::collections::BTreeMap;
use std::time::Instant;
use xrdma::driver::{self, TurnScratch};
use xrdma::{Config, Endpoint, Time};
use xrdma_reports as rep;
use xrdma_scenario::{Scenario, SimSection, Workload, XrdmaSection};
use xrdma_sim::{EcnConfig, PfcConfig, SimConfig, SimConfigError, Simulation};

/// The xrdma configuration a scenario asks for.
pub fn xrdma_config(x: &XrdmaSection) -> Config {
    Config {
        fragment_size: x.fragment_size,
        initial_window: x.initial_window,
        min_window: x.min_window,
        max_window: x.max_window,
        beta: x.beta,
        alpha: x.alpha,
        target_delay: x.target_delay,
        ack_timeout: x.ack_timeout,
        ..Config::default()
    }
}

/// The simulator configuration for `hosts` hosts from a scenario's `sim:` block.
pub fn sim_config(s: &SimSection, hosts: u32) -> SimConfig {
    SimConfig {
        hosts,
        link_rate_bps: s.link_rate_bps,
        link_delay: s.link_delay,
        mtu: s.mtu,
        header_bytes: s.header_bytes,
        switch_buffer_bytes: s.switch_buffer_bytes,
        ecn: s.ecn.as_ref().map(|e| EcnConfig {
            kmin_bytes: e.kmin_bytes,
            kmax_bytes: e.kmax_bytes,
            pmax: e.pmax,
        }),
        pfc: s.pfc.as_ref().map(|p| PfcConfig {
            xoff_bytes: p.xoff_bytes,
            xon_bytes: p.xon_bytes,
            headroom_bytes: p.headroom_bytes,
        }),
        seed: s.seed,
        cnp_interval: s.cnp_interval,
        ..SimConfig::default()
    }
}

/// Check everything a run needs before starting it: the xrdma config and the simulator config
/// (PFC headroom, ECN thresholds) as the backend will see them.
///
/// # Errors
/// The first problem, prefixed with the scenario's path.
pub fn check(sc: &Scenario) -> Result<(Config, SimConfig)> {
    let cfg = xrdma_config(&sc.xrdma);
    if let Err(e) = cfg.validate() {
        let at = where_is(sc, &["xrdma", e.field]);
        bail!("{at}: xrdma.{}: {}", e.field, e.reason);
    }
    let sim = sim_config(&sc.sim_or_default(), sc.workload.hosts());
    if let Err(SimConfigError::Invalid { field, reason }) = sim.validate() {
        // The simulator names its own fields (`pfc.headroom_bytes`); point at the scenario key
        // (`sim.pfc.headroom`) the user wrote, or its nearest written parent.
        let key: Vec<String> = if field == "hosts" {
            vec!["workload".into(), "incast".into(), "senders".into()]
        } else {
            std::iter::once("sim".to_string())
                .chain(field.split('.').map(|f| {
                    f.trim_end_matches("_bytes")
                        .trim_end_matches("_bps")
                        .replace('_', "-")
                }))
                .collect()
        };
        let refs: Vec<&str> = key.iter().map(String::as_str).collect();
        bail!("{}: {}: {reason}", where_is(sc, &refs), key.join("."));
    }
    Ok((cfg, sim))
}

/// `FILE:LINE:COLUMN` of the deepest written key of `path`, or `FILE` alone.
fn where_is(sc: &Scenario, path: &[&str]) -> String {
    let file = sc.source_path.display();
    let text = std::fs::read_to_string(&sc.source_path).unwrap_or_default();
    match xrdma_scenario::locate_key(&text, path) {
        Some((line, column, _)) => format!("{file}:{line}:{column}"),
        None => file.to_string(),
    }
}

/// Run `sc` on the simulator and collect the result.
///
/// # Errors
/// An invalid configuration (nothing is run), or a transport failure during setup.
pub fn run(sc: &Scenario) -> Result<rep::RunResult> {
    let (cfg, sim_cfg) = check(sc)?;
    let Workload::Incast(incast) = &sc.workload;
    let wall = Instant::now();
    let mut sim = Simulation::new(sim_cfg.clone())?;
    let hosts = sim_cfg.hosts;
    let recv_host = incast.receiver;
    let mut eps = Vec::with_capacity(hosts as usize);
    for _ in 0..hosts {
        eps.push(Endpoint::new(cfg.clone())?);
    }
    let sizes: Vec<u64> = incast
        .messages
        .iter()
        .flat_map(|m| std::iter::repeat_n(m.size, m.count as usize))
        .collect();
    let seed = sim_cfg.seed;
    let mut apps: Vec<Role> = Vec::with_capacity(hosts as usize);
    for h in 0..hosts {
        if h == recv_host {
            apps.push(Role::Receiver(Receiver::default()));
            continue;
        }
        let (s_ep, r_ep) = pair_mut(&mut eps, h as usize, recv_host as usize);
        let half_s = driver::open(s_ep, &mut sim.transport(h))?;
        let half_r = driver::open(r_ep, &mut sim.transport(recv_host))?;
        let conn = driver::establish(s_ep, &mut sim.transport(h), half_s, &half_r.info, recv_host)?;
        driver::establish(r_ep, &mut sim.transport(recv_host), half_r, &half_s.info, h)?;
        apps.push(Role::Sender(Sender::new(
            h,
            conn,
            seed,
            incast.start,
            sizes.clone(),
        )));
    }
    let mut scratch = TurnScratch::default();
    for h in 0..hosts {
        let now = sim.now();
        let wake = driver::turn(
            now,
            &mut eps[h as usize],
            &mut sim.transport(h),
            &mut apps[h as usize],
            &mut scratch,
        );
        sim.set_wake(h, wake.unwrap_or(Time::MAX));
    }
    let mut ready = Vec::new();
    while sim.advance(&mut ready) {
        let now = sim.now();
        for &h in &ready {
            let i = h as usize;
            let wake = driver::turn(
                now,
                &mut eps[i],
                &mut sim.transport(h),
                &mut apps[i],
                &mut scratch,
            );
            sim.set_wake(h, wake.unwrap_or(Time::MAX));
        }
        ready.clear();
    }
    let wall_seconds = wall.elapsed().as_secs_f64();
    collect(sc, &sim, &sim_cfg, &apps, wall_seconds)
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

fn collect(
    sc: &Scenario,
    sim: &Simulation,
    sim_cfg: &SimConfig,
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
        }
    }
    let mut messages = Vec::new();
    let (mut delivered, mut mismatches, mut missing) = (0, 0, 0);
    for app in apps {
        let Role::Sender(s) = app else { continue };
        for m in &s.sent {
            let arrival = arrivals.remove(&(s.host, m.index));
            match &arrival {
                Some(a) if a.digest == m.digest && a.size == m.size => delivered += 1,
                Some(_) => mismatches += 1,
                None => missing += 1,
            }
            messages.push(rep::MessageRecord {
                sender: s.host,
                receiver: incast.receiver,
                index: m.index,
                size: m.size,
                intended_ps: incast.start.as_ps(),
                completed_ps: m.acked.map(Time::as_ps),
                delivered_ps: arrival.map(|a| a.at.as_ps()),
            });
        }
        let never_sent = incast
            .messages_per_sender()
            .saturating_sub(s.sent.len() as u64);
        missing += never_sent;
    }
    // Arrivals no sender claims are duplicates or strays.
    duplicates += arrivals.len() as u64;
    if !errors.is_empty() {
        eprintln!(
            "xrdma reported {} error(s); first: {}",
            errors.len(),
            errors[0]
        );
    }
    let st = sim.stats();
    let senders = incast.senders;
    let total_bytes = incast.bytes_per_sender() * u64::from(senders);
    let ideal = rep::IdealCompletion::incast(
        total_bytes,
        u64::from(sim_cfg.header_bytes),
        u64::from(sim_cfg.mtu),
        sim_cfg.link_rate_bps,
        sim_cfg.base_rtt().as_ps(),
    );
    let events = st.events;
    if senders == 0 {
        bail!("no senders");
    }
    Ok(rep::RunResult {
        schema_version: rep::SCHEMA_VERSION,
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        scenario: rep::ScenarioInfo {
            name: sc.name.clone(),
            path: sc.source_path.display().to_string(),
            backend: "sim".into(),
            seed: sim_cfg.seed,
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
        network: rep::NetworkCounters {
            data_packets: st.data_packets,
            ecn_marks: st.ecn_marks,
            cnps: st.cnps_sent,
            pfc_xoff: st.pfc_xoff_sent,
            pfc_xon: st.pfc_xon_sent,
            drops: st.drops,
            max_buffer_bytes: st.max_buffer_bytes,
            max_egress_queue_bytes: st.max_egress_queue_bytes,
        },
        ideal,
        sim: Some(rep::SimInfo {
            events,
            simulated_ps: sim.now().as_ps(),
            trace_hash: format!("{:016x}", sim.trace_hash()),
        }),
        errors,
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
