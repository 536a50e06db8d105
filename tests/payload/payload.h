/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Helpers shared by the static payloads (header-only: each payload is one static binary).
 *
 * A payload runs a loop of system calls N times, checks every result (a wrong or changing
 * result exits with status 1, so a sandbox that answers wrongly is a failure, not a figure),
 * and prints one line:
 *
 *   NAME: iterations=N ns_per_iter=X
 *
 * X is measured with the payload's own CLOCK_MONOTONIC around the loop, or "unknown" when the
 * clock cannot be read. bench/run does not rely on it: it times the whole command from outside.
 */
#ifndef HUSK_TESTS_PAYLOAD_PAYLOAD_H
#define HUSK_TESTS_PAYLOAD_PAYLOAD_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Parses argv[i] as a non-negative count, or returns def when it is absent. Exits 2 on junk. */
static inline long payload_count(int argc, char **argv, int i, long def)
{
	char *end;
	long n;

	if (argc <= i)
		return def;
	errno = 0;
	n = strtol(argv[i], &end, 10);
	if (errno || end == argv[i] || *end || n < 0) {
		fprintf(stderr, "%s: bad count '%s' (want a non-negative integer)\n", argv[0],
			argv[i]);
		exit(2);
	}
	return n;
}

/* Returns CLOCK_MONOTONIC in nanoseconds, or -1 when the clock cannot be read. */
static inline long long payload_now_ns(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_MONOTONIC, &ts))
		return -1;
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Prints the result line for n iterations that ran between start and end (payload_now_ns). */
static inline void payload_report(const char *name, long n, long long start, long long end)
{
	if (start < 0 || end < start || n == 0)
		printf("%s: iterations=%ld ns_per_iter=unknown\n", name, n);
	else
		printf("%s: iterations=%ld ns_per_iter=%.1f\n", name, n, (double)(end - start) / n);
}

/* Reports a failed check on stderr (with strerror(err) unless err is 0) and exits with status 1. */
static inline void __attribute__((noreturn))
payload_fail(const char *name, long i, const char *what, int err)
{
	if (err)
		fprintf(stderr, "%s: iteration %ld: %s: %s\n", name, i, what, strerror(err));
	else
		fprintf(stderr, "%s: iteration %ld: %s\n", name, i, what);
	exit(1);
}

#endif
