/* SPDX-License-Identifier: Apache-2.0 */
/*
 * stat_loop [K] [PATH]: K stat(2) calls on PATH (default K = 100,000, PATH = /etc/hostname).
 * Every call must succeed and report the same size and inode.
 */
#include <errno.h>
#include <sys/stat.h>

#include "payload.h"

int main(int argc, char **argv)
{
	long n = payload_count(argc, argv, 1, 100000);
	const char *path = argc > 2 ? argv[2] : "/etc/hostname";
	struct stat first, st;
	long long start, end;

	if (stat(path, &first))
		payload_fail("stat_loop", 0, "stat failed", errno);
	start = payload_now_ns();
	for (long i = 0; i < n; i++) {
		if (stat(path, &st))
			payload_fail("stat_loop", i, "stat failed", errno);
		if (st.st_size != first.st_size || st.st_ino != first.st_ino)
			payload_fail("stat_loop", i, "stat returned a different size or inode", 0);
	}
	end = payload_now_ns();
	payload_report("stat_loop", n, start, end);
	return 0;
}
