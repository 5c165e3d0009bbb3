//! The file formats of `hmtt analyze --plot` (`--plot-format`).

/// The file formats of the pictures (`--plot-format`): PNG and SVG by
/// default, PDF when asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlotFormats {
    pub png: bool,
    pub svg: bool,
    pub pdf: bool,
}

/// The pictures' file extensions, as [`PlotFormats`] names them.
pub const EXTENSIONS: [&str; 3] = ["png", "svg", "pdf"];

impl Default for PlotFormats {
    fn default() -> PlotFormats {
        PlotFormats {
            png: true,
            svg: true,
            pdf: false,
        }
    }
}

impl PlotFormats {
    /// The extensions asked, in [`EXTENSIONS`]' order.
    pub fn extensions(&self) -> impl Iterator<Item = &'static str> {
        let asked = [self.png, self.svg, self.pdf];
        EXTENSIONS
            .into_iter()
            .zip(asked)
            .filter_map(|(e, on)| on.then_some(e))
    }
}

impl std::str::FromStr for PlotFormats {
    type Err = String;
    /// `png`, `svg` and `pdf`, separated by commas (at least one).
    fn from_str(s: &str) -> Result<PlotFormats, String> {
        let mut f = PlotFormats {
            png: false,
            svg: false,
            pdf: false,
        };
        for name in s.split(',').map(str::trim) {
            match name {
                "png" => f.png = true,
                "svg" => f.svg = true,
                "pdf" => f.pdf = true,
                _ => {
                    return Err(format!(
                        "'{name}' is not a picture format: png, svg or pdf, separated by commas"
                    ))
                }
            }
        }
        Ok(f)
    }
}
