//! DCQCN at the NIC: the reaction to a CNP and the per-NIC wake-up for rate-limited QPs.
//!
//! A QP's next data packet may not start before `last_start + wire_bytes·8 / R_C`
//! ([`crate::DcqcnState::next_start`]). The NIC's round robin skips QPs that are not yet
//! eligible; when no QP is eligible it schedules one `NicWake` at the earliest eligible time.
//! Only the earliest pending wake matters (`Host::pace_wake`); others are ignored when they
//! fire.

use crate::dcqcn::DcqcnState;
use crate::engine::Event;
use crate::Simulation;
use xrdma::Time;

impl Simulation {
    /// A CNP for QP `qi` on host `h` reached its reaction point.
    pub(crate) fn dcqcn_on_cnp(&mut self, h: u32, qi: usize) {
        let Some(p) = self.dcqcn else { return };
        let now = self.now;
        let qp = &mut self.hosts[h as usize].qps[qi];
        qp.cc
            .get_or_insert_with(|| DcqcnState::new(&p))
            .on_cnp(&p, now);
    }

    /// Make sure host `h`'s NIC looks for a packet again at `at`.
    pub(crate) fn schedule_nic_wake(&mut self, h: u32, at: Time) {
        let host = &mut self.hosts[h as usize];
        if at < host.pace_wake {
            host.pace_wake = at;
            self.queue.push(at, Event::NicWake(h));
        }
    }

    /// A `NicWake` event for host `h`.
    pub(crate) fn on_nic_wake(&mut self, h: u32) {
        let host = &mut self.hosts[h as usize];
        if host.pace_wake == self.now {
            host.pace_wake = Time::MAX;
            self.nic_try_tx(h);
        }
    }
}
