//! A host's message stack as the runner drives it ([`HostStack`]): what the turn loop
//! ([`crate::drive`]) needs of xrdma's [`Endpoint`] — or of any other stack a scenario runs its
//! workload over — beside what the application sees of it ([`xrdma::Messages`]).

use crate::fabric::Fabric;
use crate::host_faults::{Holding, HostFaultState};
use xrdma::driver::{self, Application, TurnScratch};
use xrdma::{Endpoint, EndpointSnapshot, Messages, Time};

/// A host's message stack, driven by the runner (see the module doc). Its applications see
/// it as [`Messages`].
pub trait HostStack<F: Fabric>: Messages + Sized + 'static {
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
}

impl<F: Fabric> HostStack<F> for Endpoint {
    type Scratch = TurnScratch;

    /// A driver turn ([`crate::host_cpu::turn`]) on the host's transport, its receive WRs held
    /// back inside a stop-reposting window and posted first after it ([`Holding`]).
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
}
