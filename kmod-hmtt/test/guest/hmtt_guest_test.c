// SPDX-License-Identifier: GPL-2.0
/*
 * hmtt_guest_test - runs inside the QEMU guest (static, started by the test
 * initramfs's /init) and checks the hmtt module from user space. Prints
 * "PASS <name>" or "FAIL <name>: <why>" lines on stdout (the serial
 * console); the host test collects them. Every record drained from
 * /dev/hmtt_log is also appended to LOG_FILE, which "hexlog" prints for the
 * host to parse with hmtt_format::klog.
 *
 * Subcommands: info | mmap | ioctl | perm GID | ptlog | exec | child |
 *              fork | vfork | vchild | pipeline | mremap | thp | collapse |
 *              filemap | migrate | dma | stress | sleeper | overrun |
 *              cache-disable | mapping | switch-cost |
 *              hexlog [PREFIX]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hmtt_user.h"

#define LOG_FILE "/tmp/all.hmttlog"
#define EXPECT_BASE 0x10000000ull
#define EXPECT_SIZE 0x800000ull
#define PATTERN_MAGIC 0x484d545400000000ull	/* "HMTT" in the high half */
#define PT_PAGES 32
#define MAX_RECORDS 65536

static int failures;

static void pass(const char *name)
{
	printf("PASS %s\n", name);
	fflush(stdout);
}

static void fail(const char *name, const char *fmt, ...)
{
	va_list ap;

	printf("FAIL %s: ", name);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	failures++;
}

static int open_cfg(void)
{
	int fd = open("/dev/hmtt", O_RDWR);

	if (fd < 0) {
		fail("open", "/dev/hmtt: %s", strerror(errno));
		exit(1);
	}
	return fd;
}

static struct hmtt_log_record records[MAX_RECORDS];

/* Append records to LOG_FILE, behind a file header if it is new. */
static void append_log(const struct hmtt_log_record *recs, size_t n)
{
	FILE *out;

	out = fopen(LOG_FILE, "ab");
	if (out) {
		if (ftell(out) == 0) {
			/* docs/format.md section 8: the 32-byte file header */
			unsigned char hdr[32] = "HMTTLOG";
			struct timespec ts;
			uint64_t ns;
			uint16_t v = HMTT_LOG_FILE_VERSION, rs = HMTT_LOG_RECORD_SIZE;

			clock_gettime(CLOCK_REALTIME, &ts);
			ns = (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
			memcpy(hdr + 8, &v, 2);
			memcpy(hdr + 10, &rs, 2);
			memcpy(hdr + 16, &ns, 8);
			fwrite(hdr, 1, sizeof(hdr), out);
		}
		fwrite(recs, sizeof(recs[0]), n, out);
		fclose(out);
	}
}

/* Drain everything available now; append it to LOG_FILE. */
static size_t drain_log(void)
{
	size_t n = 0;
	int fd = open("/dev/hmtt_log", O_RDONLY | O_NONBLOCK);

	if (fd < 0) {
		fail("drain", "/dev/hmtt_log: %s", strerror(errno));
		return 0;
	}
	for (;;) {
		ssize_t got = read(fd, &records[n], (MAX_RECORDS - n) * sizeof(records[0]));

		if (got < 0 && errno == EAGAIN)
			break;
		if (got <= 0) {
			fail("drain", "read: %s", got < 0 ? strerror(errno) : "EOF");
			break;
		}
		if (got % sizeof(records[0]))
			fail("drain", "read returned %zd bytes, not whole records", got);
		n += got / sizeof(records[0]);
		if (n == MAX_RECORDS)
			break;
	}
	close(fd);

	append_log(records, n);
	return n;
}

static int cmd_info(void)
{
	struct hmtt_info info;
	int fd = open_cfg();

	if (ioctl(fd, HMTT_IOC_INFO, &info)) {
		fail("info", "ioctl: %s", strerror(errno));
		return 1;
	}
	if (info.base != EXPECT_BASE || info.size != EXPECT_SIZE ||
	    info.line_size != 64 || info.version != HMTT_ABI_VERSION ||
	    info.log_capacity < 1024)
		fail("info", "base 0x%llx size 0x%llx line %u version %u capacity %llu",
		     (unsigned long long)info.base, (unsigned long long)info.size,
		     info.line_size, info.version, (unsigned long long)info.log_capacity);
	else
		pass("info");
	close(fd);
	return 0;
}

static void expect_mmap_refused(int fd, const char *name, size_t len, off_t off,
				int flags)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, flags, fd, off);

	if (p != MAP_FAILED) {
		fail(name, "mmap(len 0x%zx, off 0x%llx) succeeded", len, (long long)off);
		munmap(p, len);
	} else if (errno != EINVAL) {
		fail(name, "mmap(len 0x%zx, off 0x%llx): %s, expected EINVAL", len,
		     (long long)off, strerror(errno));
	} else {
		pass(name);
	}
}

static int cmd_mmap(void)
{
	struct hmtt_icode_req req = { .event = 0x41, .flags = HMTT_ICODE_WRITE };
	struct hmtt_info info;
	struct hmtt_cfg cfg;
	uint64_t off;
	int fd, ret, bad = 0;

	ret = hmtt_open(&cfg, NULL);
	if (ret) {
		fail("mmap-whole", "hmtt_open: %s", strerror(-ret));
		return 1;
	}
	/* Mark every page (second word of its first line) for the host to find. */
	for (off = 0; off < cfg.size; off += 4096)
		*(volatile uint64_t *)(cfg.base + off + 8) = PATTERN_MAGIC | off;
	for (off = 0; off < cfg.size; off += 4096)
		if (*(volatile uint64_t *)(cfg.base + off + 8) != (PATTERN_MAGIC | off))
			bad++;
	if (bad)
		fail("mmap-whole", "%d pages did not read back", bad);
	else
		pass("mmap-whole");

	/* A user store at line 0x42, checked in guest RAM by the host. */
	*(volatile uint64_t *)(cfg.base + 0x42 * 64) = 0x4242;
	if (hmtt_icode(&cfg, 0x43) || *(volatile uint64_t *)(cfg.base + 0x43 * 64) != 0x43)
		fail("user-icode", "hmtt_icode(0x43) did not store at line 0x43");
	else
		pass("user-icode");
	if (hmtt_icode(&cfg, 0x10005) != -EINVAL)
		fail("user-icode-logrange", "a kernel-log tag line was accepted");
	else
		pass("user-icode-logrange");

	/* The module's own store must land where the user mapping sees it. */
	if (ioctl(cfg.fd, HMTT_IOC_ICODE, &req) || ioctl(cfg.fd, HMTT_IOC_INFO, &info)) {
		fail("kernel-icode", "ioctl: %s", strerror(errno));
	} else if (req.phys != EXPECT_BASE + 0x41 * 64 || info.last_phys != req.phys ||
		   *(volatile uint64_t *)(cfg.base + 0x41 * 64) != 0x41) {
		fail("kernel-icode", "phys 0x%llx last 0x%llx value 0x%llx",
		     (unsigned long long)req.phys, (unsigned long long)info.last_phys,
		     (unsigned long long)*(volatile uint64_t *)(cfg.base + 0x41 * 64));
	} else {
		pass("kernel-icode");
	}
	hmtt_close(&cfg);

	fd = open_cfg();
	expect_mmap_refused(fd, "mmap-too-long", EXPECT_SIZE + 4096, 0, MAP_SHARED);
	expect_mmap_refused(fd, "mmap-offset-end", 4096, EXPECT_SIZE, MAP_SHARED);
	expect_mmap_refused(fd, "mmap-straddle", 8192, EXPECT_SIZE - 4096, MAP_SHARED);
	expect_mmap_refused(fd, "mmap-far", 4096, 0x40000000, MAP_SHARED);
	expect_mmap_refused(fd, "mmap-private", 4096, 0, MAP_PRIVATE);
	{
		/* The last page is inside: must work. */
		void *p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, EXPECT_SIZE - 4096);

		if (p == MAP_FAILED ||
		    *(volatile uint64_t *)((char *)p + 8) != (PATTERN_MAGIC | (EXPECT_SIZE - 4096)))
			fail("mmap-last-page", "%s", p == MAP_FAILED ? strerror(errno) : "wrong data");
		else
			pass("mmap-last-page");
		if (p != MAP_FAILED)
			munmap(p, 4096);
	}
	close(fd);
	return 0;
}

static void expect_ioctl(int fd, const char *name, unsigned long cmd, void *arg,
			 int want_errno)
{
	if (ioctl(fd, cmd, arg) == 0)
		fail(name, "ioctl 0x%lx succeeded", cmd);
	else if (errno != want_errno)
		fail(name, "ioctl 0x%lx: %s, expected %s", cmd, strerror(errno),
		     strerror(want_errno));
	else
		pass(name);
}

static int cmd_ioctl(void)
{
	struct hmtt_icode_req far = { .event = 0x20000 };
	struct hmtt_icode_req logtag = { .event = 0x10001 };
	struct hmtt_icode_req badflags = { .event = 0x50, .flags = 0x80 };
	struct hmtt_snapshot_req snap = { .pid = -5 };
	__s32 nopid = 999999;
	__u32 cd = 1, two = 2;
	int fd = open_cfg(), logfd;

	expect_ioctl(fd, "ioctl-unknown", 0xdeadbeef, NULL, ENOTTY);
	expect_ioctl(fd, "ioctl-unknown-nr", _IOR(HMTT_IOC_MAGIC, 99, __u64), &far, ENOTTY);
	expect_ioctl(fd, "ioctl-icode-far", HMTT_IOC_ICODE, &far, EINVAL);
	expect_ioctl(fd, "ioctl-icode-logtag", HMTT_IOC_ICODE, &logtag, EINVAL);
	expect_ioctl(fd, "ioctl-icode-flags", HMTT_IOC_ICODE, &badflags, EINVAL);
	expect_ioctl(fd, "ioctl-info-null", HMTT_IOC_INFO, NULL, EFAULT);
	expect_ioctl(fd, "ioctl-icode-badptr", HMTT_IOC_ICODE, (void *)16, EFAULT);
	expect_ioctl(fd, "ioctl-snapshot-negpid", HMTT_IOC_SNAPSHOT, &snap, EINVAL);
	expect_ioctl(fd, "ioctl-trace-nopid", HMTT_IOC_TRACE_PID, &nopid, ESRCH);
	expect_ioctl(fd, "ioctl-cache-disable-off", HMTT_IOC_CACHE_DISABLE, &cd, EPERM);
	expect_ioctl(fd, "ioctl-cache-disable-range", HMTT_IOC_CACHE_DISABLE, &two, EINVAL);
	close(fd);

	logfd = open("/dev/hmtt_log", O_RDONLY | O_NONBLOCK);
	if (logfd < 0) {
		fail("log-ioctl", "open: %s", strerror(errno));
		return 0;
	}
	expect_ioctl(logfd, "log-ioctl", HMTT_IOC_INFO, &far, ENOTTY);
	if (open("/dev/hmtt_log", O_RDONLY) >= 0 || errno != EBUSY)
		fail("log-single-reader", "second open: %s", strerror(errno));
	else
		pass("log-single-reader");
	{
		char small[63];

		if (read(logfd, small, sizeof(small)) >= 0 || errno != EINVAL)
			fail("log-short-read", "read of 63 bytes: %s", strerror(errno));
		else
			pass("log-short-read");
	}
	close(logfd);
	return 0;
}

static int try_open_as(gid_t gid)
{
	pid_t pid = fork();
	int status;

	if (pid == 0) {
		gid_t groups[1] = { gid };

		__s32 self = 0, init = 1;
		int fd;

		if (setgroups(1, groups) || setgid(1000) || setuid(1000))
			_exit(2);
		fd = open("/dev/hmtt", O_RDWR);
		if (fd < 0)
			_exit(errno == EACCES ? 1 : 3);
		/* Its own page tables: yes; root's init: no. */
		if (ioctl(fd, HMTT_IOC_TRACE_PID, &self) || ioctl(fd, HMTT_IOC_UNTRACE_PID, &self))
			_exit(5);
		if (ioctl(fd, HMTT_IOC_TRACE_PID, &init) == 0 || errno != EPERM)
			_exit(6);
		_exit(0);
	}
	waitpid(pid, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 4;
}

static int cmd_perm(gid_t gid)
{
	const char *devs[] = { "/dev/hmtt", "/dev/hmtt_log" };
	struct stat st;
	int i, r;

	for (i = 0; i < 2; i++) {
		if (stat(devs[i], &st)) {
			fail("perm-node", "%s: %s", devs[i], strerror(errno));
			continue;
		}
		if (!S_ISCHR(st.st_mode) || (st.st_mode & 07777) != 0660 ||
		    st.st_uid != 0 || st.st_gid != gid)
			fail("perm-node", "%s: mode %o uid %u gid %u, expected 0660 0 %u",
			     devs[i], st.st_mode & 07777, st.st_uid, st.st_gid, gid);
		else
			pass(i ? "perm-node-log" : "perm-node");
	}
	r = try_open_as(gid);
	if (r)
		fail("perm-group-member", "uid 1000 in group %u: open or trace result %d", gid, r);
	else
		pass("perm-group-member");
	r = try_open_as(gid + 1);
	if (r != 1)
		fail("perm-outsider", "uid 1000 outside the group: result %d, expected EACCES", r);
	else
		pass("perm-outsider");
	return 0;
}

/* PFN of a virtual page from /proc/self/pagemap, 0 if absent. */
static uint64_t pagemap_pfn(int pm, uintptr_t va)
{
	uint64_t e;

	if (pread(pm, &e, 8, (va / 4096) * 8) != 8 || !(e >> 63))
		return 0;
	return e & ((1ull << 55) - 1);
}

static const struct hmtt_log_record *find_rec(size_t n, unsigned int kind,
					      uint32_t pid, uint64_t vpn)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (records[i].kind == kind && records[i].pid == pid && records[i].a == vpn)
			return &records[i];
	return NULL;
}

static void check_seq(size_t n)
{
	size_t i;

	for (i = 1; i < n; i++)
		if (records[i].seq != records[i - 1].seq + 1) {
			fail("log-seq", "seq %llu follows %llu",
			     (unsigned long long)records[i].seq,
			     (unsigned long long)records[i - 1].seq);
			return;
		}
	pass("log-seq");
}

static int cmd_ptlog(void)
{
	struct hmtt_snapshot_req snap = { .pid = 0 };
	uint64_t pfns[PT_PAGES];
	int fd = open_cfg(), pm, i, bad_map = 0, bad_snap = 0, bad_unmap = 0;
	pid_t self = getpid();
	__s32 zero = 0;
	uint8_t *buf;
	size_t n;

	drain_log();	/* start from an empty ring */
	if (ioctl(fd, HMTT_IOC_TRACE_PID, &zero)) {
		fail("ptlog", "TRACE_PID: %s", strerror(errno));
		return 1;
	}
	buf = mmap(NULL, PT_PAGES * 4096, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	madvise(buf, PT_PAGES * 4096, MADV_NOHUGEPAGE);
	for (i = 0; i < PT_PAGES; i++)
		buf[i * 4096] = i + 1;	/* one fault per page */
	pm = open("/proc/self/pagemap", O_RDONLY);
	for (i = 0; i < PT_PAGES; i++)
		pfns[i] = pagemap_pfn(pm, (uintptr_t)buf + i * 4096);
	close(pm);
	if (ioctl(fd, HMTT_IOC_SNAPSHOT, &snap))
		fail("snapshot", "SNAPSHOT: %s", strerror(errno));
	munmap(buf, PT_PAGES * 4096);
	ioctl(fd, HMTT_IOC_UNTRACE_PID, &zero);
	close(fd);

	n = drain_log();
	printf("INFO ptlog: %zu records, snapshot logged %llu dropped %llu\n", n,
	       (unsigned long long)snap.logged, (unsigned long long)snap.dropped);
	check_seq(n);
	for (i = 0; i < PT_PAGES; i++) {
		uint64_t vpn = ((uintptr_t)buf >> 12) + i;
		const struct hmtt_log_record *m = find_rec(n, HMTT_LOG_MAP, self, vpn);
		const struct hmtt_log_record *s = find_rec(n, HMTT_LOG_SNAPSHOT_MAP, self, vpn);
		const struct hmtt_log_record *u = find_rec(n, HMTT_LOG_UNMAP, self, vpn);

		if (!pfns[i]) {
			fail("ptlog-pagemap", "page %d has no PFN in pagemap", i);
			return 1;
		}
		if (!m || m->b != pfns[i] || !m->c)
			bad_map++;
		if (!s || s->b != pfns[i] || !m || s->c != m->c || s->seq < m->seq)
			bad_snap++;
		if (!u || u->b != pfns[i] || !s || u->seq < s->seq || u->c != s->c)
			bad_unmap++;
	}
	if (bad_map)
		fail("ptlog-map", "%d of %d pages without a MAP matching pagemap", bad_map, PT_PAGES);
	else
		pass("ptlog-map");
	if (bad_snap || snap.logged < PT_PAGES || snap.dropped)
		fail("ptlog-snapshot", "%d pages without a matching SNAPSHOT_MAP", bad_snap);
	else
		pass("ptlog-snapshot");
	if (bad_unmap)
		fail("ptlog-unmap", "%d pages without a matching UNMAP", bad_unmap);
	else
		pass("ptlog-unmap");
	return 0;
}

/* The first record of kind, pid and vpn after seq `after`, or NULL. */
static const struct hmtt_log_record *find_rec_after(size_t n, unsigned int kind,
						    uint32_t pid, uint64_t vpn,
						    uint64_t after)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (records[i].seq > after && records[i].kind == kind &&
		    records[i].pid == pid && records[i].a == vpn)
			return &records[i];
	return NULL;
}

/* The first record of kind for pid (any vpn), or NULL. */
static const struct hmtt_log_record *find_kind(size_t n, unsigned int kind, uint32_t pid)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (records[i].kind == kind && records[i].pid == pid)
			return &records[i];
	return NULL;
}

static int trace_self(int fd, unsigned long cmd, const char *name)
{
	__s32 zero = 0;

	if (ioctl(fd, cmd, &zero)) {
		fail(name, "%s: %s", cmd == HMTT_IOC_TRACE_PID ? "TRACE_PID" : "UNTRACE_PID",
		     strerror(errno));
		return -1;
	}
	return 0;
}

static void read_full(int fd, void *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t got = read(fd, (char *)buf + done, len - done);

		if (got <= 0)
			break;
		done += got;
	}
}

/*
 * execve's new address space is logged under the exec'ing pid from its
 * creation: the page at the top of the new stack, where copy_strings
 * wrote the argument strings, has a MAP before EXEC with the frame the
 * snapshot after EXEC shows. EXEC comes before the ELF loader writes to
 * the image, so every page mapped at EXEC by a MAP before it is a page of
 * the new stack (within 1 MiB of its top; the stack's first place, before
 * it moved, is unmapped before EXEC), none of the image's .bss or data.
 */
static void check_exec_early(size_t n, const struct hmtt_log_record *ex, const char *name)
{
	const struct hmtt_log_record *top = NULL, *m = NULL;
	size_t k, early = 0, far = 0;

	for (k = 0; k < n; k++) {
		const struct hmtt_log_record *r = &records[k];

		if (r->pid != ex->pid || r->seq <= ex->seq)
			continue;
		if (r->kind != HMTT_LOG_SNAPSHOT_MAP)
			break;	/* the snapshot is the run right after EXEC */
		if (!top || r->a > top->a)
			top = r;
	}
	if (!top) {
		fail(name, "no SNAPSHOT_MAP after EXEC of pid %u", ex->pid);
		return;
	}
	for (k = 0; k < n && records[k].seq < ex->seq; k++) {
		const struct hmtt_log_record *r = &records[k];

		if (r->kind != HMTT_LOG_MAP || r->pid != ex->pid)
			continue;
		early++;
		if (r->a > top->a || r->a + 256 <= top->a) {
			/* Only where the stack was before it moved into place. */
			const struct hmtt_log_record *u =
				find_rec_after(n, HMTT_LOG_UNMAP, r->pid, r->a, r->seq);

			if (!u || u->b != r->b || u->seq > ex->seq)
				far++;
		}
		if (r->a == top->a && r->b == top->b)
			m = r;
	}
	printf("INFO %s: %zu MAP records before EXEC, %zu still mapped away from the stack top %llx\n",
	       name, early, far, (unsigned long long)top->a);
	if (!m || far)
		fail(name, "stack top %llx (frame %llx) %s before EXEC; %zu MAPs before EXEC outside the stack",
		     (unsigned long long)top->a, (unsigned long long)top->b,
		     m ? "had a MAP" : "had no MAP", far);
	else
		pass(name);
}

#define FORK_PAGES 16
#define SHM_PAGES 256

struct fork_report {
	uint64_t priv[FORK_PAGES / 2];	/* frames of its COW-broken pages */
	uint64_t shm[SHM_PAGES / 2];	/* frames of the shared pages it wrote */
};

/*
 * A traced process forks. The child breaks COW on the first half of a
 * private buffer and writes the first half of a MAP_SHARED region; then
 * the parent, while the child still lives, breaks COW on the second half,
 * writes the second half of the region and reads the child's first
 * shared pages. Checks FORK and the child's SNAPSHOT_MAPs before it ran,
 * MAPs of both COW breaks and of every shared write fault, SWITCH.
 */
static int cmd_fork(void)
{
	int fd = open_cfg(), pm, up[2], down[2], i, bad;
	uint64_t orig[FORK_PAGES], parent_priv[FORK_PAGES], parent_shm[SHM_PAGES];
	struct fork_report rep = { { 0 } };
	const struct hmtt_log_record *fk = NULL, *sw_in = NULL, *sw_out = NULL, *r;
	uint8_t *priv, *shm;
	uint64_t pvpn, svpn;
	pid_t self = getpid(), kid;
	size_t n, k;
	char c = 0;

	drain_log();
	if (pipe(up) || pipe(down) || trace_self(fd, HMTT_IOC_TRACE_PID, "fork"))
		return 1;
	priv = mmap(NULL, FORK_PAGES * 4096, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	shm = mmap(NULL, SHM_PAGES * 4096, PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	madvise(priv, FORK_PAGES * 4096, MADV_NOHUGEPAGE);
	for (i = 0; i < FORK_PAGES; i++)
		priv[i * 4096] = i + 1;
	pm = open("/proc/self/pagemap", O_RDONLY);
	for (i = 0; i < FORK_PAGES; i++)
		orig[i] = pagemap_pfn(pm, (uintptr_t)priv + i * 4096);
	kid = fork();
	if (kid == 0) {
		int cpm = open("/proc/self/pagemap", O_RDONLY);

		for (i = 0; i < FORK_PAGES / 2; i++)
			priv[i * 4096] = 0x55;
		for (i = 0; i < SHM_PAGES / 2; i++)
			shm[i * 4096] = 1;
		for (i = 0; i < FORK_PAGES / 2; i++)
			rep.priv[i] = pagemap_pfn(cpm, (uintptr_t)priv + i * 4096);
		for (i = 0; i < SHM_PAGES / 2; i++)
			rep.shm[i] = pagemap_pfn(cpm, (uintptr_t)shm + i * 4096);
		if (write(up[1], &rep, sizeof(rep)) != sizeof(rep) || read(down[0], &c, 1) != 1)
			_exit(2);
		_exit(0);
	}
	read_full(up[0], &rep, sizeof(rep));
	for (i = FORK_PAGES / 2; i < FORK_PAGES; i++)
		priv[i * 4096] = 0x66;
	for (i = SHM_PAGES / 2; i < SHM_PAGES; i++)
		shm[i * 4096] = 2;
	for (i = 0; i < 8; i++)
		c += *(volatile uint8_t *)(shm + i * 4096);
	for (i = 0; i < FORK_PAGES; i++)
		parent_priv[i] = pagemap_pfn(pm, (uintptr_t)priv + i * 4096);
	for (i = 0; i < SHM_PAGES; i++)
		parent_shm[i] = pagemap_pfn(pm, (uintptr_t)shm + i * 4096);
	close(pm);
	if (write(down[1], &c, 1) != 1)
		fail("fork", "could not release the child");
	waitpid(kid, NULL, 0);
	trace_self(fd, HMTT_IOC_UNTRACE_PID, "fork");
	close(fd);

	n = drain_log();
	printf("INFO fork: %zu records, child %d\n", n, kid);
	pvpn = (uintptr_t)priv >> 12;
	svpn = (uintptr_t)shm >> 12;
	fk = find_kind(n, HMTT_LOG_FORK, kid);
	if (!fk || fk->a != (uint64_t)self || (fk->b & CLONE_VM) || (fk->b & 0xff) != SIGCHLD ||
	    strncmp(fk->name, "hmtt_guest_test", 16)) {
		fail("fork-record", "no FORK of %d by %d without CLONE_VM, SIGCHLD, named hmtt_guest_test (b %llx)",
		     kid, self, fk ? (unsigned long long)fk->b : 0ull);
		return 1;
	}
	pass("fork-record");
	for (k = 0; k < n; k++) {
		if (records[k].kind != HMTT_LOG_SWITCH)
			continue;
		if (records[k].pid == records[k].a)
			fail("switch", "SWITCH from %llu to itself", (unsigned long long)records[k].a);
		if (!sw_in && records[k].pid == (uint32_t)kid)
			sw_in = &records[k];
		if (!sw_out && records[k].a == (uint64_t)kid)
			sw_out = &records[k];
	}
	if (!sw_in || !sw_out || sw_in->seq < fk->seq)
		fail("switch", "no SWITCH to and from the child %d after its FORK", kid);
	else
		pass("switch");
	for (bad = 0, i = 0; i < FORK_PAGES; i++) {
		r = find_rec_after(n, HMTT_LOG_SNAPSHOT_MAP, kid, pvpn + i, fk->seq);
		if (!r || r->b != orig[i] || (sw_in && r->seq > sw_in->seq))
			bad++;
	}
	if (bad)
		fail("fork-snapshot", "%d of %d pages without a SNAPSHOT_MAP of the child before it ran",
		     bad, FORK_PAGES);
	else
		pass("fork-snapshot");
	for (bad = 0, i = 0; i < FORK_PAGES / 2; i++) {
		r = find_rec_after(n, HMTT_LOG_MAP, kid, pvpn + i, fk->seq);
		if (!r || r->b != rep.priv[i] || rep.priv[i] == orig[i])
			bad++;
	}
	if (bad)
		fail("cow-child", "%d of %d COW breaks of the child without a MAP of the new frame",
		     bad, FORK_PAGES / 2);
	else
		pass("cow-child");
	for (bad = 0, i = FORK_PAGES / 2; i < FORK_PAGES; i++) {
		r = find_rec_after(n, HMTT_LOG_MAP, self, pvpn + i, fk->seq);
		if (!r || r->b != parent_priv[i] || parent_priv[i] == orig[i])
			bad++;
	}
	if (bad)
		fail("cow-parent", "%d of %d COW breaks of the parent without a MAP of the new frame",
		     bad, FORK_PAGES / 2);
	else
		pass("cow-parent");
	for (bad = 0, i = 0; i < SHM_PAGES; i++) {
		uint32_t who = i < SHM_PAGES / 2 ? (uint32_t)kid : (uint32_t)self;
		uint64_t pfn = i < SHM_PAGES / 2 ? rep.shm[i] : parent_shm[i];

		r = find_rec_after(n, HMTT_LOG_MAP, who, svpn + i, fk->seq);
		if (!pfn || !r || r->b != pfn)
			bad++;
	}
	if (bad)
		fail("shm-write", "%d of %d shared-memory write faults without a MAP", bad, SHM_PAGES);
	else
		pass("shm-write");
	for (bad = 0, i = 0; i < 8; i++) {
		r = find_rec_after(n, HMTT_LOG_MAP, self, svpn + i, fk->seq);
		if (!r || r->b != rep.shm[i] || parent_shm[i] != rep.shm[i])
			bad++;
	}
	if (bad)
		fail("shm-read", "%d of 8 reads of the child's shared pages without a MAP of its frame",
		     bad);
	else
		pass("shm-read");
	for (bad = 0, i = 0; i < FORK_PAGES / 2; i++) {
		r = find_rec_after(n, HMTT_LOG_UNMAP, kid, pvpn + i, fk->seq);
		if (!r || r->b != rep.priv[i])
			bad++;
	}
	r = find_kind(n, HMTT_LOG_EXIT, kid);
	if (bad || !r)
		fail("fork-exit", "child: %s, %d of %d pages without an exit UNMAP",
		     r ? "EXIT" : "no EXIT", bad, FORK_PAGES / 2);
	else
		pass("fork-exit");
	return 0;
}

/* Runs as the vfork test's exec'd child. */
static int cmd_vchild(void)
{
	return 0;
}

/*
 * A traced process vforks; the child writes a page of the shared address
 * space (logged under the parent, whose mm it is) and execs.
 */
static int cmd_vfork(void)
{
	int fd = open_cfg(), pm;
	const struct hmtt_log_record *fk, *ex, *ez, *m;
	volatile uint8_t *buf;
	uint64_t vpn, pfn;
	pid_t self = getpid(), kid;
	size_t n, k;
	int snaps = 0, kid_maps = 0;

	drain_log();
	if (trace_self(fd, HMTT_IOC_TRACE_PID, "vfork"))
		return 1;
	buf = mmap(NULL, 4 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	kid = vfork();
	if (kid == 0) {
		buf[4096] = 7;
		execl("/bin/hmtt_guest_test", "hmtt_guest_test", "vchild", (char *)NULL);
		_exit(127);
	}
	waitpid(kid, NULL, 0);
	pm = open("/proc/self/pagemap", O_RDONLY);
	vpn = ((uintptr_t)buf >> 12) + 1;
	pfn = pagemap_pfn(pm, (uintptr_t)buf + 4096);
	close(pm);
	trace_self(fd, HMTT_IOC_UNTRACE_PID, "vfork");
	close(fd);

	n = drain_log();
	printf("INFO vfork: %zu records, child %d\n", n, kid);
	fk = find_kind(n, HMTT_LOG_FORK, kid);
	ex = find_kind(n, HMTT_LOG_EXEC, kid);
	ez = find_kind(n, HMTT_LOG_EXIT, kid);
	if (!fk || fk->a != (uint64_t)self || !(fk->b & CLONE_VM) || !(fk->b & CLONE_VFORK)) {
		fail("vfork-record", "no FORK of %d by %d with CLONE_VM|CLONE_VFORK", kid, self);
		return 1;
	}
	pass("vfork-record");
	if (!ex || ex->seq < fk->seq || !ez || ez->seq < ex->seq) {
		fail("vfork-exec", "child %d: no EXEC then EXIT after its FORK", kid);
		return 1;
	}
	for (k = 0; k < n; k++) {
		if (records[k].pid != (uint32_t)kid || records[k].seq > ex->seq)
			continue;
		snaps += records[k].kind == HMTT_LOG_SNAPSHOT_MAP;
		kid_maps += records[k].kind == HMTT_LOG_MAP && records[k].a == vpn;
	}
	m = find_rec_after(n, HMTT_LOG_MAP, self, vpn, fk->seq);
	if (snaps || kid_maps || !pfn || !m || m->b != pfn || m->seq > ex->seq)
		fail("vfork-shared-mm", "%d SNAPSHOT_MAP of the child before EXEC, %d MAP of the page "
		     "under the child, parent's MAP %s", snaps, kid_maps,
		     m ? (m->b == pfn ? "ok" : "wrong frame") : "missing");
	else
		pass("vfork-shared-mm");
	check_exec_early(n, ex, "vfork-exec-early");
	return 0;
}

/*
 * A traced process runs a shell pipeline (system(): glibc's posix_spawn
 * clone with CLONE_VM|CLONE_VFORK, the shell's exec, its forks and their
 * execs): every process of the chain gets a FORK from a traced parent,
 * and the two programs of the pipeline an EXEC and an EXIT.
 */
static int cmd_pipeline(void)
{
	int fd = open_cfg(), execs = 0, orphans = 0, forks = 0, exits = 0;
	uint32_t traced[16];
	size_t n, k, ntraced = 1, j;

	drain_log();
	if (trace_self(fd, HMTT_IOC_TRACE_PID, "pipeline"))
		return 1;
	if (system("/bin/hmtt_guest_test vchild | /bin/hmtt_guest_test vchild"))
		fail("pipeline", "the pipeline failed");
	trace_self(fd, HMTT_IOC_UNTRACE_PID, "pipeline");
	close(fd);

	n = drain_log();
	traced[0] = getpid();
	for (k = 0; k < n; k++) {
		const struct hmtt_log_record *r = &records[k];
		bool known = false;

		if (r->kind != HMTT_LOG_FORK)
			continue;
		forks++;
		for (j = 0; j < ntraced; j++)
			known |= r->a == traced[j];
		if (!known)
			orphans++;
		if (ntraced < 16)
			traced[ntraced++] = r->pid;
	}
	for (k = 0; k < n; k++) {
		const struct hmtt_log_record *r = &records[k];

		for (j = 1; j < ntraced; j++) {
			if (r->pid != traced[j])
				continue;
			if (r->kind == HMTT_LOG_EXEC && !strncmp(r->name, "hmtt_guest_test", 16))
				execs++;
			exits += r->kind == HMTT_LOG_EXIT;
		}
	}
	printf("INFO pipeline: %d FORK, %d EXEC of the programs, %d EXIT\n", forks, execs, exits);
	if (forks < 3 || orphans || execs != 2 || exits != forks)
		fail("pipeline", "%d FORK (%d from untraced parents), %d EXEC of the two programs, %d EXIT",
		     forks, orphans, execs, exits);
	else
		pass("pipeline");
	return 0;
}

#define PINGPONG_ROUNDS 5000

/* ns per round trip of a byte between two processes over two pipes. */
static double pingpong_ns(void)
{
	int ab[2], ba[2], i;
	struct timespec t0, t1;
	char c = 0;
	pid_t kid;

	cpu_set_t one;

	/* One CPU: every switch is local, no cross-CPU wake-up latency. */
	CPU_ZERO(&one);
	CPU_SET(0, &one);
	if (pipe(ab) || pipe(ba) || sched_setaffinity(0, sizeof(one), &one))
		return 0;
	kid = fork();
	if (kid == 0) {
		for (i = 0; i < PINGPONG_ROUNDS; i++)
			if (read(ab[0], &c, 1) != 1 || write(ba[1], &c, 1) != 1)
				_exit(2);
		_exit(0);
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 0; i < PINGPONG_ROUNDS; i++)
		if (write(ab[1], &c, 1) != 1 || read(ba[0], &c, 1) != 1)
			break;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	waitpid(kid, NULL, 0);
	close(ab[0]);
	close(ab[1]);
	close(ba[0]);
	close(ba[1]);
	return ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / PINGPONG_ROUNDS;
}

/*
 * The context-switch hook's cost, printed as figures (not a check): a
 * pipe ping-pong (two switches a round trip when both sides block) with
 * no process traced, with one unrelated process traced (the hook's
 * filter tests), and with both sides traced (a SWITCH record each switch).
 * Emulated CPUs: compare the ratios, not the times.
 */
static int cmd_switch_cost(void)
{
	int fd = open_cfg(), round;
	double idle = 0, filtered = 0, logged = 0;
	pid_t sleeper;

	for (round = 0; round < 3; round++) {
		printf("INFO switch-cost: round %d\n", round);
		fflush(stdout);
		drain_log();
		idle += pingpong_ns();
		sleeper = fork();
		if (sleeper == 0) {
			pause();
			_exit(0);
		}
		if (ioctl(fd, HMTT_IOC_TRACE_PID, &sleeper))
			fail("switch-cost", "TRACE_PID: %s", strerror(errno));
		filtered += pingpong_ns();
		trace_self(fd, HMTT_IOC_TRACE_PID, "switch-cost");
		logged += pingpong_ns();
		trace_self(fd, HMTT_IOC_UNTRACE_PID, "switch-cost");
		kill(sleeper, SIGKILL);
		waitpid(sleeper, NULL, 0);
		ioctl(fd, HMTT_IOC_UNTRACE_PID, &sleeper);
	}
	drain_log();
	close(fd);
	printf("INFO switch-cost: pipe round trip %.0f ns untraced, %.0f ns (x%.2f) with another process traced, %.0f ns (x%.2f) with both sides traced (%d rounds x3)\n",
	       idle / 3, filtered / 3, filtered / idle, logged / 3, logged / idle, PINGPONG_ROUNDS);
	return 0;
}

/* mremap moving 8 present pages: UNMAP at the old place, then MAP at the new. */
static int cmd_mremap(void)
{
	int fd = open_cfg(), pm, i, bad = 0;
	uint64_t pfns[8], moved[8], ovpn, nvpn;
	uint8_t *buf, *dst;
	size_t n;

	drain_log();
	if (trace_self(fd, HMTT_IOC_TRACE_PID, "mremap"))
		return 1;
	buf = mmap(NULL, 8 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	dst = mmap(NULL, 8 * 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	madvise(buf, 8 * 4096, MADV_NOHUGEPAGE);
	for (i = 0; i < 8; i++)
		buf[i * 4096] = i + 1;
	pm = open("/proc/self/pagemap", O_RDONLY);
	for (i = 0; i < 8; i++)
		pfns[i] = pagemap_pfn(pm, (uintptr_t)buf + i * 4096);
	if (mremap(buf, 8 * 4096, 8 * 4096, MREMAP_MAYMOVE | MREMAP_FIXED, dst) != dst) {
		fail("mremap", "mremap: %s", strerror(errno));
		return 1;
	}
	for (i = 0; i < 8; i++)
		moved[i] = pagemap_pfn(pm, (uintptr_t)dst + i * 4096);
	close(pm);
	munmap(dst, 8 * 4096);
	trace_self(fd, HMTT_IOC_UNTRACE_PID, "mremap");
	close(fd);

	n = drain_log();
	ovpn = (uintptr_t)buf >> 12;
	nvpn = (uintptr_t)dst >> 12;
	for (i = 0; i < 8; i++) {
		const struct hmtt_log_record *first = find_rec(n, HMTT_LOG_MAP, getpid(), ovpn + i);
		const struct hmtt_log_record *u, *m;

		u = first ? find_rec_after(n, HMTT_LOG_UNMAP, getpid(), ovpn + i, first->seq) : NULL;
		m = u ? find_rec_after(n, HMTT_LOG_MAP, getpid(), nvpn + i, u->seq) : NULL;
		if (!u || !m || u->b != pfns[i] || m->b != pfns[i] || moved[i] != pfns[i])
			bad++;
	}
	if (bad)
		fail("mremap", "%d of 8 moved pages without UNMAP at the old and MAP at the new address",
		     bad);
	else
		pass("mremap");
	return 0;
}

#define THP_ENABLED "/sys/kernel/mm/transparent_hugepage/enabled"

/* The bracketed word of THP_ENABLED ("always [madvise] never"). */
static char *thp_mode(char *buf, size_t len)
{
	FILE *f = fopen(THP_ENABLED, "r");
	char line[128], *open, *close;

	if (!f)
		return NULL;
	if (!fgets(line, sizeof(line), f)) {
		fclose(f);
		return NULL;
	}
	fclose(f);
	open = strchr(line, '[');
	close = open ? strchr(open, ']') : NULL;
	if (!close || (size_t)(close - open) > len)
		return NULL;
	*close = 0;
	strcpy(buf, open + 1);
	return buf;
}

static bool set_thp_mode(const char *mode)
{
	FILE *f = fopen(THP_ENABLED, "w");
	bool ok;

	if (!f)
		return false;
	ok = fputs(mode, f) >= 0;
	return !fclose(f) && ok;
}

/* An anonymous 2 MiB THP fault: 512 MAP records of one PMD leaf. */
static int cmd_thp(void)
{
	char thp_was[32];
	int fd = open_cfg(), pm, i, bad = 0;
	uint64_t pfn0, vpn0, c = 0;
	uint8_t *raw, *a;
	size_t n;

	/* The kernel leaves THP off on machines under 512 MiB, as this guest. */
	if (!thp_mode(thp_was, sizeof(thp_was)) || !set_thp_mode("madvise")) {
		fail("thp", "%s: %s", THP_ENABLED, strerror(errno));
		return 1;
	}
	drain_log();
	if (trace_self(fd, HMTT_IOC_TRACE_PID, "thp"))
		return 1;
	raw = mmap(NULL, 4 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	a = (uint8_t *)(((uintptr_t)raw + (2 << 20) - 1) & ~(uintptr_t)((2 << 20) - 1));
	madvise(a, 2 << 20, MADV_HUGEPAGE);
	a[4096 * 3] = 1;
	pm = open("/proc/self/pagemap", O_RDONLY);
	pfn0 = pagemap_pfn(pm, (uintptr_t)a);
	for (i = 0; i < 512; i++)
		if (pagemap_pfn(pm, (uintptr_t)a + i * 4096) != pfn0 + i)
			bad++;
	close(pm);
	munmap(raw, 4 << 20);
	trace_self(fd, HMTT_IOC_UNTRACE_PID, "thp");
	close(fd);
	set_thp_mode(thp_was);
	if (!pfn0 || bad) {
		fail("thp", "the kernel gave no transparent huge page (%d of 512 pages off)", bad);
		return 1;
	}

	n = drain_log();
	vpn0 = (uintptr_t)a >> 12;
	for (i = 0; i < 512; i++) {
		const struct hmtt_log_record *m = find_rec(n, HMTT_LOG_MAP, getpid(), vpn0 + i);
		const struct hmtt_log_record *u = find_rec(n, HMTT_LOG_UNMAP, getpid(), vpn0 + i);

		if (!m || m->b != pfn0 + i || (i && m->c != c) || !u || u->b != pfn0 + i ||
		    u->seq < m->seq)
			bad++;
		if (m && !i)
			c = m->c;
	}
	if (bad)
		fail("thp", "%d of 512 pages of the huge page without MAP (same PMD) and UNMAP", bad);
	else
		pass("thp");
	return 0;
}

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif

/*
 * 512 small pages collapsed into a huge page (MADV_COLLAPSE, the
 * synchronous form of khugepaged's work): MAP of the new frames.
 */
static int cmd_collapse(void)
{
	char thp_was[32];
	int fd = open_cfg(), pm, i, bad = 0, small = 0;
	uint64_t pfn0, vpn0, last_small = 0;
	uint8_t *raw, *a;
	size_t n, k;

	if (!thp_mode(thp_was, sizeof(thp_was)) || !set_thp_mode("madvise")) {
		fail("thp-collapse", "%s: %s", THP_ENABLED, strerror(errno));
		return 1;
	}
	drain_log();
	if (trace_self(fd, HMTT_IOC_TRACE_PID, "thp-collapse"))
		return 1;
	raw = mmap(NULL, 4 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	a = (uint8_t *)(((uintptr_t)raw + (2 << 20) - 1) & ~(uintptr_t)((2 << 20) - 1));
	for (i = 0; i < 512; i++)
		a[i * 4096] = i;	/* small pages: not MADV_HUGEPAGE */
	if (madvise(a, 2 << 20, MADV_COLLAPSE))
		fail("thp-collapse", "MADV_COLLAPSE: %s", strerror(errno));
	pm = open("/proc/self/pagemap", O_RDONLY);
	pfn0 = pagemap_pfn(pm, (uintptr_t)a);
	for (i = 0; i < 512; i++)
		if (pagemap_pfn(pm, (uintptr_t)a + i * 4096) != pfn0 + i)
			bad++;
	close(pm);
	munmap(raw, 4 << 20);
	trace_self(fd, HMTT_IOC_UNTRACE_PID, "thp-collapse");
	close(fd);
	set_thp_mode(thp_was);
	if (!pfn0 || bad) {
		fail("thp-collapse", "no huge page after MADV_COLLAPSE (%d of 512 pages off)", bad);
		return 1;
	}

	n = drain_log();
	vpn0 = (uintptr_t)a >> 12;
	/* After the last small-page fault, each page's MAP of its new frame. */
	for (k = 0; k < n; k++)
		if (records[k].kind == HMTT_LOG_MAP && records[k].pid == (uint32_t)getpid() &&
		    records[k].a >= vpn0 && records[k].a < vpn0 + 512 &&
		    records[k].b != pfn0 + (records[k].a - vpn0)) {
			small++;
			last_small = records[k].seq;
		}
	for (bad = 0, i = 0; i < 512; i++) {
		const struct hmtt_log_record *m =
			find_rec_after(n, HMTT_LOG_MAP, getpid(), vpn0 + i, last_small);

		if (!m || m->b != pfn0 + i)
			bad++;
	}
	if (small != 512 || bad)
		fail("thp-collapse", "%d small-page MAPs, %d of 512 pages without a MAP of the huge page",
		     small, bad);
	else
		pass("thp-collapse");
	return 0;
}

/*
 * A file (tmpfs) mapped shared and private: a read (fault-around), a
 * shared write and a private write (a COW copy of the file page). Every
 * present page must have a MAP of its frame.
 */
#define FILE_PAGES 32

static int cmd_filemap(void)
{
	int fd = open_cfg(), pm, file, i, bad = 0, present = 0;
	static uint8_t page[4096];
	uint64_t pfns[FILE_PAGES], cow;
	uint8_t *sh, *pr;
	size_t n;

	file = open("/tmp/hmtt_file", O_RDWR | O_CREAT | O_TRUNC, 0644);
	for (i = 0; i < FILE_PAGES; i++) {
		memset(page, i, sizeof(page));
		if (write(file, page, sizeof(page)) != sizeof(page))
			fail("filemap", "write: %s", strerror(errno));
	}
	drain_log();
	if (trace_self(fd, HMTT_IOC_TRACE_PID, "filemap"))
		return 1;
	sh = mmap(NULL, FILE_PAGES * 4096, PROT_READ | PROT_WRITE, MAP_SHARED, file, 0);
	pr = mmap(NULL, FILE_PAGES * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE, file, 0);
	(void)*(volatile uint8_t *)sh;
	sh[20 * 4096] = 0xaa;
	pr[5 * 4096] = 0xbb;
	pm = open("/proc/self/pagemap", O_RDONLY);
	for (i = 0; i < FILE_PAGES; i++)
		pfns[i] = pagemap_pfn(pm, (uintptr_t)sh + i * 4096);
	cow = pagemap_pfn(pm, (uintptr_t)pr + 5 * 4096);
	close(pm);
	trace_self(fd, HMTT_IOC_UNTRACE_PID, "filemap");
	close(fd);
	close(file);

	n = drain_log();
	for (i = 0; i < FILE_PAGES; i++) {
		const struct hmtt_log_record *m;

		if (!pfns[i])
			continue;
		present++;
		m = find_rec(n, HMTT_LOG_MAP, getpid(), ((uintptr_t)sh >> 12) + i);
		if (!m || m->b != pfns[i])
			bad++;
	}
	printf("INFO filemap: %d of %d pages of the shared mapping present\n", present, FILE_PAGES);
	if (bad || present < 2 || !pfns[20])
		fail("filemap-shared", "%d of %d present pages without a MAP of their frame", bad, present);
	else
		pass("filemap-shared");
	{
		const struct hmtt_log_record *m =
			find_rec(n, HMTT_LOG_MAP, getpid(), ((uintptr_t)pr >> 12) + 5);

		if (!cow || cow == pfns[5] || !m || m->b != cow)
			fail("filemap-private", "private write: no MAP of its own frame");
		else
			pass("filemap-private");
	}
	munmap(sh, FILE_PAGES * 4096);
	munmap(pr, FILE_PAGES * 4096);
	unlink("/tmp/hmtt_file");
	return 0;
}

#ifndef MADV_SOFT_OFFLINE
#define MADV_SOFT_OFFLINE 101
#endif

/* Page migration (soft offline moves a page to a new frame): a MAP of it. */
static int cmd_migrate(void)
{
	int fd = open_cfg(), pm, i;
	uint64_t before, after, vpn;
	const struct hmtt_log_record *m;
	uint8_t *buf;
	size_t n;

	drain_log();
	if (trace_self(fd, HMTT_IOC_TRACE_PID, "migrate"))
		return 1;
	buf = mmap(NULL, 4 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	madvise(buf, 4 * 4096, MADV_NOHUGEPAGE);
	for (i = 0; i < 4; i++)
		buf[i * 4096] = i + 1;
	pm = open("/proc/self/pagemap", O_RDONLY);
	before = pagemap_pfn(pm, (uintptr_t)buf + 4096);
	if (madvise(buf + 4096, 4096, MADV_SOFT_OFFLINE))
		fail("migrate", "MADV_SOFT_OFFLINE: %s", strerror(errno));
	after = pagemap_pfn(pm, (uintptr_t)buf + 4096);
	close(pm);
	trace_self(fd, HMTT_IOC_UNTRACE_PID, "migrate");
	close(fd);

	n = drain_log();
	vpn = ((uintptr_t)buf >> 12) + 1;
	m = find_rec(n, HMTT_LOG_MAP, getpid(), vpn);
	m = m ? find_rec_after(n, HMTT_LOG_MAP, getpid(), vpn, m->seq) : NULL;
	if (!after || after == before || !m || m->b != after)
		fail("migrate", "page moved %llx -> %llx, MAP of the new frame %s",
		     (unsigned long long)before, (unsigned long long)after,
		     m ? "with a wrong frame" : "missing");
	else
		pass("migrate");
	munmap(buf, 4 * 4096);
	return 0;
}

/* Runs as "hmtt_child" (trace_comm): the exec, its faults and exit are logged. */
static int cmd_child(void)
{
	uint8_t *buf = mmap(NULL, 8 * 4096, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int pm = open("/proc/self/pagemap", O_RDONLY), i;

	for (i = 0; i < 8; i++)
		buf[i * 4096] = 1;
	for (i = 0; i < 8; i++)
		printf("CHILD %d %llx %llx\n", getpid(),
		       (unsigned long long)(((uintptr_t)buf >> 12) + i),
		       (unsigned long long)pagemap_pfn(pm, (uintptr_t)buf + i * 4096));
	fflush(stdout);
	return 0;
}

static int cmd_exec(void)
{
	int pipefd[2], status, i, bad = 0;
	unsigned long long vpn[8], pfn[8];
	const struct hmtt_log_record *ex = NULL, *ez = NULL;
	char line[128];
	FILE *in;
	pid_t pid;
	size_t n, k;

	drain_log();
	if (pipe(pipefd))
		return 1;
	pid = fork();
	if (pid == 0) {
		dup2(pipefd[1], 1);
		execl("/bin/hmtt_child", "hmtt_child", "child", (char *)NULL);
		_exit(127);
	}
	close(pipefd[1]);
	in = fdopen(pipefd[0], "r");
	for (i = 0; i < 8 && fgets(line, sizeof(line), in); i++) {
		int cpid;

		if (sscanf(line, "CHILD %d %llx %llx", &cpid, &vpn[i], &pfn[i]) != 3 || cpid != pid)
			break;
	}
	fclose(in);
	waitpid(pid, &status, 0);
	if (i != 8) {
		fail("exec", "child printed %d of 8 pages", i);
		return 1;
	}
	n = drain_log();
	for (k = 0; k < n; k++) {
		if (records[k].pid != (uint32_t)pid)
			continue;
		if (records[k].kind == HMTT_LOG_EXEC && !ex)
			ex = &records[k];
		if (records[k].kind == HMTT_LOG_EXIT)
			ez = &records[k];
	}
	if (!ex || strncmp(ex->name, "hmtt_child", 16))
		fail("exec-record", "no EXEC record named hmtt_child for pid %d", pid);
	else
		pass("exec-record");
	if (ex)
		check_exec_early(n, ex, "exec-early");
	if (!ez || strncmp(ez->name, "hmtt_child", 16) || (ex && ez->seq < ex->seq))
		fail("exit-record", "no EXIT record after the EXEC for pid %d", pid);
	else
		pass("exit-record");
	for (i = 0; i < 8; i++) {
		const struct hmtt_log_record *m = find_rec(n, HMTT_LOG_MAP, pid, vpn[i]);
		const struct hmtt_log_record *u = find_rec(n, HMTT_LOG_UNMAP, pid, vpn[i]);

		if (!m || m->b != pfn[i] || !u || u->b != pfn[i] || u->seq < m->seq)
			bad++;
	}
	if (bad)
		fail("exec-ptlog", "%d of 8 pages of the exec'd child without MAP and exit UNMAP", bad);
	else
		pass("exec-ptlog");
	return 0;
}

/*
 * With a 16-record ring (second load): fault 64 traced pages without
 * draining. Sequence numbers must stay gapless, the losses must be
 * reported by OVERRUN records, and their counts must add up to the
 * module's overrun counter.
 */
static int cmd_overrun(void)
{
	struct hmtt_info info;
	uint64_t reported = 0;
	size_t n, k, overrun_records = 0;
	int fd = open_cfg(), i;
	__s32 zero = 0;
	uint8_t *buf;

	/* Fault in drain_log's own code and buffer before tracing. */
	drain_log();
	memset(records, 0, 256 * sizeof(records[0]));
	unlink(LOG_FILE);
	if (ioctl(fd, HMTT_IOC_INFO, &info) || info.log_capacity != 16) {
		fail("overrun", "ring of %llu records, expected 16",
		     (unsigned long long)info.log_capacity);
		return 1;
	}
	ioctl(fd, HMTT_IOC_TRACE_PID, &zero);
	buf = mmap(NULL, 80 * 4096, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	for (i = 0; i < 64; i++)
		buf[i * 4096] = 1;
	/*
	 * Drain, then make one more record: it carries the losses still
	 * pending. Repeat, since draining may itself fault and lose records.
	 */
	for (i = 64; i < 80; i++) {
		drain_log();
		buf[i * 4096] = 1;
	}
	ioctl(fd, HMTT_IOC_UNTRACE_PID, &zero);
	drain_log();
	ioctl(fd, HMTT_IOC_INFO, &info);
	close(fd);
	/* Re-read everything drained in this test from the log file. */
	{
		FILE *f = fopen(LOG_FILE, "rb");

		fseek(f, 32, SEEK_SET);
		n = fread(records, sizeof(records[0]), MAX_RECORDS, f);
		fclose(f);
	}
	for (k = 0; k < n; k++) {
		if (records[k].kind == HMTT_LOG_OVERRUN) {
			overrun_records++;
			reported += records[k].a;
		}
	}
	printf("INFO overrun: %zu records drained, %zu OVERRUN records reporting %llu lost, module counted %llu\n",
	       n, overrun_records, (unsigned long long)reported,
	       (unsigned long long)info.log_overruns);
	check_seq(n);
	if (!overrun_records || !reported || reported != info.log_overruns ||
	    info.log_written != records[n - 1].seq + 1)
		fail("overrun", "reported %llu lost, module counted %llu",
		     (unsigned long long)reported, (unsigned long long)info.log_overruns);
	else
		pass("overrun");
	return 0;
}

#define SLEEPER_PAGES 16

/*
 * Traced, faults SLEEPER_PAGES pages, then sleeps until the guest powers
 * off, so its page tables are still in guest RAM when the host reads it:
 * the host checks each MAP record's PTE address holds that PFN.
 */
static int cmd_sleeper(void)
{
	int fd = open_cfg(), i;
	__s32 zero = 0;
	uint8_t *buf;

	if (ioctl(fd, HMTT_IOC_TRACE_PID, &zero)) {
		fail("sleeper", "TRACE_PID: %s", strerror(errno));
		return 1;
	}
	close(fd);	/* the module must stay unloadable */
	buf = mmap(NULL, SLEEPER_PAGES * 4096, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	madvise(buf, SLEEPER_PAGES * 4096, MADV_NOHUGEPAGE);
	mlock(buf, SLEEPER_PAGES * 4096);
	for (i = 0; i < SLEEPER_PAGES; i++)
		buf[i * 4096] = i + 1;
	printf("SLEEPER %d 0x%llx %d\n", getpid(),
	       (unsigned long long)((uintptr_t)buf >> 12), SLEEPER_PAGES);
	fflush(stdout);
	close(open("/tmp/sleeper.ready", O_CREAT | O_WRONLY, 0644));
	for (;;)
		pause();
}

#define STRESS_KIDS 2
#define STRESS_PAGES 2000

/*
 * Two traced children fault 2000 pages each on both CPUs while this
 * process drains /dev/hmtt_log with poll() and blocking reads: the
 * lock-free ring under concurrent writers and a concurrent reader.
 */
static int cmd_stress(void)
{
	size_t n = 0, k;
	int fd = open_cfg(), logfd, go[2], i, running = STRESS_KIDS;
	pid_t kids[STRESS_KIDS];
	uint8_t *buf;
	char start[STRESS_KIDS] = { 0 };
	int maps[STRESS_KIDS] = { 0 }, unmaps[STRESS_KIDS] = { 0 }, exits[STRESS_KIDS] = { 0 };
	int overruns = 0;

	drain_log();
	buf = mmap(NULL, (size_t)STRESS_KIDS * STRESS_PAGES * 4096, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	madvise(buf, (size_t)STRESS_KIDS * STRESS_PAGES * 4096, MADV_NOHUGEPAGE);
	if (pipe(go))
		return 1;
	for (i = 0; i < STRESS_KIDS; i++) {
		kids[i] = fork();
		if (kids[i] == 0) {
			uint8_t *mine = buf + (size_t)i * STRESS_PAGES * 4096;
			char c;
			int p;

			if (read(go[0], &c, 1) != 1)
				_exit(2);
			for (p = 0; p < STRESS_PAGES; p++)
				mine[(size_t)p * 4096] = 1;
			_exit(0);
		}
		if (ioctl(fd, HMTT_IOC_TRACE_PID, &kids[i]))
			fail("stress", "TRACE_PID %d: %s", kids[i], strerror(errno));
	}
	logfd = open("/dev/hmtt_log", O_RDONLY);
	if (logfd < 0 || write(go[1], start, STRESS_KIDS) != STRESS_KIDS) {
		fail("stress", "start: %s", strerror(errno));
		return 1;
	}
	for (;;) {
		struct pollfd pfd = { .fd = logfd, .events = POLLIN };
		int ready = poll(&pfd, 1, running ? 1000 : 300);

		if (ready > 0) {
			/* Blocking read: poll said a record is there. */
			ssize_t got = read(logfd, &records[n],
					   (MAX_RECORDS - n) * sizeof(records[0]));

			if (got <= 0) {
				fail("stress", "read after poll: %s", strerror(errno));
				break;
			}
			n += got / sizeof(records[0]);
			if (n == MAX_RECORDS)
				break;
		} else if (!running) {
			break;	/* children gone and the log stayed empty */
		}
		while (running && waitpid(-1, NULL, WNOHANG) > 0)
			running--;
	}
	close(logfd);
	{
		struct hmtt_info info;

		/* No hook hit may have been skipped (kretprobe instances). */
		if (ioctl(fd, HMTT_IOC_INFO, &info) || info.probe_misses)
			fail("stress", "%llu hook hits missed",
			     (unsigned long long)info.probe_misses);
	}
	close(fd);
	append_log(records, n);
	printf("INFO stress: %zu records\n", n);
	check_seq(n);
	for (k = 0; k < n; k++) {
		for (i = 0; i < STRESS_KIDS; i++) {
			uintptr_t lo = ((uintptr_t)buf >> 12) + (uintptr_t)i * STRESS_PAGES;

			if (records[k].pid != (uint32_t)kids[i])
				continue;
			if (records[k].a >= lo && records[k].a < lo + STRESS_PAGES) {
				maps[i] += records[k].kind == HMTT_LOG_MAP;
				unmaps[i] += records[k].kind == HMTT_LOG_UNMAP;
			}
			exits[i] += records[k].kind == HMTT_LOG_EXIT;
		}
		overruns += records[k].kind == HMTT_LOG_OVERRUN;
	}
	for (i = 0; i < STRESS_KIDS; i++)
		if (maps[i] != STRESS_PAGES || unmaps[i] != STRESS_PAGES || exits[i] != 1 ||
		    overruns)
			fail("stress", "child %d: %d MAP, %d UNMAP, %d EXIT of %d pages; %d OVERRUN",
			     i, maps[i], unmaps[i], exits[i], STRESS_PAGES, overruns);
	if (!failures)
		pass("stress");
	return 0;
}

/*
 * Third load: a non-linear mapping (line-index bits 15 and 16 swapped,
 * which keeps the window) moves the module's touches; bad mappings are
 * refused; nbits 0 restores the linear mapping.
 */
static int cmd_mapping(void)
{
	struct hmtt_mapping_req *req = calloc(1, sizeof(*req));
	struct hmtt_icode_req ic = { .event = 0x8050 };
	struct hmtt_cfg cfg;
	size_t n, k;
	int b, ret, checked = 0;
	__s32 zero = 0;
	uint8_t *page;

	ret = hmtt_open(&cfg, NULL);
	if (ret || !req) {
		fail("mapping", "hmtt_open: %s", strerror(-ret));
		return 1;
	}
	drain_log();
	req->first_line = EXPECT_BASE / 64;
	req->nbits = 29;
	for (b = 0; b < 29; b++)
		req->columns[b] = 64ull << (b == 15 ? 16 : b == 16 ? 15 : b);
	if (ioctl(cfg.fd, HMTT_IOC_SET_MAPPING, req)) {
		fail("mapping", "SET_MAPPING: %s", strerror(errno));
		return 1;
	}
	/* A load (no trace in memory): the module reports where it went. */
	if (ioctl(cfg.fd, HMTT_IOC_ICODE, &ic) || ic.phys != EXPECT_BASE + 0x10050ull * 64)
		fail("mapping-icode", "event 0x8050 touched 0x%llx, expected 0x%llx",
		     (unsigned long long)ic.phys, EXPECT_BASE + 0x10050ull * 64);
	else
		pass("mapping-icode");
	/* Log tags follow the mapping: seq s lands on line 0x8000 + s. */
	ioctl(cfg.fd, HMTT_IOC_TRACE_PID, &zero);
	page = mmap(NULL, 4 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	for (b = 0; b < 4; b++)
		page[b * 4096] = 1;
	ioctl(cfg.fd, HMTT_IOC_UNTRACE_PID, &zero);
	n = drain_log();
	for (k = 0; k < n; k++) {
		uint64_t s = records[k].seq;

		if (s == 0 || s >= 0x8000)
			continue;
		checked++;
		if (*(volatile uint64_t *)(cfg.base + (0x8000 + s) * 64) != s) {
			fail("mapping-tags", "seq %llu not at line 0x%llx",
			     (unsigned long long)s, (unsigned long long)(0x8000 + s));
			break;
		}
	}
	if (k == n && checked >= 3)
		pass("mapping-tags");
	else if (k == n)
		fail("mapping-tags", "only %d records to check", checked);

	/* Refusals: outside the space, two events on one line, bad sizes. */
	req->columns[22] = 64ull << 23;	/* first_line's bit: base moves out */
	expect_ioctl(cfg.fd, "mapping-outside", HMTT_IOC_SET_MAPPING, req, EINVAL);
	req->columns[22] = 64ull << 22;
	req->columns[3] = req->columns[2];
	expect_ioctl(cfg.fd, "mapping-not-bijective", HMTT_IOC_SET_MAPPING, req, EINVAL);
	req->columns[3] = 64ull << 3;
	req->nbits = 65;
	expect_ioctl(cfg.fd, "mapping-nbits", HMTT_IOC_SET_MAPPING, req, EINVAL);
	req->nbits = 0;
	if (ioctl(cfg.fd, HMTT_IOC_SET_MAPPING, req) ||
	    ioctl(cfg.fd, HMTT_IOC_ICODE, &ic) || ic.phys != EXPECT_BASE + 0x8050ull * 64)
		fail("mapping-linear-again", "phys 0x%llx", (unsigned long long)ic.phys);
	else
		pass("mapping-linear-again");
	hmtt_close(&cfg);
	free(req);
	return 0;
}

/* allow_cache_disable=1 (second load): CR0.CD on, work, off. */
static int cmd_cache_disable(void)
{
	int fd = open_cfg();
	__u32 on = 1, off = 0;
	volatile int sum = 0, i;

	if (ioctl(fd, HMTT_IOC_CACHE_DISABLE, &on)) {
		fail("cache-disable", "on: %s", strerror(errno));
		return 1;
	}
	for (i = 0; i < 1000; i++)
		sum += i;
	if (ioctl(fd, HMTT_IOC_CACHE_DISABLE, &off) || sum != 499500)
		fail("cache-disable", "off: %s", strerror(errno));
	else
		pass("cache-disable");
	close(fd);
	return 0;
}

static unsigned long long read_param(const char *name)
{
	char path[128], buf[64] = "";
	FILE *f;

	snprintf(path, sizeof(path), "/sys/module/hmtt_dmatest/parameters/%s", name);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = 0;
	fclose(f);
	return strtoull(buf, NULL, 0);
}

static void check_dma(size_t n, const char *name, unsigned long long addr,
		      uint64_t size, uint64_t dir)
{
	const struct hmtt_log_record *map = NULL, *unmap = NULL;
	size_t i;

	for (i = 0; i < n; i++) {
		const struct hmtt_log_record *r = &records[i];

		if (r->a != addr || r->b != size || r->c != dir ||
		    strncmp(r->name, "hmtt_dmatest", 16))
			continue;
		if (r->kind == HMTT_LOG_DMA_MAP && !map)
			map = r;
		if (r->kind == HMTT_LOG_DMA_UNMAP && map && !unmap)
			unmap = r;
	}
	if (!addr || !map || !unmap)
		fail(name, "addr 0x%llx size %llu dir %llu: map %s, unmap %s", addr,
		     (unsigned long long)size, (unsigned long long)dir,
		     map ? "logged" : "missing", unmap ? "logged" : "missing");
	else
		pass(name);
}

static int cmd_dma(void)
{
	size_t n = drain_log();

	printf("INFO dma: %zu records\n", n);
	check_dma(n, "dma-single", read_param("single_addr"), 4096, 1);
	check_dma(n, "dma-sg0", read_param("sg_addr0"), 2048, 2);
	check_dma(n, "dma-sg1", read_param("sg_addr1"), 1024, 2);
	check_dma(n, "dma-coherent", read_param("coherent_addr"), 8192, 0);
	return 0;
}

static int cmd_hexlog(const char *prefix)
{
	unsigned char buf[64];
	FILE *f;
	size_t got;

	drain_log();
	f = fopen(LOG_FILE, "rb");
	if (!f)
		return 1;
	while ((got = fread(buf, 1, sizeof(buf), f)) > 0) {
		size_t i;

		printf("%s ", prefix);
		for (i = 0; i < got; i++)
			printf("%02x", buf[i]);
		printf("\n");
	}
	fclose(f);
	return 0;
}

int main(int argc, char **argv)
{
	const char *cmd = argc > 1 ? argv[1] : "";

	if (!strcmp(cmd, "info"))
		cmd_info();
	else if (!strcmp(cmd, "mmap"))
		cmd_mmap();
	else if (!strcmp(cmd, "ioctl"))
		cmd_ioctl();
	else if (!strcmp(cmd, "perm") && argc > 2)
		cmd_perm(atoi(argv[2]));
	else if (!strcmp(cmd, "ptlog"))
		cmd_ptlog();
	else if (!strcmp(cmd, "exec"))
		cmd_exec();
	else if (!strcmp(cmd, "child"))
		return cmd_child();
	else if (!strcmp(cmd, "fork"))
		cmd_fork();
	else if (!strcmp(cmd, "vfork"))
		cmd_vfork();
	else if (!strcmp(cmd, "vchild"))
		return cmd_vchild();
	else if (!strcmp(cmd, "switch-cost"))
		cmd_switch_cost();
	else if (!strcmp(cmd, "pipeline"))
		cmd_pipeline();
	else if (!strcmp(cmd, "mremap"))
		cmd_mremap();
	else if (!strcmp(cmd, "thp"))
		cmd_thp();
	else if (!strcmp(cmd, "collapse"))
		cmd_collapse();
	else if (!strcmp(cmd, "filemap"))
		cmd_filemap();
	else if (!strcmp(cmd, "migrate"))
		cmd_migrate();
	else if (!strcmp(cmd, "dma"))
		cmd_dma();
	else if (!strcmp(cmd, "sleeper"))
		return cmd_sleeper();
	else if (!strcmp(cmd, "stress"))
		cmd_stress();
	else if (!strcmp(cmd, "mapping"))
		cmd_mapping();
	else if (!strcmp(cmd, "overrun"))
		cmd_overrun();
	else if (!strcmp(cmd, "cache-disable"))
		cmd_cache_disable();
	else if (!strcmp(cmd, "hexlog"))
		return cmd_hexlog(argc > 2 ? argv[2] : "HEX");
	else
		fail("usage", "unknown subcommand '%s'", cmd);
	return failures ? 1 : 0;
}
