// SPDX-License-Identifier: GPL-2.0
/*
 * hmtt_wl_threads - pthreads, one of the workloads of
 * tests/qemu_workloads.rs.
 *
 * THREADS threads (besides the main one) each fill a private buffer of
 * their own (malloc'd in the thread, so in its glibc arena), then, in
 * PHASES phases separated by a barrier, write their slice of a shared
 * table from their buffer and read the slices the others wrote in the
 * phase before, folding them into their buffer. The main thread checks
 * the table at the end. The threads are one process: one pid.
 *
 * Prints "HMTT-WL-PID threads main <pid>" and "HMTT-WL threads bad=<n>";
 * exits non-zero if a check failed. Built static (gcc -static -pthread)
 * by kmod-hmtt/scripts/qemu-kit.sh.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define THREADS 4
#define PHASES 3
#define OWN_WORDS (16 * 1024)
#define SLICE_WORDS (4 * 1024)

static unsigned int table[THREADS * SLICE_WORDS];
static pthread_barrier_t barrier;
static unsigned long folded[THREADS];

static unsigned int value(int thread, int phase, size_t i)
{
	return (unsigned int)(thread * 1000003 + phase * 7919) ^ (unsigned int)i;
}

static void *worker(void *arg)
{
	int me = (int)(long)arg;
	unsigned int *own = malloc(OWN_WORDS * sizeof(*own));
	unsigned long fold = 0;
	int phase, t;
	size_t i;

	if (!own)
		abort();
	for (i = 0; i < OWN_WORDS; i++)
		own[i] = (unsigned int)(i * 2654435761u) + (unsigned int)me;
	for (phase = 0; phase < PHASES; phase++) {
		unsigned int *slice = table + (size_t)me * SLICE_WORDS;

		for (i = 0; i < SLICE_WORDS; i++)
			slice[i] = value(me, phase, i);
		pthread_barrier_wait(&barrier);
		for (t = 0; t < THREADS; t++) {
			const unsigned int *theirs = table + (size_t)t * SLICE_WORDS;

			if (t == me)
				continue;
			for (i = 0; i < SLICE_WORDS; i++)
				own[(i * 3 + (size_t)phase) % OWN_WORDS] += theirs[i];
		}
		pthread_barrier_wait(&barrier);
	}
	for (i = 0; i < OWN_WORDS; i++)
		fold += own[i];
	folded[me] = fold;
	free(own);
	return NULL;
}

int main(void)
{
	pthread_t threads[THREADS];
	unsigned long bad = 0, fold = 0;
	int t;
	size_t i;

	printf("HMTT-WL-PID threads main %d\n", (int)getpid());
	fflush(stdout);
	pthread_barrier_init(&barrier, NULL, THREADS);
	for (t = 0; t < THREADS; t++)
		if (pthread_create(&threads[t], NULL, worker, (void *)(long)t)) {
			fprintf(stderr, "hmtt_wl_threads: pthread_create failed\n");
			return 1;
		}
	for (t = 0; t < THREADS; t++)
		pthread_join(threads[t], NULL);
	for (t = 0; t < THREADS; t++) {
		for (i = 0; i < SLICE_WORDS; i++)
			bad += table[(size_t)t * SLICE_WORDS + i] != value(t, PHASES - 1, i);
		fold ^= folded[t];
	}
	printf("HMTT-WL threads bad=%lu fold=%lx\n", bad, fold);
	return bad != 0;
}
