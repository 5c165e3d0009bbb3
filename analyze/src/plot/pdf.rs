//! The PDF pictures: the SVG that plotters writes, parsed by usvg with the
//! pictures' font as its sans-serif face and written by svg2pdf as vector
//! PDF, the font's glyphs embedded (a subset), the text selectable. The
//! page is the picture at 300 dpi: 1050 px wide is 3.5 in, a single
//! column, and the text is the PNG's 8 pt.

use std::sync::{Arc, OnceLock};

use svg2pdf::usvg;

/// Pixels per inch of the page: the PNG's resolution at a column's width.
const DPI: f32 = 300.0;

/// The font database usvg lays the text out with: the pictures' font
/// alone, made the sans-serif family (the SVG's `font-family`).
fn fonts(font: &'static [u8]) -> Result<Arc<usvg::fontdb::Database>, String> {
    static DB: OnceLock<Result<Arc<usvg::fontdb::Database>, String>> = OnceLock::new();
    DB.get_or_init(|| {
        let mut db = usvg::fontdb::Database::new();
        db.load_font_data(font.to_vec());
        let family = db
            .faces()
            .next()
            .and_then(|f| f.families.first())
            .map(|(name, _)| name.clone())
            .ok_or_else(|| "the pictures' font holds no face usvg can read".to_string())?;
        db.set_sans_serif_family(family);
        Ok(Arc::new(db))
    })
    .clone()
}

/// The PDF of an SVG picture, its text in `font` (a TrueType file's bytes).
pub(super) fn svg_to_pdf(svg: &str, font: &'static [u8]) -> Result<Vec<u8>, String> {
    let options = usvg::Options {
        fontdb: fonts(font)?,
        ..usvg::Options::default()
    };
    let tree = usvg::Tree::from_str(svg, &options).map_err(|e| format!("reading the SVG: {e}"))?;
    svg2pdf::to_pdf(
        &tree,
        svg2pdf::ConversionOptions::default(),
        svg2pdf::PageOptions { dpi: DPI },
    )
    .map_err(|e| format!("writing the PDF: {e}"))
}
