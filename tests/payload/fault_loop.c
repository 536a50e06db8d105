/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fault_loop [N]: N page faults on fresh private anonymous memory (default 100,000): maps
 * chunks of 256 pages (1 MiB with 4 KiB pages), writes one byte of each page (the first touch,
 * a write, so one fault: a read first would map the zero page and fault again on the write),
 * checks that byte and that the page's next byte is zero, and unmaps the chunk. An iteration is
 * one page fault plus 1/256 of an mmap and a munmap. The time per iteration is what a page fault costs the
 * program: a kernel fault natively, a round trip to the sentry in a sandbox that handles guest
 * faults itself.
 */
#include <errno.h>
#include <sys/mman.h>
#include <unistd.h>

#include "payload.h"

#define CHUNK_PAGES 256

int main(int argc, char **argv)
{
	long n = payload_count(argc, argv, 1, 100000);
	long page = sysconf(_SC_PAGESIZE);
	long long start, end;
	long done = 0;

	if (page <= 0)
		payload_fail("fault_loop", 0, "sysconf(_SC_PAGESIZE) failed", errno);
	start = payload_now_ns();
	while (done < n) {
		long pages = n - done < CHUNK_PAGES ? n - done : CHUNK_PAGES;
		size_t len = (size_t)pages * (size_t)page;
		volatile unsigned char *p =
			mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p == MAP_FAILED)
			payload_fail("fault_loop", done, "mmap failed", errno);
		for (long i = 0; i < pages; i++) {
			volatile unsigned char *b = p + (size_t)i * (size_t)page + (size_t)(i % 64);
			unsigned char v = (unsigned char)(done + i) | 1;

			*b = v;
			if (*b != v)
				payload_fail("fault_loop", done + i, "a page lost its byte", 0);
			if (b[1] != 0)
				payload_fail("fault_loop", done + i, "a fresh page is not zero", 0);
		}
		if (munmap((void *)p, len))
			payload_fail("fault_loop", done, "munmap failed", errno);
		done += pages;
	}
	end = payload_now_ns();
	payload_report("fault_loop", n, start, end);
	return 0;
}
