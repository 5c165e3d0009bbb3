//! The XDP program of the xdp receive path, assembled by hand (no
//! compiler, no loader library), and the `bpf(2)` calls that load it, make
//! its maps and attach it to an interface.
//!
//! The program sends an IPv4 UDP datagram (whole or first fragment) whose
//! destination address and port are one of the capture's inputs to the
//! AF_XDP socket of that input and of the receive queue it arrived on; everything else goes on to
//! the kernel's stack (`XDP_PASS`), so the host's other traffic is untouched.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

// The program compares packet bytes loaded as host-order words with
// constants written for a little-endian host (the EtherType as 0x0008,
// the fragment mask as 0xff1f, TO_BE as the port's swap), and Insn::bytes
// packs the registers in little-endian order.
#[cfg(target_endian = "big")]
compile_error!(
    "the xdp path's hand-assembled XDP program assumes a little-endian host \
     (its constants and instruction encoding); it is not ported to big-endian"
);

/// XSKMAP slots per capture port: the socket of port slot `s` on queue
/// `q` sits at `s * MAX_QUEUES + q`.
pub const MAX_QUEUES: u32 = 64;

// linux/bpf.h
const BPF_MAP_CREATE: libc::c_long = 0;
const BPF_MAP_UPDATE_ELEM: libc::c_long = 2;
const BPF_PROG_LOAD: libc::c_long = 5;
const BPF_LINK_CREATE: libc::c_long = 28;
const MAP_ARRAY: u32 = 2;
const MAP_XSKMAP: u32 = 17;
const PROG_XDP: u32 = 6;
const ATTACH_XDP: u32 = 37;
/// BPF_F_XDP_HAS_FRAGS: the program takes multi-buffer frames (jumbo
/// frames larger than a page arrive as several buffers).
const F_XDP_HAS_FRAGS: u32 = 1 << 5;
/// XDP_FLAGS_SKB_MODE and XDP_FLAGS_DRV_MODE (linux/if_link.h).
pub const XDP_FLAGS_SKB: u32 = 1 << 1;
pub const XDP_FLAGS_DRV: u32 = 1 << 2;
const XDP_PASS: i32 = 2;
const HELPER_MAP_LOOKUP: i32 = 1;
const HELPER_REDIRECT_MAP: i32 = 51;

/// One eBPF instruction (struct bpf_insn).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Insn {
    pub code: u8,
    pub dst: u8,
    pub src: u8,
    pub off: i16,
    pub imm: i32,
}

impl Insn {
    fn bytes(self) -> [u8; 8] {
        let mut b = [0u8; 8];
        b[0] = self.code;
        b[1] = (self.dst & 0xf) | (self.src << 4);
        b[2..4].copy_from_slice(&self.off.to_le_bytes());
        b[4..8].copy_from_slice(&self.imm.to_le_bytes());
        b
    }
}

const fn i(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> Insn {
    Insn {
        code,
        dst,
        src,
        off,
        imm,
    }
}

// Opcodes (linux/bpf_common.h, linux/bpf.h).
const LDX_W: u8 = 0x61;
const LDX_H: u8 = 0x69;
const LDX_B: u8 = 0x71;
const STX_W: u8 = 0x63;
const MOV_K: u8 = 0xb7;
const MOV_X: u8 = 0xbf;
const ADD_K: u8 = 0x07;
const ADD_X: u8 = 0x0f;
const AND_K: u8 = 0x57;
const LSH_K: u8 = 0x67;
const RSH_K: u8 = 0x77;
const SUB_K: u8 = 0x17;
/// BPF_ALU | BPF_END | BPF_TO_BE: to big-endian, i.e. a swap on x86.
const TO_BE: u8 = 0xdc;
const JNE_K: u8 = 0x55;
const JEQ_K: u8 = 0x15;
const JNE_X: u8 = 0x5d;
const JGT_X: u8 = 0x2d;
const JGT_K: u8 = 0x25;
const JLT_K: u8 = 0xa5;
const CALL: u8 = 0x85;
const EXIT: u8 = 0x95;
const LD_IMM64: u8 = 0x18;
/// src register of an LD_IMM64 whose immediate is a map's descriptor.
const PSEUDO_MAP_FD: u8 = 1;

/// The program, with `ports` (ARRAY of 65536: UDP port -> [`PortValue`])
/// and `xsks` (XSKMAP) given by descriptor. Jumps
/// marked `PASS` are patched to the final `return XDP_PASS`.
pub fn program(ports: i32, xsks: i32) -> Vec<Insn> {
    const PASS: i16 = i16::MAX;
    let mut p = vec![
        i(MOV_X, 6, 1, 0, 0),  // r6 = ctx
        i(LDX_W, 2, 6, 0, 0),  // r2 = data
        i(LDX_W, 3, 6, 4, 0),  // r3 = data_end
        i(MOV_X, 4, 2, 0, 0),  // r4 = data
        i(ADD_K, 4, 0, 0, 34), // Ethernet + a minimal IPv4 header
        i(JGT_X, 4, 3, PASS, 0),
        i(LDX_W, 8, 2, 30, 0), // r8 = IPv4 destination, as stored
        i(LDX_H, 5, 2, 12, 0), // EtherType, as stored
        i(JNE_K, 5, 0, PASS, 0x0008),
        i(LDX_B, 5, 2, 23, 0), // IP protocol
        i(JNE_K, 5, 0, PASS, 17),
        i(LDX_H, 5, 2, 20, 0),     // flags and fragment offset, as stored
        i(AND_K, 5, 0, 0, 0xff1f), // the offset's bits: a later fragment
        i(JNE_K, 5, 0, PASS, 0),
        i(LDX_B, 5, 2, 14, 0), // version and header length
        i(MOV_X, 4, 5, 0, 0),
        i(RSH_K, 4, 0, 0, 4),
        i(JNE_K, 4, 0, PASS, 4), // not IPv4: the stack drops it
        i(AND_K, 5, 0, 0, 0xf),
        i(JLT_K, 5, 0, PASS, 5), // shorter than a header: as above
        i(LSH_K, 5, 0, 0, 2),    // r5 = header length in bytes
        i(ADD_X, 2, 5, 0, 0),    // r2 = data + header length
        i(MOV_X, 4, 2, 0, 0),
        i(ADD_K, 4, 0, 0, 14 + 8), // the UDP header
        i(JGT_X, 4, 3, PASS, 0),
        i(LDX_H, 5, 2, 14 + 2, 0), // UDP destination port
        i(TO_BE, 5, 0, 0, 16),
        i(STX_W, 10, 5, -4, 0), // key on the stack
        i(MOV_X, 2, 10, 0, 0),
        i(ADD_K, 2, 0, 0, -4),
        i(LD_IMM64, 1, PSEUDO_MAP_FD, 0, ports),
        i(0, 0, 0, 0, 0),
        i(CALL, 0, 0, 0, HELPER_MAP_LOOKUP),
        i(JEQ_K, 0, 0, PASS, 0),
        i(LDX_W, 7, 0, 0, 0), // slot + 1
        i(JEQ_K, 7, 0, PASS, 0),
        i(LDX_W, 5, 0, 4, 0), // the input's address
        i(JNE_X, 5, 8, PASS, 0),
        i(SUB_K, 7, 0, 0, 1),
        i(LSH_K, 7, 0, 0, MAX_QUEUES.trailing_zeros() as i32),
        i(LDX_W, 2, 6, 16, 0), // rx_queue_index
        // Past the map's queues the key would be another port's socket.
        i(JGT_K, 2, 0, PASS, MAX_QUEUES as i32 - 1),
        i(ADD_X, 2, 7, 0, 0),
        i(LD_IMM64, 1, PSEUDO_MAP_FD, 0, xsks),
        i(0, 0, 0, 0, 0),
        i(MOV_K, 3, 0, 0, XDP_PASS), // when the slot holds no socket
        i(CALL, 0, 0, 0, HELPER_REDIRECT_MAP),
        i(EXIT, 0, 0, 0, 0),
        i(MOV_K, 0, 0, 0, XDP_PASS),
        i(EXIT, 0, 0, 0, 0),
    ];
    let pass = p.len() - 2;
    for (k, x) in p.iter_mut().enumerate() {
        if x.off == PASS {
            x.off = (pass - k - 1) as i16;
        }
    }
    p
}

fn sys_bpf(cmd: libc::c_long, attr: &mut [u64; 16]) -> io::Result<libc::c_long> {
    // SAFETY: bpf(2) with a zeroed union bpf_attr of 128 bytes whose
    // fields for `cmd` were filled in; pointers in it point at live data.
    let r = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            cmd,
            attr.as_mut_ptr(),
            std::mem::size_of_val(attr) as libc::c_uint,
        )
    };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

fn u32_at(attr: &mut [u64; 16], byte: usize, v: u32) {
    let w = &mut attr[byte / 8];
    let shift = (byte % 8) * 8;
    *w = (*w & !(0xffff_ffffu64 << shift)) | (u64::from(v) << shift);
}

fn fd_of(r: libc::c_long) -> OwnedFd {
    // SAFETY: a descriptor bpf(2) just returned, owned by nobody else.
    unsafe { OwnedFd::from_raw_fd(r as libc::c_int) }
}

fn map_create(kind: u32, value_size: u32, entries: u32) -> io::Result<OwnedFd> {
    let mut a = [0u64; 16];
    u32_at(&mut a, 0, kind);
    u32_at(&mut a, 4, 4); // key size
    u32_at(&mut a, 8, value_size);
    u32_at(&mut a, 12, entries);
    sys_bpf(BPF_MAP_CREATE, &mut a).map(fd_of)
}

/// A value of the ports map: which input a UDP port is, and its address.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PortValue {
    /// The input's slot + 1; 0 for a port not captured.
    pub slot1: u32,
    /// The input's IPv4 address, in network order as the packet holds it.
    pub daddr: [u8; 4],
}

/// The ports map (UDP port -> [`PortValue`]).
pub fn ports_map() -> io::Result<OwnedFd> {
    map_create(MAP_ARRAY, std::mem::size_of::<PortValue>() as u32, 1 << 16)
}

/// The sockets map, room for `slots` ports on [`MAX_QUEUES`] queues.
pub fn xsk_map(slots: u32) -> io::Result<OwnedFd> {
    map_create(MAP_XSKMAP, 4, slots * MAX_QUEUES)
}

/// Sets `key` of `map` to `value`, of the map's value size.
pub fn map_set<V: Copy>(map: &OwnedFd, key: u32, value: &V) -> io::Result<()> {
    let mut a = [0u64; 16];
    u32_at(&mut a, 0, map.as_raw_fd() as u32);
    a[1] = std::ptr::addr_of!(key) as u64;
    a[2] = (value as *const V) as u64;
    sys_bpf(BPF_MAP_UPDATE_ELEM, &mut a).map(|_| ())
}

/// Loads the program, taking multi-buffer frames if `frags`; the
/// verifier's log is in the error when it refuses.
pub fn load(prog: &[Insn], frags: bool) -> io::Result<OwnedFd> {
    let code: Vec<u8> = prog.iter().flat_map(|x| x.bytes()).collect();
    let license = c"GPL";
    let mut log = vec![0u8; 64 << 10];
    let mut a = [0u64; 16];
    u32_at(&mut a, 0, PROG_XDP);
    u32_at(&mut a, 4, prog.len() as u32);
    a[1] = code.as_ptr() as u64;
    a[2] = license.as_ptr() as u64;
    u32_at(&mut a, 24, 1); // log level
    u32_at(&mut a, 28, log.len() as u32);
    a[4] = log.as_mut_ptr() as u64;
    if frags {
        u32_at(&mut a, 44, F_XDP_HAS_FRAGS);
    }
    a[6] = u64::from_le_bytes(*b"hmtt_xdp"); // prog_name
    u32_at(&mut a, 68, ATTACH_XDP);
    sys_bpf(BPF_PROG_LOAD, &mut a).map(fd_of).map_err(|e| {
        let end = log.iter().position(|&b| b == 0).unwrap_or(0);
        let text = String::from_utf8_lossy(&log[..end]);
        let tail: String = text.lines().rev().take(4).collect::<Vec<_>>().join(" | ");
        io::Error::new(e.kind(), format!("{e} (verifier: {tail})"))
    })
}

/// Attaches `prog` to interface `ifindex` in the mode `flags`
/// ([`XDP_FLAGS_DRV`] or [`XDP_FLAGS_SKB`]); closing the link detaches it.
pub fn attach(prog: &OwnedFd, ifindex: u32, flags: u32) -> io::Result<OwnedFd> {
    let mut a = [0u64; 16];
    u32_at(&mut a, 0, prog.as_raw_fd() as u32);
    u32_at(&mut a, 4, ifindex);
    u32_at(&mut a, 8, ATTACH_XDP);
    u32_at(&mut a, 12, flags);
    sys_bpf(BPF_LINK_CREATE, &mut a).map(fd_of)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_jump_lands_inside_the_program_and_it_ends_in_exits() {
        let p = program(3, 4);
        for (k, x) in p.iter().enumerate() {
            if x.code & 0x07 == 0x05 && x.code != CALL && x.code != EXIT {
                let to = k as i64 + 1 + i64::from(x.off);
                assert!((0..p.len() as i64).contains(&to), "insn {k}: {x:?}");
                assert_eq!(p[to as usize], i(MOV_K, 0, 0, 0, XDP_PASS), "insn {k}");
            }
        }
        assert_eq!(p.last().unwrap().code, EXIT);
        assert_eq!(p.iter().filter(|x| x.code == LD_IMM64).count(), 2);
        assert_eq!(i(LDX_W, 2, 6, 4, 0).bytes(), [0x61, 0x62, 4, 0, 0, 0, 0, 0]);
    }
}
