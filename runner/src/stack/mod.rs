//! A host's message stack as the runner drives it ([`HostStack`]): what the turn loop
//! ([`crate::drive`]) needs of xrdma's [`Endpoint`] — or of any other stack a scenario runs its
//! workload over — beside what the application sees of it ([`xrdma::Messages`]).

mod tcp;

pub use tcp::{SocketCalls, TcpFabric, TcpMessages};

use crate::fabric::{Clocked, Fabric};
use crate::host_faults::{Holding, HostFaultState};
use anyhow::Result;
use xrdma::driver::{self, Application, TurnScratch};
use xrdma::{ConnId, Endpoint, EndpointSnapshot, Messages, Time};
use xrdma_reports as rep;

/// A host's message stack, driven by the runner (see the module doc). Its applications see
/// it as [`Messages`].
pub trait HostStack<F: Clocked>: Messages + Sized + 'static {
    /// Reusable buffers for [`HostStack::turn`], so a turn does not allocate.
    type Scratch: Default;
    /// One turn of host `h` at `now`: take in what the fabric delivered, let `app` react, hand
    /// the fabric what the stack has to send. `hf`: the runner's host faults, for what of them
    /// sits between the stack and the fabric. Returns when the host next wants a turn even if
    /// nothing arrives (`None`: never).
    fn turn<A: Application<Self> + ?Sized>(
        &mut self,
        now: Time,
        h: u32,
        fabric: &mut F,
        app: &mut A,
        scratch: &mut Self::Scratch,
        hf: &mut HostFaultState,
    ) -> Option<Time>;
    /// The stack's state as host `h` of `fabric` observes it now, for `stat` (`None`: a stack
    /// with no such view).
    fn snapshot(&self, fabric: &mut F, h: u32) -> Option<EndpointSnapshot>;
    /// Connect host `a`'s stack to host `b`'s (`stacks` holds every host's, by host index);
    /// returns the connection at `a` and at `b`.
    ///
    /// # Errors
    /// The fabric's refusal (registration, QP creation or connection on a device).
    fn connect(
        fabric: &mut F,
        stacks: &mut [Self],
        a: u32,
        b: u32,
    ) -> anyhow::Result<(ConnId, ConnId)>;
    /// How the stack's send windows moved over the run, summed over its connections (`None`:
    /// a stack without xrdma's window).
    fn window_tally(&self) -> Option<rep::WindowTally>;
    /// What the result says of the run's stacks once it is collected.
    fn describe(r: &mut rep::RunResult, stacks: &[Self]);
    /// The path as this stack packs bytes into packets on `fabric`, for T*
    /// ([`rep::PathModel`]).
    fn path(fabric: &F) -> rep::PathModel
    where
        F: crate::fabric::FabricReport;
}

impl<F: Fabric> HostStack<F> for Endpoint {
    type Scratch = TurnScratch;

    /// A driver turn ([`crate::host_cpu::turn`]) on the host's transport, its receive WRs held
    /// back inside a stop-reposting window and posted first after it (the runner's `Holding` wrapper).
    fn turn<A: Application<Self> + ?Sized>(
        &mut self,
        now: Time,
        h: u32,
        fabric: &mut F,
        app: &mut A,
        scratch: &mut TurnScratch,
        hf: &mut HostFaultState,
    ) -> Option<Time> {
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
        let wake = crate::host_cpu::turn(now, self, &mut t, app, scratch);
        match (wake, holding) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn snapshot(&self, fabric: &mut F, h: u32) -> Option<EndpointSnapshot> {
        Some(driver::snapshot(self, &fabric.host(h)))
    }

    fn connect(
        fabric: &mut F,
        stacks: &mut [Self],
        a: u32,
        b: u32,
    ) -> anyhow::Result<(ConnId, ConnId)> {
        connect(fabric, stacks, a, b)
    }

    fn window_tally(&self) -> Option<rep::WindowTally> {
        Some(crate::transport_info::window_tally(self))
    }

    /// The congestion signals the send windows could shrink on.
    fn describe(r: &mut rep::RunResult, stacks: &[Self]) {
        crate::transport_info::record_window_signals(r, stacks);
    }

    /// RoCE packets, as the fabric describes its path.
    fn path(fabric: &F) -> rep::PathModel
    where
        F: crate::fabric::FabricReport,
    {
        fabric.path()
    }
}

/// Connects host `a` to host `b` with one RC QP pair, exchanging
/// [`xrdma::driver::ConnInfo`] in process; returns the connection at `a` and at `b`.
///
/// # Errors
/// The transport's error from registration, QP creation or connection.
pub fn connect<F: Fabric>(
    fabric: &mut F,
    eps: &mut [Endpoint],
    a: u32,
    b: u32,
) -> Result<(xrdma::ConnId, xrdma::ConnId)> {
    let (a_ep, b_ep) = pair_mut(eps, a as usize, b as usize);
    let half_a = driver::open(a_ep, &mut fabric.host(a))?;
    let half_b = driver::open(b_ep, &mut fabric.host(b))?;
    let conn_a = driver::establish(a_ep, &mut fabric.host(a), half_a, &half_b.info, b)?;
    let conn_b = driver::establish(b_ep, &mut fabric.host(b), half_b, &half_a.info, a)?;
    Ok((conn_a, conn_b))
}

/// Mutable references to two distinct elements `a` and `b` of `v`.
///
/// # Panics
/// When `a == b` or either is out of bounds (a runner bug).
pub fn pair_mut<T>(v: &mut [T], a: usize, b: usize) -> (&mut T, &mut T) {
    if a < b {
        let (x, y) = v.split_at_mut(b);
        (&mut x[a], &mut y[0])
    } else {
        let (x, y) = v.split_at_mut(a);
        (&mut y[0], &mut x[b])
    }
}
