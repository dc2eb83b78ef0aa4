//! The conformance suite on the simulator (the verbs backend runs the same cases with
//! `xrdma conformance --backend verbs`).

use xrdma_runner::request::run_sim;
use xrdma_tools::conformance::{check_result, scenario, CASES};

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

#[test]
fn a_transport_may_lengthen_the_local_ack_timeout_but_not_shorten_or_drop_it() {
    let case = CASES
        .iter()
        .find(|c| c.name == "rc-attributes")
        .expect("the case exists");
    let r = run_sim(&scenario(case).unwrap()).unwrap();
    let with_timeout = |code: u8| {
        let mut r = r.clone();
        r.transport.as_mut().expect("reported").rc.local_ack_timeout = code;
        r
    };
    // Asked 15: Soft-RoCE's 17 passes; 14, or no timer at all, fails.
    assert!(check_result(case, &with_timeout(17)).is_ok());
    for code in [14, 0] {
        let e = check_result(case, &with_timeout(code))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("the transport applied RC attributes"),
            "{code}: {e}"
        );
    }
}
