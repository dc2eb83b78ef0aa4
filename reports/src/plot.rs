//! Latency plots of a run: the completion-time CDF on a log axis, each sender's completion
//! times, and the two side by side (`latency.svg`).
//!
//! Every plot is a pure function of the [`RunResult`] (plots can be redrawn from saved
//! results without rerunning): equal inputs give byte-identical SVG and PNG. Styling and
//! rendering are shared with the other figures through [`crate::chart`].

use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;

use crate::chart::{
    dashed_legend, draw_legend, log_range, log_tick_label, log_ticks, nice_upper, plot_err,
    ps_to_us, render_svg, styled_mesh, tick_decimals, Figure, CAPTION_PX, FONT_FAMILY,
    PERCENTILE_COLOR, TAB10, TITLE_PX, T_STAR_COLOR, UNDELIVERED_COLOR,
};
use crate::error::ReportError;
use crate::percentile::nearest_rank;
use crate::scatter::PerSenderPoints;
use crate::schema::RunResult;
use crate::summary::{format_bytes, format_us};

/// Width of the two-panel latency figure (`latency.svg`), pixels.
pub const WIDTH_PX: u32 = 1400;
/// Height of the two-panel latency figure, pixels.
pub const HEIGHT_PX: u32 = 620;
/// Size of a one-panel figure (`latency-cdf`, `completion`, and the time-series figures),
/// pixels.
pub const PANEL_SIZE_PX: (u32, u32) = (1000, 620);

/// At most this many points are drawn on the CDF; larger sample sets are reduced to the
/// nearest-rank quantiles at ranks `⌈k·n/MAX_CDF_POINTS⌉`, k = 1..MAX_CDF_POINTS.
pub const MAX_CDF_POINTS: usize = 4096;
pub use crate::scatter::MAX_SCATTER_POINTS;

/// The percentiles marked on the CDF, with their legend names and colours.
const MARKED: [(f64, &str, RGBColor); 3] = [
    (50.0, "p50", TAB10[2]),
    (99.0, "p99", TAB10[1]),
    (99.9, "p99.9", TAB10[4]),
];

/// Figure title: scenario, workload, backend and seed.
pub(crate) fn run_title(r: &RunResult) -> String {
    format!(
        "{} — {} {}:1, {} per sender, {} message(s) each ({}, seed {})",
        r.scenario.name,
        r.workload.kind,
        r.workload.senders,
        format_bytes(r.workload.bytes_per_sender),
        r.workload.messages_per_sender,
        r.scenario.backend,
        r.scenario.seed
    )
}

/// Colour of message `index` among `n_indices` per-sender positions: the Tableau 10 palette
/// when `n_indices ≤ 10`, otherwise a linear ramp from the first to the second palette colour.
fn index_color(index: u32, n_indices: u32) -> RGBColor {
    if n_indices <= TAB10.len() as u32 {
        return TAB10[index as usize % TAB10.len()];
    }
    let t = f64::from(index) / f64::from(n_indices.saturating_sub(1).max(1));
    let lerp = |a: u8, b: u8| (f64::from(a) + (f64::from(b) - f64::from(a)) * t).round() as u8;
    let (a, b) = (TAB10[0], TAB10[1]);
    RGBColor(lerp(a.0, b.0), lerp(a.1, b.1), lerp(a.2, b.2))
}

/// Step-CDF vertices `(latency µs, fraction)`. The fraction's denominator is the number of
/// *all* message records, so with undelivered messages the CDF plateaus below 1. The first
/// vertex is at fraction 0 at the smallest latency (a log axis has no 0).
fn cdf_points(sorted_ps: &[u64], total: usize) -> Vec<(f64, f64)> {
    let n = sorted_ps.len();
    if n == 0 || total == 0 {
        return Vec::new();
    }
    let ranks: Vec<usize> = if n <= MAX_CDF_POINTS {
        (1..=n).collect()
    } else {
        (1..=MAX_CDF_POINTS)
            .map(|k| (k * n).div_ceil(MAX_CDF_POINTS))
            .collect()
    };
    let mut pts = Vec::with_capacity(2 * ranks.len());
    let mut prev_frac = 0.0;
    for r in ranks {
        let x = ps_to_us(sorted_ps[r - 1]);
        let frac = r as f64 / total as f64;
        pts.push((x, prev_frac));
        pts.push((x, frac));
        prev_frac = frac;
    }
    pts
}

/// The completion-time CDF of a run (`latency-cdf.svg/.png`), see [`draw_cdf`].
pub struct LatencyCdf<'a>(pub &'a RunResult);

impl Figure for LatencyCdf<'_> {
    fn size(&self) -> (u32, u32) {
        PANEL_SIZE_PX
    }
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), ReportError> {
        let body = root
            .titled(&run_title(self.0), (FONT_FAMILY, TITLE_PX))
            .map_err(plot_err)?;
        draw_cdf(self.0, &body)
    }
}

/// Each sender's completion times (`completion.svg/.png`), see [`draw_per_sender`].
pub struct CompletionPerSender<'a>(pub &'a RunResult);

impl Figure for CompletionPerSender<'_> {
    fn size(&self) -> (u32, u32) {
        PANEL_SIZE_PX
    }
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), ReportError> {
        let body = root
            .titled(&run_title(self.0), (FONT_FAMILY, TITLE_PX))
            .map_err(plot_err)?;
        draw_per_sender(self.0, &body)
    }
}

/// The CDF and the per-sender panel side by side (`latency.svg`).
pub struct LatencyOverview<'a>(pub &'a RunResult);

impl Figure for LatencyOverview<'_> {
    fn size(&self) -> (u32, u32) {
        (WIDTH_PX, HEIGHT_PX)
    }
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), ReportError> {
        let body = root
            .titled(&run_title(self.0), (FONT_FAMILY, TITLE_PX))
            .map_err(plot_err)?;
        let (left, right) = body.split_horizontally(WIDTH_PX / 2);
        draw_cdf(self.0, &left)?;
        draw_per_sender(self.0, &right)
    }
}

/// Renders the two-panel latency figure of `r` ([`LatencyOverview`]: the CDF of
/// [`draw_cdf`] left, the per-sender panel of [`draw_per_sender`] right, [`WIDTH_PX`] ×
/// [`HEIGHT_PX`]) to an SVG document and returns it.
///
/// # Errors
/// [`ReportError::Font`] if the embedded font cannot be registered, [`ReportError::Plot`] if
/// plotters fails to draw.
pub fn latency_svg_string(r: &RunResult) -> Result<String, ReportError> {
    render_svg(&LatencyOverview(r))
}

/// Renders the latency figure of `r` (see [`latency_svg_string`]) and writes it to `path`.
///
/// # Errors
/// As [`latency_svg_string`], plus [`ReportError::Io`] if the file cannot be written.
pub fn latency_svg(r: &RunResult, path: &Path) -> Result<(), ReportError> {
    let svg = latency_svg_string(r)?;
    crate::files::write_atomic(path, svg.as_bytes())
}

/// What the CDF and its tail ([`crate::ccdf`]) both draw from: the delivered latencies in
/// ascending order, the message count, how many did not finish, T* (µs) and the log x range
/// around the data and T*.
pub(crate) struct Latencies {
    /// Delivered latencies, ps, ascending.
    pub sorted: Vec<u64>,
    /// All message records.
    pub total: usize,
    /// Records without a latency.
    pub undelivered: usize,
    /// T*, µs, when the run has one.
    pub t_star_us: Option<f64>,
    /// The x axis: 1-2-5 bounds around the latencies and T* ([`log_range`]).
    pub x_range: std::ops::Range<f64>,
}

impl Latencies {
    /// The latencies of `r`.
    pub(crate) fn of(r: &RunResult) -> Self {
        let mut sorted: Vec<u64> = r.messages.iter().filter_map(|m| m.latency_ps()).collect();
        sorted.sort_unstable();
        let total = r.messages.len();
        let t_star_us = r.t_star_bound().map(|i| ps_to_us(i.t_star_ps));
        let lo = sorted.first().map(|&v| ps_to_us(v).max(1e-3));
        let hi = sorted.last().map(|&v| ps_to_us(v).max(1e-3));
        let (lo, hi) = match (lo, hi, t_star_us) {
            (Some(a), Some(b), Some(t)) => (a.min(t), b.max(t)),
            (Some(a), Some(b), None) => (a, b),
            (None, _, Some(t)) => (t, t),
            _ => (1.0, 1.0),
        };
        Latencies {
            undelivered: total - sorted.len(),
            sorted,
            total,
            t_star_us,
            x_range: log_range(lo, hi),
        }
    }
}

/// Step CDF of message completion time (latency from the intended send time) on `area`.
///
/// x: latency in µs on a log axis (1-2-5 bounds around the data and T*); y: fraction 0–1 of
/// *all* messages. Messages that did not finish have no latency: the curve then ends below 1,
/// a dotted line marks where, and the caption gives their number. Dashed verticals mark the
/// nearest-rank p50, p99 and p99.9 of the delivered latencies (as in the summary table) with
/// a dot where each meets the curve, and T* (red) when the run has one ([`RunResult::t_star_bound`]).
///
/// # Errors
/// [`ReportError::Plot`] if plotters fails.
pub fn draw_cdf<DB: DrawingBackend>(
    r: &RunResult,
    area: &DrawingArea<DB, Shift>,
) -> Result<(), ReportError> {
    let Latencies {
        sorted: lat,
        total,
        undelivered,
        t_star_us,
        x_range,
    } = Latencies::of(r);
    let caption = if undelivered > 0 {
        format!(
            "Completion time CDF: {} of {} delivered, {} did not finish (no latency)",
            lat.len(),
            total,
            undelivered
        )
    } else {
        format!("Completion time CDF ({total} messages)")
    };
    let (x0, x1) = (x_range.start, x_range.end);
    let ticks = log_ticks(&x_range);
    let mut chart = ChartBuilder::on(area)
        .caption(caption, (FONT_FAMILY, CAPTION_PX))
        .margin(14)
        .margin_right(30)
        .x_label_area_size(48)
        .y_label_area_size(60)
        .build_cartesian_2d(x_range.log_scale().with_key_points(ticks), 0f64..1.0)
        .map_err(plot_err)?;
    let x_fmt = |v: &f64| log_tick_label(*v);
    let y_fmt = |v: &f64| format!("{v:.1}");
    styled_mesh(&mut chart)
        .x_desc("message completion time from intended send (µs, log scale)")
        .y_desc("fraction of all messages")
        .x_label_formatter(&x_fmt)
        .y_label_formatter(&y_fmt)
        .draw()
        .map_err(plot_err)?;
    let pts = cdf_points(&lat, total);
    if pts.is_empty() {
        let at = (x0 * (x1 / x0).powf(0.3), 0.5);
        chart
            .draw_series(std::iter::once(Text::new(
                format!("no delivered messages ({total} did not finish)"),
                at,
                (FONT_FAMILY, CAPTION_PX),
            )))
            .map_err(plot_err)?;
    } else {
        chart
            .draw_series(LineSeries::new(pts, TAB10[0].stroke_width(2)))
            .map_err(plot_err)?
            .label("delivered messages")
            .legend(crate::chart::line_legend(TAB10[0], 2));
        for (p, name, color) in MARKED {
            let Some(v) = nearest_rank(&lat, p) else {
                continue;
            };
            // The fraction of all messages at or below the percentile's sample.
            let rank = lat.partition_point(|&x| x <= v);
            let frac = rank as f64 / total as f64;
            let x = ps_to_us(v);
            chart
                .draw_series(DashedLineSeries::new(
                    vec![(x, 0.0), (x, 1.0)],
                    4,
                    4,
                    color.stroke_width(1),
                ))
                .map_err(plot_err)?
                .label(format!("{name} = {} µs", format_us(v)))
                .legend(dashed_legend(color));
            chart
                .draw_series(std::iter::once(Circle::new((x, frac), 5, color.filled())))
                .map_err(plot_err)?;
        }
        if undelivered > 0 {
            let f = lat.len() as f64 / total as f64;
            chart
                .draw_series(DashedLineSeries::new(
                    vec![(x0, f), (x1, f)],
                    2,
                    4,
                    PERCENTILE_COLOR.stroke_width(1),
                ))
                .map_err(plot_err)?
                .label(format!("{undelivered} unfinished: CDF ends at {f:.3}"))
                .legend(dashed_legend(PERCENTILE_COLOR));
        }
    }
    if let (Some(t), Some(i)) = (t_star_us, r.t_star_bound()) {
        chart
            .draw_series(DashedLineSeries::new(
                vec![(t, 0.0), (t, 1.0)],
                8,
                5,
                T_STAR_COLOR.stroke_width(2),
            ))
            .map_err(plot_err)?
            .label(format!("T* = {} µs", format_us(i.t_star_ps)))
            .legend(dashed_legend(T_STAR_COLOR));
    }
    draw_legend(&mut chart, SeriesLabelPosition::UpperLeft)
}

/// Each message's completion time measured from the first intended send time of the workload
/// (the frame T* is defined in) on `area`: x the sender host index, y in µs, one colour per
/// message index in the sender's sequence with a legend, messages that did not finish as
/// black crosses along the top edge, and a dashed horizontal line at T* when `r.ideal` is
/// set. Above [`MAX_SCATTER_POINTS`] messages every k-th is drawn and the caption says so.
///
/// # Errors
/// [`ReportError::Plot`] if plotters fails.
pub fn draw_per_sender<DB: DrawingBackend>(
    r: &RunResult,
    area: &DrawingArea<DB, Shift>,
) -> Result<(), ReportError> {
    let msgs = &r.messages;
    let plan = PerSenderPoints::of(msgs);
    let (start, stride, shown) = (plan.start_ps, plan.stride, &plan.shown);
    let t_star_us = r.t_star_bound().map(|i| ps_to_us(i.t_star_ps));
    let data_max = shown
        .iter()
        .filter_map(|m| m.completed_ps)
        .map(|c| ps_to_us(c.saturating_sub(start)))
        .fold(0.0, f64::max);
    // Headroom above the highest point, so the legend (top right) does not cover the tail.
    let y_max = nice_upper(data_max.max(t_star_us.unwrap_or(0.0)) * 1.15);
    let (s_min, s_max) = match (
        msgs.iter().map(|m| m.sender).min(),
        msgs.iter().map(|m| m.sender).max(),
    ) {
        (Some(a), Some(b)) => (f64::from(a), f64::from(b)),
        _ => (0.0, 1.0),
    };
    let pad = ((s_max - s_min) * 0.02).max(0.5);
    let caption = if stride > 1 {
        format!("Completion time per sender (1 in {stride} messages shown)")
    } else {
        "Completion time per sender".to_string()
    };
    let mut chart = ChartBuilder::on(area)
        .caption(caption, (FONT_FAMILY, CAPTION_PX))
        .margin(12)
        .x_label_area_size(48)
        .y_label_area_size(70)
        .build_cartesian_2d((s_min - pad)..(s_max + pad), 0f64..y_max)
        .map_err(plot_err)?;
    let decimals = tick_decimals(y_max);
    let y_fmt = move |v: &f64| format!("{v:.decimals$}");
    // Host indices are whole numbers: ticks between them get no label (a `{:.0}` of 1.5
    // would print a second "2").
    let x_fmt = |v: &f64| {
        if (v - v.round()).abs() < 1e-9 {
            format!("{v:.0}")
        } else {
            String::new()
        }
    };
    styled_mesh(&mut chart)
        .x_desc("sender host index")
        .y_desc("completion time since workload start (µs)")
        .x_label_formatter(&x_fmt)
        .y_label_formatter(&y_fmt)
        .draw()
        .map_err(plot_err)?;

    // Ascending message index, so later indices lie on top; one call per run of indices.
    let n_indices = plan.n_indices;
    for s in &plan.series {
        let pts = plan.of_series(s).iter().map(|p| {
            let at = (f64::from(p.sender), ps_to_us(p.since_start_ps));
            Circle::new(at, 3, index_color(p.index, n_indices).filled())
        });
        let series = chart.draw_series(pts).map_err(plot_err)?;
        if let Some(index) = s.label {
            let color = index_color(index, n_indices);
            series
                .label(format!("message {index}"))
                .legend(move |(x, y)| Circle::new((x + 10, y), 4, color.filled()));
        }
    }
    let lost: Vec<(f64, f64)> = shown
        .iter()
        .filter(|m| m.completed_ps.is_none())
        .map(|m| (f64::from(m.sender), y_max))
        .collect();
    if !lost.is_empty() {
        chart
            .draw_series(
                lost.into_iter()
                    .map(|p| Cross::new(p, 5, UNDELIVERED_COLOR.stroke_width(2))),
            )
            .map_err(plot_err)?
            .label("undelivered")
            .legend(|(x, y)| Cross::new((x + 10, y), 5, UNDELIVERED_COLOR.stroke_width(2)));
    }
    if let Some(t) = t_star_us {
        let (x0, x1) = (s_min - pad, s_max + pad);
        chart
            .draw_series(DashedLineSeries::new(
                vec![(x0, t), (x1, t)],
                8,
                5,
                T_STAR_COLOR.stroke_width(2),
            ))
            .map_err(plot_err)?
            .label(format!(
                "T* = {} µs",
                format_us(r.t_star_bound().map_or(0, |i| i.t_star_ps))
            ))
            .legend(dashed_legend(T_STAR_COLOR));
    }
    // The legend goes in the right 30 % of the panel; undelivered crosses sit on the top edge.
    let x_cut = s_min + 0.7 * (s_max - s_min);
    let right: Vec<f64> = shown
        .iter()
        .filter(|m| f64::from(m.sender) >= x_cut)
        .map(|m| {
            m.completed_ps
                .map_or(y_max, |c| ps_to_us(c.saturating_sub(start)))
        })
        .collect();
    let position = legend_band(&right, t_star_us, y_max);
    draw_legend(&mut chart, position)
}

/// Where the per-sender panel's legend goes: the band of the right-hand side (bottom, middle
/// or top quarter of the height `y_max`) that covers the fewest of the points `ys` drawn
/// there; a band the T* line (`t_star`) crosses counts as covering them all. Ties go to the
/// lower band.
fn legend_band(ys: &[f64], t_star: Option<f64>, y_max: f64) -> SeriesLabelPosition {
    let covered = |lo: f64, hi: f64| {
        let band = lo * y_max..=hi * y_max;
        let points = ys.iter().filter(|y| band.contains(y)).count();
        if t_star.is_some_and(|t| band.contains(&t)) {
            points + ys.len() + 1
        } else {
            points
        }
    };
    [
        (SeriesLabelPosition::LowerRight, 0.0, 0.25),
        (SeriesLabelPosition::MiddleRight, 0.375, 0.625),
        (SeriesLabelPosition::UpperRight, 0.75, 1.0),
    ]
    .into_iter()
    .min_by_key(|&(_, lo, hi)| covered(lo, hi))
    .map_or(SeriesLabelPosition::LowerRight, |(p, _, _)| p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_per_sender_legend_goes_where_neither_points_nor_t_star_are() {
        // The main job: most points low, the last message and T* near the top; the legend
        // used to sit on the top band, over both.
        let mut ys = vec![1_000.0; 300];
        ys.extend(vec![29_500.0; 75]);
        let pos = legend_band(&ys, Some(29_000.0), 35_000.0);
        assert!(matches!(pos, SeriesLabelPosition::MiddleRight), "{pos:?}");
        // Points everywhere but the top, and no T*: the top.
        let ys: Vec<f64> = (0..70).map(|i| f64::from(i) * 350.0).collect();
        assert!(matches!(
            legend_band(&ys, None, 35_000.0),
            SeriesLabelPosition::UpperRight
        ));
        // Nothing drawn: the bottom.
        assert!(matches!(
            legend_band(&[], None, 1.0),
            SeriesLabelPosition::LowerRight
        ));
    }

    #[test]
    fn cdf_steps_end_at_delivered_fraction() {
        // 2 delivered (1 µs, 3 µs) of 4 messages: vertices (1,0),(1,0.25),(3,0.25),(3,0.5).
        let pts = cdf_points(&[1_000_000, 3_000_000], 4);
        assert_eq!(pts, vec![(1.0, 0.0), (1.0, 0.25), (3.0, 0.25), (3.0, 0.5)]);
    }

    #[test]
    fn cdf_is_reduced_to_quantiles() {
        // n = 2·MAX: ranks ⌈k·2M/M⌉ = 2k, so the last vertex is rank n at fraction 1.
        let n = 2 * MAX_CDF_POINTS;
        let s: Vec<u64> = (1..=n as u64).collect();
        let pts = cdf_points(&s, n);
        assert_eq!(pts.len(), 2 * MAX_CDF_POINTS);
        assert_eq!(pts[1], (2.0 / 1e6, 2.0 / n as f64));
        assert_eq!(pts[pts.len() - 1], (n as f64 / 1e6, 1.0));
    }

    #[test]
    fn palette_and_ramp() {
        assert_eq!(index_color(3, 4), TAB10[3]);
        // Ramp over 11 indices: index 0 is the first colour, index 10 the second.
        assert_eq!(index_color(0, 11), TAB10[0]);
        assert_eq!(index_color(10, 11), TAB10[1]);
    }
}
