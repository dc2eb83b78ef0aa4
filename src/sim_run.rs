//! Running a scenario on the simulator backend.
//!
//! Builds one xrdma [`Endpoint`] per host, connects every sender to the receiver (one RC QP
//! pair each, exchanging [`xrdma::driver::ConnInfo`] in process), then lets the simulator
//! advance virtual time and gives a driver turn to each host that needs one.

use crate::incast::{PayloadPool, Receiver, Role, Sender};
use crate::sim_config::check;
use anyhow::{bail, Result};
use std::collections::BTreeMap;
use std::time::Instant;
use xrdma::driver::{self, TurnScratch};
use xrdma::{Endpoint, Time};
use xrdma_reports as rep;
use xrdma_scenario::{Scenario, Workload};
use xrdma_sim::{SimConfig, Simulation, Topology};

/// Run `sc` on the simulator and collect the result.
///
/// # Errors
/// An invalid configuration (nothing is run), or a transport failure during setup.
pub fn run(sc: &Scenario) -> Result<rep::RunResult> {
    let checked = check(sc)?;
    let (cfg, sim_cfg) = (checked.xrdma, checked.sim);
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
    let pool = PayloadPool::new(sim_cfg.seed, sizes.iter().copied().max().unwrap_or(0));
    let mut apps: Vec<Role> = Vec::with_capacity(hosts as usize);
    let workload_hosts = sc.workload.hosts();
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
        let half_s = driver::open(s_ep, &mut sim.transport(h))?;
        let half_r = driver::open(r_ep, &mut sim.transport(recv_host))?;
        let conn = driver::establish(s_ep, &mut sim.transport(h), half_s, &half_r.info, recv_host)?;
        driver::establish(r_ep, &mut sim.transport(recv_host), half_r, &half_s.info, h)?;
        apps.push(Role::Sender(Sender::new(
            h,
            conn,
            pool.clone(),
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

/// The base RTT used in T*: the round trip of a header-only packet and its ACK on
/// idle links, `4·delay + 2·ser(header) + 2·ser(header + AETH)`.
///
/// Why header-only: the last byte of an N-to-1 incast is ACKed no earlier than
/// `bottleneck bytes / B + 4·delay + ser(first packet on its first hop) + 2·ser(ACK)`. The
/// `N·S·(1 + header/MTU)` term already charges every packet's bottleneck serialization, so
/// charging a full data packet twice more (as the RTT of an MTU packet would) overstates the
/// bound; with a header-only RTT, T* stays below the true bound whenever MTU ≥ header.
pub fn ideal_base_rtt(cfg: &SimConfig) -> Time {
    let ser = |b: u32| Time::serialization(u64::from(b), cfg.link_rate_bps);
    let hdr = ser(cfg.header_bytes);
    let ack = ser(cfg.header_bytes + xrdma_sim::AETH_BYTES);
    Time(cfg.link_delay.as_ps().saturating_mul(4)) + hdr + hdr + ack + ack
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
    let st = sim.stats();
    let senders = incast.senders;
    let total_bytes = incast.bytes_per_sender() * u64::from(senders);
    // T* is the bound of the single-switch incast; on a multi-tier fabric the bottleneck may be
    // an oversubscribed uplink and the base RTT crosses more hops, so no T* is claimed there.
    let ideal = if sim_cfg.topology == Topology::Star {
        rep::IdealCompletion::incast(
            total_bytes,
            u64::from(sim_cfg.header_bytes),
            u64::from(sim_cfg.mtu),
            sim_cfg.link_rate_bps,
            ideal_base_rtt(sim_cfg).as_ps(),
        )
    } else {
        None
    };
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
            retransmitted_packets: st.retransmitted_packets,
            retransmit_timeouts: st.retransmit_timeouts,
            seq_naks: st.seq_naks,
            rnr_naks: st.rnr_naks,
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
