// SPDX-License-Identifier: GPL-2.0
/*
 * hmtt_sort - the I-code example: sorts an array of N ints (default 4096)
 * and brackets its work with named events through hmtt_user.h:
 *
 *   0x40 sort_begin, 0x41 sort_end       around the sort itself
 *   0x42 prog_start, 0x43 prog_end       around everything the program
 *                                        does after its page-table snapshot
 *
 * It prints "HMTT-PID <pid>" (a cross-check of the pid hmtt qemu learns
 * from hmtt_qemu_pid.ko), logs its present mappings (the snapshot ioctl,
 * whose count the test checks), then allocates, fills, sorts and checks.
 * Built static (gcc -static); the event names are in hmtt_sort.events.toml.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hmtt_user.h"

#define EV_SORT_BEGIN 0x40
#define EV_SORT_END 0x41
#define EV_PROG_START 0x42
#define EV_PROG_END 0x43

static void sort(int *a, long lo, long hi)
{
	while (lo < hi) {
		int pivot = a[lo + (hi - lo) / 2];
		long i = lo, j = hi;

		while (i <= j) {
			while (a[i] < pivot)
				i++;
			while (a[j] > pivot)
				j--;
			if (i <= j) {
				int t = a[i];

				a[i++] = a[j];
				a[j--] = t;
			}
		}
		if (j - lo < hi - i) {
			sort(a, lo, j);
			lo = i;
		} else {
			sort(a, i, hi);
			hi = j;
		}
	}
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 4096;
	struct hmtt_snapshot_req snap = { 0 };
	struct hmtt_cfg cfg;
	unsigned int x = 12345;
	long i, bad = 0;
	int *a;
	int err;

	err = hmtt_open(&cfg, NULL);
	if (err) {
		fprintf(stderr, "hmtt_sort: /dev/hmtt: %s\n", strerror(-err));
		return 1;
	}
	printf("HMTT-PID %d\n", (int)getpid());
	fflush(stdout);
	if (ioctl(cfg.fd, HMTT_IOC_SNAPSHOT, &snap) < 0) {
		perror("hmtt_sort: snapshot");
		return 1;
	}
	hmtt_icode(&cfg, EV_PROG_START);
	a = malloc(n * sizeof(*a));
	if (!a)
		return 1;
	for (i = 0; i < n; i++) {
		x = x * 1103515245u + 12345u;
		a[i] = (int)(x >> 8);
	}
	hmtt_icode(&cfg, EV_SORT_BEGIN);
	sort(a, 0, n - 1);
	hmtt_icode(&cfg, EV_SORT_END);
	for (i = 1; i < n; i++)
		bad += a[i - 1] > a[i];
	hmtt_icode(&cfg, EV_PROG_END);
	printf("HMTT-SORT n=%ld unsorted=%ld snapshot=%llu\n", n, bad,
	       (unsigned long long)snap.logged);
	hmtt_close(&cfg);
	return bad != 0;
}
