// SPDX-License-Identifier: GPL-2.0
/*
 * hmtt_wl_file - file-backed mmap, one of the workloads of
 * tests/qemu_workloads.rs.
 *
 * In DIR (the guest's tmpfs /tmp by default):
 *  - file A, sized by ftruncate (holes), is mapped MAP_SHARED, written
 *    page by page and read back; after munmap it is mapped again
 *    MAP_PRIVATE read-only and read: its page-cache frames come back at a
 *    new address;
 *  - file B, filled by write(2), is mapped MAP_PRIVATE, read, then every
 *    other page written (copy-on-write from the page cache) and all of it
 *    read again; the file must keep its written contents;
 *  - both are mapped at once, never the same file twice at a time (a frame
 *    at two addresses of one process is ambiguous to any physical trace).
 *
 * Prints "HMTT-WL-PID file main <pid>" and "HMTT-WL file bad=<n>"; exits
 * non-zero if a check failed. Built static (gcc -static) by
 * kmod-hmtt/scripts/qemu-kit.sh.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define A_PAGES 32
#define B_PAGES 32
#define PAGE 4096
#define PAGE_WORDS (PAGE / sizeof(unsigned int))

static unsigned int a_value(size_t w)
{
	return (unsigned int)(w * 2246822519u) ^ 0xa5a5a5a5u;
}

static unsigned int b_value(size_t w)
{
	return (unsigned int)(w * 3266489917u) + 17u;
}

static int open_file(const char *dir, const char *name, char *path, size_t len)
{
	snprintf(path, len, "%s/%s", dir, name);
	return open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
}

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : "/tmp";
	static unsigned int buf[B_PAGES * PAGE_WORDS];
	char a_path[256], b_path[256];
	unsigned long bad = 0, sum = 0;
	unsigned int *a, *b;
	int fa, fb;
	size_t w;

	printf("HMTT-WL-PID file main %d\n", (int)getpid());
	fflush(stdout);
	fa = open_file(dir, "hmtt_wl_a", a_path, sizeof(a_path));
	fb = open_file(dir, "hmtt_wl_b", b_path, sizeof(b_path));
	if (fa < 0 || fb < 0 || ftruncate(fa, A_PAGES * PAGE)) {
		perror("hmtt_wl_file: open");
		return 1;
	}
	for (w = 0; w < B_PAGES * PAGE_WORDS; w++)
		buf[w] = b_value(w);
	if (write(fb, buf, sizeof(buf)) != (ssize_t)sizeof(buf)) {
		perror("hmtt_wl_file: write");
		return 1;
	}
	a = mmap(NULL, A_PAGES * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fa, 0);
	b = mmap(NULL, B_PAGES * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE, fb, 0);
	if (a == MAP_FAILED || b == MAP_FAILED) {
		perror("hmtt_wl_file: mmap");
		return 1;
	}
	for (w = 0; w < A_PAGES * PAGE_WORDS; w++)
		a[w] = a_value(w);
	for (w = 0; w < B_PAGES * PAGE_WORDS; w++)
		bad += b[w] != b_value(w);
	for (w = 0; w < B_PAGES * PAGE_WORDS; w++)
		if ((w / PAGE_WORDS) % 2 == 0)
			b[w] = ~b[w];
	for (w = 0; w < A_PAGES * PAGE_WORDS; w++)
		bad += a[w] != a_value(w);
	for (w = 0; w < B_PAGES * PAGE_WORDS; w++)
		bad += b[w] != ((w / PAGE_WORDS) % 2 == 0 ? ~b_value(w) : b_value(w));
	munmap(a, A_PAGES * PAGE);
	munmap(b, B_PAGES * PAGE);

	a = mmap(NULL, A_PAGES * PAGE, PROT_READ, MAP_PRIVATE, fa, 0);
	if (a == MAP_FAILED) {
		perror("hmtt_wl_file: mmap");
		return 1;
	}
	for (w = 0; w < A_PAGES * PAGE_WORDS; w++) {
		bad += a[w] != a_value(w);
		sum += a[w] >> 3;
	}
	munmap(a, A_PAGES * PAGE);
	if (pread(fb, buf, sizeof(buf), 0) != (ssize_t)sizeof(buf)) {
		perror("hmtt_wl_file: pread");
		return 1;
	}
	for (w = 0; w < B_PAGES * PAGE_WORDS; w++)
		bad += buf[w] != b_value(w);
	close(fa);
	close(fb);
	unlink(a_path);
	unlink(b_path);
	printf("HMTT-WL file bad=%lu sum=%lu\n", bad, sum);
	return bad != 0;
}
