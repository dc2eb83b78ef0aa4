//! PNG text with each glyph where the font puts it ([`TextOnBitmap`]).
//!
//! plotters' bitmap text (its `ab_glyph` font path) drops every glyph's left side bearing and
//! rounds each glyph's top toward zero, so in a PNG a `1` sits left of its cell ("28 997·1 53")
//! and a decimal point rides up to mid-height. The SVG is right: a viewer lays its text out.
//! [`TextOnBitmap`] wraps a drawing backend and rasterizes text itself with the same font,
//! glyph by glyph, at the same baseline as plotters (half the font size below the layout
//! box's top) but at each glyph's own bounds; everything else goes to the wrapped backend.

use ab_glyph::{point, Font, FontRef, PxScale, ScaleFont};
use plotters_backend::text_anchor::{HPos, VPos};
use plotters_backend::{
    BackendColor, BackendCoord, BackendStyle, BackendTextStyle, DrawingBackend, DrawingErrorKind,
};
use std::sync::OnceLock;

/// The font of every figure: DejaVu Sans, embedded (the chart module registers it with
/// plotters).
pub(crate) static FONT_TTF: &[u8] = include_bytes!("../assets/DejaVuSans.ttf");

/// The font every figure uses, parsed once.
fn font() -> Option<&'static FontRef<'static>> {
    static FONT: OnceLock<Option<FontRef<'static>>> = OnceLock::new();
    FONT.get_or_init(|| FontRef::try_from_slice(FONT_TTF).ok())
        .as_ref()
}

/// A drawing backend whose text is rasterized glyph by glyph (see the module doc).
pub struct TextOnBitmap<B> {
    inner: B,
}

impl<B> TextOnBitmap<B> {
    /// `inner`, with its text drawn by this wrapper.
    pub fn new(inner: B) -> Self {
        TextOnBitmap { inner }
    }
}

/// The pixels of `text` at `size` pixels, as (x, y, coverage) from the top left of its
/// layout box, and the box's width: each glyph at the caret plus its left side bearing, its
/// top at `size / 2` below the box's top plus its own (floored) offset from the baseline.
fn rasterize(font: &FontRef<'_>, size: f32, text: &str) -> (Vec<(i32, i32, f32)>, f32) {
    let scaled = font.as_scaled(PxScale::from(size));
    let mut pixels = Vec::new();
    let mut caret = 0f32;
    let mut prev = None;
    for c in text.chars() {
        let id = scaled.glyph_id(c);
        if let Some(p) = prev {
            caret += scaled.kern(p, id);
        }
        prev = Some(id);
        let glyph = id.with_scale_and_position(PxScale::from(size), point(caret, size / 2.0));
        if let Some(outline) = font.outline_glyph(glyph) {
            let b = outline.px_bounds();
            let (x0, y0) = (b.min.x.floor() as i32, b.min.y.floor() as i32);
            outline.draw(|x, y, cov| pixels.push((x0 + x as i32, y0 + y as i32, cov)));
        }
        caret += scaled.h_advance(id);
    }
    (pixels, caret)
}

impl<B: DrawingBackend> DrawingBackend for TextOnBitmap<B> {
    type ErrorType = B::ErrorType;

    fn get_size(&self) -> (u32, u32) {
        self.inner.get_size()
    }
    fn ensure_prepared(&mut self) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.ensure_prepared()
    }
    fn present(&mut self) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.present()
    }
    fn draw_pixel(
        &mut self,
        point: BackendCoord,
        color: BackendColor,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_pixel(point, color)
    }
    fn draw_line<S: BackendStyle>(
        &mut self,
        from: BackendCoord,
        to: BackendCoord,
        style: &S,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_line(from, to, style)
    }
    fn draw_rect<S: BackendStyle>(
        &mut self,
        upper_left: BackendCoord,
        bottom_right: BackendCoord,
        style: &S,
        fill: bool,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_rect(upper_left, bottom_right, style, fill)
    }
    fn draw_path<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        path: I,
        style: &S,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_path(path, style)
    }
    fn draw_circle<S: BackendStyle>(
        &mut self,
        center: BackendCoord,
        radius: u32,
        style: &S,
        fill: bool,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_circle(center, radius, style, fill)
    }
    fn fill_polygon<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        vert: I,
        style: &S,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.fill_polygon(vert, style)
    }
    fn blit_bitmap(
        &mut self,
        pos: BackendCoord,
        size: (u32, u32),
        src: &[u8],
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.blit_bitmap(pos, size, src)
    }
    fn estimate_text_size<S: BackendTextStyle>(
        &self,
        text: &str,
        style: &S,
    ) -> Result<(u32, u32), DrawingErrorKind<Self::ErrorType>> {
        self.inner.estimate_text_size(text, style)
    }

    /// Text as plotters lays it out (its layout box, anchor and rotation), each glyph drawn
    /// where the font puts it; a font that does not load falls back to the wrapped backend.
    fn draw_text<S: BackendTextStyle>(
        &mut self,
        text: &str,
        style: &S,
        pos: BackendCoord,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        let color = style.color();
        if color.alpha == 0.0 {
            return Ok(());
        }
        let Some(font) = font() else {
            return self.inner.draw_text(text, style, pos);
        };
        let ((min_x, min_y), (max_x, max_y)) = style
            .layout_box(text)
            .map_err(|e| DrawingErrorKind::FontError(Box::new(e)))?;
        let (width, height) = (max_x - min_x, max_y - min_y);
        let dx = match style.anchor().h_pos {
            HPos::Left => 0,
            HPos::Right => -width,
            HPos::Center => -width / 2,
        };
        let dy = match style.anchor().v_pos {
            VPos::Top => 0,
            VPos::Center => -height / 2,
            VPos::Bottom => -height,
        };
        let trans = style.transform();
        let (w, h) = self.get_size();
        let (pixels, _) = rasterize(font, style.size() as f32, text);
        for (x, y, cov) in pixels {
            let (x, y) = trans.transform(x + dx - min_x, y + dy - min_y);
            let (x, y) = (pos.0 + x, pos.1 + y);
            if x >= 0 && x < w as i32 && y >= 0 && y < h as i32 && cov > 0.0 {
                let c = BackendColor {
                    alpha: color.alpha * f64::from(cov.min(1.0)),
                    rgb: color.rgb,
                };
                self.inner.draw_pixel((x, y), c)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lowest row of ink in `pixels`.
    fn bottom(pixels: &[(i32, i32, f32)]) -> i32 {
        pixels
            .iter()
            .filter(|p| p.2 > 0.5)
            .map(|p| p.1)
            .max()
            .unwrap_or(0)
    }

    #[test]
    fn a_decimal_point_sits_on_the_baseline_of_its_digits() {
        let font = font().expect("the embedded font loads");
        for size in [11.0, 13.0, 15.0, 20.0] {
            let (digit, _) = rasterize(font, size, "8");
            let (dot, _) = rasterize(font, size, ".");
            assert!(
                (bottom(&digit) - bottom(&dot)).abs() <= 1,
                "size {size}: digit bottom {} dot bottom {}",
                bottom(&digit),
                bottom(&dot)
            );
        }
    }

    #[test]
    fn a_narrow_digit_keeps_its_left_side_bearing() {
        let font = font().expect("the embedded font loads");
        for size in [11.0, 13.0, 15.0, 20.0] {
            // DejaVu Sans digits share one advance, and a `1` is inked right of its cell's
            // start: dropping the bearing (plotters' own path) inks it from x = 0.
            let ink = |text: &str| {
                let (px, _) = rasterize(font, size, text);
                let xs: Vec<i32> = px.iter().filter(|p| p.2 > 0.5).map(|p| p.0).collect();
                (
                    xs.iter().copied().min().unwrap_or(0),
                    xs.iter().copied().max().unwrap_or(0),
                )
            };
            let (left, width) = ink("1");
            assert!(left >= 1, "size {size}: `1` inked from x = {left}");
            // In "11" the second `1` is one advance further, not one ink width.
            let (_, right) = ink("11");
            let advance = font
                .as_scaled(PxScale::from(size))
                .h_advance(font.glyph_id('1'));
            assert!(
                ((right - width) as f32 - advance).abs() <= 1.0,
                "size {size}: second `1` ends {right}, first {width}, advance {advance}"
            );
        }
    }
}
