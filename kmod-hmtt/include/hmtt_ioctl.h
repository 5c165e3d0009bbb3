/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * hmtt_ioctl.h - user-space ABI of the hmtt kernel module: the ioctls of
 * /dev/hmtt and the 64-byte records read from /dev/hmtt_log.
 *
 * The record layout is docs/format.md section 8 (kernel log, version 3);
 * the Rust side lives in hmtt_format::klog and hmtt_icode. Shared by the
 * module (hmtt.h), C programs (hmtt_user.h) and checked against the Rust
 * constants by the hmtt-icode tests.
 */
#ifndef _UAPI_HMTT_IOCTL_H
#define _UAPI_HMTT_IOCTL_H

#include <linux/types.h>
#include <linux/ioctl.h>

#define HMTT_ABI_VERSION	1
#define HMTT_LINE_SIZE		64

/* Configuration-space event indices (docs/format.md section 6). */
#define HMTT_EV_BEGIN_TRACING	0x00
#define HMTT_EV_END_TRACING	0x01
#define HMTT_EV_TAGS_ONLY	0x02
#define HMTT_EV_TRACE_ALL	0x03
#define HMTT_EV_INSERT_TAG	0x04
#define HMTT_EV_SYNC		0x05
#define HMTT_EV_USER_FIRST	0x40
#define HMTT_EV_LOG_FIRST	0x10000
#define HMTT_EV_LOG_COUNT	0x10000

/* Kernel log record kinds (docs/format.md section 8). */
#define HMTT_LOG_MAP		1
#define HMTT_LOG_UNMAP		2
#define HMTT_LOG_EXEC		3
#define HMTT_LOG_EXIT		4
#define HMTT_LOG_DMA_MAP	5
#define HMTT_LOG_DMA_UNMAP	6
#define HMTT_LOG_SNAPSHOT_MAP	7
#define HMTT_LOG_OVERRUN	8
#define HMTT_LOG_FORK		9	/* pid: child, a: parent, b: clone flags */
#define HMTT_LOG_SWITCH		10	/* cpu switched from pid a to pid (0: untraced) */
#define HMTT_LOG_CPU_AREA	11	/* frames a..a+b used by CPU c alone */

#define HMTT_LOG_RECORD_SIZE	64
#define HMTT_LOG_NAME_LEN	16

/* One kernel log record, exactly as read from /dev/hmtt_log. */
struct hmtt_log_record {
	__u64 seq;
	__u16 kind;
	__u16 cpu;
	__u32 pid;
	__u64 a;	/* virtual page number, DMA address, or first frame */
	__u64 b;	/* physical frame number, DMA size, or frame count */
	__u64 c;	/* PTE physical address, DMA direction, or CPU */
	__u64 time_ns;	/* CLOCK_MONOTONIC */
	char name[HMTT_LOG_NAME_LEN];
};

/* .hmttlog file header (32 bytes), written by `hmtt log`. */
#define HMTT_LOG_FILE_MAGIC	"HMTTLOG"	/* plus the NUL: 8 bytes */
#define HMTT_LOG_FILE_VERSION	3

struct hmtt_info {
	__u64 base;		/* physical base of the configuration space */
	__u64 size;		/* its size in bytes */
	__u32 line_size;	/* HMTT_LINE_SIZE */
	__u32 version;		/* HMTT_ABI_VERSION */
	__u64 log_capacity;	/* records the kernel ring holds */
	__u64 log_written;	/* records written so far (next seq) */
	__u64 log_overruns;	/* records lost because the ring was full */
	__u64 icodes;		/* I-codes emitted through the ioctl */
	__u64 last_phys;	/* physical address of the last line touched */
	__u64 probe_misses;	/* hook hits the kernel could not run (kprobe nmissed) */
};

#define HMTT_ICODE_WRITE	(1u << 0)	/* store instead of load */

struct hmtt_icode_req {
	__u32 event;		/* in: event index */
	__u32 flags;		/* in: HMTT_ICODE_* */
	__u64 phys;		/* out: physical address touched */
};

struct hmtt_snapshot_req {
	__s32 pid;		/* in: process id, 0 for the caller */
	__u32 flags;		/* in: 0 */
	__u64 logged;		/* out: SNAPSHOT_MAP records written */
	__u64 dropped;		/* out: records lost to a full ring */
};

/*
 * The memory controller's address mapping, for the module's own touches
 * (HMTT_IOC_ICODE, hmtt_icode, the kernel-log tags): event i is line index
 * first_line + i, and its physical address is the XOR of columns[b] over
 * the bits b set in that line index (a GF(2)-linear inverse mapping, as
 * hmtt_format::mapping computes it). nbits 0 restores the linear mapping
 * (base + i * 64). Refused with -EINVAL unless every event of the space
 * lands on a distinct line inside it; needs CAP_SYS_ADMIN.
 */
#define HMTT_MAP_MAX_BITS	64

struct hmtt_mapping_req {
	__u64 first_line;
	__u32 nbits;
	__u32 flags;		/* 0 */
	__u64 columns[HMTT_MAP_MAX_BITS];	/* physical address of line 1 << b */
};

#define HMTT_IOC_MAGIC		0xB7
#define HMTT_IOC_INFO		_IOR(HMTT_IOC_MAGIC, 0, struct hmtt_info)
#define HMTT_IOC_ICODE		_IOWR(HMTT_IOC_MAGIC, 1, struct hmtt_icode_req)
/* Trace (or stop tracing) the page tables of a process; 0 = the caller. */
#define HMTT_IOC_TRACE_PID	_IOW(HMTT_IOC_MAGIC, 2, __s32)
#define HMTT_IOC_UNTRACE_PID	_IOW(HMTT_IOC_MAGIC, 3, __s32)
#define HMTT_IOC_SNAPSHOT	_IOWR(HMTT_IOC_MAGIC, 4, struct hmtt_snapshot_req)
/*
 * Dangerous: 1 sets CR0.CD (cache disable) on every CPU, 0 clears it.
 * Refused with -EPERM unless the module was loaded with allow_cache_disable=1.
 */
#define HMTT_IOC_CACHE_DISABLE	_IOW(HMTT_IOC_MAGIC, 5, __u32)
#define HMTT_IOC_SET_MAPPING	_IOW(HMTT_IOC_MAGIC, 6, struct hmtt_mapping_req)

#endif /* _UAPI_HMTT_IOCTL_H */
