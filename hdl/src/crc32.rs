//! CRC-32 (IEEE 802.3, reflected polynomial 0xEDB88320) one byte per clock,
//! for the Ethernet frame check sequence.
//!
//! [`Crc32Byte`] is purely combinational: `crc_out = step(crc_in, data)`
//! with no initial value and no final inversion; the framer keeps the
//! register, starts it at `0xFFFF_FFFF` and sends `!crc` least significant
//! byte first. Its Verilog is the 32 XOR equations of the byte step, derived
//! here from the same bitwise definition the simulation runs, so the two
//! cannot drift apart.

use rust_hdl::prelude::*;

/// The reflected CRC-32 polynomial of IEEE 802.3.
pub const POLY_REFLECTED: u32 = 0xEDB8_8320;

/// Initial register value of the Ethernet FCS.
pub const INIT: u32 = 0xFFFF_FFFF;

/// One byte of the reflected CRC-32 (no initial value, no final inversion).
pub fn crc32_step(crc: u32, byte: u8) -> u32 {
    let mut c = crc ^ byte as u32;
    for _ in 0..8 {
        c = if c & 1 != 0 {
            (c >> 1) ^ POLY_REFLECTED
        } else {
            c >> 1
        };
    }
    c
}

/// The Ethernet FCS of `bytes` (destination MAC through payload): the value
/// whose little-endian bytes follow the frame.
pub fn ethernet_fcs(bytes: &[u8]) -> u32 {
    !bytes.iter().fold(INIT, |c, &b| crc32_step(c, b))
}

/// For every output bit, the input bits it is the XOR of: bits 0..32 are
/// `crc_in`, bits 32..40 are `data`. The step is linear over GF(2), so the
/// image of each unit vector gives the whole map.
fn step_equations() -> [Vec<usize>; 32] {
    let mut eqs: [Vec<usize>; 32] = Default::default();
    for input in 0..40 {
        let out = if input < 32 {
            crc32_step(1 << input, 0)
        } else {
            crc32_step(0, 1 << (input - 32))
        };
        for (bit, eq) in eqs.iter_mut().enumerate() {
            if out & (1 << bit) != 0 {
                eq.push(input);
            }
        }
    }
    eqs
}

/// Combinational byte step of the CRC-32.
#[derive(LogicBlock, Default)]
pub struct Crc32Byte {
    pub crc_in: Signal<In, Bits<32>>,
    pub data: Signal<In, Bits<8>>,
    pub crc_out: Signal<Out, Bits<32>>,
}

impl Logic for Crc32Byte {
    fn update(&mut self) {
        let crc: u64 = self.crc_in.val().into();
        let data: u64 = self.data.val().into();
        self.crc_out.next = (crc32_step(crc as u32, data as u8) as u64).into();
    }

    fn connect(&mut self) {
        self.crc_out.connect();
    }

    fn hdl(&self) -> Verilog {
        let lines: Vec<String> = step_equations()
            .iter()
            .enumerate()
            .map(|(bit, inputs)| {
                let terms: Vec<String> = inputs
                    .iter()
                    .map(|&i| {
                        if i < 32 {
                            format!("crc_in[{i}]")
                        } else {
                            format!("data[{}]", i - 32)
                        }
                    })
                    .collect();
                format!("   crc_out[{bit}] = {};", terms.join(" ^ "))
            })
            .collect();
        Verilog::Custom(format!("always @(*) begin\n{}\nend\n", lines.join("\n")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn software_crc_matches_the_standard_check_value() {
        // The CRC-32 check value: CRC of "123456789" is 0xCBF43926.
        assert_eq!(ethernet_fcs(b"123456789"), 0xCBF4_3926);
    }

    #[test]
    fn equations_reproduce_the_bitwise_step() {
        let eqs = step_equations();
        let mut state = 0x1234_5678_u64;
        for _ in 0..200 {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let crc = (state >> 16) as u32;
            let data = (state >> 8) as u8;
            let input = crc as u64 | (data as u64) << 32;
            let mut out = 0u32;
            for (bit, eq) in eqs.iter().enumerate() {
                let parity = eq.iter().fold(0, |p, &i| p ^ (input >> i) & 1);
                out |= (parity as u32) << bit;
            }
            assert_eq!(out, crc32_step(crc, data));
        }
    }

    #[test]
    fn block_simulation_matches_software() {
        let mut uut = Crc32Byte::default();
        uut.connect_all();
        let mut crc = INIT;
        for &b in b"hmtt frame check" {
            uut.crc_in.next = (crc as u64).into();
            uut.data.next = (b as u64).into();
            assert!(simulate(&mut uut, 10));
            let out: u64 = uut.crc_out.val().into();
            crc = crc32_step(crc, b);
            assert_eq!(out as u32, crc);
        }
    }

    #[test]
    fn crc32_byte_is_synthesizable() {
        let mut uut = Crc32Byte::default();
        uut.connect_all();
        yosys_validate("hmtt_crc32_byte", &generate_verilog(&uut)).unwrap();
    }
}
