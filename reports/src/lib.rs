//! Reports for xrdma test-bed runs: the versioned JSON result schema ([`RunResult`]),
//! nearest-rank latency percentiles, a terminal summary table, per-message CSV and an SVG
//! latency plot.
//!
//! Conventions: times are integer picoseconds, sizes bytes, rates bits per second. Latency is
//! measured from a message's *intended* send time, so stalls are not hidden (no coordinated
//! omission). Every output except the `wall-clock` group is a deterministic function of the
//! [`RunResult`].
//!
//! Typical use by a runner:
//! ```no_run
//! # fn demo(result: &xrdma_reports::RunResult) -> Result<(), xrdma_reports::ReportError> {
//! let files = xrdma_reports::write_run_dir(std::path::Path::new("out/run1"), result, false)?;
//! print!("{}", xrdma_reports::summary_table(result));
//! # let _ = files; Ok(()) }
//! ```

pub mod ccdf;
pub mod chart;
pub mod endpoint_table;
mod environment;
mod error;
mod figures;
mod files;
mod glyphs;
mod heartbeat;
mod host_cpu;
pub mod html;
mod io;
mod kinds;
pub mod metrics;
mod path;
pub mod percentile;
pub mod plot;
pub mod run_dir;
pub mod scatter;
mod schema;
mod sender_bins;
mod series;
pub mod spread;
pub mod stageplot;
pub mod stages;
mod summary;
pub mod sweep_html;
pub mod sweep_plot;
pub mod timeplot;
mod transport_info;
pub mod windowed;

pub use environment::{DeviceInfo, DeviceKey, Environment, RankPlace};
pub use error::ReportError;
pub use figures::{Figures, LatencySummary};
pub use files::{commit_temp, read_json, temp_sibling, write_atomic, write_json};
pub use glyphs::TextOnBitmap;
pub use heartbeat::{HeartbeatRecord, HeartbeatSample};
pub use host_cpu::{CpuSource, HostCpuTime};
pub use io::{
    messages_csv, stage_run, write_report, write_report_with, write_run_dir, write_run_dir_with,
    RunFiles,
};
pub use kinds::{Backend, Stack, WorkloadKind};
pub use path::{IdealCompletion, PathModel};
pub use plot::{latency_svg, latency_svg_string};
pub use run_dir::{RunDir, PLOT_STEMS};
pub use schema::{
    CaptureFile, DeliveryCheck, HostEndpoint, HostModelInfo, Inconsistency, MessageRecord,
    MessageStages, NetworkCounters, RunResult, ScenarioInfo, SimInfo, UnfinishedMessage, WallClock,
    WorkloadInfo, SCHEMA_VERSION,
};
pub use series::{SenderBytes, TimeSeries};
pub use summary::{
    completion_span_ps, format_bytes, format_us, goodput_bps, heartbeat_line, summary_table,
};
pub use transport_info::{CongestionSignal, RcAttributes, TransportInfo, WindowTally};
