//! The verbs-level conformance suite (`xrdma-conformance`) on a real device (rxe0 in the
//! Soft-RoCE guest): the same cases the in-memory transport and the simulator pass. Without
//! a device every case prints `SKIP <case>: no RDMA device: <reason>` and passes.

mod common;

xrdma_conformance::suite!(common::harness::VerbsHarness::open);
