// SPDX-License-Identifier: GPL-2.0
/*
 * hmtt_qemu_pid - tells the TCG plugin of `hmtt qemu` which process runs.
 *
 * QEMU 7.2's plugin API cannot read a vCPU's registers or guest memory,
 * so the plugin cannot find the current task by itself. This module,
 * loaded only in `hmtt qemu`'s guest, makes the current task visible in
 * the one thing the plugin does see, the physical address of a store: on
 * every context switch (tracepoint sched_switch) it stores one byte to
 * slot tgid of a reserved range (base + 8 * tgid), and once at load for
 * the task loading it. A tgid beyond the range goes to its last slot,
 * which the host reads as "unknown".
 *
 * The range is reserved with memmap= next to the configuration space and
 * mapped write-back: the plugin takes these stores out of the memory path,
 * so they are not references of the trace. Nothing here reads or writes
 * the page-table log.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/io.h>
#include <linux/module.h>
#include <linux/sched.h>
#include <linux/tracepoint.h>

#define SLOT_BYTES 8

static unsigned long base;
module_param(base, ulong, 0444);
MODULE_PARM_DESC(base, "Physical base of the reserved pid range (memmap=)");
static unsigned long size;
module_param(size, ulong, 0444);
MODULE_PARM_DESC(size, "Bytes of the pid range, SLOT_BYTES per tgid");

static u8 *slots;
static unsigned long nslots;
static struct tracepoint *switch_tp;

static void announce(struct task_struct *p)
{
	unsigned long slot = p->tgid;

	if (slot >= nslots - 1)
		slot = nslots - 1;
	WRITE_ONCE(slots[slot * SLOT_BYTES], 1);
}

/* The prototype of sched_switch in Linux 5.18 and later. */
static void switch_probe(void *data, bool preempt, struct task_struct *prev,
			 struct task_struct *next, unsigned int prev_state)
{
	announce(next);
}

static void find_switch_tp(struct tracepoint *tp, void *priv)
{
	if (!strcmp(tp->name, "sched_switch"))
		switch_tp = tp;
}

static int __init hmtt_qemu_pid_init(void)
{
	int ret;

	if (!base || size < 2 * SLOT_BYTES) {
		pr_err("base= and size= (at least %d bytes) are needed\n",
		       2 * SLOT_BYTES);
		return -EINVAL;
	}
	for_each_kernel_tracepoint(find_switch_tp, NULL);
	if (!switch_tp) {
		pr_err("tracepoint sched_switch not found\n");
		return -ENOENT;
	}
	slots = memremap(base, size, MEMREMAP_WB);
	if (!slots) {
		pr_err("cannot map %#lx+%#lx\n", base, size);
		return -ENOMEM;
	}
	nslots = size / SLOT_BYTES;
	ret = tracepoint_probe_register(switch_tp, switch_probe, NULL);
	if (ret) {
		pr_err("sched_switch probe: %d\n", ret);
		memunmap(slots);
		return ret;
	}
	announce(current);
	return 0;
}

static void __exit hmtt_qemu_pid_exit(void)
{
	tracepoint_probe_unregister(switch_tp, switch_probe, NULL);
	tracepoint_synchronize_unregister();
	memunmap(slots);
}

module_init(hmtt_qemu_pid_init);
module_exit(hmtt_qemu_pid_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("hmtt qemu: the current process as a store address for the TCG plugin");
