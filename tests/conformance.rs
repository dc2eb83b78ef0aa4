//! The conformance suite on the simulator (the verbs backend runs the same cases with
//! `xrdma conformance --backend verbs`).

use xrdma_runner::run::run_sim;
use xrdma_testbed::conformance::{check_result, scenario, CASES};

#[test]
fn every_conformance_case_passes_on_the_simulator() {
    for case in CASES {
        let sc = scenario(case).expect("the case parses");
        let r = run_sim(&sc).expect("the case runs");
        if let Err(e) = check_result(case, &r) {
            panic!("{e:#}");
        }
    }
}

#[test]
fn a_transport_that_applies_other_rc_attributes_fails_the_case() {
    let case = CASES
        .iter()
        .find(|c| c.name == "rc-attributes")
        .expect("the case exists");
    let mut r = run_sim(&scenario(case).unwrap()).unwrap();
    check_result(case, &r).unwrap();
    let t = r.transport.as_mut().expect("reported");
    assert_eq!((t.rc.local_ack_timeout, t.rc.min_rnr_timer), (15, 5));
    t.rc.min_rnr_timer = 12;
    let e = check_result(case, &r).unwrap_err().to_string();
    assert!(e.contains("the transport applied RC attributes"), "{e}");
    r.transport = None;
    assert!(check_result(case, &r).is_err());
}
