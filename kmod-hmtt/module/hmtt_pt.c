// SPDX-License-Identifier: GPL-2.0
/*
 * Page-table log of traced processes, without patching the kernel.
 *
 * A process is traced when registered by HMTT_IOC_TRACE_PID or when it
 * execs a program whose command name equals the trace_comm parameter.
 * Hooks:
 *  - kretprobe on handle_mm_fault: after a successful fault, the page
 *    table entry of the faulting page is logged as MAP;
 *  - kprobe on do_set_pte: the extra pages a file fault maps around the
 *    faulting one ("fault-around") are logged as MAP;
 *  - kprobe on unmap_page_range: every present entry of the range about
 *    to be zapped (munmap, MADV_DONTNEED, exit, exec) is logged as UNMAP;
 *  - tracepoint sched_process_exec: EXEC with pid and command name, then
 *    every mapping execve made before it (the new stack, pages of the
 *    image the ELF loader touched) as SNAPSHOT_MAP, before the new image
 *    runs its first instruction;
 *  - kprobe on do_exit: EXIT when the last thread of a traced process
 *    exits;
 *  - kprobe on __mmdrop: forget an address space once it is freed.
 * HMTT_IOC_SNAPSHOT walks a running process's page tables and logs every
 * present mapping as SNAPSHOT_MAP.
 *
 * Not seen by these hooks: mremap moving entries, page migration and
 * compaction, swap-out by reclaim, khugepaged collapses, hugetlbfs.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/hugetlb.h>
#include <linux/io.h>
#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/kprobes.h>
#include <linux/mm.h>
#include <linux/pgtable.h>
#include <linux/pid.h>
#include <linux/sched.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/tracepoint.h>

#include "hmtt_internal.h"

#define HMTT_MAX_TRACED 32

struct traced_proc {
	struct mm_struct *mm;	/* compared only, never dereferenced */
	pid_t tgid;		/* 0: slot free */
	bool exiting;
};

static struct traced_proc traced[HMTT_MAX_TRACED];
static DEFINE_SPINLOCK(traced_lock);
static atomic_t ntraced = ATOMIC_INIT(0);
static char comm_filter[TASK_COMM_LEN];

static pid_t traced_tgid_by_mm(struct mm_struct *mm)
{
	int i;

	if (!mm || !atomic_read(&ntraced))
		return 0;
	for (i = 0; i < HMTT_MAX_TRACED; i++)
		if (READ_ONCE(traced[i].mm) == mm)
			return READ_ONCE(traced[i].tgid);
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

/* Call with traced_lock held. */
static int add_traced(pid_t tgid, struct mm_struct *mm)
{
	struct traced_proc *t = slot_by_tgid(tgid);

	if (!t) {
		t = slot_by_tgid(0);
		if (!t)
			return -ENOSPC;
		atomic_inc(&ntraced);
	}
	WRITE_ONCE(t->tgid, tgid);
	t->exiting = false;
	smp_wmb();
	WRITE_ONCE(t->mm, mm);
	return 0;
}

/* Call with traced_lock held. */
static void free_slot(struct traced_proc *t)
{
	WRITE_ONCE(t->mm, NULL);
	smp_wmb();
	WRITE_ONCE(t->tgid, 0);
	t->exiting = false;
	atomic_dec(&ntraced);
}

struct walk_ctx {
	u16 kind;
	pid_t tgid;
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
			if (pmd_present(v))
				walk_leaf(w, pmd_pfn(v), addr & PMD_MASK, addr, next, pmd);
			continue;
		}
		if (pmd_bad(v))
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
	struct walk_ctx w = { .kind = HMTT_LOG_MAP, .tgid = ctx->tgid };

	/* Only then is mmap_lock still held and the entry in place. */
	if (ret & (VM_FAULT_ERROR | VM_FAULT_RETRY | VM_FAULT_COMPLETED))
		return 0;
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
		/* Keep the mm so the exit's unmaps are still logged. */
		if (t->mm)
			t->exiting = true;
		else
			free_slot(t);
	}
	spin_unlock_irqrestore(&traced_lock, flags);
	return 0;
}

static struct kprobe exit_probe = {
	.symbol_name = "do_exit",
	.pre_handler = exit_pre,
};

/* kprobe on __mmdrop(mm): the address space is gone */
static int mmdrop_pre(struct kprobe *p, struct pt_regs *regs)
{
	struct mm_struct *mm = (void *)regs_get_kernel_argument(regs, 0);
	unsigned long flags;
	int i;

	if (!traced_tgid_by_mm(mm))
		return 0;
	spin_lock_irqsave(&traced_lock, flags);
	for (i = 0; i < HMTT_MAX_TRACED; i++) {
		if (traced[i].mm != mm)
			continue;
		if (traced[i].exiting)
			free_slot(&traced[i]);
		else
			WRITE_ONCE(traced[i].mm, NULL);	/* exec: new mm follows */
	}
	spin_unlock_irqrestore(&traced_lock, flags);
	return 0;
}

static struct kprobe mmdrop_probe = {
	.symbol_name = "__mmdrop",
	.pre_handler = mmdrop_pre,
};

/*
 * The mappings execve made before the EXEC record, when the process was
 * not yet traced. Probes run in atomic context: the mmap lock is only
 * tried (nothing else holds a fresh address space's lock), and a
 * snapshot that could not take it counts as a probe miss.
 */
static atomic64_t exec_snapshots_missed = ATOMIC64_INIT(0);

static void snapshot_exec(struct task_struct *p)
{
	struct walk_ctx w = { .kind = HMTT_LOG_SNAPSHOT_MAP, .tgid = p->tgid };
	struct mm_struct *mm = p->mm;

	if (!mm || !mmap_read_trylock(mm)) {
		atomic64_inc(&exec_snapshots_missed);
		return;
	}
	walk_mm(&w, mm, false);
	mmap_read_unlock(mm);
}

static void exec_probe(void *data, struct task_struct *p, pid_t old_pid,
		       struct linux_binprm *bprm)
{
	struct traced_proc *t;
	unsigned long flags;
	bool log = false;

	spin_lock_irqsave(&traced_lock, flags);
	t = slot_by_tgid(p->tgid);
	if ((t && !t->exiting) ||
	    (comm_filter[0] && !strncmp(p->comm, comm_filter, TASK_COMM_LEN)))
		log = !add_traced(p->tgid, p->mm);
	spin_unlock_irqrestore(&traced_lock, flags);
	if (log) {
		hmtt_printk(HMTT_LOG_EXEC, p->tgid, 0, 0, 0, p->comm);
		snapshot_exec(p);
	}
}

static struct tracepoint *exec_tp;

static void find_exec_tp(struct tracepoint *tp, void *priv)
{
	if (!strcmp(tp->name, "sched_process_exec"))
		exec_tp = tp;
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

static struct kprobe *kprobes[] = { &unmap_probe, &exit_probe, &mmdrop_probe };
static bool set_pte_registered;

/* Hits lost to exhausted kretprobe instances or kprobe recursion. */
u64 hmtt_pt_missed(void)
{
	u64 missed = fault_probe.nmissed + fault_probe.kp.nmissed +
		     atomic64_read(&exec_snapshots_missed);
	int i;

	for (i = 0; i < ARRAY_SIZE(kprobes); i++)
		missed += kprobes[i]->nmissed;
	if (set_pte_registered)
		missed += set_pte_probe.nmissed;
	return missed;
}

int hmtt_pt_init(const char *trace_comm)
{
	int ret;

	if (trace_comm)
		strscpy(comm_filter, trace_comm, sizeof(comm_filter));
	for_each_kernel_tracepoint(find_exec_tp, NULL);
	if (!exec_tp) {
		pr_err("tracepoint sched_process_exec not found\n");
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
	/* Optional: without it only fault-around pages are missed. */
	set_pte_registered = !register_kprobe(&set_pte_probe);
	if (!set_pte_registered)
		pr_info("no kprobe on do_set_pte: fault-around mappings are not logged\n");
	ret = tracepoint_probe_register(exec_tp, exec_probe, NULL);
	if (ret) {
		pr_err("sched_process_exec probe: %d\n", ret);
		goto err_kretprobe;
	}
	return 0;

err_kretprobe:
	if (set_pte_registered)
		unregister_kprobe(&set_pte_probe);
	unregister_kretprobe(&fault_probe);
err_kprobes:
	unregister_kprobes(kprobes, ARRAY_SIZE(kprobes));
	return ret;
}

void hmtt_pt_exit(void)
{
	tracepoint_probe_unregister(exec_tp, exec_probe, NULL);
	tracepoint_synchronize_unregister();
	if (set_pte_registered)
		unregister_kprobe(&set_pte_probe);
	unregister_kretprobe(&fault_probe);
	unregister_kprobes(kprobes, ARRAY_SIZE(kprobes));
}
