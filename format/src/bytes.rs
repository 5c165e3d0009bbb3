//! Little-endian integers at fixed byte ranges: the one set of helpers the
//! formats' views and writers read and write their fields with. A range of
//! the wrong length is a bug in the caller's field table and panics.

use core::ops::Range;

/// A field's bytes within its header or record.
pub type Field = Range<usize>;

#[inline]
pub fn u16_at(b: &[u8], f: Field) -> u16 {
    u16::from_le_bytes(b[f].try_into().expect("a 2-byte field"))
}

#[inline]
pub fn u32_at(b: &[u8], f: Field) -> u32 {
    u32::from_le_bytes(b[f].try_into().expect("a 4-byte field"))
}

#[inline]
pub fn u64_at(b: &[u8], f: Field) -> u64 {
    u64::from_le_bytes(b[f].try_into().expect("an 8-byte field"))
}

#[inline]
pub fn put_u16(b: &mut [u8], f: Field, v: u16) {
    b[f].copy_from_slice(&v.to_le_bytes());
}

#[inline]
pub fn put_u32(b: &mut [u8], f: Field, v: u32) {
    b[f].copy_from_slice(&v.to_le_bytes());
}

#[inline]
pub fn put_u64(b: &mut [u8], f: Field, v: u64) {
    b[f].copy_from_slice(&v.to_le_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_little_endian_at_their_offsets() {
        let mut b = [0u8; 16];
        put_u16(&mut b, 1..3, 0x0102);
        put_u32(&mut b, 3..7, 0x0304_0506);
        put_u64(&mut b, 8..16, 0x0708_090a_0b0c_0d0e);
        assert_eq!(
            b,
            [0, 2, 1, 6, 5, 4, 3, 0, 0xe, 0xd, 0xc, 0xb, 0xa, 9, 8, 7]
        );
        assert_eq!(u16_at(&b, 1..3), 0x0102);
        assert_eq!(u32_at(&b, 3..7), 0x0304_0506);
        assert_eq!(u64_at(&b, 8..16), 0x0708_090a_0b0c_0d0e);
    }

    #[test]
    #[should_panic(expected = "a 4-byte field")]
    fn a_field_of_the_wrong_length_is_a_bug() {
        u32_at(&[0u8; 8], 0..3);
    }
}
