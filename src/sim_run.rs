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
use xrdma_scenario::{Scenario, SimSection, TopologySection, Workload, XrdmaSection};
use xrdma_sim::{
    DcqcnConfig, EcnConfig, PfcConfig, SimConfig, SimConfigError, Simulation, Topology,
};

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
        adaptive_window: x.adaptive_window,
        ..Config::default()
    }
}

/// The simulator configuration from a scenario's `sim:` block, for a workload of
/// `workload_hosts` hosts. A star has exactly the workload's hosts; another topology has its own
/// host count (checked against the workload in [`check`]).
pub fn sim_config(s: &SimSection, workload_hosts: u32) -> SimConfig {
    let d = SimConfig::default();
    let topology = match &s.topology {
        TopologySection::Star => Topology::Star,
        TopologySection::LeafSpine {
            leaves,
            spines,
            hosts_per_leaf,
            uplink_rate_bps,
        } => Topology::LeafSpine {
            leaves: *leaves,
            spines: *spines,
            hosts_per_leaf: *hosts_per_leaf,
            uplink_rate_bps: *uplink_rate_bps,
        },
        TopologySection::FatTree { k, hosts_per_edge } => Topology::FatTree {
            k: *k,
            hosts_per_edge: *hosts_per_edge,
        },
    };
    let hosts = match topology.host_count() {
        Some(n) if topology != Topology::Star => u32::try_from(n).unwrap_or(u32::MAX),
        _ => workload_hosts,
    };
    let dcqcn = s.dcqcn.as_ref().map(|q| {
        let d = DcqcnConfig::default();
        DcqcnConfig {
            g: q.g.unwrap_or(d.g),
            alpha_update: q.alpha_update.unwrap_or(d.alpha_update),
            rate_increase_timer: q.rate_increase_timer.unwrap_or(d.rate_increase_timer),
            byte_counter_bytes: q.byte_counter_bytes.unwrap_or(d.byte_counter_bytes),
            fast_recovery_steps: q.fast_recovery_steps.unwrap_or(d.fast_recovery_steps),
            rate_ai_bps: q.rate_ai_bps.or(d.rate_ai_bps),
            rate_hai_bps: q.rate_hai_bps.or(d.rate_hai_bps),
            min_rate_bps: q.min_rate_bps.unwrap_or(d.min_rate_bps),
        }
    });
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
        min_rnr_timer: s.min_rnr_timer.unwrap_or(d.min_rnr_timer),
        rnr_retry: s.rnr_retry.unwrap_or(d.rnr_retry),
        local_ack_timeout: s.local_ack_timeout.unwrap_or(d.local_ack_timeout),
        retry_cnt: s.retry_cnt.unwrap_or(d.retry_cnt),
        dcqcn,
        topology,
        ..d
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
    if sim.hosts < sc.workload.hosts() {
        bail!(
            "{}: workload.incast.senders: the workload needs {} hosts but the topology has {}",
            where_is(sc, &["workload", "incast", "senders"]),
            sc.workload.hosts(),
            sim.hosts
        );
    }
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
        let reason = if field == "hosts" {
            let hosts = sc.workload.hosts();
            format!("the senders and the receiver make {hosts} hosts; the simulator's host count {reason}")
        } else {
            reason
        };
        bail!("{}: {}: {reason}", where_is(sc, &refs), key.join("."));
    }
    let need = memory_estimate(sc, &cfg);
    if let Some(avail) = available_memory() {
        if need > avail {
            bail!(
                "{}: the run needs about {} of memory (per sender: four {}-byte rings and two \
                 copies of the largest message), but only {} is available; use fewer senders, \
                 smaller messages or a smaller xrdma.max-window",
                sc.source_path.display(),
                xrdma_reports::format_bytes(need),
                cfg.ring_bytes(),
                xrdma_reports::format_bytes(avail)
            );
        }
    }
    Ok((cfg, sim))
}

/// Upper estimate of the bytes a simulated incast touches: each connection has a staging and
/// a landing ring at both ends, and each sender holds its current message while the receiver
/// reassembles one per connection.
pub fn memory_estimate(sc: &Scenario, cfg: &Config) -> u64 {
    let Workload::Incast(i) = &sc.workload;
    let largest = i.messages.iter().map(|m| m.size).max().unwrap_or(0);
    let per_sender = cfg
        .ring_bytes()
        .saturating_mul(4)
        .saturating_add(largest.saturating_mul(2));
    per_sender.saturating_mul(u64::from(i.senders))
}

/// `MemAvailable` from `/proc/meminfo`, bytes; `None` where it cannot be read.
fn available_memory() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib.saturating_mul(1024))
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
    let ideal = rep::IdealCompletion::incast(
        total_bytes,
        u64::from(sim_cfg.header_bytes),
        u64::from(sim_cfg.mtu),
        sim_cfg.link_rate_bps,
        ideal_base_rtt(sim_cfg).as_ps(),
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
