//! The `sim.host` key: a host profile by name or with overrides, its defaults taken from the
//! simulator, and errors located at the key.

mod common;
use common::*;
use xrdma::Span;
use xrdma_sim::HostModel;

#[test]
fn host_defaults_to_the_simulators_ideal_host() {
    let s = ok(&with(""));
    assert_eq!(
        s.sim_or_default().host,
        xrdma_sim::SimConfig::default().host
    );
    assert!(s.sim_or_default().host.is_ideal());
    let s = ok(&with("sim: { link-rate: 100Gbps }\n"));
    assert_eq!(s.sim_or_default().host, HostModel::IDEAL);
}

#[test]
fn host_takes_a_profile_name_or_a_profile_with_one_key_per_override() {
    let s = ok(&with("sim: { host: rxe-guest }\n"));
    assert_eq!(
        s.sim_or_default().host,
        HostModel::from_profile("rxe-guest").unwrap()
    );
    let s = ok(&with(
        "sim:\n  host:\n    profile: connectx6\n    doorbell: 150ns\n    cqe-write: 0.1us\n",
    ));
    let h = s.sim_or_default().host;
    let base = HostModel::from_profile("connectx6").unwrap();
    assert_eq!(h.doorbell, Span::from_ns(150));
    assert_eq!(h.cqe_write, Span::from_ns(100));
    assert_eq!(h.overridden(), vec!["doorbell", "cqe-write"]);
    assert_eq!(
        HostModel {
            doorbell: base.doorbell,
            cqe_write: base.cqe_write,
            ..h
        },
        base
    );
}

#[test]
fn host_errors_name_the_file_line_and_key() {
    let e = err(&with("sim:\n  host: cx6\n"));
    assert!(
        e.starts_with(
            "scenarios/x.yaml:5:9: sim.host: no host profile `cx6`: expected one of `ideal`, \
             `connectx6`, `rxe-guest`"
        ),
        "{e}"
    );
    let e = err(&with(
        "sim:\n  host:\n    profile: connectx6\n    doorbell: 5\n",
    ));
    assert!(
        e.starts_with("scenarios/x.yaml:7:5: sim.host.doorbell: `5` has no unit"),
        "{e}"
    );
    let e = err(&with(
        "sim:\n  host:\n    profile: connectx6\n    dorbell: 5ns\n",
    ));
    assert!(e.contains("`dorbell` is not a host cost"), "{e}");
    assert!(
        e.contains("scenarios/x.yaml:6:") || e.contains("scenarios/x.yaml:7:"),
        "{e}"
    );
    let e = err(&with("sim:\n  host:\n    profile: nope\n"));
    assert!(
        e.starts_with("scenarios/x.yaml:6:5: sim.host.profile: no host profile `nope`"),
        "{e}"
    );
}
