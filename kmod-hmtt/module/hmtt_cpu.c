// SPDX-License-Identifier: GPL-2.0
/*
 * hmtt_cpu.c - CPU_AREA records: the frames each CPU alone uses.
 *
 * A physical trace does not say which CPU made a reference, but some
 * frames do: a CPU's entry area (its GDT, TSS, entry and exception stacks)
 * and the pages of its busiest per-CPU variables are touched by that CPU
 * on every kernel entry and hardly ever by another. When processes that
 * share frames run at once on several CPUs, the replay takes a reference
 * to such a frame as telling which CPU is issuing, and so which of them
 * made the shared references around it (docs/format.md section 8).
 *
 * Logged when tracing starts (the first traced process), for every online
 * CPU. A CPU brought online later is not described.
 */
#include <linux/cpumask.h>
#include <linux/percpu.h>
#include <linux/pgtable.h>
#include <linux/sort.h>
#include <asm/cpu_entry_area.h>
#include <asm/current.h>
#include <asm/pgtable_types.h>
#include <asm/processor.h>
#include <asm/smp.h>

#include "hmtt_internal.h"

/* Enough for a CPU's entry area with its debug-store buffers (about 40). */
#define HMTT_CPU_AREA_MAX_PAGES 96

struct area_pages {
	u64 pfn[HMTT_CPU_AREA_MAX_PAGES];
	unsigned int n;
};

static void add_pfn(struct area_pages *p, u64 pfn)
{
	if (p->n < HMTT_CPU_AREA_MAX_PAGES)
		p->pfn[p->n++] = pfn;
}

static int cmp_pfn(const void *a, const void *b)
{
	u64 x = *(const u64 *)a, y = *(const u64 *)b;

	return x < y ? -1 : x > y;
}

/* One record per run of consecutive frames; returns the records logged. */
static unsigned int log_runs(struct area_pages *p, unsigned int cpu,
			     const char *area)
{
	unsigned int i = 0, logged = 0;

	sort(p->pfn, p->n, sizeof(p->pfn[0]), cmp_pfn, NULL);
	while (i < p->n) {
		u64 first = p->pfn[i], count = 1;

		for (i++; i < p->n && p->pfn[i] <= first + count; i++)
			if (p->pfn[i] == first + count)
				count++;
		if (hmtt_printk(HMTT_LOG_CPU_AREA, 0, first, count, cpu, area) >= 0)
			logged++;
	}
	return logged;
}

/* The mapped 4 KiB pages of @cpu's entry area. */
static void entry_area_pages(unsigned int cpu, struct area_pages *p)
{
	unsigned long start = (unsigned long)get_cpu_entry_area(cpu);
	unsigned long va;

	for (va = start; va < start + sizeof(struct cpu_entry_area);
	     va += PAGE_SIZE) {
		unsigned int level;
		pte_t *pte = lookup_address(va, &level);

		/* Guard pages and unused debug-store buffers are not mapped. */
		if (pte && level == PG_LEVEL_4K && pte_present(*pte))
			add_pfn(p, pte_pfn(*pte));
	}
}

/*
 * The pages of the per-CPU variables every kernel entry reads: the stack
 * canary's (the first page of the CPU's unit), current_task's, and those
 * smp_processor_id() and this_cpu_ptr() read.
 */
static void percpu_pages(unsigned int cpu, struct area_pages *p)
{
	add_pfn(p, slow_virt_to_phys(per_cpu_ptr(&fixed_percpu_data, cpu)) >> PAGE_SHIFT);
	add_pfn(p, slow_virt_to_phys(per_cpu_ptr(&current_task, cpu)) >> PAGE_SHIFT);
	add_pfn(p, slow_virt_to_phys(per_cpu_ptr(&cpu_number, cpu)) >> PAGE_SHIFT);
	add_pfn(p, slow_virt_to_phys(per_cpu_ptr(&this_cpu_off, cpu)) >> PAGE_SHIFT);
}

/* Runs in atomic context (under the traced-process table's lock). */
unsigned int hmtt_log_cpu_areas(void)
{
	static struct area_pages pages;	/* serialized by the caller's lock */
	unsigned int cpu, logged = 0;

	for_each_online_cpu(cpu) {
		pages.n = 0;
		entry_area_pages(cpu, &pages);
		logged += log_runs(&pages, cpu, "cpu-entry-area");
		pages.n = 0;
		percpu_pages(cpu, &pages);
		logged += log_runs(&pages, cpu, "percpu");
	}
	return logged;
}
