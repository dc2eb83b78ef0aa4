//! The measurements a host profile is fitted to: `xrdma ping` and `xrdma bw` at a few sizes,
//! on the device (or, for a test of the fit, on the simulator), kept as JSON
//! (`measurements.json`) so a fit can be redone without the device.

use crate::{bw::BwOptions, ping::PingOptions};
use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::path::Path;
use xrdma_runner::fabric::Fabric;

/// The schema version of [`Measurements`].
pub const SCHEMA: &str = "xrdma-calibration-measurements/1";

/// What to measure: the sizes and iteration counts of the ping and bw runs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Plan {
    /// Ping message sizes, bytes.
    pub ping_sizes: Vec<u64>,
    /// Round trips measured per ping size.
    pub ping_iters: u32,
    /// Round trips run first and not measured.
    pub ping_warmup: u32,
    /// Bw message sizes, bytes.
    pub bw_sizes: Vec<u64>,
    /// Messages streamed per bw size of at most 4 KiB.
    pub bw_small_iters: u32,
    /// Messages streamed per larger bw size.
    pub bw_large_iters: u32,
    /// The send window every bw run pins, bytes (`xrdma bw --window`): an adaptive window
    /// makes a stream's throughput jump as its RTT crosses the window's target delay, which
    /// a fit cannot follow.
    pub bw_window: u64,
}

impl Default for Plan {
    /// Ping at 64 B, 1000 B and 4 KiB (eager SENDs, with xrdma's 16-byte header, of 1, 1
    /// and 5 packets at a 1 KiB MTU: the per-message costs, then the per-byte and the
    /// per-packet ones; 1 KiB would take two packets and tie the two together), 1000 round
    /// trips after 100 of warm-up; bw at 64 B (coalesced small messages: the per-message CPU
    /// costs bound it) with 20 000 messages and 64 KiB (the per-packet costs bound it) with
    /// 1000, both with the window pinned at 256 KiB (xrdma's largest by default). On the
    /// project's Soft-RoCE guest it moves 3300 round trips and 64 MiB: seconds at the rates
    /// measured there.
    fn default() -> Self {
        Plan {
            ping_sizes: vec![64, 1000, 4096],
            ping_iters: 1000,
            ping_warmup: 100,
            bw_sizes: vec![64, 64 << 10],
            bw_small_iters: 20_000,
            bw_large_iters: 1000,
            bw_window: 256 << 10,
        }
    }
}

impl Plan {
    /// Messages streamed for a bw run of `size` bytes.
    pub fn bw_iters(&self, size: u64) -> u32 {
        if size <= 4096 {
            self.bw_small_iters
        } else {
            self.bw_large_iters
        }
    }
}

/// One ping size's figures (half round trips, ps).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct PingFigure {
    /// Message size, bytes.
    pub size: u64,
    /// Round trips measured.
    pub iters: u32,
    /// Nearest-rank median half round trip, ps (perftest's `t_typical`).
    pub p50_ps: u64,
    /// Nearest-rank 99th percentile, ps.
    pub p99_ps: u64,
    /// Smallest, ps.
    pub min_ps: u64,
}

/// One bw size's figure.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct BwFigure {
    /// Message size, bytes.
    pub size: u64,
    /// Messages streamed.
    pub iters: u32,
    /// The pinned send window, bytes (`None`: xrdma's adaptive window).
    pub window: Option<u64>,
    /// Payload bytes per second, from the first send to the last ACK.
    pub bytes_per_second: f64,
}

/// Everything measured for a fit (`measurements.json`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Measurements {
    /// [`SCHEMA`].
    pub schema: String,
    /// Where it was measured: `verbs`, or `sim, host PROFILE` for synthetic measurements.
    pub backend: String,
    /// The ping figures, in plan order.
    pub ping: Vec<PingFigure>,
    /// The bw figures, in plan order.
    pub bw: Vec<BwFigure>,
}

/// The ping figures of `opts` on `fabric`.
///
/// # Errors
/// The tool's own errors ([`crate::ping::run`]).
pub fn ping<F: Fabric>(fabric: &mut F, opts: &PingOptions) -> Result<PingFigure> {
    let r = crate::ping::run(fabric, opts)?;
    let mut s = r.half_rtt_ps;
    s.sort_unstable();
    let rank = |p: f64| xrdma_reports::percentile::nearest_rank(&s, p);
    let (Some(p50_ps), Some(p99_ps), Some(&min_ps)) = (rank(50.0), rank(99.0), s.first()) else {
        bail!("ping measured no round trip");
    };
    Ok(PingFigure {
        size: opts.size,
        iters: opts.iters,
        p50_ps,
        p99_ps,
        min_ps,
    })
}

/// The bw figure of `opts` on `fabric`.
///
/// # Errors
/// The tool's own errors ([`crate::bw::run`]).
pub fn bw<F: Fabric>(fabric: &mut F, opts: &BwOptions) -> Result<BwFigure> {
    let r = crate::bw::run(fabric, opts)?;
    Ok(BwFigure {
        size: opts.size,
        iters: opts.iters,
        window: opts.window,
        bytes_per_second: r.bytes_per_second,
    })
}

/// Runs `plan` on fabrics made by `fabric` (a fresh one per run, as separate tool runs
/// would be), saying each run on standard error.
///
/// # Errors
/// A fabric that cannot be made, or a run that fails.
pub fn measure<F: Fabric>(
    backend: &str,
    plan: &Plan,
    mut fabric: impl FnMut() -> Result<F>,
) -> Result<Measurements> {
    let mut m = Measurements {
        schema: SCHEMA.into(),
        backend: backend.into(),
        ping: Vec::new(),
        bw: Vec::new(),
    };
    for &size in &plan.ping_sizes {
        let opts = PingOptions {
            size,
            iters: plan.ping_iters,
            warmup: plan.ping_warmup,
        };
        let f = ping(&mut fabric()?, &opts).with_context(|| format!("ping of {size} B"))?;
        eprintln!(
            "calibrate: ping {size} B on {backend}: p50 {:.2} µs, p99 {:.2} µs",
            f.p50_ps as f64 / 1e6,
            f.p99_ps as f64 / 1e6
        );
        m.ping.push(f);
    }
    for &size in &plan.bw_sizes {
        let opts = BwOptions {
            size,
            iters: plan.bw_iters(size),
            window: Some(plan.bw_window),
        };
        let f = bw(&mut fabric()?, &opts).with_context(|| format!("bw of {size} B"))?;
        eprintln!(
            "calibrate: bw {size} B on {backend}: {:.2} MB/s (MiB/s)",
            f.bytes_per_second / f64::from(1u32 << 20)
        );
        m.bw.push(f);
    }
    Ok(m)
}

/// Reads `measurements.json` (the file, or a directory holding it).
///
/// # Errors
/// The file cannot be read; it is not JSON of this shape (the message names the file, the
/// field as a path such as `ping[1].p50-ps`, and serde's reason with its line and column);
/// it has another schema; it holds no figure; or a figure is not positive (naming the file
/// and the field).
pub fn load(path: &Path) -> Result<Measurements> {
    let path = if path.is_dir() {
        path.join("measurements.json")
    } else {
        path.to_path_buf()
    };
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    from_json(&text, &path.display().to_string())
}

/// Reads measurements from JSON `text`; `what` (the file's path) names it in errors. See
/// [`load`].
///
/// # Errors
/// As [`load`]'s, after reading.
pub fn from_json(text: &str, what: &str) -> Result<Measurements> {
    let de = &mut serde_json::Deserializer::from_str(text);
    let m: Measurements = serde_path_to_error::deserialize(de).map_err(|e| {
        let field = e.path().to_string();
        let field = if field == "." {
            "(top level)".into()
        } else {
            field
        };
        anyhow::anyhow!(
            "{what}: not a measurements file: field {field}: {}",
            e.inner()
        )
    })?;
    if m.schema != SCHEMA {
        bail!(
            "{what}: field schema is `{}`; this build reads `{SCHEMA}`",
            m.schema
        );
    }
    if m.ping.is_empty() && m.bw.is_empty() {
        bail!("{what}: fields ping and bw are both empty: no figure to fit");
    }
    let bad = |field: String, v: f64| -> Result<()> {
        if v > 0.0 && v.is_finite() {
            Ok(())
        } else {
            bail!("{what}: field {field} is {v}: every figure must be positive")
        }
    };
    for (i, p) in m.ping.iter().enumerate() {
        bad(format!("ping[{i}].size"), p.size as f64)?;
        bad(format!("ping[{i}].iters"), f64::from(p.iters))?;
        bad(format!("ping[{i}].p50-ps"), p.p50_ps as f64)?;
    }
    for (i, b) in m.bw.iter().enumerate() {
        bad(format!("bw[{i}].size"), b.size as f64)?;
        bad(format!("bw[{i}].iters"), f64::from(b.iters))?;
        bad(format!("bw[{i}].bytes-per-second"), b.bytes_per_second)?;
    }
    Ok(m)
}

/// Writes `m` as pretty JSON to `path`, atomically.
///
/// # Errors
/// The file cannot be written.
pub fn save(path: &Path, m: &Measurements) -> Result<()> {
    let text = serde_json::to_string_pretty(m)?;
    xrdma_cluster::sweep::write_atomic(path, text.as_bytes())
}
