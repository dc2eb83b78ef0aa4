//! The xrdma test bed: runs YAML scenarios (see `scenarios/`) on a backend and produces
//! latency reports (see `reports/`). The `xrdma` binary is a thin command line over this.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod bench;
pub mod bootstrap;
pub mod compare;
pub mod conformance;
pub mod echo;
pub mod fabric;
pub mod host_faults;
pub mod incast;
pub mod open_loop;
pub mod output;
pub mod rank_run;
pub mod role;
pub mod sim_config;
pub mod sim_run;
pub mod sweep;
pub mod tools;
pub mod transport_info;
#[cfg(feature = "verbs")]
pub mod verbs_fabric;
pub mod window_bench;
