/* SPDX-License-Identifier: Apache-2.0 */
/*
 * getppid_loop [N]: N getppid(2) calls (default 1,000,000), the cheapest system call there is,
 * so the time per call is the cost of the round trip to the kernel (or to the sentry).
 * Every call must return the same non-negative pid. The calls go through libc's getppid(), as a
 * program's do: glibc caches nothing for it, and its wrapper is the `mov $nr, %eax; syscall`
 * site that husk's syscall patching rewrites (syscall(2) would be `mov %rdi, %rax; ...`, never
 * patched: the bench's seccomp-nopatch variant shows the trapped cost).
 */
#include <errno.h>
#include <unistd.h>

#include "payload.h"

int main(int argc, char **argv)
{
	long n = payload_count(argc, argv, 1, 1000000);
	long first = getppid();
	long long start, end;

	if (first < 0)
		payload_fail("getppid_loop", 0, "getppid failed", errno);
	start = payload_now_ns();
	for (long i = 0; i < n; i++) {
		if (getppid() != first)
			payload_fail("getppid_loop", i, "getppid returned a different value", 0);
	}
	end = payload_now_ns();
	payload_report("getppid_loop", n, start, end);
	return 0;
}
