//! The verbs-level conformance suite on the simulator with a host model whose every cost is
//! non-zero (`rxe-guest`): completions come later, the verbs' semantics do not change.

mod common;

use common::harness::SimHarness;
use xrdma_sim::{profiles, SimConfig};

fn open(_name: &str) -> Option<SimHarness> {
    Some(SimHarness::new(SimConfig {
        host: profiles::RXE_GUEST,
        ..SimConfig::default()
    }))
}

xrdma_conformance::suite!(open);
