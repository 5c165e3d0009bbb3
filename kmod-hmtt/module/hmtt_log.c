// SPDX-License-Identifier: GPL-2.0
/*
 * The kernel log ring behind hmtt_printk() and /dev/hmtt_log.
 *
 * A preallocated array of 2^n slots shared by all CPUs, lock-free: a
 * writer reserves the next sequence number with a compare-and-swap on
 * @head (refusing when the reader is a whole ring behind), fills the slot
 * and publishes it by storing seq + 1 into the slot's commit word with
 * release order. The single reader copies committed slots in order and
 * advances @tail. Sequence numbers therefore have no holes; a record that
 * finds the ring full is counted, and the next record that fits is
 * preceded by an OVERRUN record carrying the count.
 *
 * Each record's seq is announced to the board by a store to event index
 * 0x10000 + (seq & 0xFFFF) at the moment the record is made.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/fs.h>
#include <linux/irq_work.h>
#include <linux/log2.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/poll.h>
#include <linux/sched.h>
#include <linux/smp.h>
#include <linux/string.h>
#include <linux/timekeeping.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>
#include <linux/wait.h>

#include "hmtt_internal.h"

struct hmtt_slot {
	struct hmtt_log_record rec;
	u64 commit;		/* seq + 1 once rec is complete */
};

static struct hmtt_slot *ring;
static u64 ring_mask;
static atomic64_t head = ATOMIC64_INIT(0);	/* next seq to reserve */
static u64 tail;				/* next seq to read */
static atomic64_t pending_overruns = ATOMIC64_INIT(0);
static atomic64_t total_overruns = ATOMIC64_INIT(0);
static atomic_t reader_open = ATOMIC_INIT(0);
static DECLARE_WAIT_QUEUE_HEAD(log_wait);
static DEFINE_MUTEX(read_lock);

/* Writers may run where a wake-up could deadlock; defer it. */
static void log_wakeup(struct irq_work *work)
{
	wake_up_interruptible(&log_wait);
}

static DEFINE_IRQ_WORK(log_wakeup_work, log_wakeup);

static bool reserve(u64 *seq)
{
	s64 h = atomic64_read(&head);

	do {
		if ((u64)h - smp_load_acquire(&tail) > ring_mask)
			return false;
	} while (!atomic64_try_cmpxchg(&head, &h, h + 1));
	*seq = h;
	return true;
}

static void fill_and_commit(u64 seq, u16 kind, u32 pid, u64 a, u64 b, u64 c,
			    const char *name)
{
	struct hmtt_slot *slot = &ring[seq & ring_mask];
	struct hmtt_log_record *rec = &slot->rec;

	rec->seq = seq;
	rec->kind = kind;
	rec->cpu = raw_smp_processor_id();
	rec->pid = pid;
	rec->a = a;
	rec->b = b;
	rec->c = c;
	rec->time_ns = ktime_get_mono_fast_ns();
	memset(rec->name, 0, sizeof(rec->name));
	if (name)
		strscpy(rec->name, name, sizeof(rec->name));
	/* The tag is the record's moment in the trace. */
	hmtt_touch_line(HMTT_EV_LOG_FIRST + (seq & (HMTT_EV_LOG_COUNT - 1)), true, seq);
	smp_store_release(&slot->commit, seq + 1);
}

s64 hmtt_printk(u16 kind, u32 pid, u64 a, u64 b, u64 c, const char *name)
{
	unsigned long flags;
	u64 seq, lost;

	if (unlikely(!ring))
		return -ENODEV;
	/* Keep reserve-to-commit short: the reader waits on this slot. */
	local_irq_save(flags);
	lost = atomic64_read(&pending_overruns);
	if (lost) {
		if (!reserve(&seq))
			goto full;
		lost = atomic64_xchg(&pending_overruns, 0);
		fill_and_commit(seq, HMTT_LOG_OVERRUN, 0, lost, 0, 0, NULL);
	}
	if (!reserve(&seq))
		goto full;
	fill_and_commit(seq, kind, pid, a, b, c, name);
	local_irq_restore(flags);
	irq_work_queue(&log_wakeup_work);
	return seq;

full:
	atomic64_inc(&pending_overruns);
	atomic64_inc(&total_overruns);
	local_irq_restore(flags);
	irq_work_queue(&log_wakeup_work);
	return -ENOSPC;
}
EXPORT_SYMBOL_GPL(hmtt_printk);

void hmtt_log_stats(u64 *capacity, u64 *written, u64 *overruns)
{
	*capacity = ring ? ring_mask + 1 : 0;
	*written = atomic64_read(&head);
	*overruns = atomic64_read(&total_overruns);
}

static bool log_readable(void)
{
	u64 t = tail;

	return t != (u64)atomic64_read(&head) &&
	       smp_load_acquire(&ring[t & ring_mask].commit) == t + 1;
}

static int log_open(struct inode *inode, struct file *file)
{
	/* One reader: records are consumed as they are read. */
	if (atomic_cmpxchg(&reader_open, 0, 1))
		return -EBUSY;
	return nonseekable_open(inode, file);
}

static int log_release(struct inode *inode, struct file *file)
{
	atomic_set(&reader_open, 0);
	return 0;
}

static ssize_t log_read(struct file *file, char __user *buf, size_t count,
			loff_t *ppos)
{
	size_t done = 0;
	int ret;

	if (count < sizeof(struct hmtt_log_record))
		return -EINVAL;
	if (mutex_lock_interruptible(&read_lock))
		return -ERESTARTSYS;
	while (!log_readable()) {
		mutex_unlock(&read_lock);
		if (file->f_flags & O_NONBLOCK)
			return -EAGAIN;
		ret = wait_event_interruptible(log_wait, log_readable());
		if (ret)
			return ret;
		if (mutex_lock_interruptible(&read_lock))
			return -ERESTARTSYS;
	}
	while (count - done >= sizeof(struct hmtt_log_record) && log_readable()) {
		struct hmtt_log_record rec = ring[tail & ring_mask].rec;

		if (copy_to_user(buf + done, &rec, sizeof(rec))) {
			if (!done)
				done = -EFAULT;
			break;
		}
		done += sizeof(rec);
		/* Writers may reuse the slot once tail has moved past it. */
		smp_store_release(&tail, tail + 1);
	}
	mutex_unlock(&read_lock);
	return done;
}

static __poll_t log_poll(struct file *file, poll_table *wait)
{
	poll_wait(file, &log_wait, wait);
	return log_readable() ? EPOLLIN | EPOLLRDNORM : 0;
}

static const struct file_operations log_fops = {
	.owner = THIS_MODULE,
	.open = log_open,
	.release = log_release,
	.read = log_read,
	.poll = log_poll,
	.llseek = no_llseek,
};

static struct miscdevice log_miscdev = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "hmtt_log",
	.fops = &log_fops,
	.mode = 0660,
};

int hmtt_log_init(unsigned long records)
{
	int ret;

	if (records < 2 || records > (1UL << 26)) {
		pr_err("log_records %lu out of range 2..2^26\n", records);
		return -EINVAL;
	}
	records = roundup_pow_of_two(records);
	ring = vzalloc(array_size(records, sizeof(*ring)));
	if (!ring)
		return -ENOMEM;
	ring_mask = records - 1;
	ret = misc_register(&log_miscdev);
	if (ret) {
		vfree(ring);
		ring = NULL;
	}
	return ret;
}

void hmtt_log_exit(void)
{
	misc_deregister(&log_miscdev);
	irq_work_sync(&log_wakeup_work);
	vfree(ring);
	ring = NULL;
}
