// SPDX-License-Identifier: GPL-2.0
/*
 * DMA log: kprobes on the DMA mapping API record every buffer handed to a
 * device (DMA_MAP, the paper's DMA_BEGIN) and taken back (DMA_UNMAP, its
 * DMA_END) with bus address, size, direction and device name, so merge can
 * tell device traffic from CPU traffic. Single pages and buffers
 * (dma_map_single is an inline wrapper of dma_map_page_attrs),
 * scatterlists, sg tables, resources and coherent allocations are covered.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/device.h>
#include <linux/dma-mapping.h>
#include <linux/kprobes.h>
#include <linux/scatterlist.h>
#include <linux/sched.h>

#include "hmtt_internal.h"

static void log_dma(u16 kind, struct device *dev, u64 addr, u64 size, u64 dir)
{
	hmtt_printk(kind, in_task() ? current->tgid : 0, addr, size, dir,
		    dev ? dev_name(dev) : NULL);
}

static void log_sg(u16 kind, struct device *dev, struct scatterlist *sgl,
		   int nents, u64 dir)
{
	struct scatterlist *sg;
	int i;

	for_each_sg(sgl, sg, nents, i)
		if (sg_dma_len(sg))
			log_dma(kind, dev, sg_dma_address(sg), sg_dma_len(sg), dir);
}

struct map_ctx {
	struct device *dev;
	unsigned long arg1;	/* sg list, sg table or dma_handle pointer */
	u64 size;
	u64 dir;
};

#define ARG(n) regs_get_kernel_argument(regs, n)

/* dma_map_page_attrs(dev, page, offset, size, dir, attrs) -> dma_addr_t */
static int map_page_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct map_ctx *c = (void *)ri->data;

	c->dev = (void *)ARG(0);
	c->size = ARG(3);
	c->dir = ARG(4);
	return 0;
}

/* dma_map_resource(dev, phys, size, dir, attrs) -> dma_addr_t */
static int map_resource_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct map_ctx *c = (void *)ri->data;

	c->dev = (void *)ARG(0);
	c->size = ARG(2);
	c->dir = ARG(3);
	return 0;
}

static int map_addr_return(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct map_ctx *c = (void *)ri->data;
	dma_addr_t addr = regs_return_value(regs);

	if (addr != DMA_MAPPING_ERROR)
		log_dma(HMTT_LOG_DMA_MAP, c->dev, addr, c->size, c->dir);
	return 0;
}

/* dma_map_sg_attrs(dev, sg, nents, dir, attrs) -> mapped count */
static int map_sg_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct map_ctx *c = (void *)ri->data;

	c->dev = (void *)ARG(0);
	c->arg1 = ARG(1);
	c->dir = ARG(3);
	return 0;
}

static int map_sg_return(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct map_ctx *c = (void *)ri->data;
	int mapped = (int)regs_return_value(regs);

	if (mapped > 0)
		log_sg(HMTT_LOG_DMA_MAP, c->dev, (void *)c->arg1, mapped, c->dir);
	return 0;
}

/* dma_map_sgtable(dev, sgt, dir, attrs) -> 0 or -errno */
static int map_sgtable_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct map_ctx *c = (void *)ri->data;

	c->dev = (void *)ARG(0);
	c->arg1 = ARG(1);
	c->dir = ARG(2);
	return 0;
}

static int map_sgtable_return(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct map_ctx *c = (void *)ri->data;
	struct sg_table *sgt = (void *)c->arg1;

	if (regs_return_value(regs) == 0)
		log_sg(HMTT_LOG_DMA_MAP, c->dev, sgt->sgl, sgt->nents, c->dir);
	return 0;
}

/* dma_alloc_attrs(dev, size, dma_handle, gfp, attrs) -> cpu address */
static int alloc_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct map_ctx *c = (void *)ri->data;

	c->dev = (void *)ARG(0);
	c->size = ARG(1);
	c->arg1 = ARG(2);
	c->dir = DMA_BIDIRECTIONAL;
	return 0;
}

static int alloc_return(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct map_ctx *c = (void *)ri->data;

	if (regs_return_value(regs))
		log_dma(HMTT_LOG_DMA_MAP, c->dev, *(dma_addr_t *)c->arg1, c->size, c->dir);
	return 0;
}

/* dma_unmap_page_attrs / dma_unmap_resource(dev, addr, size, dir, attrs) */
static int unmap_addr_pre(struct kprobe *p, struct pt_regs *regs)
{
	log_dma(HMTT_LOG_DMA_UNMAP, (void *)ARG(0), ARG(1), ARG(2), ARG(3));
	return 0;
}

/* dma_unmap_sg_attrs(dev, sg, nents, dir, attrs) */
static int unmap_sg_pre(struct kprobe *p, struct pt_regs *regs)
{
	log_sg(HMTT_LOG_DMA_UNMAP, (void *)ARG(0), (void *)ARG(1), ARG(2), ARG(3));
	return 0;
}

/* dma_free_attrs(dev, size, cpu_addr, dma_handle, attrs) */
static int free_pre(struct kprobe *p, struct pt_regs *regs)
{
	log_dma(HMTT_LOG_DMA_UNMAP, (void *)ARG(0), ARG(3), ARG(1), DMA_BIDIRECTIONAL);
	return 0;
}

#define HMTT_RETPROBE(sym, entry, ret)					\
	{								\
		.kp.symbol_name = sym,					\
		.entry_handler = entry,					\
		.handler = ret,						\
		.data_size = sizeof(struct map_ctx),			\
		.maxactive = 64,					\
	}

static struct kretprobe map_probes[] = {
	HMTT_RETPROBE("dma_map_page_attrs", map_page_entry, map_addr_return),
	HMTT_RETPROBE("dma_map_resource", map_resource_entry, map_addr_return),
	HMTT_RETPROBE("dma_map_sg_attrs", map_sg_entry, map_sg_return),
	HMTT_RETPROBE("dma_map_sgtable", map_sgtable_entry, map_sgtable_return),
	HMTT_RETPROBE("dma_alloc_attrs", alloc_entry, alloc_return),
};

static struct kprobe unmap_probes[] = {
	{ .symbol_name = "dma_unmap_page_attrs", .pre_handler = unmap_addr_pre },
	{ .symbol_name = "dma_unmap_resource", .pre_handler = unmap_addr_pre },
	{ .symbol_name = "dma_unmap_sg_attrs", .pre_handler = unmap_sg_pre },
	{ .symbol_name = "dma_free_attrs", .pre_handler = free_pre },
};

static struct kretprobe *map_probe_ptrs[ARRAY_SIZE(map_probes)];
static struct kprobe *unmap_probe_ptrs[ARRAY_SIZE(unmap_probes)];

int hmtt_dma_init(void)
{
	int ret, i;

	for (i = 0; i < ARRAY_SIZE(map_probes); i++)
		map_probe_ptrs[i] = &map_probes[i];
	for (i = 0; i < ARRAY_SIZE(unmap_probes); i++)
		unmap_probe_ptrs[i] = &unmap_probes[i];
	/* All or nothing: a log with maps but no unmaps would mislead. */
	ret = register_kretprobes(map_probe_ptrs, ARRAY_SIZE(map_probe_ptrs));
	if (ret) {
		pr_err("DMA map kretprobes: %d\n", ret);
		return ret;
	}
	ret = register_kprobes(unmap_probe_ptrs, ARRAY_SIZE(unmap_probe_ptrs));
	if (ret) {
		pr_err("DMA unmap kprobes: %d\n", ret);
		unregister_kretprobes(map_probe_ptrs, ARRAY_SIZE(map_probe_ptrs));
	}
	return ret;
}

/* Hits lost to exhausted kretprobe instances or kprobe recursion. */
u64 hmtt_dma_missed(void)
{
	u64 missed = 0;
	int i;

	for (i = 0; i < ARRAY_SIZE(map_probes); i++)
		missed += map_probes[i].nmissed + map_probes[i].kp.nmissed;
	for (i = 0; i < ARRAY_SIZE(unmap_probes); i++)
		missed += unmap_probes[i].nmissed;
	return missed;
}

void hmtt_dma_exit(void)
{
	unregister_kprobes(unmap_probe_ptrs, ARRAY_SIZE(unmap_probe_ptrs));
	unregister_kretprobes(map_probe_ptrs, ARRAY_SIZE(map_probe_ptrs));
}
