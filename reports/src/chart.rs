//! Shared chart styling and rendering: the embedded font, the palette, text sizes, mesh and
//! legend setup, time and byte axis units, log-axis helpers, and drawing one figure to SVG
//! and PNG.
//!
//! Every figure is drawn once by a [`Figure`] implementation generic over plotters'
//! `DrawingBackend` and emitted through `SVGBackend` ([`render_svg`]) and `BitMapBackend`
//! ([`write_png`]). Text is laid out and rasterized with the embedded DejaVu Sans font
//! (`assets/DejaVuSans.ttf`, Bitstream Vera license, see `assets/LICENSE-DejaVu.txt`), so the
//! output does not depend on the fonts installed on the host, and equal inputs give
//! byte-identical SVG and PNG files.

use std::ops::Range;
use std::path::Path;
use std::sync::OnceLock;

use plotters::chart::{ChartContext, MeshStyle, SeriesLabelPosition};
use plotters::coord::cartesian::Cartesian2d;
use plotters::coord::ranged1d::{Ranged, ValueFormatter};
use plotters::coord::{CoordTranslate, Shift};
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::{register_font, FontStyle};

use crate::error::ReportError;

/// Family name under which the embedded font is registered with plotters.
pub const FONT_FAMILY: &str = "sans-serif";
use crate::glyphs::FONT_TTF;

/// Figure title size, pixels.
pub const TITLE_PX: u32 = 22;
/// Panel caption size, pixels.
pub const CAPTION_PX: u32 = 17;
/// Axis description size, pixels.
pub const AXIS_DESC_PX: u32 = 15;
/// Tick label and legend text size, pixels.
pub const LABEL_PX: u32 = 13;

/// Tableau 10 palette (Tableau Software's default categorical colours, as in matplotlib's
/// `tab10`).
pub const TAB10: [RGBColor; 10] = [
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
/// Colour of the analytical bound T* (and other reference lines).
pub const T_STAR_COLOR: RGBColor = RGBColor(0xd6, 0x27, 0x28);
/// Colour of undelivered-message markers.
pub const UNDELIVERED_COLOR: RGBColor = RGBColor(0x00, 0x00, 0x00);
/// Colour of percentile markers.
pub const PERCENTILE_COLOR: RGBColor = RGBColor(0x55, 0x55, 0x55);

/// Registers the embedded font with plotters (once per process).
///
/// # Errors
/// [`ReportError::Font`] if the font cannot be parsed.
pub fn ensure_font() -> Result<(), ReportError> {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    let ok =
        *REGISTERED.get_or_init(|| register_font(FONT_FAMILY, FontStyle::Normal, FONT_TTF).is_ok());
    if ok {
        Ok(())
    } else {
        Err(ReportError::Font)
    }
}

/// Wraps a plotters error.
pub fn plot_err<E: std::fmt::Display>(e: E) -> ReportError {
    ReportError::Plot(e.to_string())
}

/// A figure that can be drawn on any plotters backend.
pub trait Figure {
    /// Canvas size `(width, height)` in pixels.
    fn size(&self) -> (u32, u32);
    /// Draws the whole figure on `root` (already white-filled).
    ///
    /// # Errors
    /// [`ReportError::Plot`] when plotters fails.
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), ReportError>;
}

/// Renders `fig` to an SVG document.
///
/// # Errors
/// [`ReportError::Font`], or [`ReportError::Plot`] from drawing.
pub fn render_svg<F: Figure>(fig: &F) -> Result<String, ReportError> {
    ensure_font()?;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, fig.size()).into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        fig.draw(&root)?;
        root.present().map_err(plot_err)?;
    }
    Ok(svg)
}

/// Renders `fig` to an RGB raster and writes it to `path` as PNG.
///
/// # Errors
/// [`ReportError::Font`], [`ReportError::Plot`] from drawing or encoding (plotters reports a
/// failed write as a drawing error; the message names the cause).
pub fn write_png<F: Figure>(fig: &F, path: &Path) -> Result<(), ReportError> {
    ensure_font()?;
    let tmp = crate::files::temp_sibling(path);
    let drawn = (|| {
        let root =
            crate::TextOnBitmap::new(BitMapBackend::new(&tmp, fig.size())).into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        fig.draw(&root)?;
        root.present()
            .map_err(|e| ReportError::Plot(format!("{}: {e}", path.display())))
    })();
    if let Err(e) = drawn {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    crate::files::commit_temp(&tmp, path)
}

/// Writes `fig` as `dir/STEM.svg` and `dir/STEM.png`; returns the SVG text (for inlining).
///
/// # Errors
/// As [`render_svg`] and [`write_png`], plus [`ReportError::Io`] for the SVG file.
pub fn write_svg_png<F: Figure>(fig: &F, dir: &Path, stem: &str) -> Result<String, ReportError> {
    let svg = render_svg(fig)?;
    let svg_path = dir.join(format!("{stem}.svg"));
    crate::files::write_atomic(&svg_path, svg.as_bytes())?;
    write_png(fig, &dir.join(format!("{stem}.png")))?;
    Ok(svg)
}

/// Applies the shared mesh style (fonts, no minor grid) and returns the mesh for the caller
/// to add axis descriptions and formatters.
pub fn styled_mesh<'a, 'b, DB, X, Y, XT, YT>(
    chart: &'b mut ChartContext<'a, DB, Cartesian2d<X, Y>>,
) -> MeshStyle<'a, 'b, X, Y, DB>
where
    DB: DrawingBackend,
    X: Ranged<ValueType = XT> + ValueFormatter<XT>,
    Y: Ranged<ValueType = YT> + ValueFormatter<YT>,
{
    let mut mesh = chart.configure_mesh();
    mesh.label_style((FONT_FAMILY, LABEL_PX))
        .axis_desc_style((FONT_FAMILY, AXIS_DESC_PX))
        .light_line_style(WHITE.mix(0.0))
        .bold_line_style(BLACK.mix(0.12));
    mesh
}

/// Draws the series legend at `pos` in the shared style.
///
/// # Errors
/// [`ReportError::Plot`] when plotters fails.
pub fn draw_legend<'a, DB, CT>(
    chart: &mut ChartContext<'a, DB, CT>,
    pos: SeriesLabelPosition,
) -> Result<(), ReportError>
where
    DB: DrawingBackend + 'a,
    CT: CoordTranslate,
{
    chart
        .configure_series_labels()
        .position(pos)
        .label_font((FONT_FAMILY, LABEL_PX))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(plot_err)
}

/// Legend glyph for a dashed reference line in `color`.
pub fn dashed_legend(
    color: RGBColor,
) -> impl Fn((i32, i32)) -> DashedPathElement<std::vec::IntoIter<(i32, i32)>, i32> {
    move |(x, y)| DashedPathElement::new(vec![(x, y), (x + 22, y)], 5, 3, color.stroke_width(2))
}

/// Legend glyph for a solid line in `color` of `width` pixels.
pub fn line_legend(color: RGBColor, width: u32) -> impl Fn((i32, i32)) -> PathElement<(i32, i32)> {
    move |(x, y)| PathElement::new(vec![(x, y), (x + 22, y)], color.stroke_width(width))
}

/// A unit for a time axis: the label and the picoseconds per unit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TimeUnit {
    /// Unit symbol, `µs` or `ms`.
    pub symbol: &'static str,
    /// Picoseconds per unit.
    pub ps: f64,
}

impl TimeUnit {
    /// µs for spans below 10 ms, ms from there on (so tick labels stay short).
    pub fn for_span(max_ps: u64) -> Self {
        if max_ps < 10_000_000_000 {
            TimeUnit {
                symbol: "µs",
                ps: 1e6,
            }
        } else {
            TimeUnit {
                symbol: "ms",
                ps: 1e9,
            }
        }
    }

    /// `ps` in this unit.
    pub fn of(&self, ps: u64) -> f64 {
        ps as f64 / self.ps
    }
}

/// A unit for a byte axis (binary prefixes): the label and the bytes per unit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ByteUnit {
    /// Unit symbol, `B`, `KiB` or `MiB`.
    pub symbol: &'static str,
    /// Bytes per unit.
    pub bytes: f64,
}

impl ByteUnit {
    /// The largest of B, KiB, MiB in which `max` is at least 1 (B for 0).
    pub fn for_max(max: u64) -> Self {
        if max >= 1 << 20 {
            ByteUnit {
                symbol: "MiB",
                bytes: 1_048_576.0,
            }
        } else if max >= 1 << 10 {
            ByteUnit {
                symbol: "KiB",
                bytes: 1024.0,
            }
        } else {
            ByteUnit {
                symbol: "B",
                bytes: 1.0,
            }
        }
    }

    /// `b` bytes in this unit.
    pub fn of(&self, b: u64) -> f64 {
        b as f64 / self.bytes
    }
}

/// Number of decimals for tick labels of a linear axis spanning `0..max`.
pub fn tick_decimals(max: f64) -> usize {
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

/// Upper bound of a linear axis: `v` plus 8 % headroom, at least 1 (so an all-zero data set
/// still has a non-empty range).
pub fn nice_upper(v: f64) -> f64 {
    if v.is_finite() && v > 0.0 {
        v * 1.08
    } else {
        1.0
    }
}

/// Range of a log axis covering `[min, max]` (both > 0): from the 1-2-5 step at or below
/// `min/1.15` to the one at or above `max·1.15`, so the data sits away from the frame and the
/// ends are round numbers. A non-positive or non-finite input gives `1..10`.
pub fn log_range(min: f64, max: f64) -> Range<f64> {
    if !(min.is_finite() && max.is_finite() && min > 0.0 && max >= min) {
        return 1.0..10.0;
    }
    let lo = step_125(min / 1.15, false);
    let hi = step_125(max * 1.15, true);
    lo..hi
}

/// The nearest value of the 1-2-5 sequence (…, 0.5, 1, 2, 5, 10, …) at or above `v` (`up`)
/// or at or below it.
fn step_125(v: f64, up: bool) -> f64 {
    let decade = 10f64.powf(v.log10().floor());
    let steps = [1.0, 2.0, 5.0, 10.0];
    if up {
        steps
            .iter()
            .map(|s| s * decade)
            .find(|&x| x >= v * (1.0 - 1e-12))
            .unwrap_or(10.0 * decade)
    } else {
        steps
            .iter()
            .rev()
            .map(|s| s * decade)
            .find(|&x| x <= v * (1.0 + 1e-12))
            .unwrap_or(decade)
    }
}

/// Tick positions for a log axis over `range`: the 1-2-5 values inside it when it spans at
/// most 3 decades, else the powers of ten (so labels never crowd).
pub fn log_ticks(range: &Range<f64>) -> Vec<f64> {
    let (lo, hi) = (range.start, range.end);
    if !(lo > 0.0 && hi > lo && lo.is_finite() && hi.is_finite()) {
        return Vec::new();
    }
    let steps: &[f64] = if (hi / lo).log10() <= 3.0 {
        &[1.0, 2.0, 5.0]
    } else {
        &[1.0]
    };
    let mut out = Vec::new();
    let mut decade = 10f64.powf(lo.log10().floor());
    while decade <= hi * (1.0 + 1e-12) {
        for s in steps {
            let v = s * decade;
            if v >= lo * (1.0 - 1e-12) && v <= hi * (1.0 + 1e-12) {
                out.push(v);
            }
        }
        decade *= 10.0;
    }
    out
}

/// Tick label for a log axis: significant digits without trailing zeros (`0.5`, `2`, `1000`,
/// `1.5e6` above a million).
pub fn log_tick_label(v: f64) -> String {
    if v >= 1e6 {
        return format!("{v:.1e}");
    }
    let s = if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.4}")
    };
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// Picoseconds to microseconds.
pub fn ps_to_us(ps: u64) -> f64 {
    ps as f64 / 1e6
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::TextOnBitmap;

    #[test]
    fn log_range_snaps_to_125_steps() {
        // 180..900 µs: 180/1.15 = 156.5 → 100; 900·1.15 = 1035 → 2000.
        assert_eq!(log_range(180.0, 900.0), 100.0..2000.0);
        // 3..4: 2.61 → 2; 4.6 → 5.
        assert_eq!(log_range(3.0, 4.0), 2.0..5.0);
        assert_eq!(log_range(0.0, 4.0), 1.0..10.0);
    }

    #[test]
    fn log_ticks_are_125_or_decades() {
        assert_eq!(
            log_ticks(&(20.0..2000.0)),
            vec![20.0, 50.0, 100.0, 200.0, 500.0, 1000.0, 2000.0]
        );
        // 1..1e5 spans 5 decades: powers of ten only.
        assert_eq!(
            log_ticks(&(1.0..1e5)),
            vec![1.0, 10.0, 100.0, 1000.0, 10000.0, 100000.0]
        );
    }

    #[test]
    fn tick_labels_are_short() {
        assert_eq!(log_tick_label(1000.0), "1000");
        assert_eq!(log_tick_label(20.0), "20");
        assert_eq!(log_tick_label(0.5), "0.5");
        assert_eq!(log_tick_label(2.5), "2.5");
    }

    #[test]
    fn units_follow_the_magnitude() {
        assert_eq!(TimeUnit::for_span(9_999_999_999).symbol, "µs");
        assert_eq!(TimeUnit::for_span(10_000_000_000).symbol, "ms");
        assert_eq!(ByteUnit::for_max(1023).symbol, "B");
        assert_eq!(ByteUnit::for_max(1024).symbol, "KiB");
        assert_eq!(ByteUnit::for_max(3 << 20).of(3 << 20), 3.0);
    }

    /// The ink of `text` drawn at (10, 10) in 15 px on a 120 × 40 bitmap, through plotters'
    /// own text path or through [`TextOnBitmap`]: (leftmost column, bottom row of each char).
    fn drawn(text: &str, fixed: bool) -> Vec<(i32, i32)> {
        use plotters::prelude::*;
        super::ensure_font().expect("the font registers");
        let (w, h) = (120u32, 40u32);
        let mut buf = vec![255u8; (w * h * 3) as usize];
        {
            let bitmap = BitMapBackend::with_buffer(&mut buf, (w, h));
            let style = (super::FONT_FAMILY, 15).into_font().color(&BLACK);
            if fixed {
                let root = TextOnBitmap::new(bitmap).into_drawing_area();
                root.draw_text(text, &style, (10, 10)).expect("draws");
                root.present().expect("presents");
            } else {
                let root = bitmap.into_drawing_area();
                root.draw_text(text, &style, (10, 10)).expect("draws");
                root.present().expect("presents");
            }
        }
        let dark = |x: u32, y: u32| buf[((y * w + x) * 3) as usize] < 128;
        let cols: Vec<u32> = (0..w).filter(|&x| (0..h).any(|y| dark(x, y))).collect();
        let rows: Vec<u32> = (0..h).filter(|&y| (0..w).any(|x| dark(x, y))).collect();
        vec![(
            cols.first().copied().unwrap_or(0) as i32,
            rows.last().copied().unwrap_or(0) as i32,
        )]
    }

    #[test]
    fn png_text_keeps_the_bearing_and_baseline_that_plotters_loses() {
        // plotters inks a `1` from its layout's left edge, the fixed path one bearing later.
        let (plain, fixed) = (drawn("1", false)[0].0, drawn("1", true)[0].0);
        assert!(
            fixed > plain,
            "`1` from x = {fixed} fixed, {plain} through plotters"
        );
        // A point ends on the digits' baseline (within a pixel) on the fixed path.
        let (dot, eight) = (drawn(".", true)[0].1, drawn("8", true)[0].1);
        assert!(
            (dot - eight).abs() <= 1,
            "`.` ends at row {dot}, `8` at {eight}"
        );
    }
}
