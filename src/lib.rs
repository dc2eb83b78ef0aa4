//! The xrdma test bed's command line: the `xrdma` binary parses arguments and prints. Runs go
//! through the runner crate (`xrdma_runner`), which runs YAML scenarios (see `scenarios/`) on a
//! backend; the tools and studies (`ping`, `bw`, `calibrate`, `compare`, `stat`, ...) are the
//! `xrdma_tools` crate's; results and plots the reports crate's (`xrdma_reports`). This library
//! holds the glue only the command line needs: cluster launch and sweep arguments, capture and
//! trace options, the progress line, the interrupt handler.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod capture_cli;
pub mod interrupt;
pub mod launch_cli;
pub mod progress;
pub mod progress_watch;
pub mod run_cli;
pub mod sweep_cli;
pub mod tools_cli;
pub mod trace_cli;
