/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The little harness shared by the conformance programs: each check prints one line when it
 * fails, and finish() prints `N passed, M failed` and gives the exit status (0 only if M == 0).
 *
 * Programs call the kernel through raw syscall() where glibc would hide a behaviour, so the
 * errno checked is the kernel's. They must pass natively and in husk alike: see README.md for
 * what they may assume about the environment.
 */
#ifndef HUSK_TESTS_SYSCALLS_CHECK_H
#define HUSK_TESTS_SYSCALLS_CHECK_H

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <time.h>

static int checks_passed, checks_failed;

static void __attribute__((format(printf, 4, 5)))
check_fail(const char *file, int line, const char *what, const char *fmt, ...)
{
	va_list ap;

	printf("FAIL %s:%d: %s: ", file, line, what);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	checks_failed++;
}

/* CHECK(cond, fmt, ...): passes when cond is true; the message says what was seen. */
#define CHECK(cond, ...)                                                             \
	do {                                                                         \
		if (cond)                                                            \
			checks_passed++;                                             \
		else                                                                 \
			check_fail(__FILE__, __LINE__, "!(" #cond ")", __VA_ARGS__); \
	} while (0)

/* Evaluates a call returning -1/errno on failure; expects it to fail with exactly err. */
#define CHECK_ERR(call, err)                                                                  \
	do {                                                                                  \
		errno = 0;                                                                    \
		long _r = (long)(call);                                                       \
		int _e = errno;                                                               \
		if (_r == -1 && _e == (err))                                                  \
			checks_passed++;                                                      \
		else                                                                          \
			check_fail(__FILE__, __LINE__, #call, "expected -1 %s, got %ld (%s)", \
				   strerror(err), _r, _r == -1 ? strerror(_e) : "no error");  \
	} while (0)

/* Evaluates a call; expects it to return exactly want. */
#define CHECK_RET(call, want)                                                                   \
	do {                                                                                    \
		errno = 0;                                                                      \
		long _r = (long)(call);                                                         \
		int _e = errno;                                                                 \
		long _w = (long)(want);                                                         \
		if (_r == _w)                                                                   \
			checks_passed++;                                                        \
		else                                                                            \
			check_fail(__FILE__, __LINE__, #call, "expected %ld, got %ld (%s)", _w, \
				   _r, _r == -1 ? strerror(_e) : "no error");                   \
	} while (0)

/* Evaluates a call; expects it not to return -1; the expression is the call's result. */
#define CHECK_OK(call)                                                                         \
	({                                                                                     \
		errno = 0;                                                                     \
		long _r = (long)(call);                                                        \
		int _e = errno;                                                                \
		if (_r != -1)                                                                  \
			checks_passed++;                                                       \
		else                                                                           \
			check_fail(__FILE__, __LINE__, #call, "failed with %s", strerror(_e)); \
		_r;                                                                            \
	})

/*
 * CLOCK_REALTIME minus CLOCK_MONOTONIC, ns: it changes only when the realtime clock is set (an
 * NTP or hypervisor step on the host, seen in CI; in husk the guest's clock follows the host's).
 * A check that an absolute REALTIME wait did not end early reads it before the wait and allows
 * for a step back taken meanwhile (realtime_set_back_ns), which makes Linux's waits end
 * "early" too; a step forward needs no allowance.
 */
static inline int64_t realtime_offset_ns(void)
{
	struct timespec r, m;

	clock_gettime(CLOCK_MONOTONIC, &m);
	clock_gettime(CLOCK_REALTIME, &r);
	return (int64_t)(r.tv_sec - m.tv_sec) * 1000000000 + (r.tv_nsec - m.tv_nsec);
}

/* How far CLOCK_REALTIME was set back since realtime_offset_ns() read before (0 if not). The
 * two reads of one offset are a few µs apart: 50 µs of noise are not a step. */
static inline int64_t realtime_set_back_ns(int64_t before)
{
	int64_t back = before - realtime_offset_ns();

	return back > 50000 ? back : 0;
}

/* Prints the summary line and returns the exit status. */
static int finish(void)
{
	printf("%d passed, %d failed\n", checks_passed, checks_failed);
	fflush(stdout);
	return checks_failed ? 1 : 0;
}

#endif
