// SPDX-License-Identifier: GPL-2.0
/*
 * hmtt_wl_gen - the first program of the pipeline workload of
 * tests/qemu_workloads.rs (hmtt_workloads runs "hmtt_wl_gen N |
 * hmtt_wl_sum"): sieves the primes below N (a byte per number) and writes
 * them to stdout, one a line.
 *
 * Prints "HMTT-WL-PID pipe gen <pid>" to stderr (stdout is the pipe).
 * Built static (gcc -static) by kmod-hmtt/scripts/qemu-kit.sh.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 100000;
	unsigned char *composite;
	long i, j, primes = 0;

	fprintf(stderr, "HMTT-WL-PID pipe gen %d\n", (int)getpid());
	if (n < 2)
		return 1;
	composite = calloc((size_t)n, 1);
	if (!composite)
		return 1;
	for (i = 2; i * i < n; i++)
		if (!composite[i])
			for (j = i * i; j < n; j += i)
				composite[j] = 1;
	for (i = 2; i < n; i++)
		if (!composite[i]) {
			printf("%ld\n", i);
			primes++;
		}
	fprintf(stderr, "HMTT-WL pipe gen primes=%ld\n", primes);
	free(composite);
	return 0;
}
