//! What a heartbeat beside the workload measured ([`HeartbeatRecord`], `heartbeat` in
//! `result.json`): every beat's intended time and round trip (the summary's line is
//! [`crate::heartbeat_line`]).

use serde::{Deserialize, Serialize};

/// One beat: when it was meant to go, and its round trip once answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct HeartbeatSample {
    /// The beat's intended send time, ps from the run's start.
    pub intended_ps: u64,
    /// From the intended time to the answer's arrival, ps; `None`: not answered when the run
    /// ended.
    pub rtt_ps: Option<u64>,
}

/// The heartbeat of a run (a scenario's `heartbeat:`), as its sending host measured it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct HeartbeatRecord {
    /// The host that sent the beats.
    pub from: u32,
    /// The host that answered them.
    pub to: u32,
    /// The interval between beats, ps.
    pub every_ps: u64,
    /// Each beat's size, bytes.
    pub size: u64,
    /// Every beat sent, in order.
    pub samples: Vec<HeartbeatSample>,
}

impl HeartbeatRecord {
    /// The answered beats' round trips, ps, sorted.
    pub fn sorted_rtts(&self) -> Vec<u64> {
        let mut v: Vec<u64> = self.samples.iter().filter_map(|s| s.rtt_ps).collect();
        v.sort_unstable();
        v
    }
}
