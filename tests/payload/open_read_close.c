/* SPDX-License-Identifier: Apache-2.0 */
/*
 * open_read_close [K] [PATH]: K times open(2) PATH read-only, read(2) up to 4 KiB, close(2)
 * (default K = 100,000, PATH = /etc/hostname). Every read must return the same non-zero count.
 */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "payload.h"

int main(int argc, char **argv)
{
	long n = payload_count(argc, argv, 1, 100000);
	const char *path = argc > 2 ? argv[2] : "/etc/hostname";
	ssize_t want = -1;
	long long start, end;
	char buf[4096];

	start = payload_now_ns();
	for (long i = 0; i < n; i++) {
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		ssize_t got;

		if (fd < 0)
			payload_fail("open_read_close", i, "open failed", errno);
		got = read(fd, buf, sizeof(buf));
		if (got <= 0 || (want >= 0 && got != want))
			payload_fail("open_read_close", i, "read returned an error or a new size",
				     got < 0 ? errno : 0);
		want = got;
		if (close(fd))
			payload_fail("open_read_close", i, "close failed", errno);
	}
	end = payload_now_ns();
	payload_report("open_read_close", n, start, end);
	return 0;
}
