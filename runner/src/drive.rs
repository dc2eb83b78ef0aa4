//! The one turn loop: lets a [`Fabric`] move time and gives a driver turn
//! ([`crate::host_cpu::turn`], the driver's turn with the host model's inputs) to each host
//! that needs one, under the scenario's stalls and the runner's host faults, until the run is
//! over.

use crate::fabric::Fabric;
use crate::host_faults::{Holding, HostFaultState, Observed};
use crate::watch::{LiveStat, Watch};
use xrdma::driver::{Application, TurnScratch};
use xrdma::{Endpoint, Time};
use xrdma_scenario::Stall;

/// A host's application as the runner sees it.
pub trait HostApp: Application {
    /// Whether this host has nothing left to do (a sender whose every message was ACKed or
    /// failed; hosts that only react always are).
    fn finished(&self) -> bool;
}

/// The end of the stall `host` is in at `now`, if any (the latest end when stalls overlap).
fn stalled_until(stalls: &[Stall], host: u32, now: Time) -> Option<Time> {
    stalls
        .iter()
        .filter(|s| s.host == host && s.at <= now && now < s.end())
        .map(Stall::end)
        .max()
}

/// The shared turn loop: lets the fabric move time and gives a driver turn to each host that
/// needs one, until the fabric says the run is over; with a `deadline`, until every host is
/// finished or the deadline passes. The run is settled when every local app is finished and
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
pub fn drive<F: Fabric, A: HostApp>(
    fabric: &mut F,
    eps: &mut [Endpoint],
    apps: &mut [A],
    stalls: &[Stall],
    deadline: Option<Time>,
    hf: &mut HostFaultState,
    mut remote_settled: impl FnMut(Time, &[Endpoint], &[A]) -> bool,
    watch: &mut dyn Watch,
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
        if watch.due(now) {
            watch.take(live_stat(fabric, eps));
        }
        settled = apps.iter().all(A::finished) && remote_settled(now, eps, apps);
        // A workload with a deadline stops as soon as it is settled: what is left are
        // trailing transport ACKs, and the clock should not run on to the deadline.
        if deadline.is_some_and(|d| settled || now >= d) {
            break;
        }
    }
    // A client waiting as the run ends is answered with the final state.
    if watch.due(fabric.now()) {
        watch.take(live_stat(fabric, eps));
    }
}

/// The endpoints of `eps` as `fabric` observes them now, with its device's counters.
/// The time is the fabric's as the snapshot is taken (on a device, later than the round's
/// `now`), so it agrees with the endpoints' own `at-ps`.
fn live_stat<F: Fabric>(fabric: &mut F, eps: &[Endpoint]) -> LiveStat {
    LiveStat {
        pid: std::process::id(),
        backend: fabric.backend(),
        at_ps: fabric.now().as_ps(),
        endpoints: crate::run::endpoints(fabric, eps),
        device: fabric.device_reading(),
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
    let wake = crate::host_cpu::turn(now, ep, &mut t, &mut seen, scratch);
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
