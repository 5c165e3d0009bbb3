/* SPDX-License-Identifier: GPL-2.0 */
/* Shared between the files of the hmtt module; not an API. */
#ifndef _HMTT_INTERNAL_H
#define _HMTT_INTERNAL_H

#include <linux/mm_types.h>
#include "hmtt.h"

/* hmtt_main.c */
extern void __iomem *hmtt_cfg_virt;
extern u64 hmtt_cfg_lines;
void hmtt_touch_line(u64 index, bool write, u64 value);

/* hmtt_log.c */
int hmtt_log_init(unsigned long records);
void hmtt_log_exit(void);
void hmtt_log_stats(u64 *capacity, u64 *written, u64 *overruns);

/* hmtt_pt.c */
int hmtt_pt_init(const char *trace_comm);
void hmtt_pt_exit(void);
int hmtt_pt_trace_pid(pid_t pid, bool on);
int hmtt_pt_snapshot(pid_t pid, u64 *logged, u64 *dropped);
u64 hmtt_pt_missed(void);

/* hmtt_cpu.c */
unsigned int hmtt_log_cpu_areas(void);

/* hmtt_dma.c */
int hmtt_dma_init(void);
void hmtt_dma_exit(void);
u64 hmtt_dma_missed(void);

#endif /* _HMTT_INTERNAL_H */
