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
