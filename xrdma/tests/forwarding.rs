//! Every transport wrapper of the core and its tests passes every call on to the transport it
//! wraps when its interception is neutral (`xrdma_conformance::forwarding`).

mod util;

use util::logged::{Log, Logged};
use xrdma::fault::{FaultConfig, FaultInjector};
use xrdma_conformance::forwarding::{assert_forwards_every_call, Probe};

#[test]
fn a_fault_injector_without_faults_passes_every_call_on() {
    let probe = Probe::default();
    let log = probe.log();
    let mut f = FaultInjector::new(probe, FaultConfig::default());
    assert_forwards_every_call(&mut f, &log);
    assert_eq!(f.counts().total(), 0);
}

#[test]
fn the_logging_wrapper_passes_every_call_on() {
    let probe = Probe::default();
    let calls = probe.log();
    let mut log = Log::default();
    let mut t = Logged {
        inner: probe,
        log: &mut log,
    };
    assert_forwards_every_call(&mut t, &calls);
    assert_eq!(log.port_polls, 1);
}

#[test]
fn a_borrowed_transport_passes_every_call_on() {
    let mut probe = Probe::default();
    let log = probe.log();
    assert_forwards_every_call(&mut &mut probe, &log);
}
