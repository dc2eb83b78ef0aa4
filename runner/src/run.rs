//! One run of a scenario's workload on a [`Fabric`] (the simulator by default): build every
//! host's endpoint and application, connect each sender to the receiving host, drive the
//! fabric ([`crate::drive`]) and collect the result ([`collect`]), for any [`Workload`].

use crate::check::check;
use crate::drive::drive;
use crate::fabric::{Clocked, Fabric, FabricReport, SimFabric};
use crate::heartbeat::{Beat, Hosted};
use crate::host_faults::{HostFaultState, HostFaults};
use crate::role::HostRole;
pub use crate::stack::{connect, pair_mut};
use crate::stack::{HostStack, TcpMessages};
use crate::watch::{NoWatch, Watch};
use crate::workload::{
    self, tally, PayloadPool, ReceiverView, SenderRecord, Setup, Visit, Workload,
};
use anyhow::{bail, Result};
use std::time::Instant;
use xrdma::{Config, Endpoint};
use xrdma_reports as rep;
use xrdma_scenario::{Scenario, Stack};

/// Every host's application in a run of workload `W`: a sender, the receiving side, or idle.
pub type App<W> = HostRole<<W as Workload>::Sender, <W as Workload>::Receiver>;

/// Run `sc` on the simulator and collect the result with the packet captures of the run:
/// those of `capture` when given (it replaces the scenario's `sim.capture`), else of the
/// scenario's block, else none. A capture changes nothing in the run (its trace hash is the
/// same), nor does `watch` ([`crate::watch`]), which is shown the endpoints while the run
/// runs. Reached through [`crate::request::RunRequest::run`].
///
/// # Errors
/// An invalid configuration (nothing is run), or a transport failure during setup.
pub(crate) fn run_sim_captured(
    sc: &Scenario,
    capture: Option<xrdma_sim::CaptureConfig>,
    watch: &mut dyn Watch,
) -> Result<(rep::RunResult, Vec<xrdma_sim::LinkCapture>)> {
    let checked = check(sc)?;
    let seed = checked.sim.seed;
    let section = sc.sim_or_default();
    let faults = section.host_faults.clone();
    let mut fabric = SimFabric::new(checked.sim)?;
    if let Some(interval) = section.sample_interval {
        fabric.sample(interval, sc.workload.receiver());
    }
    let capture = capture.or(section.capture);
    if sc.stack.is_tcp() {
        if capture.is_some() {
            bail!("packet capture writes RoCE frames only: it cannot capture `stack: tcp`");
        }
        if !faults.stop_reposting.is_empty() {
            bail!("`sim.faults.stop-reposting` holds back receive WRs, which TCP does not post");
        }
    }
    if let Some(c) = capture {
        fabric.capture(c);
    }
    let result = if sc.stack.is_tcp() {
        let stacks = (0..fabric.hosts())
            .map(|_| TcpMessages::new(sc.stack == Stack::Dctcp))
            .collect();
        run_stacks_on(sc, seed, &mut fabric, stacks, &faults, watch)?
    } else {
        run_on_with_faults(sc, &checked.xrdma, seed, &mut fabric, &faults, watch)?
    };
    Ok((result, fabric.captures()))
}

/// Run `sc` on the RDMA device its `verbs:` block names, showing `watch` the endpoints while
/// the run runs ([`crate::watch`]). The `sim:` block is not read, except its seed, which
/// seeds the payload bytes as on the simulator. Reached through
/// [`crate::request::RunRequest::run`].
///
/// # Errors
/// An invalid xrdma block, no usable device, or a verb that fails during setup.
pub(crate) fn run_verbs_watched(
    sc: &xrdma_scenario::Scenario,
    watch: &mut dyn Watch,
) -> anyhow::Result<rep::RunResult> {
    let cfg = crate::check::check_xrdma(sc)?;
    let section = sc.verbs.clone().unwrap_or_default();
    let mut fabric = crate::fabric::VerbsFabric::with_rc(sc.hosts(), &section, sc.rc_params())?;
    let seed = sc.sim_or_default().seed;
    run_on_with_faults(sc, &cfg, seed, &mut fabric, &HostFaults::default(), watch)
}

/// Run `sc`'s workload over this machine's kernel TCP ([`crate::fabric::SocketFabric`]):
/// every host in this process, each sender's connection a loopback socket pair, stopping at
/// the `verbs:` block's `run-timeout` (and, for a run across processes, its `ranks`: see
/// `xrdma_cluster::rank`). The `sim:` block
/// is not read, except its seed, which seeds the payload bytes as on the simulator.
///
/// # Errors
/// A stack other than `tcp` (DCTCP is the machine's setting, xrdma needs a device), or a
/// socket call the kernel refuses during setup.
pub(crate) fn run_sockets_watched(sc: &Scenario, watch: &mut dyn Watch) -> Result<rep::RunResult> {
    check_sockets(sc)?;
    let section = sc.verbs.clone().unwrap_or_default();
    let mut fabric = crate::fabric::SocketFabric::new(sc.hosts(), section.run_timeout)?;
    let seed = sc.sim_or_default().seed;
    let stacks = (0..fabric.hosts())
        .map(|_| TcpMessages::new(false))
        .collect();
    run_stacks_on(sc, seed, &mut fabric, stacks, &HostFaults::default(), watch)
}

/// What the sockets backend ([`crate::fabric::SocketFabric`]) cannot run, refused before
/// anything runs.
///
/// # Errors
/// A stack other than `tcp` (DCTCP is the machine's setting, xrdma needs a device), naming
/// the scenario's line.
pub fn check_sockets(sc: &Scenario) -> Result<()> {
    match sc.stack {
        Stack::Tcp => {}
        Stack::Xrdma => bail!(
            "{}: stack: the sockets backend runs kernel TCP: write `stack: tcp` or give \
             `--stack tcp` (or run xrdma with `--backend verbs` or `--backend sim`)",
            crate::check::where_is(sc, &["stack"])
        ),
        Stack::Dctcp => bail!(
            "{}: stack: on the sockets backend the machine's kernel chooses the congestion \
             control (`sysctl net.ipv4.tcp_congestion_control=dctcp`): write `stack: tcp`",
            crate::check::where_is(sc, &["stack"])
        ),
    }
    Ok(())
}

/// Run `sc`'s workload on any [`Fabric`] with the xrdma configuration `cfg`; `seed` seeds the
/// payload bytes, the open-loop arrivals and the echo request sizes.
///
/// Builds one xrdma [`Endpoint`] per host, connects every sender (or client) to the receiver
/// (or server) with one RC QP pair each, exchanging [`xrdma::driver::ConnInfo`] in process,
/// then lets the fabric move time and gives a driver turn to each host that needs one (see
/// [`drive`]) until the workload's [`Workload::deadline`], or until the fabric has nothing
/// left to do. Messages not done by then are listed in [`rep::RunResult::unfinished`] and
/// have no latency.
///
/// # Errors
/// A transport failure during setup, or a workload that does not fit the fabric.
pub fn run_on<F: Fabric + FabricReport>(
    sc: &Scenario,
    cfg: &Config,
    seed: u64,
    fabric: &mut F,
) -> Result<rep::RunResult> {
    run_on_with_faults(sc, cfg, seed, fabric, &HostFaults::default(), &mut NoWatch)
}

/// [`run_on`] with host faults injected by the runner (see [`crate::host_faults`]): receive
/// WRs held back in stop-reposting windows, per-message processing time at slow receivers;
/// `watch` is shown the endpoints while the run runs ([`crate::watch`]).
///
/// # Errors
/// As [`run_on`].
pub fn run_on_with_faults<F: Fabric + FabricReport>(
    sc: &Scenario,
    cfg: &Config,
    seed: u64,
    fabric: &mut F,
    faults: &HostFaults,
    watch: &mut dyn Watch,
) -> Result<rep::RunResult> {
    if sc.stack.is_tcp() {
        bail!(
            "`stack: {}` does not run on the {} backend: kernel TCP runs on the simulator \
             (`--backend sim`) or on this machine's sockets (`--backend sockets`)",
            sc.stack.name(),
            fabric.backend()
        );
    }
    let cfg = &crate::fabric::config_for(cfg, fabric);
    let mut eps = Vec::with_capacity(fabric.hosts() as usize);
    for _ in 0..fabric.hosts() {
        eps.push(Endpoint::new(cfg.clone())?);
    }
    run_stacks_on(sc, seed, fabric, eps, faults, watch)
}

/// [`run_on_with_faults`] over the message stacks `stacks`, one per host of `fabric` by host
/// index, not yet connected.
///
/// # Errors
/// As [`run_on`].
pub fn run_stacks_on<F: Clocked + FabricReport, S: HostStack<F>>(
    sc: &Scenario,
    seed: u64,
    fabric: &mut F,
    stacks: Vec<S>,
    faults: &HostFaults,
    watch: &mut dyn Watch,
) -> Result<rep::RunResult> {
    struct RunOn<'a, F, S> {
        sc: &'a Scenario,
        seed: u64,
        fabric: &'a mut F,
        stacks: Vec<S>,
        faults: &'a HostFaults,
        watch: &'a mut dyn Watch,
    }
    impl<F: Clocked + FabricReport, S: HostStack<F>> Visit for RunOn<'_, F, S> {
        type Output = Result<rep::RunResult>;
        fn visit<W: Workload>(self, w: &W) -> Self::Output {
            let RunOn {
                sc,
                seed,
                fabric,
                stacks,
                faults,
                watch,
            } = self;
            run_workload(w, sc, seed, fabric, stacks, faults, watch)
        }
    }
    workload::visit(
        &sc.workload,
        RunOn {
            sc,
            seed,
            fabric,
            stacks,
            faults,
            watch,
        },
    )
}

/// The run of one workload `w` over `eps`, every host's stack: see [`run_on`].
fn run_workload<W: Workload, F: Clocked + FabricReport, S: HostStack<F>>(
    w: &W,
    sc: &Scenario,
    seed: u64,
    fabric: &mut F,
    mut eps: Vec<S>,
    faults: &HostFaults,
    watch: &mut dyn Watch,
) -> Result<rep::RunResult> {
    let mut hf = HostFaultState::new(faults, fabric.hosts());
    let wall = Instant::now();
    let hosts = fabric.hosts();
    if w.hosts() > hosts {
        bail!(
            "the workload needs {} hosts, the {} fabric has {hosts}",
            w.hosts(),
            fabric.backend()
        );
    }
    let setup = setup(w, seed);
    fabric.register_payload(setup.pool.bytes());
    let receiver = w.receiver_host();
    let mut apps: Vec<App<W>> = Vec::with_capacity(hosts as usize);
    for h in 0..hosts {
        apps.push(if h == receiver {
            HostRole::Receiver(w.receiver(&setup))
        } else if w.is_sender(h) {
            let (conn, _) = S::connect(fabric, &mut eps, h, receiver)?;
            HostRole::Sender(w.sender(&setup, h, conn))
        } else {
            // A fabric larger than the workload: the remaining hosts stay silent.
            HostRole::Idle
        });
    }
    // The heartbeat's connection comes after the workload's, which it leaves as they are.
    let mut beats: Vec<Option<Beat>> = (0..hosts).map(|_| None).collect();
    if let Some(hb) = sc.heartbeat {
        let (a, b) = S::connect(fabric, &mut eps, hb.from, hb.to)?;
        beats[hb.from as usize] = Some(Beat::ping(hb, a, sc.workload.start()));
        beats[hb.to as usize] = Some(Beat::answer(b));
    }
    let mut hosted: Vec<Hosted<'_, App<W>>> = apps
        .iter_mut()
        .zip(beats.iter_mut())
        .map(|(app, beat)| Hosted {
            app,
            beat: beat.as_mut(),
        })
        .collect();
    drive(
        fabric,
        &mut eps,
        &mut hosted,
        w.stalls(),
        w.deadline(seed),
        &mut hf,
        |_, _, _| true,
        watch,
    );
    drop(hosted);
    let mut senders = records(w, &apps);
    // The records hold all the report needs from the senders: their own message lists go
    // before the tally builds the result's records beside them (a third of the peak memory
    // of a run of many messages).
    for a in &mut apps {
        if matches!(a, HostRole::Sender(_)) {
            *a = HostRole::Idle;
        }
    }
    for r in &mut senders {
        r.window = eps.get(r.host as usize).and_then(S::window_tally);
    }
    let path = S::path(fabric);
    let mut r = collect_on_path(
        w,
        sc,
        fabric,
        path,
        seed,
        &senders,
        receiver_view(w, &apps),
        wall.elapsed().as_secs_f64(),
    );
    r.network.ack_timeouts = Some(hf.counters.ack_timeouts);
    if sc.heartbeat.is_some() {
        // The beats reach the receiver too: its per-sender series are the workload's senders'.
        if let Some(ts) = r.timeseries.as_mut() {
            ts.senders.retain(|s| w.is_sender(s.host));
        }
    }
    for b in beats.iter().flatten() {
        r.heartbeat = r.heartbeat.take().or_else(|| b.record());
        r.errors
            .extend(b.errors().iter().map(|e| format!("heartbeat: {e}")));
    }
    S::describe(&mut r, &eps);
    r.endpoints = Some(crate::drive::endpoints(fabric, &eps));
    Ok(r)
}

/// What every host's application of `w` is built from, with `seed`.
pub fn setup<W: Workload>(w: &W, seed: u64) -> Setup {
    Setup {
        seed,
        pool: PayloadPool::new(seed, w.largest_message()),
    }
}

/// The records of every sender among `apps`, in host order.
pub fn records<W: Workload>(w: &W, apps: &[App<W>]) -> Vec<SenderRecord> {
    apps.iter()
        .filter_map(|a| match a {
            HostRole::Sender(s) => Some(w.record(s)),
            _ => None,
        })
        .collect()
}

/// What the receiving side among `apps` got (nothing when none of them is it).
pub fn receiver_view<'a, W: Workload>(w: &W, apps: &'a [App<W>]) -> ReceiverView<'a> {
    apps.iter()
        .find_map(|a| match a {
            HostRole::Receiver(r) => Some(w.view(r)),
            _ => None,
        })
        .unwrap_or_default()
}

/// The result of a run of `w` from its senders' records and what the receiving side got (a
/// multi-process run gathers the records of every rank first), with the fabric's counters.
/// Each message keeps its stages ([`rep::MessageStages`]) only when the scenario says
/// `trace: true`.
pub fn collect<W: Workload, F: Clocked + FabricReport>(
    w: &W,
    sc: &Scenario,
    fabric: &F,
    seed: u64,
    senders: &[SenderRecord],
    got: ReceiverView<'_>,
    wall_seconds: f64,
) -> rep::RunResult {
    let path = fabric.path();
    collect_on_path(w, sc, fabric, path, seed, senders, got, wall_seconds)
}

/// [`collect`], with T* on `path`: the path as the run's message stack packs it
/// ([`HostStack::path`]).
#[allow(clippy::too_many_arguments)]
pub fn collect_on_path<W: Workload, F: Clocked + FabricReport>(
    w: &W,
    sc: &Scenario,
    fabric: &F,
    path: rep::PathModel,
    seed: u64,
    senders: &[SenderRecord],
    got: ReceiverView<'_>,
    wall_seconds: f64,
) -> rep::RunResult {
    // Stages are kept on request only (`trace:`): six numbers per message.
    let t = tally(w.receiver_host(), senders, got, sc.trace);
    let workload = w.shape(&t.messages);
    let ideal = if w.bounded_by_t_star() {
        path.ideal(w.bottleneck_bytes(&t.messages))
    } else {
        None
    };
    let mut r = finish(sc, fabric, seed, workload, t, path, ideal, wall_seconds);
    if let Some(tr) = r.transport.as_mut() {
        tr.window = crate::transport_info::senders_window(senders);
    }
    r
}

#[allow(clippy::too_many_arguments)]
fn finish<F: Clocked + FabricReport>(
    sc: &Scenario,
    fabric: &F,
    seed: u64,
    workload: rep::WorkloadInfo,
    t: workload::Tally,
    path: rep::PathModel,
    ideal: Option<rep::IdealCompletion>,
    wall_seconds: f64,
) -> rep::RunResult {
    let sim = fabric.sim_info();
    let events = sim.as_ref().map_or(0, |s| s.events);
    let unfinished = rep::metrics::unfinished(&t.messages);
    let figures = rep::Figures::of(workload.kind, &t.messages);
    rep::RunResult {
        schema_version: rep::SCHEMA_VERSION,
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        scenario: rep::ScenarioInfo {
            name: sc.name.clone(),
            path: sc.source_path.display().to_string(),
            backend: fabric.backend(),
            seed,
            stack: sc.stack,
        },
        workload,
        messages: t.messages,
        delivery: t.delivery,
        network: fabric.network(),
        path,
        ideal,
        sim,
        errors: t.errors,
        unfinished,
        figures: Some(figures),
        scenario_yaml: None,
        timeseries: fabric.timeseries(),
        transport: fabric.transport_info(),
        environment: fabric.environment(),
        endpoints: None,
        host_cpu: fabric.host_cpu(),
        heartbeat: None,
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
