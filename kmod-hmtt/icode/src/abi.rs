//! The hmtt module's ioctl interface, mirrored from
//! `kmod-hmtt/include/hmtt_ioctl.h` (the tests compile that header with
//! gcc and compare numbers and layouts).

/// `HMTT_ABI_VERSION`: the module's interface version this crate speaks.
pub const ABI_VERSION: u32 = 1;
/// Bytes per configuration-space line (one event index).
pub const LINE_SIZE: u64 = 64;
/// `HMTT_IOC_MAGIC`.
pub const IOC_MAGIC: u32 = 0xB7;

/// `struct hmtt_info`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Info {
    pub base: u64,
    pub size: u64,
    pub line_size: u32,
    pub version: u32,
    pub log_capacity: u64,
    pub log_written: u64,
    pub log_overruns: u64,
    pub icodes: u64,
    pub last_phys: u64,
    pub probe_misses: u64,
}

/// `HMTT_ICODE_WRITE`.
pub const ICODE_WRITE: u32 = 1;

/// `struct hmtt_icode_req`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IcodeReq {
    pub event: u32,
    pub flags: u32,
    pub phys: u64,
}

/// `struct hmtt_snapshot_req`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SnapshotReq {
    pub pid: i32,
    pub flags: u32,
    pub logged: u64,
    pub dropped: u64,
}

/// `HMTT_MAP_MAX_BITS`.
pub const MAP_MAX_BITS: usize = 64;

/// `struct hmtt_mapping_req`: physical address of event i is the XOR of
/// `columns[b]` over the bits b set in line index `first_line + i`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MappingReq {
    pub first_line: u64,
    pub nbits: u32,
    pub flags: u32,
    pub columns: [u64; MAP_MAX_BITS],
}

impl Default for MappingReq {
    fn default() -> Self {
        Self {
            first_line: 0,
            nbits: 0,
            flags: 0,
            columns: [0; MAP_MAX_BITS],
        }
    }
}

const IOC_WRITE: u32 = 1;
const IOC_READ: u32 = 2;

const fn ioc(dir: u32, nr: u32, size: usize) -> u32 {
    (dir << 30) | ((size as u32) << 16) | (IOC_MAGIC << 8) | nr
}

pub const IOC_INFO: u32 = ioc(IOC_READ, 0, core::mem::size_of::<Info>());
pub const IOC_ICODE: u32 = ioc(IOC_READ | IOC_WRITE, 1, core::mem::size_of::<IcodeReq>());
pub const IOC_TRACE_PID: u32 = ioc(IOC_WRITE, 2, core::mem::size_of::<i32>());
pub const IOC_UNTRACE_PID: u32 = ioc(IOC_WRITE, 3, core::mem::size_of::<i32>());
pub const IOC_SNAPSHOT: u32 = ioc(IOC_READ | IOC_WRITE, 4, core::mem::size_of::<SnapshotReq>());
pub const IOC_CACHE_DISABLE: u32 = ioc(IOC_WRITE, 5, core::mem::size_of::<u32>());
pub const IOC_SET_MAPPING: u32 = ioc(IOC_WRITE, 6, core::mem::size_of::<MappingReq>());

/// Issue an ioctl whose argument is `*arg`; the kernel may write it back.
///
/// # Safety
/// `T` must be the type the kernel expects for `request` (as the constants
/// above pair them), and `fd` an open file descriptor.
pub unsafe fn ioctl<T>(fd: libc::c_int, request: u32, arg: &mut T) -> std::io::Result<()> {
    // SAFETY: the caller pairs request and T; arg is a valid, exclusive pointer.
    let ret = unsafe { libc::ioctl(fd, request as _, arg as *mut T) };
    if ret < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_match_the_c_header() {
        // Sizes fixed by hmtt_ioctl.h; the gcc comparison is in tests/abi.rs.
        assert_eq!(core::mem::size_of::<Info>(), 72);
        assert_eq!(core::mem::size_of::<IcodeReq>(), 16);
        assert_eq!(core::mem::size_of::<SnapshotReq>(), 24);
        assert_eq!(IOC_INFO, 0x8048_b700);
        assert_eq!(IOC_ICODE, 0xc010_b701);
    }
}
