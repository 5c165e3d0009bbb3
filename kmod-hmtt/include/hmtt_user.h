/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * hmtt_user.h - I-codes from C programs, header only.
 *
 *	struct hmtt_cfg cfg;
 *	if (hmtt_open(&cfg, NULL) == 0) {
 *		hmtt_begin_tracing(&cfg);
 *		hmtt_icode(&cfg, 0x40);		// a user event
 *		hmtt_end_tracing(&cfg);
 *		hmtt_close(&cfg);
 *	}
 *
 * An event is a store of its index to the event's 64-byte line of the
 * mapped configuration space (docs/format.md section 6); the board records
 * it as a TAG (or runs it, for inner commands 0..63). The linear mapping
 * is assumed (line i at byte offset i * 64): exact under QEMU and on
 * machines whose memory controller maps the window linearly. Names for
 * user events belong in the events file; the Rust crate hmtt-icode keeps
 * it.
 */
#ifndef _HMTT_USER_H
#define _HMTT_USER_H

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "hmtt_ioctl.h"

struct hmtt_cfg {
	int fd;
	volatile uint8_t *base;	/* the mapped configuration space */
	uint64_t size;
	struct hmtt_info info;
};

/* Map the configuration space; path NULL means /dev/hmtt. 0 or -errno. */
static inline int hmtt_open(struct hmtt_cfg *cfg, const char *path)
{
	void *p;
	int err;

	cfg->fd = open(path ? path : "/dev/hmtt", O_RDWR | O_CLOEXEC);
	if (cfg->fd < 0)
		return -errno;
	if (ioctl(cfg->fd, HMTT_IOC_INFO, &cfg->info) < 0) {
		err = -errno;
		close(cfg->fd);
		return err;
	}
	cfg->size = cfg->info.size;
	p = mmap(NULL, cfg->size, PROT_READ | PROT_WRITE, MAP_SHARED, cfg->fd, 0);
	if (p == MAP_FAILED) {
		err = -errno;
		close(cfg->fd);
		return err;
	}
	cfg->base = p;
	return 0;
}

static inline void hmtt_close(struct hmtt_cfg *cfg)
{
	munmap((void *)cfg->base, cfg->size);
	close(cfg->fd);
}

/* Inject event index @event. 0, or -EINVAL outside the space. */
static inline int hmtt_icode(struct hmtt_cfg *cfg, uint32_t event)
{
	uint64_t off = (uint64_t)event * HMTT_LINE_SIZE;

	if (off >= cfg->size)
		return -EINVAL;
	if (event >= HMTT_EV_LOG_FIRST && event < HMTT_EV_LOG_FIRST + HMTT_EV_LOG_COUNT)
		return -EINVAL;	/* reserved for the kernel log tags */
	*(volatile uint64_t *)(cfg->base + off) = event;
	return 0;
}

static inline int hmtt_begin_tracing(struct hmtt_cfg *cfg)
{
	return hmtt_icode(cfg, HMTT_EV_BEGIN_TRACING);
}

static inline int hmtt_end_tracing(struct hmtt_cfg *cfg)
{
	return hmtt_icode(cfg, HMTT_EV_END_TRACING);
}

#endif /* _HMTT_USER_H */
