//! # xrdma-conformance — one verbs-level conformance suite for every `Transport`
//!
//! Generic test bodies ([`cases`]) written against a [`Harness`]: make a connected pair of
//! transports with given RC parameters and memory, post WRs, let the backend progress until
//! completions are there (simulated time or wall-clock time), read and write registered
//! memory. The same bodies run unchanged on
//!
//! - the in-memory transport of this crate ([`mem`], through [`MemHarness`]; `tests/` here),
//! - the simulator (`xrdma-sim`'s `tests/conformance.rs`),
//! - a real RDMA device (`xrdma-verbs`' `tests/conformance.rs`: Soft-RoCE `rxe0` in the CI
//!   guest; without a device each case prints `SKIP <case>: <reason>` and passes).
//!
//! A backend's test file is one line, [`suite!`], naming a function that opens its harness;
//! a backend's own tests can run a case with other parameters and assert more on what it
//! returns ([`cases::Observed`]: the completions and when they were polled).
//!
//! This is the suite of the `Transport` trait (verbs semantics). The scenario-level suite,
//! whole runs of the core on a backend, is `xrdma conformance`.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod cases;
pub mod forwarding;
pub mod harness;
pub mod mem;
mod mem_harness;

pub use harness::{pattern, rdma_wr, recv_wr, send_wr, sge, Harness, Pair, PairSpec, Seen, Side};
pub use mem_harness::MemHarness;
