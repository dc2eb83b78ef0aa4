//! The verbs-level conformance suite (`xrdma-conformance`) on the simulator: the same cases
//! the in-memory transport and a real device pass.

mod common;

xrdma_conformance::suite!(common::harness::SimHarness::open);
