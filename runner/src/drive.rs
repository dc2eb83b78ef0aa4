//! The one turn loop ([`turns`]): lets a [`Clocked`] fabric move time and gives a turn to each host
//! that needs one, until the hosts' own stop condition ([`Hosts::after_round`]) or the fabric
//! ends the run. Everything that runs hosts goes through it: scenario runs and ranks
//! ([`drive`]: driver turns with the host model's inputs, [`crate::host_cpu::turn`], under the
//! scenario's stalls and the runner's host faults), and each measurement tool with its own
//! [`Hosts`] (an xrdma endpoint pair, one side of a two-process tool, raw verbs).
//!
//! [`turns`] needs the fabric's time and hosts only ([`Clocked`] fabric); [`drive`] also reads its
//! report view ([`FabricReport`]) for the live stats a watcher takes.

use crate::fabric::{Clocked, FabricReport};
use crate::host_faults::{HostFaultState, Observed};
use crate::role::HostApp;
use crate::stack::HostStack;
use crate::watch::{LiveStat, Watch};
use xrdma::Time;
use xrdma_reports as rep;
use xrdma_scenario::Stall;

/// What the hosts say after a round of turns ([`Hosts::after_round`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Round {
    /// More to do: the fabric moves time on.
    Go,
    /// The workload has nothing left to do: a real-time fabric stops at its next advance, a
    /// simulated one runs out its remaining events (see [`Clocked::advance`]).
    Settled,
    /// Stop now, without another advance.
    Stop,
}

/// When a round of turns reads the fabric's clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Clock {
    /// Every round.
    EveryRound,
    /// Every round on a virtual clock (the simulator: free, and wakes are set from it); on a
    /// wall clock (a device) every [`WALL_CLOCK_EVERY`] rounds. A reading costs about 1 µs
    /// on the TCG guest's HPET clock source, several times a spin's `poll_cq`, and perftest's
    /// loop reads no clock while it spins; a tool that takes its samples from the transport's
    /// clock needs the round's time only for timeouts and slow polls.
    Sparse,
}

/// Rounds between two readings of a wall clock under [`Clock::Sparse`].
pub const WALL_CLOCK_EVERY: u64 = 1024;

/// The hosts a [`turns`] loop runs: each gets a turn when the fabric says it is ready, and
/// after each round they say whether the run goes on.
pub trait Hosts<F: Clocked> {
    /// Host `h`'s turn at `now` (`settled`: the last round said [`Round::Settled`]); returns
    /// when it next wants a turn even if nothing arrives (`None`: never).
    fn turn(&mut self, fabric: &mut F, h: u32, now: Time, settled: bool) -> Option<Time>;
    /// After every round of turns, at the round's `now`: go on, settled, or stop.
    fn after_round(&mut self, fabric: &mut F, now: Time) -> Round;
}

/// How a [`turns`] loop ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ended {
    /// Rounds of turns run.
    pub rounds: u64,
    /// The last round but a stopping one said [`Round::Settled`].
    pub settled: bool,
    /// The hosts said [`Round::Stop`]; otherwise the fabric ended the run (a simulator out of
    /// events, a device settled or past its run timeout).
    pub stopped: bool,
}

/// The one turn loop. Every host of `fabric` gets a first turn; then after every round of
/// turns `hosts` says whether to go on ([`Hosts::after_round`]), and the fabric moves time
/// until some hosts are ready, each of which gets a turn at the round's time (read as `clock`
/// says), its wake set from what the turn returns.
pub fn turns<F: Clocked, H: Hosts<F> + ?Sized>(
    fabric: &mut F,
    clock: Clock,
    hosts: &mut H,
) -> Ended {
    let virtual_clock = fabric.backend() == xrdma_reports::Backend::Sim;
    let per_turn = !virtual_clock && fabric.clock_per_turn();
    let mut ready: Vec<u32> = (0..fabric.hosts()).collect();
    let mut settled = false;
    let mut rounds = 0u64;
    let mut now = fabric.now();
    loop {
        rounds += 1;
        let waited = fabric.waited();
        if clock == Clock::EveryRound || virtual_clock || waited || rounds % WALL_CLOCK_EVERY == 0 {
            now = fabric.now();
        }
        for &h in &ready {
            if per_turn {
                now = fabric.now();
            }
            let wake = hosts.turn(fabric, h, now, settled);
            fabric.set_wake(h, wake.unwrap_or(Time::MAX));
        }
        ready.clear();
        match hosts.after_round(fabric, now) {
            Round::Stop => {
                return Ended {
                    rounds,
                    settled,
                    stopped: true,
                }
            }
            r => settled = r == Round::Settled,
        }
        if !fabric.advance(&mut ready, settled) {
            return Ended {
                rounds,
                settled,
                stopped: false,
            };
        }
    }
}

/// The end of the stall `host` is in at `now`, if any (the latest end when stalls overlap).
fn stalled_until(stalls: &[Stall], host: u32, now: Time) -> Option<Time> {
    stalls
        .iter()
        .filter(|s| s.host == host && s.at <= now && now < s.end())
        .map(Stall::end)
        .max()
}

/// A scenario run's turn loop ([`turns`]): driver turns for each host that needs one, until
/// the fabric says the run is over; with a `deadline`, until every host is finished or the
/// deadline passes. The run is settled when every local app is finished and
/// `remote_settled(now, eps, apps)` holds (asked only then; a rank hands in its records,
/// its endpoints' window tallies among them, from it).
///
/// A host inside one of its `stalls` gets no turn (its CQ is not polled, nothing is posted or
/// reposted); it is woken at the stall's end. Its NIC keeps running on the simulator; on a
/// real device the same holds as far as the device goes (the host is simply not polled).
/// While the workload is unsettled, wakes are capped at `deadline` so the loop sees it pass.
/// The host faults in `hf` hold back receives and delay slow receivers (see `host_turn`).
/// After every round of turns `watch` is asked whether it wants the endpoints
/// ([`Watch::due`]) and, if so, handed a [`LiveStat`]; taking one changes nothing in the run.
#[allow(clippy::too_many_arguments)]
pub fn drive<F: Clocked + FabricReport, S: HostStack<F>, A: HostApp<S>>(
    fabric: &mut F,
    eps: &mut [S],
    apps: &mut [A],
    stalls: &[Stall],
    deadline: Option<Time>,
    hf: &mut HostFaultState,
    remote_settled: impl FnMut(Time, &[S], &[A]) -> bool,
    watch: &mut dyn Watch,
) {
    let done: Vec<bool> = apps.iter().map(A::finished).collect();
    let unfinished = done.iter().filter(|&&d| !d).count();
    let mut run = RunHosts {
        eps,
        apps,
        done,
        unfinished,
        stalls,
        deadline,
        hf,
        remote_settled,
        watch,
        scratch: S::Scratch::default(),
        told_settled: false,
    };
    turns(fabric, Clock::EveryRound, &mut run);
    // A client waiting as the run ends is answered with the final state.
    if run.watch.due(fabric.now()) {
        run.watch.take(live_stat(fabric, run.eps));
    }
}

/// A scenario run's hosts, as [`drive`] hands them to [`turns`].
struct RunHosts<'a, S, A, R, X> {
    eps: &'a mut [S],
    apps: &'a mut [A],
    /// Whether each app was finished after its last turn ([`HostApp::finished`]): an app
    /// changes only in its turns, so the run asks only the host that just took one, and a
    /// round costs no scan of every host.
    done: Vec<bool>,
    /// How many of `done` are false.
    unfinished: usize,
    stalls: &'a [Stall],
    deadline: Option<Time>,
    hf: &'a mut HostFaultState,
    remote_settled: R,
    watch: &'a mut dyn Watch,
    scratch: X,
    /// The apps were told the workload is settled ([`HostApp::settle`]).
    told_settled: bool,
}

impl<F, S, A, R> Hosts<F> for RunHosts<'_, S, A, R, S::Scratch>
where
    F: Clocked + FabricReport,
    S: HostStack<F>,
    A: HostApp<S>,
    R: FnMut(Time, &[S], &[A]) -> bool,
{
    fn turn(&mut self, fabric: &mut F, h: u32, now: Time, settled: bool) -> Option<Time> {
        if let Some(until) = stalled_until(self.stalls, h, now) {
            return Some(until);
        }
        let i = h as usize;
        let (ep, app) = (&mut self.eps[i], &mut self.apps[i]);
        let wake = host_turn(now, h, fabric, ep, app, &mut self.scratch, self.hf);
        let finished = app.finished();
        if finished != self.done[i] {
            self.done[i] = finished;
            if finished {
                self.unfinished -= 1;
            } else {
                self.unfinished += 1;
            }
        }
        match self.deadline {
            Some(d) if !settled => Some(wake.map_or(d, |w| w.min(d))),
            _ => wake,
        }
    }

    fn after_round(&mut self, fabric: &mut F, now: Time) -> Round {
        if self.watch.due(now) {
            self.watch.take(live_stat(fabric, self.eps));
        }
        let settled = self.unfinished == 0 && (self.remote_settled)(now, self.eps, self.apps);
        if settled && !self.told_settled {
            self.told_settled = true;
            self.apps.iter_mut().for_each(A::settle);
        }
        // A workload with a deadline stops as soon as it is settled: what is left are
        // trailing transport ACKs, and the clock should not run on to the deadline.
        match self.deadline {
            Some(d) if settled || now >= d => Round::Stop,
            _ if settled => Round::Settled,
            _ => Round::Go,
        }
    }
}

/// The endpoints of `eps` as `fabric` observes them now, with its device's counters.
/// The time is the fabric's as the snapshot is taken (on a device, later than the round's
/// `now`), so it agrees with the endpoints' own `at-ps`.
/// The thread taking it is the one that drives the hosts: its placement is theirs.
pub fn live_stat<F: Clocked + FabricReport, S: HostStack<F>>(
    fabric: &mut F,
    eps: &[S],
) -> LiveStat {
    let device = fabric.device_reading();
    let placement =
        xrdma_observe::placement::Placement::here(device.as_ref().map(|d| d.device.as_str()));
    LiveStat {
        pid: std::process::id(),
        backend: fabric.backend(),
        at_ps: fabric.now().as_ps(),
        endpoints: endpoints(fabric, eps),
        device,
        placement: Some(placement),
        events: fabric.sim_info().map(|s| s.events),
    }
}

/// One turn of host `h`'s stack ([`HostStack::turn`]) at `now` under the host faults: a
/// slow receiver still busy gets no turn (it is woken when it is free). Returns the host's
/// next wake.
fn host_turn<F: Clocked, S: HostStack<F>, A: HostApp<S>>(
    now: Time,
    h: u32,
    fabric: &mut F,
    stack: &mut S,
    app: &mut A,
    scratch: &mut S::Scratch,
    hf: &mut HostFaultState,
) -> Option<Time> {
    if let Some(busy) = hf.busy_until(h, now) {
        return Some(busy);
    }
    let mut ack_timeouts = 0;
    let mut seen = Observed {
        app,
        delivered: 0,
        ack_timeouts: &mut ack_timeouts,
    };
    let wake = stack.turn(now, h, fabric, &mut seen, scratch, hf);
    let delivered = seen.delivered;
    hf.counters.ack_timeouts += ack_timeouts;
    // A busy host's next turn is at the end of its processing: what arrived meanwhile (and
    // any later wake it wants) is handled then.
    if let Some(busy) = hf.after_turn(h, now, delivered) {
        return Some(busy);
    }
    wake
}

/// Every host's stack snapshot ([`HostStack::snapshot`]) as `fabric` observes it (hosts
/// whose stack has none are left out).
pub fn endpoints<F: Clocked, S: HostStack<F>>(fabric: &mut F, eps: &[S]) -> Vec<rep::HostEndpoint> {
    (0u32..)
        .zip(eps)
        .filter_map(|(host, ep)| {
            let snapshot = ep.snapshot(fabric, host)?;
            Some(rep::HostEndpoint { host, snapshot })
        })
        .collect()
}
