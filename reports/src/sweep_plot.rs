//! Plots across runs: completion-time percentiles against incast fan-in (one line per series,
//! absolute or normalized to T*), and latency CDFs of several runs overlaid.
//!
//! The drawing functions are generic over plotters' [`DrawingBackend`], so one figure is drawn
//! to SVG ([`SVGBackend`]) and to PNG ([`BitMapBackend`]) by the same code. Text uses the
//! embedded font of [`crate::chart`], so the output does not depend on the host's fonts. Equal
//! inputs give byte-identical SVG.

use std::path::Path;

use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;

use crate::chart::{ensure_font, log_range, log_tick_label, log_ticks, FONT_FAMILY, TAB10};
use crate::error::ReportError;
use crate::schema::RunResult;

/// Width of the sweep and comparison figures, pixels.
pub const SWEEP_WIDTH_PX: u32 = 1000;
/// Height of the sweep and comparison figures, pixels.
pub const SWEEP_HEIGHT_PX: u32 = 620;

/// At most this many vertices per run in an overlaid CDF (nearest-rank quantiles at ranks
/// `⌈k·n/MAX⌉`, as in the run plot).
pub const MAX_OVERLAY_CDF_POINTS: usize = 2048;

/// One point of a fan-in line: the incast's sender count and its completion-time percentiles.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FanInPoint {
    /// Number of senders (the x value).
    pub fan_in: u32,
    /// Nearest-rank p50 message completion time, ps.
    pub p50_ps: Option<u64>,
    /// Nearest-rank p99, ps.
    pub p99_ps: Option<u64>,
    /// Nearest-rank p99.9, ps.
    pub p999_ps: Option<u64>,
    /// The ideal incast finish T*, ps (see [`crate::IdealCompletion`]); needed for the
    /// normalized plot.
    pub t_star_ps: Option<u64>,
    /// Half-widths of the 95 % confidence intervals of the p50, p99 and p99.9 above, ps,
    /// when the point is the mean over seeds ([`crate::spread::Estimate`]); drawn as error
    /// bars. `None`: one run.
    pub ci_ps: [Option<u64>; 3],
}

impl FanInPoint {
    /// The mean over `runs` (the same point at several seeds) of each percentile, with its
    /// 95 % confidence interval across them; T* is the runs' smallest. `None` for no run.
    pub fn mean_of(runs: &[FanInPoint]) -> Option<FanInPoint> {
        let first = runs.first()?;
        let est = |which: usize| {
            let xs: Vec<f64> = runs
                .iter()
                .filter_map(|p| percentile_of(p, which))
                .map(|v| v as f64)
                .collect();
            (xs.len() == runs.len())
                .then(|| crate::spread::Estimate::of(&xs))
                .flatten()
        };
        let [p50, p99, p999] = [0, 1, 2].map(est);
        let mean = |e: Option<crate::spread::Estimate>| e.map(|e| e.mean.round() as u64);
        let ci = |e: Option<crate::spread::Estimate>| {
            e.and_then(|e| e.half_width).map(|h| h.round() as u64)
        };
        Some(FanInPoint {
            fan_in: first.fan_in,
            p50_ps: mean(p50),
            p99_ps: mean(p99),
            p999_ps: mean(p999),
            t_star_ps: runs.iter().filter_map(|p| p.t_star_ps).min(),
            ci_ps: [ci(p50), ci(p99), ci(p999)],
        })
    }
}

/// One line group of the fan-in plot: the points of one combination of the other swept
/// settings (e.g. `beta=0.8`), drawn as three lines (p50, p99, p99.9).
#[derive(Debug, Clone, PartialEq)]
pub struct FanInSeries {
    /// Legend text for the series; empty when the sweep has only the fan-in axis.
    pub label: String,
    /// The points, in any order (they are drawn sorted by fan-in).
    pub points: Vec<FanInPoint>,
}

/// What the y axis of the fan-in plot shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FanInScale {
    /// Completion time in µs or ms (ms when the largest value is ≥ 10 ms), log scale.
    Absolute,
    /// Completion time divided by the point's T*, log scale; a dashed line marks 1.
    NormalizedToTStar,
}

/// The three percentiles drawn per series, with their dash pattern (dash, gap) in pixels
/// (`None` = solid); p99 is marked with circles, p99.9 with squares and p50 with nothing, so
/// the two tails stay apart where their lines overlap.
const PERCENTILES: [(&str, Option<(u32, u32)>); 3] = [
    ("p50", None),
    ("p99", Some((10, 5))),
    ("p99.9", Some((3, 3))),
];

/// One drawn line: series index, percentile index, vertices.
type Line = (usize, usize, Vec<(f64, f64)>);

fn plot_err<E: std::fmt::Display>(e: E) -> ReportError {
    ReportError::Plot(e.to_string())
}

fn percentile_of(p: &FanInPoint, which: usize) -> Option<u64> {
    match which {
        0 => p.p50_ps,
        1 => p.p99_ps,
        _ => p.p999_ps,
    }
}

/// The y values of one line: `(log2 fan-in, value)` with value in the plot's unit.
fn line_values(s: &FanInSeries, which: usize, scale: FanInScale, unit_ps: f64) -> Vec<(f64, f64)> {
    line_points(s, which, scale, unit_ps)
        .into_iter()
        .map(|(x, y, _)| (x, y))
        .collect()
}

/// [`line_values`] with each point's confidence half-width in the same unit (0: none).
fn line_points(
    s: &FanInSeries,
    which: usize,
    scale: FanInScale,
    unit_ps: f64,
) -> Vec<(f64, f64, f64)> {
    let mut pts: Vec<&FanInPoint> = s.points.iter().collect();
    pts.sort_by_key(|p| p.fan_in);
    pts.into_iter()
        .filter(|p| p.fan_in > 0)
        .filter_map(|p| {
            let v = percentile_of(p, which)? as f64;
            let per = match scale {
                FanInScale::Absolute => unit_ps,
                FanInScale::NormalizedToTStar => p.t_star_ps.filter(|&t| t > 0)? as f64,
            };
            let ci = p.ci_ps[which].map_or(0.0, |c| c as f64 / per);
            let y = v / per;
            (y > 0.0).then_some((f64::from(p.fan_in).log2(), y, ci))
        })
        .collect()
}

/// The absolute plot's T* line: at each fan-in the smallest T* of any series (a lower bound
/// for every series), in the plot's unit.
fn t_star_line(series: &[FanInSeries], unit_ps: f64) -> Vec<(f64, f64)> {
    let mut at: std::collections::BTreeMap<u32, u64> = std::collections::BTreeMap::new();
    for p in series.iter().flat_map(|s| &s.points) {
        if let (Some(t), true) = (p.t_star_ps, p.fan_in > 0) {
            let e = at.entry(p.fan_in).or_insert(t);
            *e = (*e).min(t);
        }
    }
    at.into_iter()
        .map(|(n, t)| (f64::from(n).log2(), t as f64 / unit_ps))
        .collect()
}

/// Picks µs or ms for an absolute plot whose largest value is `max_ps`: ms from 10 ms up.
/// Returns (picoseconds per unit, unit name).
pub fn time_unit(max_ps: f64) -> (f64, &'static str) {
    if max_ps >= 1e10 {
        (1e9, "ms")
    } else {
        (1e6, "µs")
    }
}

/// Draws the fan-in figure on `area`: x the fan-in on a log₂ axis (ticks labelled with the
/// sender count), y the p50/p99/p99.9 completion time on a log₁₀ axis, absolute or normalized
/// to T* (see [`FanInScale`]). Colour tells the series (Tableau 10) and the dash pattern the
/// percentile (p50 solid, p99 dashed, p99.9 dotted); with one unlabelled series colour tells
/// the percentile. A legend names every line.
///
/// # Errors
/// [`ReportError::Font`] if the embedded font cannot be registered, [`ReportError::Plot`] if
/// drawing fails.
pub fn draw_fan_in<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    title: &str,
    series: &[FanInSeries],
    scale: FanInScale,
) -> Result<(), ReportError> {
    ensure_font()?;
    area.fill(&WHITE).map_err(plot_err)?;
    let max_ps = series
        .iter()
        .flat_map(|s| &s.points)
        .flat_map(|p| [p.p50_ps, p.p99_ps, p.p999_ps])
        .flatten()
        .max()
        .unwrap_or(0) as f64;
    let (unit_ps, unit) = time_unit(max_ps);
    let lines: Vec<Line> = (0..series.len())
        .flat_map(|si| (0..3).map(move |pi| (si, pi)))
        .map(|(si, pi)| (si, pi, line_values(&series[si], pi, scale, unit_ps)))
        .collect();
    let ys = lines.iter().flat_map(|l| l.2.iter().map(|p| p.1));
    let (mut y_lo, mut y_hi) = ys.fold((f64::INFINITY, 0f64), |(lo, hi), y| (lo.min(y), hi.max(y)));
    if scale == FanInScale::NormalizedToTStar {
        // Keep the T* line (y = 1) in view.
        y_lo = y_lo.min(1.0);
        y_hi = y_hi.max(1.0);
    }
    if !(y_lo.is_finite() && y_hi > 0.0) {
        y_lo = 1.0;
        y_hi = 10.0;
    }
    let xs: Vec<f64> = lines.iter().flat_map(|l| l.2.iter().map(|p| p.0)).collect();
    let x_lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
    let x_hi = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let (x_lo, x_hi) = if x_lo.is_finite() {
        (x_lo - 0.25, x_hi + 0.25)
    } else {
        (0.0, 1.0)
    };
    // Room above the data for the legend in the upper left: a factor per legend line on the
    // log axis.
    let headroom = 2f64.powf(0.25 * (lines.len() + 1) as f64).max(2.0);
    let y_desc = match scale {
        FanInScale::Absolute => format!("message completion time ({unit}, log)"),
        FanInScale::NormalizedToTStar => "message completion time / T* (log)".to_string(),
    };
    let mut chart = ChartBuilder::on(area)
        .caption(title, (FONT_FAMILY, 20))
        .margin(16)
        .x_label_area_size(48)
        .y_label_area_size(72)
        .build_cartesian_2d(x_lo..x_hi, (y_lo / 1.5..y_hi * headroom).log_scale())
        .map_err(plot_err)?;
    let x_fmt = |v: &f64| format!("{}", 2f64.powf(*v).round());
    let y_fmt = |v: &f64| {
        if *v >= 100.0 {
            format!("{v:.0}")
        } else if *v >= 1.0 {
            format!("{v:.1}")
        } else {
            format!("{v:.2}")
        }
    };
    chart
        .configure_mesh()
        .x_desc("fan-in (senders, log₂)")
        .y_desc(y_desc)
        .x_labels(((x_hi - x_lo).ceil() as usize).clamp(2, 12))
        .y_labels(12)
        .x_label_formatter(&x_fmt)
        .y_label_formatter(&y_fmt)
        .label_style((FONT_FAMILY, 13))
        .axis_desc_style((FONT_FAMILY, 15))
        .light_line_style(WHITE.mix(0.0))
        .draw()
        .map_err(plot_err)?;
    // Minor gridlines of the log axis at 2…9 × each power of ten, fainter than the labelled
    // ones, so a value between decades reads off the axis.
    let (y_min, y_max) = (y_lo / 1.5, y_hi * headroom);
    for y in log_minor_ticks(y_min, y_max) {
        chart
            .draw_series(LineSeries::new(
                vec![(x_lo, y), (x_hi, y)],
                BLACK.mix(0.07).stroke_width(1),
            ))
            .map_err(plot_err)?;
    }
    let single = series.len() == 1 && series[0].label.is_empty();
    for (si, pi, pts) in lines {
        if pts.is_empty() {
            continue;
        }
        let color = if single {
            TAB10[pi]
        } else {
            TAB10[si % TAB10.len()]
        };
        let style = color.stroke_width(2);
        let (name, dash) = PERCENTILES[pi];
        let label = if single {
            name.to_string()
        } else {
            format!("{} {name}", series[si].label)
        };
        let anno = match dash {
            None => chart
                .draw_series(LineSeries::new(pts.clone(), style))
                .map_err(plot_err)?,
            Some((d, g)) => chart
                .draw_series(DashedLineSeries::new(pts.clone(), d, g, style))
                .map_err(plot_err)?,
        };
        anno.label(label).legend(move |(x, y)| match dash {
            None => DashedPathElement::new(vec![(x, y), (x + 24, y)], 24, 0, style),
            Some((d, g)) => DashedPathElement::new(vec![(x, y), (x + 24, y)], d, g, style),
        });
        match pi {
            0 => chart
                .draw_series(pts.iter().map(|&p| Circle::new(p, 2, color.filled())))
                .map_err(plot_err)?,
            1 => chart
                .draw_series(pts.iter().map(|&p| Circle::new(p, 4, color.filled())))
                .map_err(plot_err)?,
            _ => chart
                .draw_series(pts.iter().map(|&p| {
                    EmptyElement::at(p) + Rectangle::new([(-4, -4), (4, 4)], color.stroke_width(2))
                }))
                .map_err(plot_err)?,
        };
        // The seeds' 95 % confidence interval of the mean, where the point is one.
        let bars = line_points(&series[si], pi, scale, unit_ps);
        chart
            .draw_series(bars.into_iter().filter(|b| b.2 > 0.0).map(|(x, y, ci)| {
                PathElement::new(
                    vec![(x, (y - ci).max(y / 10.0)), (x, y + ci)],
                    color.stroke_width(1),
                )
            }))
            .map_err(plot_err)?;
    }
    if scale == FanInScale::Absolute {
        let t_star = t_star_line(series, unit_ps);
        if !t_star.is_empty() {
            chart
                .draw_series(DashedLineSeries::new(t_star, 8, 5, BLACK.stroke_width(1)))
                .map_err(plot_err)?
                .label("T* (the lowest of the series)")
                .legend(|(x, y)| DashedPathElement::new(vec![(x, y), (x + 24, y)], 8, 5, BLACK));
        }
    }
    if scale == FanInScale::NormalizedToTStar {
        chart
            .draw_series(DashedLineSeries::new(
                vec![(x_lo, 1.0), (x_hi, 1.0)],
                8,
                5,
                BLACK.stroke_width(1),
            ))
            .map_err(plot_err)?
            .label("T*")
            .legend(|(x, y)| DashedPathElement::new(vec![(x, y), (x + 24, y)], 8, 5, BLACK));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .label_font((FONT_FAMILY, 13))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(plot_err)?;
    area.present().map_err(plot_err)?;
    Ok(())
}

/// One run of an overlaid CDF: its legend text and its result.
#[derive(Debug, Clone, Copy)]
pub struct LabelledRun<'a> {
    /// Legend text.
    pub label: &'a str,
    /// The run.
    pub result: &'a RunResult,
}

/// Step-CDF vertices `(latency µs, fraction of all records)` of one run, reduced to at most
/// [`MAX_OVERLAY_CDF_POINTS`] ranks; zero latencies are left out (the x axis is logarithmic).
fn overlay_cdf(r: &RunResult) -> Vec<(f64, f64)> {
    let mut lat: Vec<u64> = r.messages.iter().filter_map(|m| m.latency_ps()).collect();
    lat.sort_unstable();
    let (n, total) = (lat.len(), r.messages.len());
    if n == 0 {
        return Vec::new();
    }
    let ranks: Vec<usize> = if n <= MAX_OVERLAY_CDF_POINTS {
        (1..=n).collect()
    } else {
        (1..=MAX_OVERLAY_CDF_POINTS)
            .map(|k| (k * n).div_ceil(MAX_OVERLAY_CDF_POINTS))
            .collect()
    };
    let mut pts = Vec::with_capacity(2 * ranks.len());
    let mut prev = 0.0;
    for rank in ranks {
        let x = lat[rank - 1] as f64 / 1e6;
        let frac = rank as f64 / total as f64;
        if x > 0.0 {
            pts.push((x, prev));
            pts.push((x, frac));
        }
        prev = frac;
    }
    pts
}

/// What an overlay of runs shows ([`draw_overlay`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OverlayView {
    /// The CDF: the fraction of messages done by each time, on a linear y axis.
    Cdf,
    /// The tail: the fraction of messages slower than each time (1 − CDF) on a log y axis,
    /// down to one message of the largest run; gridlines at p99, p99.9 and p99.99.
    Ccdf,
}

/// Line patterns (dash, gap in pixels; `None` solid) that tell runs apart besides their
/// colour, where their tails run together.
const RUN_DASHES: [Option<(u32, u32)>; 4] = [None, Some((10, 5)), Some((3, 3)), Some((14, 4))];

/// Draws the completion-time CDFs of `runs` on one chart, or their tails (`view`): x the
/// message completion time in µs on a log axis, y the fraction of all messages of each run
/// done by then (a run with undelivered messages ends below 1) or slower than that; one
/// colour and one line pattern per run, with a legend.
///
/// # Errors
/// [`ReportError::Font`] if the embedded font cannot be registered, [`ReportError::Plot`] if
/// drawing fails.
pub fn draw_overlay<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    title: &str,
    runs: &[LabelledRun<'_>],
    view: OverlayView,
) -> Result<(), ReportError> {
    ensure_font()?;
    area.fill(&WHITE).map_err(plot_err)?;
    let mut curves: Vec<Vec<(f64, f64)>> = runs.iter().map(|r| overlay_cdf(r.result)).collect();
    let most = runs
        .iter()
        .map(|r| r.result.messages.len())
        .max()
        .unwrap_or(1)
        .max(1);
    let floor = 0.5 / most as f64;
    if view == OverlayView::Ccdf {
        for c in &mut curves {
            *c = c.iter().map(|&(x, f)| (x, (1.0 - f).max(floor))).collect();
        }
    }
    let xs = curves.iter().flatten().map(|p| p.0);
    let (x_lo, x_hi) = xs.fold((f64::INFINITY, 0f64), |(lo, hi), x| (lo.min(x), hi.max(x)));
    let x_range = if x_lo.is_finite() && x_hi > 0.0 {
        log_range(x_lo, x_hi)
    } else {
        1.0..10.0
    };
    // 1-2-5 ticks per decade (powers of ten over wide ranges), as on a run's own CDF, so
    // labels never run into each other.
    let ticks = log_ticks(&x_range);
    let x_fmt = |v: &f64| log_tick_label(*v);
    let mut builder = ChartBuilder::on(area);
    builder
        .caption(title, (FONT_FAMILY, 20))
        .margin(16)
        // Room for the last tick label, which is centred on the right edge.
        .margin_right(36)
        .x_label_area_size(48)
        .y_label_area_size(60);
    let x_desc = "message completion time from intended send (µs, log)";
    match view {
        OverlayView::Cdf => {
            let mut chart = builder
                .build_cartesian_2d(x_range.log_scale().with_key_points(ticks), 0f64..1.0)
                .map_err(plot_err)?;
            chart
                .configure_mesh()
                .x_desc(x_desc)
                .y_desc("fraction of messages")
                .x_label_formatter(&x_fmt)
                .y_label_formatter(&|v: &f64| format!("{v:.1}"))
                .label_style((FONT_FAMILY, 13))
                .axis_desc_style((FONT_FAMILY, 15))
                .light_line_style(WHITE.mix(0.0))
                .draw()
                .map_err(plot_err)?;
            draw_runs(&mut chart, runs, curves)?;
            finish_legend(&mut chart, SeriesLabelPosition::UpperLeft)?;
        }
        OverlayView::Ccdf => {
            let mut chart = builder
                .build_cartesian_2d(
                    x_range.log_scale().with_key_points(ticks),
                    (floor..1.0).log_scale(),
                )
                .map_err(plot_err)?;
            chart
                .configure_mesh()
                .x_desc(x_desc)
                .y_desc("fraction of messages slower (1 − CDF, log)")
                .x_label_formatter(&x_fmt)
                .y_label_formatter(&|v: &f64| format!("{v:e}"))
                .label_style((FONT_FAMILY, 13))
                .axis_desc_style((FONT_FAMILY, 15))
                .light_line_style(WHITE.mix(0.0))
                .draw()
                .map_err(plot_err)?;
            // p99, p99.9 and p99.99, where the largest run has the messages to show them.
            for (q, name) in [(1e-2, "p99"), (1e-3, "p99.9"), (1e-4, "p99.99")] {
                if q >= floor * 2.0 {
                    let (lo, hi) = (chart.x_range().start, chart.x_range().end);
                    chart
                        .draw_series(DashedLineSeries::new(
                            vec![(lo, q), (hi, q)],
                            2,
                            4,
                            BLACK.mix(0.5).stroke_width(1),
                        ))
                        .map_err(plot_err)?;
                    chart
                        .draw_series(std::iter::once(Text::new(
                            name.to_string(),
                            (lo, q),
                            (FONT_FAMILY, 12),
                        )))
                        .map_err(plot_err)?;
                }
            }
            draw_runs(&mut chart, runs, curves)?;
            finish_legend(&mut chart, SeriesLabelPosition::UpperRight)?;
        }
    }
    area.present().map_err(plot_err)?;
    Ok(())
}

/// Each run's curve, in its colour and line pattern, with its legend entry.
fn draw_runs<'a, DB, X, Y>(
    chart: &mut ChartContext<'a, DB, Cartesian2d<X, Y>>,
    runs: &[LabelledRun<'_>],
    curves: Vec<Vec<(f64, f64)>>,
) -> Result<(), ReportError>
where
    DB: DrawingBackend + 'a,
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    for (i, (run, pts)) in runs.iter().zip(curves).enumerate() {
        let style = TAB10[i % TAB10.len()].stroke_width(2);
        let label = if pts.is_empty() {
            format!("{} (no delivered message)", run.label)
        } else {
            run.label.to_string()
        };
        let dash = RUN_DASHES[i % RUN_DASHES.len()];
        let anno = match dash {
            None => chart.draw_series(LineSeries::new(pts, style)),
            Some((d, g)) => chart.draw_series(DashedLineSeries::new(pts, d, g, style)),
        }
        .map_err(plot_err)?;
        anno.label(label).legend(move |(x, y)| {
            let (d, g) = dash.unwrap_or((24, 0));
            DashedPathElement::new(vec![(x, y), (x + 24, y)], d, g, style)
        });
    }
    Ok(())
}

/// The legend, boxed, at `position`.
fn finish_legend<'a, DB, X, Y>(
    chart: &mut ChartContext<'a, DB, Cartesian2d<X, Y>>,
    position: SeriesLabelPosition,
) -> Result<(), ReportError>
where
    DB: DrawingBackend + 'a,
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    chart
        .configure_series_labels()
        .position(position)
        .label_font((FONT_FAMILY, 13))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(plot_err)
}

/// Renders a figure drawn by `draw` ([`draw_fan_in`] or [`draw_overlay`] in a closure) to
/// an SVG document of [`SWEEP_WIDTH_PX`] × [`SWEEP_HEIGHT_PX`].
///
/// # Errors
/// Whatever `draw` returns.
pub fn render_svg(
    draw: impl FnOnce(&DrawingArea<SVGBackend<'_>, Shift>) -> Result<(), ReportError>,
) -> Result<String, ReportError> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (SWEEP_WIDTH_PX, SWEEP_HEIGHT_PX))
            .into_drawing_area();
        draw(&root)?;
    }
    Ok(svg)
}

/// Renders a figure drawn by `draw` to a PNG file at `path` ([`SWEEP_WIDTH_PX`] ×
/// [`SWEEP_HEIGHT_PX`], RGB). The image is written to [`crate::files::temp_sibling`] first and
/// then renamed, so an interrupted write never leaves a truncated `path`.
///
/// # Errors
/// Whatever `draw` returns; [`ReportError::Plot`] if encoding fails; [`ReportError::Io`] if
/// the rename fails.
pub fn render_png(
    path: &Path,
    draw: impl FnOnce(
        &DrawingArea<crate::TextOnBitmap<BitMapBackend<'_>>, Shift>,
    ) -> Result<(), ReportError>,
) -> Result<(), ReportError> {
    let tmp = crate::files::temp_sibling(path);
    let drawn = {
        let bitmap = BitMapBackend::new(&tmp, (SWEEP_WIDTH_PX, SWEEP_HEIGHT_PX));
        let root = crate::TextOnBitmap::new(bitmap).into_drawing_area();
        draw(&root)
    };
    if let Err(e) = drawn {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    crate::files::commit_temp(&tmp, path)
}

/// The minor ticks of a log axis from `lo` to `hi`: 2…9 × each power of ten between them.
fn log_minor_ticks(lo: f64, hi: f64) -> Vec<f64> {
    if !(lo > 0.0 && hi > lo && hi.is_finite()) {
        return Vec::new();
    }
    let (d0, d1) = (lo.log10().floor() as i32, hi.log10().ceil() as i32);
    (d0..=d1)
        .flat_map(|d| (2..=9).map(move |m| f64::from(m) * 10f64.powi(d)))
        .filter(|&v| v > lo && v < hi)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_minor_ticks_are_two_to_nine_times_each_power_of_ten_inside_the_range() {
        assert_eq!(
            log_minor_ticks(15.0, 300.0),
            vec![20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 200.0]
        );
        assert!(log_minor_ticks(0.0, 10.0).is_empty());
        assert!(log_minor_ticks(10.0, 10.0).is_empty());
    }

    fn pt(fan_in: u32, p50: u64, t_star: u64) -> FanInPoint {
        FanInPoint {
            fan_in,
            p50_ps: Some(p50),
            p99_ps: Some(2 * p50),
            p999_ps: Some(3 * p50),
            t_star_ps: Some(t_star),
            ci_ps: [None; 3],
        }
    }

    #[test]
    fn lines_are_sorted_log2_and_normalized() {
        let s = FanInSeries {
            label: String::new(),
            points: vec![pt(8, 4_000_000, 8_000_000), pt(2, 1_000_000, 2_000_000)],
        };
        // Absolute in µs: p50 of fan-in 2 is 1 µs at x = log2(2) = 1; fan-in 8 is 4 µs at x = 3.
        assert_eq!(
            line_values(&s, 0, FanInScale::Absolute, 1e6),
            vec![(1.0, 1.0), (3.0, 4.0)]
        );
        // p99.9 = 3·p50 over T* = 2·p50 gives 1.5 at both points.
        assert_eq!(
            line_values(&s, 2, FanInScale::NormalizedToTStar, 1e6),
            vec![(1.0, 1.5), (3.0, 1.5)]
        );
    }

    #[test]
    fn unit_switches_to_ms_at_10ms() {
        assert_eq!(time_unit(9_999_999_999.0).1, "µs");
        assert_eq!(time_unit(1e10), (1e9, "ms"));
    }

    #[test]
    fn fan_in_svg_has_legend_and_units() {
        let series = vec![
            FanInSeries {
                label: "beta=0.5".into(),
                points: vec![pt(2, 1_000_000, 2_000_000), pt(4, 2_000_000, 4_000_000)],
            },
            FanInSeries {
                label: "beta=0.8".into(),
                points: vec![pt(2, 1_100_000, 2_000_000), pt(4, 2_100_000, 4_000_000)],
            },
        ];
        let svg = render_svg(|a| draw_fan_in(a, "t", &series, FanInScale::Absolute)).unwrap();
        assert!(svg.contains("beta=0.8 p99.9"));
        assert!(svg.contains("µs, log"));
        let again = render_svg(|a| draw_fan_in(a, "t", &series, FanInScale::Absolute)).unwrap();
        assert_eq!(svg, again);
        let norm =
            render_svg(|a| draw_fan_in(a, "t", &series, FanInScale::NormalizedToTStar)).unwrap();
        assert!(norm.contains("/ T*"));
    }

    #[test]
    fn png_is_written_atomically() {
        let dir = std::env::temp_dir().join(format!("xrdma-sweep-plot-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("f.png");
        let series = vec![FanInSeries {
            label: String::new(),
            points: vec![pt(2, 1_000_000, 2_000_000), pt(4, 2_000_000, 4_000_000)],
        }];
        render_png(&path, |a| {
            draw_fan_in(a, "t", &series, FanInScale::Absolute)
        })
        .unwrap();
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
        assert!(!dir.join("f.png.tmp.png").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
