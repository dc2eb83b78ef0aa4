//! One rank on an RDMA device: bootstrap, run, hand in or gather the records.

use super::accept::admit_peers;
use super::{decode_records, devices, hello, RankPlan};
use crate::bootstrap::{Auth, ConnRecord, Frame, JobSecret, Listener, Peer};
use anyhow::{anyhow, bail, Context, Result};
use std::time::{Duration, Instant};
use xrdma::driver::{self, ConnInfo};
use xrdma::{Endpoint, Span, Time};
use xrdma_reports as rep;
use xrdma_runner::drive::drive;
use xrdma_runner::fabric::VerbsFabric;
use xrdma_runner::fabric::{Clocked, Fabric};
use xrdma_runner::host_faults::{HostFaultState, HostFaults};
use xrdma_runner::role::HostRole;
use xrdma_runner::run::{collect, pair_mut, receiver_view, records, setup, App};
use xrdma_runner::watch::NoWatch;
use xrdma_runner::workload::{self, SenderRecord, Visit, Workload};
use xrdma_scenario::{Scenario, Stall};

/// How often (fabric time) a rank whose own hosts are finished looks at its bootstrap
/// sockets: a non-blocking read costs a system call, too much for every busy-polling round.
const POLL_EVERY: Span = Span::from_ms(1);

/// What a rank produced.
#[derive(Debug)]
pub enum RankOutcome {
    /// The receiver's rank: the whole run's result, every rank's records merged.
    Report(Box<rep::RunResult>),
    /// Another rank: its records went to the receiver's rank.
    Sent {
        /// This rank.
        rank: u32,
        /// The rank the records went to.
        to_rank: u32,
        /// Senders this rank ran.
        senders: usize,
        /// Messages they had ACKed.
        acked: usize,
        /// Messages they intended to send.
        messages: usize,
    },
}

/// Run rank `rank` of `sc` (its `verbs.ranks` entry) on the RDMA device the `verbs:` block
/// names. Every bootstrap connection proves the job's `secret` both ways ([`Auth::Job`]):
/// the receiver's rank refuses (and logs) a connection that does not and goes on accepting;
/// a sender rank gives nothing to a listener that does not. Bootstrap reads, accepts and
/// connects are bounded by the block's `run-timeout`.
///
/// # Errors
/// A scenario without `ranks`, a bootstrap failure (peer absent, other version or scenario,
/// no proof of the secret, closed early), no device, or a verb that fails during setup.
/// Failures after the start (a peer that vanishes mid-run) are recorded in the result's
/// `errors` and its messages count as missing.
pub fn run_rank(sc: &Scenario, rank: u32, secret: &JobSecret) -> Result<RankOutcome> {
    run_rank_bound(sc, rank, None, secret)
}

/// [`run_rank`] with the bootstrap listener already bound (by the launcher's rendezvous,
/// [`crate::launch`]); `None`: the receiver's rank binds its `verbs.ranks` address. A
/// listener given to a rank that does not run the receiver is closed unused.
///
/// # Errors
/// As [`run_rank`].
pub fn run_rank_bound(
    sc: &Scenario,
    rank: u32,
    bound: Option<Listener>,
    secret: &JobSecret,
) -> Result<RankOutcome> {
    struct Rank<'a>(&'a Scenario, u32, Option<Listener>, &'a JobSecret);
    impl Visit for Rank<'_> {
        type Output = Result<RankOutcome>;
        fn visit<W: Workload>(self, w: &W) -> Self::Output {
            run_rank_of(w, self.0, self.1, self.2, self.3)
        }
    }
    workload::visit(&sc.workload, Rank(sc, rank, bound, secret))
}

/// [`run_rank_bound`] of workload `w`.
fn run_rank_of<W: Workload>(
    w: &W,
    sc: &Scenario,
    rank: u32,
    bound: Option<Listener>,
    secret: &JobSecret,
) -> Result<RankOutcome> {
    let cfg = xrdma_runner::check::check_xrdma(sc)?;
    let section = sc.verbs.clone().unwrap_or_default();
    let plan = RankPlan::new(sc, &section, rank)?;
    let ours = hello(sc, rank)?;
    let io = Duration::from_nanos(section.run_timeout.as_ps() / 1000);
    let receiver = plan.receiver;
    // Listen first, so peers that start sooner find the port while the device opens.
    let listener = match bound {
        _ if !plan.is_receiver_rank() || plan.peers.is_empty() => None,
        Some(l) => Some(l),
        None => Some(Listener::bind(section.ranks[rank as usize].address)?),
    };
    let mut fabric = VerbsFabric::with_rc(plan.hosts.len() as u32, &section, sc.rc_params())?;
    let cfg = xrdma_runner::fabric::config_for(&cfg, &fabric);
    let seed = sc.sim_or_default().seed;
    let setup = setup(w, seed);
    let stop = w.deadline(seed);
    // The workload's stalls of this rank's hosts, by fabric host.
    let stalls: Vec<Stall> = w
        .stalls()
        .iter()
        .filter_map(|s| {
            let i = plan.local_index(s.host)?;
            Some(Stall {
                host: i as u32,
                ..*s
            })
        })
        .collect();
    let mut hf = HostFaultState::new(&HostFaults::default(), plan.hosts.len() as u32);
    let mut eps = Vec::with_capacity(plan.hosts.len());
    let mut apps: Vec<App<W>> = Vec::with_capacity(plan.hosts.len());
    for &h in &plan.hosts {
        eps.push(Endpoint::new(cfg.clone())?);
        apps.push(if h == receiver {
            HostRole::Receiver(w.receiver(&setup))
        } else {
            HostRole::Idle
        });
    }
    // Pairs inside this rank: exchanged in process, as in a single-process run.
    if let Some(ri) = plan.local_index(receiver) {
        for (i, &h) in plan.hosts.iter().enumerate() {
            if h == receiver {
                continue;
            }
            let (s_ep, r_ep) = pair_mut(&mut eps, i, ri);
            let half_s = driver::open(s_ep, &mut fabric.host(i as u32))?;
            let half_r = driver::open(r_ep, &mut fabric.host(ri as u32))?;
            let conn = driver::establish(
                s_ep,
                &mut fabric.host(i as u32),
                half_s,
                &half_r.info,
                receiver,
            )?;
            driver::establish(r_ep, &mut fabric.host(ri as u32), half_r, &half_s.info, h)?;
            apps[i] = HostRole::Sender(w.sender(&setup, h, conn));
        }
    }
    let wall = Instant::now();
    if let (Some(listener), Some(ri)) = (listener, plan.local_index(receiver)) {
        // The receiver's rank: every peer rank connects, sends its half of each pair, gets
        // ours; then all start together.
        let deadline = Instant::now() + io;
        let host = ri as u32;
        let auth = Auth::Job(secret);
        let admission = admit_peers(&listener, &ours, auth, &plan, deadline, io, |rec, from| {
            let info: ConnInfo = rec.decode(from)?;
            let half = driver::open(&mut eps[ri], &mut fabric.host(host))?;
            let mine = half.info;
            driver::establish(
                &mut eps[ri],
                &mut fabric.host(host),
                half,
                &info,
                rec.sender,
            )
            .with_context(|| format!("connecting host {}'s QP", rec.sender))?;
            Ok(ConnRecord::new(rec.sender, receiver, &mine)?)
        })?;
        let seen = admission.seen;
        let mut peers: Vec<(u32, Peer, Vec<u32>)> = admission
            .peers
            .into_iter()
            .map(|a| (a.rank, a.peer, a.senders))
            .collect();
        for (_, p, _) in &mut peers {
            p.send(&Frame::Start)?;
        }
        fabric.start_clock();
        let wall = Instant::now();
        let mut remote: Vec<Option<Vec<SenderRecord>>> = vec![None; peers.len()];
        let mut boot_errors: Vec<String> = Vec::new();
        let mut next_poll = Time::ZERO;
        let (f, e, a) = (&mut fabric, &mut eps, &mut apps);
        drive(
            f,
            e,
            a,
            &stalls,
            stop,
            &mut hf,
            |now, _, _| {
                if now < next_poll {
                    return false;
                }
                next_poll = now + POLL_EVERY;
                for (k, (r, p, hosts)) in peers.iter_mut().enumerate() {
                    if remote[k].is_some() {
                        continue;
                    }
                    match p.try_recv() {
                        Ok(None) => {}
                        Ok(Some(f)) => {
                            remote[k] = Some(decode_records(f, *r, hosts).unwrap_or_else(|e| {
                                boot_errors.push(format!("{e:#}"));
                                Vec::new()
                            }))
                        }
                        Err(e) => {
                            boot_errors.push(format!("rank {r}: {e}"));
                            remote[k] = Some(Vec::new());
                        }
                    }
                }
                remote.iter().all(Option::is_some)
            },
            &mut NoWatch,
        );
        // The run timed out or a peer is late: its records still come once its own run
        // stops (bounded by the I/O timeout).
        for (k, (r, p, hosts)) in peers.iter_mut().enumerate() {
            if remote[k].is_none() {
                let got = p
                    .expect("records")
                    .map_err(anyhow::Error::from)
                    .and_then(|f| decode_records(f, *r, hosts));
                remote[k] = Some(got.unwrap_or_else(|e| {
                    boot_errors.push(format!("rank {r}: {e:#}"));
                    Vec::new()
                }));
            }
            if let Err(e) = p.send(&Frame::Bye) {
                boot_errors.push(format!("rank {r}: {e}"));
            }
        }
        let wall_seconds = wall.elapsed().as_secs_f64();
        // Each peer's answer to `bye`: its device and counters over its run.
        let peer_devices = peers
            .iter_mut()
            .map(|(r, p, _)| {
                let got = devices::receive(p, *r).map_err(|e| {
                    boot_errors.push(format!("rank {r}: no device counters: {e:#}"));
                });
                (*r, got.ok())
            })
            .collect();
        let mut senders = records(w, &apps);
        xrdma_runner::transport_info::add_windows(&mut senders, |h| {
            plan.local_index(h).and_then(|i| eps.get(i))
        });
        senders.extend(remote.into_iter().flatten().flatten());
        // A sender whose rank sent nothing still owes its messages: they count as missing.
        for h in (0..w.hosts()).filter(|&h| w.is_sender(h)) {
            if !senders.iter().any(|s| s.host == h) {
                senders.push(SenderRecord {
                    host: h,
                    messages: w.planned(seed, h),
                    // Found when the records are gathered, after the run: its place in time.
                    errors: vec![workload::ErrorAt::new(
                        fabric.now(),
                        "its rank sent no records",
                    )],
                    window: None,
                });
            }
        }
        senders.sort_by_key(|s| s.host);
        let got = receiver_view(w, &apps);
        let mut result = collect(w, sc, &fabric, seed, &senders, got, wall_seconds);
        xrdma_runner::transport_info::record_window_signals(&mut result, &eps);
        result.errors.extend(boot_errors);
        record_ranks(&mut result, &section, rank, &seen);
        devices::merge(&mut result, rank, peer_devices);
        return Ok(RankOutcome::Report(Box::new(result)));
    }
    if plan.is_receiver_rank() {
        // Every host in this rank: nothing to bootstrap.
        fabric.start_clock();
        let (f, e, a) = (&mut fabric, &mut eps, &mut apps);
        drive(
            f,
            e,
            a,
            &stalls,
            stop,
            &mut hf,
            |_, _, _| true,
            &mut NoWatch,
        );
        let mut senders = records(w, &apps);
        xrdma_runner::transport_info::add_windows(&mut senders, |h| {
            plan.local_index(h).and_then(|i| eps.get(i))
        });
        let got = receiver_view(w, &apps);
        let wall_seconds = wall.elapsed().as_secs_f64();
        let mut result = collect(w, sc, &fabric, seed, &senders, got, wall_seconds);
        xrdma_runner::transport_info::record_window_signals(&mut result, &eps);
        record_ranks(&mut result, &section, rank, &[]);
        devices::merge(&mut result, rank, Vec::new());
        return Ok(RankOutcome::Report(Box::new(result)));
    }
    // A sender rank: connect to the receiver's rank, offer our halves, take theirs.
    let to_rank = plan.receiver_rank;
    let addr = section.ranks[to_rank as usize].address;
    let mut p = Peer::connect(addr, Instant::now() + io, io)?;
    p.handshake(&ours, Auth::Job(secret))?;
    let mut halves = Vec::with_capacity(plan.hosts.len());
    let mut offer = Vec::with_capacity(plan.hosts.len());
    for (i, &h) in plan.hosts.iter().enumerate() {
        let half = driver::open(&mut eps[i], &mut fabric.host(i as u32))?;
        offer.push(ConnRecord::new(h, receiver, &half.info)?);
        halves.push(half);
    }
    p.send(&Frame::Conns { conns: offer })?;
    let Frame::Conns { conns } = p.expect("conns")? else {
        bail!("rank {to_rank} sent no connection records");
    };
    for (i, half) in halves.into_iter().enumerate() {
        let h = plan.hosts[i];
        let rec = conns
            .iter()
            .find(|c| c.sender == h && c.receiver == receiver)
            .ok_or_else(|| anyhow!("rank {to_rank} sent no connection for host {h}"))?;
        let info: ConnInfo = rec.decode(p.addr())?;
        let conn = driver::establish(
            &mut eps[i],
            &mut fabric.host(i as u32),
            half,
            &info,
            receiver,
        )
        .with_context(|| format!("connecting host {h}'s QP"))?;
        apps[i] = HostRole::Sender(w.sender(&setup, h, conn));
    }
    p.expect("start")?;
    fabric.start_clock();
    let frame = |eps: &[Endpoint], apps: &[App<W>]| -> Result<Frame> {
        let mut recs = records(w, apps);
        xrdma_runner::transport_info::add_windows(&mut recs, |h| {
            plan.local_index(h).and_then(|i| eps.get(i))
        });
        Ok(Frame::Records {
            records: serde_json::to_value(recs)?,
        })
    };
    let mut handed_in = false;
    let mut bye = false;
    let mut failure: Option<anyhow::Error> = None;
    let mut next_poll = Time::ZERO;
    let (f, e, a) = (&mut fabric, &mut eps, &mut apps);
    drive(
        f,
        e,
        a,
        &stalls,
        stop,
        &mut hf,
        |now, eps, apps| {
            if !handed_in {
                handed_in = true;
                if let Err(e) = frame(eps, apps).and_then(|f| Ok(p.send(&f)?)) {
                    failure = Some(e);
                    return true;
                }
            }
            if now < next_poll {
                return false;
            }
            next_poll = now + POLL_EVERY;
            match p.try_recv() {
                Ok(None) => false,
                Ok(Some(Frame::Bye)) => {
                    bye = true;
                    true
                }
                Ok(Some(_)) => {
                    failure = Some(anyhow!("rank {to_rank} sent an unexpected frame"));
                    true
                }
                Err(e) => {
                    failure = Some(e.into());
                    true
                }
            }
        },
        &mut NoWatch,
    );
    if let Some(e) = failure {
        return Err(e.context(format!("handing the records to rank {to_rank}")));
    }
    if !handed_in {
        // The run timed out before our senders finished: hand in what there is.
        p.send(&frame(&eps, &apps)?)?;
    }
    if !bye {
        p.expect("bye")?;
    }
    // The end of this rank's run: its device's counters go to the receiver's rank.
    p.send(&devices::RankDevice::of(&fabric).frame()?)?;
    let mut senders = 0;
    let mut acked = 0;
    let mut messages = 0;
    for r in records(w, &apps) {
        senders += 1;
        messages += r.messages.len();
        acked += r
            .messages
            .iter()
            .filter(|m| m.completed_ps.is_some())
            .count();
    }
    Ok(RankOutcome::Sent {
        rank,
        to_rank,
        senders,
        acked,
        messages,
    })
}

/// Record in `result`'s environment where every rank ran: this one (`rank`) here, the peers
/// as the bootstrap saw them ([`xrdma_observe::environment::ranks`]); and leave out the CPU
/// time, which is this rank's alone.
fn record_ranks(
    result: &mut rep::RunResult,
    section: &xrdma_scenario::VerbsSection,
    rank: u32,
    seen: &[xrdma_observe::environment::PeerSeen],
) {
    if let Some(env) = &mut result.environment {
        let own = env.host_name.clone();
        env.ranks = Some(xrdma_observe::environment::ranks(section, rank, own, seen));
    }
    // This process's CPU time is one rank's, not the run's hosts': not observed as a whole.
    result.host_cpu = None;
}
