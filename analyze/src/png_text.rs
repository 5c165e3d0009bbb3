//! The PNG pictures' backend: plotters' bitmap backend, with text set
//! here. plotters 0.3.7 places each glyph of an `ab_glyph` font at the pen
//! position without the glyph's left side bearing, so a narrow glyph ("1",
//! "i", ".") is drawn against the left of its advance and leaves a gap
//! after it ("0x661 e9000", "1 28"). This backend lays text out as the
//! font says: each glyph's outline at the pen position plus its bearing,
//! the pen moved by the advance and the pair's kerning. Everything else
//! goes to the bitmap backend unchanged. (SVG pictures carry their text as
//! text: the viewer sets it.)

use ab_glyph::{Font, FontRef, PxScale, ScaleFont};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};
use plotters_backend::{
    BackendColor, BackendCoord, BackendStyle, BackendTextStyle, DrawingErrorKind,
};
use plotters_bitmap::BitMapBackendError;

/// plotters' bitmap backend, with text laid out by [`PngBackend::text_layout`].
pub struct PngBackend<'a> {
    inner: BitMapBackend<'a>,
    font: FontRef<'static>,
}

/// A line of text laid out at a size: each glyph's outline and where it
/// goes (pixels from the line's top left), and the line's box.
struct Laid {
    glyphs: Vec<(ab_glyph::OutlinedGlyph, (f32, f32))>,
    width: f32,
    height: f32,
}

impl<'a> PngBackend<'a> {
    /// `font`: the TrueType bytes the pictures' text is set in.
    pub fn new(inner: BitMapBackend<'a>, font: &'static [u8]) -> Result<Self, String> {
        let font = FontRef::try_from_slice(font).map_err(|e| format!("the font: {e}"))?;
        Ok(PngBackend { inner, font })
    }

    /// Lays `text` out at `size` pixels (plotters' size: the font's
    /// ascent minus descent). The box is the advance wide and, as
    /// plotters' own, `size / 1.24` high (about an em), so labels keep the
    /// room plotters gives them; the baseline sits where the capitals'
    /// height is centred in that box.
    fn text_layout(&self, text: &str, size: f64) -> Laid {
        let scaled = self.font.as_scaled(PxScale::from(size as f32));
        let height = (size / 1.24) as f32;
        let cap_height = self
            .font
            .outline_glyph(scaled.scaled_glyph('H'))
            .map_or(0.7 * height, |g| -g.px_bounds().min.y);
        let baseline = (height + cap_height) / 2.0;
        let mut pen = 0f32;
        let mut previous = None;
        let mut glyphs = Vec::new();
        for c in text.chars() {
            let id = scaled.glyph_id(c);
            if let Some(p) = previous {
                pen += scaled.kern(p, id);
            }
            previous = Some(id);
            let glyph = id.with_scale_and_position(scaled.scale(), ab_glyph::point(pen, baseline));
            if let Some(outline) = self.font.outline_glyph(glyph) {
                let bounds = outline.px_bounds();
                glyphs.push((outline, (bounds.min.x, bounds.min.y)));
            }
            pen += scaled.h_advance(id);
        }
        Laid {
            glyphs,
            width: pen,
            height,
        }
    }
}

type Result2 = Result<(), DrawingErrorKind<BitMapBackendError>>;

impl DrawingBackend for PngBackend<'_> {
    type ErrorType = BitMapBackendError;

    fn get_size(&self) -> (u32, u32) {
        self.inner.get_size()
    }
    fn ensure_prepared(&mut self) -> Result2 {
        self.inner.ensure_prepared()
    }
    fn present(&mut self) -> Result2 {
        self.inner.present()
    }
    fn draw_pixel(&mut self, point: BackendCoord, color: BackendColor) -> Result2 {
        self.inner.draw_pixel(point, color)
    }
    fn draw_line<S: BackendStyle>(
        &mut self,
        from: BackendCoord,
        to: BackendCoord,
        style: &S,
    ) -> Result2 {
        self.inner.draw_line(from, to, style)
    }
    fn draw_rect<S: BackendStyle>(
        &mut self,
        upper_left: BackendCoord,
        bottom_right: BackendCoord,
        style: &S,
        fill: bool,
    ) -> Result2 {
        self.inner.draw_rect(upper_left, bottom_right, style, fill)
    }
    fn draw_path<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        path: I,
        style: &S,
    ) -> Result2 {
        self.inner.draw_path(path, style)
    }
    fn draw_circle<S: BackendStyle>(
        &mut self,
        center: BackendCoord,
        radius: u32,
        style: &S,
        fill: bool,
    ) -> Result2 {
        self.inner.draw_circle(center, radius, style, fill)
    }
    fn fill_polygon<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        vert: I,
        style: &S,
    ) -> Result2 {
        self.inner.fill_polygon(vert, style)
    }
    fn blit_bitmap(&mut self, pos: BackendCoord, size: (u32, u32), src: &[u8]) -> Result2 {
        self.inner.blit_bitmap(pos, size, src)
    }

    fn estimate_text_size<S: BackendTextStyle>(
        &self,
        text: &str,
        style: &S,
    ) -> Result<(u32, u32), DrawingErrorKind<BitMapBackendError>> {
        let laid = self.text_layout(text, style.size());
        Ok((laid.width.ceil() as u32, laid.height.ceil() as u32))
    }

    fn draw_text<S: BackendTextStyle>(
        &mut self,
        text: &str,
        style: &S,
        pos: BackendCoord,
    ) -> Result2 {
        let color = style.color();
        if color.alpha == 0.0 {
            return Ok(());
        }
        let laid = self.text_layout(text, style.size());
        let (w, h) = (laid.width.round() as i32, laid.height.round() as i32);
        let dx = match style.anchor().h_pos {
            HPos::Left => 0,
            HPos::Right => -w,
            HPos::Center => -w / 2,
        };
        let dy = match style.anchor().v_pos {
            VPos::Top => 0,
            VPos::Center => -h / 2,
            VPos::Bottom => -h,
        };
        let turn = style.transform();
        let (width, height) = self.get_size();
        for (outline, (left, top)) in &laid.glyphs {
            let (left, top) = (left.floor() as i32, top.floor() as i32);
            let mut pixels = Vec::new();
            outline.draw(|x, y, coverage| pixels.push((x as i32, y as i32, coverage)));
            for (x, y, coverage) in pixels {
                if coverage <= 0.0 {
                    continue;
                }
                let (x, y) = turn.transform(left + x + dx, top + y + dy);
                let (x, y) = (pos.0 + x, pos.1 + y);
                if x >= 0 && y >= 0 && x < width as i32 && y < height as i32 {
                    let alpha = color.alpha * f64::from(coverage.min(1.0));
                    self.inner.draw_pixel(
                        (x, y),
                        BackendColor {
                            alpha,
                            rgb: color.rgb,
                        },
                    )?;
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn font() -> Option<&'static [u8]> {
        super::super::plot::FONT_PATHS
            .iter()
            .find_map(|p| std::fs::read(p).ok())
            .map(|b| &*Box::leak(b.into_boxed_slice()))
    }

    /// The columns of `img` (RGB, `w` wide) that hold any dark pixel.
    fn inked_columns(img: &[u8], w: usize) -> Vec<bool> {
        let mut cols = vec![false; w];
        for (i, px) in img.chunks(3).enumerate() {
            if px[0] < 128 {
                cols[i % w] = true;
            }
        }
        cols
    }

    /// The first column of each run of inked columns.
    fn run_starts(cols: &[bool]) -> Vec<usize> {
        (0..cols.len())
            .filter(|&i| cols[i] && (i == 0 || !cols[i - 1]))
            .collect()
    }

    fn set(text: &str, font: &'static [u8]) -> Vec<u8> {
        let (w, h) = (400u32, 160u32);
        let mut buf = vec![255u8; (w * h * 3) as usize];
        {
            let mut b = PngBackend::new(BitMapBackend::with_buffer(&mut buf, (w, h)), font)
                .expect("the font parses");
            let style = TextStyle::from(("sans-serif", SIZE).into_font()).color(&BLACK);
            b.draw_text(text, &style, (10, 10)).expect("drawn");
            b.present().expect("presented");
        }
        buf
    }

    const SIZE: f64 = 100.0;

    #[test]
    fn glyphs_sit_where_the_fonts_metrics_put_them() {
        // "1" has a wide left side bearing in DejaVu Sans, "e" a narrow
        // one. Set without the bearings (plotters' own text path) the ink
        // of "e" starts one advance of "1" after the ink of "1", and a gap
        // opens after each "1"; as the font sets them, it starts at the
        // advance plus the kerning plus the bearing of "e" minus that of
        // "1" (about 5 px less at this size).
        let Some(bytes) = font() else {
            eprintln!("no DejaVu Sans here: skipped");
            return;
        };
        let starts = run_starts(&inked_columns(&set("1e", bytes), 400));
        assert_eq!(starts.len(), 2, "two glyphs apart: {starts:?}");
        let f = FontRef::try_from_slice(bytes).expect("the font parses");
        let s = f.as_scaled(PxScale::from(SIZE as f32));
        let (one, e) = (s.glyph_id('1'), s.glyph_id('e'));
        let want = s.h_advance(one) + s.kern(one, e) + s.h_side_bearing(e) - s.h_side_bearing(one);
        let got = (starts[1] - starts[0]) as f32;
        assert!(
            (got - want).abs() <= 1.5,
            "ink of e {got} px after the ink of 1, the font says {want}"
        );
        let unbeared = s.h_advance(one) + s.kern(one, e);
        assert!(
            (unbeared - want).abs() > 3.0,
            "the test tells the two apart"
        );
    }
}
