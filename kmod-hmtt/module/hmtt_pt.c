// SPDX-License-Identifier: GPL-2.0
/*
 * Page-table log of traced processes, without patching the kernel.
 *
 * A process is traced when registered by HMTT_IOC_TRACE_PID, when it
 * execs a program whose command name equals the trace_comm parameter, or
 * when a traced process forks or clones it. kmod-hmtt/README.md lists
 * every hook and what it logs. In short:
 *  - handle_mm_fault (kretprobe): MAP of the faulting page (a whole PMD
 *    leaf: 512 records) once the fault has set it, also when the fault
 *    dropped the mmap lock (VM_FAULT_COMPLETED, the first write to a
 *    shared page);
 *  - do_set_pte (kprobe): MAP of the pages a file fault maps around the
 *    faulting one;
 *  - unmap_page_range (kprobe): UNMAP of every present entry about to be
 *    zapped (munmap, MADV_DONTNEED, exit, exec);
 *  - move_page_tables (kretprobe): UNMAP of the entries mremap or exec's
 *    stack shift moves, then MAP at their new place;
 *  - remove_migration_pte (kretprobe): MAP of the new frame after a
 *    migration (compaction, NUMA, soft offline);
 *  - mm_collapse_huge_page: MAP of every PMD leaf after a collapse;
 *  - mm_alloc (kretprobe) during execve: the new address space is traced
 *    from its creation, under the exec'ing process;
 *  - setup_arg_pages (kretprobe), or else sched_process_exec: EXEC, then
 *    SNAPSHOT_MAP of the new image, before the loader writes to it;
 *  - kernel_clone (kprobe) and sched_process_fork: FORK, then
 *    SNAPSHOT_MAP of the child's copied entries, before the child runs;
 *  - sched_switch: SWITCH when a traced process starts or stops running;
 *  - do_exit (kprobe): EXIT; __mmdrop (kprobe): forget a freed mm;
 *  - the first traced process: CPU_AREA records (hmtt_cpu.c).
 * HMTT_IOC_SNAPSHOT walks a running process's page tables and logs every
 * present mapping as SNAPSHOT_MAP.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/hash.h>
#include <linux/hugetlb.h>
#include <linux/io.h>
#include <linux/capability.h>
#include <linux/compat.h>
#include <linux/cred.h>
#include <linux/kprobes.h>
#include <linux/mm.h>
#include <linux/pgtable.h>
#include <linux/pid.h>
#include <linux/sched.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>
#include <linux/sched/task_stack.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/tracepoint.h>
#include <linux/uaccess.h>
#include <asm/unistd.h>

#include "hmtt_internal.h"

#define HMTT_MAX_TRACED 64

/*
 * One traced process. Page-table records of an address space name its
 * owner: a CLONE_VM child (vfork, posix_spawn) shares its parent's mm and
 * has a slot of its own (it is traced: EXEC, EXIT, SWITCH), but the
 * faults it takes there are logged under the parent's pid.
 */
struct traced_proc {
	struct mm_struct *mm;		/* compared only, never dereferenced */
	struct mm_struct *exec_mm;	/* the mm its execve is building */
	pid_t tgid;			/* 0: slot free */
	bool shares_mm;			/* mm is a CLONE_VM parent's */
	bool pending;			/* traced only for an execve in progress */
	bool exec_logged;		/* EXEC already logged by setup_arg_pages */
	bool exiting;
};

static struct traced_proc traced[HMTT_MAX_TRACED];
static DEFINE_SPINLOCK(traced_lock);
static atomic_t ntraced = ATOMIC_INIT(0);
static char comm_filter[TASK_COMM_LEN];
/*
 * One bit per hash of each traced mm and tgid: the context-switch and
 * fault hooks of untraced processes stop at one load and a test.
 */
static unsigned long mm_filter, tgid_filter;
/* Traced processes the table had no room for, forks and execs. */
static atomic64_t table_full = ATOMIC64_INIT(0);

static unsigned long mm_bit(const struct mm_struct *mm)
{
	return 1UL << hash_ptr((void *)mm, ilog2(BITS_PER_LONG));
}

static unsigned long tgid_bit(pid_t tgid)
{
	return 1UL << hash_32(tgid, ilog2(BITS_PER_LONG));
}

/* Call with traced_lock held, after every change of a slot. */
static void refilter(void)
{
	unsigned long mms = 0, tgids = 0;
	int i;

	for (i = 0; i < HMTT_MAX_TRACED; i++) {
		if (!traced[i].tgid)
			continue;
		tgids |= tgid_bit(traced[i].tgid);
		if (traced[i].mm)
			mms |= mm_bit(traced[i].mm);
		if (traced[i].exec_mm)
			mms |= mm_bit(traced[i].exec_mm);
	}
	smp_wmb();
	WRITE_ONCE(mm_filter, mms);
	WRITE_ONCE(tgid_filter, tgids);
}

/* The pid the page-table records of mm carry, 0 if it is not traced. */
static pid_t traced_tgid_by_mm(struct mm_struct *mm)
{
	int i;

	if (!mm || !(READ_ONCE(mm_filter) & mm_bit(mm)))
		return 0;
	smp_rmb();
	for (i = 0; i < HMTT_MAX_TRACED; i++) {
		struct traced_proc *t = &traced[i];

		if ((READ_ONCE(t->mm) == mm && !READ_ONCE(t->shares_mm)) ||
		    READ_ONCE(t->exec_mm) == mm)
			return READ_ONCE(t->tgid);
	}
	return 0;
}

/* The process's pid if it is traced, else 0. */
static pid_t traced_task_tgid(const struct task_struct *task)
{
	pid_t tgid = task->tgid;
	int i;

	if (!tgid || !(READ_ONCE(tgid_filter) & tgid_bit(tgid)))
		return 0;
	smp_rmb();
	for (i = 0; i < HMTT_MAX_TRACED; i++)
		if (READ_ONCE(traced[i].tgid) == tgid)
			return tgid;
	return 0;
}

/* Call with traced_lock held. */
static struct traced_proc *slot_by_tgid(pid_t tgid)
{
	int i;

	for (i = 0; i < HMTT_MAX_TRACED; i++)
		if (traced[i].tgid == tgid)
			return &traced[i];
	return NULL;
}

/* Call with traced_lock held: tgid's slot, a new one, or NULL when full. */
static struct traced_proc *get_slot(pid_t tgid, bool *created)
{
	struct traced_proc *t = slot_by_tgid(tgid);

	*created = !t;
	if (t)
		return t;
	t = slot_by_tgid(0);
	if (!t) {
		atomic64_inc(&table_full);
		return NULL;
	}
	/* Tracing starts: say which frames tell each CPU's references. */
	if (atomic_inc_return(&ntraced) == 1) {
		unsigned int areas = hmtt_log_cpu_areas();

		pr_debug("tracing starts: %u CPU_AREA records logged\n", areas);
	}
	t->mm = NULL;
	t->exec_mm = NULL;
	t->shares_mm = false;
	t->pending = false;
	t->exec_logged = false;
	t->exiting = false;
	WRITE_ONCE(t->tgid, tgid);
	return t;
}

/* Call with traced_lock held: tgid runs in mm (its own) from now on. */
static int add_traced(pid_t tgid, struct mm_struct *mm)
{
	bool created;
	struct traced_proc *t = get_slot(tgid, &created);

	if (!t)
		return -ENOSPC;
	t->exiting = false;
	t->pending = false;
	WRITE_ONCE(t->shares_mm, false);
	WRITE_ONCE(t->exec_mm, NULL);
	WRITE_ONCE(t->mm, mm);
	refilter();
	return 0;
}

/* Call with traced_lock held. */
static void free_slot(struct traced_proc *t)
{
	WRITE_ONCE(t->mm, NULL);
	WRITE_ONCE(t->exec_mm, NULL);
	smp_wmb();
	WRITE_ONCE(t->tgid, 0);
	t->shares_mm = false;
	t->pending = false;
	t->exiting = false;
	atomic_dec(&ntraced);
	refilter();
}

struct walk_ctx {
	u16 kind;
	pid_t tgid;
	bool whole_leaf;	/* a PMD leaf met: all its pages, not the range's */
	bool leaves_only;	/* PMD leaves only, no page-table pages */
	u64 logged;
	u64 dropped;
};

static void emit(struct walk_ctx *w, unsigned long addr, unsigned long pfn,
		 void *entry)
{
	if (hmtt_printk(w->kind, w->tgid, addr >> PAGE_SHIFT, pfn,
			virt_to_phys(entry), NULL) < 0)
		w->dropped++;
	else
		w->logged++;
}

static void walk_leaf(struct walk_ctx *w, unsigned long pfn, unsigned long base,
		      unsigned long addr, unsigned long end, void *entry)
{
	for (; addr < end; addr += PAGE_SIZE)
		emit(w, addr, pfn + ((addr - base) >> PAGE_SHIFT), entry);
}

static void walk_pte(struct walk_ctx *w, pmd_t *pmd, unsigned long addr,
		     unsigned long end)
{
	pte_t *first = pte_offset_map(pmd, addr);
	pte_t *pte = first;

	for (; addr < end; addr += PAGE_SIZE, pte++) {
		pte_t v = READ_ONCE(*pte);

		if (pte_present(v))
			emit(w, addr, pte_pfn(v), pte);
	}
	pte_unmap(first);
}

static void walk_pmd(struct walk_ctx *w, pud_t *pud, unsigned long addr,
		     unsigned long end)
{
	pmd_t *pmd = pmd_offset(pud, addr);
	unsigned long next;

	do {
		pmd_t v = READ_ONCE(*pmd);

		next = pmd_addr_end(addr, end);
		if (pmd_none(v))
			continue;
		if (pmd_leaf(v)) {
			unsigned long base = addr & PMD_MASK;

			if (!pmd_present(v))
				continue;
			if (w->whole_leaf)
				walk_leaf(w, pmd_pfn(v), base, base, base + PMD_SIZE, pmd);
			else
				walk_leaf(w, pmd_pfn(v), base, addr, next, pmd);
			continue;
		}
		if (pmd_bad(v) || w->leaves_only)
			continue;
		walk_pte(w, pmd, addr, next);
	} while (pmd++, addr = next, addr != end);
}

static void walk_pud(struct walk_ctx *w, p4d_t *p4d, unsigned long addr,
		     unsigned long end)
{
	pud_t *pud = pud_offset(p4d, addr);
	unsigned long next;

	do {
		pud_t v = READ_ONCE(*pud);

		next = pud_addr_end(addr, end);
		if (pud_none(v))
			continue;
		if (pud_leaf(v)) {
			if (pud_present(v))
				walk_leaf(w, pud_pfn(v), addr & PUD_MASK, addr, next, pud);
			continue;
		}
		if (pud_bad(v))
			continue;
		walk_pmd(w, pud, addr, next);
	} while (pud++, addr = next, addr != end);
}

static void walk_range(struct walk_ctx *w, struct mm_struct *mm,
		       unsigned long addr, unsigned long end)
{
	pgd_t *pgd = pgd_offset(mm, addr);
	unsigned long next;

	if (addr >= end)
		return;
	do {
		p4d_t *p4d;
		unsigned long p4d_end;

		next = pgd_addr_end(addr, end);
		if (pgd_none(*pgd) || pgd_bad(*pgd))
			continue;
		p4d = p4d_offset(pgd, addr);
		p4d_end = next;
		do {
			unsigned long p4d_next = p4d_addr_end(addr, p4d_end);

			if (!p4d_none(*p4d) && !p4d_bad(*p4d))
				walk_pud(w, p4d, addr, p4d_next);
			addr = p4d_next;
		} while (p4d++, addr != p4d_end);
	} while (pgd++, addr = next, addr != end);
}

/*
 * Every present mapping of mm, its mmap lock held for reading; may_sleep:
 * yield between areas (a snapshot of a large process), never in a probe.
 */
static void walk_mm(struct walk_ctx *w, struct mm_struct *mm, bool may_sleep)
{
	struct vm_area_struct *vma;
	unsigned long addr = 0;

	while ((vma = find_vma(mm, addr))) {
		if (!is_vm_hugetlb_page(vma))
			walk_range(w, mm, vma->vm_start, vma->vm_end);
		addr = vma->vm_end;
		if (may_sleep)
			cond_resched();
	}
}

/*
 * Log every present entry of [addr, end) of mm as kind under tgid, the
 * mmap lock taken with a trylock: for hooks that run in atomic context
 * where the caller does not hold it. A lock that cannot be had is a
 * probe miss.
 */
static atomic64_t lock_misses = ATOMIC64_INIT(0);

static void walk_trylock(struct walk_ctx *w, struct mm_struct *mm,
			 unsigned long addr, unsigned long end)
{
	if (!mmap_read_trylock(mm)) {
		atomic64_inc(&lock_misses);
		return;
	}
	walk_range(w, mm, addr, end);
	mmap_read_unlock(mm);
}

/* kretprobe on handle_mm_fault(vma, address, flags, regs) */
struct fault_ctx {
	struct mm_struct *mm;
	unsigned long address;
	pid_t tgid;
};

static int fault_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct vm_area_struct *vma = (void *)regs_get_kernel_argument(regs, 0);
	struct fault_ctx *ctx = (void *)ri->data;

	ctx->mm = vma->vm_mm;
	ctx->tgid = traced_tgid_by_mm(ctx->mm);
	if (!ctx->tgid)
		return 1;	/* not traced: no return probe */
	ctx->address = regs_get_kernel_argument(regs, 1) & PAGE_MASK;
	return 0;
}

static int fault_return(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct fault_ctx *ctx = (void *)ri->data;
	vm_fault_t ret = regs_return_value(regs);
	struct walk_ctx w = {
		.kind = HMTT_LOG_MAP, .tgid = ctx->tgid, .whole_leaf = true,
	};

	if (ret & (VM_FAULT_ERROR | VM_FAULT_RETRY))
		return 0;
	/*
	 * VM_FAULT_COMPLETED: the entry is set but the fault dropped the
	 * mmap lock (6.1's fault_dirty_shared_page does so on the first
	 * write to a shared page, to throttle dirtying). The faulting task
	 * is still in the kernel, so the record still precedes its access.
	 */
	if (ret & VM_FAULT_COMPLETED)
		walk_trylock(&w, ctx->mm, ctx->address, ctx->address + PAGE_SIZE);
	else
		walk_range(&w, ctx->mm, ctx->address, ctx->address + PAGE_SIZE);
	return 0;
}

static struct kretprobe fault_probe = {
	.kp.symbol_name = "handle_mm_fault",
	.entry_handler = fault_entry,
	.handler = fault_return,
	.data_size = sizeof(struct fault_ctx),
	/* Faults sleep on I/O; allow many in flight. */
	.maxactive = 256,
};

/* kprobe on do_set_pte(vmf, page, addr): pages mapped around a file fault */
static int set_pte_pre(struct kprobe *p, struct pt_regs *regs)
{
	struct vm_fault *vmf = (void *)regs_get_kernel_argument(regs, 0);
	struct page *page = (void *)regs_get_kernel_argument(regs, 1);
	unsigned long addr = regs_get_kernel_argument(regs, 2);
	pid_t tgid;

	/* The faulting page itself is logged when the fault returns. */
	if (addr == vmf->address)
		return 0;
	tgid = traced_tgid_by_mm(vmf->vma->vm_mm);
	if (tgid && vmf->pte)
		hmtt_printk(HMTT_LOG_MAP, tgid, addr >> PAGE_SHIFT, page_to_pfn(page),
			    virt_to_phys(vmf->pte), NULL);
	return 0;
}

static struct kprobe set_pte_probe = {
	.symbol_name = "do_set_pte",
	.pre_handler = set_pte_pre,
};

/* kprobe on unmap_page_range(tlb, vma, addr, end, details) */
static int unmap_pre(struct kprobe *p, struct pt_regs *regs)
{
	struct vm_area_struct *vma = (void *)regs_get_kernel_argument(regs, 1);
	struct walk_ctx w = { .kind = HMTT_LOG_UNMAP };

	w.tgid = traced_tgid_by_mm(vma->vm_mm);
	if (w.tgid)
		walk_range(&w, vma->vm_mm, regs_get_kernel_argument(regs, 2),
			   regs_get_kernel_argument(regs, 3));
	return 0;
}

static struct kprobe unmap_probe = {
	.symbol_name = "unmap_page_range",
	.pre_handler = unmap_pre,
};

/*
 * kretprobe on move_page_tables(vma, old_addr, new_vma, new_addr, len,
 * need_rmap_locks), under the mmap write lock (mremap, and execve moving
 * the new stack into place): UNMAP at the old addresses before the move,
 * MAP at the new ones after it, and MAP again for whatever a short move
 * left in place (the caller then moves it back, logged the same way).
 */
struct move_ctx {
	struct mm_struct *mm;
	unsigned long old_addr, new_addr, len;
	pid_t tgid;
};

static int move_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct vm_area_struct *vma = (void *)regs_get_kernel_argument(regs, 0);
	struct move_ctx *ctx = (void *)ri->data;
	struct walk_ctx w = { .kind = HMTT_LOG_UNMAP };

	ctx->mm = vma->vm_mm;
	ctx->tgid = traced_tgid_by_mm(ctx->mm);
	if (!ctx->tgid)
		return 1;
	ctx->old_addr = regs_get_kernel_argument(regs, 1);
	ctx->new_addr = regs_get_kernel_argument(regs, 3);
	ctx->len = regs_get_kernel_argument(regs, 4);
	w.tgid = ctx->tgid;
	walk_range(&w, ctx->mm, ctx->old_addr, ctx->old_addr + ctx->len);
	return 0;
}

static int move_return(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct move_ctx *ctx = (void *)ri->data;
	unsigned long moved = min(regs_return_value(regs), ctx->len);
	struct walk_ctx w = { .kind = HMTT_LOG_MAP, .tgid = ctx->tgid };

	walk_range(&w, ctx->mm, ctx->new_addr, ctx->new_addr + moved);
	walk_range(&w, ctx->mm, ctx->old_addr + moved, ctx->old_addr + ctx->len);
	return 0;
}

static struct kretprobe move_probe = {
	.kp.symbol_name = "move_page_tables",
	.entry_handler = move_entry,
	.handler = move_return,
	.data_size = sizeof(struct move_ctx),
	.maxactive = 64,
};

/*
 * kretprobe on remove_migration_pte(folio, vma, addr, old), the rmap walk
 * callback that puts a migrated folio's new frame into each mapping
 * (compaction, NUMA balancing, soft offline, or the old frame back when
 * migration failed). The rmap walk's lock keeps the page tables in place.
 * MAP of the folio's range in this mapping; the old frame gets no UNMAP:
 * the MAP replaces it.
 */
struct migrate_ctx {
	struct mm_struct *mm;
	unsigned long addr, end;
	pid_t tgid;
};

static int migrate_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct folio *folio = (void *)regs_get_kernel_argument(regs, 0);
	struct vm_area_struct *vma = (void *)regs_get_kernel_argument(regs, 1);
	struct migrate_ctx *ctx = (void *)ri->data;

	ctx->mm = vma->vm_mm;
	ctx->tgid = traced_tgid_by_mm(ctx->mm);
	if (!ctx->tgid)
		return 1;
	ctx->addr = max(regs_get_kernel_argument(regs, 2) & PAGE_MASK, vma->vm_start);
	ctx->end = min(ctx->addr + folio_size(folio), vma->vm_end);
	return 0;
}

static int migrate_return(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct migrate_ctx *ctx = (void *)ri->data;
	struct walk_ctx w = { .kind = HMTT_LOG_MAP, .tgid = ctx->tgid };

	walk_range(&w, ctx->mm, ctx->addr, ctx->end);
	return 0;
}

static struct kretprobe migrate_probe = {
	.kp.symbol_name = "remove_migration_pte",
	.entry_handler = migrate_entry,
	.handler = migrate_return,
	.data_size = sizeof(struct migrate_ctx),
	.maxactive = 64,
};

/*
 * mm_collapse_huge_page(mm, isolated, status), at the end of a khugepaged
 * or MADV_COLLAPSE collapse, locks released: 512 small pages were copied
 * into a new huge page. The tracepoint does not say where, so every PMD
 * leaf of the address space is logged again as MAP (512 records each);
 * collapses are rare.
 */
static void collapse_probe(void *data, struct mm_struct *mm, int isolated,
			   int status)
{
	struct walk_ctx w = { .kind = HMTT_LOG_MAP, .leaves_only = true };

	if (!isolated)
		return;		/* nothing changed */
	w.tgid = traced_tgid_by_mm(mm);
	if (!w.tgid)
		return;
	if (!mmap_read_trylock(mm)) {
		atomic64_inc(&lock_misses);
		return;
	}
	walk_mm(&w, mm, false);
	mmap_read_unlock(mm);
}

/*
 * The clone flags of forks by traced processes, from kernel_clone's
 * arguments to the sched_process_fork tracepoint (which does not get
 * them), keyed by the forking task.
 */
#define HMTT_CLONES 16

static struct {
	struct task_struct *task;
	u64 flags;
} clones[HMTT_CLONES];
static DEFINE_SPINLOCK(clones_lock);

/* kprobe on kernel_clone(args) */
static int clone_pre(struct kprobe *p, struct pt_regs *regs)
{
	struct kernel_clone_args *args = (void *)regs_get_kernel_argument(regs, 0);
	unsigned long flags;
	int i, free = -1;

	if (!traced_task_tgid(current) || (args->flags & CLONE_THREAD))
		return 0;
	spin_lock_irqsave(&clones_lock, flags);
	for (i = 0; i < HMTT_CLONES; i++) {
		if (clones[i].task == current) {
			free = i;
			break;
		}
		if (!clones[i].task && free < 0)
			free = i;
	}
	if (free >= 0) {
		clones[free].task = current;
		clones[free].flags = args->flags | (args->exit_signal & CSIGNAL);
	}
	spin_unlock_irqrestore(&clones_lock, flags);
	return 0;
}

static struct kprobe clone_probe = {
	.symbol_name = "kernel_clone",
	.pre_handler = clone_pre,
};

/*
 * The flags kernel_clone got, as clone(2) takes them (the exit signal in
 * the low byte); without them (the kprobe missed), what the child's state
 * shows of them.
 */
static u64 clone_flags_of(struct task_struct *parent, struct task_struct *child)
{
	unsigned long flags;
	bool found = false;
	u64 f = 0;
	int i;

	spin_lock_irqsave(&clones_lock, flags);
	for (i = 0; i < HMTT_CLONES; i++) {
		if (clones[i].task == parent) {
			f = clones[i].flags;
			clones[i].task = NULL;
			found = true;
			break;
		}
	}
	spin_unlock_irqrestore(&clones_lock, flags);
	if (found)
		return f;
	if (child->mm == parent->mm)
		f |= CLONE_VM;
	if (child->fs == parent->fs)
		f |= CLONE_FS;
	if (child->files == parent->files)
		f |= CLONE_FILES;
	if (child->sighand == parent->sighand)
		f |= CLONE_SIGHAND;
	return f | (child->exit_signal & CSIGNAL);
}

/* kprobe on do_exit(code) */
static int exit_pre(struct kprobe *p, struct pt_regs *regs)
{
	struct traced_proc *t;
	unsigned long flags;
	bool last;

	if (!atomic_read(&ntraced))
		return 0;
	last = atomic_read(&current->signal->live) == 1;
	if (!last)
		return 0;
	spin_lock_irqsave(&traced_lock, flags);
	t = slot_by_tgid(current->tgid);
	if (t && !t->exiting) {
		hmtt_printk(HMTT_LOG_EXIT, current->tgid, 0, 0, 0, current->comm);
		/*
		 * Keep the mm so the exit's unmaps are still logged, unless it
		 * is a CLONE_VM parent's: those stay the parent's.
		 */
		if (t->mm && !t->shares_mm)
			t->exiting = true;
		else
			free_slot(t);
	}
	spin_unlock_irqrestore(&traced_lock, flags);
	return 0;
}

static struct kprobe exit_pre_probe = {
	.symbol_name = "do_exit",
	.pre_handler = exit_pre,
};

/* kprobe on __mmdrop(mm): the address space is gone */
static int mmdrop_pre(struct kprobe *p, struct pt_regs *regs)
{
	struct mm_struct *mm = (void *)regs_get_kernel_argument(regs, 0);
	unsigned long flags;
	int i;

	if (!(READ_ONCE(mm_filter) & mm_bit(mm)))
		return 0;
	spin_lock_irqsave(&traced_lock, flags);
	for (i = 0; i < HMTT_MAX_TRACED; i++) {
		struct traced_proc *t = &traced[i];

		if (!t->tgid)
			continue;
		if (t->exec_mm == mm) {
			/* An execve that failed after creating its mm. */
			WRITE_ONCE(t->exec_mm, NULL);
			if (t->pending && !t->mm)
				free_slot(t);
			continue;
		}
		if (t->mm != mm)
			continue;
		if (t->exiting)
			free_slot(t);
		else
			WRITE_ONCE(t->mm, NULL);	/* exec: new mm follows */
	}
	refilter();
	spin_unlock_irqrestore(&traced_lock, flags);
	return 0;
}

static struct kprobe mmdrop_probe = {
	.symbol_name = "__mmdrop",
	.pre_handler = mmdrop_pre,
};

/*
 * Every present entry of a fresh address space (a forked child's before
 * it runs, a new image's) as SNAPSHOT_MAP. Probes run in atomic context:
 * the mmap lock is only tried (nothing else holds a fresh address space's
 * lock), and a snapshot that could not take it counts as a probe miss.
 */
static void snapshot_fresh(pid_t tgid, struct mm_struct *mm)
{
	struct walk_ctx w = { .kind = HMTT_LOG_SNAPSHOT_MAP, .tgid = tgid };

	if (!mm || !mmap_read_trylock(mm)) {
		atomic64_inc(&lock_misses);
		return;
	}
	walk_mm(&w, mm, false);
	mmap_read_unlock(mm);
}

/*
 * kretprobe on mm_alloc() called by execve (bprm_mm_init): the new
 * address space is traced from its creation, under the exec'ing process,
 * when that process is traced or the program's name is trace_comm. Its
 * first pages (the argument strings copy_strings writes into the new
 * stack, the .bss tail the ELF loader zeroes, the auxiliary vector) are
 * thus logged as MAP before the kernel writes them, well before EXEC.
 */
struct exec_mm_ctx {
	bool by_name;
};

static bool exec_name_matches(const struct pt_regs *user)
{
	const char __user *path;
	char name[256];
	long len;

	if (!comm_filter[0])
		return false;
	if (user->orig_ax == __NR_execve)
		path = (const char __user *)user->di;
	else
		path = (const char __user *)user->si;
	/*
	 * Read by getname() a moment ago: resident unless reclaimed. Copied
	 * a page at a time, since the page after the string's may be absent.
	 */
	for (len = 0; len < sizeof(name); ) {
		unsigned long addr = (unsigned long)path + len;
		long n = min_t(long, sizeof(name) - len,
			       PAGE_SIZE - offset_in_page(addr));

		if (copy_from_user_nofault(name + len, path + len, n))
			return false;
		if (memchr(name + len, 0, n))
			break;
		len += n;
	}
	if (len >= sizeof(name))
		return false;
	/* The command name execve gives it: the basename, truncated. */
	return !strncmp(kbasename(name), comm_filter, TASK_COMM_LEN - 1);
}

static int exec_mm_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct exec_mm_ctx *ctx = (void *)ri->data;
	const struct pt_regs *user;

	if (current->flags & PF_KTHREAD || in_compat_syscall())
		return 1;
	user = task_pt_regs(current);
	if (user->orig_ax != __NR_execve && user->orig_ax != __NR_execveat)
		return 1;
	ctx->by_name = !traced_task_tgid(current);
	if (ctx->by_name && !exec_name_matches(user))
		return 1;
	return 0;
}

static int exec_mm_return(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct mm_struct *mm = (void *)regs_return_value(regs);
	struct exec_mm_ctx *ctx = (void *)ri->data;
	struct traced_proc *t;
	unsigned long flags;
	bool created;

	if (!mm)
		return 0;
	spin_lock_irqsave(&traced_lock, flags);
	t = get_slot(current->tgid, &created);
	if (t && (!t->exiting || ctx->by_name)) {
		if (created)
			t->pending = true;
		WRITE_ONCE(t->exec_mm, mm);
		refilter();
	}
	spin_unlock_irqrestore(&traced_lock, flags);
	return 0;
}

static struct kretprobe exec_mm_probe = {
	.kp.symbol_name = "mm_alloc",
	.entry_handler = exec_mm_entry,
	.handler = exec_mm_return,
	.data_size = sizeof(struct exec_mm_ctx),
	.maxactive = 64,
};

/*
 * EXEC of p (current) if it is traced or its new command name is
 * trace_comm, then SNAPSHOT_MAP of its new address space. at_setup: from
 * setup_arg_pages, the earliest point with the new mm installed, the new
 * name set and the stack in place, before the ELF loader writes to the
 * image (.bss tail, auxiliary vector); the sched_process_exec tracepoint
 * that follows then logs nothing. Without that hook (or for a format
 * whose loader does not call it) EXEC comes from sched_process_exec.
 */
static void log_exec(struct task_struct *p, bool at_setup)
{
	struct traced_proc *t;
	unsigned long flags;
	bool log = false;

	spin_lock_irqsave(&traced_lock, flags);
	t = slot_by_tgid(p->tgid);
	if (t && t->exec_logged && !at_setup) {
		t->exec_logged = false;
	} else if ((t && !t->exiting) ||
		   (comm_filter[0] && !strncmp(p->comm, comm_filter, TASK_COMM_LEN))) {
		log = !add_traced(p->tgid, p->mm);
		if (log && at_setup)
			slot_by_tgid(p->tgid)->exec_logged = true;
	}
	spin_unlock_irqrestore(&traced_lock, flags);
	if (log) {
		hmtt_printk(HMTT_LOG_EXEC, p->tgid, 0, 0, 0, p->comm);
		snapshot_fresh(p->tgid, p->mm);
	}
}

static void exec_probe(void *data, struct task_struct *p, pid_t old_pid,
		       struct linux_binprm *bprm)
{
	log_exec(p, false);
}

/* kretprobe on setup_arg_pages(bprm, stack_top, executable_stack) */
static int setup_args_return(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	if (!regs_return_value(regs))
		log_exec(current, true);
	return 0;
}

static struct kretprobe setup_args_probe = {
	.kp.symbol_name = "setup_arg_pages",
	.handler = setup_args_return,
	.maxactive = 64,
};

/*
 * sched_process_fork(parent, child): in kernel_clone after copy_process,
 * before wake_up_new_task, so the child has not run yet. A child of a
 * traced process is traced from its FORK record on; a child with its own
 * address space gets its copied entries as SNAPSHOT_MAP right after.
 */
static void fork_probe(void *data, struct task_struct *parent,
		       struct task_struct *child)
{
	struct traced_proc *t, *c;
	unsigned long flags;
	bool shares, created, traced_child = false;
	u64 clone_flags;

	if (child->tgid == parent->tgid || !child->mm || !traced_task_tgid(parent))
		return;
	clone_flags = clone_flags_of(parent, child);
	shares = child->mm == parent->mm;
	spin_lock_irqsave(&traced_lock, flags);
	t = slot_by_tgid(parent->tgid);
	if (t && !t->exiting) {
		c = get_slot(child->tgid, &created);
		if (c) {
			c->exiting = false;
			c->pending = false;
			WRITE_ONCE(c->exec_mm, NULL);
			WRITE_ONCE(c->shares_mm, shares);
			WRITE_ONCE(c->mm, child->mm);
			refilter();
			traced_child = true;
		}
	}
	spin_unlock_irqrestore(&traced_lock, flags);
	if (!traced_child)
		return;
	hmtt_printk(HMTT_LOG_FORK, child->tgid, parent->tgid, clone_flags, 0,
		    child->comm);
	if (!shares)
		snapshot_fresh(child->tgid, child->mm);
}

/*
 * sched_switch(preempt, prev, next, prev_state), on the switching CPU
 * before the switch: who runs decides which owner of a shared frame
 * referenced it. Untraced switches cost two filter tests.
 */
static void switch_probe(void *data, bool preempt, struct task_struct *prev,
			 struct task_struct *next, unsigned int prev_state)
{
	pid_t from, to;

	if (!atomic_read(&ntraced))
		return;
	from = traced_task_tgid(prev);
	to = traced_task_tgid(next);
	if ((from || to) && from != to)
		hmtt_printk(HMTT_LOG_SWITCH, to, from, 0, 0, NULL);
}

static struct tracepoint *exec_tp, *fork_tp, *switch_tp, *collapse_tp;
static bool collapse_registered;

static void find_tracepoints(struct tracepoint *tp, void *priv)
{
	if (!strcmp(tp->name, "mm_collapse_huge_page"))
		collapse_tp = tp;
	else if (!strcmp(tp->name, "sched_process_exec"))
		exec_tp = tp;
	else if (!strcmp(tp->name, "sched_process_fork"))
		fork_tp = tp;
	else if (!strcmp(tp->name, "sched_switch"))
		switch_tp = tp;
}

/*
 * Physical addresses of another user's process are privileged, as for
 * /proc/PID/pagemap: tracing it needs CAP_SYS_PTRACE.
 */
static struct task_struct *get_permitted_task(pid_t pid)
{
	struct task_struct *task;

	if (pid == 0) {
		get_task_struct(current);
		return current;
	}
	rcu_read_lock();
	task = get_pid_task(find_vpid(pid), PIDTYPE_PID);
	rcu_read_unlock();
	if (!task)
		return ERR_PTR(-ESRCH);
	if (!uid_eq(task_uid(task), current_euid()) && !capable(CAP_SYS_PTRACE)) {
		put_task_struct(task);
		return ERR_PTR(-EPERM);
	}
	return task;
}

int hmtt_pt_trace_pid(pid_t pid, bool on)
{
	struct task_struct *task;
	struct mm_struct *mm;
	struct traced_proc *t;
	unsigned long flags;
	pid_t tgid;
	int ret = 0;

	if (pid < 0)
		return -EINVAL;
	task = get_permitted_task(pid);
	if (IS_ERR(task))
		return PTR_ERR(task);
	tgid = task->tgid;
	mm = get_task_mm(task);
	put_task_struct(task);
	if (on && !mm)
		return -EINVAL;	/* kernel thread */

	spin_lock_irqsave(&traced_lock, flags);
	if (on) {
		ret = add_traced(tgid, mm);
	} else {
		t = slot_by_tgid(tgid);
		if (t)
			free_slot(t);
		else
			ret = -ESRCH;
	}
	spin_unlock_irqrestore(&traced_lock, flags);
	if (mm)
		mmput(mm);
	return ret;
}

int hmtt_pt_snapshot(pid_t pid, u64 *logged, u64 *dropped)
{
	struct walk_ctx w = { .kind = HMTT_LOG_SNAPSHOT_MAP };
	struct task_struct *task;
	struct mm_struct *mm;
	int ret;

	if (pid < 0)
		return -EINVAL;
	task = get_permitted_task(pid);
	if (IS_ERR(task))
		return PTR_ERR(task);
	w.tgid = task->tgid;
	mm = get_task_mm(task);
	put_task_struct(task);
	if (!mm)
		return -EINVAL;
	ret = mmap_read_lock_killable(mm);
	if (ret) {
		mmput(mm);
		return ret;
	}
	walk_mm(&w, mm, true);
	mmap_read_unlock(mm);
	mmput(mm);
	*logged = w.logged;
	*dropped = w.dropped;
	return 0;
}

static struct kprobe *kprobes[] = { &unmap_probe, &exit_pre_probe, &mmdrop_probe };

/*
 * Hooks a kernel may lack (a static function inlined or renamed): without
 * one, what it follows is not logged, which the module says when it loads.
 */
static struct kprobe *optional_kprobes[] = { &set_pte_probe, &clone_probe };
static struct kretprobe *optional_kretprobes[] = {
	&move_probe, &migrate_probe, &exec_mm_probe, &setup_args_probe,
};
static bool kprobe_on[ARRAY_SIZE(optional_kprobes)];
static bool kretprobe_on[ARRAY_SIZE(optional_kretprobes)];

/* Hits lost to exhausted kretprobe instances, kprobe recursion, locks. */
u64 hmtt_pt_missed(void)
{
	u64 missed = fault_probe.nmissed + fault_probe.kp.nmissed +
		     atomic64_read(&lock_misses) + atomic64_read(&table_full);
	int i;

	for (i = 0; i < ARRAY_SIZE(kprobes); i++)
		missed += kprobes[i]->nmissed;
	for (i = 0; i < ARRAY_SIZE(optional_kprobes); i++)
		if (kprobe_on[i])
			missed += optional_kprobes[i]->nmissed;
	for (i = 0; i < ARRAY_SIZE(optional_kretprobes); i++)
		if (kretprobe_on[i])
			missed += optional_kretprobes[i]->nmissed +
				  optional_kretprobes[i]->kp.nmissed;
	return missed;
}

static void unregister_optional(void)
{
	int i;

	for (i = 0; i < ARRAY_SIZE(optional_kprobes); i++)
		if (kprobe_on[i])
			unregister_kprobe(optional_kprobes[i]);
	for (i = 0; i < ARRAY_SIZE(optional_kretprobes); i++)
		if (kretprobe_on[i])
			unregister_kretprobe(optional_kretprobes[i]);
}

static void register_optional(void)
{
	int i;

	for (i = 0; i < ARRAY_SIZE(optional_kprobes); i++) {
		kprobe_on[i] = !register_kprobe(optional_kprobes[i]);
		if (!kprobe_on[i])
			pr_info("no kprobe on %s: what it follows is not logged\n",
				optional_kprobes[i]->symbol_name);
	}
	for (i = 0; i < ARRAY_SIZE(optional_kretprobes); i++) {
		kretprobe_on[i] = !register_kretprobe(optional_kretprobes[i]);
		if (!kretprobe_on[i])
			pr_info("no kretprobe on %s: what it follows is not logged\n",
				optional_kretprobes[i]->kp.symbol_name);
	}
}

int hmtt_pt_init(const char *trace_comm)
{
	int ret;

	if (trace_comm)
		strscpy(comm_filter, trace_comm, sizeof(comm_filter));
	for_each_kernel_tracepoint(find_tracepoints, NULL);
	if (!exec_tp || !fork_tp || !switch_tp) {
		pr_err("tracepoints sched_process_exec, sched_process_fork, sched_switch not all found\n");
		return -ENOENT;
	}
	ret = register_kprobes(kprobes, ARRAY_SIZE(kprobes));
	if (ret) {
		pr_err("page-table kprobes: %d\n", ret);
		return ret;
	}
	ret = register_kretprobe(&fault_probe);
	if (ret) {
		pr_err("kretprobe on handle_mm_fault: %d\n", ret);
		goto err_kprobes;
	}
	register_optional();
	ret = tracepoint_probe_register(exec_tp, exec_probe, NULL);
	if (ret) {
		pr_err("sched_process_exec probe: %d\n", ret);
		goto err_kretprobe;
	}
	ret = tracepoint_probe_register(fork_tp, fork_probe, NULL);
	if (ret) {
		pr_err("sched_process_fork probe: %d\n", ret);
		goto err_exec_tp;
	}
	ret = tracepoint_probe_register(switch_tp, switch_probe, NULL);
	if (ret) {
		pr_err("sched_switch probe: %d\n", ret);
		goto err_fork_tp;
	}
	collapse_registered = collapse_tp &&
		!tracepoint_probe_register(collapse_tp, collapse_probe, NULL);
	if (!collapse_registered)
		pr_info("no mm_collapse_huge_page probe: huge-page collapses are not logged\n");
	return 0;

err_fork_tp:
	tracepoint_probe_unregister(fork_tp, fork_probe, NULL);
err_exec_tp:
	tracepoint_probe_unregister(exec_tp, exec_probe, NULL);
	tracepoint_synchronize_unregister();
err_kretprobe:
	unregister_optional();
	unregister_kretprobe(&fault_probe);
err_kprobes:
	unregister_kprobes(kprobes, ARRAY_SIZE(kprobes));
	return ret;
}

void hmtt_pt_exit(void)
{
	if (collapse_registered)
		tracepoint_probe_unregister(collapse_tp, collapse_probe, NULL);
	tracepoint_probe_unregister(switch_tp, switch_probe, NULL);
	tracepoint_probe_unregister(fork_tp, fork_probe, NULL);
	tracepoint_probe_unregister(exec_tp, exec_probe, NULL);
	tracepoint_synchronize_unregister();
	unregister_optional();
	unregister_kretprobe(&fault_probe);
	unregister_kprobes(kprobes, ARRAY_SIZE(kprobes));
}
