//! Time series of a simulated run (the `timeseries` key of a [`crate::RunResult`]).
//!
//! Sample `i` is taken at `time_ps[i]`, the end of the interval
//! `(time_ps[i] − interval_ps, time_ps[i]]`; the samples are evenly spaced, `time_ps[i] =
//! (i + 1)·interval_ps`. Counters are cumulative since the start of the run; queues and pauses
//! are the instantaneous state at the sample time; delivered bytes are per interval.

use serde::{Deserialize, Serialize};

/// Network state over time, sampled at a fixed interval.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct TimeSeries {
    /// The sampling interval asked for (`sim.sample-interval`), ps.
    pub requested_interval_ps: u64,
    /// The interval between the samples held, ps: `requested_interval_ps · 2^coarsened`.
    pub interval_ps: u64,
    /// How many times the interval was doubled (dropping every other sample) to keep each
    /// series within `max_points` samples.
    pub coarsened: u32,
    /// The cap on samples per series.
    pub max_points: u32,
    /// What `bottleneck-queue-bytes` measures, e.g. "egress queue of the switch port toward
    /// host 0 (the incast receiver)".
    pub bottleneck: String,
    /// Sample times, ps since the start of the run.
    pub time_ps: Vec<u64>,
    /// Bytes (wire size) in the bottleneck egress queue at each sample time.
    pub bottleneck_queue_bytes: Vec<u64>,
    /// The largest egress queue of any switch port at each sample time, bytes.
    pub max_queue_bytes: Vec<u64>,
    /// Packets ECN-marked (CE) so far.
    pub ecn_marks: Vec<u64>,
    /// CNPs sent so far.
    pub cnps: Vec<u64>,
    /// PFC XOFF frames sent so far.
    pub pfc_xoff: Vec<u64>,
    /// Transmitters (host NICs and switch ports) held in PFC pause at each sample time.
    pub paused_ports: Vec<u32>,
    /// Payload bytes delivered to receivers per interval, per sending host (ascending).
    pub senders: Vec<SenderBytes>,
}

/// Receiver-side payload bytes of one sending host, per interval.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct SenderBytes {
    /// Sending host index.
    pub host: u32,
    /// Payload bytes from `host` delivered in the interval ending at each `time_ps`.
    pub bytes: Vec<u64>,
}

impl TimeSeries {
    /// Throughput of `bytes` delivered in one interval, Gb/s: `bytes · 8 / interval` (with
    /// the interval in ns, bits per ns = Gb/s). 0 for a zero interval.
    pub fn gbps(&self, bytes: u64) -> f64 {
        if self.interval_ps == 0 {
            return 0.0;
        }
        bytes as f64 * 8.0 * 1000.0 / self.interval_ps as f64
    }

    /// Checks that every series has one value per sample time and that the times are
    /// ascending; returns the first problem found.
    pub fn check(&self) -> Result<(), String> {
        let n = self.time_ps.len();
        let lens = [
            ("bottleneck-queue-bytes", self.bottleneck_queue_bytes.len()),
            ("max-queue-bytes", self.max_queue_bytes.len()),
            ("ecn-marks", self.ecn_marks.len()),
            ("cnps", self.cnps.len()),
            ("pfc-xoff", self.pfc_xoff.len()),
            ("paused-ports", self.paused_ports.len()),
        ];
        for (key, len) in lens {
            if len != n {
                return Err(format!(
                    "timeseries.{key} has {len} values for {n} sample times"
                ));
            }
        }
        for s in &self.senders {
            if s.bytes.len() != n {
                return Err(format!(
                    "timeseries.senders (host {}) has {} values for {n} sample times",
                    s.host,
                    s.bytes.len()
                ));
            }
        }
        if self.time_ps.windows(2).any(|w| w[0] >= w[1]) {
            return Err("timeseries.time-ps is not strictly ascending".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gbps_of_one_interval() {
        // 125 000 bytes in 10 µs = 1e6 bits / 1e-5 s = 100 Gb/s.
        let ts = TimeSeries {
            requested_interval_ps: 10_000_000,
            interval_ps: 10_000_000,
            coarsened: 0,
            max_points: 1024,
            bottleneck: String::new(),
            time_ps: vec![],
            bottleneck_queue_bytes: vec![],
            max_queue_bytes: vec![],
            ecn_marks: vec![],
            cnps: vec![],
            pfc_xoff: vec![],
            paused_ports: vec![],
            senders: vec![],
        };
        assert_eq!(ts.gbps(125_000), 100.0);
        assert_eq!(ts.check(), Ok(()));
    }
}
