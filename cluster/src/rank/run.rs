//! One rank: bootstrap, run, hand in or gather the records, over either stack
//! ([`super::stacks::RankStack`]).

use super::accept::admit_peers;
use super::stacks::{RankStack, SocketRank, VerbsRank, BOOTSTRAP_POLL};
use super::{decode_records, devices, hello, RankPlan};
use crate::bootstrap::{Auth, ConnRecord, Frame, JobSecret, Listener, Peer};
use anyhow::{anyhow, bail, Context, Result};
use std::net::{Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};
use xrdma::Time;
use xrdma_observe::environment::PeerSeen;
use xrdma_reports as rep;
use xrdma_runner::drive::drive;
use xrdma_runner::fabric::Clocked;
use xrdma_runner::host_faults::{HostFaultState, HostFaults};
use xrdma_runner::request::Backend;
use xrdma_runner::role::HostRole;
use xrdma_runner::run::{collect_on_path, receiver_view, records, setup, App};
use xrdma_runner::stack::HostStack;
use xrdma_runner::watch::NoWatch;
use xrdma_runner::workload::{self, SenderRecord, Visit, Workload};
use xrdma_scenario::{Scenario, Stall, VerbsSection};

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

/// Run rank `rank` of `sc` (its `verbs.ranks` entry) on `backend`: xrdma on the RDMA device
/// the `verbs:` block names, or kernel TCP over this machine's sockets. Every bootstrap
/// connection proves the job's `secret` both ways ([`Auth::Job`]): the receiver's rank
/// refuses (and logs) a connection that does not and goes on accepting; a sender rank gives
/// nothing to a listener that does not. Bootstrap reads, accepts and connects are bounded by
/// the block's `run-timeout`.
///
/// # Errors
/// The simulator as `backend` (it runs a whole scenario in one process), a scenario without
/// `ranks` or whose stack the backend does not run, a bootstrap failure (peer absent, other
/// version, scenario or backend, no proof of the secret, closed early), no device, or a
/// verb or socket call that fails during setup. Failures after the start (a peer that
/// vanishes mid-run) are recorded in the result's `errors` and its messages count as
/// missing.
pub fn run_rank(
    sc: &Scenario,
    rank: u32,
    backend: Backend,
    secret: &JobSecret,
) -> Result<RankOutcome> {
    run_rank_bound(sc, rank, backend, None, secret)
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
    backend: Backend,
    bound: Option<Listener>,
    secret: &JobSecret,
) -> Result<RankOutcome> {
    struct Rank<'a, R>(&'a Scenario, u32, Option<Listener>, &'a JobSecret, R);
    impl<R: RankStack> Visit for Rank<'_, R> {
        type Output = Result<RankOutcome>;
        fn visit<W: Workload>(self, w: &W) -> Self::Output {
            run_rank_of(w, self.0, self.1, self.2, self.3, self.4)
        }
    }
    match backend {
        Backend::Verbs => workload::visit(&sc.workload, Rank(sc, rank, bound, secret, VerbsRank)),
        Backend::Sockets => workload::visit(
            &sc.workload,
            Rank(sc, rank, bound, secret, SocketRank::default()),
        ),
        Backend::Sim => bail!(
            "the simulator runs a whole scenario in one process: run ranks with --backend \
             verbs or --backend sockets"
        ),
    }
}

/// [`run_rank_bound`] of workload `w` over stack `stack`.
fn run_rank_of<W: Workload, R: RankStack>(
    w: &W,
    sc: &Scenario,
    rank: u32,
    bound: Option<Listener>,
    secret: &JobSecret,
    mut stack: R,
) -> Result<RankOutcome> {
    let section = sc.verbs.clone().unwrap_or_default();
    let plan = RankPlan::new(sc, &section, rank)?;
    let ours = hello(sc, rank, R::BACKEND)?;
    let io = Duration::from_nanos(section.run_timeout.as_ps() / 1000);
    let receiver = plan.receiver;
    // Listen first, so peers that start sooner find the port while the device opens.
    let listener = match bound {
        _ if !plan.is_receiver_rank() || plan.peers.is_empty() => None,
        Some(l) => Some(l),
        None => Some(Listener::bind(section.ranks[rank as usize].address)?),
    };
    let (mut fabric, mut eps) = stack.build(sc, plan.hosts.len() as u32)?;
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
    let mut apps: Vec<App<W>> = Vec::with_capacity(plan.hosts.len());
    for &h in &plan.hosts {
        apps.push(if h == receiver {
            HostRole::Receiver(w.receiver(&setup))
        } else {
            HostRole::Idle
        });
    }
    // Pairs inside this rank: the same three steps, the records passed in process (and a
    // loopback address where a TCP answer needs one).
    if let Some(ri) = plan.local_index(receiver) {
        let here = SocketAddr::from((Ipv4Addr::LOCALHOST, 0));
        let (f, e) = (&mut fabric, &mut eps);
        for (i, &h) in plan.hosts.iter().enumerate() {
            if h != receiver {
                let (half, offer) = stack.offer(f, e, i as u32)?;
                let answer = stack.answer(f, e, ri as u32, h, &offer, here, here)?;
                let conn = stack.complete(f, e, i as u32, half, receiver, &answer, here)?;
                apps[i] = HostRole::Sender(w.sender(&setup, h, conn));
            }
        }
        stack.settle(f, e, Instant::now() + io)?;
    }
    let run = RankRun {
        w,
        sc,
        section: &section,
        plan: &plan,
        stalls: &stalls,
        stop,
        seed,
    };
    if let (Some(listener), Some(ri)) = (listener, plan.local_index(receiver)) {
        // The receiver's rank: every peer rank connects, offers its half of each pair, gets
        // our answer; then all start together.
        let deadline = Instant::now() + io;
        let ri = ri as u32;
        let auth = Auth::Job(secret);
        let (f, e) = (&mut fabric, &mut eps);
        let admission = admit_peers(&listener, &ours, auth, &plan, deadline, io, |rec, p| {
            let local = p.local_addr()?;
            let mine = stack.answer(f, e, ri, rec.sender, &rec.info, p.addr(), local)?;
            Ok(ConnRecord::new(rec.sender, receiver, &mine)?)
        })?;
        stack.settle(&mut fabric, &mut eps, deadline)?;
        let peers: Vec<(u32, Peer, Vec<u32>)> = admission
            .peers
            .into_iter()
            .map(|a| (a.rank, a.peer, a.senders))
            .collect();
        let result = run.gather::<R>(
            &mut fabric,
            &mut eps,
            &mut apps,
            &mut hf,
            peers,
            &admission.seen,
        );
        return Ok(RankOutcome::Report(Box::new(result)));
    }
    if plan.is_receiver_rank() {
        // Every host in this rank: nothing to bootstrap.
        let result = run.gather::<R>(&mut fabric, &mut eps, &mut apps, &mut hf, Vec::new(), &[]);
        return Ok(RankOutcome::Report(Box::new(result)));
    }
    // A sender rank: connect to the receiver's rank, offer our halves, take its answers.
    let to_rank = plan.receiver_rank;
    let addr = section.ranks[to_rank as usize].address;
    let mut p = Peer::connect(addr, Instant::now() + io, io)?;
    p.handshake(&ours, Auth::Job(secret))?;
    let mut halves = Vec::with_capacity(plan.hosts.len());
    let mut offer = Vec::with_capacity(plan.hosts.len());
    for (i, &h) in plan.hosts.iter().enumerate() {
        let (half, info) = stack.offer(&mut fabric, &mut eps, i as u32)?;
        offer.push(ConnRecord::new(h, receiver, &info)?);
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
        let conn = stack
            .complete(
                &mut fabric,
                &mut eps,
                i as u32,
                half,
                receiver,
                &rec.info,
                p.addr(),
            )
            .with_context(|| format!("connecting host {h} to host {receiver}"))?;
        apps[i] = HostRole::Sender(w.sender(&setup, h, conn));
    }
    p.expect("start")?;
    R::start_clock(&mut fabric);
    run.hand_in::<R>(&mut fabric, &mut eps, &mut apps, &mut hf, p, to_rank)
}

/// What every rank's run of workload `w` shares.
struct RankRun<'a, W> {
    w: &'a W,
    sc: &'a Scenario,
    section: &'a VerbsSection,
    plan: &'a RankPlan,
    stalls: &'a [Stall],
    stop: Option<Time>,
    seed: u64,
}

impl<W: Workload> RankRun<'_, W> {
    /// This rank's hosts through the shared turn loop, with the workload's stalls and
    /// deadline, until they are finished and `remote_settled` holds.
    fn drive<R: RankStack>(
        &self,
        fabric: &mut R::Fabric,
        eps: &mut [R::Stack],
        apps: &mut [App<W>],
        hf: &mut HostFaultState,
        remote_settled: impl FnMut(Time, &[R::Stack], &[App<W>]) -> bool,
    ) {
        drive(
            fabric,
            eps,
            apps,
            self.stalls,
            self.stop,
            hf,
            remote_settled,
            &mut NoWatch,
        );
    }

    /// The records of this rank's senders, each with its send window.
    fn records<R: RankStack>(&self, eps: &[R::Stack], apps: &[App<W>]) -> Vec<SenderRecord> {
        let mut recs = records(self.w, apps);
        for r in &mut recs {
            let ep = self.plan.local_index(r.host).and_then(|i| eps.get(i));
            r.window = ep.and_then(HostStack::<R::Fabric>::window_tally);
        }
        recs
    }

    /// The receiver's rank: tell every peer (`seen` where the bootstrap saw it) to start,
    /// run, gather every peer's records and its device, and collect the one result.
    fn gather<R: RankStack>(
        &self,
        fabric: &mut R::Fabric,
        eps: &mut [R::Stack],
        apps: &mut [App<W>],
        hf: &mut HostFaultState,
        mut peers: Vec<(u32, Peer, Vec<u32>)>,
        seen: &[PeerSeen],
    ) -> rep::RunResult {
        let mut boot_errors: Vec<String> = Vec::new();
        for (r, p, _) in &mut peers {
            if let Err(e) = p.send(&Frame::Start) {
                boot_errors.push(format!("rank {r}: {e}"));
            }
        }
        R::start_clock(fabric);
        let wall = Instant::now();
        let mut remote: Vec<Option<Vec<SenderRecord>>> = vec![None; peers.len()];
        let mut next_poll = Time::ZERO;
        self.drive::<R>(fabric, eps, apps, hf, |now, _, _| {
            if now < next_poll {
                return false;
            }
            next_poll = now + BOOTSTRAP_POLL;
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
        });
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
        let (w, seed) = (self.w, self.seed);
        let mut senders = self.records::<R>(eps, apps);
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
        let got = receiver_view(w, apps);
        let path = R::Stack::path(fabric);
        let mut result =
            collect_on_path(w, self.sc, fabric, path, seed, &senders, got, wall_seconds);
        R::Stack::describe(&mut result, eps);
        result.errors.extend(boot_errors);
        record_ranks(&mut result, self.section, self.plan.rank, seen);
        devices::merge(&mut result, self.plan.rank, peer_devices);
        result
    }

    /// A sender rank after `start`: run, hand this rank's records to the receiver's rank
    /// (`to_rank`, over `p`) once its senders are finished, keep its hosts serviced until
    /// that rank says `bye`, and answer with this rank's device.
    #[allow(clippy::too_many_arguments)]
    fn hand_in<R: RankStack>(
        &self,
        fabric: &mut R::Fabric,
        eps: &mut [R::Stack],
        apps: &mut [App<W>],
        hf: &mut HostFaultState,
        mut p: Peer,
        to_rank: u32,
    ) -> Result<RankOutcome> {
        let frame = |eps: &[R::Stack], apps: &[App<W>]| -> Result<Frame> {
            Ok(Frame::Records {
                records: serde_json::to_value(self.records::<R>(eps, apps))?,
            })
        };
        let mut handed_in = false;
        let mut bye = false;
        let mut failure: Option<anyhow::Error> = None;
        let mut next_poll = Time::ZERO;
        self.drive::<R>(fabric, eps, apps, hf, |now, eps, apps| {
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
            next_poll = now + BOOTSTRAP_POLL;
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
        });
        if let Some(e) = failure {
            return Err(e.context(format!("handing the records to rank {to_rank}")));
        }
        if !handed_in {
            // The run timed out before our senders finished: hand in what there is.
            p.send(&frame(eps, apps)?)?;
        }
        if !bye {
            p.expect("bye")?;
        }
        // The end of this rank's run: its device's counters go to the receiver's rank.
        p.send(&devices::RankDevice::of(&*fabric).frame()?)?;
        let (mut senders, mut acked, mut messages) = (0, 0, 0);
        for r in records(self.w, apps) {
            senders += 1;
            messages += r.messages.len();
            acked += r
                .messages
                .iter()
                .filter(|m| m.completed_ps.is_some())
                .count();
        }
        Ok(RankOutcome::Sent {
            rank: self.plan.rank,
            to_rank,
            senders,
            acked,
            messages,
        })
    }
}

/// Record in `result`'s environment where every rank ran: this one (`rank`) here, the peers
/// as the bootstrap saw them ([`xrdma_observe::environment::ranks`]); and leave out the CPU
/// time, which is this rank's alone.
fn record_ranks(result: &mut rep::RunResult, section: &VerbsSection, rank: u32, seen: &[PeerSeen]) {
    if let Some(env) = &mut result.environment {
        let own = env.host_name.clone();
        env.ranks = Some(xrdma_observe::environment::ranks(section, rank, own, seen));
    }
    // This process's CPU time is one rank's, not the run's hosts': not observed as a whole.
    result.host_cpu = None;
}
