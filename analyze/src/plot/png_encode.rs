//! The PNG pictures' encoding: the drawn pixels as an indexed-colour PNG
//! when they hold at most 256 colours (a picture of flat fills, lines and
//! a few colour scales usually does: a byte per pixel instead of three),
//! as 8-bit RGB otherwise, RGB rows with the filter chosen row by row.
//! zlib's default level: its best level made the gallery's pictures no
//! smaller (1 % larger) for twice the CPU. Lossless either way: the
//! decoded pixels are the drawn ones.

use std::collections::HashMap;

/// The PNG file of `rgb` (`width × height` pixels, 3 bytes each, rows top
/// first).
pub(super) fn encode_png(rgb: &[u8], (width, height): (u32, u32)) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, width, height);
    encoder.set_depth(png::BitDepth::Eight);
    encoder.set_compression(png::Compression::Default);
    let data = match palette_of(rgb) {
        Some((palette, indices)) => {
            encoder.set_color(png::ColorType::Indexed);
            encoder.set_palette(palette);
            // Indices of neighbouring pixels predict each other poorly:
            // unfiltered rows compress best.
            encoder.set_filter(png::FilterType::NoFilter);
            indices
        }
        None => {
            encoder.set_color(png::ColorType::Rgb);
            encoder.set_adaptive_filter(png::AdaptiveFilterType::Adaptive);
            rgb.to_vec()
        }
    };
    let mut writer = encoder.write_header().map_err(|e| e.to_string())?;
    writer.write_image_data(&data).map_err(|e| e.to_string())?;
    writer.finish().map_err(|e| e.to_string())?;
    Ok(out)
}

/// The palette (RGB triples, in order of first use) and each pixel's
/// index in it, when `rgb` holds at most 256 colours.
fn palette_of(rgb: &[u8]) -> Option<(Vec<u8>, Vec<u8>)> {
    let mut index: HashMap<[u8; 3], u8> = HashMap::new();
    let mut palette = Vec::new();
    let mut indices = Vec::with_capacity(rgb.len() / 3);
    for px in rgb.chunks_exact(3) {
        let colour = [px[0], px[1], px[2]];
        let i = match index.get(&colour) {
            Some(&i) => i,
            None => {
                let i = u8::try_from(index.len()).ok()?;
                index.insert(colour, i);
                palette.extend_from_slice(&colour);
                i
            }
        };
        indices.push(i);
    }
    Some((palette, indices))
}

#[cfg(test)]
mod tests {
    use super::encode_png;

    /// The pixels of a PNG file, as 8-bit RGB.
    fn decode(png_bytes: &[u8]) -> (png::ColorType, Vec<u8>) {
        let mut decoder = png::Decoder::new(png_bytes);
        decoder.set_transformations(png::Transformations::EXPAND);
        let mut reader = decoder.read_info().unwrap();
        let colour = reader.info().color_type;
        let mut buf = vec![0; reader.output_buffer_size()];
        let frame = reader.next_frame(&mut buf).unwrap();
        buf.truncate(frame.buffer_size());
        (colour, buf)
    }

    /// An image of `colours` colours, each pixel's chosen by a hash.
    fn image(width: u32, height: u32, colours: u32) -> Vec<u8> {
        (0..width * height)
            .flat_map(|p| {
                let c = p.wrapping_mul(2_654_435_761) % colours;
                [(c & 0xff) as u8, (c >> 8) as u8, (c * 7 % 251) as u8]
            })
            .collect()
    }

    #[test]
    fn few_colours_go_indexed_many_rgb_and_both_decode_to_the_pixels() {
        for (colours, want) in [
            (1, png::ColorType::Indexed),
            (256, png::ColorType::Indexed),
            (257, png::ColorType::Rgb),
            (5000, png::ColorType::Rgb),
        ] {
            let rgb = image(97, 61, colours);
            let (colour, pixels) = decode(&encode_png(&rgb, (97, 61)).unwrap());
            assert_eq!(colour, want, "{colours} colours");
            assert!(pixels == rgb, "{colours} colours: the pixels differ");
        }
    }
}
