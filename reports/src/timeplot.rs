//! Time-series figures of a simulated run: the bottleneck queue (`queue`), throughput per
//! sender (`throughput`) and congestion signals (`congestion`), drawn from
//! [`RunResult::timeseries`].
//!
//! Pure functions of the [`RunResult`]: equal inputs give byte-identical SVG and PNG. Values
//! held over an interval (throughput) are drawn as steps over that interval; instantaneous
//! samples (queues, pauses) as lines through the sample times, starting from the empty network
//! at time 0.

use plotters::coord::Shift;
use plotters::prelude::*;

use crate::chart::{
    dashed_legend, draw_legend, line_legend, nice_upper, plot_err, styled_mesh, tick_decimals,
    ByteUnit, Figure, TimeUnit, CAPTION_PX, FONT_FAMILY, TAB10, TITLE_PX, T_STAR_COLOR,
};
use crate::error::ReportError;
use crate::plot::{run_title, PANEL_SIZE_PX};
use crate::schema::RunResult;
use crate::series::TimeSeries;
use crate::summary::format_bytes;

/// Up to this many senders, the throughput figure draws one line per sender; above it, the
/// median and the min–max band across senders.
pub const MAX_SENDER_LINES: usize = 4;

/// Height of the two-panel time-series figures, pixels.
const TALL_PX: u32 = 820;

fn time_desc(u: TimeUnit) -> String {
    format!("time since start of run ({})", u.symbol)
}

/// `(t, v)` steps: each value held over its interval `(t − Δ, t]`.
fn steps(ts: &TimeSeries, u: TimeUnit, values: impl Iterator<Item = f64>) -> Vec<(f64, f64)> {
    let mut pts = Vec::with_capacity(2 * ts.time_ps.len());
    for (&t, v) in ts.time_ps.iter().zip(values) {
        pts.push((u.of(t.saturating_sub(ts.interval_ps)), v));
        pts.push((u.of(t), v));
    }
    pts
}

/// `(t, v)` points of an instantaneous series, starting at `(0, 0)`.
fn line(ts: &TimeSeries, u: TimeUnit, values: impl Iterator<Item = f64>) -> Vec<(f64, f64)> {
    std::iter::once((0.0, 0.0))
        .chain(ts.time_ps.iter().zip(values).map(|(&t, v)| (u.of(t), v)))
        .collect()
}

/// A note on sampling for captions: interval, and the coarsening when it happened.
fn sampling_note(ts: &TimeSeries) -> String {
    let us = ts.interval_ps as f64 / 1e6;
    if ts.coarsened > 0 {
        format!(
            "every {us} µs, coarsened {}× from {} µs (cap {} points)",
            1u64 << ts.coarsened.min(63),
            ts.requested_interval_ps as f64 / 1e6,
            ts.max_points
        )
    } else {
        format!("every {us} µs")
    }
}

fn x_max(ts: &TimeSeries, u: TimeUnit) -> f64 {
    u.of(active_end_ps(ts)).max(1e-9)
}

/// Where the time plots end: one sample after the last one in which anything moved (a queue
/// held bytes, a sender delivered, a counter grew, a port was paused), so trailing transport
/// ACKs and timers (TCP's delayed ACK, 40 ms after the last message) do not squeeze the run
/// into the left edge; the whole series when nothing moved.
fn active_end_ps(ts: &TimeSeries) -> u64 {
    let n = ts.time_ps.len();
    let grew = |v: &[u64], i: usize| i < v.len() && v[i] > if i == 0 { 0 } else { v[i - 1] };
    let last = (0..n).rev().find(|&i| {
        ts.bottleneck_queue_bytes.get(i).is_some_and(|&q| q > 0)
            || ts.max_queue_bytes.get(i).is_some_and(|&q| q > 0)
            || ts.paused_ports.get(i).is_some_and(|&p| p > 0)
            || ts
                .senders
                .iter()
                .any(|s| s.bytes.get(i).is_some_and(|&b| b > 0))
            || grew(&ts.ecn_marks, i)
            || grew(&ts.cnps, i)
            || grew(&ts.pfc_xoff, i)
    });
    let end = last.map_or(n.saturating_sub(1), |i| (i + 1).min(n.saturating_sub(1)));
    ts.time_ps.get(end).copied().unwrap_or(0)
}

/// The bottleneck queue over time (`queue.svg/.png`).
///
/// The egress queue named by [`TimeSeries::bottleneck`] (blue), the largest egress queue of
/// the fabric at each sample when it differs anywhere (grey, dashed), and the run's peak of
/// any egress queue ([`crate::NetworkCounters::max_egress_queue_bytes`], red dotted): the
/// samples are instantaneous, so a short peak between two samples shows only there.
pub struct QueuePlot<'a>(pub &'a RunResult, pub &'a TimeSeries);

impl Figure for QueuePlot<'_> {
    fn size(&self) -> (u32, u32) {
        PANEL_SIZE_PX
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), ReportError> {
        let (r, ts) = (self.0, self.1);
        let body = root
            .titled(&run_title(r), (FONT_FAMILY, TITLE_PX))
            .map_err(plot_err)?;
        let u = TimeUnit::for_span(active_end_ps(ts));
        let xd = tick_decimals(x_max(ts, u));
        let x_fmt = move |v: &f64| format!("{v:.xd$}");
        let data_max = ts.max_queue_bytes.iter().copied().max().unwrap_or(0);
        // A sampled run is simulated, and the simulator observes the peak; were it unknown,
        // the sampled maximum stands in for it.
        let peak = r.network.max_egress_queue_bytes.unwrap_or(data_max);
        let b = ByteUnit::for_max(peak.max(data_max));
        // 25 % more headroom than elsewhere: the legend sits above the data.
        let y_max = nice_upper(b.of(peak.max(data_max))) * 1.25;
        let caption = format!("Bottleneck queue, sampled {}", sampling_note(ts));
        let mut chart = ChartBuilder::on(&body)
            .caption(caption, (FONT_FAMILY, CAPTION_PX))
            .margin(14)
            .x_label_area_size(48)
            .y_label_area_size(70)
            .build_cartesian_2d(0f64..x_max(ts, u), 0f64..y_max)
            .map_err(plot_err)?;
        let d = tick_decimals(y_max);
        let y_fmt = move |v: &f64| format!("{v:.d$}");
        styled_mesh(&mut chart)
            .x_desc(time_desc(u))
            .x_label_formatter(&x_fmt)
            .y_desc(format!("egress queue ({})", b.symbol))
            .y_label_formatter(&y_fmt)
            .draw()
            .map_err(plot_err)?;
        if ts.max_queue_bytes != ts.bottleneck_queue_bytes {
            let pts = line(ts, u, ts.max_queue_bytes.iter().map(|&q| b.of(q)));
            chart
                .draw_series(DashedLineSeries::new(pts, 6, 4, TAB10[7].stroke_width(2)))
                .map_err(plot_err)?
                .label("largest egress queue anywhere in the fabric")
                .legend(dashed_legend(TAB10[7]));
        }
        let pts = line(ts, u, ts.bottleneck_queue_bytes.iter().map(|&q| b.of(q)));
        chart
            .draw_series(LineSeries::new(pts, TAB10[0].stroke_width(2)))
            .map_err(plot_err)?
            .label(ts.bottleneck.clone())
            .legend(line_legend(TAB10[0], 2));
        let x1 = x_max(ts, u);
        chart
            .draw_series(DashedLineSeries::new(
                vec![(0.0, b.of(peak)), (x1, b.of(peak))],
                2,
                4,
                T_STAR_COLOR.stroke_width(1),
            ))
            .map_err(plot_err)?
            .label(format!("peak of any egress queue = {}", format_bytes(peak)))
            .legend(dashed_legend(T_STAR_COLOR));
        draw_legend(&mut chart, SeriesLabelPosition::UpperRight)
    }
}

/// Throughput over time (`throughput.svg/.png`), receiver side: payload bytes delivered per
/// interval, in Gb/s, drawn as steps over each interval.
///
/// Top panel: all senders together, with the bottleneck's payload ceiling where the path
/// states it (`B × MTU / (MTU + header)`, [`crate::PathModel::payload_ceiling_bps`]: the
/// payload a link of rate B carries in full packets, what the line can reach). Bottom panel:
/// per sender, in bins of several intervals where the senders take turns (`sender_bins`:
/// a sender sending its fair share delivers in every bin); with at most [`MAX_SENDER_LINES`]
/// senders one line each, otherwise the median across senders (per bin, nearest rank) with
/// the band from the slowest to the fastest sender and the mean (the aggregate over N,
/// dashed), so 256 senders stay readable and an unfair or starved sender shows as a wide band.
pub struct ThroughputPlot<'a>(pub &'a RunResult, pub &'a TimeSeries);

impl Figure for ThroughputPlot<'_> {
    fn size(&self) -> (u32, u32) {
        (PANEL_SIZE_PX.0, TALL_PX)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), ReportError> {
        let (r, ts) = (self.0, self.1);
        let body = root
            .titled(&run_title(r), (FONT_FAMILY, TITLE_PX))
            .map_err(plot_err)?;
        let (top, bottom) = body.split_vertically(TALL_PX * 45 / 100);
        let u = TimeUnit::for_span(active_end_ps(ts));
        let xd = tick_decimals(x_max(ts, u));
        let x_fmt = move |v: &f64| format!("{v:.xd$}");
        let x1 = x_max(ts, u);
        let n = ts.time_ps.len();
        let total: Vec<u64> = (0..n)
            .map(|i| ts.senders.iter().map(|s| s.bytes[i]).sum())
            .collect();
        let link_gbps = r.path.payload_ceiling_bps().map(|b| b / 1e9);
        let agg_max = total.iter().map(|&b| ts.gbps(b)).fold(0.0, f64::max);
        let y_top = nice_upper(agg_max.max(link_gbps.unwrap_or(0.0)));
        let mut chart = ChartBuilder::on(&top)
            .caption(
                format!(
                    "Payload delivered to host {} from all {} senders, per interval, sampled {}",
                    r.workload.receiver,
                    ts.senders.len(),
                    sampling_note(ts)
                ),
                (FONT_FAMILY, CAPTION_PX),
            )
            .margin(14)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d(0f64..x1, 0f64..y_top)
            .map_err(plot_err)?;
        let d = tick_decimals(y_top);
        let y_fmt = move |v: &f64| format!("{v:.d$}");
        styled_mesh(&mut chart)
            .x_desc(time_desc(u))
            .x_label_formatter(&x_fmt)
            .y_desc("throughput (Gb/s)")
            .y_label_formatter(&y_fmt)
            .draw()
            .map_err(plot_err)?;
        let pts = steps(ts, u, total.iter().map(|&b| ts.gbps(b)));
        chart
            .draw_series(LineSeries::new(pts, TAB10[0].stroke_width(2)))
            .map_err(plot_err)?
            .label("all senders (payload)")
            .legend(line_legend(TAB10[0], 2));
        if let Some(g) = link_gbps {
            chart
                .draw_series(DashedLineSeries::new(
                    vec![(0.0, g), (x1, g)],
                    8,
                    5,
                    T_STAR_COLOR.stroke_width(2),
                ))
                .map_err(plot_err)?
                .label(format!(
                    "payload ceiling B × MTU / (MTU + header) = {g:.2} Gb/s (B = {} Gb/s)",
                    r.path.bottleneck_bps.map_or(0.0, |b| b as f64 / 1e9)
                ))
                .legend(dashed_legend(T_STAR_COLOR));
        }
        draw_legend(&mut chart, SeriesLabelPosition::LowerRight)?;
        draw_per_sender_throughput(ts, u, &bottom)
    }
}

fn draw_per_sender_throughput<DB: DrawingBackend>(
    ts: &TimeSeries,
    u: TimeUnit,
    area: &DrawingArea<DB, Shift>,
) -> Result<(), ReportError> {
    let x1 = x_max(ts, u);
    let xd = tick_decimals(x1);
    let x_fmt = move |v: &f64| format!("{v:.xd$}");
    // Bins long enough that a sender getting its fair share delivers in each one.
    let k = crate::sender_bins::bin_factor(ts);
    let bins = crate::sender_bins::bins(ts, k);
    let bin_steps = |values: &mut dyn Iterator<Item = f64>| -> Vec<(f64, f64)> {
        let mut pts = Vec::with_capacity(2 * bins.len());
        for (b, v) in bins.iter().zip(values) {
            pts.push((u.of(b.start_ps), v));
            pts.push((u.of(b.end_ps), v));
        }
        pts
    };
    let y_max = nice_upper(
        bins.iter()
            .flat_map(|b| b.bytes.iter().map(|&x| b.gbps(x)))
            .fold(0.0, f64::max),
    );
    let few = ts.senders.len() <= MAX_SENDER_LINES;
    // Why the bins are long is in the module docs of `sender_bins` and docs/results.md.
    let binning = if k > 1 {
        format!(
            " (bins of {} µs = {k} samples)",
            (k as u64 * ts.interval_ps) as f64 / 1e6
        )
    } else {
        String::new()
    };
    let caption = if few {
        format!("Delivered payload per sender{binning}")
    } else {
        format!(
            "Payload per sender{binning}: median and min–max over {} senders",
            ts.senders.len()
        )
    };
    let mut chart = ChartBuilder::on(area)
        .caption(caption, (FONT_FAMILY, CAPTION_PX))
        .margin(14)
        .x_label_area_size(48)
        .y_label_area_size(70)
        .build_cartesian_2d(0f64..x1, 0f64..y_max)
        .map_err(plot_err)?;
    let d = tick_decimals(y_max);
    let y_fmt = move |v: &f64| format!("{v:.d$}");
    styled_mesh(&mut chart)
        .x_desc(time_desc(u))
        .x_label_formatter(&x_fmt)
        .y_desc("throughput per sender (Gb/s)")
        .y_label_formatter(&y_fmt)
        .draw()
        .map_err(plot_err)?;
    if ts.senders.is_empty() {
        chart
            .draw_series(std::iter::once(Text::new(
                "no payload delivered",
                (x1 * 0.35, y_max * 0.5),
                (FONT_FAMILY, CAPTION_PX),
            )))
            .map_err(plot_err)?;
        return Ok(());
    }
    if few {
        for (j, s) in ts.senders.iter().enumerate() {
            let color = TAB10[j % TAB10.len()];
            let pts = bin_steps(&mut bins.iter().map(|b| b.gbps(b.bytes[j])));
            chart
                .draw_series(LineSeries::new(pts, color.stroke_width(2)))
                .map_err(plot_err)?
                .label(format!("host {}", s.host))
                .legend(line_legend(color, 2));
        }
        return draw_legend(&mut chart, SeriesLabelPosition::UpperRight);
    }
    // Per bin: min, nearest-rank median, max across senders.
    let mut lo = Vec::with_capacity(bins.len());
    let mut med = Vec::with_capacity(bins.len());
    let mut hi = Vec::with_capacity(bins.len());
    let mut col: Vec<u64> = Vec::with_capacity(ts.senders.len());
    for b in &bins {
        col.clear();
        col.extend_from_slice(&b.bytes);
        col.sort_unstable();
        lo.push(b.gbps(col[0]));
        med.push(b.gbps(crate::percentile::nearest_rank(&col, 50.0).unwrap_or(0)));
        hi.push(b.gbps(col[col.len() - 1]));
    }
    let upper = bin_steps(&mut hi.iter().copied());
    let mut lower = bin_steps(&mut lo.iter().copied());
    lower.reverse();
    let band: Vec<(f64, f64)> = upper.iter().copied().chain(lower).collect();
    let band_color = TAB10[0].mix(0.25);
    chart
        .draw_series(std::iter::once(Polygon::new(band, band_color.filled())))
        .map_err(plot_err)?
        .label("slowest to fastest sender")
        .legend(move |(x, y)| Rectangle::new([(x, y - 6), (x + 22, y + 6)], band_color.filled()));
    chart
        .draw_series(LineSeries::new(
            bin_steps(&mut med.iter().copied()),
            TAB10[0].stroke_width(2),
        ))
        .map_err(plot_err)?
        .label("median sender")
        .legend(line_legend(TAB10[0], 2));
    // The mean sender is the aggregate over N: the fair share of what was delivered.
    let senders = ts.senders.len() as f64;
    let mut mean = bins.iter().map(|b| b.gbps(b.bytes.iter().sum()) / senders);
    chart
        .draw_series(DashedLineSeries::new(
            bin_steps(&mut mean),
            6,
            3,
            TAB10[1].stroke_width(2),
        ))
        .map_err(plot_err)?
        .label("mean sender (all senders / N)")
        .legend(dashed_legend(TAB10[1]));
    draw_legend(&mut chart, SeriesLabelPosition::UpperRight)
}

/// Congestion signals over time (`congestion.svg/.png`).
///
/// Top panel: cumulative ECN-marked packets, CNPs and PFC XOFF frames since the start of the
/// run. Bottom panel: transmitters (host NICs and switch ports) held paused by PFC at each
/// sample time.
pub struct CongestionPlot<'a>(pub &'a RunResult, pub &'a TimeSeries);

impl Figure for CongestionPlot<'_> {
    fn size(&self) -> (u32, u32) {
        (PANEL_SIZE_PX.0, TALL_PX)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), ReportError> {
        let (r, ts) = (self.0, self.1);
        let body = root
            .titled(&run_title(r), (FONT_FAMILY, TITLE_PX))
            .map_err(plot_err)?;
        let (top, bottom) = body.split_vertically(TALL_PX * 50 / 100);
        let u = TimeUnit::for_span(active_end_ps(ts));
        let xd = tick_decimals(x_max(ts, u));
        let x_fmt = move |v: &f64| format!("{v:.xd$}");
        let x1 = x_max(ts, u);
        let last = |v: &[u64]| v.last().copied().unwrap_or(0);
        let counts = [
            ("ECN-marked packets", &ts.ecn_marks, TAB10[1]),
            ("CNPs sent", &ts.cnps, TAB10[2]),
            ("PFC XOFF frames sent", &ts.pfc_xoff, TAB10[3]),
        ];
        let c_max = counts.iter().map(|c| last(c.1)).max().unwrap_or(0);
        let y_top = nice_upper(c_max as f64);
        let mut chart = ChartBuilder::on(&top)
            .caption(
                format!(
                    "ECN marks, CNPs and PFC XOFF, cumulative, sampled {}",
                    sampling_note(ts)
                ),
                (FONT_FAMILY, CAPTION_PX),
            )
            .margin(14)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d(0f64..x1, 0f64..y_top)
            .map_err(plot_err)?;
        let y_fmt = |v: &f64| format!("{v:.0}");
        styled_mesh(&mut chart)
            .x_desc(time_desc(u))
            .x_label_formatter(&x_fmt)
            .y_desc("count since start")
            .y_label_formatter(&y_fmt)
            .draw()
            .map_err(plot_err)?;
        for (name, values, color) in counts {
            let pts = line(ts, u, values.iter().map(|&v| v as f64));
            chart
                .draw_series(LineSeries::new(pts, color.stroke_width(2)))
                .map_err(plot_err)?
                .label(format!("{name} (total {})", last(values)))
                .legend(line_legend(color, 2));
        }
        draw_legend(&mut chart, SeriesLabelPosition::UpperLeft)?;

        let p_max = ts.paused_ports.iter().copied().max().unwrap_or(0);
        let y_bot = f64::from(p_max.max(1)) * 1.15;
        let mut chart = ChartBuilder::on(&bottom)
            .caption(
                if p_max == 0 {
                    "Transmitters paused by PFC (host NICs and switch ports): none in this run"
                } else {
                    "Transmitters paused by PFC (host NICs and switch ports)"
                },
                (FONT_FAMILY, CAPTION_PX),
            )
            .margin(14)
            .x_label_area_size(48)
            .y_label_area_size(70)
            .build_cartesian_2d(0f64..x1, 0f64..y_bot)
            .map_err(plot_err)?;
        let y_fmt = |v: &f64| {
            if (v - v.round()).abs() < 1e-9 {
                format!("{v:.0}")
            } else {
                String::new()
            }
        };
        styled_mesh(&mut chart)
            .x_desc(time_desc(u))
            .x_label_formatter(&x_fmt)
            .y_desc("paused transmitters")
            .y_labels((p_max as usize + 2).min(11))
            .y_label_formatter(&y_fmt)
            .draw()
            .map_err(plot_err)?;
        let pts = line(ts, u, ts.paused_ports.iter().map(|&p| f64::from(p)));
        chart
            .draw_series(LineSeries::new(pts, TAB10[4].stroke_width(2)))
            .map_err(plot_err)?
            .label(format!("paused at the sample time (peak {p_max})"))
            .legend(line_legend(TAB10[4], 2));
        draw_legend(&mut chart, SeriesLabelPosition::UpperRight)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::series::SenderBytes;

    fn series(bytes: Vec<u64>) -> TimeSeries {
        let n = bytes.len();
        TimeSeries {
            time_ps: (1..=n as u64).map(|i| i * 10).collect(),
            bottleneck_queue_bytes: vec![0; n],
            max_queue_bytes: vec![0; n],
            ecn_marks: vec![0; n],
            cnps: vec![0; n],
            pfc_xoff: vec![0; n],
            paused_ports: vec![0; n],
            senders: vec![SenderBytes { host: 1, bytes }],
            requested_interval_ps: 10,
            interval_ps: 10,
            coarsened: 0,
            max_points: 1024,
            bottleneck: String::new(),
        }
    }

    #[test]
    fn the_plots_end_one_sample_after_the_last_activity() {
        // Deliveries in samples 0..=2, then 40 idle samples (a trailing delayed ACK).
        let mut bytes = vec![5, 5, 5];
        bytes.extend([0; 40]);
        assert_eq!(active_end_ps(&series(bytes)), 40);
        // A counter that only stays where it was is not activity; one that grows is.
        let mut ts = series(vec![0; 10]);
        ts.ecn_marks = vec![0, 0, 3, 3, 3, 3, 3, 3, 3, 3];
        assert_eq!(active_end_ps(&ts), 40);
        // Nothing moved at all: the whole series.
        assert_eq!(active_end_ps(&series(vec![0; 10])), 100);
        // Activity in the last sample: the last sample.
        assert_eq!(active_end_ps(&series(vec![0, 0, 7])), 30);
    }
}
