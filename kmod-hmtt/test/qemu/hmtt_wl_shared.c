// SPDX-License-Identifier: GPL-2.0
/*
 * hmtt_wl_shared - fork with a shared region, one of the workloads of
 * tests/qemu_workloads.rs.
 *
 * A parent and two children share a 256 KiB MAP_SHARED anonymous region:
 * an input area the parent writes and two output areas, one per child.
 * In each of ROUNDS rounds the parent writes new input, wakes both
 * children through pipes, and while they run it reads its own earlier
 * results; each child reads the whole input and writes a transform of it
 * into its own output area, then reads the other child's area from the
 * previous round; the parent then reads and checks both outputs. The
 * region's pages are first touched by writes of the parent (input), of
 * the children (outputs) and by reads, so every kind of shared fault
 * happens.
 *
 * Each process prints "HMTT-WL-PID shared <role> <pid>"; the parent ends
 * with "HMTT-WL shared bad=<n>" and exits non-zero if a check failed.
 * Built static (gcc -static) by kmod-hmtt/scripts/qemu-kit.sh.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define REGION_BYTES (256 * 1024)
#define INPUT_WORDS (REGION_BYTES / 2 / sizeof(unsigned int))
#define OUTPUT_WORDS (INPUT_WORDS / 2)
#define ROUNDS 3

static unsigned int transform(unsigned int x, int child, int round)
{
	return (x ^ (0x9e3779b9u * (unsigned int)(child + 1))) + (unsigned int)round;
}

static void child_loop(unsigned int *input, unsigned int **outputs, int child,
		       int wake, int done)
{
	unsigned int *mine = outputs[child];
	unsigned int *other = outputs[1 - child];
	unsigned long seen = 0;
	int round;
	char c;

	printf("HMTT-WL-PID shared child%d %d\n", child, (int)getpid());
	fflush(stdout);
	for (round = 0; round < ROUNDS; round++) {
		size_t i;

		if (read(wake, &c, 1) != 1)
			_exit(2);
		/* Every other input word, both halves of the input. */
		for (i = 0; i < OUTPUT_WORDS; i++)
			mine[i] = transform(input[2 * i + (size_t)child], child, round);
		for (i = 0; i < OUTPUT_WORDS; i++)
			seen += other[i] & 1;
		if (write(done, &c, 1) != 1)
			_exit(2);
	}
	printf("HMTT-WL shared child%d seen=%lu\n", child, seen);
	fflush(stdout);
	_exit(0);
}

int main(void)
{
	unsigned char *region = mmap(NULL, REGION_BYTES, PROT_READ | PROT_WRITE,
				     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	unsigned int *input = (unsigned int *)region;
	unsigned int *outputs[2];
	int wake[2][2], done[2][2];
	unsigned long bad = 0, sum = 0;
	unsigned int x = 2463534242u;
	pid_t children[2];
	int child, round, status;
	char c = 'r';

	if (region == MAP_FAILED) {
		perror("hmtt_wl_shared: mmap");
		return 1;
	}
	outputs[0] = input + INPUT_WORDS;
	outputs[1] = outputs[0] + OUTPUT_WORDS;
	printf("HMTT-WL-PID shared parent %d\n", (int)getpid());
	fflush(stdout);
	for (child = 0; child < 2; child++) {
		if (pipe(wake[child]) || pipe(done[child])) {
			perror("hmtt_wl_shared: pipe");
			return 1;
		}
		children[child] = fork();
		if (children[child] < 0) {
			perror("hmtt_wl_shared: fork");
			return 1;
		}
		if (children[child] == 0)
			child_loop(input, outputs, child, wake[child][0], done[child][1]);
	}
	for (round = 0; round < ROUNDS; round++) {
		size_t i;

		for (i = 0; i < INPUT_WORDS; i++) {
			x ^= x << 13;
			x ^= x >> 17;
			x ^= x << 5;
			input[i] = x;
		}
		for (child = 0; child < 2; child++)
			if (write(wake[child][1], &c, 1) != 1)
				return 1;
		/* While the children work: the outputs of the last round. */
		for (i = 0; i < 2 * OUTPUT_WORDS; i++)
			sum += outputs[0][i] >> 7;
		for (child = 0; child < 2; child++)
			if (read(done[child][0], &c, 1) != 1)
				return 1;
		for (child = 0; child < 2; child++)
			for (i = 0; i < OUTPUT_WORDS; i++)
				bad += outputs[child][i] !=
				       transform(input[2 * i + (size_t)child], child, round);
	}
	for (child = 0; child < 2; child++) {
		if (waitpid(children[child], &status, 0) != children[child] ||
		    !WIFEXITED(status) || WEXITSTATUS(status) != 0)
			bad++;
	}
	printf("HMTT-WL shared bad=%lu sum=%lu\n", bad, sum);
	munmap(region, REGION_BYTES);
	return bad != 0;
}
