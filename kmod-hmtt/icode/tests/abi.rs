//! The Rust mirror of the module's ioctl ABI and record layout against the
//! C headers themselves: gcc compiles a program that prints the numbers
//! and offsets from kmod-hmtt/include, and they must match ours.

use std::path::Path;
use std::process::Command;

use hmtt_icode::abi;

const PROGRAM: &str = r#"
#include <stddef.h>
#include <stdio.h>
#include "hmtt_user.h"
int main(void)
{
	printf("IOC_INFO %u\n", (unsigned)HMTT_IOC_INFO);
	printf("IOC_ICODE %u\n", (unsigned)HMTT_IOC_ICODE);
	printf("IOC_TRACE_PID %u\n", (unsigned)HMTT_IOC_TRACE_PID);
	printf("IOC_UNTRACE_PID %u\n", (unsigned)HMTT_IOC_UNTRACE_PID);
	printf("IOC_SNAPSHOT %u\n", (unsigned)HMTT_IOC_SNAPSHOT);
	printf("IOC_CACHE_DISABLE %u\n", (unsigned)HMTT_IOC_CACHE_DISABLE);
	printf("IOC_SET_MAPPING %u\n", (unsigned)HMTT_IOC_SET_MAPPING);
	printf("mapping.columns %zu\n", offsetof(struct hmtt_mapping_req, columns));
	printf("ABI_VERSION %u\n", HMTT_ABI_VERSION);
	printf("LINE_SIZE %u\n", HMTT_LINE_SIZE);
	printf("ICODE_WRITE %u\n", HMTT_ICODE_WRITE);
	printf("info.last_phys %zu\n", offsetof(struct hmtt_info, last_phys));
	printf("info.probe_misses %zu\n", offsetof(struct hmtt_info, probe_misses));
	printf("info.size %zu\n", sizeof(struct hmtt_info));
	printf("record.size %zu\n", sizeof(struct hmtt_log_record));
	printf("record.kind %zu\n", offsetof(struct hmtt_log_record, kind));
	printf("record.pid %zu\n", offsetof(struct hmtt_log_record, pid));
	printf("record.c %zu\n", offsetof(struct hmtt_log_record, c));
	printf("record.time_ns %zu\n", offsetof(struct hmtt_log_record, time_ns));
	printf("record.name %zu\n", offsetof(struct hmtt_log_record, name));
	printf("KIND_SNAPSHOT_MAP %u\n", HMTT_LOG_SNAPSHOT_MAP);
	printf("KIND_OVERRUN %u\n", HMTT_LOG_OVERRUN);
	printf("KIND_FORK %u\n", HMTT_LOG_FORK);
	printf("KIND_SWITCH %u\n", HMTT_LOG_SWITCH);
	printf("KIND_CPU_AREA %u\n", HMTT_LOG_CPU_AREA);
	printf("LOG_FILE_VERSION %u\n", HMTT_LOG_FILE_VERSION);
	printf("EV_LOG_FIRST %u\n", HMTT_EV_LOG_FIRST);
	printf("EV_USER_FIRST %u\n", HMTT_EV_USER_FIRST);
	return 0;
}
"#;

#[test]
fn c_header_and_rust_mirror_agree() {
    let include = Path::new(env!("CARGO_MANIFEST_DIR")).join("../include");
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("abi.c");
    let exe = dir.path().join("abi");
    std::fs::write(&src, PROGRAM).unwrap();
    let status = Command::new("gcc")
        .arg("-Wall")
        .arg("-Werror")
        .arg("-I")
        .arg(&include)
        .arg("-o")
        .arg(&exe)
        .arg(&src)
        .status()
        .expect("gcc not found: apt-get install gcc");
    assert!(status.success(), "the C headers do not compile");
    let out = Command::new(&exe).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let value = |key: &str| -> u64 {
        text.lines()
            .find_map(|l| l.strip_prefix(key)?.strip_prefix(' ')?.parse().ok())
            .unwrap_or_else(|| panic!("{key} not printed:\n{text}"))
    };
    assert_eq!(value("IOC_INFO"), u64::from(abi::IOC_INFO));
    assert_eq!(value("IOC_ICODE"), u64::from(abi::IOC_ICODE));
    assert_eq!(value("IOC_TRACE_PID"), u64::from(abi::IOC_TRACE_PID));
    assert_eq!(value("IOC_UNTRACE_PID"), u64::from(abi::IOC_UNTRACE_PID));
    assert_eq!(value("IOC_SNAPSHOT"), u64::from(abi::IOC_SNAPSHOT));
    assert_eq!(
        value("IOC_CACHE_DISABLE"),
        u64::from(abi::IOC_CACHE_DISABLE)
    );
    assert_eq!(value("IOC_SET_MAPPING"), u64::from(abi::IOC_SET_MAPPING));
    assert_eq!(
        value("mapping.columns"),
        std::mem::offset_of!(abi::MappingReq, columns) as u64
    );
    assert_eq!(value("ABI_VERSION"), u64::from(abi::ABI_VERSION));
    assert_eq!(value("LINE_SIZE"), abi::LINE_SIZE);
    assert_eq!(value("ICODE_WRITE"), u64::from(abi::ICODE_WRITE));
    assert_eq!(
        value("info.last_phys"),
        std::mem::offset_of!(abi::Info, last_phys) as u64
    );
    assert_eq!(
        value("info.probe_misses"),
        std::mem::offset_of!(abi::Info, probe_misses) as u64
    );
    assert_eq!(value("info.size"), std::mem::size_of::<abi::Info>() as u64);
    // The kernel record is docs/format.md section 8, as hmtt_format::klog reads it.
    assert_eq!(value("record.size"), hmtt_format::klog::RECORD_LEN as u64);
    assert_eq!(value("record.kind"), 8);
    assert_eq!(value("record.pid"), 12);
    assert_eq!(value("record.c"), 32);
    assert_eq!(value("record.time_ns"), 40);
    assert_eq!(value("record.name"), 48);
    assert_eq!(
        value("KIND_SNAPSHOT_MAP"),
        hmtt_format::klog::Kind::SnapshotMap as u64
    );
    assert_eq!(
        value("KIND_OVERRUN"),
        hmtt_format::klog::Kind::Overrun as u64
    );
    assert_eq!(value("KIND_FORK"), hmtt_format::klog::Kind::Fork as u64);
    assert_eq!(value("KIND_SWITCH"), hmtt_format::klog::Kind::Switch as u64);
    assert_eq!(
        value("KIND_CPU_AREA"),
        hmtt_format::klog::Kind::CpuArea as u64
    );
    assert_eq!(
        value("LOG_FILE_VERSION"),
        u64::from(hmtt_format::klog::VERSION)
    );
    assert_eq!(
        value("EV_LOG_FIRST"),
        u64::from(hmtt_format::config::FIRST_LOG_TAG)
    );
    assert_eq!(
        value("EV_USER_FIRST"),
        u64::from(hmtt_format::config::FIRST_USER_EVENT)
    );
}
