// SPDX-License-Identifier: GPL-2.0
/*
 * hmtt_qemu_guest - the guest side of `hmtt qemu`, run by its /init:
 *
 *   hmtt_qemu_guest icode N      store event N to the configuration space
 *                                (0 begins and 1 ends the plugin's trace)
 *   hmtt_qemu_guest drain TTY    copy every record left in /dev/hmtt_log to
 *                                the raw serial port TTY, then report them
 *   hmtt_qemu_guest now          print CLOCK_MONOTONIC in seconds
 *
 * Built static (gcc -static) by kmod-hmtt/scripts/qemu-kit.sh.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>

#include "hmtt_user.h"

static int icode(const char *arg)
{
	struct hmtt_cfg cfg;
	uint32_t event = (uint32_t)strtoul(arg, NULL, 0);
	int err = hmtt_open(&cfg, NULL);

	if (err) {
		fprintf(stderr, "hmtt_qemu_guest: /dev/hmtt: %s\n", strerror(-err));
		return 1;
	}
	/* Begin and end tracing are inner commands hmtt_icode refuses no more
	 * than user events; the kernel log range is the only one it refuses. */
	err = hmtt_icode(&cfg, event);
	hmtt_close(&cfg);
	if (err) {
		fprintf(stderr, "hmtt_qemu_guest: event %u: %s\n", event, strerror(-err));
		return 1;
	}
	return 0;
}

static int drain(const char *tty)
{
	char buf[64 * 64];
	unsigned long records = 0;
	struct termios t;
	int in = open("/dev/hmtt_log", O_RDONLY | O_NONBLOCK);
	int out = open(tty, O_WRONLY | O_NOCTTY);

	if (in < 0 || out < 0) {
		fprintf(stderr, "hmtt_qemu_guest: open: %s\n", strerror(errno));
		return 1;
	}
	if (tcgetattr(out, &t) == 0) {
		cfmakeraw(&t);
		cfsetospeed(&t, B115200);
		tcsetattr(out, TCSANOW, &t);
	}
	for (;;) {
		ssize_t n = read(in, buf, sizeof(buf));
		ssize_t done = 0;

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		while (done < n) {
			ssize_t w = write(out, buf + done, n - done);

			if (w < 0 && errno == EINTR)
				continue;
			if (w < 0) {
				fprintf(stderr, "hmtt_qemu_guest: write %s: %s\n", tty, strerror(errno));
				return 1;
			}
			done += w;
		}
		records += n / 64;
	}
	tcdrain(out);
	printf("HMTT-LOG-DRAINED %lu\n", records);
	return 0;
}

int main(int argc, char **argv)
{
	struct timespec ts;

	if (argc == 3 && strcmp(argv[1], "icode") == 0)
		return icode(argv[2]);
	if (argc == 3 && strcmp(argv[1], "drain") == 0)
		return drain(argv[2]);
	if (argc == 2 && strcmp(argv[1], "now") == 0) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		printf("%ld.%09ld\n", (long)ts.tv_sec, ts.tv_nsec);
		return 0;
	}
	fprintf(stderr, "usage: hmtt_qemu_guest icode N | drain TTY | now\n");
	return 2;
}
