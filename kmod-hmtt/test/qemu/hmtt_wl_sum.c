// SPDX-License-Identifier: GPL-2.0
/*
 * hmtt_wl_sum - the second program of the pipeline workload of
 * tests/qemu_workloads.rs (hmtt_workloads runs "hmtt_wl_gen N |
 * hmtt_wl_sum"): reads one number a line from stdin into a growing
 * array, counts the gaps between consecutive numbers in a histogram,
 * and checks the numbers increase.
 *
 * Prints "HMTT-WL-PID pipe sum <pid>" and "HMTT-WL pipe numbers=<n>
 * bad=<n>"; exits non-zero if a check failed or nothing came. Built
 * static (gcc -static) by kmod-hmtt/scripts/qemu-kit.sh.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define GAPS 256

int main(void)
{
	static unsigned long histogram[GAPS];
	size_t count = 0, capacity = 1024, i;
	unsigned long bad = 0, widest = 0;
	long *numbers = malloc(capacity * sizeof(*numbers));
	long value;

	printf("HMTT-WL-PID pipe sum %d\n", (int)getpid());
	fflush(stdout);
	if (!numbers)
		return 1;
	while (scanf("%ld", &value) == 1) {
		if (count == capacity) {
			capacity *= 2;
			numbers = realloc(numbers, capacity * sizeof(*numbers));
			if (!numbers)
				return 1;
		}
		numbers[count++] = value;
	}
	for (i = 1; i < count; i++) {
		long gap = numbers[i] - numbers[i - 1];

		bad += gap <= 0;
		if (gap > 0 && (unsigned long)gap > widest)
			widest = (unsigned long)gap;
		histogram[gap > 0 && gap < GAPS ? gap : 0]++;
	}
	printf("HMTT-WL pipe numbers=%zu widest=%lu twins=%lu bad=%lu\n", count, widest,
	       histogram[2], bad);
	free(numbers);
	return bad != 0 || count == 0;
}
