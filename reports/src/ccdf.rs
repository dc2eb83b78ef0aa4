//! The tail of a run's completion times: the complementary CDF (1 − CDF, the fraction of all
//! messages slower than x) on log–log axes (`latency-ccdf.svg/.png`), the standard view of a
//! tail. Each decade down the y axis is a "nine": the curve crosses 10⁻² at p99, 10⁻³ at
//! p99.9 and 10⁻⁴ at p99.99, and dashed gridlines mark those three where the run has enough
//! messages to show them (p99.99 needs 10 000).
//!
//! A pure function of the [`RunResult`], like every plot: equal inputs give byte-identical
//! SVG and PNG.

use plotters::coord::Shift;
use plotters::prelude::*;

use crate::chart::{
    dashed_legend, draw_legend, log_tick_label, log_ticks, plot_err, ps_to_us, styled_mesh, Figure,
    CAPTION_PX, FONT_FAMILY, PERCENTILE_COLOR, TAB10, TITLE_PX, T_STAR_COLOR,
};
use crate::error::ReportError;
use crate::percentile::nearest_rank;
use crate::plot::{run_title, Latencies, PANEL_SIZE_PX};
use crate::schema::RunResult;
use crate::summary::format_us;

/// The tail percentiles marked on the CCDF: the 1 − p/100 gridline, its legend name, colour.
const TAIL: [(f64, &str, RGBColor); 3] = [
    (99.0, "p99", TAB10[1]),
    (99.9, "p99.9", TAB10[4]),
    (99.99, "p99.99", TAB10[3]),
];

/// Samples drawn at most from the body of the distribution (evenly spaced ranks); the slowest
/// [`TAIL_POINTS`] are drawn each, so the tail keeps its every step.
const BODY_POINTS: usize = 2048;
/// The slowest samples drawn each.
const TAIL_POINTS: usize = 2048;
/// Up to this many delivered messages, each is also marked by a dot at the fraction of all
/// messages at or slower than it (a single message has no step to draw).
const FEW_MARKED: usize = 32;

/// The completion-time CCDF of a run (`latency-ccdf.svg/.png`), see [`draw_ccdf`].
pub struct LatencyCcdf<'a>(pub &'a RunResult);

impl Figure for LatencyCcdf<'_> {
    fn size(&self) -> (u32, u32) {
        PANEL_SIZE_PX
    }
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), ReportError> {
        let body = root
            .titled(&run_title(self.0), (FONT_FAMILY, TITLE_PX))
            .map_err(plot_err)?;
        draw_ccdf(self.0, &body)
    }
}

/// Step-CCDF vertices `(latency µs, fraction of all messages slower)` of ascending
/// `sorted_ps` among `total` messages: from 1 at the fastest sample down to the fraction
/// that did not finish (or 1/`total` at the slowest sample, the last step a log axis can
/// show). Ranks drawn: every rank of the slowest [`TAIL_POINTS`], [`BODY_POINTS`] evenly
/// spaced below them.
fn ccdf_points(sorted_ps: &[u64], total: usize) -> Vec<(f64, f64)> {
    let n = sorted_ps.len();
    if n == 0 || total == 0 {
        return Vec::new();
    }
    let tail_from = n.saturating_sub(TAIL_POINTS);
    let mut ranks: Vec<usize> = (1..=BODY_POINTS)
        .map(|k| (k * tail_from).div_ceil(BODY_POINTS))
        .filter(|&r| r >= 1)
        .collect();
    ranks.dedup();
    ranks.extend(tail_from + 1..=n);
    let above = |r: usize| (total - r) as f64 / total as f64;
    let mut pts = Vec::with_capacity(2 * ranks.len());
    let mut prev = 1.0;
    for r in ranks {
        let x = ps_to_us(sorted_ps[r - 1]);
        pts.push((x, prev));
        let f = above(r);
        if f > 0.0 {
            pts.push((x, f));
        }
        prev = f;
    }
    pts
}

/// The bottom of the y axis: the decade at or below 1/`total` (the smallest step a run of
/// `total` messages has), and no higher than 10⁻² (p99's gridline).
fn y_floor(total: usize) -> f64 {
    let smallest = 1.0 / total.max(1) as f64;
    10f64.powf(smallest.log10().floor()).min(1e-2)
}

/// A y tick label: `1`, `0.1`, `0.01`, `0.001`, then `1e-4`, `1e-5`, ….
fn y_label(v: f64) -> String {
    if v >= 1e-3 {
        log_tick_label(v)
    } else {
        format!("1e{}", v.log10().round() as i32)
    }
}

/// Step CCDF of message completion time on `area`, log–log.
///
/// x: latency in µs on a log axis (1-2-5 bounds around the data and T*); y: fraction of
/// *all* messages slower than x, on a log axis from 1 down to the decade of 1/n. Messages
/// that did not finish never complete: the curve then levels off at their fraction, and the
/// caption gives their number. Dashed horizontal gridlines at 10⁻², 10⁻³ and 10⁻⁴ mark
/// p99, p99.9 and p99.99 where the run has 100, 1 000 and 10 000 messages, each with its
/// nearest-rank value (as in the summary table) in the legend and a dot where the curve
/// crosses it; T* (red) when the run has one ([`RunResult::t_star_bound`]).
///
/// # Errors
/// [`ReportError::Plot`] if plotters fails.
pub fn draw_ccdf<DB: DrawingBackend>(
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
            "Completion time tail (1 − CDF): {} of {total} delivered, {undelivered} did not \
             finish",
            lat.len()
        )
    } else {
        format!("Completion time tail (1 − CDF, {total} messages)")
    };
    let (x0, x1) = (x_range.start, x_range.end);
    let x_ticks = log_ticks(&x_range);
    let floor = y_floor(total);
    let y_ticks: Vec<f64> = (0..=(-floor.log10().round() as i32))
        .map(|k| 10f64.powi(-k))
        .collect();
    let mut chart = ChartBuilder::on(area)
        .caption(caption, (FONT_FAMILY, CAPTION_PX))
        .margin(14)
        .margin_right(30)
        .x_label_area_size(48)
        .y_label_area_size(60)
        .build_cartesian_2d(
            x_range.log_scale().with_key_points(x_ticks),
            (floor..1.0).log_scale().with_key_points(y_ticks),
        )
        .map_err(plot_err)?;
    let x_fmt = |v: &f64| log_tick_label(*v);
    let y_fmt = |v: &f64| y_label(*v);
    styled_mesh(&mut chart)
        .x_desc("message completion time from intended send (µs, log scale)")
        .y_desc("fraction of all messages slower (log scale)")
        .x_label_formatter(&x_fmt)
        .y_label_formatter(&y_fmt)
        .draw()
        .map_err(plot_err)?;
    let pts = ccdf_points(&lat, total);
    if pts.is_empty() {
        let at = (x0 * (x1 / x0).powf(0.3), floor.sqrt());
        chart
            .draw_series(std::iter::once(Text::new(
                format!("no delivered messages ({total} did not finish)"),
                at,
                (FONT_FAMILY, CAPTION_PX),
            )))
            .map_err(plot_err)?;
    } else {
        // A few messages are marked one by one too: a single message is a point, no line.
        if lat.len() <= FEW_MARKED {
            chart
                .draw_series(
                    lat.iter()
                        .enumerate()
                        .map(|(i, &v)| (ps_to_us(v), (total - i) as f64 / total as f64))
                        .map(|p| Circle::new(p, 4, TAB10[0].filled())),
                )
                .map_err(plot_err)?;
        }
        chart
            .draw_series(LineSeries::new(pts, TAB10[0].stroke_width(2)))
            .map_err(plot_err)?
            .label("delivered messages")
            .legend(crate::chart::line_legend(TAB10[0], 2));
        for (p, name, color) in TAIL {
            let level = 1.0 - p / 100.0;
            // A run of n messages resolves the tail to 1/n: a gridline below it says nothing.
            if level * total as f64 + 1e-9 < 1.0 {
                continue;
            }
            let Some(v) = nearest_rank(&lat, p) else {
                continue;
            };
            let x = ps_to_us(v);
            chart
                .draw_series(DashedLineSeries::new(
                    vec![(x0, level), (x1, level)],
                    4,
                    4,
                    color.stroke_width(1),
                ))
                .map_err(plot_err)?
                .label(format!("{name} = {} µs", format_us(v)))
                .legend(dashed_legend(color));
            chart
                .draw_series(std::iter::once(Circle::new((x, level), 5, color.filled())))
                .map_err(plot_err)?;
        }
        if undelivered > 0 {
            let f = undelivered as f64 / total as f64;
            chart
                .draw_series(DashedLineSeries::new(
                    vec![(x0, f), (x1, f)],
                    2,
                    4,
                    PERCENTILE_COLOR.stroke_width(1),
                ))
                .map_err(plot_err)?
                .label(format!(
                    "{undelivered} unfinished: the tail levels off at {f:.3}"
                ))
                .legend(dashed_legend(PERCENTILE_COLOR));
        }
    }
    if let (Some(t), Some(i)) = (t_star_us, r.t_star_bound()) {
        chart
            .draw_series(DashedLineSeries::new(
                vec![(t, floor), (t, 1.0)],
                8,
                5,
                T_STAR_COLOR.stroke_width(2),
            ))
            .map_err(plot_err)?
            .label(format!("T* = {} µs", format_us(i.t_star_ps)))
            .legend(dashed_legend(T_STAR_COLOR));
    }
    draw_legend(&mut chart, SeriesLabelPosition::LowerLeft)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_curve_steps_down_by_one_message_from_one_to_one_over_n() {
        let pts = ccdf_points(&[10_000_000, 20_000_000, 30_000_000, 40_000_000], 4);
        assert_eq!(pts.first(), Some(&(10.0, 1.0)));
        assert_eq!(pts[1], (10.0, 0.75));
        // The last sample steps to 0, which a log axis cannot show: the curve ends at 1/n.
        assert_eq!(pts.last(), Some(&(40.0, 0.25)));
        assert!(pts.windows(2).all(|w| w[1].1 <= w[0].1 && w[1].0 >= w[0].0));
    }

    #[test]
    fn undelivered_messages_hold_the_tail_above_zero() {
        let pts = ccdf_points(&[1_000_000, 2_000_000], 4);
        assert_eq!(pts.last(), Some(&(2.0, 0.5)));
    }

    #[test]
    fn every_tail_sample_is_drawn_and_the_body_is_thinned() {
        let n = 100_000;
        let lat: Vec<u64> = (1..=n as u64).map(|i| i * 1_000).collect();
        let pts = ccdf_points(&lat, n);
        // Two vertices a drawn rank (one for the last, which stops at 1/n).
        assert!(pts.len() <= 2 * (BODY_POINTS + TAIL_POINTS));
        let slowest: Vec<f64> = pts.iter().rev().take(20).map(|p| p.1).collect();
        // The last ten ranks are each a step of 1/n.
        assert!(slowest.contains(&(1.0 / n as f64)));
        assert!(slowest.contains(&(5.0 / n as f64)));
    }

    #[test]
    fn the_floor_is_the_decade_of_one_over_n_and_at_most_a_percent() {
        assert_eq!(y_floor(40), 1e-2);
        assert_eq!(y_floor(65_536), 1e-5);
        assert_eq!(y_floor(1000), 1e-3);
        assert_eq!(y_label(1e-4), "1e-4");
        assert_eq!(y_label(0.01), "0.01");
    }
}
