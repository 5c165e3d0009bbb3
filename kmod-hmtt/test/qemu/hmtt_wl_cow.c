// SPDX-License-Identifier: GPL-2.0
/*
 * hmtt_wl_cow - copy-on-write after fork, one of the workloads of
 * tests/qemu_workloads.rs.
 *
 * The parent fills PAGES pages of a private anonymous mapping, then forks
 * two children. Page p is written after the fork by child c when
 * p % 4 == c, and by the parent when p % 4 == 2; the pages with
 * p % 4 == 3 are only read, so their frames stay shared by all three
 * processes to the end. Every process reads every page before and after
 * its writes and checks it sees its own writes and the parent's original
 * values elsewhere. The children are forked one after the other and run
 * together with the parent, woken through a pipe.
 *
 * Each process prints "HMTT-WL-PID cow <role> <pid>"; the parent ends with
 * "HMTT-WL cow bad=<n>" and exits non-zero if a check failed. Built static
 * (gcc -static) by kmod-hmtt/scripts/qemu-kit.sh.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define PAGES 64
#define PAGE_WORDS (4096 / sizeof(unsigned int))
#define PASSES 2

static unsigned int original(size_t page, size_t i)
{
	return (unsigned int)(page * 40503u) ^ (unsigned int)(i * 2654435761u);
}

static unsigned int written(int who, size_t page, size_t i, int pass)
{
	return original(page, i) + 0x1000u * (unsigned int)(who + 1) + (unsigned int)pass;
}

/* who: 0 and 1 the children, 2 the parent. */
static unsigned long work(unsigned int *mem, int who)
{
	unsigned long bad = 0, sum = 0;
	int pass;

	for (pass = 0; pass < PASSES; pass++) {
		size_t p, i;

		for (p = 0; p < PAGES; p++)
			for (i = 0; i < PAGE_WORDS; i += 4)
				sum += mem[p * PAGE_WORDS + i];
		for (p = (size_t)who; p < PAGES; p += 4)
			for (i = 0; i < PAGE_WORDS; i++)
				mem[p * PAGE_WORDS + i] = written(who, p, i, pass);
		for (p = 0; p < PAGES; p++)
			for (i = 0; i < PAGE_WORDS; i++) {
				unsigned int want = p % 4 == (size_t)who ?
					written(who, p, i, pass) : original(p, i);

				bad += mem[p * PAGE_WORDS + i] != want;
			}
	}
	return bad + (sum == 1);
}

int main(void)
{
	unsigned int *mem = mmap(NULL, PAGES * 4096, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	unsigned long bad = 0;
	pid_t children[2];
	int go[2], child, status;
	size_t p, i;
	char c = 'g';

	if (mem == MAP_FAILED || pipe(go)) {
		perror("hmtt_wl_cow");
		return 1;
	}
	printf("HMTT-WL-PID cow parent %d\n", (int)getpid());
	fflush(stdout);
	for (p = 0; p < PAGES; p++)
		for (i = 0; i < PAGE_WORDS; i++)
			mem[p * PAGE_WORDS + i] = original(p, i);
	for (child = 0; child < 2; child++) {
		children[child] = fork();
		if (children[child] < 0) {
			perror("hmtt_wl_cow: fork");
			return 1;
		}
		if (children[child] == 0) {
			printf("HMTT-WL-PID cow child%d %d\n", child, (int)getpid());
			fflush(stdout);
			if (read(go[0], &c, 1) != 1)
				_exit(2);
			_exit(work(mem, child) ? 1 : 0);
		}
	}
	if (write(go[1], "gg", 2) != 2)
		return 1;
	bad += work(mem, 2);
	for (child = 0; child < 2; child++)
		if (waitpid(children[child], &status, 0) != children[child] ||
		    !WIFEXITED(status) || WEXITSTATUS(status) != 0)
			bad++;
	printf("HMTT-WL cow bad=%lu\n", bad);
	return bad != 0;
}
