// SPDX-License-Identifier: GPL-2.0
/*
 * hmtt - the traced machine's side of the HMTT memory tracer.
 *
 * /dev/hmtt maps the configuration space (a physical range hidden from the
 * kernel with memmap=SIZE$BASE) uncached, so that a load or store at event
 * index i (byte offset i * 64) reaches the DIMM where the HMTT board sees it.
 * The module also owns the kernel log ring (hmtt_log.c), the page-table
 * hooks (hmtt_pt.c) and the DMA hooks (hmtt_dma.c).
 *
 * Event index to physical address: linear (base + index * 64) by default,
 * exact under QEMU and on machines whose memory controller maps the window
 * linearly. For a hashed (XOR) controller, user space loads the inverse
 * mapping (computed by hmtt_format::mapping) with HMTT_IOC_SET_MAPPING and
 * the module's own touches follow it; the user library translates its own
 * touches the same way (docs/format.md section 6).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/miscdevice.h>
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/io.h>
#include <linux/ioport.h>
#include <linux/uaccess.h>
#include <linux/smp.h>
#include <linux/sizes.h>
#include <linux/bitmap.h>
#include <linux/capability.h>
#include <linux/rcupdate.h>
#include <linux/slab.h>
#include <asm/special_insns.h>
#include <asm/processor-flags.h>

#include "hmtt_internal.h"

static unsigned long cfg_base;
module_param(cfg_base, ulong, 0444);
MODULE_PARM_DESC(cfg_base, "Physical base of the configuration space (the BASE of memmap=SIZE$BASE); required");

static unsigned long cfg_size = SZ_8M;
module_param(cfg_size, ulong, 0444);
MODULE_PARM_DESC(cfg_size, "Size of the configuration space in bytes (the SIZE of memmap=SIZE$BASE), at least 8 MiB");

static unsigned long log_records = 65536;
module_param(log_records, ulong, 0444);
MODULE_PARM_DESC(log_records, "Records in the kernel log ring (rounded up to a power of two; 64 bytes each)");

static char *trace_comm;
module_param(trace_comm, charp, 0444);
MODULE_PARM_DESC(trace_comm, "Trace the page tables of every process that execs a program with this command name");

static bool dma_log = true;
module_param(dma_log, bool, 0444);
MODULE_PARM_DESC(dma_log, "Log DMA map/unmap calls of all devices");

static bool allow_cache_disable;
module_param(allow_cache_disable, bool, 0444);
MODULE_PARM_DESC(allow_cache_disable, "DANGEROUS: allow HMTT_IOC_CACHE_DISABLE to set CR0.CD on every CPU (default off)");

void __iomem *hmtt_cfg_virt;
u64 hmtt_cfg_lines;
static struct resource *cfg_region;
static atomic64_t icode_count = ATOMIC64_INIT(0);
static atomic64_t last_phys = ATOMIC64_INIT(0);
static atomic_t cache_disabled = ATOMIC_INIT(0);

struct hmtt_map {
	struct rcu_head rcu;
	u64 first_line;
	u32 nbits;
	u64 columns[HMTT_MAP_MAX_BITS];
};

/* NULL: linear (base + index * 64). */
static struct hmtt_map __rcu *cfg_map;
static DEFINE_MUTEX(cfg_map_lock);

static u64 map_phys(const struct hmtt_map *m, u64 index)
{
	u64 line = m->first_line + index, phys = 0;
	u32 b;

	for (b = 0; b < m->nbits; b++)
		if (line & BIT_ULL(b))
			phys ^= m->columns[b];
	return phys;
}

/* Byte offset of event @index in the space; @index < hmtt_cfg_lines. */
static u64 line_offset(u64 index)
{
	const struct hmtt_map *m;
	u64 off = index * HMTT_LINE_SIZE;

	rcu_read_lock();
	m = rcu_dereference(cfg_map);
	if (m)
		off = map_phys(m, index) - cfg_base;	/* checked when loaded */
	rcu_read_unlock();
	return off;
}

static int set_mapping(const struct hmtt_mapping_req *req)
{
	struct hmtt_map *m = NULL, *old;
	unsigned long *seen;
	u64 i;
	int ret = 0;

	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	if (req->flags || req->nbits > HMTT_MAP_MAX_BITS)
		return -EINVAL;
	if (req->nbits) {
		m = kzalloc(sizeof(*m), GFP_KERNEL);
		seen = bitmap_zalloc(hmtt_cfg_lines, GFP_KERNEL);
		if (!m || !seen) {
			kfree(m);
			bitmap_free(seen);
			return -ENOMEM;
		}
		m->first_line = req->first_line;
		m->nbits = req->nbits;
		memcpy(m->columns, req->columns, sizeof(m->columns));
		/* Every event on its own line inside the space. */
		for (i = 0; i < hmtt_cfg_lines && !ret; i++) {
			u64 phys = map_phys(m, i), off = phys - cfg_base;

			if (phys < cfg_base || off >= cfg_size || off % HMTT_LINE_SIZE ||
			    __test_and_set_bit(off / HMTT_LINE_SIZE, seen))
				ret = -EINVAL;
			if (!(i & 0xfff))
				cond_resched();
		}
		bitmap_free(seen);
		if (ret) {
			kfree(m);
			return ret;
		}
	}
	mutex_lock(&cfg_map_lock);
	old = rcu_replace_pointer(cfg_map, m, lockdep_is_held(&cfg_map_lock));
	mutex_unlock(&cfg_map_lock);
	if (old)
		kfree_rcu(old, rcu);
	pr_info("address mapping: %s\n", m ? "loaded" : "linear");
	return 0;
}

/* The smallest space that holds the 64K kernel-log tag lines. */
#define HMTT_CFG_MIN_SIZE ((u64)(HMTT_EV_LOG_FIRST + HMTT_EV_LOG_COUNT) * HMTT_LINE_SIZE)

void hmtt_touch_line(u64 index, bool write, u64 value)
{
	void __iomem *line;
	u64 off;

	if (unlikely(!hmtt_cfg_virt || index >= hmtt_cfg_lines))
		return;
	off = line_offset(index);
	line = hmtt_cfg_virt + off;
	if (write)
		writeq(value, line);
	else
		(void)readq(line);
	atomic64_set(&last_phys, cfg_base + off);
}

int hmtt_icode(u32 event, bool write)
{
	if (!hmtt_cfg_virt)
		return -ENODEV;
	if (event >= hmtt_cfg_lines)
		return -EINVAL;
	hmtt_touch_line(event, write, event);
	atomic64_inc(&icode_count);
	return 0;
}
EXPORT_SYMBOL_GPL(hmtt_icode);

static void cache_disable_on_cpu(void *on)
{
	unsigned long cr0 = read_cr0();

	if (on) {
		write_cr0(cr0 | X86_CR0_CD);
		wbinvd();
	} else {
		write_cr0(cr0 & ~X86_CR0_CD);
	}
}

static int set_cache_disabled(bool on)
{
	if (!allow_cache_disable)
		return -EPERM;
	if (atomic_xchg(&cache_disabled, on) == on)
		return 0;
	pr_warn("CR0.CD %s on every CPU at user request\n", on ? "set" : "cleared");
	on_each_cpu(cache_disable_on_cpu, on ? (void *)1 : NULL, 1);
	return 0;
}

static long hmtt_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	void __user *uarg = (void __user *)arg;

	switch (cmd) {
	case HMTT_IOC_INFO: {
		struct hmtt_info info = {
			.base = cfg_base,
			.size = cfg_size,
			.line_size = HMTT_LINE_SIZE,
			.version = HMTT_ABI_VERSION,
			.icodes = atomic64_read(&icode_count),
			.last_phys = atomic64_read(&last_phys),
		};

		hmtt_log_stats(&info.log_capacity, &info.log_written, &info.log_overruns);
		info.probe_misses = hmtt_pt_missed() + (dma_log ? hmtt_dma_missed() : 0);
		return copy_to_user(uarg, &info, sizeof(info)) ? -EFAULT : 0;
	}
	case HMTT_IOC_ICODE: {
		struct hmtt_icode_req req;
		int ret;

		if (copy_from_user(&req, uarg, sizeof(req)))
			return -EFAULT;
		if (req.flags & ~HMTT_ICODE_WRITE)
			return -EINVAL;
		/* The kernel-log tag lines belong to hmtt_printk alone. */
		if (req.event >= HMTT_EV_LOG_FIRST &&
		    req.event < HMTT_EV_LOG_FIRST + HMTT_EV_LOG_COUNT)
			return -EINVAL;
		ret = hmtt_icode(req.event, req.flags & HMTT_ICODE_WRITE);
		if (ret)
			return ret;
		req.phys = cfg_base + line_offset(req.event);
		return copy_to_user(uarg, &req, sizeof(req)) ? -EFAULT : 0;
	}
	case HMTT_IOC_TRACE_PID:
	case HMTT_IOC_UNTRACE_PID: {
		__s32 pid;

		if (get_user(pid, (__s32 __user *)uarg))
			return -EFAULT;
		return hmtt_pt_trace_pid(pid, cmd == HMTT_IOC_TRACE_PID);
	}
	case HMTT_IOC_SNAPSHOT: {
		struct hmtt_snapshot_req req;
		int ret;

		if (copy_from_user(&req, uarg, sizeof(req)))
			return -EFAULT;
		if (req.flags)
			return -EINVAL;
		ret = hmtt_pt_snapshot(req.pid, &req.logged, &req.dropped);
		if (ret)
			return ret;
		return copy_to_user(uarg, &req, sizeof(req)) ? -EFAULT : 0;
	}
	case HMTT_IOC_CACHE_DISABLE: {
		__u32 on;

		if (get_user(on, (__u32 __user *)uarg))
			return -EFAULT;
		if (on > 1)
			return -EINVAL;
		return set_cache_disabled(on);
	}
	case HMTT_IOC_SET_MAPPING: {
		struct hmtt_mapping_req *req;
		int ret;

		req = memdup_user(uarg, sizeof(*req));
		if (IS_ERR(req))
			return PTR_ERR(req);
		ret = set_mapping(req);
		kfree(req);
		return ret;
	}
	default:
		return -ENOTTY;
	}
}

static int hmtt_mmap(struct file *file, struct vm_area_struct *vma)
{
	unsigned long len = vma->vm_end - vma->vm_start;
	u64 off;

	/* A private mapping would let remap_pfn_range rewrite vm_pgoff. */
	if (!(vma->vm_flags & VM_SHARED))
		return -EINVAL;
	if (vma->vm_pgoff >= (cfg_size >> PAGE_SHIFT))
		return -EINVAL;
	off = (u64)vma->vm_pgoff << PAGE_SHIFT;
	if (len > cfg_size - off)
		return -EINVAL;
	vma->vm_page_prot = pgprot_noncached(vma->vm_page_prot);
	return remap_pfn_range(vma, vma->vm_start, (cfg_base + off) >> PAGE_SHIFT,
			       len, vma->vm_page_prot);
}

static const struct file_operations hmtt_fops = {
	.owner = THIS_MODULE,
	.unlocked_ioctl = hmtt_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.mmap = hmtt_mmap,
	.llseek = noop_llseek,
};

static struct miscdevice hmtt_miscdev = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "hmtt",
	.fops = &hmtt_fops,
	.mode = 0660,
};

static int check_range(void)
{
	if (!cfg_base) {
		pr_err("cfg_base is required (the BASE of memmap=SIZE$BASE)\n");
		return -EINVAL;
	}
	if (!PAGE_ALIGNED(cfg_base) || !PAGE_ALIGNED(cfg_size) ||
	    cfg_base + cfg_size < cfg_base) {
		pr_err("cfg_base 0x%lx and cfg_size 0x%lx must be page aligned\n",
		       cfg_base, cfg_size);
		return -EINVAL;
	}
	if (cfg_size < HMTT_CFG_MIN_SIZE) {
		pr_err("cfg_size 0x%lx is below the 0x%llx bytes the log tags need\n",
		       cfg_size, HMTT_CFG_MIN_SIZE);
		return -EINVAL;
	}
	/* Touching kernel RAM would corrupt it and produce no event. */
	if (region_intersects(cfg_base, cfg_size, IORESOURCE_SYSTEM_RAM,
			      IORES_DESC_NONE) != REGION_DISJOINT) {
		pr_err("0x%lx+0x%lx overlaps System RAM; boot with memmap=0x%lx$0x%lx\n",
		       cfg_base, cfg_size, cfg_size, cfg_base);
		return -EINVAL;
	}
	/* memmap=SIZE$BASE marks the range reserved; anything else is not ours. */
	if (region_intersects(cfg_base, cfg_size, IORESOURCE_MEM,
			      IORES_DESC_RESERVED) != REGION_INTERSECTS) {
		pr_err("0x%lx+0x%lx is not entirely reserved memory; boot with memmap=0x%lx$0x%lx\n",
		       cfg_base, cfg_size, cfg_size, cfg_base);
		return -EINVAL;
	}
	return 0;
}

static int __init hmtt_init(void)
{
	int ret;

	ret = check_range();
	if (ret)
		return ret;
	cfg_region = request_mem_region(cfg_base, cfg_size, "hmtt");
	if (!cfg_region) {
		pr_err("0x%lx+0x%lx is already claimed\n", cfg_base, cfg_size);
		return -EBUSY;
	}
	hmtt_cfg_virt = ioremap_uc(cfg_base, cfg_size);
	if (!hmtt_cfg_virt) {
		ret = -ENOMEM;
		goto err_region;
	}
	hmtt_cfg_lines = cfg_size / HMTT_LINE_SIZE;

	ret = hmtt_log_init(log_records);
	if (ret)
		goto err_unmap;
	ret = misc_register(&hmtt_miscdev);
	if (ret)
		goto err_log;
	ret = hmtt_pt_init(trace_comm);
	if (ret)
		goto err_misc;
	if (dma_log) {
		ret = hmtt_dma_init();
		if (ret)
			goto err_pt;
	}
	pr_info("configuration space 0x%lx+0x%lx, log ring of %lu records\n",
		cfg_base, cfg_size, log_records);
	return 0;

err_pt:
	hmtt_pt_exit();
err_misc:
	misc_deregister(&hmtt_miscdev);
err_log:
	hmtt_log_exit();
err_unmap:
	iounmap(hmtt_cfg_virt);
	hmtt_cfg_virt = NULL;
err_region:
	release_mem_region(cfg_base, cfg_size);
	return ret;
}

static void __exit hmtt_exit(void)
{
	if (dma_log)
		hmtt_dma_exit();
	hmtt_pt_exit();
	misc_deregister(&hmtt_miscdev);
	if (atomic_read(&cache_disabled))
		on_each_cpu(cache_disable_on_cpu, NULL, 1);
	hmtt_log_exit();
	iounmap(hmtt_cfg_virt);
	hmtt_cfg_virt = NULL;
	release_mem_region(cfg_base, cfg_size);
	kfree(rcu_dereference_protected(cfg_map, true));
}

module_init(hmtt_init);
module_exit(hmtt_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("HMTT configuration space, kernel log ring, page-table and DMA logs");
MODULE_VERSION("1");
