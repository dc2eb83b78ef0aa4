//! The records of a sweep's `index.json`: the sweep, its axes and every point with its
//! headline figures. Written by [`super::report`], read by [`super::seeds`] and `compare`.

use serde::{Deserialize, Serialize};
use xrdma_reports::{completion_span_ps, goodput_bps, LatencySummary, RunResult};

use super::PointStatus;

/// Version of the `index.json` layout.
pub const INDEX_VERSION: u32 = 1;

/// The headline figures of a run, as listed in the index.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Headline {
    /// Senders of the incast.
    pub fan_in: u32,
    /// Message records.
    pub messages: u64,
    /// Messages with a completion time.
    pub completed: u64,
    /// Nearest-rank p50 message completion time, ps.
    pub p50_ps: Option<u64>,
    /// Nearest-rank p99, ps.
    pub p99_ps: Option<u64>,
    /// Nearest-rank p99.9, ps.
    pub p999_ps: Option<u64>,
    /// Largest completion time, ps.
    pub max_ps: Option<u64>,
    /// T*, ps (an incast on the simulator's single switch only: [`RunResult::t_star_bound`]).
    pub t_star_ps: Option<u64>,
    /// (last completion − first intended send) / T*, as in the run summary (the span of the
    /// whole run over T*, not [`Headline::max_ps`] over T*).
    pub max_over_t_star: Option<f64>,
    /// Payload goodput, bits per second ([`xrdma_reports::goodput_bps`]).
    pub goodput_bps: Option<f64>,
    /// The heartbeat's nearest-rank p50 round trip, ps (a scenario's `heartbeat:`; `None`
    /// without one, or with no beat answered).
    #[serde(default)]
    pub heartbeat_p50_ps: Option<u64>,
    /// The heartbeat's nearest-rank p99 round trip, ps.
    #[serde(default)]
    pub heartbeat_p99_ps: Option<u64>,
}

impl Headline {
    /// The headline figures of `r`.
    pub fn of(r: &RunResult) -> Headline {
        let s = LatencySummary::from_records(&r.messages);
        let t_star_ps = r.t_star_bound().map(|i| i.t_star_ps);
        let span = completion_span_ps(&r.messages);
        let rtts = r
            .heartbeat
            .as_ref()
            .map(|h| h.sorted_rtts())
            .unwrap_or_default();
        let beat = |p: f64| xrdma_reports::percentile::nearest_rank(&rtts, p);
        Headline {
            fan_in: r.workload.senders,
            messages: s.count,
            completed: s.delivered,
            p50_ps: s.p50_ps,
            p99_ps: s.p99_ps,
            p999_ps: s.p999_ps,
            max_ps: s.max_ps,
            t_star_ps,
            max_over_t_star: match (span, t_star_ps) {
                (Some(sp), Some(t)) if t > 0 => Some(sp as f64 / t as f64),
                _ => None,
            },
            goodput_bps: goodput_bps(&r.messages),
            heartbeat_p50_ps: beat(50.0),
            heartbeat_p99_ps: beat(99.0),
        }
    }
}

/// One point in `index.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct IndexPoint {
    /// The point's directory name.
    pub id: String,
    /// Its directory, relative to the sweep directory.
    pub dir: String,
    /// The value of each axis as written, in the order of [`SweepIndex::axes`].
    pub values: Vec<String>,
    /// Backend name.
    pub backend: String,
    /// Scenario hash ([`super::point_hash`]).
    pub hash: String,
    /// How it ended.
    pub status: PointStatus,
    /// The error of a point that produced no result.
    pub error: Option<String>,
    /// Its headline figures, when it produced a result.
    pub headline: Option<Headline>,
}

/// One axis in `index.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct IndexAxis {
    /// The axis name.
    pub name: String,
    /// Its values as written.
    pub values: Vec<String>,
}

/// `index.json`: the sweep and every point. Contains no wall-clock figure, so it is the same
/// whatever the number of jobs and whether points were resumed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct SweepIndex {
    /// [`INDEX_VERSION`].
    pub index_version: u32,
    /// Version of the tool.
    pub tool_version: String,
    /// Base scenario name.
    pub scenario: String,
    /// Base scenario file.
    pub scenario_path: String,
    /// The axes in the order given.
    pub axes: Vec<IndexAxis>,
    /// The points in plan order.
    pub points: Vec<IndexPoint>,
}
