//! The `Fabric` trait: a set of hosts, each with a `Transport`, and a clock that moves; and
//! beside it the report view of a fabric ([`FabricReport`]).
//!
//! The scenario runner is written once against these traits. The simulator's fabric moves
//! virtual time from event to event and says which hosts need a turn; a real-RDMA fabric
//! moves with the wall clock and polls its hosts. The same scenario therefore runs unchanged
//! on either.
//!
//! [`Clocked`] is what running hosts needs (the one turn loop, [`crate::drive::turns`]): the
//! hosts, the clock and wakes. [`Fabric`] adds each host's RDMA transport (xrdma's endpoints
//! and the tools run on it) and what an endpoint's configuration takes from the fabric
//! ([`config_for`]); the kernel-socket fabric ([`SocketFabric`]) has none. [`FabricReport`] is what collecting a result needs (the
//! network's counters, the path, the simulator's statistics, the environment). Code that
//! only runs hosts bounds on `Fabric` alone; code that collects results bounds on both.

mod polling;
mod report;
mod sim;
mod sockets;
/// The real-RDMA fabric; in a build without the `verbs` feature, the same names, none of which
/// can be made (`verbs_absent.rs`). The crate's one gate on the feature: its callers need none.
#[cfg_attr(not(feature = "verbs"), path = "verbs_absent.rs")]
mod verbs;

pub use polling::{Polling, PollingStats};
pub use report::FabricReport;
pub use sim::{ideal_base_rtt, SimFabric};
pub use sockets::{SocketFabric, SocketHost};
pub use verbs::{open_env_device, Device, VerbsFabric, BUILT as VERBS_BUILT};

use crate::host_cpu::HostCpu;
use xrdma::{Time, Transport};
use xrdma_reports as rep;

/// Hosts and a clock that moves: what the turn loop ([`crate::drive::turns`]) and a message
/// stack's run need of any fabric, with RDMA or without ([`SocketFabric`]).
pub trait Clocked {
    /// The backend, as reports name it. It stays here, not in [`FabricReport`], because
    /// running hosts needs it: the turn loop reads the clock every round on the simulator's
    /// virtual clock ([`crate::drive::Clock`]), and whoever runs hosts names the fabric when
    /// it stops early.
    fn backend(&self) -> rep::Backend;
    /// Number of hosts.
    fn hosts(&self) -> u32;
    /// Now, on the fabric's clock.
    fn now(&self) -> Time;
    /// Move time forward until some hosts need a turn and push them into `ready` (each once).
    /// `settled` says the workload has nothing left to do: a real-time fabric stops then; a
    /// simulated one runs out its remaining events. Returns `false` when the run is over.
    fn advance(&mut self, ready: &mut Vec<u32>, settled: bool) -> bool;
    /// Host `h` wants a turn at `at` even if nothing arrives ([`Time::MAX`]: no wake).
    fn set_wake(&mut self, h: u32, at: Time);
    /// Whether the last [`Clocked::advance`] waited (blocked on completion channels, say):
    /// the turn loop then reads the clock for the next round whatever its
    /// [`crate::drive::Clock`] says. Asking clears it. Default: never (a fabric that only
    /// spins, or a virtual clock that is read every round anyway).
    fn waited(&mut self) -> bool {
        false
    }
    /// Whether host `h` has work in flight (messages not yet ACKed): a loop that may sleep
    /// between rounds ([`Polling::Hybrid`]) keeps spinning while any host has. Default:
    /// ignored (a fabric that never sleeps, or a simulated one).
    fn set_in_flight(&mut self, _h: u32, _in_flight: bool) {}
    /// Whether each turn reads the clock for itself, not once per round: a wall-clock
    /// fabric whose turns can be long (one that reads bulk bytes from sockets), so a turn's
    /// `now` is when it starts. Default: no.
    fn clock_per_turn(&self) -> bool {
        false
    }
    /// Register `payload`, the run's immutable payload block, with every host's NIC for
    /// reading in place, as an application registers its own buffers: large messages sliced
    /// from it are then sent with no staging copy, where the backend supports it (the
    /// simulator: [`xrdma_sim::HostTransport::register_external`]). Default: nothing, and
    /// messages are staged.
    fn register_payload(&mut self, _payload: &bytes::Bytes) {}
}

/// Hosts with RDMA transports, on a clock: all that running xrdma's endpoints needs. What a
/// result reads from a fabric is its [`FabricReport`].
pub trait Fabric: Clocked {
    /// A host's transport, borrowed from the fabric for one driver turn, with its side of the
    /// host model ([`crate::host_cpu::HostCpu`]).
    type Host<'a>: Transport + HostCpu
    where
        Self: 'a;

    /// Host `h`'s transport.
    fn host(&mut self, h: u32) -> Self::Host<'_>;
    /// Rate of a host's link, bits/s, where the fabric knows it (the simulator's
    /// `link-rate`, a device port's active rate); the send window adds one fragment's
    /// serialisation at this rate to its target and shrinks on delay only with it
    /// ([`xrdma::Config::link_rate_bps`]). `None` by default.
    fn link_rate_bps(&self) -> Option<u64> {
        None
    }
    /// The shortest core ACK timeout the fabric's transports need: set where they apply a
    /// longer local ACK timeout than asked ([`ack_timeout_floor`]); `None` by default.
    fn ack_timeout_floor(&self) -> Option<xrdma::Span> {
        None
    }
}

/// The calling thread's CPU time so far, user and kernel (`clock_gettime` with
/// `CLOCK_THREAD_CPUTIME_ID`, through the `cpu-time` crate: exact to the nanosecond, where
/// `/proc`'s figures move only at scheduler ticks). A run's hosts all run on the thread that
/// drives them, so this is their time, and no other thread's (a test harness's, a
/// watcher's). Time asleep (in `epoll_wait`, say) is not counted. `None` where it cannot be
/// read.
pub(crate) fn thread_cpu() -> Option<xrdma::Span> {
    let t = cpu_time::ThreadTime::try_now().ok()?.as_duration();
    Some(xrdma::Span::from_ns(u64::try_from(t.as_nanos()).ok()?))
}

/// `cfg` as an endpoint on `fabric` runs it: [`with_link_rate`], then
/// [`with_ack_timeout_floor`]. Every endpoint the runner and the tools make on a fabric takes
/// its configuration from here.
pub fn config_for<F: Fabric>(cfg: &xrdma::Config, fabric: &F) -> xrdma::Config {
    with_ack_timeout_floor(&with_link_rate(cfg, fabric), fabric)
}

/// `cfg` with its ACK timeout ([`xrdma::Config::ack_timeout`]) raised, where it is shorter,
/// to the fabric's floor ([`Fabric::ack_timeout_floor`]); unchanged where the fabric has
/// none, so the ACK timeout a scenario asks for is the one it runs with wherever the
/// transports apply the RC attributes it asks for.
pub fn with_ack_timeout_floor<F: Fabric>(cfg: &xrdma::Config, fabric: &F) -> xrdma::Config {
    let mut c = cfg.clone();
    if let Some(floor) = fabric.ack_timeout_floor() {
        c.ack_timeout = c.ack_timeout.max(floor);
    }
    c
}

/// The shortest core ACK timeout that fits transports asked for RC attributes `requested`
/// which applied `applied` instead: the applied attributes' retry budget
/// ([`xrdma::RcParams::retry_budget`]) when the device lengthened the local ACK timeout
/// (Soft-RoCE's floor, `xrdma_verbs::soft_roce`), else `None`.
///
/// The core's ACK timer says the peer stopped answering. A scenario's `ack-timeout` is kept
/// as written, even below its own RC retry budget (a service may well want to give up
/// before the NIC does). But when the device, not the scenario, made the NIC's timer longer,
/// an ACK it may still be retrying for is late, not missing, and failing the connection then
/// loses what the transport would have delivered: on Soft-RoCE, code 17 with `retry_cnt` 7
/// gives 8 × 537 ms ≈ 4.3 s.
pub fn ack_timeout_floor(
    requested: &xrdma::RcParams,
    applied: &xrdma::RcParams,
) -> Option<xrdma::Span> {
    let lengthened =
        requested.local_ack_timeout != 0 && applied.local_ack_timeout > requested.local_ack_timeout;
    if lengthened {
        applied.retry_budget()
    } else {
        None
    }
}

/// `cfg` with [`xrdma::Config::link_rate_bps`] filled in from `fabric` where `cfg` leaves it
/// unset.
pub fn with_link_rate<F: Fabric>(cfg: &xrdma::Config, fabric: &F) -> xrdma::Config {
    let mut c = cfg.clone();
    if c.link_rate_bps.is_none() {
        c.link_rate_bps = fabric.link_rate_bps();
    }
    c
}

#[cfg(test)]
mod tests {
    use super::ack_timeout_floor;
    use xrdma::{RcParams, Span};

    fn rc(code: u8, retry_cnt: u8) -> RcParams {
        RcParams {
            local_ack_timeout: code,
            retry_cnt,
            ..RcParams::default()
        }
    }

    #[test]
    fn attributes_applied_as_asked_set_no_floor() {
        assert_eq!(ack_timeout_floor(&rc(14, 7), &rc(14, 7)), None);
        assert_eq!(ack_timeout_floor(&rc(0, 7), &rc(0, 7)), None);
    }

    #[test]
    fn a_lengthened_local_ack_timeout_sets_its_retry_budget_as_the_floor() {
        // Code 17 is 4.096 µs · 2^17 = 536.870912 ms; retry_cnt 7 gives 8 tries.
        let floor = ack_timeout_floor(&rc(12, 7), &rc(17, 7)).expect("a floor");
        assert_eq!(floor, Span::from_ps(8 * 4_096_000 * (1 << 17)));
    }

    #[test]
    fn no_timer_asked_sets_no_floor() {
        // Code 0 (no timer) is never lengthened by the device, and has no budget.
        assert_eq!(ack_timeout_floor(&rc(0, 7), &rc(17, 7)), None);
    }
}
