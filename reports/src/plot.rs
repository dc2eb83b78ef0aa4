//! SVG latency plot of a run: completion-time CDF and per-sender completion times.
//!
//! The plot is a pure function of the [`RunResult`] (plots can be redrawn from saved
//! results without rerunning): equal inputs give byte-identical SVG. Text is measured with the
//! embedded DejaVu Sans font (`assets/DejaVuSans.ttf`, Bitstream Vera license, see
//! `assets/LICENSE-DejaVu.txt`), so layout does not depend on the fonts installed on the host.

use std::path::Path;
use std::sync::OnceLock;

use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::{register_font, FontStyle};

use crate::error::ReportError;
use crate::schema::RunResult;
use crate::summary::{format_bytes, format_us};

/// Width of the SVG canvas, pixels.
pub const WIDTH_PX: u32 = 1400;
/// Height of the SVG canvas, pixels.
pub const HEIGHT_PX: u32 = 620;

/// At most this many points are drawn on the CDF; larger sample sets are reduced to the
/// nearest-rank quantiles at ranks `⌈k·n/MAX_CDF_POINTS⌉`, k = 1..MAX_CDF_POINTS.
pub const MAX_CDF_POINTS: usize = 4096;
/// At most this many messages are drawn in the per-sender panel; above it every k-th record
/// (in record order) is drawn, with k the smallest stride that fits, and the title says so.
pub const MAX_SCATTER_POINTS: usize = 20_000;

/// Family name under which the embedded font is registered with plotters.
pub(crate) const FONT_FAMILY: &str = "sans-serif";
static FONT_TTF: &[u8] = include_bytes!("../assets/DejaVuSans.ttf");

/// Tableau 10 palette (Tableau Software's default categorical colours, as used by matplotlib's
/// `tab10`): one colour per message index when a sender sends at most 10 messages.
pub(crate) const TAB10: [RGBColor; 10] = [
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0xff, 0x7f, 0x0e),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0x8c, 0x56, 0x4b),
    RGBColor(0xe3, 0x77, 0xc2),
    RGBColor(0x7f, 0x7f, 0x7f),
    RGBColor(0xbc, 0xbd, 0x22),
    RGBColor(0x17, 0xbe, 0xcf),
];
const T_STAR_COLOR: RGBColor = RGBColor(0xd6, 0x27, 0x28);
const UNDELIVERED_COLOR: RGBColor = RGBColor(0x00, 0x00, 0x00);

pub(crate) fn ensure_font() -> Result<(), ReportError> {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    let ok =
        *REGISTERED.get_or_init(|| register_font(FONT_FAMILY, FontStyle::Normal, FONT_TTF).is_ok());
    if ok {
        Ok(())
    } else {
        Err(ReportError::Font)
    }
}

fn plot_err<E: std::fmt::Display>(e: E) -> ReportError {
    ReportError::Plot(e.to_string())
}

fn ps_to_us(ps: u64) -> f64 {
    ps as f64 / 1e6
}

/// Number of decimals for axis tick labels spanning `0..max`.
fn tick_decimals(max: f64) -> usize {
    if max >= 100.0 {
        0
    } else if max >= 10.0 {
        1
    } else if max >= 1.0 {
        2
    } else {
        3
    }
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
/// *all* message records, so with undelivered messages the CDF plateaus below 1.
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

/// Renders the latency figure of `r` to an SVG document and returns it.
///
/// Layout ([`WIDTH_PX`] × [`HEIGHT_PX`]): a title with the scenario and workload, then two
/// panels.
/// - Left: step CDF of message completion time (latency from the intended send time), x in µs,
///   y the fraction 0–1 of *all* messages (undelivered ones never arrive, so the curve then
///   ends below 1 and the title gives their number). A dashed vertical line marks T* when
///   `r.ideal` is set.
/// - Right: each message's completion time measured from the first intended send time of the
///   workload (the frame T* is defined in), x the sender host index, y in µs, one colour per
///   message index in the sender's sequence with a legend, undelivered messages as black
///   crosses along the top edge, and a dashed horizontal line at T* when `r.ideal` is set.
///
/// # Errors
/// [`ReportError::Font`] if the embedded font cannot be registered, [`ReportError::Plot`] if
/// plotters fails to draw.
pub fn latency_svg_string(r: &RunResult) -> Result<String, ReportError> {
    ensure_font()?;
    let mut svg = String::new();
    draw(r, &mut svg)?;
    Ok(svg)
}

/// Renders the latency figure of `r` (see [`latency_svg_string`]) and writes it to `path`.
///
/// # Errors
/// As [`latency_svg_string`], plus [`ReportError::Io`] if the file cannot be written.
pub fn latency_svg(r: &RunResult, path: &Path) -> Result<(), ReportError> {
    let svg = latency_svg_string(r)?;
    std::fs::write(path, svg).map_err(|source| ReportError::Io {
        path: path.to_path_buf(),
        source,
    })
}

fn draw(r: &RunResult, out: &mut String) -> Result<(), ReportError> {
    let root = SVGBackend::with_string(out, (WIDTH_PX, HEIGHT_PX)).into_drawing_area();
    root.fill(&WHITE).map_err(plot_err)?;
    let title = format!(
        "{} — {} {}:1, {} per sender, {} message(s) each ({}, seed {})",
        r.scenario.name,
        r.workload.kind,
        r.workload.senders,
        format_bytes(r.workload.bytes_per_sender),
        r.workload.messages_per_sender,
        r.scenario.backend,
        r.scenario.seed
    );
    let body = root.titled(&title, (FONT_FAMILY, 22)).map_err(plot_err)?;
    let (left, right) = body.split_horizontally(WIDTH_PX / 2);
    draw_cdf(r, &left)?;
    draw_per_sender(r, &right)?;
    root.present().map_err(plot_err)?;
    Ok(())
}

type Area<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;

fn draw_cdf(r: &RunResult, area: &Area<'_>) -> Result<(), ReportError> {
    let mut lat: Vec<u64> = r.messages.iter().filter_map(|m| m.latency_ps()).collect();
    lat.sort_unstable();
    let total = r.messages.len();
    let undelivered = total - lat.len();
    let t_star_us = r.ideal.map(|i| ps_to_us(i.t_star_ps));
    let data_max = lat.last().map_or(0.0, |&v| ps_to_us(v));
    let x_max = nice_upper(data_max.max(t_star_us.unwrap_or(0.0)));
    let caption = if undelivered > 0 {
        format!(
            "Completion time CDF ({} of {} delivered, {} undelivered)",
            lat.len(),
            total,
            undelivered
        )
    } else {
        format!("Completion time CDF ({} messages)", total)
    };
    let mut chart = ChartBuilder::on(area)
        .caption(caption, (FONT_FAMILY, 18))
        .margin(12)
        .x_label_area_size(48)
        .y_label_area_size(60)
        .build_cartesian_2d(0f64..x_max, 0f64..1.0)
        .map_err(plot_err)?;
    let decimals = tick_decimals(x_max);
    let x_fmt = move |v: &f64| format!("{v:.decimals$}");
    let y_fmt = |v: &f64| format!("{v:.1}");
    chart
        .configure_mesh()
        .x_desc("message completion time from intended send (µs)")
        .y_desc("fraction of messages")
        .x_label_formatter(&x_fmt)
        .y_label_formatter(&y_fmt)
        .label_style((FONT_FAMILY, 13))
        .axis_desc_style((FONT_FAMILY, 15))
        .light_line_style(WHITE.mix(0.0))
        .draw()
        .map_err(plot_err)?;
    let pts = cdf_points(&lat, total);
    if pts.is_empty() {
        chart
            .draw_series(std::iter::once(Text::new(
                "no delivered messages",
                (x_max * 0.3, 0.5),
                (FONT_FAMILY, 18),
            )))
            .map_err(plot_err)?;
    } else {
        chart
            .draw_series(LineSeries::new(pts, TAB10[0].stroke_width(2)))
            .map_err(plot_err)?
            .label("delivered messages")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], TAB10[0].stroke_width(2)));
    }
    if let Some(t) = t_star_us {
        chart
            .draw_series(DashedLineSeries::new(
                vec![(t, 0.0), (t, 1.0)],
                8,
                5,
                T_STAR_COLOR.stroke_width(2),
            ))
            .map_err(plot_err)?
            .label(format!(
                "T* = {} µs",
                format_us(r.ideal.map_or(0, |i| i.t_star_ps))
            ))
            .legend(t_star_legend);
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .label_font((FONT_FAMILY, 13))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(plot_err)?;
    Ok(())
}

fn draw_per_sender(r: &RunResult, area: &Area<'_>) -> Result<(), ReportError> {
    let msgs = &r.messages;
    let start = msgs.iter().map(|m| m.intended_ps).min().unwrap_or(0);
    let stride = msgs.len().div_ceil(MAX_SCATTER_POINTS).max(1);
    let shown: Vec<_> = msgs.iter().step_by(stride).collect();
    let t_star_us = r.ideal.map(|i| ps_to_us(i.t_star_ps));
    let data_max = shown
        .iter()
        .filter_map(|m| m.completed_ps)
        .map(|c| ps_to_us(c.saturating_sub(start)))
        .fold(0.0, f64::max);
    let y_max = nice_upper(data_max.max(t_star_us.unwrap_or(0.0)));
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
        .caption(caption, (FONT_FAMILY, 18))
        .margin(12)
        .x_label_area_size(48)
        .y_label_area_size(70)
        .build_cartesian_2d((s_min - pad)..(s_max + pad), 0f64..y_max)
        .map_err(plot_err)?;
    let decimals = tick_decimals(y_max);
    let y_fmt = move |v: &f64| format!("{v:.decimals$}");
    let x_fmt = |v: &f64| format!("{v:.0}");
    chart
        .configure_mesh()
        .x_desc("sender host index")
        .y_desc("completion time since workload start (µs)")
        .x_label_formatter(&x_fmt)
        .y_label_formatter(&y_fmt)
        .label_style((FONT_FAMILY, 13))
        .axis_desc_style((FONT_FAMILY, 15))
        .light_line_style(WHITE.mix(0.0))
        .draw()
        .map_err(plot_err)?;

    let n_indices = msgs.iter().map(|m| m.index).max().map_or(0, |i| i + 1);
    let legend_all = n_indices <= TAB10.len() as u32;
    for index in 0..n_indices {
        let color = index_color(index, n_indices);
        let pts: Vec<(f64, f64)> = shown
            .iter()
            .filter(|m| m.index == index)
            .filter_map(|m| {
                m.completed_ps
                    .map(|c| (f64::from(m.sender), ps_to_us(c.saturating_sub(start))))
            })
            .collect();
        let series = chart
            .draw_series(pts.into_iter().map(|p| Circle::new(p, 3, color.filled())))
            .map_err(plot_err)?;
        if legend_all || index == 0 || index + 1 == n_indices {
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
                format_us(r.ideal.map_or(0, |i| i.t_star_ps))
            ))
            .legend(t_star_legend);
    }
    // Put the legend in the right-hand corner (top or bottom quarter of the panel, right 30 %)
    // that covers fewer points; undelivered crosses sit on the top edge. Ties go to the bottom.
    let x_cut = s_min + 0.7 * (s_max - s_min);
    let corner_count = |top: bool| {
        shown
            .iter()
            .filter(|m| f64::from(m.sender) >= x_cut)
            .filter(|m| {
                let y = m
                    .completed_ps
                    .map_or(y_max, |c| ps_to_us(c.saturating_sub(start)));
                if top {
                    y >= 0.75 * y_max
                } else {
                    y <= 0.25 * y_max
                }
            })
            .count()
    };
    let position = if corner_count(true) < corner_count(false) {
        SeriesLabelPosition::UpperRight
    } else {
        SeriesLabelPosition::LowerRight
    };
    chart
        .configure_series_labels()
        .position(position)
        .label_font((FONT_FAMILY, 13))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(plot_err)?;
    Ok(())
}

/// Legend glyph for the T* line: a short dashed segment like the line itself.
fn t_star_legend((x, y): (i32, i32)) -> DashedPathElement<std::vec::IntoIter<(i32, i32)>, i32> {
    DashedPathElement::new(
        vec![(x, y), (x + 22, y)],
        5,
        3,
        T_STAR_COLOR.stroke_width(2),
    )
}

/// Upper axis bound: `v` plus 8 % headroom, at least 1 (so an all-zero data set still has a
/// non-empty range).
fn nice_upper(v: f64) -> f64 {
    if v.is_finite() && v > 0.0 {
        v * 1.08
    } else {
        1.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
