//! Runs xrdma scenarios: joins the sans-IO core (`xrdma`), a backend's `Transport` and a
//! clock into runs of a scenario's workload.
//!
//! | module | its one job |
//! |---|---|
//! | [`fabric`] | the [`fabric::Fabric`] trait (hosts with transports, and a clock that moves: what running hosts needs), the [`fabric::FabricReport`] trait (what a result reads from a fabric: counters, path, environment) and their adapters: the simulator (virtual time) and, with the `verbs` feature, an RDMA device (wall-clock time) |
//! | [`check`] | a scenario's sections turned into checked backend and core configurations |
//! | [`request`] | one way to run: a [`request::RunRequest`] (scenario, backend, seed, options) in, a [`request::RunOutcome`] out; the one [`request::Backend`] value |
//! | [`run`] | one run of a scenario on a fabric: build the hosts, drive them, collect the result |
//! | [`drive`] | the one turn loop: moves the fabric's time and gives each host a driver turn |
//! | [`watch`], [`stat_socket`] | looking at a running run: the hook the turn loop asks, and the local socket `xrdma stat --socket` reads it through |
//! | [`workload`] | the [`workload::Workload`] trait and its implementations (incast, open loop, echo), with the one delivery tally |
//! | [`host_faults`] | host faults the runner injects (receives held back, slow receivers) |
//! | [`role`] | one host's part in a workload (sender, receiver, idle) |
//! | [`stack`] | a host's message stack as the turn loop drives it: xrdma's endpoint, or TCP |
//! | [`transport_info`] | the transport's RC QP attributes and capabilities, as the result records them |
//!
//! A device's counters and where a run happens are read by `xrdma-observe`. A run across
//! processes (ranks, their bootstrap, cluster launch) and sweeps of runs are the
//! `xrdma-cluster` crate's, built on this one.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod check;
pub mod drive;
pub mod fabric;
pub mod heartbeat;
pub mod host_cpu;
pub mod host_faults;
pub mod request;
pub mod role;
pub mod run;
pub mod stack;
pub mod stat_socket;
pub mod transport_info;
pub mod watch;
pub mod workload;
