//! The xrdma test bed's command line: the `xrdma` binary is a thin layer over the runner
//! crate (`xrdma_runner`), which runs YAML scenarios (see `scenarios/`) on a backend, and the
//! reports crate (`xrdma_reports`). This library holds what only the command line needs: its
//! output helpers, the tools (`ping`, `bw`, `soak`, ...), the comparisons, the calibration against a device and the benchmarks.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod bench;
pub mod calibrate;
pub mod capture_cli;
pub mod compare;
pub mod conformance;
pub mod interrupt;
pub mod launch_cli;
pub mod output;
pub mod profile_file;
pub mod progress;
pub mod stat;
pub mod sweep_cli;
pub mod tools;
pub mod trace_cli;
pub mod window_bench;
pub mod wire_compare;
