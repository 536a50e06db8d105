/* SPDX-License-Identifier: Apache-2.0 */
/*
 * clock_loop [N]: N clock_gettime(CLOCK_MONOTONIC) calls through libc (default 1,000,000), so
 * the time per call is what a program pays for the clock: a few nanoseconds through a vDSO, a
 * system call round trip without one. Every reading must be at or after the one before it.
 */
#include <errno.h>
#include <time.h>

#include "payload.h"

int main(int argc, char **argv)
{
	long n = payload_count(argc, argv, 1, 1000000);
	struct timespec prev, now;
	long long start, end;

	/* clock_gettime(3), not syscall(2): libc takes the vDSO when the kernel provides one. */
	if (clock_gettime(CLOCK_MONOTONIC, &prev))
		payload_fail("clock_loop", 0, "clock_gettime failed", errno);
	start = payload_now_ns();
	for (long i = 0; i < n; i++) {
		if (clock_gettime(CLOCK_MONOTONIC, &now))
			payload_fail("clock_loop", i, "clock_gettime failed", errno);
		if (now.tv_nsec < 0 || now.tv_nsec >= 1000000000L || now.tv_sec < prev.tv_sec ||
		    (now.tv_sec == prev.tv_sec && now.tv_nsec < prev.tv_nsec))
			payload_fail("clock_loop", i, "CLOCK_MONOTONIC went backwards", 0);
		prev = now;
	}
	end = payload_now_ns();
	payload_report("clock_loop", n, start, end);
	return 0;
}
