//! Time series of a run, sampled at a fixed interval without scheduling any event.
//!
//! The network state only changes when an event is processed (or when the driver acts at the
//! current time), so it is constant between two events. Before the simulation processes an
//! event at time `t`, every sample boundary `b < t` not yet recorded is recorded from the
//! current state: the sample at `b` is the state after every event at a time `≤ b`. No event is
//! added to the queue, so the event count and the trace hash of a run are the same with
//! sampling on or off, and the samples are as deterministic as the run.
//!
//! The samples are recorded straight into the result's record, [`xrdma_reports::TimeSeries`]
//! (its units: ps, bytes). Sample `i` sits at `time_ps[i] = (i + 1)·interval_ps` (the end of
//! the interval `(i·interval, (i + 1)·interval]`). Counters are cumulative since time 0;
//! queues and pauses are the instantaneous state at the boundary (a queue peak between two
//! boundaries is not seen; the run's peak is in [`crate::SimStats::max_egress_queue_bytes`]);
//! delivered bytes are those of the interval ending at the sample.
//!
//! Memory is bounded: when a series reaches [`TimeSeriesConfig::max_points`] samples, every
//! other sample is dropped (those at odd multiples of the interval; the delivered bytes of a
//! dropped interval are added to the next one) and the interval doubles, so a series always
//! holds between `max_points/2` and `max_points` samples, each at a multiple of the current
//! interval. [`xrdma_reports::TimeSeries::coarsened`] says how often that happened.

use crate::{HostId, Simulation};
use serde::{Deserialize, Serialize};
use xrdma::{Span, Time};
use xrdma_reports::{SenderBytes, TimeSeries};

/// Default sampling interval: 10 µs (a 100 Gb/s link carries 125 000 bytes in it, about 113
/// 1 KiB-MTU packets, so a per-interval throughput has a resolution better than 1 %).
pub const DEFAULT_SAMPLE_INTERVAL: Span = Span::from_us(10);

/// Default cap on the samples of a series (see the module docs for the coarsening).
pub const DEFAULT_MAX_POINTS: usize = 1024;

/// What to sample and how often.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimeSeriesConfig {
    /// Interval between two samples at the start of the run; > 0.
    pub interval: Span,
    /// Samples per series before the interval is doubled; rounded up to an even number ≥ 2.
    pub max_points: usize,
    /// The host whose switch port's egress queue is the "bottleneck" series (the port toward
    /// the receiver of an incast), and the only receiver whose delivered payload the senders'
    /// series count; `None` records only the largest egress queue of the fabric, and payload
    /// delivered to any host.
    pub watch_host: Option<HostId>,
}

impl Default for TimeSeriesConfig {
    fn default() -> Self {
        TimeSeriesConfig {
            interval: DEFAULT_SAMPLE_INTERVAL,
            max_points: DEFAULT_MAX_POINTS,
            watch_host: None,
        }
    }
}

/// The state read at one sample boundary.
struct Snapshot {
    watched: u64,
    max_queue: u64,
    ecn: u64,
    cnps: u64,
    xoff: u64,
    paused: u32,
}

/// The recorder kept by a [`Simulation`] with sampling on.
#[derive(Clone, Debug)]
pub(crate) struct Recorder {
    series: TimeSeries,
    /// The host whose switch port's egress queue is the bottleneck series, and the only
    /// receiver whose delivered payload counts (every host's with none).
    watch_host: Option<HostId>,
    /// Samples per series before coarsening; even, ≥ 2.
    max_points: usize,
    /// The interval between the samples held now.
    interval: Span,
    /// Next boundary to record.
    next: Time,
    /// Payload bytes delivered per source host since the last sample (indexed by host).
    pending: Vec<u64>,
    /// Index into `series.senders` per host, when that host has a series.
    source_slot: Vec<Option<usize>>,
}

impl Recorder {
    /// A recorder of `cfg` for `hosts` hosts, its bottleneck series described as
    /// `bottleneck` ([`TimeSeries::bottleneck`]).
    pub(crate) fn new(cfg: TimeSeriesConfig, hosts: u32, bottleneck: String) -> Self {
        let interval = cfg.interval.max(Span::from_ps(1));
        let max_points = cfg.max_points.max(2).next_multiple_of(2);
        Recorder {
            series: TimeSeries {
                requested_interval_ps: interval.as_ps(),
                interval_ps: interval.as_ps(),
                coarsened: 0,
                max_points: u32::try_from(max_points).unwrap_or(u32::MAX),
                bottleneck,
                time_ps: Vec::new(),
                bottleneck_queue_bytes: Vec::new(),
                max_queue_bytes: Vec::new(),
                ecn_marks: Vec::new(),
                cnps: Vec::new(),
                pfc_xoff: Vec::new(),
                paused_ports: Vec::new(),
                senders: Vec::new(),
            },
            watch_host: cfg.watch_host,
            max_points,
            interval,
            next: Time::ZERO + interval,
            pending: vec![0; hosts as usize],
            source_slot: vec![None; hosts as usize],
        }
    }

    /// The next boundary to record.
    #[inline]
    pub(crate) fn next(&self) -> Time {
        self.next
    }

    /// `bytes` of payload from host `src` were written into host `dst`'s memory. With a
    /// watched host only payload delivered to it counts (the senders' share of the
    /// bottleneck; the receiver's own control frames back to them do not).
    #[inline]
    pub(crate) fn on_delivered(&mut self, src: HostId, dst: HostId, bytes: u64) {
        let s = src as usize;
        if s >= self.pending.len() || self.watch_host.is_some_and(|w| w != dst) {
            return;
        }
        self.pending[s] += bytes;
        if self.source_slot[s].is_none() && bytes > 0 {
            // A new source: zeros for the samples before its first byte, keeping `senders`
            // sorted by host.
            let at = self.series.senders.partition_point(|x| x.host < src);
            self.series.senders.insert(
                at,
                SenderBytes {
                    host: src,
                    bytes: vec![0; self.series.time_ps.len()],
                },
            );
            for (i, x) in self.series.senders.iter().enumerate().skip(at) {
                self.source_slot[x.host as usize] = Some(i);
            }
        }
    }

    fn push(&mut self, snap: &Snapshot) {
        let s = &mut self.series;
        s.time_ps.push(self.next.as_ps());
        s.bottleneck_queue_bytes.push(snap.watched);
        s.max_queue_bytes.push(snap.max_queue);
        s.ecn_marks.push(snap.ecn);
        s.cnps.push(snap.cnps);
        s.pfc_xoff.push(snap.xoff);
        s.paused_ports.push(snap.paused);
        for src in &mut s.senders {
            let pending = &mut self.pending[src.host as usize];
            src.bytes.push(*pending);
            *pending = 0;
        }
        self.next += self.interval;
        if s.time_ps.len() >= self.max_points {
            self.coarsen();
        }
    }

    /// Keep the samples at even multiples of the interval (odd indices, as sample `i` is at
    /// `(i + 1)·interval`), each with the bytes delivered over both intervals it now spans,
    /// and double the interval.
    fn coarsen(&mut self) {
        fn keep_odd<T: Copy>(v: &mut Vec<T>) {
            let kept: Vec<T> = v.iter().skip(1).step_by(2).copied().collect();
            *v = kept;
        }
        let s = &mut self.series;
        keep_odd(&mut s.time_ps);
        keep_odd(&mut s.bottleneck_queue_bytes);
        keep_odd(&mut s.max_queue_bytes);
        keep_odd(&mut s.ecn_marks);
        keep_odd(&mut s.cnps);
        keep_odd(&mut s.pfc_xoff);
        keep_odd(&mut s.paused_ports);
        for src in &mut s.senders {
            src.bytes = src.bytes.chunks_exact(2).map(|p| p[0] + p[1]).collect();
        }
        self.interval = self.interval * 2;
        s.interval_ps = self.interval.as_ps();
        s.coarsened += 1;
        // `time_ps.len()` was even (max_points is even), so the next boundary, one old
        // interval after the last kept sample, is an odd multiple: move to the next even one.
        self.next = match s.time_ps.last() {
            Some(&t) => Time::from_ps(t) + self.interval,
            None => Time::ZERO + self.interval,
        };
    }
}

impl Simulation {
    /// Start recording time series (see [`TimeSeries`]), replacing any earlier recorder.
    /// Called before the first event, the first sample is at `cfg.interval`; called later,
    /// the boundaries already passed get the present state.
    ///
    /// Sampling adds no event: [`Simulation::trace_hash`] and the event count do not change.
    pub fn enable_timeseries(&mut self, cfg: TimeSeriesConfig) {
        let bottleneck = self.bottleneck(cfg.watch_host);
        let mut rec = Recorder::new(cfg, self.cfg.hosts, bottleneck);
        while rec.next() <= self.now {
            // Boundaries already passed (enabled late): record the present state for them.
            let snap = self.snapshot(rec.watch_host);
            rec.push(&snap);
        }
        self.timeseries = Some(Box::new(rec));
    }

    /// The series recorded so far, completed up to `now()`: every boundary `≤ now()` plus one
    /// final sample at the first boundary after `now()` (the state is constant from the last
    /// event on), so the delivered bytes of the samples add up to every byte delivered.
    /// `None` when sampling is off.
    pub fn timeseries(&self) -> Option<TimeSeries> {
        let mut rec = self.timeseries.as_deref()?.clone();
        let snap = self.snapshot(rec.watch_host);
        // A boundary that saturated at the end of time has no successor.
        while rec.next() <= self.now && rec.next() < Time::MAX {
            rec.push(&snap);
        }
        let covered = match rec.series.time_ps.last() {
            Some(&t) => Time::from_ps(t) >= self.now,
            None => false,
        };
        if !covered {
            rec.push(&snap);
        }
        Some(rec.series)
    }

    /// Record every boundary before `t` (called before processing an event at `t`).
    #[inline]
    pub(crate) fn sample_until(&mut self, t: Time) {
        let Some(next) = self.timeseries.as_ref().map(|r| r.next()) else {
            return;
        };
        if next >= t {
            return;
        }
        let watch = self.timeseries.as_ref().and_then(|r| r.watch_host);
        let snap = self.snapshot(watch);
        if let Some(rec) = self.timeseries.as_deref_mut() {
            while rec.next() < t && rec.next() < Time::MAX {
                rec.push(&snap);
            }
        }
    }

    /// `bytes` of payload from `src` reached host `dst`'s memory.
    #[inline]
    pub(crate) fn note_delivered(&mut self, src: HostId, dst: HostId, bytes: u64) {
        if let Some(rec) = self.timeseries.as_deref_mut() {
            rec.on_delivered(src, dst, bytes);
        }
    }

    /// What the bottleneck series of a recorder watching `watch` measures
    /// ([`TimeSeries::bottleneck`]).
    fn bottleneck(&self, watch: Option<HostId>) -> String {
        match watch.map(|h| (h, self.host_attachment(h))) {
            Some((h, Some((sw, port)))) => {
                format!("egress queue of switch {sw} port {port}, toward host {h} (the receiver)")
            }
            Some((_, None)) => "largest egress queue in the fabric".to_string(),
            None => "none: no host watched (zeros; the largest egress queue is max-queue-bytes)"
                .to_string(),
        }
    }

    fn snapshot(&self, watch: Option<HostId>) -> Snapshot {
        let paused_hosts = self.hosts.iter().filter(|h| h.egress.is_paused()).count() as u32;
        Snapshot {
            watched: watch.map_or(0, |h| self.fabric.host_port_queue_bytes(h)),
            max_queue: self.fabric.max_queue_bytes(),
            ecn: self.stats.ecn_marks,
            cnps: self.stats.cnps_sent,
            xoff: self.stats.pfc_xoff_sent,
            paused: paused_hosts + self.fabric.paused_ports(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snap(v: u64) -> Snapshot {
        Snapshot {
            watched: v,
            max_queue: v,
            ecn: v,
            cnps: v,
            xoff: v,
            paused: 0,
        }
    }

    #[test]
    fn coarsening_keeps_even_multiples_and_doubles_the_interval() {
        let cfg = TimeSeriesConfig {
            interval: Span::from_ps(10),
            max_points: 4,
            watch_host: None,
        };
        let mut r = Recorder::new(cfg, 2, String::new());
        // Samples at 10, 20, 30, 40 (value = time); the 4th hits the cap: keep 20 and 40.
        for k in 1..=4 {
            r.push(&snap(10 * k));
        }
        assert_eq!(r.series.time_ps, vec![20, 40]);
        assert_eq!(r.series.ecn_marks, vec![20, 40]);
        assert_eq!(r.series.interval_ps, 20);
        assert_eq!(r.series.coarsened, 1);
        // The next boundary is 40 + 20 = 60, a multiple of the new interval.
        assert_eq!(r.next(), Time::from_ps(60));
    }

    #[test]
    fn a_late_source_is_back_filled_with_zeros_and_kept_sorted() {
        let mut r = Recorder::new(TimeSeriesConfig::default(), 4, String::new());
        r.on_delivered(3, 0, 100);
        r.push(&snap(0));
        r.on_delivered(1, 2, 50);
        r.push(&snap(0));
        let hosts: Vec<u32> = r.series.senders.iter().map(|s| s.host).collect();
        assert_eq!(hosts, vec![1, 3]);
        assert_eq!(r.series.senders[0].bytes, vec![0, 50]);
        assert_eq!(r.series.senders[1].bytes, vec![100, 0]);
    }

    #[test]
    fn with_a_watched_host_only_payload_to_it_counts() {
        let cfg = TimeSeriesConfig {
            watch_host: Some(0),
            ..TimeSeriesConfig::default()
        };
        let mut r = Recorder::new(cfg, 4, String::new());
        r.on_delivered(1, 0, 100); // a sender's data into the receiver
        r.on_delivered(0, 1, 28); // the receiver's grant back to it: not the senders' share
        r.push(&snap(0));
        let hosts: Vec<u32> = r.series.senders.iter().map(|s| s.host).collect();
        assert_eq!(hosts, vec![1]);
        assert_eq!(r.series.senders[0].bytes, vec![100]);
    }
}
