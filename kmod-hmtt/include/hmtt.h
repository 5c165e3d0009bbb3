/* SPDX-License-Identifier: GPL-2.0 */
/*
 * hmtt.h - in-kernel API of the hmtt module for drivers and kernel code.
 *
 * hmtt_icode() announces an event to the HMTT board by touching its line
 * in the configuration space. hmtt_printk() appends a 64-byte record
 * (docs/format.md section 8) to the module's preallocated lock-free ring
 * and announces the record's sequence number to the board at that moment.
 * Both never sleep and may be called from any context except NMI.
 */
#ifndef _HMTT_H
#define _HMTT_H

#include <linux/types.h>
#include "hmtt_ioctl.h"

/*
 * Touch configuration-space line @event (a load, or a store of @event when
 * @write). Returns 0, or -EINVAL when @event lies outside the space, or
 * -ENODEV before the module is ready.
 */
int hmtt_icode(u32 event, bool write);

/*
 * Log one record of @kind (HMTT_LOG_*). @name is copied up to 15 bytes and
 * may be NULL. Returns the record's sequence number, or -ENOSPC when the
 * ring was full (the loss is counted and reported by an OVERRUN record).
 */
s64 hmtt_printk(u16 kind, u32 pid, u64 a, u64 b, u64 c, const char *name);

#endif /* _HMTT_H */
